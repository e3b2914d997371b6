import { type Clock, systemClock } from '@lango/cron'
import { sleep } from '../abort.js'

/** How often and how long a call is retried. */
export interface RetryPolicy {
  /** Attempts in all, the first included. Default 4. */
  readonly maxAttempts?: number
  /** The first backoff; it doubles per retry, with full jitter. Default 500 ms. */
  readonly baseDelayMs?: number
  /** The longest single backoff. Default 10 s. */
  readonly maxDelayMs?: number
  /** A `Retry-After` longer than this is not waited for: the call fails at once. Default 60 s. */
  readonly maxRetryAfterMs?: number
}

/** Whether a failed attempt may be retried, and how long the service asked to wait first. */
interface RetryDecision {
  readonly retry: boolean
  /** From `Retry-After` (or Telegram's `retry_after`): waited instead of the backoff. */
  readonly retryAfterMs?: number
}

/** Options of {@link withRetry}. */
interface RetryOptions extends RetryPolicy {
  /** Decides per error; errors it does not mark `retry` are thrown at once. */
  readonly classify: (error: unknown) => RetryDecision
  readonly signal?: AbortSignal
  readonly clock?: Clock
  /** In [0, 1); default `Math.random`. */
  readonly random?: () => number
  /** Called before each wait (for a debug log line). */
  readonly onRetry?: (info: {
    readonly attempt: number
    readonly delayMs: number
    readonly error: unknown
  }) => void
}

/**
 * Runs `attempt` until it resolves, a non-retryable error, `maxAttempts`, or abort: the one
 * Retry-After/backoff loop of the channels. A retry waits the service's `Retry-After` when it gave one
 * (up to `maxRetryAfterMs`, else the last error is thrown), otherwise an exponential backoff with full
 * jitter. When the signal aborts — before, during an attempt or while waiting — `signal.reason` is
 * thrown unchanged.
 */
export async function withRetry<T>(
  attempt: (attempt: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const maxAttempts = options.maxAttempts ?? 4
  const baseDelayMs = options.baseDelayMs ?? 500
  const maxDelayMs = options.maxDelayMs ?? 10_000
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000
  const clock = options.clock ?? systemClock
  const random = options.random ?? Math.random
  const { signal } = options
  for (let number = 1; ; number++) {
    signal?.throwIfAborted()
    try {
      return await attempt(number)
    } catch (error) {
      // An attempt that failed because of the abort fails with the abort's reason, not its own error.
      signal?.throwIfAborted()
      const decision = options.classify(error)
      if (!decision.retry || number >= maxAttempts) throw error
      if (decision.retryAfterMs !== undefined && decision.retryAfterMs > maxRetryAfterMs) throw error
      const delayMs =
        decision.retryAfterMs ?? Math.round(random() * Math.min(maxDelayMs, baseDelayMs * 2 ** (number - 1)))
      options.onRetry?.({ attempt: number, delayMs, error })
      await sleep(clock, delayMs, signal)
    }
  }
}

/**
 * Milliseconds a `Retry-After` header asks to wait: delay-seconds (decimals accepted, as Discord
 * sends them) or an HTTP-date relative to `now`. Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now: Date): number | undefined {
  if (value === null || value === undefined) return undefined
  const trimmed = value.trim()
  if (/^\d+(?:\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000)
  const date = Date.parse(trimmed)
  if (Number.isNaN(date)) return undefined
  return Math.max(0, date - now.getTime())
}
