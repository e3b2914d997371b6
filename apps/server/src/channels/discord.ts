import { DiscordAPIError, HTTPError, RateLimitError, REST } from '@discordjs/rest'
import { type Logger, silentLogger } from '../logger.js'
import { ATTACHMENT_NAME, ATTACHMENT_TYPE, attachAfterParts, attachmentRefused } from './attachment.js'
import { ChannelError } from './errors.js'
import { botTokenScrubber, type SecretScrubber } from './scrub.js'
import { splitMessage } from './split.js'
import { type ChannelIdRule, resolveChannelId } from './target.js'
import type { ChannelAdapter, ChannelCallOptions } from './types.js'

/** Options of {@link DiscordChannel}. */
interface DiscordChannelOptions {
  /** A bot token; never logged or put in an error. */
  readonly token: string
  /** The registered name; default `discord`. */
  readonly name?: string
  /** The API base URL without the version (`LANGO_DISCORD_API_URL`); default `https://discord.com/api`. */
  readonly apiUrl?: string
  /** Where a bare `discord` target goes; without it a bare target is `CHANNEL_NO_DEFAULT_CHAT`. */
  readonly defaultChannel?: string
  /** When given, only these channel ids may be posted to (`CHANNEL_TARGET_NOT_ALLOWED` otherwise). */
  readonly allowedChannels?: readonly string[]
  /** Retries of 5xx and network errors by the REST client. Default 1 (two tries fit a delivery attempt). */
  readonly retries?: number
  /** One HTTP request's time limit. Default 10 s. */
  readonly requestTimeoutMs?: number
  /**
   * The REST client waits out 429s by itself; a wait longer than this fails the send instead
   * (`CHANNEL_SEND_FAILED`, status 429, its `retryAfterMs`: the delivery ledger's wait). Default 5 s,
   * so the waits stay inside one delivery attempt (`deliveryTimeoutMs`, 30 s).
   */
  readonly maxRetryAfterMs?: number
  /**
   * A text that splits into more messages than this goes as one message: its first part, with the
   * whole text attached (`result.md`); `Infinity` always splits. Default 3.
   */
  readonly attachAfterParts?: number
  readonly logger?: Logger
}

/** Discord's limit on a message's `content`. */
const DISCORD_MESSAGE_LIMIT = 2000
/** Message flag: no link embeds (Discord would fetch every URL in an agent's text). */
const SUPPRESS_EMBEDS = 1 << 2
/** A Discord snowflake id. */
const SNOWFLAKE = /^\d{1,25}$/

/**
 * Posts to Discord channels (`POST /channels/{id}/messages` through @discordjs/rest), plain text split
 * at 2000 characters on paragraph, code-fence and line boundaries (a long text as its first part with
 * the whole attached as `result.md`), with mentions disabled (`allowed_mentions: { parse: [] }`: an
 * agent's `@everyone` pings nobody) and link embeds suppressed (Discord would fetch each URL). The REST
 * client queues per rate-limit bucket and retries 429s.
 */
export class DiscordChannel implements ChannelAdapter {
  readonly name: string
  readonly #rest: REST
  readonly #channels: ChannelIdRule
  readonly #scrubber: SecretScrubber
  readonly #attachAfterParts: number
  readonly #logger: Logger

