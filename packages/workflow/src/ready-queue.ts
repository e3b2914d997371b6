/**
 * The ready queue: a binary heap of step indices, highest priority first, ties by lower index
 * (file order). Priority is the step's height (longest chain of descendants), so with a
 * `max_parallel` cap the critical path is never starved by short side steps.
 */
export class ReadyQueue {
  readonly #heap: number[] = []
  readonly #priority: readonly number[]

  constructor(priority: readonly number[]) {
    this.#priority = priority
  }

  get size(): number {
    return this.#heap.length
  }

  push(index: number): void {
    const heap = this.#heap
    heap.push(index)
    let at = heap.length - 1
    while (at > 0) {
      const parent = (at - 1) >> 1
      if (!this.#before(heap[at] as number, heap[parent] as number)) break
      ;[heap[at], heap[parent]] = [heap[parent] as number, heap[at] as number]
      at = parent
    }
  }

  pop(): number | undefined {
    const heap = this.#heap
    if (heap.length === 0) return undefined
    const top = heap[0] as number
    const last = heap.pop() as number
    if (heap.length > 0) {
      heap[0] = last
      let at = 0
      for (;;) {
        const left = at * 2 + 1
        const right = left + 1
        let best = at
        if (left < heap.length && this.#before(heap[left] as number, heap[best] as number)) best = left
        if (right < heap.length && this.#before(heap[right] as number, heap[best] as number)) best = right
        if (best === at) break
        ;[heap[at], heap[best]] = [heap[best] as number, heap[at] as number]
        at = best
      }
    }
    return top
  }

  #before(left: number, right: number): boolean {
    const difference = (this.#priority[left] as number) - (this.#priority[right] as number)
    return difference > 0 || (difference === 0 && left < right)
  }
}
