import type { Clock } from '@lango/cron'
import type { Bot, Context } from 'grammy'
import type { Logger } from '../../logger.js'
import { ChannelError } from '../errors.js'
import type { SecretScrubber } from '../scrub.js'
import type { InboundHandler } from '../types.js'
import { type BotCallContext, grammySignal } from './api.js'
import { sendParts } from './send.js'

/** What {@link TelegramConversations} needs from its channel. */
export interface TelegramConversationsOptions {
  readonly name: string
  readonly bot: Bot
  /** Messages from any other chat are ignored (logged without their text). */
  readonly allowedChats: ReadonlySet<string>
  readonly clock: Clock
  readonly logger: Logger
  readonly scrubber: SecretScrubber
  readonly calls: BotCallContext
  readonly typingIntervalMs: number
  /** The handler given to the channel's `start()`; `undefined` when not started. */
  inbound(): InboundHandler | undefined
  /** Aborted when receiving ends; `undefined` when not receiving. */
  receiving(): AbortSignal | undefined
  /** Keeps a background task for the channel's `stop()` to wait on. */
  track(task: Promise<unknown>): void
}

/**
 * Inbound messages: each one from an allowed chat goes to the channel's handler under a typing
 * indicator, and its reply goes back as a reply to it.
 */
export class TelegramConversations {
  readonly #options: TelegramConversationsOptions

  constructor(options: TelegramConversationsOptions) {
    this.#options = options
  }

  /** Takes a message: from an allowed chat, by a user, with text, while receiving; else ignored. */
  onMessage(context: Context): void {
    const message = context.message
    if (message === undefined) return
    const chatId = String(message.chat.id)
    if (!this.#options.allowedChats.has(chatId)) {
      // Never the text: a stranger's message is not ours to keep.
      this.#options.logger.warn('telegram message from a chat that is not allowed was ignored', {
        channel: this.#options.name,
        chatId,
        updateId: context.update.update_id,
      })
      return
    }
    const inbound = this.#options.inbound()
    const receiving = this.#options.receiving()
    if (message.from === undefined || message.from.is_bot) return
    if (inbound === undefined || receiving === undefined) return
    // Only text reaches the agent. A photo, file or voice note with a caption goes on as its
    // caption, saying what was left out; one without says so to the person at once, instead of
    // being met with silence.
    const attached = attachmentKind(message)
    const words = message.text ?? message.caption
    if (words === undefined || words.trim() === '') {
      if (attached === undefined) return
      this.#options.track(
        this.#reply(
          chatId,
          message.message_id,
          `I can only read text, so this ${attached} was not passed on. Send what you need as a text message.`,
          receiving,
        ),
      )
      return
    }
    this.#options.track(
      this.#converse(inbound, receiving, {
        chatId,
        userId: String(message.from.id),
        text:
          attached === undefined
            ? words
            : `${words}\n\n[The user attached a ${attached} to this message; only its caption reached you, the ${attached} itself cannot be read here.]`,
        messageId: message.message_id,
        ...(message.from.username === undefined ? {} : { userName: message.from.username }),
      }),
    )
  }

  /** Sends `text` as a reply to message `messageId`; a failure is logged. */
  async #reply(chatId: string, messageId: number, text: string, signal: AbortSignal): Promise<void> {
    await sendParts(this.#options.bot, this.#options.calls, chatId, text, messageId, signal).catch(
      (error: unknown) => {
        if (!signal.aborted)
          this.#options.logger.error('telegram reply failed', {
            channel: this.#options.name,
            chatId,
            error: ChannelError.is(error) ? error : this.#options.scrubber.error(error),
          })
      },
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
          channel: this.#options.name,
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
        this.#options.logger.error('telegram inbound handler failed', {
          channel: this.#options.name,
          chatId: message.chatId,
          error: this.#options.scrubber.error(error),
        })
      return
    } finally {
      stopTyping()
    }
    if (reply === undefined || reply.trim() === '' || signal.aborted) return
    await this.#reply(message.chatId, message.messageId, reply, signal)
  }

  /** Sends `typing` now and every `typingIntervalMs` until the returned function is called. */
  #typing(chatId: string, signal: AbortSignal): () => void {
    let stopped = false
    let timer: unknown
    const tick = (): void => {
      if (stopped || signal.aborted) return
      this.#options.track(
        this.#options.bot.api
          .sendChatAction(chatId, 'typing', undefined, grammySignal(signal))
          .catch((error: unknown) => {
            if (!signal.aborted)
              this.#options.logger.debug('telegram typing indicator failed', {
                channel: this.#options.name,
                error: this.#options.scrubber.error(error),
              })
          }),
      )
      timer = this.#options.clock.setTimeout(tick, this.#options.typingIntervalMs)
    }
    tick()
    return () => {
      stopped = true
      if (timer !== undefined) this.#options.clock.clearTimeout(timer)
    }
  }
}

/** Message fields of the Bot API that carry something other than text, and what to call each. */
const ATTACHMENTS = [
  ['photo', 'photo'],
  ['document', 'file'],
  ['voice', 'voice message'],
  ['audio', 'audio file'],
  ['video', 'video'],
  ['video_note', 'video message'],
  ['animation', 'animation'],
  ['sticker', 'sticker'],
  ['location', 'location'],
  ['contact', 'contact'],
  ['poll', 'poll'],
] as const

/** What a message carries besides text (`photo`, `file`, …), or undefined for none. */
function attachmentKind(message: object): string | undefined {
  const fields = message as Record<string, unknown>
  return ATTACHMENTS.find(([field]) => fields[field] !== undefined)?.[1]
}
