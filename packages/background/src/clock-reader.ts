import type { Clock } from './ports.js'
import { systemClock } from './system-clock.js'

/**
 * One reading of the clock. Everything the manager does in one synchronous step (a task ends, its
 * slot goes to the next task, which starts) shares one reading instead of reading the clock for each
 * timestamp and deadline: at about a microsecond of bookkeeping per task, clock reads mattered.
 *
 * The object is the reader's own and is overwritten by its next `read()`: use it within the step that
 * read it, never keep it.
 */
export interface Instant {
  /** Wall-clock time in epoch milliseconds, for timestamps. */
  readonly wallMs: number
  /** Monotonic milliseconds, for deadlines; `NaN` when the clock has no `monotonicNow()`. */
  readonly monoMs: number
}

/**
 * How long the system reader trusts its wall-to-monotonic offset, in wall-clock milliseconds. A wall
 * clock step (NTP, a manual change) can move deadlines set within this window by less than this much;
 * a step back past the last re-read is caught at once.
 */
export const OFFSET_TRUST_MS = 1000

/**
 * Reads a `Clock` into one reused `Instant`, without allocating.
 *
 * For `systemClock` a reading is one `Date.now()` (a builtin the compiler inlines): monotonic time is
 * derived from it with an offset to `performance.now()` re-read at most every `OFFSET_TRUST_MS`, or
 * at once when the wall clock went back. Both globals are read at call time, so fake timers installed
 * later still apply. Any other clock is read as it is: `now()` and `monotonicNow()` on every reading.
 */
export class ClockReader implements Instant {
  wallMs = 0
  monoMs = 0
  readonly #clock: Clock
  readonly #system: boolean
  readonly #hasMonotonic: boolean
  /** `Date.now() - performance.now()` at the last re-read. */
  #offsetMs = 0
  #offsetReadAt = Number.NEGATIVE_INFINITY

  constructor(clock: Clock) {
    this.#clock = clock
    this.#system = clock === systemClock
    this.#hasMonotonic = typeof clock.monotonicNow === 'function'
  }

  /** Reads the clock now; returns this reader as the step's `Instant`. */
  read(): Instant {
    if (!this.#system) {
      this.wallMs = this.#clock.now().getTime()
      this.monoMs = this.#hasMonotonic ? (this.#clock.monotonicNow as () => number)() : Number.NaN
      return this
    }
    const wallMs = Date.now()
    const sinceOffset = wallMs - this.#offsetReadAt
    if (sinceOffset >= OFFSET_TRUST_MS || sinceOffset < 0) {
      const monoMs = globalThis.performance.now()
      this.#offsetMs = Date.now() - monoMs
      this.#offsetReadAt = wallMs
    }
    this.wallMs = wallMs
    this.monoMs = wallMs - this.#offsetMs
    return this
  }
}
