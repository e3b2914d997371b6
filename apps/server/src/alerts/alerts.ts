import { type ChannelSender, type Clock, systemClock, type TimerHandle } from '@lango/cron'
import { type Logger, silentLogger } from '../logger-port.js'

/** What an alert is about: the label of `lango_alerts_total` and the heading it is grouped under. */
export type AlertKind =
  | 'scheduler_stalled'
  | 'missed_runs'
  | 'job_paused'
  | 'delivery_failed'
  | 'lease_lost'
  | 'budget_exhausted'
  | 'database_failing'
  | 'database_recovered'
  | 'server_lost'
  | 'runs_interrupted'

/** One thing the operator should know about. Never a prompt, a result or a secret: names, times, reasons. */
export interface Alert {
  readonly kind: AlertKind
  /** One line, e.g. `job backup: 3 occurrences missed (the scheduler was 12m late)`. */
  readonly text: string
  /**
   * Alerts with the same key in one batch are one line (the latest text wins, with a count): a job
   * missing ten occurrences in one stall is one line, not ten.
   */
  readonly key?: string
}

/** How the alerts stand: `/healthz`, the dashboard's banner, `lango doctor`. */
export interface AlertsStatus {
  /** Where alerts go; empty: they are only logged. */
  readonly targets: readonly string[]
  /** Alerts raised since start (each, before grouping). */
  readonly raised: number
  /** Batches sent to every target, and batches at least one target refused. */
  readonly sent: number
  readonly failed: number
  /** Alerts dropped because too many were waiting (the batch says how many). */
  readonly dropped: number
  /** True while a message has not reached a target yet: the operator is not hearing from us. */
  readonly failing: boolean
  /** Messages waiting to be sent again to a target that refused them (over every target). */
  readonly waiting: number
  /** The last target error (the channel's reason), while failing. */
  readonly lastError: string | undefined
  /** When the last batch went out (ISO 8601), if one did. */
  readonly lastSentAt: string | undefined
}

/** Options of {@link Alerts}. */
export interface AlertsOptions {
  /** `alerts.deliver_to`: the operator's channel(s). */
  readonly targets: readonly string[]
  readonly sender: ChannelSender
  readonly clock?: Clock
  readonly logger?: Logger
  /** Alerts raised within this long of the first are sent as one message. Default 2 s. */
  readonly batchMs?: number
  /** Alerts waiting at most; beyond it they are counted, not kept. Default 200. */
  readonly maxPending?: number
  /** Each send gives up after this long. Default 30 s. */
  readonly sendTimeoutMs?: number
  /**
   * A message a target refused is sent again after this long, then twice as long each time it is
   * refused again, up to 5 minutes. Default 5 s.
   */
  readonly retryMs?: number
  /** Messages kept per target to send again; beyond it the oldest are dropped (the next says so). Default 50. */
  readonly maxWaiting?: number
  /**
   * Targets known not to work before anything is sent (`slack:C1` with no Slack configured), each
   * with its reason: alerts count as failing from the start, and the reasons are the last error.
   */
  readonly unreachable?: ReadonlyMap<string, string>
  /**
   * A stall, a missed occurrence of a job or a lost lease raised again within this long of the
   * last one sent (same kind and key) is logged and counted, not sent; the next one after it says
   * how many there were. Default 10 minutes: an hour-long database outage is a handful of
   * messages, not one every few seconds.
   */
  readonly repeatAfterMs?: number
  /** Called once per alert raised and once per batch sent or failed (metrics). */
  readonly onAlert?: (kind: AlertKind) => void
  readonly onBatch?: (status: 'sent' | 'failed') => void
}

const HEADINGS: Readonly<Record<AlertKind, string>> = {
  database_failing: 'Database failing',
  database_recovered: 'Database recovered',
  server_lost: 'Servers lost',
  runs_interrupted: 'Runs interrupted',
  scheduler_stalled: 'Scheduler stalled',
  missed_runs: 'Missed runs',
  job_paused: 'Jobs paused',
  delivery_failed: 'Deliveries failed',
  lease_lost: 'Leases lost',
  budget_exhausted: 'Budgets exhausted',
}
const ORDER = Object.keys(HEADINGS) as AlertKind[]
/** Every kind of alert, in the order a batch lists them. */
export const ALERT_KINDS: readonly AlertKind[] = ORDER

