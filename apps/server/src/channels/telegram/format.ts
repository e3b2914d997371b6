import type { ChannelApprovalRequest } from '../types.js'

/** Telegram's limit on one message's text. */
export const TELEGRAM_MESSAGE_LIMIT = 4096
/** Telegram's limit on a document's caption. */
const TELEGRAM_CAPTION_LIMIT = 1024
/** A numeric chat id, or a public channel's `@username`. */
export const TELEGRAM_CHAT = /^(?:-?\d{1,20}|@[A-Za-z][A-Za-z0-9_]{3,63})$/

const ONLY_THE_ASKER = 'Only the user who asked can answer.'

/** The first line of an approval message: the safety and the tool. */
function approvalHeadline(request: ChannelApprovalRequest): string {
  return `Approval needed (${request.safety}): ${request.toolName}`
}

/** An approval as one message: the headline, the whole request, who may answer. */
export function approvalText(request: ChannelApprovalRequest): string {
  return `${approvalHeadline(request)}\n${request.summary}\n\n${ONLY_THE_ASKER}`
}

/** True when the whole approval fits one Telegram message (else it goes as a document). */
export function fitsOneMessage(request: ChannelApprovalRequest): boolean {
  return approvalText(request).length <= TELEGRAM_MESSAGE_LIMIT
}

/** The text of the file an approval too long for one message is attached as: the whole request. */
export function approvalDocument(request: ChannelApprovalRequest): string {
  return `${approvalHeadline(request)}\n\n${request.summary}\n`
}

/** The caption of that file: why the request is attached, who may answer; within Telegram's limit. */
export function approvalCaption(request: ChannelApprovalRequest): string {
  const caption = `${approvalHeadline(request)}\nThe request is ${request.summary.length} characters, more than one Telegram message holds: the attached file has all of it, every command whole. Read it before you answer.\n\n${ONLY_THE_ASKER}`
  return caption.slice(0, TELEGRAM_CAPTION_LIMIT)
}
