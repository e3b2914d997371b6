import type { TimerHandle } from './ports.js'
import type { BackgroundHooks, SchedulerSettings } from './scheduler-options.js'

/** How often history is pruned by maintenance. */
const PRUNE_EVERY_MS = 3_600_000

/** History retention: runs older than `maxAgeMs`, and all but the newest `maxRunsPerJob` per job, go. */
export interface Retention {
  readonly maxAgeMs: number
  readonly maxRunsPerJob: number
}

/** What {@link Maintenance} needs of the settings. */
type MaintenanceSettings = Pick<
  SchedulerSettings,
  'store' | 'clock' | 'logger' | 'ownerId' | 'leaseMs' | 'retention' | 'autoPrune'
>

/** What {@link Maintenance} tells the scheduler besides errors. */
interface MaintenanceHooks extends BackgroundHooks {
  /** The owners (schedulers) alive on the database, this one included, read each round. */
  readonly alive?: (owners: readonly string[]) => void
}

/**
 * The scheduler's background upkeep, every third of the lease: heartbeat this owner, read the
 * owners alive, mark runs of dead owners `interrupted`, and prune history hourly (unless
 * `autoPrune` is off: the host prunes). Its timer is unref'd: it never keeps a process alive.
 */
export class Maintenance {
  readonly #settings: MaintenanceSettings
  readonly #hooks: MaintenanceHooks
  #timer: TimerHandle | undefined
  #running = false
  #lastPrune = Number.NEGATIVE_INFINITY

  constructor(settings: MaintenanceSettings, hooks: MaintenanceHooks) {
    this.#settings = settings
    this.#hooks = hooks
  }

  /** Starts the upkeep; the first round runs after `firstDelayMs`. */
  start(firstDelayMs: number): void {
    this.#running = true
    this.#schedule(firstDelayMs)
  }

  /** Stops the upkeep (a round in flight finishes; no other follows). */
  stop(): void {
    this.#running = false
    if (this.#timer !== undefined) this.#settings.clock.clearTimeout(this.#timer)
    this.#timer = undefined
  }

  /** Prunes history now; returns how many rows were deleted. */
  async prune(): Promise<number> {
    const { store, clock, retention } = this.#settings
    const now = clock.now().getTime()
    this.#lastPrune = now
    return store.pruneRuns({ olderThan: now - retention.maxAgeMs, keepPerJob: retention.maxRunsPerJob })
  }

  #schedule(delay: number): void {
    if (!this.#running) return
    const handle = this.#settings.clock.setTimeout(() => {
      this.#timer = undefined
      this.#hooks.track(this.#round())
    }, delay)
    ;(handle as { unref?: () => void } | undefined)?.unref?.()
    this.#timer = handle
  }

  async #round(): Promise<void> {
    if (!this.#running) return
    const { store, clock, logger, ownerId, leaseMs } = this.#settings
    const now = clock.now().getTime()
    try {
      await store.heartbeat(ownerId, now)
      if (this.#hooks.alive !== undefined)
        this.#hooks.alive(await store.liveOwners({ aliveSince: now - leaseMs }))
      await store.interruptOrphanedRuns({
        now,
        aliveSince: now - leaseMs,
        reason: 'interrupted: the scheduler that ran it stopped heartbeating (process exit or crash)',
      })
      if (this.#settings.autoPrune && now - this.#lastPrune >= PRUNE_EVERY_MS) {
        const pruned = await this.prune()
        if (pruned > 0) logger.debug('cron history pruned', { pruned })
      }
    } catch (error) {
      this.#hooks.report(error)
    }
    this.#schedule(leaseMs / 3)
  }
}
