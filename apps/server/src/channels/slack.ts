import { systemClock } from '@lango/cron'
import {
  type Logger as SlackLogger,
  LogLevel as SlackLogLevel,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebClient,
} from '@slack/web-api'
import { abortable, sleep, timeoutSignal } from '../abort.js'
import { type Logger, silentLogger } from '../logger.js'
import { ATTACHMENT_NAME, ATTACHMENT_TYPE, attachAfterParts, attachmentRefused } from './attachment.js'
import { ChannelError } from './errors.js'
import { parseRetryAfter } from './retry.js'
import { botTokenScrubber, type SecretScrubber } from './scrub.js'
import { splitMessage } from './split.js'
import { type ChannelIdRule, resolveChannelId } from './target.js'
import type { ChannelAdapter, ChannelCallOptions } from './types.js'

/** Options of {@link SlackChannel}. */
interface SlackChannelOptions {
  /** A bot token (`xoxb-…`); never logged or put in an error. */
  readonly token: string
  /** The registered name; default `slack`. */
  readonly name?: string
  /** The Web API base URL (`slackApiUrl`); default `https://slack.com/api/` (`LANGO_SLACK_API_URL`). */
  readonly apiUrl?: string
  /** Where a bare `slack` target goes; without it a bare target is `CHANNEL_NO_DEFAULT_CHAT`. */
  readonly defaultChannel?: string
  /** When given, only these channels may be posted to (`CHANNEL_TARGET_NOT_ALLOWED` otherwise). */
  readonly allowedChannels?: readonly string[]
  /**
   * Longer texts are split on paragraph, code-fence and line boundaries. Default 4000 (Slack's
   * recommended maximum).
   */
  readonly maxMessageLength?: number
  /**
   * A text that splits into more messages than this goes as its first part plus the whole text as an
   * uploaded file (`result.md`; the bot needs the `files:write` scope, else it falls back to messages);
   * `Infinity` always splits. Default 3.
   */
  readonly attachAfterParts?: number
  /** Retries of the Web API client (network and HTTP errors). Default 2. */
  readonly retries?: number
  /** The first retry's delay; the client doubles it, up to 4 s. Default 1000 ms. */
  readonly retryMinDelayMs?: number
  /**
   * A rate limit (429) whose `Retry-After` is at most this is waited out and the post sent again
   * (twice at most); a longer one fails the send at once with its `retryAfterMs`, for the caller (the
   * delivery ledger) to retry then. Default 5 s: a channel's own waits stay well inside one delivery
   * attempt (`deliveryTimeoutMs`, 30 s), and no post is sent after its caller gave up.
   */
  readonly maxRetryAfterMs?: number
  /** One HTTP request's time limit. Default 7 s (three tries and their backoff fit in a delivery attempt). */
  readonly requestTimeoutMs?: number
  readonly logger?: Logger
}

/**
 * Slack error codes (`ok: false`) that may go away by themselves: the others say the request, the
 * target or the app is wrong (`channel_not_found`, `not_in_channel`, `is_archived`, `msg_too_long`,
 * `missing_scope`, …) and fail a delivery at once instead of five times over minutes.
 */
const TRANSIENT_ERRORS = new Set([
  'ratelimited',
  'rate_limited',
  'message_limit_exceeded',
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
  'team_added_to_org',
])

/** Slack error codes that mean the token is wrong or no longer valid. */
const AUTH_ERRORS = new Set([
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
])
/** A Slack channel id, or a channel name with or without `#`. */
const SLACK_CHANNEL = /^#?[A-Za-z0-9][A-Za-z0-9._-]{0,79}$/

