import type { Occurrence } from './catch-up.js'
import type { CronJob } from './model.js'

/** A run in flight: its controller, what it is doing, and the promise that settles when it is done. */
export interface ActiveRun {
  readonly runId: string
  /**
   * Aborted on pause, remove and stop: the run, its delivery and an auto-pause notice listen to it.
   * The run's timeout does not abort it (it aborts the work only), so a timed-out run is delivered.
   */
  readonly controller: AbortController
  /** What the run is doing, so an abort says what it interrupted. */
  phase: 'run' | 'delivery'
  done: Promise<unknown>
  /** The payload a `webhook` run was started with. */
  readonly payload?: string
}

/** A due occurrence not started yet: waiting for a slot, or queued behind its job's running one. */
export interface WaitingStart {
  readonly job: CronJob
  readonly occurrence: Occurrence
}

/**
 * What {@link RunSlots.admit} decided for a due occurrence: it starts (holding a slot), it waits
 * for a slot or behind its job's running one (queued by `admit`), or it is skipped.
 */
export type Admission =
  | { readonly kind: 'start' | 'wait' | 'behind' }
  | { readonly kind: 'skip'; readonly reason: string }

/**
 * The concurrency cap and the overlap policy: slots for runs in flight across all jobs, the
 * occurrences waiting for a slot (FIFO), one occurrence per job queued behind its running one
 * (`queue_one`), and the runs in flight per job. A slot is taken by `admit` (kind `start`), or
 * for the first waiting occurrence when `release` frees one, and given back with `release`
 * whatever happens to it.
 *
 * The FIFO is bounded: each job may always have one occurrence waiting (so a burst of many jobs due
 * at once is never cut short, and one job cannot crowd the others out), and at most
 * `maxWaitingRuns` further occurrences wait in all; only `overlap: 'allow'` jobs can have more than
 * one waiting. Beyond that `admit` skips the occurrence.
 */
export class RunSlots {
  readonly #max: number
  readonly #maxWaitingRuns: number
  readonly #blocked: (job: CronJob) => string | undefined
  readonly #start: (waiting: readonly WaitingStart[]) => void
  readonly #canStart: () => boolean
  readonly #rank: () => ((waiting: WaitingStart) => number) | undefined
  readonly #active = new Map<string, Set<ActiveRun>>()
  readonly #waiting: WaitingStart[] = []
  /** Occurrences waiting for a slot, per job id. */
  readonly #waitingOf = new Map<string, number>()
  readonly #queuedBehind = new Map<string, Occurrence>()
  #running = 0

  /**
   * @param limits `maxConcurrentJobs` runs in flight at once; `maxWaitingRuns` occurrences waiting
   *   for a slot beyond the first of each job
   * @param hooks `blocked` says why a job may not start at all now (the daily AI budget; asked after
   *   the overlap policy); `start` starts a waiting occurrence that now holds a slot (it must release
   *   it if no run starts); `canStart` is false while the scheduler is stopped: nothing waiting is
   *   started then
   */
  constructor(
    limits: { readonly maxConcurrentJobs: number; readonly maxWaitingRuns: number },
    hooks: {
      readonly blocked: (job: CronJob) => string | undefined
      readonly start: (waiting: readonly WaitingStart[]) => void
      readonly canStart: () => boolean
      readonly rank?: () => ((waiting: WaitingStart) => number) | undefined
    },
  ) {
    this.#max = limits.maxConcurrentJobs
    this.#maxWaitingRuns = limits.maxWaitingRuns
    this.#blocked = hooks.blocked
    this.#start = hooks.start
    this.#canStart = hooks.canStart
    this.#rank = hooks.rank ?? (() => undefined)
  }

  /** Slots taken: runs in flight and occurrences being claimed. */
  get running(): number {
    return this.#running
  }

  /** Occurrences waiting: for a run slot, or queued behind their job's running occurrence. */
  get waiting(): number {
    return this.#waiting.length + this.#queuedBehind.size
  }

