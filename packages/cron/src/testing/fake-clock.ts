import type { Clock, TimerHandle } from '../ports.js'

// Captured at load so that vi.useFakeTimers() cannot freeze the flushing itself.
const realSetImmediate = globalThis.setImmediate

interface FakeTimer {
  readonly id: number
  readonly at: number
  readonly callback: () => void
}

/**
 * A {@link Clock} with virtual time for tests. Timers fire only from {@link FakeClock.advance};
 * {@link FakeClock.jump} moves time without firing (clock skew, a blocked loop, a suspended host).
 * @example
 * const clock = new FakeClock(Date.parse('2026-03-08T06:00:00Z'))
 * await clock.advance(60_000) // fires due timers in order and lets their promises settle
 */
export class FakeClock implements Clock {
  #now: number
  #nextId = 1
  readonly #timers = new Map<number, FakeTimer>()

  constructor(start: number | Date = 0) {
    this.#now = typeof start === 'number' ? start : start.getTime()
  }

  /** The virtual wall-clock time. */
  now(): Date {
    return new Date(this.#now)
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const id = this.#nextId++
    this.#timers.set(id, { id, at: this.#now + Math.max(0, Number.isFinite(ms) ? ms : 0), callback })
    return id
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as number)
  }

  /** Number of timers waiting to fire. */
  get pendingTimers(): number {
    return this.#timers.size
  }

  /** Moves time by `ms` (may be negative) without firing timers. */
  jump(ms: number): void {
    this.#now += ms
  }

  /**
   * Moves time forward by `ms`, firing every timer that comes due, in order, at its own
   * instant, and letting promise chains settle after each instant.
   */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms
    for (;;) {
      await flush()
      let at: number | undefined
      for (const timer of this.#timers.values())
        if (timer.at <= target && (at === undefined || timer.at < at)) at = timer.at
      if (at === undefined) break
      if (at > this.#now) this.#now = at
      // Timers due at the same instant run back to back, as in one turn of the event loop.
      const due = [...this.#timers.values()]
        .filter((timer) => timer.at === at)
        .sort((left, right) => left.id - right.id)
      for (const timer of due) {
        if (!this.#timers.delete(timer.id)) continue
        timer.callback()
      }
    }
    if (target > this.#now) this.#now = target
    await flush()
  }

  /** Advances to `time` (epoch ms or Date), firing timers on the way. */
  async advanceTo(time: number | Date): Promise<void> {
    const target = typeof time === 'number' ? time : time.getTime()
    await this.advance(Math.max(0, target - this.#now))
  }
}

/** Lets pending promise chains (and synchronous SQLite calls behind them) settle. */
async function flush(rounds = 3): Promise<void> {
  for (let round = 0; round < rounds; round++) await new Promise<void>((resolve) => realSetImmediate(resolve))
}
