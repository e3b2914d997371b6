import type { Clock, TimerHandle } from '../ports.js'

interface FakeTimer {
  readonly id: number
  readonly dueAt: number
  readonly callback: () => void
}

/**
 * A `Clock` whose time moves only when told. Timers run on their own elapsed-time line, so
 * `setTime()` can skew the wall clock either way without firing or delaying any timer.
 *
 * @example
 * const clock = new FakeClock(new Date('2025-01-01T00:00:00Z'))
 * const manager = new BackgroundManager({ runner, notifier, clock })
 * clock.advance(30 * 60_000) // fires every timer due in the next 30 minutes, in order
 */
export class FakeClock implements Clock {
  #wallMs: number
  #elapsedMs = 0
  #nextId = 1
  readonly #timers = new Map<number, FakeTimer>()

  constructor(start: Date | number = Date.UTC(2025, 0, 1)) {
    this.#wallMs = typeof start === 'number' ? start : start.getTime()
  }

  /** The fake wall-clock time. */
  now(): Date {
    return new Date(this.#wallMs)
  }

  /** Milliseconds elapsed since the clock was made; `advance()` moves it, `setTime()` does not. */
  monotonicNow(): number {
    return this.#elapsedMs
  }

  /** Registers a timer due `ms` from now on the elapsed-time line. */
  setTimeout(callback: () => void, ms: number): TimerHandle {
    const id = this.#nextId
    this.#nextId += 1
    this.#timers.set(id, { id, dueAt: this.#elapsedMs + Math.max(0, ms), callback })
    return id
  }

  /** Removes a timer; unknown handles are ignored. */
  clearTimeout(handle: TimerHandle): void {
    if (typeof handle === 'number') this.#timers.delete(handle)
  }

  /** Timers registered and not yet fired or cleared. */
  get pendingTimerCount(): number {
    return this.#timers.size
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way, earliest first (ties
   * in registration order), with `now()` set to each timer's due time while it runs. Timers those
   * callbacks register fire too if they fall due within the window.
   */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError('advance() takes a non-negative number of milliseconds')
    const target = this.#elapsedMs + ms
    for (;;) {
      const next = this.#nextDue(target)
      if (next === undefined) break
      this.#timers.delete(next.id)
      this.#wallMs += next.dueAt - this.#elapsedMs
      this.#elapsedMs = next.dueAt
      next.callback()
    }
    this.#wallMs += target - this.#elapsedMs
    this.#elapsedMs = target
  }

  /** Sets the wall clock (forwards or backwards) without touching timers: clock skew. */
  setTime(time: Date | number): void {
    this.#wallMs = typeof time === 'number' ? time : time.getTime()
  }

  #nextDue(limit: number): FakeTimer | undefined {
    let best: FakeTimer | undefined
    for (const timer of this.#timers.values()) {
      if (timer.dueAt <= limit && (best === undefined || timer.dueAt < best.dueAt)) best = timer
    }
    return best
  }
}
