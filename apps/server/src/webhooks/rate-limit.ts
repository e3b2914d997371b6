/** How many hooks' buckets are kept; the least recently used is forgotten beyond (a full bucket again). */
const MAX_BUCKETS = 10_000

interface Bucket {
  tokens: number
  at: number
}

/**
 * A token bucket per hook name: `perMinute` calls at once, refilled at `perMinute` a minute. In
 * memory, per server (a cluster of n servers takes at most n times the rate).
 */
export class HookRateLimit {
  readonly #perMinute: number
  readonly #buckets = new Map<string, Bucket>()

  constructor(perMinute: number) {
    this.#perMinute = perMinute
  }

  /** Takes one call for `hook` at `now` (epoch ms): 0 when allowed, else the ms until one is. */
  take(hook: string, now: number): number {
    const rate = this.#perMinute / 60_000
    const known = this.#buckets.get(hook)
    const bucket = known ?? { tokens: this.#perMinute, at: now }
    bucket.tokens = Math.min(this.#perMinute, bucket.tokens + Math.max(0, now - bucket.at) * rate)
    bucket.at = now
    // Most recently used last: the first key is the one to forget.
    this.#buckets.delete(hook)
    this.#buckets.set(hook, bucket)
    if (known === undefined && this.#buckets.size > MAX_BUCKETS) {
      const oldest = this.#buckets.keys().next().value
      if (oldest !== undefined) this.#buckets.delete(oldest)
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return 0
    }
    return Math.ceil((1 - bucket.tokens) / rate)
  }
}
