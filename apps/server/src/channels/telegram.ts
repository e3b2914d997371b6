import { createHash, randomBytes } from 'node:crypto'
import { autoRetry } from '@grammyjs/auto-retry'
import { type Clock, systemClock } from '@lango/cron'
import { Bot, type Context, GrammyError, HttpError, InputFile } from 'grammy'
import { abortable, timeoutSignal } from '../abort.js'
import { type Logger, silentLogger } from '../logger.js'
import { ChannelError } from './errors.js'
import { type RetryPolicy, withRetry } from './retry.js'
import { SecretScrubber } from './scrub.js'
import { splitMessage } from './split.js'
import type {
  ChannelAdapter,
  ChannelApprovalRequest,
  ChannelCallOptions,
  ChannelStartOptions,
  InboundHandler,
} from './types.js'

/** Options of {@link TelegramChannel}. */
export interface TelegramChannelOptions {
  /** The bot token from @BotFather (`LANGO_TELEGRAM_TOKEN`); never logged or put in an error. */
  readonly token: string
  /** The registered name; default `telegram`. */
  readonly name?: string
  /** The Bot API root (`LANGO_TELEGRAM_API_URL`); default `https://api.telegram.org`. */
  readonly apiRoot?: string
  /**
   * Chats the bot talks with (`LANGO_TELEGRAM_ALLOWED_CHATS`): messages from any other chat are
   * ignored (logged without their content), sends to any other chat are refused, and a bare
   * `telegram` target goes to the first. Empty: nothing is received.
   */
  readonly allowedChats: readonly (string | number)[]
  /** Long-polling timeout of one `getUpdates`. Default 30 s. */
  readonly pollTimeoutSeconds?: number
  /** How often `typing` is re-sent while the handler works (Telegram shows it for 5 s). Default 4000 ms. */
  readonly typingIntervalMs?: number
  /** Approvals waiting for a button press at once; one more is refused (`CHANNEL_APPROVALS_FULL`). Default 20. */
  readonly maxPendingApprovals?: number
  /** An approval nobody answers ends `undefined` (no answer) after this, whatever the caller's signal. Default 10 min. */
  readonly approvalTimeoutMs?: number
  /** Retries of 429 (after `retry_after`) and 5xx by @grammyjs/auto-retry. Default 3. */
  readonly maxRetryAttempts?: number
  /** A `retry_after` longer than this fails the call instead of waiting. Default 60 s. */
  readonly maxRetryAfterSeconds?: number
  /** Retries of network errors on sends (the shared backoff helper). Default 3 attempts. */
  readonly networkRetry?: RetryPolicy
  /** How long `start()` waits for the first poll to succeed before it gives up. Default 30 s. */
  readonly startTimeoutMs?: number
  /** How long `stop()` waits for the poll loop to end. Default 5 s. */
  readonly stopTimeoutMs?: number
  readonly clock?: Clock
  readonly logger?: Logger
}

/** Telegram's limit on one message's text. */
const TELEGRAM_MESSAGE_LIMIT = 4096
/** A poll under a lease starts only with this much of the lease left, and ends this much before it. */
const MIN_POLL_LEASE_MS = 1_000
/** A numeric chat id, or a public channel's `@username`. */
const TELEGRAM_CHAT = /^(?:-?\d{1,20}|@[A-Za-z][A-Za-z0-9_]{3,63})$/
/** `lango:<approval id>:yes|no`: well under Telegram's 64-byte `callback_data` limit. */
const CALLBACK_DATA = /^lango:([A-Za-z0-9_-]{1,32}):(yes|no)$/
/** Telegram's limit on a document's caption. */
const TELEGRAM_CAPTION_LIMIT = 1024

const ONLY_THE_ASKER = 'Only the user who asked can answer.'

/** The first line of an approval message: the safety and the tool. */
function approvalHeadline(request: ChannelApprovalRequest): string {
  return `Approval needed (${request.safety}): ${request.toolName}`
}

