import type { CronJob } from './model.js'
import type { JobVersion, TimerHandle } from './ports.js'
import type { BackgroundHooks, SchedulerSettings } from './scheduler-options.js'

/**
 * How much further back than its last read each read looks: the clocks of two instances (each
 * stamps `updatedAt` with its own) may differ by this much without a change being missed.
 */
const SYNC_MARGIN_MS = 5000

/**
 * Versions read per page; the sync yields to timers between pages. After thousands of jobs were
 * created at once each read returns all their versions for a few seconds, but only the jobs whose
 * version differs from the one armed are read whole and decoded.
 */
const SYNC_PAGE = 500

/** What {@link JobSync} needs of the settings. */
type JobSyncSettings = Pick<SchedulerSettings, 'store' | 'clock' | 'syncIntervalMs'>

/** How {@link JobSync} hands the scheduler its work and errors. */
interface JobSyncHooks extends BackgroundHooks {
  /** A read begins: changes the scheduler makes itself from now on are newer than what it reads. */
  readonly begin: () => void
  /** The ids among `versions` whose jobs must be read whole (their version is not the one armed). */
  readonly stale: (versions: readonly JobVersion[]) => string[]
  /** Arms, re-arms or drops the changed jobs of one page, read at `now`. */
  readonly apply: (jobs: readonly CronJob[], now: number) => void
  /** The read ended (read whole, failed or stopped). */
  readonly end: () => void
}

/**
 * Picks up jobs changed by other schedulers on the same database: every `syncIntervalMs` it reads
 * the versions of the jobs whose `updatedAt` is at or after its last read (less
 * {@link SYNC_MARGIN_MS}), page by page, reads whole the jobs whose version is not the one armed,
 * and hands them to the scheduler. A failed read is reported and retried from the same
 * point next time. Its timer is unref'd: it never keeps a process alive.
 */
export class JobSync {
  readonly #settings: JobSyncSettings
  readonly #hooks: JobSyncHooks
  #timer: TimerHandle | undefined
  /** Ends the yield between two pages of a read in flight (stop() calls it: the read then ends). */
  #wake: (() => void) | undefined
  #running = false
  /** When the last successful read began. */
  #lastRead = 0

  constructor(settings: JobSyncSettings, hooks: JobSyncHooks) {
    this.#settings = settings
    this.#hooks = hooks
  }

  /** Starts reading; the first read looks back to `since` (the start's own read of the jobs). */
  start(since: number): void {
    this.#running = true
    this.#lastRead = since
    this.#schedule()
  }

  /** Stops reading (a read in flight finishes; no other follows). */
  stop(): void {
    this.#running = false
    if (this.#timer !== undefined) this.#settings.clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#wake?.()
  }

  #schedule(): void {
    if (!this.#running) return
    const handle = this.#settings.clock.setTimeout(() => {
      this.#timer = undefined
      this.#hooks.track(this.#round())
    }, this.#settings.syncIntervalMs)
    ;(handle as { unref?: () => void } | undefined)?.unref?.()
    this.#timer = handle
  }

  async #round(): Promise<void> {
    if (!this.#running) return
    const { store, clock } = this.#settings
    const now = clock.now().getTime()
    const changedSince = this.#lastRead - SYNC_MARGIN_MS
    this.#hooks.begin()
    try {
      let after: string | undefined
      for (;;) {
        const page = await store.changedJobVersions({
          changedSince,
          limit: SYNC_PAGE,
          ...(after === undefined ? {} : { after }),
        })
        if (!this.#running) return
        const stale = this.#hooks.stale(page)
        if (stale.length > 0) {
          const jobs = await store.listJobs({ ids: stale })
          if (!this.#running) return
          this.#hooks.apply(jobs, now)
        }
        if (page.length < SYNC_PAGE) break
        after = page[page.length - 1]?.name
        await this.#yield()
        if (!this.#running) return
      }
      this.#lastRead = now
    } catch (error) {
      this.#hooks.report(error)
    } finally {
      this.#hooks.end()
    }
    this.#schedule()
  }

  /** Lets due timers run before the next page; ends at once when the sync stops. */
  #yield(): Promise<void> {
    const { clock } = this.#settings
    return new Promise<void>((resolve) => {
      const handle = clock.setTimeout(() => this.#wake?.(), 0)
      this.#wake = () => {
        this.#wake = undefined
        clock.clearTimeout(handle)
        resolve()
      }
    })
  }
}
