import type { Clock } from './ports.js'
import { systemClock } from './system-clock.js'

/**
 * One reading of the clock. The manager reads the clock when something happens to it (a submit, a
 * runner settling, a deadline, a cancel) and uses that reading for everything that follows in the
 * same synchronous step until it calls out to code it does not own (a runner, a listener, the
 * notifier, a logger): a task's end and the next task's start share one reading. At about a
 * microsecond of bookkeeping per task, clock reads mattered (ADR 0003).
 *
 * The object is the reader's own and is overwritten by its next reading: use it at once, never keep it.
 */
export interface Instant {
  /** Wall-clock time in epoch milliseconds, for timestamps. */
  readonly wallMs: number
  /**
   * The clock's `monotonicNow()`, for deadlines, read on first use within the reading (a step that
   * starts no task with a timeout never reads it); `NaN` for a clock without one.
   */
  readonly monoMs: number
}

/**
 * Reads a `Clock` into one reused `Instant`, without allocating. For `systemClock` the wall time is
 * `Date.now()` (a builtin the compiler inlines; `new Date()` costs an object) and the monotonic time
 * `performance.now()`, both looked up when called, so fake timers installed later still apply.
 */
export class ClockReader implements Instant {
  wallMs = 0
  readonly #clock: Clock
  readonly #system: boolean
  readonly #hasMonotonic: boolean
  #monoMs = 0
  #monoRead = false
  /** False once code the manager does not own ran after the last reading. */
  #current = false

  constructor(clock: Clock) {
    this.#clock = clock
    this.#system = clock === systemClock
    this.#hasMonotonic = typeof clock.monotonicNow === 'function'
  }

  /** Reads the clock now: the start of a step. */
  read(): Instant {
    this.wallMs = this.#system ? Date.now() : this.#clock.now().getTime()
    this.#monoRead = false
    this.#current = true
    return this
  }

  /** The step's reading, read again if foreign code ran since (see `invalidate`). */
  current(): Instant {
    return this.#current ? this : this.read()
  }

  /** Marks the reading stale: the manager just called code that may have taken time. */
  invalidate(): void {
    this.#current = false
  }

  get monoMs(): number {
    if (!this.#monoRead) {
      this.#monoMs = this.#hasMonotonic ? (this.#clock.monotonicNow as () => number)() : Number.NaN
      this.#monoRead = true
    }
    return this.#monoMs
  }
}
