import type { Clock } from '@lango/cron'
import { type Bot, GrammyError, HttpError } from 'grammy'
import { ChannelError } from '../errors.js'
import { type RetryPolicy, withRetry } from '../retry.js'
import type { SecretScrubber } from '../scrub.js'

/** grammY's Node build types signals as the `abort-controller` polyfill's; node-fetch accepts the native one. */
type GrammySignal = Parameters<Bot['init']>[0]

/** A native signal as grammY's API methods type it. */
export function grammySignal(signal: AbortSignal | undefined): GrammySignal {
  return signal as unknown as GrammySignal
}

/** What a Bot API failure is reported with: the channel's name and the token's scrubber. */
interface BotFailureContext {
  readonly name: string
  readonly scrubber: SecretScrubber
}

/** How Bot API calls are made: the failure context, plus the clock and policy of network retries. */
export interface BotCallContext extends BotFailureContext {
  readonly clock: Clock
  readonly networkRetry: RetryPolicy | undefined
}

/**
 * A failed Bot API call as a scrubbed `ChannelError`: 401 is `CHANNEL_AUTH_FAILED`, 409 (another
 * process long-polls the token) `CHANNEL_CONFLICT`, anything else `CHANNEL_SEND_FAILED`.
 */
export function botFailure(context: BotFailureContext, method: string, error: unknown): ChannelError {
  if (ChannelError.is(error)) return error
  const { name, scrubber } = context
  const cause = scrubber.error(error)
  const data: Record<string, unknown> = { channel: name, method }
  if (error instanceof GrammyError) {
    data.status = error.error_code
    const description = scrubber.text(error.description).slice(0, 200)
    if (error.error_code === 401)
      return new ChannelError('CHANNEL_AUTH_FAILED', `${name}: the Bot API rejected the bot token (401)`, {
        cause,
        data,
      })
    if (error.error_code === 409)
      return new ChannelError(
        'CHANNEL_CONFLICT',
        `${name}: Telegram answered 409 Conflict: another process is receiving updates for this bot token (only one may long-poll it); stop the other instance or use another bot`,
        { cause, data },
      )
    if (error.parameters.retry_after !== undefined) data.retryAfterSeconds = error.parameters.retry_after
    return new ChannelError(
      'CHANNEL_SEND_FAILED',
      `${name}: ${method} failed: ${error.error_code} ${description}`,
      {
        cause,
        data,
      },
    )
  }
  if (error instanceof HttpError)
    return new ChannelError(
      'CHANNEL_SEND_FAILED',
      `${name}: ${method} failed: the Bot API could not be reached`,
      {
        cause,
        data,
      },
    )
  return new ChannelError('CHANNEL_SEND_FAILED', `${name}: ${method} failed`, { cause, data })
}

/** One Bot API call: network errors retried (bounded), every failure a scrubbed `ChannelError`. */
export async function callBot<T>(
  context: BotCallContext,
  method: string,
  signal: AbortSignal | undefined,
  call: (signal: AbortSignal | undefined) => Promise<T>,
): Promise<T> {
  try {
    return await withRetry(() => call(signal), {
      maxAttempts: 3,
      ...context.networkRetry,
      clock: context.clock,
      ...(signal === undefined ? {} : { signal }),
      classify: (error) => ({ retry: error instanceof HttpError }),
    })
  } catch (error) {
    if (signal?.aborted) throw signal.reason
    throw botFailure(context, method, error)
  }
}