/** An approval as one message: the headline, the whole request, who may answer. */
function approvalText(request: ChannelApprovalRequest): string {
  return `${approvalHeadline(request)}\n${request.summary}\n\n${ONLY_THE_ASKER}`
}

/** True when the whole approval fits one Telegram message (else it goes as a document). */
function fitsOneMessage(request: ChannelApprovalRequest): boolean {
  return approvalText(request).length <= TELEGRAM_MESSAGE_LIMIT
}

/** grammY's Node build types signals as the `abort-controller` polyfill's; node-fetch accepts the native one. */
type GrammySignal = Parameters<Bot['init']>[0]

function grammySignal(signal: AbortSignal | undefined): GrammySignal {
  return signal as unknown as GrammySignal
}

interface PendingApproval {
  readonly chatId: string
  readonly userId: string
  messageId: number | undefined
  answer(approved: boolean | undefined): void
}

/**
 * Telegram through grammY: long polling for messages, replies split at 4096 characters on line
 * boundaries, a typing indicator while the handler works, approvals with inline buttons only the
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
  readonly #approvals = new Map<string, PendingApproval>()
  readonly #tasks = new Set<Promise<unknown>>()
  /**
   * One long poll per bot token: `telegram-bot:<first 16 hex of the token's SHA-256>`. With several
   * servers on one database only the holder of this key's lease polls (ChannelAdapter.exclusive).
   */
  readonly exclusive: string
  #inbound: InboundHandler | undefined
  #receiving: AbortController | undefined
  #polling: Promise<void> | undefined
  #stopping: Promise<void> | undefined
  /** The lease of a cluster duty that receiving runs under (`ChannelStartOptions.validForMs`). */
  #validForMs: (() => number) | undefined
  /** Set by `start()` until the first `getUpdates` succeeds; that one poll does not wait (timeout 0). */
  #firstPoll: (() => void) | undefined

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
    this.exclusive = `telegram-bot:${createHash('sha256').update(options.token).digest('hex').slice(0, 16)}`
    this.#options = options
    this.#scrubber = new SecretScrubber([options.token])
    this.#clock = options.clock ?? systemClock
    this.#logger = options.logger ?? silentLogger
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
        maxRetryAttempts: options.maxRetryAttempts ?? 3,
        maxDelaySeconds: options.maxRetryAfterSeconds ?? 60,
        // Network errors: grammY's poll loop retries getUpdates; sends use the shared helper (bounded).
        rethrowHttpErrors: true,
      }),
    )
    // start() resolves when polling really runs: its first getUpdates returns at once, and a 401 or
    // 409 there rejects start() instead of surfacing later.
    // Under a cluster lease, no poll outlives it: none starts once the lease may have run out (a
    // server resumed after a stall polls no more), and each waits less than what is left.
    this.#bot.api.config.use(async (previous, method, payload, signal) => {
      const validForMs = this.#validForMs
      if (method !== 'getUpdates' || validForMs === undefined) return previous(method, payload, signal)
      const asked = Number((payload as { timeout?: number }).timeout ?? 0)
      const timeout = Math.min(asked, Math.floor((validForMs() - MIN_POLL_LEASE_MS) / 1000))
      // Too little left for a poll of a second: none is sent (grammY tries again in 3 s, by when
      // the lease has been renewed or the duty ended).
      if (timeout < Math.min(1, asked))
        throw new ChannelError(
          'CHANNEL_RECEIVE_FAILED',
          `${this.name}: the poll lease may run out: not polling`,
          { data: { channel: this.name } },
        )
      return previous(method, { ...payload, timeout }, signal)
    })
    this.#bot.api.config.use(async (previous, method, payload, signal) => {
      const confirm = method === 'getUpdates' ? this.#firstPoll : undefined
      if (confirm === undefined) return previous(method, payload, signal)
      const result = await previous(method, { ...payload, timeout: 0 }, signal)
      if (result.ok) {
        if (this.#firstPoll === confirm) this.#firstPoll = undefined
        confirm()
      }
      return result
    })
    this.#bot.on('callback_query:data', (context) => this.#onCallback(context))
    this.#bot.on('message', (context) => this.#onMessage(context))
    this.#bot.catch((error) =>
      this.#logger.error('telegram update failed', {
        channel: this.name,
        error: this.#scrubber.error(error.error),
      }),
    )
  }

  /** True while long polling runs. */
  get receiving(): boolean {
    return this.#receiving !== undefined && this.#bot.isRunning()
  }

  /** Sends `text` to `chatId` (or the first allowed chat) in parts of at most 4096 characters. */
  async send(chatId: string | undefined, text: string, options: ChannelCallOptions = {}): Promise<void> {
    options.signal?.throwIfAborted()
    const chat = this.#chat(chatId)
    await this.#sendParts(chat, text, undefined, options.signal)
  }

  /**
   * Validates the token (`getMe`) and starts long polling; resolves once the first `getUpdates`
   * answered. Rejects with `CHANNEL_AUTH_FAILED` for a bad token, `CHANNEL_CONFLICT` when another
   * process polls it, `CHANNEL_SEND_FAILED` when the Bot API cannot be reached. A 409 later ends
   * receiving and goes to `options.onError`.
   */
  async start(inbound: InboundHandler, options: ChannelStartOptions): Promise<void> {
    options.signal.throwIfAborted()
    if (this.#receiving !== undefined) return
    await this.#stopping
    this.#stopping = undefined
    // getMe here, bounded, rather than grammY's init(), which retries network errors for ever.
    this.#bot.botInfo = await this.#call('getMe', options.signal, (signal) =>
      this.#bot.api.getMe(grammySignal(signal)),
    )
    if (this.#allowed.length === 0)
      this.#logger.warn('telegram has no allowed chats: every inbound message is ignored', {
        channel: this.name,
      })
    const receiving = new AbortController()
    this.#receiving = receiving
    this.#inbound = inbound
    this.#validForMs = options.validForMs
    const onAbort = (): void => void this.stop()
    options.signal.addEventListener('abort', onAbort, { once: true })
    let confirmed = false
    const running = new Promise<void>((resolve, reject) => {
      this.#firstPoll = () => {
        confirmed = true
        resolve()
      }
      this.#polling = this.#bot
        .start({
          allowed_updates: ['message', 'callback_query'],
          timeout: this.#options.pollTimeoutSeconds ?? 30,
        })
        .then(
          () => {
            // Stopped before the first poll answered.
            if (!confirmed) resolve()
          },
          (error: unknown) => {
            const failure = this.#failure('getUpdates', error)
            if (this.#receiving === receiving) this.#receiving = undefined
            this.#firstPoll = undefined
            options.signal.removeEventListener('abort', onAbort)
            if (!confirmed) reject(failure)
            else {
              this.#logger.error('telegram stopped receiving', { channel: this.name, error: failure })
              options.onError?.(failure)
            }
          },
        )
    })
    const startTimeoutMs = this.#options.startTimeoutMs ?? 30_000
    const timeout = timeoutSignal(startTimeoutMs)
    try {
      await abortable(running, AbortSignal.any([options.signal, timeout.signal]))
    } catch (error) {
      if (confirmed) return
      // grammY retries network errors of deleteWebhook and getUpdates for ever: give up, stop it.
      await this.stop()
      if (options.signal.aborted) throw options.signal.reason
      if (ChannelError.is(error)) throw error
      throw new ChannelError(
        'CHANNEL_RECEIVE_FAILED',
        `${this.name}: long polling did not start within ${startTimeoutMs} ms (the Bot API kept failing)`,
        { data: { channel: this.name } },
      )
    } finally {
      timeout.clear()
    }
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
    if (this.#approvals.size >= (this.#options.maxPendingApprovals ?? 20))
      throw new ChannelError('CHANNEL_APPROVALS_FULL', `${this.name}: too many approvals are pending`, {
        data: { channel: this.name },
      })
    const id = randomBytes(9).toString('base64url')
    let settle: (approved: boolean | undefined) => void = () => undefined
    const answered = new Promise<boolean | undefined>((resolve) => {
      settle = resolve
    })
    // Registered before the message is sent: a press can be polled before sendMessage returns.
    const pending: PendingApproval = {
      chatId: chat,
      userId,
      messageId: undefined,
      answer: (value) => settle(value),
    }
    this.#approvals.set(id, pending)
    const timer = this.#clock.setTimeout(
      () => pending.answer(undefined),
      this.#options.approvalTimeoutMs ?? 10 * 60_000,
    )
    try {
      // Not the caller's signal: a send cut short could leave buttons whose message id is unknown.
      const sent = await this.#call(
        fitsOneMessage(request) ? 'sendMessage' : 'sendDocument',
        AbortSignal.timeout(30_000),
        (callSignal) => this.#sendApproval(chat, id, request, callSignal),
      )
      pending.messageId = sent.message_id
      return await abortable(answered, signal)
    } finally {
      this.#clock.clearTimeout(timer)
      this.#approvals.delete(id)
      if (pending.messageId !== undefined) this.#removeButtons(chat, pending.messageId)
    }
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
    this.#receiving?.abort(new DOMException('the telegram channel is stopping', 'AbortError'))
    this.#receiving = undefined
    this.#firstPoll = undefined
    for (const pending of this.#approvals.values()) pending.answer(undefined)
    const limit = AbortSignal.timeout(this.#options.stopTimeoutMs ?? 5000)
    // bot.stop() aborts the long poll, then confirms the last update with one short getUpdates.
    if (this.#bot.isRunning())
      await abortable(this.#bot.stop(), limit).catch((error: unknown) =>
        this.#logger.warn('telegram did not stop polling cleanly', {
          channel: this.name,
          error: this.#scrubber.error(error),
        }),
      )
    await abortable(Promise.allSettled([this.#polling, ...this.#tasks]), limit).catch(() => undefined)
    this.#polling = undefined
    this.#inbound = undefined
  }

  #onMessage(context: Context): void {
    const message = context.message
    if (message === undefined) return
    const chatId = String(message.chat.id)
    if (!this.#allowedSet.has(chatId)) {
      // Never the text: a stranger's message is not ours to keep.
      this.#logger.warn('telegram message from a chat that is not allowed was ignored', {
        channel: this.name,
        chatId,
        updateId: context.update.update_id,
      })
      return
    }
    const inbound = this.#inbound
    const receiving = this.#receiving
    if (message.text === undefined || message.from === undefined || message.from.is_bot) return
    if (inbound === undefined || receiving === undefined) return
    this.#track(
      this.#converse(inbound, receiving.signal, {
        chatId,
        userId: String(message.from.id),
        text: message.text,
        messageId: message.message_id,
        ...(message.from.username === undefined ? {} : { userName: message.from.username }),
      }),
    )
  }

  async #converse(
    inbound: InboundHandler,
    signal: AbortSignal,
    message: { chatId: string; userId: string; text: string; messageId: number; userName?: string },
  ): Promise<void> {
    const stopTyping = this.#typing(message.chatId, signal)
    let reply: string | undefined
    try {
      reply = await inbound(
        {
          channel: this.name,
          chatId: message.chatId,
          userId: message.userId,
          text: message.text,
          messageId: String(message.messageId),
          ...(message.userName === undefined ? {} : { userName: message.userName }),
        },
        { signal },
      )
    } catch (error) {
      if (!signal.aborted)
        this.#logger.error('telegram inbound handler failed', {
          channel: this.name,
          chatId: message.chatId,
          error: this.#scrubber.error(error),
        })
      return
    } finally {
      stopTyping()
    }
    if (reply === undefined || reply.trim() === '' || signal.aborted) return
    await this.#sendParts(message.chatId, reply, message.messageId, signal).catch((error: unknown) => {
      if (!signal.aborted)
        this.#logger.error('telegram reply failed', {
          channel: this.name,
          chatId: message.chatId,
          error: ChannelError.is(error) ? error : this.#scrubber.error(error),
        })
    })
  }

  /** Sends `typing` now and every `typingIntervalMs` until the returned function is called. */
  #typing(chatId: string, signal: AbortSignal): () => void {
    let stopped = false
    let timer: unknown
    const tick = (): void => {
      if (stopped || signal.aborted) return
      this.#track(
        this.#bot.api
          .sendChatAction(chatId, 'typing', undefined, grammySignal(signal))
          .catch((error: unknown) => {
            if (!signal.aborted)
              this.#logger.debug('telegram typing indicator failed', {
                channel: this.name,
                error: this.#scrubber.error(error),
              })
          }),
      )
      timer = this.#clock.setTimeout(tick, this.#options.typingIntervalMs ?? 4000)
    }
    tick()
    return () => {
      stopped = true
      if (timer !== undefined) this.#clock.clearTimeout(timer)
    }
  }

  #onCallback(context: Context): void {
    const query = context.callbackQuery
    if (query?.data === undefined) return
    const chatId = query.message === undefined ? undefined : String(query.message.chat.id)
    if (chatId === undefined || !this.#allowedSet.has(chatId)) {
      this.#logger.warn('telegram button press from a chat that is not allowed was ignored', {
        channel: this.name,
        ...(chatId === undefined ? {} : { chatId }),
        updateId: context.update.update_id,
      })
      return
    }
    const match = CALLBACK_DATA.exec(query.data)
    const pending = match === null ? undefined : this.#approvals.get(match[1] as string)
    const userId = String(query.from.id)
    let notice: { text: string; show_alert?: boolean }
    if (pending === undefined || pending.chatId !== chatId)
      notice = { text: 'This approval is no longer pending.' }
    else if (pending.userId !== userId) {
      this.#logger.warn('telegram approval press by another user was refused', {
        channel: this.name,
        chatId,
        userId,
      })
      notice = { text: 'Only the user who asked can answer this approval.', show_alert: true }
    } else {
      const approved = match?.[2] === 'yes'
      pending.answer(approved)
      notice = { text: approved ? 'Approved' : 'Denied' }
    }
    this.#track(
      this.#bot.api.answerCallbackQuery(query.id, notice).catch((error: unknown) =>
        this.#logger.debug('telegram answerCallbackQuery failed', {
          channel: this.name,
          error: this.#scrubber.error(error),
        }),
      ),
    )
  }

  /**
   * The approval message with its buttons. The whole request when it fits one message; otherwise a
   * document holding the whole request, whose caption says why and carries the buttons, so the
   * buttons never come with a shortened request alone (the security notes' SEC-9).
   */
  #sendApproval(
    chat: string,
    id: string,
    request: ChannelApprovalRequest,
    signal: AbortSignal | undefined,
  ): Promise<{ readonly message_id: number }> {
    const reply_markup = {
      inline_keyboard: [
        [
          { text: 'Approve', callback_data: `lango:${id}:yes` },
          { text: 'Deny', callback_data: `lango:${id}:no` },
        ],
      ],
    }
    if (fitsOneMessage(request))
      return this.#bot.api.sendMessage(
        chat,
        approvalText(request),
        { link_preview_options: { is_disabled: true }, reply_markup },
        grammySignal(signal),
      )
    const whole = `${approvalHeadline(request)}\n\n${request.summary}\n`
    const caption = `${approvalHeadline(request)}\nThe request is ${request.summary.length} characters, more than one Telegram message holds: the attached file has all of it, every command whole. Read it before you answer.\n\n${ONLY_THE_ASKER}`
    return this.#bot.api.sendDocument(
      chat,
      new InputFile(new TextEncoder().encode(whole), `approval-${id}.txt`),
      { caption: caption.slice(0, TELEGRAM_CAPTION_LIMIT), reply_markup },
      grammySignal(signal),
    )
  }

  #removeButtons(chatId: string, messageId: number): void {
    this.#track(
      this.#bot.api
        .editMessageReplyMarkup(chatId, messageId, { reply_markup: { inline_keyboard: [] } })
        .catch((error: unknown) =>
          this.#logger.debug('telegram could not remove approval buttons', {
            channel: this.name,
            error: this.#scrubber.error(error),
          }),
        ),
    )
  }

  async #sendParts(
    chatId: string,
    text: string,
    replyTo: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    let first = true
    for (const part of splitMessage(text, TELEGRAM_MESSAGE_LIMIT)) {
      const other = {
        // Telegram would fetch a URL in an agent's text for a preview: an exfiltration path.
        link_preview_options: { is_disabled: true },
        ...(first && replyTo !== undefined
          ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }
          : {}),
      }
      await this.#call('sendMessage', signal, (callSignal) =>
        this.#bot.api.sendMessage(chatId, part, other, grammySignal(callSignal)),
      )
      first = false
    }
  }

  /** One Bot API call: network errors retried (bounded), every failure a scrubbed `ChannelError`. */
  async #call<T>(
    method: string,
    signal: AbortSignal | undefined,
    call: (signal: AbortSignal | undefined) => Promise<T>,
  ): Promise<T> {
    try {
      return await withRetry(() => call(signal), {
        maxAttempts: 3,
        ...this.#options.networkRetry,
        clock: this.#clock,
        ...(signal === undefined ? {} : { signal }),
        classify: (error) => ({ retry: error instanceof HttpError }),
      })
    } catch (error) {
      if (signal?.aborted) throw signal.reason
      throw this.#failure(method, error)
    }
  }

  /** The chat a send goes to: the given one or the first allowed; it must be allowed. */
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

  #failure(method: string, error: unknown): ChannelError {
    if (ChannelError.is(error)) return error
    const cause = this.#scrubber.error(error)
    const data: Record<string, unknown> = { channel: this.name, method }
    if (error instanceof GrammyError) {
      data.status = error.error_code
      const description = this.#scrubber.text(error.description).slice(0, 200)
      if (error.error_code === 401)
        return new ChannelError(
          'CHANNEL_AUTH_FAILED',
          `${this.name}: the Bot API rejected the bot token (401)`,
          {
            cause,
            data,
          },
        )
      if (error.error_code === 409)
        return new ChannelError(
          'CHANNEL_CONFLICT',
          `${this.name}: Telegram answered 409 Conflict: another process is receiving updates for this bot token (only one may long-poll it); stop the other instance or use another bot`,
          { cause, data },
        )
      if (error.parameters.retry_after !== undefined) data.retryAfterSeconds = error.parameters.retry_after
      return new ChannelError(
        'CHANNEL_SEND_FAILED',
        `${this.name}: ${method} failed: ${error.error_code} ${description}`,
        { cause, data },
      )
    }
    if (error instanceof HttpError)
      return new ChannelError(
        'CHANNEL_SEND_FAILED',
        `${this.name}: ${method} failed: the Bot API could not be reached`,
        {
          cause,
          data,
        },
      )
    return new ChannelError('CHANNEL_SEND_FAILED', `${this.name}: ${method} failed`, { cause, data })
  }

  #track(task: Promise<unknown>): void {
    this.#tasks.add(task)
    const untrack = (): void => {
      this.#tasks.delete(task)
    }
    task.then(untrack, untrack)
  }
}
