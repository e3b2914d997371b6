import type { DeliveryLedger } from './delivery-ledger.js'
import { shouldNotify } from './delivery-ledger.js'
import { formatDuration } from './duration.js'
import { CronError, toError } from './errors.js'
import {
  deliver,
  deliveryText,
  type ExecutionOutcome,
  executeJob,
  failureUsage,
  type TokenCounts,
  truncate,
} from './executor.js'
import type { CronJob, CronRun, CronRunStatus, DeliveryStatus } from './model.js'
import type { ActiveRun } from './run-slots.js'
import { MAX_TIMER_MS, type SchedulerSettings } from './scheduler-options.js'

/** A run's final status (`skipped`: its `when` gate said so). */
type FinalStatus = Exclude<CronRunStatus, 'running'>

/** How a run ended, as stored. */
export interface RunEnd {
  /** The final row, delivery included (or the row another scheduler finalised). */
  readonly final: CronRun
  readonly status: FinalStatus
  readonly error: string | null
  /** The job's consecutive failures after this run; undefined when this run did not record them. */
  readonly failures: number | undefined
  /** Input plus output tokens the agent reported for this run (0 when none), stored or not. */
  readonly tokens: number
}

/** Reads and updates the scheduler's copy of the job while a run ends. */
export interface JobState {
  /** The scheduler's current copy of the job (its last status and failure count). */
  current(): CronJob
  /** Called once the run's outcome is stored on the job. */
  recorded(status: FinalStatus, consecutiveFailures: number): void
}

/** What {@link RunExecutor} needs of the settings: the store, the clock, the ports and the run limits. */
type RunExecutorSettings = Pick<
  SchedulerSettings,
  | 'store'
  | 'clock'
  | 'ownerId'
  | 'agentRunner'
  | 'shellRunner'
  | 'channelSender'
  | 'automationPrefix'
  | 'recentResultsInPrompt'
  | 'maxResultChars'
  | 'maxPayloadInPromptBytes'
  | 'deliveryTimeoutMs'
>

/**
 * Executes one claimed run to its final row: the job's timeout, the agent or shell port, the
 * completion, the job's outcome, and the delivery of the result, each send bounded by
 * `deliveryTimeoutMs`. The run's controller (pause, remove, stop) aborts the work and the delivery
 * alike; the job's timeout aborts the work only, so a timed-out run is still delivered.
 */
export class RunExecutor {
  readonly #settings: RunExecutorSettings
  readonly #report: (error: unknown, jobId?: string, runId?: string) => void
  readonly #deliveries: DeliveryLedger

  /**
   * @param report reports a store failure while a run was being finalised (the run still ends)
   * @param deliveries the delivery ledger the run's result is handed to once the run row is final
   */
  constructor(
    settings: RunExecutorSettings,
    report: (error: unknown, jobId?: string, runId?: string) => void,
    deliveries: DeliveryLedger,
  ) {
    this.#settings = settings
    this.#report = report
    this.#deliveries = deliveries
  }

