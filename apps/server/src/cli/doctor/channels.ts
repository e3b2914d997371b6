import { channelAdapters } from '../../app/channel-adapters.js'
import { parseTarget, undeliverableBecause } from '../../channels/target.js'
import type { ChannelAdapter } from '../../channels/types.js'
import type { ServerConfig } from '../../config/types.js'
import { silentLogger } from '../../logger.js'
import type { CheckResult } from './check.js'
import { getJson, networkProblem, shownUrl } from './http.js'

/** Where each built-in channel's settings are, for the fix of one the server cannot build. */
const SETTINGS: Readonly<Record<string, string>> = {
  telegram: 'LANGO_TELEGRAM_TOKEN, channels.telegram',
  slack: 'LANGO_SLACK_TOKEN, channels.slack',
  discord: 'LANGO_DISCORD_TOKEN, channels.discord',
  webhook: 'LANGO_WEBHOOK_URL, channels.webhook',
}

/**
 * Which channels are configured (custom ones included), and whether `channels.default_deliver_to`
 * and `alerts.deliver_to` name only targets they can deliver to: the channel is configured, and its
 * adapter takes the chat (its `checkChat`: a Telegram chat in `allowed_chats`, a default channel for
 * a bare `slack` target, whatever a custom adapter checks), as the server checks them at start;
 * Telegram's token is tried (`getMe`).
 */
export async function checkChannels(config: ServerConfig): Promise<CheckResult[]> {
  const { telegram, slack, discord, webhook, custom } = config.channels
  const configured = [
    telegram.token === undefined ? undefined : 'telegram',
    slack.token === undefined ? undefined : 'slack',
    discord.token === undefined ? undefined : 'discord',
    webhook.url === undefined ? undefined : 'webhook',
    ...custom.map((adapter) => adapter.name),
  ].filter((name): name is string => name !== undefined)
  // The adapters as the server builds them (nothing is sent or started), each on its own: one the
  // server could not build (a malformed token, a custom module that does not load) is a failure of
  // its own. A custom channel's module is loaded and its factory called, as at start (the
  // operator's own code, from lango.yaml); its `checkChat` then checks its targets' chats.
  const builtIn = new Map<string, ChannelAdapter>()
  const unbuilt: CheckResult[] = []
  for (const name of configured) {
    try {
      for (const adapter of await channelAdapters(config, silentLogger, { only: [name] }))
        builtIn.set(adapter.name, adapter)
    } catch (error) {
      unbuilt.push({
        name,
        status: 'fail',
        message: `the server cannot start this channel: ${error instanceof Error ? error.message : String(error)}`,
        fix: `check the ${name} settings (${SETTINGS[name] ?? `channels.custom: its module and options`})`,
      })
    }
  }
  const known = new Set([...configured, 'log'])
  const channels = {
    get: (name: string): ChannelAdapter | undefined =>
      builtIn.get(name) ?? (known.has(name) ? { name, send: async () => {} } : undefined),
  }
  const unreachable = [
    ...config.channels.defaultDeliverTo.map((target) => ({ setting: 'channels.default_deliver_to', target })),
    ...config.alerts.deliverTo.map((target) => ({ setting: 'alerts.deliver_to', target })),
  ].flatMap(({ setting, target }) => {
    const why = undeliverableBecause(target, channels)
    return why === undefined
      ? []
      : [{ setting, target, why, configured: known.has(parseTarget(target).channel) }]
  })
  const listed =
    configured.length === 0
      ? config.channels.defaultDeliverTo.length === 0
        ? 'none configured: results are kept in the run history only (lango cron history, the dashboard)'
        : 'none configured'
      : `configured: ${configured.join(', ')}`
  const results: CheckResult[] = [
    unreachable.length === 0
      ? { name: 'channels', status: 'ok', message: listed, details: { configured } }
      : {
          name: 'channels',
          status: 'warn',
          message: `${listed}; ${unreachable
            .map(({ setting, target, why, configured: served }) =>
              served
                ? `${setting} names ${target}, which its channel refuses (${why})`
                : `${setting} names ${target}, whose channel is not configured`,
            )
            .join('; ')}: every delivery there fails`,
          fix: 'configure that channel (its token or url, or channels.custom) or the chat (telegram.allowed_chats, a default_channel), or remove the target',
          details: {
            configured,
            unreachable: unreachable.map(({ setting, target, why }) => ({ setting, target, why })),
          },
        },
  ]
  results.push(...unbuilt)
  if (telegram.token !== undefined && builtIn.has('telegram'))
    results.push(await checkTelegram(telegram.token, telegram.apiUrl))
  return results
}

/** The Bot API accepts the Telegram token (`getMe`); the bot is named when it does. */
async function checkTelegram(token: string, apiUrl: string | undefined): Promise<CheckResult> {
  const base = (apiUrl ?? 'https://api.telegram.org').replace(/\/+$/, '')
  try {
    const { status, json } = await getJson(`${base}/bot${token}/getMe`)
    const result = (json as { ok?: unknown; result?: { username?: unknown } } | undefined) ?? {}
    if (status === 200 && result.ok === true)
      return {
        name: 'telegram',
        status: 'ok',
        message: `token accepted${typeof result.result?.username === 'string' ? ` (bot @${result.result.username})` : ''}`,
      }
    if (status === 401 || status === 404)
      return {
        name: 'telegram',
        status: 'fail',
        message: `the Bot API refused the token (${status})`,
        fix: 'check LANGO_TELEGRAM_TOKEN (from @BotFather)',
      }
    return {
      name: 'telegram',
      status: 'fail',
      message: `getMe answered ${status}`,
      fix: 'try again later; check LANGO_TELEGRAM_API_URL if set',
    }
  } catch (error) {
    return {
      name: 'telegram',
      status: 'fail',
      message: `${shownUrl(base)}: ${networkProblem(error)}`,
      fix: 'check the network (or LANGO_TELEGRAM_API_URL)',
    }
  }
}