/**
 * Posts to Slack with `chat.postMessage` (@slack/web-api), text split on paragraph, code-fence and line
 * boundaries, a long one as its first part plus the whole as an uploaded `result.md`. The text is
 * escaped (`&`, `<`, `>`), so an agent's `<!channel>` pings nobody and `<https://evil|bank>` shows as
 * written; link unfurling is off, so a URL in a message is not fetched by Slack on its own. A rate
 * limit of at most `maxRetryAfterMs` is waited out here (the caller's signal stops the wait), a longer
 * one fails the call with its wait; network and HTTP errors are retried by the client, within one
 * delivery attempt. Retry count, request timeout and the longest wait are options. Send only: receiving (Events API or Socket Mode) is not built yet.
 */
export class SlackChannel implements ChannelAdapter {
  readonly name: string
  readonly #client: WebClient
  readonly #channels: ChannelIdRule
  readonly #scrubber: SecretScrubber
  readonly #maxMessageLength: number
  readonly #attachAfterParts: number
  readonly #requestTimeoutMs: number
  readonly #maxRetryAfterMs: number
  readonly #logger: Logger

  constructor(options: SlackChannelOptions) {
    this.name = options.name ?? 'slack'
    this.#scrubber = botTokenScrubber(this.name, options.token)
    this.#channels = {
      defaultChannel: options.defaultChannel,
      allowedChannels: options.allowedChannels,
      pattern: SLACK_CHANNEL,
      expected: 'a channel is an id such as C0123ABCD',
    }
    this.#maxMessageLength = options.maxMessageLength ?? 4000
    this.#attachAfterParts = attachAfterParts(this.name, options.attachAfterParts)
    // Three tries of at most 7 s and their backoff stay inside one delivery attempt (30 s).
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 7_000
    this.#maxRetryAfterMs = options.maxRetryAfterMs ?? 5_000
    const logger = options.logger ?? silentLogger
    this.#logger = logger
    this.#client = new WebClient(options.token, {
      ...(options.apiUrl === undefined ? {} : { slackApiUrl: options.apiUrl }),
      logger: slackLogger(logger, this.#scrubber),
      retryConfig: {
        retries: options.retries ?? 2,
        factor: 2,
        minTimeout: options.retryMinDelayMs ?? 1000,
        maxTimeout: 4_000,
        randomize: true,
      },
      timeout: this.#requestTimeoutMs,
      // Rate limits are waited out here (#post), where the caller's signal can stop the wait: the
      // client's own wait has no bound and no signal, and posted minutes after the caller gave up.
      rejectRateLimitedCalls: true,
      maxRequestConcurrency: 4,
    })
  }

  /** Throws as {@link send} would for `chatId` (no default channel, a malformed id, a channel not allowed). */
  checkChat(chatId: string | undefined): void {
    resolveChannelId(this.name, chatId, this.#channels)
  }

  /**
   * Posts `text` to channel `chatId` (or the default channel), one message per part; a text of more
   * than `attachAfterParts` parts as its first part plus the whole text as a file (`result.md`,
   * through `files.getUploadURLExternal`, an upload, and `files.completeUploadExternal`), or as all its
   * parts when Slack refuses the file (a missing `files:write` scope, a 4xx on the upload).
   */
  async send(chatId: string | undefined, text: string, options: ChannelCallOptions = {}): Promise<void> {
    const { signal } = options
    signal?.throwIfAborted()
    const channel = resolveChannelId(this.name, chatId, this.#channels)
    const parts = splitEscaped(text, this.#maxMessageLength)
    if (parts.length <= this.#attachAfterParts) {
      for (const part of parts) await this.#post(channel, part, signal)
      return
    }
    // Slack answers with the channel's id, which the file upload needs (a `#name` target has none).
    const channelId = (await this.#post(channel, parts[0] ?? '', signal)) ?? channel
    try {
      await this.#upload(channelId, text, signal)
    } catch (error) {
      if (signal?.aborted) throw signal.reason
      if (!attachmentRefused(error)) throw error
      this.#logger.warn('slack refused the attachment: sending the text as messages', {
        channel: this.name,
        chatId: channel,
        parts: parts.length,
        error,
      })
      for (const part of parts.slice(1)) await this.#post(channel, part, signal)
    }
  }

  /**
   * One `chat.postMessage`; resolves with the channel id Slack answers. A short rate limit is waited
   * out (twice at most); a longer one fails with its `retryAfterMs`.
   */
  #post(channel: string, part: string, signal: AbortSignal | undefined): Promise<string | undefined> {
    return this.#waitingOutRateLimits(signal, () => this.#postOnce(channel, part, signal))
  }

  /**
   * `attempt`, again after a rate limit of at most `maxRetryAfterMs` (twice at most), the wait
   * stopped by `signal`: the client rejects rate-limited calls (`rejectRateLimitedCalls`), so no
   * call is made after its caller gave up.
   */
  async #waitingOutRateLimits<T>(signal: AbortSignal | undefined, attempt: () => Promise<T>): Promise<T> {
    for (let waited = 0; ; waited++) {
      try {
        return await attempt()
      } catch (error) {
        const cause = error instanceof ChannelError ? error.cause : undefined
        if (!(cause instanceof WebAPIRateLimitedError) || waited >= 2) throw error
        const waitMs = cause.retryAfter * 1000
        if (waitMs > this.#maxRetryAfterMs) throw error
        await sleep(systemClock, waitMs, signal)
      }
    }
  }

  async #postOnce(
    channel: string,
    part: string,
    signal: AbortSignal | undefined,
  ): Promise<string | undefined> {
    try {
      // The client takes no per-call signal: its request timeout bounds each attempt, the race the wait.
      const response = await abortable(
        this.#client.chat.postMessage({
          channel,
          text: escapeSlackText(part),
          unfurl_links: false,
          unfurl_media: false,
        }),
        signal,
      )
      return response.channel
    } catch (error) {
      if (signal?.aborted) throw signal.reason
      throw this.#failure(error, channel, 'chat.postMessage')
    }
  }

  /** Uploads `text` as `result.md` and shares it in `channelId` (Slack's external upload flow). */
  async #upload(channelId: string, text: string, signal: AbortSignal | undefined): Promise<void> {
    const bytes = new TextEncoder().encode(text)
    const ticket = await this.#call('files.getUploadURLExternal', channelId, signal, () =>
      this.#client.files.getUploadURLExternal({ filename: ATTACHMENT_NAME, length: bytes.byteLength }),
    )
    const { upload_url: uploadUrl, file_id: fileId } = ticket
    if (uploadUrl === undefined || fileId === undefined)
      throw new ChannelError(
        'CHANNEL_SEND_FAILED',
        `${this.name}: files.getUploadURLExternal answered without an upload URL`,
        { data: { channel: this.name, chatId: channelId } },
      )
    const form = new FormData()
    form.append('file', new Blob([bytes], { type: ATTACHMENT_TYPE }), ATTACHMENT_NAME)
    // The upload URL is signed by Slack: it takes no token.
    const timeout = timeoutSignal(this.#requestTimeoutMs)
    try {
      const response = await fetch(uploadUrl, {
        method: 'POST',
        body: form,
        signal: signal === undefined ? timeout.signal : AbortSignal.any([signal, timeout.signal]),
      })
      await response.body?.cancel()
      if (!response.ok) {
        const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), new Date())
        throw new ChannelError(
          'CHANNEL_SEND_FAILED',
          `${this.name}: uploading the file for ${channelId} failed: HTTP ${response.status}`,
          {
            data: {
              channel: this.name,
              chatId: channelId,
              status: response.status,
              ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
            },
          },
        )
      }
    } catch (error) {
      if (signal?.aborted) throw signal.reason
      if (ChannelError.is(error)) throw error
      throw new ChannelError(
        'CHANNEL_SEND_FAILED',
        `${this.name}: uploading the file for ${channelId} failed`,
        {
          cause: this.#scrubber.error(error),
          data: { channel: this.name, chatId: channelId },
        },
      )
    } finally {
      timeout.clear()
    }
    await this.#call('files.completeUploadExternal', channelId, signal, () =>
      this.#client.files.completeUploadExternal({
        files: [{ id: fileId, title: ATTACHMENT_NAME }],
        channel_id: channelId,
      }),
    )
  }

  async #call<T>(
    method: string,
    channel: string,
    signal: AbortSignal | undefined,
    call: () => Promise<T>,
  ): Promise<T> {
    return this.#waitingOutRateLimits(signal, async () => {
      try {
        return await abortable(call(), signal)
      } catch (error) {
        if (signal?.aborted) throw signal.reason
        throw this.#failure(error, channel, method)
      }
    })
  }

  #failure(error: unknown, channel: string, method: string): ChannelError {
    const cause = this.#scrubber.error(error)
    if (error instanceof WebAPIRateLimitedError)
      return new ChannelError(
        'CHANNEL_SEND_FAILED',
        `${this.name}: ${method} to ${channel} is rate limited for ${error.retryAfter} s`,
        {
          // The error itself (no token in it): #post reads its retryAfter.
          cause: error,
          data: { channel: this.name, chatId: channel, status: 429, retryAfterMs: error.retryAfter * 1000 },
        },
      )
    if (error instanceof WebAPIPlatformError) {
      const code = String(error.data.error)
      const auth = AUTH_ERRORS.has(code)
      return new ChannelError(
        auth ? 'CHANNEL_AUTH_FAILED' : 'CHANNEL_SEND_FAILED',
        `${this.name}: ${method} to ${channel} failed: ${code}`,
        {
          cause,
          // Slack refused the call itself (a missing scope, a file it will not take): sending the
          // text as messages instead may work. Only an upload step's refusal is acted on. Unless it
          // may pass by itself, no retry helps (`permanent`: the delivery ledger fails it at once).
          data: {
            channel: this.name,
            chatId: channel,
            error: code,
            ...(auth ? {} : { refused: true }),
            ...(TRANSIENT_ERRORS.has(code) ? {} : { permanent: true }),
          },
        },
      )
    }
    if (error instanceof WebAPIHTTPError)
      return new ChannelError(
        'CHANNEL_SEND_FAILED',
        `${this.name}: ${method} to ${channel} failed: HTTP ${error.statusCode}`,
        { cause, data: { channel: this.name, chatId: channel, status: error.statusCode } },
      )
    return new ChannelError('CHANNEL_SEND_FAILED', `${this.name}: ${method} to ${channel} failed`, {
      cause,
      data: { channel: this.name, chatId: channel },
    })
  }
}

