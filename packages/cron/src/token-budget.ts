import { CronError } from './errors.js'
import type { TokenTotal } from './ports.js'
import { BUDGET_WINDOW_MS } from './run-budget.js'

/** Tokens are counted per minute of the time they were recorded: at most 1,441 counts per day. */
export const TOKEN_BUCKET_MS = 60_000

/**
 * Checks the bucket size of `CronStore.aiTokenTotals`: a whole number of milliseconds, 1 or more.
 * Throws `CRON_INVALID_INPUT` otherwise; returns it unchanged.
 */
export function checkBucketMs(bucketMs: number): number {
  if (!Number.isSafeInteger(bucketMs) || bucketMs < 1) {
    throw new CronError('CRON_INVALID_INPUT', 'bucketMs must be a whole number of milliseconds, 1 or more', {
      data: { field: 'bucketMs' },
    })
  }
  return bucketMs
}

/**
 * A sliding-window sum of the tokens `ai` runs used: at most `max` in any `windowMs` (SECURITY.md
 * CRON-3, the daily spend budget for AI-prompt jobs). Tokens are kept per bucket of `bucketMs`
 * (a minute), and a bucket leaves the window `windowMs` after the bucket ends, so a count never
 * leaves early. Keeps at most `windowMs / bucketMs + 1` buckets, whatever the number of runs.
 */
export class TokenBudget {
  readonly max: number
  readonly windowMs: number
  readonly bucketMs: number
  /** `[bucket start, tokens]`, oldest first. */
  #buckets: [number, number][] = []
  #total = 0

  constructor(max: number, windowMs = BUDGET_WINDOW_MS, bucketMs = TOKEN_BUCKET_MS) {
    if (!(max >= 0)) throw new RangeError('a token budget needs a maximum of 0 or more (Infinity for none)')
    this.max = max
    this.windowMs = windowMs
    this.bucketMs = checkBucketMs(bucketMs)
  }

  /** True when the budget is unlimited. */
  get unlimited(): boolean {
    return this.max === Number.POSITIVE_INFINITY
  }

  /** Where a store query starts to see every bucket still counted at `now`. */
  seedSince(now: number): number {
    return now - this.windowMs - this.bucketMs
  }

  /** Adds totals found elsewhere (the store at start-up, per bucket of the same size). */
  seed(totals: readonly TokenTotal[]): void {
    if (this.unlimited) return
    for (const total of totals) this.#add(total.at, total.tokens)
  }

  /** Tokens counted in the window ending at `now`. */
  used(now: number): number {
    this.#prune(now)
    return this.#total
  }

  /**
   * When an `ai` run may start at `now`: undefined; otherwise the earliest time the tokens still
   * counted fall below the maximum (`Infinity` when the maximum is 0).
   */
  blockedUntil(now: number): number | undefined {
    if (this.unlimited || this.used(now) < this.max) return undefined
    let remaining = this.#total
    for (const [start, tokens] of this.#buckets) {
      remaining -= tokens
      if (remaining < this.max) return this.#expiry(start)
    }
    return Number.POSITIVE_INFINITY
  }

  /** Counts `tokens` used by a run that ended at `at`. */
  record(at: number, tokens: number): void {
    if (this.unlimited || !(tokens > 0)) return
    this.#add(at - (((at % this.bucketMs) + this.bucketMs) % this.bucketMs), tokens)
    this.#prune(at)
  }

  #add(start: number, tokens: number): void {
    if (!(tokens > 0)) return
    this.#total += tokens
    // Buckets arrive in order but for a late record: search from the newest.
    let index = this.#buckets.length - 1
    while (index >= 0 && (this.#buckets[index] as [number, number])[0] > start) index -= 1
    const bucket = this.#buckets[index]
    if (bucket !== undefined && bucket[0] === start) bucket[1] += tokens
    else this.#buckets.splice(index + 1, 0, [start, tokens])
  }

  /** A bucket is counted until `windowMs` after it ends. */
  #expiry(start: number): number {
    return start + this.bucketMs + this.windowMs
  }

  #prune(now: number): void {
    let drop = 0
    while (drop < this.#buckets.length && this.#expiry((this.#buckets[drop] as [number, number])[0]) <= now) {
      this.#total -= (this.#buckets[drop] as [number, number])[1]
      drop += 1
    }
    if (drop > 0) this.#buckets.splice(0, drop)
    if (this.#buckets.length === 0) this.#total = 0
  }
}
