import { type ChannelSender, DeliveryError } from '@lango/cron'
import { ChannelError, type ChannelErrorCode } from './errors.js'

/** Codes no retry can fix: the target, the token or the configuration is wrong. */
const PERMANENT_CODES: ReadonlySet<ChannelErrorCode> = new Set([
  'CHANNEL_UNKNOWN',
  'CHANNEL_NOT_CONFIGURED',
  'CHANNEL_INVALID_TARGET',
  'CHANNEL_NO_DEFAULT_CHAT',
  'CHANNEL_INVALID_MESSAGE',
  'CHANNEL_TARGET_NOT_ALLOWED',
  'CHANNEL_AUTH_FAILED',
  'CHANNEL_INVALID_OPTIONS',
])

/**
 * A channel's failure as the `DeliveryError` cron's delivery ledger steers its retry by: `permanent`
 * for a wrong target, token or configuration, for a 4xx answer other than 408 and 429, and where
 * the channel marked it so (`data.permanent`);
 * `retryAfterMs` from the service's `Retry-After` (`data.retryAfterMs`, or Telegram's
 * `data.retryAfterSeconds`). Anything else (5xx, network, a foreign error) is retryable. The message
 * is the channel's (never a token or the text); the original error is the `cause`.
 */
export function toDeliveryError(error: unknown): DeliveryError {
  if (DeliveryError.is(error)) return error
  if (!ChannelError.is(error)) {
    const message = error instanceof Error ? error.message : String(error)
    return new DeliveryError(message.slice(0, 300), { cause: error })
  }
  const data = error.data ?? {}
  const status = typeof data.status === 'number' ? data.status : undefined
  const retryAfterMs =
    typeof data.retryAfterMs === 'number'
      ? data.retryAfterMs
      : typeof data.retryAfterSeconds === 'number'
        ? data.retryAfterSeconds * 1000
        : undefined
  const permanent =
    PERMANENT_CODES.has(error.code) ||
    // The channel says no retry can help (Slack's `channel_not_found`, `is_archived`, …).
    data.permanent === true ||
    // A redirect (not followed) is the address being wrong, as is a 4xx other than 408 and 429.
    (status !== undefined && status >= 300 && status < 500 && status !== 408 && status !== 429)
  return new DeliveryError(error.message, {
    cause: error,
    permanent,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  })
}

/**
 * Cron's `ChannelSender` over the channels: failures become {@link toDeliveryError}'s
 * `DeliveryError` (so the delivery ledger honours `Retry-After` and stops on permanent failures),
 * and `canDeduplicate` asks the channels which targets deduplicate by idempotency key.
 */
export function cronDeliverySender(
  sender: ChannelSender,
  channels: { canDeduplicate(target: string): boolean },
): ChannelSender {
  return {
    async send(target, text, options) {
      try {
        await sender.send(target, text, options)
      } catch (error) {
        if (options.signal.aborted) throw options.signal.reason
        throw toDeliveryError(error)
      }
    },
    canDeduplicate: (target) => channels.canDeduplicate(target),
  }
}
