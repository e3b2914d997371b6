import type { JobScheduleUpdate, TimerHandle } from './ports.js'
import type { BackgroundHooks, SchedulerSettings } from './scheduler-options.js'

/** Pending writes at which a batch is written at once instead of after the delay. */
const MAX_PENDING_WRITES = 500

/** What {@link ScheduleWrites} needs of the settings. */
type ScheduleWritesSettings = Pick<SchedulerSettings, 'store' | 'clock' | 'scheduleWriteDelayMs'>

/**
 * Batches next/last run time writes: one `updateSchedules` statement every `delayMs`, not one write
 * per fire. Losing a batch in a crash is harmless: the ledger already holds the claims, so a stale
 * `next_run_at` only makes the next start re-try occurrences it cannot claim.
 */
export class ScheduleWrites {
  readonly #pending = new Map<string, JobScheduleUpdate>()
  readonly #settings: ScheduleWritesSettings
  /** `report` gets a failed write (the batch is dropped; see above). */
  readonly #hooks: BackgroundHooks
  #timer: TimerHandle | undefined

  constructor(settings: ScheduleWritesSettings, hooks: BackgroundHooks) {
    this.#settings = settings
    this.#hooks = hooks
  }

  /**
   * Merges `writes` into the batch (latest next run and version, latest last run, a disable kept).
   * The store applies each by compare-and-set, so a write that lands late never moves a job back.
   */
  queue(writes: readonly JobScheduleUpdate[]): void {
    for (const write of writes) {
      const pending = this.#pending.get(write.id)
      const lastRunAt = Math.max(
        pending?.lastRunAt ?? Number.NEGATIVE_INFINITY,
        write.lastRunAt ?? Number.NEGATIVE_INFINITY,
      )
      const disable = write.disable ?? pending?.disable
      this.#pending.set(write.id, {
        id: write.id,
        ...(write.version === undefined ? {} : { version: write.version }),
        nextRunAt: write.nextRunAt,
        ...(Number.isFinite(lastRunAt) ? { lastRunAt } : {}),
        ...(disable === undefined ? {} : { disable }),
      })
    }
    if (this.#pending.size >= MAX_PENDING_WRITES) {
      this.#hooks.track(this.flush())
    } else if (this.#pending.size > 0 && this.#timer === undefined) {
      this.#timer = this.#settings.clock.setTimeout(() => {
        this.#timer = undefined
        this.#hooks.track(this.flush())
      }, this.#settings.scheduleWriteDelayMs)
    }
  }

  /** Drops the job's pending write: its row was just stored by the caller and is newer. */
  forget(jobId: string): void {
    this.#pending.delete(jobId)
  }

  /** Writes the batch now; a failing store is reported, never thrown. */
  async flush(): Promise<void> {
    if (this.#timer !== undefined) this.#settings.clock.clearTimeout(this.#timer)
    this.#timer = undefined
    if (this.#pending.size === 0) return
    const writes = [...this.#pending.values()]
    this.#pending.clear()
    try {
      await this.#settings.store.updateSchedules(writes)
    } catch (error) {
      this.#hooks.report(error)
    }
  }
}
