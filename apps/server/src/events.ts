import { randomBytes } from 'node:crypto'

/** One state change, as `GET /api/events` streams it (`id: <id>`, `event: <type>`, `data: <json>`). */
export interface ServerEvent {
  /**
   * `<epoch>-<sequence>`: the hub's epoch (new each time the server starts) and a number that goes
   * up by one with each event, from 1. What `Last-Event-ID` names.
   */
  readonly id: string
  /** e.g. `cron.run.start`, `workflow.step.end`, `background.task.end`, `approval.pending`. */
  readonly type: string
  readonly data: Readonly<Record<string, unknown>>
  /** Epoch ms. */
  readonly at: number
}

/**
 * What {@link EventHub.since} answers: the events after the id, or why they cannot be had —
 * `restarted` (the id is of another epoch: the server restarted, or it is another instance),
 * `expired` (they are older than the replay window), `unknown` (not an id this hub gave out).
 */
export type EventReplay =
  | { readonly ok: true; readonly events: readonly ServerEvent[] }
  | { readonly ok: false; readonly reason: 'restarted' | 'expired' | 'unknown' }

type Listener = (event: ServerEvent) => void

/** Options of {@link EventHub}. */
export interface EventHubOptions {
  /** The clock of `at`. Default `Date.now`. */
  readonly now?: () => number
  /** Events kept for replay (`Last-Event-ID`), the newest; 0 keeps none. Default 1000. */
  readonly replay?: number
  /** The epoch part of ids. Default 8 random hex digits, new for each hub. */
  readonly epoch?: string
}

const EVENT_ID = /^([0-9a-z]{1,32})-(0|[1-9][0-9]{0,15})$/

/**
 * Fans state changes out to subscribers (the SSE endpoint), and keeps the newest `replay` of them
 * in a ring so a client that reconnects gets what it missed ({@link since}). Publishing never
 * blocks or throws: a subscriber that throws is dropped. Subscribers bound their own queues (a slow
 * client is cut off).
 */
export class EventHub {
  readonly #listeners = new Set<Listener>()
  readonly #now: () => number
  readonly #epoch: string
  /** The ring: `#recent[sequence % capacity]` holds the event of that sequence while it is kept. */
  readonly #recent: (ServerEvent | undefined)[]
  #sequence = 0

  constructor(options: EventHubOptions = {}) {
    this.#now = options.now ?? Date.now
    const capacity = options.replay ?? 1000
    if (!Number.isInteger(capacity) || capacity < 0 || capacity > 1_000_000) {
      throw new RangeError('replay must be a whole number from 0 to 1000000')
    }
    this.#recent = new Array<ServerEvent | undefined>(capacity)
    const epoch = options.epoch ?? randomBytes(4).toString('hex')
    if (!/^[0-9a-z]{1,32}$/.test(epoch)) throw new RangeError('epoch must be 1-32 of 0-9 and a-z')
    this.#epoch = epoch
  }

  publish(type: string, data: Readonly<Record<string, unknown>>): void {
    this.#sequence += 1
    const event: ServerEvent = { id: `${this.#epoch}-${this.#sequence}`, type, data, at: this.#now() }
    if (this.#recent.length > 0) this.#recent[this.#sequence % this.#recent.length] = event
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

  /** The id of the newest event (`<epoch>-0` before the first): where a client that saw it stands. */
  get lastEventId(): string {
    return `${this.#epoch}-${this.#sequence}`
  }

  /**
   * The events published after `lastEventId`, oldest first (none when it is the newest), if the
   * ring still holds all of them; else why not. Synchronous: subscribe in the same turn and no
   * event falls between the two.
   */
  since(lastEventId: string): EventReplay {
    const match = EVENT_ID.exec(lastEventId)
    if (match === null) return { ok: false, reason: 'unknown' }
    if (match[1] !== this.#epoch) return { ok: false, reason: 'restarted' }
    const seen = Number(match[2])
    if (seen > this.#sequence) return { ok: false, reason: 'unknown' }
    const capacity = this.#recent.length
    if (this.#sequence - seen > capacity) return { ok: false, reason: 'expired' }
    const events: ServerEvent[] = []
    for (let sequence = seen + 1; sequence <= this.#sequence; sequence += 1) {
      const event = this.#recent[sequence % capacity]
      if (event !== undefined) events.push(event)
    }
    return { ok: true, events }
  }

  get subscriberCount(): number {
    return this.#listeners.size
  }
}
