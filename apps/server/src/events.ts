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
 * Every event the server publishes on its hub, with the fields of its data (`name?`: present only
 * sometimes). The one list: publishers go through {@link EventHub.emit}, whose types it gives, and
 * docs/server-api.md is checked against it (test/server-api-doc.test.ts).
 */
export const SERVER_EVENTS = {
  'cron.run.start': ['job_id', 'job_name', 'run_id', 'trigger'],
  'cron.run.end': ['job_id', 'job_name', 'run_id', 'status', 'delivery_status'],
  'cron.run.skipped': ['job_id', 'job_name', 'reason'],
  'cron.job.created': ['job_id', 'job_name'],
  'cron.job.updated': ['job_id', 'job_name'],
  // `reason` when the server paused it (failures in a row).
  'cron.job.paused': ['job_id', 'job_name', 'reason?'],
  'cron.job.resumed': ['job_id', 'job_name'],
  'cron.job.removed': ['job_id', 'job_name'],
  'cron.jobs.changed': ['registered', 'removed'],
  'workflow.run.start': ['run_id', 'workflow', 'resumed'],
  'workflow.run.end': ['run_id', 'workflow', 'status', 'error'],
  'workflow.step.start': ['run_id', 'step_id', 'attempt'],
  'workflow.step.end': ['run_id', 'step_id', 'status', 'error'],
  // A run's result (`step_id` null) or a step's did not reach a target: not retried.
  'workflow.delivery.failed': ['run_id', 'workflow', 'step_id', 'target', 'error'],
  'background.task.submit': ['task_id', 'status'],
  'background.task.start': ['task_id', 'status'],
  'background.task.end': ['task_id', 'status'],
  'approval.pending': ['id', 'tool', 'summary', 'expires_at'],
  'approval.answered': ['id', 'status', 'tool', 'decided_by'],
} as const satisfies Readonly<Record<string, readonly string[]>>

/** The name of one of the server's events ({@link SERVER_EVENTS}). */
export type ServerEventType = keyof typeof SERVER_EVENTS

type EventField<T extends ServerEventType> = (typeof SERVER_EVENTS)[T][number]

/** The data of a {@link ServerEventType}: exactly its fields, those marked `?` optional. */
export type ServerEventData<T extends ServerEventType> = {
  readonly [K in EventField<T> as K extends `${string}?` ? never : K]: unknown
} & { readonly [K in EventField<T> as K extends `${infer Name}?` ? Name : never]?: unknown }

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

  /** Publishes one of the server's own events: its name and fields as {@link SERVER_EVENTS} lists them. */
  emit<T extends ServerEventType>(type: T, data: ServerEventData<T>): void {
    this.publish(type, data)
  }

  /** Publishes any event (a host's own; the server's go through {@link emit}). */
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
