import { ChannelError } from './errors.js'
import type { ChannelAdapter } from './types.js'

/** A channel's registered name: lower-case, starts with a letter, at most 32 characters. */
export const CHANNEL_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/

/** Longest chat or user id a target or session key may carry. */
const MAX_ID_LENGTH = 256

/** A parsed delivery target. */
interface ChannelTarget {
  readonly channel: string
  /** Undefined for a bare target (`telegram`): the channel's default chat. */
  readonly chatId: string | undefined
}

/**
 * Parses `<channel>` or `<channel>:<chat>`. Everything after the first `:` is the chat id, so a
 * channel decides what its ids look like; an empty id, an oversized one or a malformed channel name
 * is `CHANNEL_INVALID_TARGET`.
 */
export function parseTarget(target: string): ChannelTarget {
  const colon = target.indexOf(':')
  const channel = colon === -1 ? target : target.slice(0, colon)
  const chatId = colon === -1 ? undefined : target.slice(colon + 1)
  if (!CHANNEL_NAME_PATTERN.test(channel))
    throw new ChannelError(
      'CHANNEL_INVALID_TARGET',
      'a delivery target is <channel> or <channel>:<chat id>',
      {
        data: { target: target.slice(0, 80) },
      },
    )
  if (chatId !== undefined && (chatId === '' || chatId.length > MAX_ID_LENGTH || /\s/.test(chatId)))
    throw new ChannelError(
      'CHANNEL_INVALID_TARGET',
      `the chat id of a ${channel} target must be 1-${MAX_ID_LENGTH} characters without spaces`,
      { data: { channel } },
    )
  return { channel, chatId }
}

/** True when `id` may be the chat or user part of a session key: non-empty, bounded, no `:` or whitespace. */
export function isSessionIdPart(id: string): boolean {
  return id !== '' && id.length <= MAX_ID_LENGTH && !/[:\s]/.test(id)
}

/** The session key of a conversation: `<channel>:<chat>:<user>` (ARCHITECTURE §9). */
export function sessionKeyOf(message: {
  readonly channel: string
  readonly chatId: string
  readonly userId: string
}): string {
  return `${message.channel}:${message.chatId}:${message.userId}`
}

/** The parts of a `<channel>:<chat>:<user>` session key, or undefined for any other shape (`cron:…`). */
export function parseSessionKey(
  sessionKey: string,
): { readonly channel: string; readonly chatId: string; readonly userId: string } | undefined {
  const parts = sessionKey.split(':')
  if (parts.length !== 3) return undefined
  const [channel, chatId, userId] = parts as [string, string, string]
  if (!CHANNEL_NAME_PATTERN.test(channel) || !isSessionIdPart(chatId) || !isSessionIdPart(userId))
    return undefined
  return { channel, chatId, userId }
}

/** The chat channels `@lango/tools` (delivery.ts) detects targets for. */
/**
 * The delivery target implied by a session key (`telegram:123:456` → `telegram:123`, a custom
 * channel's `<name>:<chat>:<user>` → `<name>:<chat>`): `@lango/tools`' rule, the one the tools use
 * to default a job's delivery to the chat that created it.
 */
export { deliveryTargetFromSession } from '@lango/tools'

/** What a channel id may be on a service addressed by them: its default, its allow-list and its form. */
export interface ChannelIdRule {
  readonly defaultChannel?: string | undefined
  readonly allowedChannels?: readonly string[] | undefined
  readonly pattern: RegExp
  readonly expected: string
}

/**
 * The channel a send goes to on a service addressed by channel ids (Slack, Discord): `chatId`, or
 * else the default channel; checked against the id's `pattern` and the allow-list. Throws
 * `CHANNEL_NO_DEFAULT_CHAT`, `CHANNEL_INVALID_TARGET` (with `expected`) or
 * `CHANNEL_TARGET_NOT_ALLOWED`.
 */
export function resolveChannelId(name: string, chatId: string | undefined, options: ChannelIdRule): string {
  const channel = chatId ?? options.defaultChannel
  if (channel === undefined)
    throw new ChannelError('CHANNEL_NO_DEFAULT_CHAT', `${name}: a bare target needs a default channel`, {
      data: { channel: name },
    })
  if (!options.pattern.test(channel))
    throw new ChannelError('CHANNEL_INVALID_TARGET', `${name}: ${options.expected}`, {
      data: { channel: name },
    })
  if (options.allowedChannels !== undefined && !options.allowedChannels.includes(channel))
    throw new ChannelError('CHANNEL_TARGET_NOT_ALLOWED', `${name}: channel ${channel} is not allowed`, {
      data: { channel: name, chatId: channel },
    })
  return channel
}

/**
 * Why nothing can be delivered to `target` through `channels` (the router), or undefined: a malformed
 * target (the parser's message), a channel that is not there (`the slack channel is not
 * configured`), or a chat its adapter refuses (`telegram: chat 99 is not an allowed chat`, through
 * the adapter's optional `checkChat`). The check the tools get as `checkTarget`, and what start-up
 * says of the configured targets.
 */
export function undeliverableBecause(
  target: string,
  channels: { get(name: string): ChannelAdapter | undefined },
): string | undefined {
  try {
    const { channel, chatId } = parseTarget(target)
    const adapter = channels.get(channel)
    if (adapter === undefined) return `the ${channel} channel is not configured`
    const checked: unknown = adapter.checkChat?.(chatId)
    // An async checkChat (against the contract) is not awaited; its rejection must not go unhandled.
    if (checked instanceof Promise) checked.catch(() => {})
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}
