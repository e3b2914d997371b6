import { createHash } from 'node:crypto'
import { autoRetry } from '@grammyjs/auto-retry'
import { type Clock, systemClock } from '@lango/cron'
import { Bot } from 'grammy'
import { type Logger, silentLogger } from '../../logger.js'
import { attachAfterParts } from '../attachment.js'
import { ChannelError } from '../errors.js'
import { SecretScrubber } from '../scrub.js'
import type {
  ChannelAdapter,
  ChannelApprovalRequest,
  ChannelCallOptions,
  ChannelStartOptions,
  InboundHandler,
} from '../types.js'
import { type BotCallContext, botFailure, callBot, grammySignal } from './api.js'
import { TelegramApprovals } from './approvals.js'
import { TelegramConversations } from './conversation.js'
import { TELEGRAM_CHAT } from './format.js'
import type { TelegramChannelOptions } from './options.js'
import { TelegramPolling } from './polling.js'
import { sendLong } from './send.js'

/**
 * Telegram through grammY: long polling for messages, replies split at 4096 characters on paragraph,
 * code-fence and line boundaries (a long delivery as its first part plus a `result.md` document), a typing indicator while the handler works, approvals with inline buttons only the
 * asking user can press, always sent with the whole request (a request longer than one message
 * comes as an attached text file, the buttons on it). @grammyjs/auto-retry waits out 429
 * `retry_after`; network errors on sends go through the shared backoff helper. Every error is
 * scrubbed of the token (grammY's errors carry the request URL, `/bot<token>/…`).
 *
 * Only one process may long-poll a token: a second makes Telegram answer 409 Conflict, which ends
 * receiving with `CHANNEL_CONFLICT` (thrown by `start()` when the first poll meets it, reported
 * through `onError` after that).
 */
export class TelegramChannel implements ChannelAdapter {
  readonly name: string
  readonly #bot: Bot
  readonly #allowed: readonly string[]
  readonly #allowedSet: ReadonlySet<string>
  readonly #scrubber: SecretScrubber
  readonly #clock: Clock
  readonly #logger: Logger
  readonly #options: TelegramChannelOptions
  readonly #calls: BotCallContext
  readonly #attachAfterParts: number
  readonly #polling: TelegramPolling
  readonly #approvals: TelegramApprovals
  readonly #conversations: TelegramConversations
  readonly #tasks = new Set<Promise<unknown>>()
  /**
   * One long poll per bot token: `telegram-bot:<first 16 hex of the token's SHA-256>`. With several
   * servers on one database only the holder of this key's lease polls (ChannelAdapter.exclusive).
   */
  readonly exclusive: string
  #inbound: InboundHandler | undefined
  #stopping: Promise<void> | undefined

