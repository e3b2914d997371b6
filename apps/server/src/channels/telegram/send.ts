import { type Bot, InputFile } from 'grammy'
import type { Logger } from '../../logger.js'
import { ATTACHMENT_NAME, attachmentNote, attachmentRefused } from '../attachment.js'
import { splitMessage } from '../split.js'
import { type BotCallContext, callBot, grammySignal } from './api.js'
import { TELEGRAM_MESSAGE_LIMIT } from './format.js'

/**
 * Sends `text` to `chatId` in parts of at most 4096 characters split on paragraph, code-fence and line
 * boundaries, the first a reply to `replyTo` when given; link previews off.
 */
export async function sendParts(
  bot: Bot,
  calls: BotCallContext,
  chatId: string,
  text: string,
  replyTo: number | undefined,
  signal: AbortSignal | undefined,
): Promise<void> {
  await sendMessages(bot, calls, chatId, splitMessage(text, TELEGRAM_MESSAGE_LIMIT), replyTo, signal)
}

/** How {@link sendLong} delivers a long text. */
interface LongTextOptions {
  /** More parts than this: the first part as a message, then the whole text as a document. */
  readonly attachAfterParts: number
  readonly logger: Logger
}

/**
 * Sends `text` to `chatId`: as messages when it splits into at most `attachAfterParts` parts, else as
 * its first part followed by the whole text as a document (`sendDocument`, `result.md`, with a short
 * caption). When Telegram refuses the document (413, 400: {@link attachmentRefused}) the other parts
 * follow as messages instead, so the chat gets the text either way.
 */
export async function sendLong(
  bot: Bot,
  calls: BotCallContext,
  chatId: string,
  text: string,
  options: LongTextOptions,
  signal: AbortSignal | undefined,
): Promise<void> {
  const parts = splitMessage(text, TELEGRAM_MESSAGE_LIMIT)
  if (parts.length <= options.attachAfterParts) {
    await sendMessages(bot, calls, chatId, parts, undefined, signal)
    return
  }
  await sendMessages(bot, calls, chatId, parts.slice(0, 1), undefined, signal)
  try {
    await callBot(calls, 'sendDocument', signal, (callSignal) =>
      bot.api.sendDocument(
        chatId,
        new InputFile(new TextEncoder().encode(text), ATTACHMENT_NAME),
        { caption: attachmentNote(text) },
        grammySignal(callSignal),
      ),
    )
  } catch (error) {
    if (signal?.aborted) throw signal.reason
    if (!attachmentRefused(error)) throw error
    options.logger.warn('telegram refused the attachment: sending the text as messages', {
      channel: calls.name,
      chatId,
      parts: parts.length,
      error,
    })
    await sendMessages(bot, calls, chatId, parts.slice(1), undefined, signal)
  }
}

async function sendMessages(
  bot: Bot,
  calls: BotCallContext,
  chatId: string,
  parts: readonly string[],
  replyTo: number | undefined,
  signal: AbortSignal | undefined,
): Promise<void> {
  let first = true
  for (const part of parts) {
    const other = {
      // Telegram would fetch a URL in an agent's text for a preview: an exfiltration path.
      link_preview_options: { is_disabled: true },
      ...(first && replyTo !== undefined
        ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }
        : {}),
    }
    await callBot(calls, 'sendMessage', signal, (callSignal) =>
      bot.api.sendMessage(chatId, part, other, grammySignal(callSignal)),
    )
    first = false
  }
}
