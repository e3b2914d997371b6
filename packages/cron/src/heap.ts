/** Minimal binary min-heap ordered by `dueAt`, then by insertion order. */
export class MinHeap<T extends { readonly dueAt: number }> {
  readonly #items: { readonly item: T; readonly order: number }[] = []
  #order = 0

  get size(): number {
    return this.#items.length
  }

  push(item: T): void {
    const items = this.#items
    items.push({ item, order: this.#order++ })
    let index = items.length - 1
    while (index > 0) {
      const parent = (index - 1) >> 1
      if (!this.#less(index, parent)) break
      this.#swap(index, parent)
      index = parent
    }
  }

  peek(): T | undefined {
    return this.#items[0]?.item
  }

  pop(): T | undefined {
    const items = this.#items
    const top = items[0]
    const last = items.pop()
    if (top === undefined || last === undefined) return undefined
    if (items.length > 0) {
      items[0] = last
      let index = 0
      for (;;) {
        const left = index * 2 + 1
        const right = left + 1
        let smallest = index
        if (left < items.length && this.#less(left, smallest)) smallest = left
        if (right < items.length && this.#less(right, smallest)) smallest = right
        if (smallest === index) break
        this.#swap(index, smallest)
        index = smallest
      }
    }
    return top.item
  }

  clear(): void {
    this.#items.length = 0
  }

  #less(left: number, right: number): boolean {
    const a = this.#items[left] as { item: T; order: number }
    const b = this.#items[right] as { item: T; order: number }
    return a.item.dueAt < b.item.dueAt || (a.item.dueAt === b.item.dueAt && a.order < b.order)
  }

  #swap(left: number, right: number): void {
    const items = this.#items
    const held = items[left] as { item: T; order: number }
    items[left] = items[right] as { item: T; order: number }
    items[right] = held
  }
}
