/**
 * Hands out the items of a growing record list in order, waiting for the next one when a reader
 * is ahead of the writer. Shared by the recording fakes (`nextCall()`, `next()`).
 */
export class RecordCursor<T> {
  readonly #items: readonly T[]
  #position = 0
  #waiters: Array<() => void> = []

  constructor(items: readonly T[]) {
    this.#items = items
  }

  /** Call after appending to the list: wakes every waiting reader. */
  notify(): void {
    const waiters = this.#waiters
    this.#waiters = []
    for (const waiter of waiters) waiter()
  }

  /** The next item not handed out yet; rejects with `signal.reason` when the signal aborts. */
  async next(signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted()
    for (;;) {
      const item = this.#items[this.#position]
      if (item !== undefined) {
        this.#position += 1
        return item
      }
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => reject(signal?.reason)
        signal?.addEventListener('abort', onAbort, { once: true })
        this.#waiters.push(() => {
          signal?.removeEventListener('abort', onAbort)
          resolve()
        })
      })
    }
  }
}
