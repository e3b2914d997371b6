import { ToolError } from './errors.js'

/**
 * The host's check of a delivery target: why results sent there could not be delivered (`the slack
 * channel is not configured`), or undefined when they can be. Tools that take targets ask it before
 * anything is stored, run or asked about.
 */
export type DeliveryTargetCheck = (target: string) => string | undefined

/**
 * Refuses, as invalid parameters, the first of `targets` that `check` says cannot be delivered to:
 * a misspelt or unconfigured channel is told to the caller now, not found out at the first delivery.
 */
export function assertDeliverable(
  targets: readonly string[],
  check: DeliveryTargetCheck | undefined,
  field: string,
): void {
  if (check === undefined) return
  for (const target of targets) {
    const problem = check(target.trim())
    if (problem !== undefined)
      throw new ToolError(
        'TOOL_INVALID_PARAMETERS',
        `invalid parameters: ${field}: ${JSON.stringify(target.slice(0, 100))} cannot be delivered to: ${problem}`,
        { data: { field, target: target.slice(0, 100) } },
      )
  }
}

const CHAT_CHANNELS = new Set(['telegram', 'slack', 'discord'])
/** Session prefixes that are not chats: the automation's own runs and the host's APIs. */
const NOT_CHATS = new Set([
  'cron',
  'bg',
  'background',
  'workflow',
  'http',
  'openai',
  'cli',
  'mcp',
  'log',
  'webhook',
])
const CHANNEL_NAME = /^[a-z][a-z0-9_-]{0,31}$/

/**
 * The delivery target implied by a session key: `telegram:<chat>:<user>` → `telegram:<chat>`
 * (likewise slack and discord, also as `<channel>:<chat>`), and a custom channel's
 * `<channel>:<chat>:<user>` (exactly three parts) → `<channel>:<chat>`. Automation sessions
 * (`cron:…`, `bg:…`, `workflow:…`), API sessions (`http:…`, `openai:…`) and unknown shapes imply
 * nothing.
 * @example deliveryTargetFromSession('telegram:123:456') // 'telegram:123'
 */
export function deliveryTargetFromSession(sessionKey: string | undefined): string | undefined {
  if (sessionKey === undefined) return undefined
  const parts = sessionKey.split(':')
  const [channel, chat] = parts
  if (channel === undefined || chat === undefined || chat === '') return undefined
  if (CHAT_CHANNELS.has(channel)) return `${channel}:${chat}`
  const custom =
    parts.length === 3 && parts[2] !== '' && CHANNEL_NAME.test(channel) && !NOT_CHATS.has(channel)
  return custom ? `${channel}:${chat}` : undefined
}

/**
 * True when a call from a chat names a delivery target other than that chat's own and the
 * configured defaults (`fallback`): another person's chat, another channel. Results sent there are
 * read by someone who did not ask for them, so such a call needs a person's approval, who is shown
 * the targets (issue 21: an agent in one chat could have another chat sent a job's results
 * unasked). A call from outside a chat (the operator's API, CLI or MCP client, an automation run)
 * names its targets as its caller chooses: false.
 * @example deliversBeyond(['telegram:99'], 'telegram:42:7', []) // true
 * @example deliversBeyond(['telegram:42'], 'telegram:42:7', []) // false
 */
export function deliversBeyond(
  targets: readonly string[],
  sessionKey: string | undefined,
  fallback: readonly string[] = [],
): boolean {
  const own = deliveryTargetFromSession(sessionKey)
  if (own === undefined) return false
  return targets.some((target) => {
    const named = target.trim()
    return named !== own && !fallback.includes(named)
  })
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

/**
 * What a cron tool's result says about a job with no delivery target (none given, the session is
 * not a chat the server can send to, such as `http:` or `openai:`, and no
 * `channels.default_deliver_to`): its results go nowhere but the run history, so the model must not
 * promise to report back.
 */
export function noDeliveryNote(jobName: string): string {
  return `This job has no delivery target: nobody will be sent its results, and you cannot report back later either. They are kept only in the run history (lango cron history ${JSON.stringify(jobName)}, the dashboard's Cron page, or the cron_history tool). Do not promise to tell the user how it went; tell them where to look, or ask where to deliver (deliver_to, such as telegram:<chat id>).`
}