  constructor(options: DiscordChannelOptions) {
    this.name = options.name ?? 'discord'
    this.#scrubber = botTokenScrubber(this.name, options.token)
    this.#channels = {
      defaultChannel: options.defaultChannel,
      allowedChannels: options.allowedChannels,
      pattern: SNOWFLAKE,
      expected: 'a channel is a numeric id',
    }
    this.#attachAfterParts = attachAfterParts(this.name, options.attachAfterParts)
    this.#logger = options.logger ?? silentLogger
    // Short waits only: a longer rate limit fails the send with its wait, for the delivery ledger.
    const maxRetryAfterMs = options.maxRetryAfterMs ?? 5_000
    this.#rest = new REST({
      version: '10',
      ...(options.apiUrl === undefined ? {} : { api: options.apiUrl.replace(/\/+$/, '') }),
      // Two tries of at most 10 s stay inside one delivery attempt (30 s).
      retries: options.retries ?? 1,
      timeout: options.requestTimeoutMs ?? 10_000,
      rejectOnRateLimit: (data) => data.retryAfter > maxRetryAfterMs,
    }).setToken(options.token)
  }

  /** Throws as {@link send} would for `chatId` (no default channel, a malformed id, a channel not allowed). */
  checkChat(chatId: string | undefined): void {
    resolveChannelId(this.name, chatId, this.#channels)
  }

  /**
   * Posts `text` to channel `chatId` (or the default channel), one message per 2000-character part; a
   * text of more than `attachAfterParts` parts as one message, its first part with the whole text
   * attached (`result.md`), or as all its parts when Discord refuses the file (413, 403 without the
   * Attach Files permission).
   */
  async send(chatId: string | undefined, text: string, options: ChannelCallOptions = {}): Promise<void> {
    const { signal } = options
    signal?.throwIfAborted()
    const channel = resolveChannelId(this.name, chatId, this.#channels)
    const parts = splitMessage(text, DISCORD_MESSAGE_LIMIT)
    if (parts.length > this.#attachAfterParts) {
      try {
        await this.#post(channel, parts[0] ?? '', text, signal)
        return
      } catch (error) {
        if (signal?.aborted) throw signal.reason
        if (!attachmentRefused(error)) throw error
        this.#logger.warn('discord refused the attachment: sending the text as messages', {
          channel: this.name,
          chatId: channel,
          parts: parts.length,
          error,
        })
      }
    }
    for (const part of parts) await this.#post(channel, part, undefined, signal)
  }

  /** One message: `content`, and `attached` as the file `result.md` when given (multipart). */
  async #post(
    channel: string,
    content: string,
    attached: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const body = { content, allowed_mentions: { parse: [] }, flags: SUPPRESS_EMBEDS }
    try {
      await this.#rest.post(`/channels/${channel}/messages`, {
        ...(attached === undefined
          ? { body }
          : {
              body: { ...body, attachments: [{ id: 0, filename: ATTACHMENT_NAME }] },
              files: [
                { name: ATTACHMENT_NAME, data: Buffer.from(attached, 'utf8'), contentType: ATTACHMENT_TYPE },
              ],
            }),
        // A signal of its own for each request: @discordjs/rest adds an abort listener to the one
        // it is given and never removes it, which would pile up on the caller's across the parts.
        ...(signal === undefined ? {} : { signal: AbortSignal.any([signal]) }),
      })
    } catch (error) {
      if (signal?.aborted) throw signal.reason
      throw this.#failure(error, channel)
    }
  }

  /** Clears the REST client's sweep timers. */
  async stop(): Promise<void> {
    this.#rest.clearHashSweeper()
    this.#rest.clearHandlerSweeper()
  }

  #failure(error: unknown, channel: string): ChannelError {
    const cause = this.#scrubber.error(error)
    const data = { channel: this.name, chatId: channel }
    if (error instanceof DiscordAPIError)
      return new ChannelError(
        error.status === 401 ? 'CHANNEL_AUTH_FAILED' : 'CHANNEL_SEND_FAILED',
        `${this.name}: posting to ${channel} failed: HTTP ${error.status} (${String(error.code)})`,
        { cause, data: { ...data, status: error.status, error: error.code } },
      )
    if (error instanceof RateLimitError)
      return new ChannelError(
        'CHANNEL_SEND_FAILED',
        `${this.name}: posting to ${channel} is rate limited for ${Math.ceil(error.retryAfter / 1000)} s`,
        { cause, data: { ...data, status: 429, retryAfterMs: error.retryAfter } },
      )
    if (error instanceof HTTPError)
      return new ChannelError(
        'CHANNEL_SEND_FAILED',
        `${this.name}: posting to ${channel} failed: HTTP ${error.status}`,
        {
          cause,
          data: { ...data, status: error.status },
        },
      )
    return new ChannelError('CHANNEL_SEND_FAILED', `${this.name}: posting to ${channel} failed`, {
      cause,
      data,
    })
  }
}
