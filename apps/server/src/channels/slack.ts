import {
  type Logger as SlackLogger,
  LogLevel as SlackLogLevel,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebClient,
} from '@slack/web-api'
import { abortable } from '../abort.js'
import { type Logger, silentLogger } from '../logger.js'
import { ChannelError } from './errors.js'
import { botTokenScrubber, type SecretScrubber } from './scrub.js'
import { splitMessage } from './split.js'
import { resolveChannelId } from './target.js'
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
  /** Longer texts are split on line boundaries. Default 4000 (Slack's recommended maximum). */
  readonly maxMessageLength?: number
  /** Retries of the Web API client (rate limits, network and HTTP errors). Default 3. */
  readonly retries?: number
  /** The first retry's delay; the client doubles it. Default 1000 ms. */
  readonly retryMinDelayMs?: number
  /** One HTTP request's time limit. Default 10 s. */
  readonly requestTimeoutMs?: number
  readonly logger?: Logger
}

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
 * Posts to Slack with `chat.postMessage` (@slack/web-api), text split on line boundaries. The text is
 * escaped (`&`, `<`, `>`), so an agent's `<!channel>` pings nobody and `<https://evil|bank>` shows as
 * written; link unfurling is off, so a URL in a message is not fetched by Slack on its own. The client
 * retries rate limits itself, waiting the `Retry-After` Slack sends; its retry count and request
 * timeout are options. Send only: receiving (Events API or Socket Mode) is not built yet.
 */
export class SlackChannel implements ChannelAdapter {
  readonly name: string
  readonly #client: WebClient
  readonly #options: SlackChannelOptions
  readonly #scrubber: SecretScrubber
  readonly #maxMessageLength: number

  constructor(options: SlackChannelOptions) {
    this.name = options.name ?? 'slack'
    this.#scrubber = botTokenScrubber(this.name, options.token)
    this.#options = options
    this.#maxMessageLength = options.maxMessageLength ?? 4000
    const logger = options.logger ?? silentLogger
    this.#client = new WebClient(options.token, {
      ...(options.apiUrl === undefined ? {} : { slackApiUrl: options.apiUrl }),
      logger: slackLogger(logger, this.#scrubber),
      retryConfig: {
        retries: options.retries ?? 3,
        factor: 2,
        minTimeout: options.retryMinDelayMs ?? 1000,
        maxTimeout: 30_000,
        randomize: true,
      },
      timeout: options.requestTimeoutMs ?? 10_000,
      rejectRateLimitedCalls: false,
      maxRequestConcurrency: 4,
    })
  }

  /** Posts `text` to channel `chatId` (or the default channel), one message per part. */
  async send(chatId: string | undefined, text: string, options: ChannelCallOptions = {}): Promise<void> {
    const { signal } = options
    signal?.throwIfAborted()
    const channel = resolveChannelId(this.name, chatId, {
      defaultChannel: this.#options.defaultChannel,
      allowedChannels: this.#options.allowedChannels,
      pattern: SLACK_CHANNEL,
      expected: 'a channel is an id such as C0123ABCD',
    })
    for (const part of splitMessage(text, this.#maxMessageLength)) {
      try {
        // The client takes no per-call signal: its request timeout bounds each attempt, the race the wait.
        await abortable(
          this.#client.chat.postMessage({
            channel,
            text: escapeSlackText(part),
            unfurl_links: false,
            unfurl_media: false,
          }),
          signal,
        )
      } catch (error) {
        if (signal?.aborted) throw signal.reason
        throw this.#failure(error, channel)
      }
    }
  }

  #failure(error: unknown, channel: string): ChannelError {
    const cause = this.#scrubber.error(error)
    if (error instanceof WebAPIPlatformError) {
      const code = String(error.data.error)
      return new ChannelError(
        AUTH_ERRORS.has(code) ? 'CHANNEL_AUTH_FAILED' : 'CHANNEL_SEND_FAILED',
        `${this.name}: chat.postMessage to ${channel} failed: ${code}`,
        { cause, data: { channel: this.name, chatId: channel, error: code } },
      )
    }
    if (error instanceof WebAPIHTTPError)
      return new ChannelError(
        'CHANNEL_SEND_FAILED',
        `${this.name}: chat.postMessage to ${channel} failed: HTTP ${error.statusCode}`,
        { cause, data: { channel: this.name, chatId: channel, status: error.statusCode } },
      )
    return new ChannelError('CHANNEL_SEND_FAILED', `${this.name}: chat.postMessage to ${channel} failed`, {
      cause,
      data: { channel: this.name, chatId: channel },
    })
  }
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
