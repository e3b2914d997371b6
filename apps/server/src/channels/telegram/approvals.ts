import { randomBytes } from 'node:crypto'
import type { Clock } from '@lango/cron'
import { type Bot, type Context, InputFile } from 'grammy'
import { abortable } from '../../abort.js'
import { formatDuration } from '../../config/rules.js'
import type { Logger } from '../../logger.js'
import { ChannelError } from '../errors.js'
import type { SecretScrubber } from '../scrub.js'
import type { ChannelApprovalRequest } from '../types.js'
import { grammySignal } from './api.js'
import { approvalCaption, approvalDocument, approvalText, fitsOneMessage } from './format.js'

/** `lango:<approval id>:yes|no`: well under Telegram's 64-byte `callback_data` limit. */
const CALLBACK_DATA = /^lango:([A-Za-z0-9_-]{1,32}):(yes|no)$/

interface PendingApproval {
  readonly chatId: string
  readonly userId: string
  messageId: number | undefined
  answer(approved: boolean | undefined): void
}

/** What {@link TelegramApprovals} needs from its channel. */
export interface TelegramApprovalsOptions {
  readonly name: string
  readonly bot: Bot
  /** Button presses from any other chat are ignored. */
  readonly allowedChats: ReadonlySet<string>
  readonly clock: Clock
  readonly logger: Logger
  readonly scrubber: SecretScrubber
  readonly maxPending: number
  readonly timeoutMs: number
  /** The channel's Bot API call: network errors retried, failures scrubbed. */
  call<T>(
    method: string,
    signal: AbortSignal | undefined,
    call: (signal: AbortSignal | undefined) => Promise<T>,
  ): Promise<T>
  /** Keeps a background task for the channel's `stop()` to wait on. */
  track(task: Promise<unknown>): void
}

/**
 * Approvals with inline Approve / Deny buttons only the asking user can press, always sent with the
 * whole request; the callback queries of those buttons answer them.
 */
export class TelegramApprovals {
  readonly #options: TelegramApprovalsOptions
  readonly #pending = new Map<string, PendingApproval>()
  /** Set by {@link endAll}: approvals ending unanswered from then on ended with the channel's stop. */
  #stopped = false

  constructor(options: TelegramApprovalsOptions) {
    this.#options = options
  }

