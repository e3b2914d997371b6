import type { CronJob, RunTrigger } from './model.js'
import type { Clock, CronStore, IdGenerator, NewCronRun } from './ports.js'

/** A missed or refused occurrence to record as `skipped`. */
export interface Skip {
  readonly job: CronJob
  readonly scheduledFor: number
  readonly trigger: RunTrigger
  readonly reason: string
}

/** Rows as one insert claimed them: the ids this scheduler inserted, and the rows as inserted. */
export interface Claim {
  readonly claimed: ReadonlySet<string>
  readonly rows: readonly NewCronRun[]
}

/**
 * One scheduler's writes to the occurrence ledger: it makes rows owned by this instance, claims
 * them by inserting (a row that lost the insert race belongs to another scheduler), retries a
 * busy database, and records skipped occurrences.
 */
export class Ledger {
  readonly #store: CronStore
  readonly #clock: Clock
  readonly #ownerId: string
  readonly #newId: IdGenerator
  readonly #report: (error: unknown) => void
  readonly #canRetry: () => boolean

  /**
   * @param report reports each failed attempt that is retried
   * @param canRetry false once the scheduler stops: a failing insert is not retried then
   */
  constructor(options: {
    readonly store: CronStore
    readonly clock: Clock
    readonly ownerId: string
    readonly newId: IdGenerator
    readonly report: (error: unknown) => void
    readonly canRetry: () => boolean
  }) {
    this.#store = options.store
    this.#clock = options.clock
    this.#ownerId = options.ownerId
    this.#newId = options.newId
    this.#report = options.report
    this.#canRetry = options.canRetry
  }

  /** A new ledger row of this scheduler: `running` (started `at`) or `skipped` (completed `at`). */
  row(
    job: CronJob,
    scheduledFor: number,
    trigger: RunTrigger,
    status: 'running' | 'skipped',
    at: number,
    reason: string | null,
  ): NewCronRun {
    return {
      id: this.#newId(),
      jobId: job.id,
      jobName: job.name,
      trigger,
      status,
      scheduledFor,
      startedAt: status === 'running' ? at : null,
      completedAt: status === 'skipped' ? at : null,
      skipReason: reason,
      owner: this.#ownerId,
    }
  }

  /**
   * Inserts rows: the claim. A busy or failing database is reported and retried up to `attempts`
   * tries in all, 250 ms apart and more; retried `running` rows take the retry's start time.
   * Throws the last error.
   */
  async insert(rows: readonly NewCronRun[], attempts: number): Promise<Claim> {
    let pending = rows
    for (let attempt = 1; ; attempt++) {
      try {
        return { claimed: await this.#store.insertRuns(pending), rows: pending }
      } catch (error) {
        if (attempt >= attempts || !this.#canRetry()) throw error
        this.#report(error)
        await new Promise<void>((resolve) => this.#clock.setTimeout(resolve, 250 * attempt))
        const retryAt = this.#clock.now().getTime()
        pending = pending.map((row) => (row.status === 'running' ? { ...row, startedAt: retryAt } : row))
      }
    }
  }

  /**
   * Claims a manual row at `now`, moving back 1 ms per collision, never on `reserved` (the job's
   * pending scheduled occurrence, which the schedule itself must be able to claim). Undefined when
   * no free instant was found.
   */
  async claimManual(
    job: CronJob,
    now: number,
    status: 'running' | 'skipped',
    reason: string | null,
    options: { readonly reserved: number | null; readonly attempts: number },
  ): Promise<NewCronRun | undefined> {
    let scheduledFor = now
    for (let attempt = 0; attempt < 1000; attempt++, scheduledFor--) {
      if (scheduledFor === options.reserved) continue
      const { claimed, rows } = await this.insert(
        [this.row(job, scheduledFor, 'manual', status, now, reason)],
        options.attempts,
      )
      const row = rows[0] as NewCronRun
      if (claimed.has(row.id)) return row
    }
    return undefined
  }

  /** Records occurrences as `skipped` with their reasons, completed now. */
  async recordSkips(skips: readonly Skip[]): Promise<void> {
    const now = this.#clock.now().getTime()
    await this.#store.insertRuns(
      skips.map((skip) => this.row(skip.job, skip.scheduledFor, skip.trigger, 'skipped', now, skip.reason)),
    )
  }
}
