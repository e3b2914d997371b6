/** What the manager's task index needs of a record. */
export interface Indexed {
  /** A sequence number (built-in ids) or the id itself (injected ids). */
  readonly key: number | string
}

/** Known tasks by key, iterated in submission order. */
export interface TaskIndex<T extends Indexed> {
  /** Adds a record; records must be added in submission order. */
  add(record: T): void
  get(key: number | string): T | undefined
  delete(record: T): void
  /** Every record, oldest submission first. */
  values(): IterableIterator<T>
}

/** The index for injected ids: a `Map` keyed by id. */
export class MapIndex<T extends Indexed> implements TaskIndex<T> {
  readonly #map = new Map<number | string, T>()

  add(record: T): void {
    this.#map.set(record.key, record)
  }

  get(key: number | string): T | undefined {
    return this.#map.get(key)
  }

  delete(record: T): void {
    this.#map.delete(record.key)
  }

  values(): IterableIterator<T> {
    return this.#map.values()
  }
}

/** Smallest window worth compacting or thinning. */
const MIN_WINDOW = 1024

/**
 * The index for built-in ids, whose keys are the sequence numbers 1, 2, 3, … in submission order: an
 * array slot per sequence number over the window from the oldest known task to the newest, so add,
 * get and delete are array accesses (a `Map` with string ids cost as much as the rest of a trivial
 * task's bookkeeping; ADR 0003).
 *
 * Tasks usually end roughly in submission order, so the front of the window empties and is dropped.
 * One old task that stays known (a long run, a pinned pending task) would keep every slot after it;
 * when the window grows past `2 × known + 1024` slots, the oldest known records move to a small `Map`
 * of stragglers until the window is dense again. Memory stays proportional to the known tasks.
 */
export class SequenceIndex<T extends Indexed> implements TaskIndex<T> {
  /** `#slots[i]` holds sequence `#first + i - #head`; slots before `#head` are dropped. */
  #slots: Array<T | undefined> = []
  #head = 0
  /** Sequence number held by `#slots[#head]`. */
  #first = 1
  /** Records in the window (not counting stragglers). */
  #inWindow = 0
  /** Records moved out of the front of the window, in sequence order. */
  readonly #stragglers = new Map<number, T>()

  /** Keys must grow; a skipped key leaves an empty slot. */
  add(record: T): void {
    const key = record.key as number
    const slots = this.#slots
    if (slots.length === this.#head) {
      this.#first = key
    } else {
      const index = this.#head + key - this.#first
      if (!(index >= slots.length))
        throw new RangeError('SequenceIndex keys must be added in increasing order')
      while (slots.length < index) slots.push(undefined)
    }
    slots.push(record)
    this.#inWindow += 1
  }

  get(key: number | string): T | undefined {
    if (typeof key !== 'number') return undefined
    if (key < this.#first) return this.#stragglers.get(key)
    return this.#slots[this.#head + key - this.#first]
  }

  delete(record: T): void {
    const key = record.key as number
    const index = this.#head + key - this.#first
    if (key < this.#first || this.#slots[index] !== record) {
      this.#stragglers.delete(key)
      return
    }
    this.#slots[index] = undefined
    this.#inWindow -= 1
    if (index === this.#head) this.#dropEmptyFront()
    else if (this.#slots.length - this.#head > 2 * this.#inWindow + MIN_WINDOW) this.#thin()
  }

  /** Slots in the window, empty ones included: what the array costs (for tests and diagnostics). */
  get windowSize(): number {
    return this.#slots.length - this.#head
  }

  *values(): IterableIterator<T> {
    yield* [...this.#stragglers.values()]
    for (const record of this.#slots.slice(this.#head)) if (record !== undefined) yield record
  }

  /** Advances the front past empty slots; compacts the array once the dropped part dominates it. */
  #dropEmptyFront(): void {
    const slots = this.#slots
    let head = this.#head
    while (head < slots.length && slots[head] === undefined) head += 1
    this.#first += head - this.#head
    if (head === slots.length) {
      this.#slots = []
      this.#head = 0
    } else if (head >= MIN_WINDOW && head * 2 >= slots.length) {
      this.#slots = slots.slice(head)
      this.#head = 0
    } else {
      this.#head = head
    }
  }

  /** Moves the oldest records to the stragglers until the window is dense again. */
  #thin(): void {
    while (this.#slots.length - this.#head > 2 * this.#inWindow + MIN_WINDOW / 2) {
      const oldest = this.#slots[this.#head] as T
      this.#stragglers.set(oldest.key as number, oldest)
      this.#slots[this.#head] = undefined
      this.#inWindow -= 1
      this.#dropEmptyFront()
    }
  }
}