  /** Runs `run` of `job` and stores its end; never throws (store failures are reported). */
  async execute(job: CronJob, run: CronRun, active: ActiveRun, state: JobState): Promise<RunEnd> {
    const { store, clock } = this.#settings
    const { controller } = active
    const startedAt = run.startedAt ?? clock.now().getTime()
    // The timeout aborts the work only: a timed-out run is still delivered (saying so), and the
    // delivery keeps `controller.signal`, which only pause, remove and stop() abort.
    const deadline = new AbortController()
    const signal = AbortSignal.any([controller.signal, deadline.signal])
    // A stored timeout beyond the longest Node timer (another process's limits) would fire at once.
    const timeout = clock.setTimeout(
      () => {
        deadline.abort(
          new CronError('CRON_RUN_TIMEOUT', `timed out after ${formatDuration(job.timeoutMs)}`, {
            data: { timeoutMs: job.timeoutMs },
          }),
        )
      },
      Math.min(job.timeoutMs, MAX_TIMER_MS),
    )
    let outcome: ExecutionOutcome | undefined
    let status: FinalStatus
    let error: string | null = null
    let result: string | null = null
    let skipReason: string | undefined
    /** The agent runner's last running total: what a run cut off by its signal spent. */
    let told: TokenCounts | undefined
    /** What the runner's rejection said it spent (`AgentRunFailure.usage`). */
    let rejected: TokenCounts | undefined
    try {
      outcome = await this.#perform(job, run, signal, {
        payload: active.payload,
        onUsage: (usage) => {
          told = usage
        },
      })
      status = outcome.status
      result = outcome.result
      error = outcome.error
      skipReason = outcome.skipReason
    } catch (caught) {
      const reason = signal.aborted ? signal.reason : caught
      if (CronError.is(reason) && reason.code === 'CRON_RUN_TIMEOUT') {
        status = 'timed_out'
      } else if (CronError.is(reason) && reason.code === 'CRON_RUN_CANCELLED') {
        status = (reason.data?.status as 'cancelled' | 'interrupted' | undefined) ?? 'cancelled'
      } else if (job.kind === 'ai' && !signal.aborted && refusedBeforeStart(caught)) {
        // The runner did nothing (its daily budget is spent): skipped, as cron's own budgets do,
        // so a job is neither failed nor auto-paused for a budget that resets.
        status = 'skipped'
        skipReason = truncate(toError(caught).message, 4000)
      } else {
        status = 'failed'
      }
      error = status === 'skipped' ? null : truncate(toError(reason).message, 4000)
      // What a failed turn spent (its rejection's `usage`) counts like a completed one's: a turn
      // stopped by its own budget spent it all the same.
      outcome = status === 'failed' || status === 'timed_out' ? { status, result: null, error } : undefined
      if (outcome !== undefined && !signal.aborted) rejected = failureUsage(caught)
    } finally {
      clock.clearTimeout(timeout)
    }
    const completedAt = clock.now().getTime()
    const durationMs = completedAt - startedAt
    // A run cut off by its signal (timed out, cancelled, interrupted) was not waited for: it counts
    // the runner's last running total, as does an answer or a rejection that said nothing.
    const usage = job.kind === 'ai' ? (outcome?.usage ?? rejected ?? told) : undefined
    const inputTokens = usage?.inputTokens ?? null
    const outputTokens = usage?.outputTokens ?? null
    const completion = {
      status,
      completedAt,
      durationMs,
      result,
      error,
      inputTokens,
      outputTokens,
      // A run its `when` gate skipped: never delivered, and the job's outcome is left as it was.
      ...(skipReason === undefined ? {} : { skipReason }),
    }
    let final: CronRun = { ...run, ...completion }
    let failures: number | undefined
    try {
      // As its owner: a row another scheduler marked interrupted (a late heartbeat taken for a
      // dead owner) is finalised with what the run did, and delivered.
      const owned = { ...completion, owner: this.#settings.ownerId }
      const ended = status === 'completed' || status === 'failed' || status === 'timed_out'
      const failed = status !== 'completed'
      const known = state.current()
      // Steady state (success after success) changes nothing on the job row: no write.
      const steady = !failed && known.lastStatus === 'completed' && known.consecutiveFailures === 0
      let updated: boolean
      if (ended && !steady && store.completeRunWithOutcome !== undefined) {
        // One round trip for both rows where the store can (PostgreSQL).
        const done = await store.completeRunWithOutcome(run.id, owned, { jobId: job.id, status, failed })
        updated = done.updated
        failures = done.failures
      } else {
        updated = await store.completeRun(run.id, owned)
        if (updated && ended) failures = steady ? 0 : await store.recordOutcome(job.id, status, failed)
      }
      if (!updated) {
        // Someone else finalised the row (a cancel, or a stop on this scheduler): keep theirs.
        final = (await store.getRun(run.id)) ?? final
      } else if (ended) {
        if (failures !== undefined) state.recorded(status, failures)
        active.phase = 'delivery'
        // The run row is final: what follows only records delivery, one ledger row per target.
        if (outcome !== undefined && shouldNotify(job.notify, status, known.lastStatus)) {
          const delivery = await this.#deliveries.deliverRun(
            job,
            final,
            deliveryText(job, outcome),
            controller.signal,
          )
          if (delivery.status !== 'none')
            final = { ...final, deliveryStatus: delivery.status, deliveryError: delivery.error }
        }
      }
    } catch (storeError) {
      this.#report(storeError, job.id, run.id)
    }
    return { final, status, error, failures, tokens: (inputTokens ?? 0) + (outputTokens ?? 0) }
  }

  /**
   * Sends a notice (not a run's result: no ledger row, no retry) to every target, each send bounded
   * by `deliveryTimeoutMs` and aborted with `signal`.
   */
  deliver(
    targets: readonly string[],
    text: string,
    signal: AbortSignal,
  ): Promise<{ readonly status: DeliveryStatus; readonly error: string | null }> {
    return deliver(this.#settings.channelSender, targets, text, {
      signal,
      clock: this.#settings.clock,
      timeoutMs: this.#settings.deliveryTimeoutMs,
    })
  }

  async #perform(
    job: CronJob,
    run: CronRun,
    signal: AbortSignal,
    extras: Parameters<typeof executeJob>[5],
  ): Promise<ExecutionOutcome> {
    const { store, recentResultsInPrompt } = this.#settings
    const recent =
      job.kind === 'ai' && recentResultsInPrompt > 0
        ? await store.recentResults(job.id, recentResultsInPrompt)
        : ([] as string[])
    return executeJob(job, run.id, recent, signal, this.#settings, extras)
  }
}

/** Whether an agent runner's rejection says it did nothing (`AgentRunFailure.started === false`). */
function refusedBeforeStart(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { started?: unknown }).started === false
}
