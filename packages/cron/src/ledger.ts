import { sleep } from './abort.js'
import type { CronJob, RunTrigger } from './model.js'
import type { NewCronRun } from './ports.js'
import type { WaitingStart } from './run-slots.js'
import type { SchedulerSettings } from './scheduler-options.js'

/**
 * Rows as one insert claimed them: the ids this scheduler inserted, those of them stored `skipped`
 * because another run of their job was running (exclusive claims), and the rows as sent.
 */
export interface Claim {
  readonly claimed: ReadonlySet<string>
  readonly overlapSkipped: ReadonlySet<string>
  readonly rows: readonly NewCronRun[]
}

/** What became of one claimed row: started, recorded skipped for overlap, or taken by another scheduler. */
export type ClaimOutcome = 'won' | 'overlap-skipped' | 'lost'

/** Why an exclusive claim was stored `skipped`: a run of the job is `running`, on another instance. */
function overlapElsewhereReason(job: Pick<CronJob, 'overlap'>): string {
  return job.overlap === 'queue_one'
    ? 'overlap: the previous occurrence is still running on another instance (overlap: queue_one queues only behind a run of the same instance, so this one is skipped)'
    : 'overlap: the previous occurrence is still running on another instance (overlap: skip)'
}

/**
 * One scheduler's writes to the occurrence ledger: it makes rows owned by this instance, claims
 * them by inserting (a row that lost the insert race belongs to another scheduler), retries a
 * busy database, and records skipped occurrences.
 */
export class Ledger {
  readonly #settings: LedgerSettings
  readonly #hooks: LedgerHooks

  constructor(settings: LedgerSettings, hooks: LedgerHooks) {
    this.#settings = settings
    this.#hooks = hooks
  }

  /**
   * A new ledger row of this scheduler: `running` (started `at`) or `skipped` (completed `at`). A
   * `running` row of a job whose overlap is not `allow` is an exclusive claim: the store records it
   * `skipped` instead while another run of the job is running, whoever owns it.
   */
  row(
    job: CronJob,
    scheduledFor: number,
    trigger: RunTrigger,
    status: 'running' | 'skipped',
    at: number,
    reason: string | null,
  ): NewCronRun {
    return {
      id: this.#settings.newId(),
      jobId: job.id,
      jobName: job.name,
      trigger,
      status,
      scheduledFor,
      startedAt: status === 'running' ? at : null,
      completedAt: status === 'skipped' ? at : null,
      skipReason: reason,
      owner: this.#settings.ownerId,
      ...(status === 'running' && job.overlap !== 'allow'
        ? { exclusive: { skipReason: overlapElsewhereReason(job) } }
        : {}),
    }
  }

  /** `row` as the store records an exclusive claim it skipped for overlap. */
  overlapSkippedRow(row: NewCronRun): NewCronRun {
    return {
      ...row,
      status: 'skipped',
      startedAt: null,
      completedAt: row.startedAt,
      skipReason: row.exclusive?.skipReason ?? null,
    }
  }

  /**
   * Inserts rows: the claim. A busy or failing database is reported and retried up to `attempts`
   * tries in all, 250 ms apart and more; retried `running` rows take the retry's start time.
   * Throws the last error.
   */
  async insert(rows: readonly NewCronRun[], attempts: number): Promise<Claim> {
    const { store, clock } = this.#settings
    let pending = rows
    for (let attempt = 1; ; attempt++) {
      try {
        const { inserted, overlapSkipped } = await store.insertRuns(pending)
        return { claimed: inserted, overlapSkipped, rows: pending }
      } catch (error) {
        if (attempt >= attempts || !this.#hooks.canRetry()) throw error
        this.#hooks.report(error)
        await sleep(clock, 250 * attempt)
        const retryAt = clock.now().getTime()
        pending = pending.map((row) => (row.status === 'running' ? { ...row, startedAt: retryAt } : row))
      }
    }
  }

  /**
   * Inserts one row (see {@link insert}): the row as stored, and whether this scheduler claimed it
   * (`won`), claimed it but the store recorded it skipped for overlap, or lost it to another.
   */
  async claim(
    row: NewCronRun,
    attempts: number,
  ): Promise<{ readonly row: NewCronRun; readonly outcome: ClaimOutcome }> {
    const { claimed, overlapSkipped, rows } = await this.insert([row], attempts)
    const sent = rows[0] as NewCronRun
    if (overlapSkipped.has(sent.id)) return { row: this.overlapSkippedRow(sent), outcome: 'overlap-skipped' }
    return { row: sent, outcome: claimed.has(sent.id) ? 'won' : 'lost' }
  }

  /**
   * Claims a manual row at `now`, moving back 1 ms per collision, never on `reserved` (the job's
   * pending scheduled occurrence, which the schedule itself must be able to claim). A `running` claim
   * may come back `overlap-skipped` (see {@link row}). Undefined when no free instant was found.
   */
  async claimManual(
    job: CronJob,
    now: number,
    status: 'running' | 'skipped',
    reason: string | null,
    options: {
      readonly reserved: number | null
      readonly attempts: number
      /** `manual` (default) or `webhook`. */
      readonly trigger?: RunTrigger
    },
  ): Promise<{ readonly row: NewCronRun; readonly outcome: Exclude<ClaimOutcome, 'lost'> } | undefined> {
    let scheduledFor = now
    for (let attempt = 0; attempt < 1000; attempt++, scheduledFor--) {
      if (scheduledFor === options.reserved) continue
      const claimed = await this.claim(
        this.row(job, scheduledFor, options.trigger ?? 'manual', status, now, reason),
        options.attempts,
      )
      if (claimed.outcome !== 'lost') return { row: claimed.row, outcome: claimed.outcome }
    }
    return undefined
  }

  /**
   * Records occurrences that never started as `skipped` for `reason`, completed now. Returns the rows
   * this call inserted, with their jobs (an occurrence another scheduler recorded is not among them).
   */
  async recordSkips(
    occurrences: readonly WaitingStart[],
    reason: string,
  ): Promise<{ readonly job: CronJob; readonly row: NewCronRun }[]> {
    const now = this.#settings.clock.now().getTime()
    const recorded = occurrences.map(({ job, occurrence }) => ({
      job,
      row: this.row(job, occurrence.scheduledFor, occurrence.trigger, 'skipped', now, reason),
    }))
    const { inserted } = await this.#settings.store.insertRuns(recorded.map(({ row }) => row))
    return recorded.filter(({ row }) => inserted.has(row.id))
  }
}

/** What {@link Ledger} needs of the settings. */
type LedgerSettings = Pick<SchedulerSettings, 'store' | 'clock' | 'ownerId' | 'newId'>

/** What {@link Ledger} reports to and asks of the scheduler. */
interface LedgerHooks {
  /** Reports each failed attempt that is retried. */
  readonly report: (error: unknown) => void
  /** False once the scheduler stops: a failing insert is not retried then. */
  readonly canRetry: () => boolean
}
