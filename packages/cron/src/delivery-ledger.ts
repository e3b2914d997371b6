import { abortable } from './abort.js'
import { formatDuration } from './duration.js'
import { CronError, DeliveryError, toError } from './errors.js'
import { truncate } from './executor.js'
import { DEAD_AFTER_LEASES } from './maintenance.js'
import type { CronDelivery, CronJob, CronRun, CronRunStatus, DeliveryStatus, NotifyPolicy } from './model.js'
import type { DeliveryUpdate, TimerHandle } from './ports.js'
import type { CronSchedulerEvents } from './scheduler-events.js'
import { MAX_TIMER_MS, type SchedulerSettings } from './scheduler-options.js'

/** Longest reason stored on a delivery row. */
const MAX_ERROR_CHARS = 500
/** Rows read per sweep of the ledger. */
const SWEEP_LIMIT = 100

/** The reason recorded when a send was in flight as its scheduler stopped, on a channel that cannot deduplicate. */
const UNKNOWN_AFTER_STOP = 'unknown whether delivered: the server stopped mid-send'

/** A run's delivery summary, as stored on the run. */
export interface DeliverySummary {
  readonly status: DeliveryStatus
  readonly error: string | null
}

/** What {@link DeliveryLedger} needs of the settings. */
type DeliveryLedgerSettings = Pick<
  SchedulerSettings,
  | 'store'
  | 'clock'
  | 'logger'
  | 'ownerId'
  | 'newId'
  | 'channelSender'
  | 'deliveryTimeoutMs'
  | 'leaseMs'
  | 'delivery'
>

/** What {@link DeliveryLedger} tells the scheduler. */
interface DeliveryLedgerHooks {
  readonly track: (task: Promise<unknown>) => void
  readonly report: (error: unknown, jobId?: string, runId?: string) => void
  readonly emit: (payload: CronSchedulerEvents['delivery:end']) => void
}

/**
 * Whether a run that ended `status` is delivered under `policy`, given the job's previous final
 * status (`null` before its first run, which counts as following a success).
 */
export function shouldNotify(
  policy: NotifyPolicy,
  status: CronRunStatus,
  previous: CronRunStatus | null,
): boolean {
  const failed = status === 'failed' || status === 'timed_out'
  switch (policy) {
    case 'never':
      return false
    case 'failure':
      return failed
    case 'state_changes':
      return failed !== (previous === 'failed' || previous === 'timed_out')
    default:
      return true
  }
}

/**
 * The run's delivery summary from its rows: `pending` while any is pending or sending, else `failed`
 * when any failed, else `delivered`; `none` without rows. The error lists `target: reason` of each
 * failed row, in the job's target order.
 */
function summarizeDeliveries(rows: readonly CronDelivery[], order: readonly string[] = []): DeliverySummary {
  if (rows.length === 0) return { status: 'none', error: null }
  const rank = (target: string) => {
    const index = order.indexOf(target)
    return index === -1 ? order.length : index
  }
  const sorted = [...rows].sort((left, right) => rank(left.target) - rank(right.target))
  const failures = sorted
    .filter((row) => row.status === 'failed')
    .map((row) => `${row.target}: ${row.lastError ?? 'failed'}`)
  const error = failures.length === 0 ? null : failures.join('; ')
  if (sorted.some((row) => row.status === 'pending' || row.status === 'sending'))
    return { status: 'pending', error }
  return failures.length > 0 ? { status: 'failed', error } : { status: 'delivered', error: null }
}

/**
 * The delivery ledger's worker (`cron_deliveries`): one row per (run, target), each send claimed
 * (`sending` by this owner) before it starts and finished by compare-and-set, failures retried with
 * exponential backoff and jitter (or the channel's `Retry-After`) on the injected clock up to
 * `maxAttempts`, and rows left over by a restart picked up: `pending` rows when due, `sending` rows
 * of a dead owner sent again only where the channel deduplicates (else recorded failed, never sent
 * twice). A run's own status never depends on any of this: its row is final before delivery starts.
 */
export class DeliveryLedger {
  readonly #settings: DeliveryLedgerSettings
  readonly #hooks: DeliveryLedgerHooks
  #controller = new AbortController()
  #running = false
  #timer: TimerHandle | undefined
  #timerAt = Number.POSITIVE_INFINITY
  #sweeping = false
  #sweepAgain = false
  /** Sends of the retry path in flight, by job: removing the job aborts them. */
  readonly #inFlight = new Map<string, Set<AbortController>>()