  /**
   * Decides whether `occurrence` of `job` starts now (taking a slot), waits for a slot, queues
   * behind the job's running occurrence, or is skipped; a waiting or queued one is kept here. An
   * occurrence that would wait beside another of its job while `maxWaitingRuns` such occurrences
   * wait is skipped.
   */
  admit(job: CronJob, occurrence: Occurrence): Admission {
    const waitingOfJob = this.#waitingOf.get(job.id) ?? 0
    const busy = (this.#active.get(job.id)?.size ?? 0) > 0 || waitingOfJob > 0
    if (busy && job.overlap !== 'allow') {
      if (job.overlap === 'skip') {
        return {
          kind: 'skip',
          reason: 'overlap: the previous run of this job is still in progress (overlap: skip)',
        }
      }
      if (this.#queuedBehind.has(job.id)) {
        return {
          kind: 'skip',
          reason: 'overlap: one occurrence is already queued behind the running one (overlap: queue_one)',
        }
      }
      this.#queuedBehind.set(job.id, occurrence)
      return { kind: 'behind' }
    }
    const blocked = this.#blocked(job)
    if (blocked !== undefined) return { kind: 'skip', reason: blocked }
    if (this.#running >= this.#max) {
      // Occurrences waiting beyond the first of their job: what `maxWaitingRuns` bounds.
      const furtherWaiting = this.#waiting.length - this.#waitingOf.size
      if (waitingOfJob > 0 && furtherWaiting >= this.#maxWaitingRuns) {
        return {
          kind: 'skip',
          reason: `queue full: ${this.#maxWaitingRuns} further occurrences of overlap: allow jobs already wait for a run slot (maxWaitingRuns)`,
        }
      }
      this.#waiting.push({ job, occurrence })
      this.#waitingOf.set(job.id, waitingOfJob + 1)
      return { kind: 'wait' }
    }
    this.#running++
    return { kind: 'start' }
  }

  /** True when an occurrence admitted now would start at once: a slot is free and none waits for one. */
  hasFreeSlot(): boolean {
    return this.#running < this.#max && this.#waiting.length === 0
  }

  /** Gives a slot back and starts waiting occurrences while slots are free. */
  release(): void {
    this.#running = Math.max(0, this.#running - 1)
    this.#pump()
  }

  /** Takes the occurrence queued behind the job's running one, if any. */
  takeQueued(jobId: string): Occurrence | undefined {
    const queued = this.#queuedBehind.get(jobId)
    this.#queuedBehind.delete(jobId)
    return queued
  }

  /** Registers a run in flight of `jobId`. */
  addActive(jobId: string, run: ActiveRun): void {
    let set = this.#active.get(jobId)
    if (set === undefined) {
      set = new Set()
      this.#active.set(jobId, set)
    }
    set.add(run)
  }

  /** Forgets a run that ended. */
  removeActive(jobId: string, run: ActiveRun): void {
    const set = this.#active.get(jobId)
    set?.delete(run)
    if (set?.size === 0) this.#active.delete(jobId)
  }

  /** The runs in flight of `jobId`. */
  activeOf(jobId: string): ActiveRun[] {
    return [...(this.#active.get(jobId) ?? [])]
  }

  /** Every run in flight. */
  allActive(): ActiveRun[] {
    return [...this.#active.values()].flatMap((runs) => [...runs])
  }

  /** Removes the job's occurrences waiting for a slot or queued behind its running one (with `job`). */
  dropPending(jobId: string, job: CronJob | undefined): WaitingStart[] {
    const dropped: WaitingStart[] = []
    if (this.#waitingOf.has(jobId)) {
      for (let index = this.#waiting.length - 1; index >= 0; index--) {
        const waiting = this.#waiting[index] as WaitingStart
        if (waiting.job.id === jobId) dropped.push(...this.#waiting.splice(index, 1))
      }
      this.#waitingOf.delete(jobId)
    }
    const queued = this.takeQueued(jobId)
    if (queued !== undefined && job !== undefined) dropped.push({ job, occurrence: queued })
    return dropped
  }

  /** The occurrences waiting for a slot, first to start first, at most `limit`. */
  waitingList(limit: number): WaitingStart[] {
    return this.#waiting.slice(0, limit)
  }

  /** Removes those of `entries` that still wait for a slot (not started meanwhile); returns them. */
  removeWaiting(entries: ReadonlySet<WaitingStart>): WaitingStart[] {
    const removed: WaitingStart[] = []
    const kept: WaitingStart[] = []
    for (const waiting of this.#waiting) {
      if (!entries.has(waiting)) {
        kept.push(waiting)
        continue
      }
      removed.push(waiting)
      const count = this.#waitingOf.get(waiting.job.id) ?? 1
      if (count > 1) this.#waitingOf.set(waiting.job.id, count - 1)
      else this.#waitingOf.delete(waiting.job.id)
    }
    if (removed.length > 0) this.#waiting.splice(0, this.#waiting.length, ...kept)
    return removed
  }

  /** Removes every occurrence not started (stop); `jobOf` gives the job of a queued-behind one. */
  drainPending(jobOf: (jobId: string) => CronJob | undefined): WaitingStart[] {
    const drained = this.#waiting.splice(0)
    this.#waitingOf.clear()
    for (const [jobId, occurrence] of this.#queuedBehind) {
      const job = jobOf(jobId)
      if (job !== undefined) drained.push({ job, occurrence })
    }
    this.#queuedBehind.clear()
    return drained
  }

  #pump(): void {
    if (!this.#canStart()) return
    const free = this.#max - this.#running
    if (free <= 0 || this.#waiting.length === 0) return
    const rank = this.#rank()
    let starting: WaitingStart[]
    if (rank === undefined || this.#waiting.length <= free) {
      starting = this.#waiting.splice(0, free)
    } else {
      // The lowest ranks of the oldest, in their waiting order. Occurrences of one job rank alike
      // and the sort is stable: a later one is never taken before an earlier one of its job.
      const window = this.#waiting.slice(0, Math.max(free, SPREAD_WINDOW))
      const chosen = new Set(
        window
          .map((waiting) => ({ waiting, rank: rank(waiting) }))
          .sort((a, b) => a.rank - b.rank)
          .slice(0, free)
          .map(({ waiting }) => waiting),
      )
      starting = window.filter((waiting) => chosen.has(waiting))
      this.#waiting.splice(0, window.length, ...window.filter((waiting) => !chosen.has(waiting)))
    }
    for (const waiting of starting) {
      const count = this.#waitingOf.get(waiting.job.id) ?? 1
      if (count > 1) this.#waitingOf.set(waiting.job.id, count - 1)
      else this.#waitingOf.delete(waiting.job.id)
    }
    this.#running += starting.length
    this.#start(starting)
  }
}

/** How many of the oldest waiting occurrences a ranking chooses from (see RunSlots' `rank`). */
const SPREAD_WINDOW = 32
