/**
 * A first-in first-out list with O(1) push and shift (amortised). A `Set` drained from the front is
 * not: V8 skips every deleted entry on each `values().next()`, which made dispatch O(n) per task.
 */
export class Fifo<T> {
  #items: Array<T | undefined> = []
  #head = 0

  /** Items still in the list. */
  get length(): number {
    return this.#items.length - this.#head
  }

  push(item: T): void {
    this.#items.push(item)
  }

  /** Removes and returns the oldest item. */
  shift(): T | undefined {
    if (this.#head === this.#items.length) return undefined
    const item = this.#items[this.#head]
    this.#items[this.#head] = undefined
    this.#head += 1
    if (this.#head === this.#items.length) {
      this.#items = []
      this.#head = 0
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head)
      this.#head = 0
    }
    return item
  }

  /** Keeps only the items for which `keep` is true, in order. */
  retain(keep: (item: T) => boolean): void {
    const kept: T[] = []
    for (let index = this.#head; index < this.#items.length; index += 1) {
      const item = this.#items[index] as T
      if (keep(item)) kept.push(item)
    }
    this.#items = kept
    this.#head = 0
  }
}