  constructor(settings: DeliveryLedgerSettings, hooks: DeliveryLedgerHooks) {
    this.#settings = settings
    this.#hooks = hooks
  }

  /** Starts: sweeps the ledger now (rows a previous process left), then whenever a retry comes due. */
  start(): void {
    if (this.#running) return
    this.#running = true
    this.#controller = new AbortController()
    this.requestSweep()
  }

  /** Stops: aborts sends in flight (each recorded as {@link UNKNOWN_AFTER_STOP} or left to resend) and the timer. */
  stop(): void {
    this.#running = false
    this.#controller.abort(
      new CronError('CRON_RUN_CANCELLED', 'interrupted: the scheduler stopped mid-send', {
        data: { status: 'interrupted' },
      }),
    )
    if (this.#timer !== undefined) this.#settings.clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#timerAt = Number.POSITIVE_INFINITY
  }

  /** Aborts the retry-path sends of a job (it was removed). */
  abortJob(jobId: string, reason: Error): void {
    for (const controller of this.#inFlight.get(jobId) ?? []) controller.abort(reason)
  }

  /**
   * Records one `pending` row per target of `job` for `run` (already final) and makes each first
   * attempt now, in target order, each bounded by `deliveryTimeoutMs` and aborted by `signal` (the
   * run's pause, remove and stop) or the ledger's stop. Returns the run's delivery summary as stored.
   */
  async deliverRun(job: CronJob, run: CronRun, text: string, signal: AbortSignal): Promise<DeliverySummary> {
    const { store, clock, newId } = this.#settings
    if (job.deliverTo.length === 0) return { status: 'none', error: null }
    const now = clock.now().getTime()
    // Due only after the first attempts made here could all have timed out: a sweep (here or on
    // another scheduler) leaves them to this one, and takes them over only if it died meanwhile.
    const firstAttemptsBy = now + job.deliverTo.length * this.#settings.deliveryTimeoutMs + 1000
    const rows = job.deliverTo.map((target) => ({
      id: newId(),
      runId: run.id,
      jobId: job.id,
      target,
      text,
      createdAt: now,
      nextAttemptAt: firstAttemptsBy,
    }))
    await store.insertDeliveries(rows)
    await store.setDelivery(run.id, 'pending', null)
    for (const row of rows) {
      if (!this.#running || signal.aborted) break
      const claimed = await store.claimDelivery(row.id, { owner: this.#settings.ownerId, now: this.#now() })
      if (claimed === undefined) continue
      await this.#send(job, run, claimed, signal)
    }
    return this.#refresh(job, run.id)
  }

  /** Sweeps soon (the maintenance round calls this; so does start). Never overlaps itself. */
  requestSweep(): void {
    if (!this.#running) return
    if (this.#sweeping) {
      this.#sweepAgain = true
      return
    }
    this.#sweeping = true
    this.#hooks.track(
      (async () => {
        try {
          do {
            this.#sweepAgain = false
            await this.#sweep()
          } while (this.#sweepAgain && this.#running)
        } catch (error) {
          this.#hooks.report(error)
        } finally {
          this.#sweeping = false
        }
      })(),
    )
  }

  async #sweep(): Promise<void> {
    const { store, leaseMs } = this.#settings
    const now = this.#now()
    const orphans = await store.orphanedDeliveries({
      aliveSince: now - DEAD_AFTER_LEASES * leaseMs,
      limit: SWEEP_LIMIT,
    })
    for (const row of orphans) {
      if (!this.#running) return
      await this.#recoverOrphan(row)
    }
    const pending = await store.pendingDeliveries({ limit: SWEEP_LIMIT })
    let reachedLater = false
    for (const row of pending) {
      if (!this.#running) return
      const at = row.nextAttemptAt ?? 0
      if (at > this.#now()) {
        this.#wake(at)
        // Rows come earliest first: every later one is due later too.
        reachedLater = true
        break
      }
      await this.#retry(row)
    }
    // A full page that was all due (or a full page of orphans) may have more behind it; a page that
    // reached a row due later has nothing more due now: sweeping again would read the same rows.
    if ((pending.length === SWEEP_LIMIT && !reachedLater) || orphans.length === SWEEP_LIMIT)
      this.#sweepAgain = true
  }

  /** A `sending` row of a dead owner: sent again where the channel deduplicates, else failed. */
  async #recoverOrphan(row: CronDelivery): Promise<void> {
    const { store } = this.#settings
    const context = await this.#context(row)
    const resend = this.#canDeduplicate(row.target) && row.attempts < this.#settings.delivery.maxAttempts
    const update: DeliveryUpdate = {
      owner: row.owner ?? '',
      status: resend ? 'pending' : 'failed',
      nextAttemptAt: resend ? this.#now() : null,
      lastError: resend
        ? 'interrupted: the server stopped mid-send; sent again (the channel deduplicates)'
        : UNKNOWN_AFTER_STOP,
      now: this.#now(),
    }
    // A `sending` row always has its owner; the compare-and-set is on that (dead) owner.
    const finished = await store.finishDelivery(row.id, update)
    if (!finished) return
    this.#settings.logger.warn('cron delivery left mid-send by a stopped scheduler', {
      deliveryId: row.id,
      runId: row.runId,
      resend,
    })
    if (context === undefined) return
    const run = await this.#refreshedRun(context.job, context.run)
    this.#hooks.emit({
      job: context.job,
      run,
      target: row.target,
      status: resend ? 'retrying' : 'failed',
      attempt: row.attempts,
      error: update.lastError ?? undefined,
      final: !resend,
    })
    if (resend) this.#wake(update.nextAttemptAt ?? this.#now())
  }

  /** A due `pending` row: claimed and sent, with its run's summary refreshed. */
  async #retry(row: CronDelivery): Promise<void> {
    const { store, ownerId } = this.#settings
    const context = await this.#context(row)
    const claimed = await store.claimDelivery(row.id, { owner: ownerId, now: this.#now() })
    if (claimed === undefined) return
    if (context === undefined) {
      await store.finishDelivery(row.id, {
        owner: ownerId,
        status: 'failed',
        nextAttemptAt: null,
        lastError: 'the job or run no longer exists',
        now: this.#now(),
      })
      return
    }
    const controller = new AbortController()
    let set = this.#inFlight.get(row.jobId)
    if (set === undefined) {
      set = new Set()
      this.#inFlight.set(row.jobId, set)
    }
    set.add(controller)
    try {
      await this.#send(context.job, context.run, claimed, controller.signal, true)
    } finally {
      set.delete(controller)
      if (set.size === 0) this.#inFlight.delete(row.jobId)
    }
  }

  /** The job and run of a row, or undefined when either is gone. */
  async #context(row: CronDelivery): Promise<{ job: CronJob; run: CronRun } | undefined> {
    const { store } = this.#settings
    const [job, run] = await Promise.all([store.getJob(row.jobId), store.getRun(row.runId)])
    return job === undefined || run === undefined ? undefined : { job, run }
  }

  /**
   * Sends one claimed row and records how it ended: `delivered`, `pending` again (a retry, due
   * after the backoff or the channel's `Retry-After`), or `failed`. Emits `delivery:end`; with
   * `refresh`, stores the run's new summary first.
   */
  async #send(
    job: CronJob,
    run: CronRun,
    row: CronDelivery,
    external: AbortSignal,
    refresh = false,
  ): Promise<void> {
    const { clock, deliveryTimeoutMs, channelSender, store, ownerId } = this.#settings
    const timeout = new AbortController()
    const timer = clock.setTimeout(() => {
      timeout.abort(
        new CronError(
          'CRON_DELIVERY_TIMEOUT',
          `delivery timed out after ${formatDuration(deliveryTimeoutMs)}`,
          {
            data: { timeoutMs: deliveryTimeoutMs },
          },
        ),
      )
    }, deliveryTimeoutMs)
    const stopped = this.#controller.signal
    const signal = AbortSignal.any([stopped, timeout.signal, external])
    let update: DeliveryUpdate
    try {
      signal.throwIfAborted()
      if (channelSender === undefined)
        throw new DeliveryError('no channel sender configured', { permanent: true })
      await abortable(
        Promise.resolve(channelSender.send(row.target, row.text, { signal, idempotencyKey: row.id })),
        signal,
      )
      update = { owner: ownerId, status: 'delivered', nextAttemptAt: null, lastError: null, now: this.#now() }
    } catch (caught) {
      update = this.#failed(row, caught, { stopped, timeout: timeout.signal, external })
    } finally {
      clock.clearTimeout(timer)
    }
    let finished = false
    try {
      finished = await store.finishDelivery(row.id, update)
    } catch (error) {
      // The row stays `sending` by this owner; it is recovered once this owner is gone.
      this.#hooks.report(error, job.id, run.id)
      return
    }
    if (!finished) return
    if (update.status === 'pending') this.#wake(update.nextAttemptAt ?? this.#now())
    const current = refresh ? await this.#refreshedRun(job, run) : run
    this.#hooks.emit({
      job,
      run: current,
      target: row.target,
      status: update.status === 'pending' ? 'retrying' : update.status,
      attempt: row.attempts,
      ...(update.lastError === null ? {} : { error: update.lastError }),
      final: update.status !== 'pending',
    })
  }

