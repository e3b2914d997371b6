import type { Clock, TimerHandle } from './ports.js'

/** What `Deadlines` needs on each item it watches. */
export interface DeadlineItem {
  /** Monotonic time (ms) at which the item expires; set by `Deadlines.watch`. */
  deadlineAt: number
  /** Position in the watch list, or -1 when not watched. */
  watchIndex: number
}

/**
 * Calls `onExpired(item)` once for every watched item whose deadline passes, unless it is unwatched
 * first.
 *
 * With a clock that has `monotonicNow()` it keeps ONE timer, armed for the earliest deadline, instead
 * of one per running task. An item that ends early is dropped from the list; the timer, if it was
 * armed for that item, fires once for nothing and re-arms. When nothing is watched, no timer is left.
 * The list holds running tasks only (at most `maxConcurrentTasks`), so a scan on fire is cheap.
 *
 * Deadlines never follow the wall clock: a wall-clock step must not fire one early or late. Without
 * `monotonicNow()` each item gets its own timer, which measures elapsed time by itself.
 */
export class Deadlines<T extends DeadlineItem> {
  readonly #clock: Clock
  readonly #onExpired: (item: T) => void
  readonly #shared: boolean
  #items: T[] = []
  /** Each item's own timer, used only when the clock has no `monotonicNow`. */
  readonly #ownTimers = new Map<T, TimerHandle>()
  #timer: TimerHandle | undefined = undefined
  #armedFor = Number.POSITIVE_INFINITY

  constructor(clock: Clock, onExpired: (item: T) => void) {
    this.#clock = clock
    this.#onExpired = onExpired
    this.#shared = typeof clock.monotonicNow === 'function'
  }

  /** Starts watching `item`, expiring it `timeoutMs` (a finite timer-safe number) from now. */
  watch(item: T, timeoutMs: number): void {
    if (!this.#shared) {
      const timer = this.#clock.setTimeout(() => {
        this.#ownTimers.delete(item)
        this.#onExpired(item)
      }, timeoutMs)
      this.#ownTimers.set(item, timer)
      return
    }
    const now = this.#monotonicNow()
    item.deadlineAt = now + timeoutMs
    item.watchIndex = this.#items.length
    this.#items.push(item)
    if (item.deadlineAt < this.#armedFor) this.#arm(item.deadlineAt, now)
  }

  /** Stops watching `item`; a no-op when it is not watched. */
  unwatch(item: T): void {
    if (!this.#shared) {
      const timer = this.#ownTimers.get(item)
      if (timer !== undefined) {
        this.#clock.clearTimeout(timer)
        this.#ownTimers.delete(item)
      }
      return
    }
    const index = item.watchIndex
    if (index < 0) return
    item.watchIndex = -1
    const last = this.#items.pop() as T
    if (last !== item) {
      this.#items[index] = last
      last.watchIndex = index
    }
    if (this.#items.length === 0) this.#disarm()
  }

  #monotonicNow(): number {
    return (this.#clock.monotonicNow as () => number)()
  }

  #arm(deadlineAt: number, now = this.#monotonicNow()): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#armedFor = deadlineAt
    const delay = Math.max(0, Math.ceil(deadlineAt - now))
    this.#timer = this.#clock.setTimeout(() => this.#fire(), delay)
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#armedFor = Number.POSITIVE_INFINITY
  }

  #fire(): void {
    this.#timer = undefined
    this.#armedFor = Number.POSITIVE_INFINITY
    const now = this.#monotonicNow()
    // Collect first: expiring an item runs manager code that watches and unwatches other items.
    const expired = this.#items.filter((item) => item.deadlineAt <= now)
    for (const item of expired) {
      if (item.watchIndex < 0) continue
      this.unwatch(item)
      this.#onExpired(item)
    }
    let earliest = Number.POSITIVE_INFINITY
    for (const item of this.#items) if (item.deadlineAt < earliest) earliest = item.deadlineAt
    if (earliest < this.#armedFor) this.#arm(earliest)
  }
}