/** Kinds whose repeats are held back (see {@link AlertsOptions.repeatAfterMs}): each says "still so". */
const QUIET_REPEATS: ReadonlySet<AlertKind> = new Set([
  'scheduler_stalled',
  'missed_runs',
  'lease_lost',
  // A target that refuses every run's result (an outside probe: one message a minute, all day).
  'delivery_failed',
  // A job whose day is spent is refused at every fire until midnight (keyed by budget and job).
  'budget_exhausted',
])
/** At most this many recent alerts are remembered for holding back repeats. */
const MAX_RECENT = 1000

/** The longest wait before a refused message is sent again. */
const MAX_RETRY_MS = 5 * 60_000

/** A message for one target, waiting to be sent (again). */
interface Outgoing {
  readonly text: string
  /** When a send of it was first refused (epoch ms), and why. */
  refusedAt?: number
  refusedWhy?: string
}

/** One target's queue: messages in order, sent one at a time, the head retried with backoff. */
interface TargetQueue {
  readonly messages: Outgoing[]
  /** Messages dropped from the front since the last one delivered (the queue was full). */
  dropped: number
  sending: boolean
  /** Refusals in a row, for the backoff. */
  refusals: number
  retryTimer: TimerHandle | undefined
}

/**
 * The operator's alerts: raised by the server's parts (never throws, never waits), grouped for
 * `batchMs` into one message per batch, sent to every `alerts.deliver_to` target, and logged at warn
 * whether or not a target is set. A message a target refuses (its API down, a timeout) is kept for
 * that target and sent again, in order, after `retryMs`, doubling to 5 minutes, until it gets
 * through, marked with when it was first refused and why; meanwhile {@link AlertsStatus.failing}
 * is true (shown by `/healthz`, the dashboard and `lango doctor`). Bounded: at most `maxPending`
 * alerts wait for a batch and `maxWaiting` messages per target for a retry (the oldest dropped, and
 * the next message that gets through says how many).
 */
export class Alerts {
  readonly #options: AlertsOptions
  readonly #clock: Clock
  readonly #logger: Logger
  readonly #pending = new Map<string, { alert: Alert; count: number }>()
  readonly #inFlight = new Set<Promise<void>>()
  readonly #queues = new Map<string, TargetQueue>()
  /** The last alert sent of each quiet kind and key, and how many were held back since. */
  readonly #recent = new Map<string, { at: number; heldBack: number }>()
  #timer: TimerHandle | undefined
  #dropped = 0
  #droppedInBatch = 0
  #raised = 0
  #sent = 0
  #failed = 0
  #failing = false
  #lastError: string | undefined
  #lastSentAt: number | undefined
  #sequence = 0
  #stopped = false