/**
 * `text` in parts each at most `limit` characters once escaped (`<` becomes four): the split is
 * made on the text, and a part that escaping makes too long is split again, finer, until it fits.
 */
function splitEscaped(text: string, limit: number): string[] {
  const fit = (part: string): string[] => {
    const escaped = escapeSlackText(part).length
    if (escaped <= limit || part.length <= 1) return [part]
    const finer = Math.max(2, Math.min(part.length - 1, Math.floor((limit * part.length) / escaped)))
    return splitMessage(part, finer).flatMap(fit)
  }
  return splitMessage(text, limit).flatMap(fit)
}

/** Slack's escaping of message text: `&`, `<` and `>` are its only control characters. */
function escapeSlackText(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')
}

/** The client's logger, onto ours at debug level (its info lines are per-request noise), scrubbed. */
function slackLogger(logger: Logger, scrubber: SecretScrubber): SlackLogger {
  const line = (parts: unknown[]): string =>
    scrubber
      .text(parts.map((part) => (typeof part === 'string' ? part : String(part))).join(' '))
      .slice(0, 500)
  return {
    debug: (...parts) => logger.debug(line(parts), { source: 'slack' }),
    info: (...parts) => logger.debug(line(parts), { source: 'slack' }),
    warn: (...parts) => logger.warn(line(parts), { source: 'slack' }),
    error: (...parts) => logger.error(line(parts), { source: 'slack' }),
    setLevel: () => undefined,
    getLevel: () => SlackLogLevel.DEBUG,
    setName: () => undefined,
  }
}
