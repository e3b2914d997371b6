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
  /** True when the last batch did not reach every target: the operator is not hearing from us. */
  readonly failing: boolean
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
  /** Called once per alert raised and once per batch sent or failed (metrics). */
  readonly onAlert?: (kind: AlertKind) => void
  readonly onBatch?: (status: 'sent' | 'failed') => void
}

const HEADINGS: Readonly<Record<AlertKind, string>> = {
  scheduler_stalled: 'Scheduler stalled',
  missed_runs: 'Missed runs',
  job_paused: 'Jobs paused',
  delivery_failed: 'Deliveries failed',
  lease_lost: 'Leases lost',
  budget_exhausted: 'Budgets exhausted',
}
const ORDER = Object.keys(HEADINGS) as AlertKind[]

/**
 * The operator's alerts: raised by the server's parts (never throws, never waits), grouped for
 * `batchMs` into one message per batch, sent to every `alerts.deliver_to` target, and logged at warn
 * whether or not a target is set. A target that refuses a batch makes {@link AlertsStatus.failing}
 * true (shown by `/healthz` and the dashboard) until a later batch gets through; the batch is not
 * sent again (the next alert says what is wrong now). Bounded: at most `maxPending` alerts wait.
 */
export class Alerts {
  readonly #options: AlertsOptions
  readonly #clock: Clock
  readonly #logger: Logger
  readonly #pending = new Map<string, { alert: Alert; count: number }>()
  readonly #inFlight = new Set<Promise<void>>()
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
  }

  /** Where alerts go. */
  get targets(): readonly string[] {
    return this.#options.targets
  }

  /** Records `alert`: logged now, sent with the batch it falls in. */
  raise(alert: Alert): void {
    this.#raised++
    this.#options.onAlert?.(alert.kind)
    this.#logger.warn(`alert: ${alert.text}`, { alert: alert.kind })
    if (this.#stopped || this.#options.targets.length === 0) return
    const key = `${alert.kind}\u0000${alert.key ?? `#${this.#sequence++}`}`
    const existing = this.#pending.get(key)
    if (existing !== undefined) {
      existing.alert = alert
      existing.count++
    } else if (this.#pending.size >= (this.#options.maxPending ?? 200)) {
      this.#dropped++
      this.#droppedInBatch++
    } else {
      this.#pending.set(key, { alert, count: 1 })
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

  status(): AlertsStatus {
    return {
      targets: this.#options.targets,
      raised: this.#raised,
      sent: this.#sent,
      failed: this.#failed,
      dropped: this.#dropped,
      failing: this.#failing,
      lastError: this.#failing ? this.#lastError : undefined,
      lastSentAt: this.#lastSentAt === undefined ? undefined : new Date(this.#lastSentAt).toISOString(),
    }
  }

  /** Sends what is waiting now and waits for every send in flight; later alerts are only logged. */
  async stop(): Promise<void> {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#flush()
    this.#stopped = true
    await Promise.all([...this.#inFlight])
  }

  #flush(): void {
    if (this.#pending.size === 0) return
    const text = this.#render()
    this.#pending.clear()
    this.#droppedInBatch = 0
    const task = this.#send(text).finally(() => this.#inFlight.delete(task))
    this.#inFlight.add(task)
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

  async #send(text: string): Promise<void> {
    const errors: string[] = []
    await Promise.all(
      this.#options.targets.map(async (target) => {
        const signal = AbortSignal.timeout(this.#options.sendTimeoutMs ?? 30_000)
        try {
          await this.#options.sender.send(target, text, { signal })
        } catch (error) {
          errors.push(`${target}: ${error instanceof Error ? error.message : String(error)}`)
        }
      }),
    )
    this.#lastSentAt = this.#clock.now().getTime()
    if (errors.length === 0) {
      this.#sent++
      this.#failing = false
      this.#lastError = undefined
      this.#options.onBatch?.('sent')
      return
    }
    this.#failed++
    this.#failing = true
    this.#lastError = errors.join('; ').slice(0, 1000)
    this.#options.onBatch?.('failed')
    this.#logger.error('alerts not delivered', { error: this.#lastError })
  }
}