  constructor(options: AlertsOptions) {
    this.#options = options
    this.#clock = options.clock ?? systemClock
    this.#logger = options.logger ?? silentLogger
    const unreachable = [...(options.unreachable ?? new Map<string, string>())]
    if (unreachable.length > 0) {
      this.#failing = true
      this.#lastError = unreachable.map(([target, why]) => `${target}: ${why}`).join('; ')
      this.#logger.error('alerts.deliver_to names a target that cannot work: alerts will not reach it', {
        error: this.#lastError,
      })
    }
  }

  /** Where alerts go. */
  get targets(): readonly string[] {
    return this.#options.targets
  }

  /** Records `alert`: logged now, sent with the batch it falls in. */
  raise(raised: Alert): void {
    this.#raised++
    this.#options.onAlert?.(raised.kind)
    this.#logger.warn(`alert: ${raised.text}`, { alert: raised.kind })
    if (this.#stopped || this.#options.targets.length === 0) return
    // A repeat held back is logged (above) and counted, not sent.
    const decision = this.#repeat(raised)
    if (decision === undefined) return
    const { alert } = decision
    const key = `${alert.kind}\u0000${alert.key ?? `#${this.#sequence++}`}`
    const existing = this.#pending.get(key)
    if (existing !== undefined) {
      existing.alert = alert
      existing.count++
      decision.accept()
    } else if (this.#pending.size >= (this.#options.maxPending ?? 200)) {
      // Dropped: it does not count as sent, so the next like it is not held back as its repeat.
      this.#dropped++
      this.#droppedInBatch++
    } else {
      this.#pending.set(key, { alert, count: 1 })
      decision.accept()
    }
    if (this.#timer === undefined) {
      const timer = this.#clock.setTimeout(() => {
        this.#timer = undefined
        this.#flush()
      }, this.#options.batchMs ?? 2000)
      ;(timer as { unref?: () => void } | undefined)?.unref?.()
      this.#timer = timer
    }
  }

  /**
   * The alert to send, or undefined when it repeats one of a quiet kind sent within
   * `repeatAfterMs`; one sent after held-back repeats says how many. `accept()` records it as sent
   * (the start of a new window), once it is queued.
   */
  #repeat(alert: Alert): { readonly alert: Alert; accept(): void } | undefined {
    if (!QUIET_REPEATS.has(alert.kind) || alert.key === undefined) return { alert, accept: () => {} }
    const key = `${alert.kind}\u0000${alert.key}`
    // Like one already waiting in this batch: not a repeat of a message sent, but more of the same
    // line, which then says how many (`×7`).
    if (this.#pending.has(key)) return { alert, accept: () => {} }
    const now = this.#clock.now().getTime()
    const windowMs = this.#options.repeatAfterMs ?? 10 * 60_000
    const last = this.#recent.get(key)
    if (last !== undefined && now - last.at < windowMs) {
      last.heldBack++
      return undefined
    }
    const accept = () => {
      if (this.#recent.size >= MAX_RECENT)
        for (const [old, entry] of this.#recent) if (now - entry.at >= windowMs) this.#recent.delete(old)
      if (this.#recent.size >= MAX_RECENT) this.#recent.delete(this.#recent.keys().next().value as string)
      this.#recent.delete(key)
      this.#recent.set(key, { at: now, heldBack: 0 })
    }
    if (last === undefined || last.heldBack === 0) return { alert, accept }
    const more = `${last.heldBack} more like it since ${new Date(last.at).toISOString()}, not sent`
    return { alert: { ...alert, text: `${alert.text} (${more})` }, accept }
  }

  status(): AlertsStatus {
    return {
      targets: this.#options.targets,
      raised: this.#raised,
      sent: this.#sent,
      failed: this.#failed,
      dropped: this.#dropped,
      failing: this.#failing,
      waiting: [...this.#queues.values()].reduce((total, queue) => total + queue.messages.length, 0),
      lastError: this.#failing ? this.#lastError : undefined,
      lastSentAt: this.#lastSentAt === undefined ? undefined : new Date(this.#lastSentAt).toISOString(),
    }
  }

  /**
   * Sends what is waiting now (a batch, and one more try of each target's refused messages) and
   * waits for every send in flight; what still does not get through is logged. Later alerts are
   * only logged.
   */
  async stop(): Promise<void> {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#flush()
    this.#stopped = true
    for (const [target, queue] of this.#queues) {
      if (queue.retryTimer !== undefined) this.#clock.clearTimeout(queue.retryTimer)
      queue.retryTimer = undefined
      this.#drain(target)
    }
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight])
    const waiting = this.status().waiting
    if (waiting > 0)
      this.#logger.error('alerts not delivered before stop', { messages: waiting, error: this.#lastError })
  }

  #flush(): void {
    if (this.#pending.size === 0) return
    const text = this.#render()
    this.#pending.clear()
    this.#droppedInBatch = 0
    for (const target of this.#options.targets) {
      const queue = this.#queue(target)
      queue.messages.push({ text })
      if (queue.messages.length > (this.#options.maxWaiting ?? 50)) {
        // The oldest not being sent right now: the head may be in flight.
        queue.messages.splice(queue.sending ? 1 : 0, 1)
        queue.dropped++
      }
      // A target waiting for its retry gets the new message with the old ones then, in order.
      if (queue.retryTimer === undefined) this.#drain(target)
    }
  }

  #queue(target: string): TargetQueue {
    let queue = this.#queues.get(target)
    if (queue === undefined) {
      queue = { messages: [], dropped: 0, sending: false, refusals: 0, retryTimer: undefined }
      this.#queues.set(target, queue)
    }
    return queue
  }

  /** Sends the target's messages in order until one is refused; that one is tried again later. */
  #drain(target: string): void {
    const queue = this.#queue(target)
    if (queue.sending) return
    queue.sending = true
    const task = (async () => {
      try {
        for (let next = queue.messages[0]; next !== undefined; next = queue.messages[0]) {
          const noted = queue.dropped
          const refused = await this.#send(target, this.#wording(next, noted))
          if (refused !== undefined) {
            next.refusedAt ??= this.#clock.now().getTime()
            next.refusedWhy ??= refused
            this.#retryLater(target, queue)
            return
          }
          // The message sent leaves the queue (still its head: only later ones are ever dropped).
          queue.messages.splice(queue.messages.indexOf(next), 1)
          // Drops while it was sent are said by the next one.
          queue.dropped -= noted
          queue.refusals = 0
        }
      } finally {
        queue.sending = false
        this.#failing =
          (this.#options.unreachable?.size ?? 0) > 0 ||
          [...this.#queues.values()].some((other) => other.messages.length > 0)
        if (!this.#failing) this.#lastError = undefined
      }
    })()
    const tracked = task.finally(() => this.#inFlight.delete(tracked))
    this.#inFlight.add(tracked)
  }

  #retryLater(target: string, queue: TargetQueue): void {
    queue.refusals++
    if (this.#stopped) return
    const delay = Math.min(MAX_RETRY_MS, (this.#options.retryMs ?? 5000) * 2 ** (queue.refusals - 1))
    const timer = this.#clock.setTimeout(() => {
      queue.retryTimer = undefined
      this.#drain(target)
    }, delay)
    ;(timer as { unref?: () => void } | undefined)?.unref?.()
    queue.retryTimer = timer
  }

  /** A message as sent: a late one says when it was first refused and why; dropped ones are counted. */
  #wording(message: Outgoing, dropped: number): string {
    const notes = [
      ...(message.refusedAt === undefined
        ? []
        : [
            `(sent late: refused at ${new Date(message.refusedAt).toISOString()}: ${message.refusedWhy ?? 'unknown'})`,
          ]),
      ...(dropped === 0
        ? []
        : [
            `(${dropped} earlier alert message${dropped === 1 ? '' : 's'} could not be sent and were dropped)`,
          ]),
    ]
    if (notes.length === 0) return message.text
    const [head, ...rest] = message.text.split('\n')
    return [head, ...notes, ...rest].join('\n')
  }

  #render(): string {
    const lines = ['[Lango alert]']
    for (const kind of ORDER) {
      const items = [...this.#pending.values()].filter((item) => item.alert.kind === kind)
      if (items.length === 0) continue
      lines.push('', `${HEADINGS[kind]}:`)
      for (const { alert, count } of items) lines.push(`- ${alert.text}${count > 1 ? ` (×${count})` : ''}`)
    }
    if (this.#droppedInBatch > 0) lines.push('', `…and ${this.#droppedInBatch} more alerts not listed`)
    return lines.join('\n')
  }

  /** One send to one target; the reason (counted, logged) when it was refused or timed out. */
  async #send(target: string, text: string): Promise<string | undefined> {
    const signal = AbortSignal.timeout(this.#options.sendTimeoutMs ?? 30_000)
    try {
      await this.#options.sender.send(target, text, { signal })
    } catch (error) {
      this.#failed++
      this.#failing = true
      this.#lastError = `${target}: ${error instanceof Error ? error.message : String(error)}`.slice(0, 1000)
      this.#options.onBatch?.('failed')
      this.#logger.error('alerts not delivered', { target, error: this.#lastError })
      return this.#lastError
    }
    this.#sent++
    this.#lastSentAt = this.#clock.now().getTime()
    this.#options.onBatch?.('sent')
    return undefined
  }
}
