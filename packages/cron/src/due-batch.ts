import type { CatchUpPlan, Occurrence } from './catch-up.js'
import type { Ledger } from './ledger.js'
import type { CronJob } from './model.js'
import type { JobScheduleUpdate, NewCronRun } from './ports.js'
import type { WaitingStart } from './run-slots.js'
import { type CronSchedulerEvents, fireEvent } from './scheduler-events.js'

/** The id noted for a deferred occurrence: never a row id, never claimed here. */
const DEFERRED = '\u0000deferred'

/** A claimed-to-be row that starts a run once the insert claims it. */
export interface DueStart {
  readonly job: CronJob
  row: NewCronRun
}

/**
 * The occurrences handled at one instant (a timer fire, or start-up): their ledger rows, claimed
 * together in one insert, the runs to start, the `schedule:fire` events and the jobs' next/last
 * run times, each kept only where this scheduler's rows won the claim.
 */
export class DueBatch {
  /** Rows to insert, skipped and running. */
  readonly rows: NewCronRun[] = []
  /** Runs to start, each holding a slot taken at admission. */
  readonly starts: DueStart[] = []
  /** Occurrences left to the scheduler that ranks first for them, admitted here later if still unclaimed. */
  readonly deferred: WaitingStart[] = []
  readonly #ledger: Ledger
  readonly #firedAt: number
  readonly #startedAt: number
  readonly #fires: CronSchedulerEvents['schedule:fire'][] = []
  readonly #updates: JobScheduleUpdate[] = []
  /** Per job, the ids of its rows in this batch ('' for an occurrence queued, not inserted). */
  readonly #rowsByJob = new Map<string, string[]>()

  /**
   * @param firedAt when the occurrences were found due (`firedAt` of the events)
   * @param startedAt the start (and skip) time written on the rows
   */
  constructor(ledger: Ledger, firedAt: number, startedAt: number) {
    this.#ledger = ledger
    this.#firedAt = firedAt
    this.#startedAt = startedAt
  }

  /** Records an occurrence `skipped` with its reason. */
  skip(job: CronJob, occurrence: Occurrence, reason: string): void {
    const row = this.#add(job, occurrence, 'skipped', reason)
    this.#fires.push(fireEvent(job, row, this.#firedAt, 'skipped', reason))
  }

  /** Adds a run that starts once claimed (its slot is already taken). */
  start(job: CronJob, occurrence: Occurrence): void {
    this.starts.push({ job, row: this.#add(job, occurrence, 'running', null) })
  }

  /**
   * Leaves an occurrence to another scheduler for a moment (not admitted yet). The job's next run
   * time is not written with this batch: the scheduler that takes the occurrence writes it.
   */
  defer(job: CronJob, occurrence: Occurrence): WaitingStart {
    const waiting = { job, occurrence }
    this.deferred.push(waiting)
    this.#idsOf(job.id).push(DEFERRED)
    return waiting
  }

  /** Notes an occurrence that waits for a slot or queues behind its job's running one. */
  queued(job: CronJob, occurrence: Occurrence, reason: string): void {
    this.#fires.push({
      jobId: job.id,
      jobName: job.name,
      scheduledFor: occurrence.scheduledFor,
      firedAt: this.#firedAt,
      trigger: occurrence.trigger,
      outcome: 'queued',
      reason,
    })
    this.#idsOf(job.id).push('')
  }

  /**
   * The job's next run time after `plan` (and its last, when an occurrence ran); a job with no next
   * occurrence is disabled (a one-time job that fired). Returns the update, to apply to the armed copy.
   */
  schedule(job: CronJob, plan: CatchUpPlan): JobScheduleUpdate {
    const update: JobScheduleUpdate = {
      id: job.id,
      version: job.updatedAt,
      nextRunAt: plan.next ?? null,
      ...(plan.run === undefined ? {} : { lastRunAt: this.#startedAt }),
      ...(plan.next === undefined
        ? { disable: { reason: 'done: the one-time (at) schedule has fired' } }
        : {}),
    }
    this.#updates.push(update)
    return update
  }

  /** Takes the rows as the insert stored them (a retry moves `startedAt`). */
  inserted(rows: readonly NewCronRun[]): void {
    const byId = new Map(rows.map((row) => [row.id, row]))
    for (const start of this.starts) start.row = byId.get(start.row.id) ?? start.row
  }

  /** The `skipped` and `queued` events, without skipped rows another scheduler recorded first. */
  fires(claimed: ReadonlySet<string>): CronSchedulerEvents['schedule:fire'][] {
    return this.#fires.filter(
      (fire) => !(fire.outcome === 'skipped' && fire.runId !== undefined && !claimed.has(fire.runId)),
    )
  }

  /**
   * Next/last run writes for the jobs whose occurrence this instance recorded (or queued); the
   * instance that won a claim writes them otherwise, and the one that takes a deferred occurrence.
   */
  writes(claimed: ReadonlySet<string>): JobScheduleUpdate[] {
    return this.#updates.filter((update) => {
      const ids = this.#rowsByJob.get(update.id) ?? []
      return ids.length === 0 || ids.some((id) => id === '' || claimed.has(id))
    })
  }

  /** Adds the row of an occurrence to insert. */
  #add(
    job: CronJob,
    occurrence: Occurrence,
    status: 'running' | 'skipped',
    reason: string | null,
  ): NewCronRun {
    const row = this.#ledger.row(
      job,
      occurrence.scheduledFor,
      occurrence.trigger,
      status,
      this.#startedAt,
      reason,
    )
    this.rows.push(row)
    this.#idsOf(job.id).push(row.id)
    return row
  }

  #idsOf(jobId: string): string[] {
    let ids = this.#rowsByJob.get(jobId)
    if (ids === undefined) {
      ids = []
      this.#rowsByJob.set(jobId, ids)
    }
    return ids
  }
}
