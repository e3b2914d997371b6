import type { Clock, CronStore, Logger, TimerHandle } from './ports.js'

/** How often history is pruned by maintenance. */
const PRUNE_EVERY_MS = 3_600_000

/** History retention: runs older than `maxAgeMs`, and all but the newest `maxRunsPerJob` per job, go. */
export interface Retention {
  readonly maxAgeMs: number
  readonly maxRunsPerJob: number
}

/**
 * The scheduler's background upkeep, every third of the lease: heartbeat this owner, mark runs of
 * dead owners `interrupted`, and prune history hourly. Its timer is unref'd: it never keeps a
 * process alive.
 */
export class Maintenance {
  readonly #store: CronStore
  readonly #clock: Clock
  readonly #logger: Logger
  readonly #ownerId: string
  readonly #leaseMs: number
  readonly #retention: Retention
  readonly #track: (task: Promise<unknown>) => void
  readonly #report: (error: unknown) => void
  #timer: TimerHandle | undefined
  #running = false
  #lastPrune = Number.NEGATIVE_INFINITY

  constructor(options: {
    readonly store: CronStore
    readonly clock: Clock
    readonly logger: Logger
    readonly ownerId: string
    readonly leaseMs: number
    readonly retention: Retention
    readonly track: (task: Promise<unknown>) => void
    readonly report: (error: unknown) => void
  }) {
    this.#store = options.store
    this.#clock = options.clock
    this.#logger = options.logger
    this.#ownerId = options.ownerId
    this.#leaseMs = options.leaseMs
    this.#retention = options.retention
    this.#track = options.track
    this.#report = options.report
  }

  /** Starts the upkeep; the first round runs after `firstDelayMs`. */
  start(firstDelayMs: number): void {
    this.#running = true
    this.#schedule(firstDelayMs)
  }

  /** Stops the upkeep (a round in flight finishes; no other follows). */
  stop(): void {
    this.#running = false
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
  }

  /** Prunes history now; returns how many rows were deleted. */
  async prune(): Promise<number> {
    const now = this.#clock.now().getTime()
    this.#lastPrune = now
    return this.#store.pruneRuns({
      olderThan: now - this.#retention.maxAgeMs,
      keepPerJob: this.#retention.maxRunsPerJob,
    })
  }

  #schedule(delay: number): void {
    if (!this.#running) return
    const handle = this.#clock.setTimeout(() => {
      this.#timer = undefined
      this.#track(this.#round())
    }, delay)
    ;(handle as { unref?: () => void } | undefined)?.unref?.()
    this.#timer = handle
  }

  async #round(): Promise<void> {
    if (!this.#running) return
    const now = this.#clock.now().getTime()
    try {
      await this.#store.heartbeat(this.#ownerId, now)
      await this.#store.interruptOrphanedRuns({
        now,
        aliveSince: now - this.#leaseMs,
        reason: 'interrupted: the scheduler that ran it stopped heartbeating (process exit or crash)',
      })
      if (now - this.#lastPrune >= PRUNE_EVERY_MS) {
        const pruned = await this.prune()
        if (pruned > 0) this.#logger.debug('cron history pruned', { pruned })
      }
    } catch (error) {
      this.#report(error)
    }
    this.#schedule(this.#leaseMs / 3)
  }
}
