import { MinHeap } from './heap.js'
import type { CronJob } from './model.js'
import type { CompiledSchedule } from './next-fire-time.js'
import type { Clock, TimerHandle } from './ports.js'
import { compileJobSchedule } from './schedule.js'
import { MAX_TIMER_MS } from './scheduler-options.js'

/** A job in the queue; its schedule is compiled on first use (start-up arms without compiling). */
export class ArmedJob {
  /** The scheduler's copy of the job, updated with its run state as it fires. */
  job: CronJob
  /** When its current heap entry fires; undefined when not armed. */
  dueAt: number | undefined = undefined
  #compiled: CompiledSchedule | undefined

  constructor(job: CronJob) {
    this.job = job
  }

  /** The job's compiled schedule; throws `CronError` when the stored schedule no longer compiles. */
  get compiled(): CompiledSchedule {
    this.#compiled ??= compileJobSchedule(this.job)
    return this.#compiled
  }
}

/** A job that came due: the occurrence it fires for. */
export interface DueJob {
  readonly armed: ArmedJob
  readonly firstDue: number
}

interface HeapEntry {
  /** When to fire: the occurrence plus the job's jitter. Orders the heap and sets the timer. */
  readonly dueAt: number
  /** The occurrence itself (the ledger's `scheduledFor`). */
  readonly occurrence: number
  readonly armed: ArmedJob
}

/**
 * The armed jobs, and one timer over a heap of their next fires (not one timer per job). A job
 * re-armed or dropped leaves its old heap entry behind; stale entries are skipped when they
 * reach the top.
 */
export class FireQueue {
  readonly #jobs = new Map<string, ArmedJob>()
  readonly #heap = new MinHeap<HeapEntry>()
  readonly #clock: Clock
  readonly #delayFor: (armed: ArmedJob, occurrence: number) => number
  readonly #onTimer: () => void
  #timer: TimerHandle | undefined
  #timerAt: number | undefined

  /**
   * @param delayFor the job's jitter after an occurrence
   * @param onTimer called when the timer fires (due entries are then taken with {@link takeDue})
   */
  constructor(clock: Clock, delayFor: (armed: ArmedJob, occurrence: number) => number, onTimer: () => void) {
    this.#clock = clock
    this.#delayFor = delayFor
    this.#onTimer = onTimer
  }

  /** Number of armed jobs. */
  get size(): number {
    return this.#jobs.size
  }

  /** The job's current entry, if it is armed. */
  get(jobId: string): ArmedJob | undefined {
    return this.#jobs.get(jobId)
  }

  /** Makes `armed` the job's current entry; an earlier entry of the job goes stale. */
  set(armed: ArmedJob): void {
    this.#jobs.set(armed.job.id, armed)
  }

  /** Drops the job's entry; its heap entries go stale. */
  delete(jobId: string): void {
    this.#jobs.delete(jobId)
  }

  /** True while `armed` is its job's current entry. */
  isCurrent(armed: ArmedJob): boolean {
    return this.#jobs.get(armed.job.id) === armed
  }

  /** Arms `armed` for its occurrence at `occurrence` (none: not armed), firing after its jitter. */
  push(armed: ArmedJob, occurrence: number | undefined): void {
    const dueAt = occurrence === undefined ? undefined : occurrence + this.#delayFor(armed, occurrence)
    armed.dueAt = dueAt
    if (dueAt !== undefined && occurrence !== undefined) this.#heap.push({ dueAt, occurrence, armed })
  }

  /**
   * Arms `armed` to fire again at `at` for the same `occurrence`: a look that failed (the store did
   * not answer) is retried without moving the occurrence, so the job keeps its schedule's grid,
   * which every scheduler computes alike. (Arming `now + 1s` as a new occurrence gave each server
   * that saw the failure a grid of its own: an interval job ran once per grid after a database stall.)
   */
  retry(armed: ArmedJob, occurrence: number, at: number): void {
    armed.dueAt = at
    this.#heap.push({ dueAt: at, occurrence, armed })
  }

  /** Pops every current entry due at `now`, earliest first. */
  takeDue(now: number): DueJob[] {
    const due: DueJob[] = []
    for (;;) {
      const top = this.#peekCurrent()
      // A timer that fired early (or a clock that went back) finds nothing due and re-arms.
      if (top === undefined || top.dueAt > now) break
      this.#heap.pop()
      top.armed.dueAt = undefined
      due.push({ armed: top.armed, firstDue: top.occurrence })
    }
    return due
  }

  /** Sets the one timer for the earliest current entry (kept when it is already set for it). */
  arm(): void {
    const top = this.#peekCurrent()
    if (top === undefined) {
      this.disarm()
      return
    }
    if (this.#timer !== undefined && this.#timerAt === top.dueAt) return
    this.disarm()
    // A longer wait re-arms when the timer fires (takeDue finds nothing due yet).
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, top.dueAt - this.#clock.now().getTime()))
    this.#timerAt = top.dueAt
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined
      this.#timerAt = undefined
      this.#onTimer()
    }, delay)
  }

  /** Clears the timer. */
  disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#timerAt = undefined
  }

  /** Drops every job and entry, and the timer. */
  clear(): void {
    this.disarm()
    this.#heap.clear()
    this.#jobs.clear()
  }

  #peekCurrent(): HeapEntry | undefined {
    for (;;) {
      const top = this.#heap.peek()
      if (top === undefined) return undefined
      if (this.isCurrent(top.armed) && top.armed.dueAt === top.dueAt) return top
      this.#heap.pop()
    }
  }
}
