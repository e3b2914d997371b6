import { type EventLoopUtilization, performance } from 'node:perf_hooks'
import type { CronRun } from './model.js'
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

/**
 * A gap between two ticks of the upkeep longer than a lease: its timers did not fire in time. On
 * the clock (epoch ms). `cause` is `store` when most of the gap was spent waiting for the store (a
 * database that did not answer: a lock, a failover, a network cut), `blocked` when the process's own
 * monotonic time moved as much otherwise (a busy event loop, a stopped process), `clock` when only
 * the wall clock moved: a clock set forward, an injected clock moved, or a suspended host (Linux's
 * monotonic clock stops while the machine sleeps).
 */
export interface Stall {
  /** The last tick before the gap. */
  readonly since: number
  /** The tick that saw the gap. */
  readonly resumedAt: number
  readonly stalledMs: number
  readonly cause: StallCause
}

/** Why the upkeep's timers were late (see {@link Stall}). */
export type StallCause = 'store' | 'blocked' | 'clock'

/** What {@link Maintenance} tells the scheduler besides errors. */
interface MaintenanceHooks extends BackgroundHooks {
  /** The owners (schedulers) alive on the database, this one included, read each round. */
  readonly alive?: (owners: readonly string[]) => void
  /** Runs of dead schedulers this round marked `interrupted`. */
  readonly interrupted?: (runs: readonly CronRun[]) => void
  /** A tick came more than a lease after the one before (see {@link Stall}). */
  readonly stalled?: (stall: Stall) => void
  /** Called at the end of each round (the delivery ledger's sweep). */
  readonly round?: () => void
  /**
   * This scheduler's heartbeat may have gone stale on the database (a stall of more than a lease,
   * a heartbeat that failed): another scheduler may have taken its runs for dead. Called at the next
   * round whose heartbeat succeeded, to find and stop those runs; a rejection is reported and the
   * check repeated next round.
   */
  readonly verifyOwnership?: () => Promise<void>
}

/**
 * An owner is dead once its heartbeat is this many leases old: a heartbeat is due every third of a
 * lease, so a live owner on a busy machine (a long GC, a loaded event loop) has room to be late
 * several times before another scheduler interrupts its runs (issue 21).
 */
export const DEAD_AFTER_LEASES = 2

/**
 * The scheduler's background upkeep, every third of the lease: heartbeat this owner, read the
 * owners alive, mark runs of owners whose heartbeat is two leases old `interrupted`, and prune history hourly (unless
 * `autoPrune` is off: the host prunes). The heartbeat has a timer of its own, so a slow query of
 * the rest never makes it late. Its timers are unref'd: they never keep a process alive.
 */
export class Maintenance {
  readonly #settings: MaintenanceSettings
  readonly #hooks: MaintenanceHooks
  #timer: TimerHandle | undefined
  #beatTimer: TimerHandle | undefined
  #running = false
  #lastPrune = Number.NEGATIVE_INFINITY
  #lastTickAt: number | undefined
  /** `performance.now()` at the last tick: tells a blocked process from a clock that jumped. */
  #lastTickMonotonic = 0
  /** The event loop's busy and idle time at the last tick: tells a blocked loop from a wait on the store. */
  #lastTickLoop: EventLoopUtilization | undefined
  /** The heartbeat may have gone stale (see {@link MaintenanceHooks.verifyOwnership}). */
  #suspect = false
  /** How long (on the clock) the last heartbeat's store call took; the beat timer is armed after it. */
  #beatWaitMs = 0
  /** How long (on the clock) the last round's store calls took; the round timer is armed after them. */
  #roundWaitMs = 0

  constructor(settings: MaintenanceSettings, hooks: MaintenanceHooks) {
    this.#settings = settings
    this.#hooks = hooks
  }

  /** How often a round (and a heartbeat) is due: every third of the lease. */
  get tickIntervalMs(): number {
    return this.#settings.leaseMs / 3
  }

  /**
   * When a timer of the upkeep last fired (epoch ms on the settings' clock), or when it started;
   * undefined while it is stopped. A round or heartbeat that never comes back (a blocked event
   * loop, a timer that does not fire, a store call that hangs) leaves it behind the clock.
   */
  get lastTickAt(): number | undefined {
    return this.#lastTickAt
  }

  /** Starts the upkeep; the first round runs after `firstDelayMs`. */
  start(firstDelayMs: number): void {
    this.#running = true
    this.#tick()
    this.#schedule(firstDelayMs)
    this.#scheduleBeat(firstDelayMs)
  }

