/** How many hooks' buckets are kept; the least recently used is forgotten beyond (a full bucket again). */
const MAX_BUCKETS = 10_000

interface Bucket {
  tokens: number
  at: number
  /** The bucket ran dry and {@link HookRateLimit.note} said so; cleared once a token is taken again. */
  dry: boolean
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
    const bucket = this.#bucket(hook, now)
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      bucket.dry = false
      return 0
    }
    return Math.ceil((1 - bucket.tokens) / (this.#perMinute / 60_000))
  }

  /**
   * Counts one event for `hook` at `now` (epoch ms) without refusing anything: `counted` within the
   * rate, `ran-out` for the first event past it, `over` for the further ones until the bucket refills.
   */
  note(hook: string, now: number): 'counted' | 'ran-out' | 'over' {
    if (this.take(hook, now) === 0) return 'counted'
    const bucket = this.#bucket(hook, now)
    if (bucket.dry) return 'over'
    bucket.dry = true
    return 'ran-out'
  }

  /** The bucket of `hook`, refilled to `now`, made the most recently used. */
  #bucket(hook: string, now: number): Bucket {
    const rate = this.#perMinute / 60_000
    const known = this.#buckets.get(hook)
    const bucket = known ?? { tokens: this.#perMinute, at: now, dry: false }
    bucket.tokens = Math.min(this.#perMinute, bucket.tokens + Math.max(0, now - bucket.at) * rate)
    bucket.at = now
    // Most recently used last: the first key is the one to forget.
    this.#buckets.delete(hook)
    this.#buckets.set(hook, bucket)
    if (known === undefined && this.#buckets.size > MAX_BUCKETS) {
      const oldest = this.#buckets.keys().next().value
      if (oldest !== undefined) this.#buckets.delete(oldest)
    }
    return bucket
  }
}
