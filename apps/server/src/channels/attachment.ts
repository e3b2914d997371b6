import { ChannelError } from './errors.js'

/**
 * Default of each chat adapter's `attachAfterParts`: a text that splits into more than this many
 * messages goes as its first part plus the whole text as an attached file.
 */
const DEFAULT_ATTACH_AFTER_PARTS = 3
/** The name of the attached file that holds a long text whole. */
export const ATTACHMENT_NAME = 'result.md'
/** Its media type (Markdown: agents write it, and every service shows it as text). */
export const ATTACHMENT_TYPE = 'text/markdown'

/**
 * The `attachAfterParts` option checked: a whole number of at least 1, or `Infinity` (never attach).
 * @throws ChannelError `CHANNEL_INVALID_OPTIONS` otherwise
 */
export function attachAfterParts(channel: string, value: number | undefined): number {
  const parts = value ?? DEFAULT_ATTACH_AFTER_PARTS
  if (parts === Number.POSITIVE_INFINITY || (Number.isInteger(parts) && parts >= 1)) return parts
  throw new ChannelError(
    'CHANNEL_INVALID_OPTIONS',
    `${channel}: attachAfterParts must be a whole number of at least 1, or Infinity`,
  )
}

/** The short line that goes with the attached file (Telegram's caption). */
export function attachmentNote(text: string): string {
  return `The whole text (${text.length} characters) is in the attached ${ATTACHMENT_NAME}.`
}

/**
 * True when the service refused the attachment itself, so the text is better sent as split messages:
 * a `CHANNEL_SEND_FAILED` answered with a 4xx other than 401, 408 and 429 (413 too large, 403 no
 * right to attach files, 400), or a service error code the adapter marks `refused` (Slack's
 * `missing_scope`). Rate limits, server errors and network failures are not: the delivery is retried.
 */
export function attachmentRefused(error: unknown): boolean {
  if (!ChannelError.is(error) || error.code !== 'CHANNEL_SEND_FAILED') return false
  const data = error.data ?? {}
  if (data.refused === true) return true
  const status = typeof data.status === 'number' ? data.status : undefined
  return status !== undefined && status >= 400 && status < 500 && ![401, 408, 429].includes(status)
}