  /**
   * Asks `userId` in `chat` (an allowed chat) and waits for the press. Resolves `undefined` after
   * `timeoutMs` or on {@link endAll}; rejects with `signal.reason` when aborted. The buttons are
   * removed once it ends.
   */
  async request(
    chat: string,
    userId: string,
    request: ChannelApprovalRequest,
    signal: AbortSignal,
  ): Promise<boolean | undefined> {
    const { name, clock } = this.#options
    if (this.#pending.size >= this.#options.maxPending)
      throw new ChannelError('CHANNEL_APPROVALS_FULL', `${name}: too many approvals are pending`, {
        data: { channel: name },
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
    this.#pending.set(id, pending)
    /** Why the approval ended without a press, to tell the person who was asked. */
    let unanswered: 'timeout' | 'stopped' | undefined
    const timer = clock.setTimeout(() => {
      unanswered ??= 'timeout'
      pending.answer(undefined)
    }, this.#options.timeoutMs)
    try {
      // Not the caller's signal: a send cut short could leave buttons whose message id is unknown.
      const sent = await this.#options.call(
        fitsOneMessage(request) ? 'sendMessage' : 'sendDocument',
        AbortSignal.timeout(30_000),
        (callSignal) => this.#send(chat, id, request, callSignal),
      )
      pending.messageId = sent.message_id
      return await abortable(answered, signal)
    } finally {
      clock.clearTimeout(timer)
      this.#pending.delete(id)
      if (this.#stopped) unanswered ??= 'stopped'
      if (pending.messageId !== undefined) {
        this.#removeButtons(chat, pending.messageId)
        // Buttons that just vanish leave the person guessing: say what became of the request.
        if (unanswered !== undefined)
          this.#notify(
            chat,
            pending.messageId,
            unanswered === 'timeout'
              ? `No answer within ${formatDuration(this.#options.timeoutMs)} (approvals.timeout): denied, not run.`
              : 'The server stopped before an answer: not run. Ask again once it is back.',
          )
      }
    }
  }

  /** Ends every pending approval with no answer (the channel stops); each asked person is told. */
  endAll(): void {
    this.#stopped = true
    for (const pending of this.#pending.values()) pending.answer(undefined)
  }

  /** Answers a press of an approval's button: only the asking user's, in the chat it was asked in. */
  onCallback(context: Context): void {
    const { name, logger, scrubber } = this.#options
    const query = context.callbackQuery
    if (query?.data === undefined) return
    const chatId = query.message === undefined ? undefined : String(query.message.chat.id)
    if (chatId === undefined || !this.#options.allowedChats.has(chatId)) {
      logger.warn('telegram button press from a chat that is not allowed was ignored', {
        channel: name,
        ...(chatId === undefined ? {} : { chatId }),
        updateId: context.update.update_id,
      })
      return
    }
    const match = CALLBACK_DATA.exec(query.data)
    const pending = match === null ? undefined : this.#pending.get(match[1] as string)
    const userId = String(query.from.id)
    let notice: { text: string; show_alert?: boolean }
    if (pending === undefined || pending.chatId !== chatId)
      notice = { text: 'This approval is no longer pending.' }
    else if (pending.userId !== userId) {
      logger.warn('telegram approval press by another user was refused', {
        channel: name,
        chatId,
        userId,
      })
      notice = { text: 'Only the user who asked can answer this approval.', show_alert: true }
    } else {
      const approved = match?.[2] === 'yes'
      pending.answer(approved)
      notice = { text: approved ? 'Approved' : 'Denied' }
    }
    this.#options.track(
      this.#options.bot.api.answerCallbackQuery(query.id, notice).catch((error: unknown) =>
        logger.debug('telegram answerCallbackQuery failed', {
          channel: name,
          error: scrubber.error(error),
        }),
      ),
    )
  }

  /**
   * The approval message with its buttons. The whole request when it fits one message; otherwise a
   * document holding the whole request, whose caption says why and carries the buttons, so the
   * buttons never come with a shortened request alone (the security notes' SEC-9).
   */
  #send(
    chat: string,
    id: string,
    request: ChannelApprovalRequest,
    signal: AbortSignal | undefined,
  ): Promise<{ readonly message_id: number }> {
    const { api } = this.#options.bot
    const reply_markup = {
      inline_keyboard: [
        [
          { text: 'Approve', callback_data: `lango:${id}:yes` },
          { text: 'Deny', callback_data: `lango:${id}:no` },
        ],
      ],
    }
    if (fitsOneMessage(request))
      return api.sendMessage(
        chat,
        approvalText(request),
        { link_preview_options: { is_disabled: true }, reply_markup },
        grammySignal(signal),
      )
    return api.sendDocument(
      chat,
      new InputFile(new TextEncoder().encode(approvalDocument(request)), `approval-${id}.txt`),
      { caption: approvalCaption(request), reply_markup },
      grammySignal(signal),
    )
  }

  /** Sends `text` as a reply to the approval message; a failure is logged at debug. */
  #notify(chatId: string, messageId: number, text: string): void {
    const { name, logger, scrubber } = this.#options
    this.#options.track(
      this.#options.bot.api
        .sendMessage(chatId, text, {
          reply_parameters: { message_id: messageId, allow_sending_without_reply: true },
        })
        .catch((error: unknown) =>
          logger.debug('telegram could not say how an approval ended', {
            channel: name,
            error: scrubber.error(error),
          }),
        ),
    )
  }

  #removeButtons(chatId: string, messageId: number): void {
    const { name, logger, scrubber } = this.#options
    this.#options.track(
      this.#options.bot.api
        .editMessageReplyMarkup(chatId, messageId, { reply_markup: { inline_keyboard: [] } })
        .catch((error: unknown) =>
          logger.debug('telegram could not remove approval buttons', {
            channel: name,
            error: scrubber.error(error),
          }),
        ),
    )
  }
}
