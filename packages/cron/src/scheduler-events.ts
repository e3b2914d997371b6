import type { Stall } from './maintenance.js'
import type { CronJob, CronRun, RunTrigger } from './model.js'
import type { NewCronRun } from './ports.js'

/** Payloads of the scheduler's events. */
export interface CronSchedulerEvents {
  /** An occurrence came due and was handled: started, queued, skipped (with reason) or claimed by another scheduler. */
  'schedule:fire': {
    readonly jobId: string
    readonly jobName: string
    readonly scheduledFor: number
    readonly firedAt: number
    readonly trigger: RunTrigger
    readonly outcome: 'started' | 'queued' | 'skipped' | 'claimed-elsewhere'
    readonly runId?: string
    readonly reason?: string
  }
  /** A claimed run starts (its ledger row is `running`). */
  'run:start': { readonly job: CronJob; readonly run: CronRun }
  /**
   * A run reached its final status, after the first send to each target: `run.deliveryStatus` is
   * `pending` while a target waits for a retry (see `delivery:end`), else final. Also a dead
   * scheduler's run this one marked `interrupted` (at start or in a maintenance round), reported
   * once, by the scheduler that marked it.
   */
  'run:end': { readonly job: CronJob; readonly run: CronRun }
  /**
   * Runs of schedulers taken for dead (no heartbeat for two leases: killed, crashed, cut off from
   * the database) that this one just marked `interrupted`, at its start or in a maintenance round:
   * one event per batch, before each run is reported as `run:end`, by the scheduler that marked
   * them. Each `run` carries its `owner` (the dead scheduler) and its `error` (why). An interrupted
   * run is not run again; its job's next occurrence runs as scheduled. Not emitted for runs this
   * scheduler interrupts itself when it stops.
   */
  'run:interrupted': { readonly runs: readonly CronRun[] }
  /**
   * One send of a run's result to one target ended: `delivered`, `failed` (final: a permanent
   * failure, the attempts used up, or a send whose outcome is unknown), or `retrying` (a retry is
   * scheduled). `attempt` counts the sends of this target so far; `run` is the run row as known then
   * (its `deliveryStatus` the summary over all its targets). Also emitted, `failed` or `retrying`,
   * for a send a stopped scheduler left mid-way.
   */
  'delivery:end': {
    readonly job: CronJob
    readonly run: CronRun
    readonly target: string
    readonly status: 'delivered' | 'failed' | 'retrying'
    readonly attempt: number
    readonly error?: string
    readonly final: boolean
  }
  /** A run failed or timed out, or the scheduler hit an error it logged and survived. */
  'run:error': { readonly jobId?: string; readonly runId?: string; readonly error: Error }
  /**
   * The watchdog saw the scheduler's timers come more than a lease late (see {@link Stall}): what
   * came due meanwhile has just been handled (run, or recorded `skipped` with a `missed …` reason).
   */
  'scheduler:stall': Stall
  /** The scheduler disabled a job (auto-pause after consecutive failures). */
  'job:pause': { readonly job: CronJob; readonly reason: string }
  /**
   * A job was created, changed, paused, resumed or removed through this scheduler's `CronService`
   * (`job` as stored after the change; as it was, for `removed`). Changes made through another
   * instance are not reported here; the job sync arms them.
   */
  'job:change': {
    readonly job: CronJob
    readonly change: 'created' | 'updated' | 'paused' | 'resumed' | 'removed'
  }
}

/** The `schedule:fire` event of a ledger row. */
export function fireEvent(
  job: CronJob,
  row: NewCronRun,
  firedAt: number,
  outcome: CronSchedulerEvents['schedule:fire']['outcome'],
  reason?: string,
): CronSchedulerEvents['schedule:fire'] {
  return {
    jobId: job.id,
    jobName: job.name,
    scheduledFor: row.scheduledFor,
    firedAt,
    trigger: row.trigger,
    outcome,
    runId: row.id,
    ...(reason === undefined ? {} : { reason }),
  }
}