  /** Stops the upkeep (a round in flight finishes; no other follows). */
  stop(): void {
    this.#running = false
    this.#lastTickAt = undefined
    if (this.#timer !== undefined) this.#settings.clock.clearTimeout(this.#timer)
    if (this.#beatTimer !== undefined) this.#settings.clock.clearTimeout(this.#beatTimer)
    this.#timer = undefined
    this.#beatTimer = undefined
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
      this.#tick(this.#roundWaitMs)
      this.#hooks.track(this.#round())
    }, delay)
    ;(handle as { unref?: () => void } | undefined)?.unref?.()
    this.#timer = handle
  }

  #scheduleBeat(delay: number): void {
    if (!this.#running) return
    const handle = this.#settings.clock.setTimeout(() => {
      this.#beatTimer = undefined
      this.#tick(this.#beatWaitMs)
      this.#hooks.track(this.#beat())
    }, delay)
    ;(handle as { unref?: () => void } | undefined)?.unref?.()
    this.#beatTimer = handle
  }

  /** How long a gap between two ticks is a stall: a lease, that is three tick intervals. */
  get stallAfterMs(): number {
    return this.#settings.leaseMs
  }

  /** A timer fired; `storeWaitMs` is how long the store kept it from being armed (0 at start). */
  #tick(storeWaitMs = 0): void {
    const now = this.#settings.clock.now().getTime()
    const monotonic = performance.now()
    const loop = performance.eventLoopUtilization()
    const last = this.#lastTickAt
    const lastMonotonic = this.#lastTickMonotonic
    const lastLoop = this.#lastTickLoop
    this.#lastTickAt = now
    this.#lastTickMonotonic = monotonic
    this.#lastTickLoop = loop
    if (!this.#running || last === undefined || now - last <= this.stallAfterMs) return
    this.#suspect = true
    // A timer is armed only once its store calls returned: a gap spent mostly waiting on them, while
    // the event loop was free to run (busy for less than half the gap; a blocked loop is busy for
    // all of it, a starved machine's loop for a part), is the store's.
    const loopBusyMs = lastLoop === undefined ? 0 : performance.eventLoopUtilization(loop, lastLoop).active
    const cause: StallCause =
      storeWaitMs * 2 >= now - last && loopBusyMs * 2 < now - last
        ? 'store'
        : monotonic - lastMonotonic > this.stallAfterMs
          ? 'blocked'
          : 'clock'
    this.#hooks.stalled?.({ since: last, resumedAt: now, stalledMs: now - last, cause })
  }

  async #beat(): Promise<void> {
    if (!this.#running) return
    const { store, clock, ownerId, leaseMs } = this.#settings
    const started = clock.now().getTime()
    try {
      await store.heartbeat(ownerId, started)
    } catch (error) {
      this.#suspect = true
      this.#hooks.report(error)
    }
    this.#beatWaitMs = clock.now().getTime() - started
    this.#scheduleBeat(leaseMs / 3)
  }

  async #round(): Promise<void> {
    if (!this.#running) return
    const { store, clock, logger, leaseMs } = this.#settings
    const now = clock.now().getTime()
    try {
      // After a stall this scheduler's own heartbeat may be older than the dead owners' line: it
      // writes a fresh one before looking for dead owners' runs, or it would interrupt its own
      // (whichever of its overdue timers fires first after a SIGSTOP or a suspended host).
      if (this.#suspect) await store.heartbeat(this.#settings.ownerId, clock.now().getTime())
      if (this.#hooks.alive !== undefined)
        this.#hooks.alive(await store.liveOwners({ aliveSince: now - leaseMs }))
      const interrupted = await store.interruptOrphanedRuns({
        now,
        aliveSince: now - DEAD_AFTER_LEASES * leaseMs,
        reason: `interrupted: the scheduler that ran it stopped heartbeating for ${DEAD_AFTER_LEASES} leases (process exit or crash)`,
      })
      if (interrupted.length > 0) this.#hooks.interrupted?.(interrupted)
      if (this.#suspect && this.#hooks.verifyOwnership !== undefined) {
        // After this round's reads answered: the heartbeat is fresh again, so nothing new is taken.
        await store.heartbeat(this.#settings.ownerId, clock.now().getTime())
        this.#suspect = false
        await this.#hooks.verifyOwnership().catch((error: unknown) => {
          this.#suspect = true
          this.#hooks.report(error)
        })
      }
      if (this.#settings.autoPrune && now - this.#lastPrune >= PRUNE_EVERY_MS) {
        const pruned = await this.prune()
        if (pruned > 0) logger.debug('cron history pruned', { pruned })
      }
    } catch (error) {
      this.#hooks.report(error)
    }
    this.#roundWaitMs = clock.now().getTime() - now
    this.#hooks.round?.()
    this.#schedule(leaseMs / 3)
  }
}
