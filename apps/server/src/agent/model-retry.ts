import { systemClock } from '@lango/cron'
import { APICallError, type LanguageModelMiddleware, RetryError } from 'ai'
import { sleep } from '../abort.js'
import { parseRetryAfter } from '../channels/retry.js'

/** The first wait before trying a failed call again when the server names none; doubled each time (the AI SDK's). */
const FIRST_BACKOFF_MS = 2000

/** How the model calls of one turn are tried again. */
export interface ModelRetryPolicy {
  /** Tries after the first, 0–10. */
  readonly maxRetries: number
  /** Milliseconds the turn has left (its `agent.timeout`). */
  readonly timeLeft: () => number
}

/**
 * A failed model call whose next try would come after the turn's time is up: the server asked to
 * wait longer (`Retry-After`) than the turn has left, or the backoff would. Said at once instead of
 * waiting for the timeout, and never by calling before the server said to.
 */
export class RetryWaitTooLong extends Error {
  constructor(
    /** What the last try threw. */
    readonly last: APICallError,
    /** The wait before the next try. */
    readonly waitMs: number,
    /** Whether the server named the wait (`Retry-After`), or it is the backoff. */
    readonly asked: boolean,
    /** Tries made. */
    readonly attempts: number,
  ) {
    super(last.message, { cause: last })
    this.name = 'RetryWaitTooLong'
  }
}

/**
 * Tries a failed model call again (a 408, 409, 429 or 5xx answer, or the server unreachable) up to
 * `maxRetries` times, each after the wait the server named (`Retry-After` or `retry-after-ms`,
 * however long) or else a backoff from 2 s, doubled each time. The AI SDK's own retry follows a
 * `Retry-After` only up to 60 s and otherwise calls again after its backoff (a probe found a server
 * asking for two minutes called again after two seconds): this one never calls before it was told
 * to, and a wait past the turn's time ends the call at once with {@link RetryWaitTooLong}. After
 * the last try, what failed is a `RetryError` as the SDK's own (so the attempts are counted alike).
 * The SDK's `maxRetries` must then be 0.
 */
export function retryingModelCalls(policy: ModelRetryPolicy): LanguageModelMiddleware {
  const attempt = async <T>(call: () => PromiseLike<T>, signal: AbortSignal | undefined): Promise<T> => {
    const errors: unknown[] = []
    for (;;) {
      try {
        return await call()
      } catch (error) {
        if (signal?.aborted === true) throw error
        errors.push(error)
        const retryable = APICallError.isInstance(error) && error.isRetryable
        if (!retryable || errors.length > policy.maxRetries) {
          if (errors.length === 1) throw error
          throw new RetryError({
            message: `Failed after ${errors.length} attempts. Last error: ${(error as Error).message}`,
            reason: retryable ? 'maxRetriesExceeded' : 'errorNotRetryable',
            errors,
          })
        }
        const named = waitNamed(error.responseHeaders)
        const waitMs = named ?? FIRST_BACKOFF_MS * 2 ** (errors.length - 1)
        if (waitMs > policy.timeLeft())
          throw new RetryWaitTooLong(error, waitMs, named !== undefined, errors.length)
        await sleep(systemClock, waitMs, signal)
      }
    }
  }
  return {
    specificationVersion: 'v3',
    wrapGenerate: ({ doGenerate, params }) => attempt(doGenerate, params.abortSignal),
    wrapStream: ({ doStream, params }) => attempt(doStream, params.abortSignal),
  }
}

/** The wait a response names: `retry-after-ms` (OpenAI's), else `Retry-After` (seconds or a date). */
function waitNamed(headers: Readonly<Record<string, string>> | undefined): number | undefined {
  if (headers === undefined) return undefined
  const ms = Number(headers['retry-after-ms'])
  if (headers['retry-after-ms'] !== undefined && Number.isFinite(ms) && ms >= 0) return Math.ceil(ms)
  return parseRetryAfter(headers['retry-after'], new Date())
}
