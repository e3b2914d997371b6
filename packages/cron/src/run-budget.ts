/** One day in milliseconds: the window of the daily AI run budget. */
export const BUDGET_WINDOW_MS = 86_400_000

/**
 * A sliding-window count of run starts: at most `max` starts in any `windowMs` (SECURITY.md CRON-3,
 * the daily budget for AI-prompt jobs). Keeps at most `max` timestamps.
 */
export class RunBudget {
  readonly max: number
  readonly windowMs: number
  /** Start times in ascending order from `#head`; earlier slots are dropped. */
  #times: number[] = []
  #head = 0

  constructor(max: number, windowMs = BUDGET_WINDOW_MS) {
    if (!(max >= 0)) throw new RangeError('a run budget needs a maximum of 0 or more (Infinity for none)')
    this.max = max
    this.windowMs = windowMs
  }

  /** True when the budget is unlimited. */
  get unlimited(): boolean {
    return this.max === Number.POSITIVE_INFINITY
  }

  /** Adds start times found elsewhere (the store at start-up), in any order. */
  seed(times: readonly number[]): void {
    if (this.unlimited) return
    const all = [...this.#times.slice(this.#head), ...times].sort((a, b) => a - b)
    this.#times = all.slice(Math.max(0, all.length - this.max))
    this.#head = 0
  }

  /** Starts counted in the window ending at `now`. */
  used(now: number): number {
    this.#prune(now)
    return this.#times.length - this.#head
  }

  /** When a run may start at `now`: undefined; otherwise the earliest time the next one may. */
  blockedUntil(now: number): number | undefined {
    if (this.unlimited || this.used(now) < this.max) return undefined
    if (this.max === 0) return Number.POSITIVE_INFINITY
    const oldestCounted = this.#times[this.#times.length - this.max] as number
    return oldestCounted + this.windowMs
  }

  /** Counts a run that started at `at`. */
  record(at: number): void {
    if (this.unlimited) return
    this.#times.push(at)
    // Times arrive nearly in order; keep the array sorted if one arrives late.
    for (let index = this.#times.length - 1; index > this.#head; index -= 1) {
      const before = this.#times[index - 1] as number
      if (before <= at) break
      this.#times[index] = before
      this.#times[index - 1] = at
    }
    if (this.#times.length - this.#head > this.max) this.#head = this.#times.length - this.max
    this.#compact()
  }

  #prune(now: number): void {
    const since = now - this.windowMs
    while (this.#head < this.#times.length && (this.#times[this.#head] as number) <= since) this.#head += 1
    this.#compact()
  }

  #compact(): void {
    if (this.#head > 1024 && this.#head * 2 > this.#times.length) {
      this.#times = this.#times.slice(this.#head)
      this.#head = 0
    }
  }
}