  /** How a failed send is recorded: retried (`pending`) or final (`failed`), with the reason. */
  #failed(
    row: CronDelivery,
    caught: unknown,
    signals: { readonly stopped: AbortSignal; readonly timeout: AbortSignal; readonly external: AbortSignal },
  ): DeliveryUpdate {
    const { ownerId, delivery } = this.#settings
    const now = this.#now()
    const attemptsLeft = row.attempts < delivery.maxAttempts
    const failed = (reason: string): DeliveryUpdate => ({
      owner: ownerId,
      status: 'failed',
      nextAttemptAt: null,
      lastError: truncate(reason, MAX_ERROR_CHARS),
      now,
    })
    const retry = (reason: string, delayMs: number): DeliveryUpdate => ({
      owner: ownerId,
      status: 'pending',
      nextAttemptAt: now + delayMs,
      lastError: truncate(reason, MAX_ERROR_CHARS),
      now,
    })
    const dedupe = this.#canDeduplicate(row.target)
    if (signals.stopped.aborted) {
      // Whether the channel got it is unknown: resend only where the channel deduplicates.
      return dedupe && attemptsLeft
        ? retry('interrupted: the server stopped mid-send', 0)
        : failed(UNKNOWN_AFTER_STOP)
    }
    if (signals.external.aborted) return failed(toError(signals.external.reason).message)
    if (signals.timeout.aborted) {
      const reason = toError(signals.timeout.reason).message
      return dedupe && attemptsLeft ? retry(reason, this.#backoff(row.attempts)) : failed(reason)
    }
    const error = toError(caught)
    if (DeliveryError.is(caught)) {
      if (caught.permanent) return failed(error.message)
      if (caught.retryAfterMs !== undefined) {
        if (caught.retryAfterMs > delivery.maxRetryAfterMs)
          return failed(
            `${error.message} (the channel asked to wait ${formatDuration(caught.retryAfterMs)}, longer than ${formatDuration(delivery.maxRetryAfterMs)})`,
          )
        return attemptsLeft ? retry(error.message, caught.retryAfterMs) : failed(error.message)
      }
    }
    return attemptsLeft ? retry(error.message, this.#backoff(row.attempts)) : failed(error.message)
  }

  /** Exponential backoff with equal jitter after attempt `attempt` (1-based): half fixed, half random. */
  #backoff(attempt: number): number {
    const { baseDelayMs, maxDelayMs, random } = this.#settings.delivery
    const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.max(0, attempt - 1))
    return Math.round(ceiling / 2 + random() * (ceiling / 2))
  }

  #canDeduplicate(target: string): boolean {
    const sender = this.#settings.channelSender
    try {
      return sender?.canDeduplicate?.(target) === true
    } catch {
      return false
    }
  }

  /** Stores the run's delivery summary from its rows; returns it. */
  async #refresh(job: CronJob, runId: string): Promise<DeliverySummary> {
    const { store } = this.#settings
    const summary = summarizeDeliveries(await store.listDeliveries([runId]), job.deliverTo)
    await store.setDelivery(runId, summary.status, summary.error)
    return summary
  }

  async #refreshedRun(job: CronJob, run: CronRun): Promise<CronRun> {
    try {
      const summary = await this.#refresh(job, run.id)
      return { ...run, deliveryStatus: summary.status, deliveryError: summary.error }
    } catch (error) {
      this.#hooks.report(error, job.id, run.id)
      return run
    }
  }

  /** Arms the one retry timer for `at`, unless it is armed earlier already. */
  #wake(at: number): void {
    if (!this.#running || at >= this.#timerAt) return
    if (this.#timer !== undefined) this.#settings.clock.clearTimeout(this.#timer)
    this.#timerAt = at
    const handle = this.#settings.clock.setTimeout(
      () => {
        this.#timer = undefined
        this.#timerAt = Number.POSITIVE_INFINITY
        this.requestSweep()
      },
      Math.min(MAX_TIMER_MS, Math.max(0, at - this.#now())),
    )
    ;(handle as { unref?: () => void } | undefined)?.unref?.()
    this.#timer = handle
  }

  #now(): number {
    return this.#settings.clock.now().getTime()
  }
}
