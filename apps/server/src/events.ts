/** One state change, as `GET /api/events` streams it (`event: <type>`, `data: <json>`). */
export interface ServerEvent {
  /** e.g. `cron.run.start`, `workflow.step.end`, `background.task.end`, `approval.pending`. */
  readonly type: string
  readonly data: Readonly<Record<string, unknown>>
  /** Epoch ms. */
  readonly at: number
}

type Listener = (event: ServerEvent) => void

/**
 * Fans state changes out to subscribers (the SSE endpoint). Publishing never blocks or throws: a
 * subscriber that throws is dropped. Subscribers bound their own queues (a slow client is cut off).
 */
export class EventHub {
  readonly #listeners = new Set<Listener>()
  readonly #now: () => number

  constructor(now: () => number = Date.now) {
    this.#now = now
  }

  publish(type: string, data: Readonly<Record<string, unknown>>): void {
    const event = { type, data, at: this.#now() }
    for (const listener of this.#listeners) {
      try {
        listener(event)
      } catch {
        this.#listeners.delete(listener)
      }
    }
  }

  /** Returns the unsubscribe function. */
  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  get subscriberCount(): number {
    return this.#listeners.size
  }
}
