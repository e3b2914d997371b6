import { type AnyServerErrorCode, isServerErrorNamed, LangoServerError } from '../errors.js'

/** Codes of {@link ChannelError} (`CHANNEL_*` in `SERVER_ERROR_CODES`); callers branch on these, never on messages. */
export type ChannelErrorCode = Extract<AnyServerErrorCode, `CHANNEL_${string}`>

/**
 * The channels' error, in the one error shape of ADR 0006 (`code`, `message`, `cause`, `data`,
 * `toJSON`). Messages and data never hold a token, a webhook URL or message text.
 */
export class ChannelError extends LangoServerError<ChannelErrorCode> {
  override readonly name = 'ChannelError'

  /** True for a `ChannelError` from any copy of this module (a `Symbol.for` brand, not `instanceof`). */
  static is(value: unknown): value is ChannelError {
    return isServerErrorNamed(value, 'ChannelError')
  }
}

/**
 * `: <reason>` from an adapter's own (non-`ChannelError`) failure: its first line, at most 300
 * characters, with addresses replaced by `<url>` (one may carry a token); `''` when it has none.
 */
export function reasonOf(error: unknown): string {
  const given = (error as { message?: unknown } | null | undefined)?.message
  const message = typeof given === 'string' ? given : typeof error === 'string' ? error : ''
  const line = (message.split('\n')[0] ?? '').replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, '<url>').trim()
  if (line === '') return ''
  return `: ${line.length > 300 ? `${line.slice(0, 300)}…` : line}`
}
