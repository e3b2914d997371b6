import { ChannelError } from './errors.js'

const REDACTED = '[redacted]'
/** How deep a cause chain is copied; deeper causes are dropped. */
const MAX_CAUSE_DEPTH = 4
/** Fields of a library error worth keeping on the copy (status codes, service error codes). */
const KEPT_FIELDS = ['code', 'status', 'error_code', 'description', 'statusCode'] as const

/**
 * Removes known secrets (bot tokens, webhook URLs) from text and errors. grammY's and node-fetch's
 * errors carry the request URL, which holds the bot token (`/bot<token>/sendMessage`); every error
 * an adapter throws or logs passes through here first.
 */
export class SecretScrubber {
  readonly #secrets: readonly string[]

  /** Values shorter than 4 characters are ignored (they would mask ordinary text). */
  constructor(secrets: readonly (string | undefined)[]) {
    const forms = new Set<string>()
    for (const secret of secrets) {
      if (secret === undefined || secret.length < 4) continue
      forms.add(secret)
      forms.add(encodeURIComponent(secret))
    }
    // Longest first, so a secret that contains another is masked whole.
    this.#secrets = [...forms].sort((a, b) => b.length - a.length)
  }

  /** `text` with every secret replaced by `[redacted]`. */
  text(text: string): string {
    let result = text
    for (const secret of this.#secrets) result = result.split(secret).join(REDACTED)
    return result
  }

  /**
   * A copy of `error` that is safe to throw, log or inspect: same name, message and stack scrubbed,
   * status and service codes kept, the cause chain (`cause`, or grammY's `error`) copied the same way;
   * request payloads, headers and URLs held in other fields are left behind.
   */
  error(error: unknown, depth = 0): Error {
    if (!(error instanceof Error)) return new Error(this.text(String(error)).slice(0, 1000))
    const inner = error.cause ?? (error as { error?: unknown }).error
    const copy = new Error(
      this.text(error.message),
      inner === undefined || depth >= MAX_CAUSE_DEPTH ? undefined : { cause: this.error(inner, depth + 1) },
    )
    copy.name = error.name
    copy.stack = error.stack === undefined ? undefined : this.text(error.stack)
    const target = copy as unknown as Record<string, unknown>
    for (const field of KEPT_FIELDS) {
      const value = (error as unknown as Record<string, unknown>)[field]
      if (typeof value === 'number') target[field] = value
      else if (typeof value === 'string') target[field] = this.text(value)
    }
    return copy
  }
}

/**
 * The scrubber of a chat service adapter whose one secret is its bot token (Slack, Discord): the
 * token must not be blank, and is masked in everything the adapter throws or logs.
 * @throws ChannelError `CHANNEL_INVALID_OPTIONS` for a blank token
 */
export function botTokenScrubber(channel: string, token: string): SecretScrubber {
  if (token.trim() === '')
    throw new ChannelError('CHANNEL_INVALID_OPTIONS', `${channel}: a bot token is required`)
  return new SecretScrubber([token])
}
