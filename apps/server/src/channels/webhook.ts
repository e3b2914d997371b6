import { createHmac } from 'node:crypto'
import { type Clock, systemClock } from '@lango/cron'
import { timeoutSignal } from '../abort.js'
import { type Logger, silentLogger } from '../logger.js'
import { ChannelError } from './errors.js'
import { parseRetryAfter, type RetryPolicy, withRetry } from './retry.js'
import { SecretScrubber } from './scrub.js'
import type { ChannelAdapter, ChannelCallOptions } from './types.js'

/** Options of {@link WebhookChannel}. */
interface WebhookChannelOptions {
  /** Where deliveries are POSTed (http or https). Treated as a secret: never in logs or errors. */
  readonly url: string
  /** The registered name; default `webhook`. */
  readonly name?: string
  /** When set, each POST carries `X-Lango-Signature: sha256=<hex HMAC-SHA256 of the body>`. */
  readonly secret?: string
  /** Extra request headers (e.g. `Authorization`); their values are treated as secrets. */
  readonly headers?: Readonly<Record<string, string>>
  /** One attempt's time limit. Default 10 s. */
  readonly attemptTimeoutMs?: number
  /** Retries of 429, 5xx and network errors. Default 4 attempts, 500 ms backoff, `Retry-After` up to 60 s. */
  readonly retry?: RetryPolicy
  readonly clock?: Clock
  readonly logger?: Logger
}

/** The JSON body of every webhook delivery. */
export interface WebhookPayload {
  /** The target as given: `webhook` or `webhook:<id>`. */
  readonly target: string
  readonly channel: string
  /** The `<id>` of `webhook:<id>`, or null for a bare `webhook`. */
  readonly chat_id: string | null
  readonly text: string
  /** Epoch milliseconds. */
  readonly sent_at: number
}

/** A response status that failed an attempt. */
class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly retryAfterMs: number | undefined,
  ) {
    super(`HTTP ${status}`)
  }
}

/**
 * Delivers to an HTTP endpoint: a JSON POST of {@link WebhookPayload} per message (not split). 429, 5xx
 * and network errors are retried through the shared backoff helper, honouring `Retry-After`; other
 * statuses fail at once (`CHANNEL_AUTH_FAILED` for 401/403, else `CHANNEL_SEND_FAILED`).
 */
export class WebhookChannel implements ChannelAdapter {
  readonly name: string
  /** Each POST of a cron delivery carries `Idempotency-Key: <delivery id>`, the same on every attempt. */
  readonly deduplicates = true
  readonly #url: URL
  readonly #options: WebhookChannelOptions
  readonly #scrubber: SecretScrubber
  readonly #clock: Clock
  readonly #logger: Logger

  constructor(options: WebhookChannelOptions) {
    this.name = options.name ?? 'webhook'
    this.#scrubber = new SecretScrubber([
      options.url,
      options.secret,
      ...Object.values(options.headers ?? {}),
    ])
    let url: URL | undefined
    try {
      url = new URL(options.url)
    } catch {
      url = undefined
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new ChannelError(
        'CHANNEL_INVALID_OPTIONS',
        `${this.name}: the webhook url must be an http(s) URL`,
      )
    this.#url = url
    this.#options = options
    this.#clock = options.clock ?? systemClock
    this.#logger = options.logger ?? silentLogger
  }

  /** POSTs one JSON payload; `chatId` becomes `chat_id` (null for a bare target). */
  async send(chatId: string | undefined, text: string, options: ChannelCallOptions = {}): Promise<void> {
    const { signal } = options
    signal?.throwIfAborted()
    const payload: WebhookPayload = {
      target: chatId === undefined ? this.name : `${this.name}:${chatId}`,
      channel: this.name,
      chat_id: chatId ?? null,
      text,
      sent_at: this.#clock.now().getTime(),
    }
    const body = JSON.stringify(payload)
    const headers: Record<string, string> = {
      ...this.#options.headers,
      'content-type': 'application/json',
      'user-agent': 'lango-webhook/1',
    }
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey
    if (this.#options.secret !== undefined)
      headers['x-lango-signature'] =
        `sha256=${createHmac('sha256', this.#options.secret).update(body).digest('hex')}`
    let attempts = 0
    try {
      await withRetry(
        async () => {
          attempts += 1
          await this.#post(body, headers, signal)
        },
        {
          ...this.#options.retry,
          clock: this.#clock,
          ...(signal === undefined ? {} : { signal }),
          classify: classifyHttpFailure,
          onRetry: ({ attempt, delayMs, error }) =>
            this.#logger.debug('webhook delivery retried', {
              channel: this.name,
              attempt,
              delayMs,
              ...(error instanceof HttpStatusError ? { status: error.status } : {}),
            }),
        },
      )
    } catch (error) {
      if (signal?.aborted) throw signal.reason
      if (error instanceof HttpStatusError) {
        const code =
          error.status === 401 || error.status === 403 ? 'CHANNEL_AUTH_FAILED' : 'CHANNEL_SEND_FAILED'
        throw new ChannelError(
          code,
          `${this.name} delivery failed: HTTP ${error.status}${error.status >= 300 && error.status < 400 ? ' (redirects are not followed: set channels.webhook.url to the final address)' : ''} after ${attempts} attempt${attempts === 1 ? '' : 's'}`,
          {
            data: {
              channel: this.name,
              status: error.status,
              attempts,
              ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
            },
          },
        )
      }
      throw new ChannelError(
        'CHANNEL_SEND_FAILED',
        `${this.name} delivery failed: the endpoint could not be reached after ${attempts} attempt${attempts === 1 ? '' : 's'}`,
        { cause: this.#scrubber.error(error), data: { channel: this.name, attempts } },
      )
    }
  }

  async #post(body: string, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<void> {
    const timeout = timeoutSignal(this.#options.attemptTimeoutMs ?? 10_000)
    let response: Response
    try {
      response = await fetch(this.#url, {
        method: 'POST',
        headers,
        body,
        // A redirect is not followed (it could point anywhere, 169.254.169.254 included): it is
        // answered as its status, which does not retry.
        redirect: 'manual',
        signal: signal === undefined ? timeout.signal : AbortSignal.any([signal, timeout.signal]),
      })
      // The body is not used; cancelling it frees the connection.
      await response.body?.cancel().catch(() => undefined)
    } finally {
      timeout.clear()
    }
    if (response.ok) return
    throw new HttpStatusError(
      response.status,
      parseRetryAfter(response.headers.get('retry-after'), this.#clock.now()),
    )
  }
}

/** 429 and 5xx (with their `Retry-After`) and network errors retry; any other status does not. */
function classifyHttpFailure(error: unknown): { retry: boolean; retryAfterMs?: number } {
  if (error instanceof HttpStatusError) {
    const retry = error.status === 429 || error.status >= 500
    return error.retryAfterMs === undefined ? { retry } : { retry, retryAfterMs: error.retryAfterMs }
  }
  return { retry: true }
}
