import type { Bot } from 'grammy'
import { abortable, timeoutSignal } from '../../abort.js'
import type { Logger } from '../../logger.js'
import { ChannelError } from '../errors.js'
import type { SecretScrubber } from '../scrub.js'
import type { ChannelStartOptions } from '../types.js'

/** A poll under a lease starts only with this much of the lease left, and ends this much before it. */
const MIN_POLL_LEASE_MS = 1_000

/** What {@link TelegramPolling} needs from its channel. */
export interface TelegramPollingOptions {
  readonly name: string
  readonly bot: Bot
  readonly pollTimeoutSeconds: number
  readonly startTimeoutMs: number
  readonly logger: Logger
  readonly scrubber: SecretScrubber
  /** A failed Bot API call as the channel reports it (409 is `CHANNEL_CONFLICT`). */
  failure(method: string, error: unknown): ChannelError
  /** The channel's `stop()`: when the start is given up, or its signal aborts. */
  stop(): Promise<void>
}

/**
 * grammY's long polling, under a cluster lease when there is one: `start()` resolves once the
 * first `getUpdates` answered, a 409 there rejects it, and a later failure ends receiving and goes
 * to `onError`.
 */
export class TelegramPolling {
  readonly #options: TelegramPollingOptions
  #receiving: AbortController | undefined
  #polling: Promise<void> | undefined
  /** The lease of a cluster duty that receiving runs under (`ChannelStartOptions.validForMs`). */
  #validForMs: (() => number) | undefined
  /** Set by `start()` until the first `getUpdates` succeeds; that one poll does not wait (timeout 0). */
  #firstPoll: (() => void) | undefined

  constructor(options: TelegramPollingOptions) {
    this.#options = options
    const { bot, name } = options
    // start() resolves when polling really runs: its first getUpdates returns at once, and a 401 or
    // 409 there rejects start() instead of surfacing later.
    // Under a cluster lease, no poll outlives it: none starts once the lease may have run out (a
    // server resumed after a stall polls no more), and each waits less than what is left.
    bot.api.config.use(async (previous, method, payload, signal) => {
      const validForMs = this.#validForMs
      if (method !== 'getUpdates' || validForMs === undefined) return previous(method, payload, signal)
      const asked = Number((payload as { timeout?: number }).timeout ?? 0)
      const timeout = Math.min(asked, Math.floor((validForMs() - MIN_POLL_LEASE_MS) / 1000))
      // Too little left for a poll of a second: none is sent (grammY tries again in 3 s, by when
      // the lease has been renewed or the duty ended).
      if (timeout < Math.min(1, asked))
        throw new ChannelError('CHANNEL_RECEIVE_FAILED', `${name}: the poll lease may run out: not polling`, {
          data: { channel: name },
        })
      return previous(method, { ...payload, timeout }, signal)
    })
    bot.api.config.use(async (previous, method, payload, signal) => {
      const confirm = method === 'getUpdates' ? this.#firstPoll : undefined
      if (confirm === undefined) return previous(method, payload, signal)
      const result = await previous(method, { ...payload, timeout: 0 }, signal)
      if (result.ok) {
        if (this.#firstPoll === confirm) this.#firstPoll = undefined
        confirm()
      }
      return result
    })
  }

  /** True once `start()` began and until it failed or `halt()` ran. */
  get started(): boolean {
    return this.#receiving !== undefined
  }

  /** True while long polling runs. */
  get receiving(): boolean {
    return this.#receiving !== undefined && this.#options.bot.isRunning()
  }

  /** Aborted when receiving ends: what in-flight handlers run under; `undefined` when not started. */
  get signal(): AbortSignal | undefined {
    return this.#receiving?.signal
  }

  /**
   * Starts long polling; resolves once the first `getUpdates` answered. Rejects with that poll's
   * failure, or `CHANNEL_RECEIVE_FAILED` when it does not start within `startTimeoutMs`.
   */
  async start(options: ChannelStartOptions): Promise<void> {
    const { bot, name, logger } = this.#options
    const receiving = new AbortController()
    this.#receiving = receiving
    this.#validForMs = options.validForMs
    const onAbort = (): void => void this.#options.stop()
    options.signal.addEventListener('abort', onAbort, { once: true })
    let confirmed = false
    const running = new Promise<void>((resolve, reject) => {
      this.#firstPoll = () => {
        confirmed = true
        resolve()
      }
      this.#polling = bot
        .start({
          allowed_updates: ['message', 'callback_query'],
          timeout: this.#options.pollTimeoutSeconds,
        })
        .then(
          () => {
            // Polling ended (stopped): the server-long signal must not keep this start's listener.
            options.signal.removeEventListener('abort', onAbort)
            // Stopped before the first poll answered.
            if (!confirmed) resolve()
          },
          (error: unknown) => {
            const failure = this.#options.failure('getUpdates', error)
            if (this.#receiving === receiving) this.#receiving = undefined
            this.#firstPoll = undefined
            options.signal.removeEventListener('abort', onAbort)
            if (!confirmed) reject(failure)
            else {
              logger.error('telegram stopped receiving', { channel: name, error: failure })
              options.onError?.(failure)
            }
          },
        )
    })
    const startTimeoutMs = this.#options.startTimeoutMs
    const timeout = timeoutSignal(startTimeoutMs)
    try {
      await abortable(running, AbortSignal.any([options.signal, timeout.signal]))
    } catch (error) {
      if (confirmed) return
      // grammY retries network errors of deleteWebhook and getUpdates for ever: give up, stop it.
      await this.#options.stop()
      if (options.signal.aborted) throw options.signal.reason
      if (ChannelError.is(error)) throw error
      throw new ChannelError(
        'CHANNEL_RECEIVE_FAILED',
        `${name}: long polling did not start within ${startTimeoutMs} ms (the Bot API kept failing)`,
        { data: { channel: name } },
      )
    } finally {
      timeout.clear()
    }
  }

  /** Ends receiving at once: in-flight handlers are aborted, and the first poll confirms nothing. */
  halt(): void {
    this.#receiving?.abort(new DOMException('the telegram channel is stopping', 'AbortError'))
    this.#receiving = undefined
    this.#firstPoll = undefined
  }

  /**
   * Stops grammY's poll loop and waits, within `limit`, for it and for `tasks` to end. Call
   * `halt()` first.
   */
  async stop(limit: AbortSignal, tasks: Iterable<Promise<unknown>>): Promise<void> {
    const { bot, name, logger, scrubber } = this.#options
    // bot.stop() aborts the long poll, then confirms the last update with one short getUpdates.
    if (bot.isRunning())
      await abortable(bot.stop(), limit).catch((error: unknown) =>
        logger.warn('telegram did not stop polling cleanly', {
          channel: name,
          error: scrubber.error(error),
        }),
      )
    await abortable(Promise.allSettled([this.#polling, ...tasks]), limit).catch(() => undefined)
    this.#polling = undefined
  }
}
