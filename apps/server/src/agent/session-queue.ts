import { abortable } from '../abort.js'

/**
 * Runs the turns of one session one after another, so two turns never load the same memory and
 * append over each other. Sessions do not wait for each other. An entry lives only while a turn of
 * its session runs or waits, so the map is bounded by the turns in flight.
 */
export class SessionQueue {
  readonly #tails = new Map<string, Promise<void>>()

  /** How many sessions have a turn running or waiting. */
  get size(): number {
    return this.#tails.size
  }

  /**
   * Runs `work` after every earlier turn of `key` has ended. Rejects with `signal.reason` if the
   * signal aborts while waiting (the turn then never starts, and later turns do not wait for it).
   */
  async run<T>(key: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted()
    const previous = this.#tails.get(key) ?? Promise.resolve()
    let release!: () => void
    const done = new Promise<void>((resolve) => {
      release = resolve
    })
    const tail = previous.then(() => done)
    this.#tails.set(key, tail)
    try {
      await abortable(previous, signal)
      return await work()
    } finally {
      release()
      if (this.#tails.get(key) === tail) this.#tails.delete(key)
    }
  }
}
