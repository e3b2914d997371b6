import type { Bot } from 'grammy'
import { splitMessage } from '../split.js'
import { type BotCallContext, callBot, grammySignal } from './api.js'
import { TELEGRAM_MESSAGE_LIMIT } from './format.js'

/**
 * Sends `text` to `chatId` in parts of at most 4096 characters split on line boundaries, the first
 * a reply to `replyTo` when given; link previews off.
 */
export async function sendParts(
  bot: Bot,
  calls: BotCallContext,
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
    await callBot(calls, 'sendMessage', signal, (callSignal) =>
      bot.api.sendMessage(chatId, part, other, grammySignal(callSignal)),
    )
    first = false
  }
}