  constructor(options: TelegramChannelOptions) {
    this.name = options.name ?? 'telegram'
    if (!/^\d+:[A-Za-z0-9_-]+$/.test(options.token))
      throw new ChannelError(
        'CHANNEL_INVALID_OPTIONS',
        `${this.name}: the bot token must look like <digits>:<letters> (from @BotFather)`,
      )
    this.#allowed = options.allowedChats.map(String)
    for (const chat of this.#allowed)
      if (!TELEGRAM_CHAT.test(chat))
        throw new ChannelError(
          'CHANNEL_INVALID_OPTIONS',
          `${this.name}: an allowed chat is a numeric chat id or @channelname`,
          { data: { chat: chat.slice(0, 40) } },
        )
    this.#allowedSet = new Set(this.#allowed)
    this.#attachAfterParts = attachAfterParts(this.name, options.attachAfterParts)
    this.exclusive = `telegram-bot:${createHash('sha256').update(options.token).digest('hex').slice(0, 16)}`
    this.#options = options
    this.#scrubber = new SecretScrubber([options.token])
    this.#clock = options.clock ?? systemClock
    this.#logger = options.logger ?? silentLogger
    this.#calls = {
      name: this.name,
      scrubber: this.#scrubber,
      clock: this.#clock,
      networkRetry: options.networkRetry,
    }
    const pollTimeoutSeconds = options.pollTimeoutSeconds ?? 30
    this.#bot = new Bot(options.token, {
      client: {
        ...(options.apiRoot === undefined ? {} : { apiRoot: options.apiRoot.replace(/\/+$/, '') }),
        // A long poll must not be cut by the client's own request timeout.
        timeoutSeconds: pollTimeoutSeconds + 15,
      },
    })
    this.#bot.api.config.use(
      autoRetry({
        // Short waits only: a channel's own retries stay well inside one delivery attempt
        // (`deliveryTimeoutMs`, 30 s); a longer `retry_after` fails the send with it, for the
        // delivery ledger to retry then.
        maxRetryAttempts: options.maxRetryAttempts ?? 2,
        maxDelaySeconds: options.maxRetryAfterSeconds ?? 5,
        // Network errors: grammY's poll loop retries getUpdates; sends use the shared helper (bounded).
        rethrowHttpErrors: true,
      }),
    )
    this.#polling = new TelegramPolling({
      name: this.name,
      bot: this.#bot,
      pollTimeoutSeconds,
      startTimeoutMs: options.startTimeoutMs ?? 30_000,
      logger: this.#logger,
      scrubber: this.#scrubber,
      failure: (method, error) => botFailure(this.#calls, method, error),
      stop: () => this.stop(),
    })
    this.#approvals = new TelegramApprovals({
      name: this.name,
      bot: this.#bot,
      allowedChats: this.#allowedSet,
      clock: this.#clock,
      logger: this.#logger,
      scrubber: this.#scrubber,
      maxPending: options.maxPendingApprovals ?? 20,
      timeoutMs: options.approvalTimeoutMs ?? 10 * 60_000,
      call: (method, signal, call) => callBot(this.#calls, method, signal, call),
      track: (task) => this.#track(task),
    })
    this.#conversations = new TelegramConversations({
      name: this.name,
      bot: this.#bot,
      allowedChats: this.#allowedSet,
      clock: this.#clock,
      logger: this.#logger,
      scrubber: this.#scrubber,
      calls: this.#calls,
      typingIntervalMs: options.typingIntervalMs ?? 4000,
      inbound: () => this.#inbound,
      receiving: () => this.#polling.signal,
      track: (task) => this.#track(task),
    })
    this.#bot.on('callback_query:data', (context) => this.#approvals.onCallback(context))
    this.#bot.on('message', (context) => this.#conversations.onMessage(context))
    this.#bot.catch((error) =>
      this.#logger.error('telegram update failed', {
        channel: this.name,
        error: this.#scrubber.error(error.error),
      }),
    )
  }

  /** True while long polling runs. */
  get receiving(): boolean {
    return this.#polling.receiving
  }

  /**
   * Sends `text` to `chatId` (or the first allowed chat) in parts of at most 4096 characters; a text
   * of more than `attachAfterParts` parts goes as its first part plus the whole as a document
   * (`result.md`), or as all its parts when Telegram refuses the document.
   */
  async send(chatId: string | undefined, text: string, options: ChannelCallOptions = {}): Promise<void> {
    options.signal?.throwIfAborted()
    const chat = this.#chat(chatId)
    await sendLong(
      this.#bot,
      this.#calls,
      chat,
      text,
      { attachAfterParts: this.#attachAfterParts, logger: this.#logger },
      options.signal,
    )
  }

  /**
   * Validates the token (`getMe`) and starts long polling; resolves once the first `getUpdates`
   * answered. Rejects with `CHANNEL_AUTH_FAILED` for a bad token, `CHANNEL_CONFLICT` when another
   * process polls it, `CHANNEL_SEND_FAILED` when the Bot API cannot be reached. A 409 later ends
   * receiving and goes to `options.onError`.
   */
  async start(inbound: InboundHandler, options: ChannelStartOptions): Promise<void> {
    options.signal.throwIfAborted()
    if (this.#polling.started) return
    await this.#stopping
    this.#stopping = undefined
    // getMe here, bounded, rather than grammY's init(), which retries network errors for ever.
    this.#bot.botInfo = await callBot(this.#calls, 'getMe', options.signal, (signal) =>
      this.#bot.api.getMe(grammySignal(signal)),
    )
    if (this.#allowed.length === 0)
      this.#logger.warn('telegram has no allowed chats: every inbound message is ignored', {
        channel: this.name,
      })
    this.#inbound = inbound
    await this.#polling.start(options)
  }

  /**
   * Asks `userId` in `chatId` with Approve / Deny buttons under the whole request: in the message
   * when it fits one (4096 characters), else in an attached text file (`sendDocument`) whose caption
   * says so and carries the buttons. Only that user's press counts: another
   * user's press is refused with a notice. Resolves `undefined` after `approvalTimeoutMs` or on
   * `stop()`; rejects with `signal.reason` when aborted. The buttons are removed once it ends.
   */
  async requestApproval(
    chatId: string,
    userId: string,
    request: ChannelApprovalRequest,
    options: { readonly signal: AbortSignal },
  ): Promise<boolean | undefined> {
    const { signal } = options
    signal.throwIfAborted()
    if (!this.receiving)
      throw new ChannelError(
        'CHANNEL_NOT_STARTED',
        `${this.name}: approvals need the channel to be receiving`,
      )
    const chat = this.#chat(chatId)
    return this.#approvals.request(chat, userId, request, signal)
  }

  /**
   * Stops long polling (the pending `getUpdates` is aborted), ends pending approvals with no answer,
   * aborts in-flight handlers and waits for them. Idempotent.
   */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop()
    return this.#stopping
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop()
  }

  async #stop(): Promise<void> {
    this.#polling.halt()
    this.#approvals.endAll()
    await this.#polling.stop(AbortSignal.timeout(this.#options.stopTimeoutMs ?? 5000), this.#tasks)
    this.#inbound = undefined
  }

  /** Throws as {@link send} would for `chatId` (no allowed chat for a bare target, a malformed id, a chat not allowed). */
  checkChat(chatId: string | undefined): void {
    this.#chat(chatId)
  }

  #chat(chatId: string | undefined): string {
    const chat = chatId ?? this.#allowed[0]
    if (chat === undefined)
      throw new ChannelError(
        'CHANNEL_NO_DEFAULT_CHAT',
        `${this.name}: a bare target goes to the first allowed chat, and none is configured`,
        { data: { channel: this.name } },
      )
    if (!TELEGRAM_CHAT.test(chat))
      throw new ChannelError(
        'CHANNEL_INVALID_TARGET',
        `${this.name}: a chat is a numeric id or @channelname`,
        {
          data: { channel: this.name },
        },
      )
    if (!this.#allowedSet.has(chat))
      throw new ChannelError(
        'CHANNEL_TARGET_NOT_ALLOWED',
        `${this.name}: chat ${chat} is not an allowed chat`,
        {
          data: { channel: this.name, chatId: chat },
        },
      )
    return chat
  }

  #track(task: Promise<unknown>): void {
    this.#tasks.add(task)
    const untrack = (): void => {
      this.#tasks.delete(task)
    }
    task.then(untrack, untrack)
  }
}
