const CHAT_CHANNELS = new Set(['telegram', 'slack', 'discord'])

/**
 * The delivery target implied by a session key: `telegram:<chat>:<user>` → `telegram:<chat>`
 * (likewise slack and discord). Automation sessions (`cron:…`, `bg:…`, `workflow:…`) and unknown
 * shapes imply nothing.
 */
export function deliveryTargetFromSession(sessionKey: string | undefined): string | undefined {
  if (sessionKey === undefined) return undefined
  const [channel, chat] = sessionKey.split(':')
  if (channel === undefined || chat === undefined || chat === '') return undefined
  return CHAT_CHANNELS.has(channel) ? `${channel}:${chat}` : undefined
}

/**
 * Delivery targets for a call: the explicit ones when given, else the one detected from the
 * session, else the configured default (possibly none).
 */
export function resolveDeliveryTargets(
  explicit: readonly string[] | undefined,
  sessionKey: string | undefined,
  fallback: readonly string[] = [],
): string[] {
  if (explicit !== undefined && explicit.length > 0) return [...explicit]
  const detected = deliveryTargetFromSession(sessionKey)
  return detected === undefined ? [...fallback] : [detected]
}
