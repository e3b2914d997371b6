import type { ServerConfig } from '../../config/types.js'
import type { CheckResult } from './check.js'
import { getJson, networkProblem, shownUrl } from './http.js'

/** Which channels are configured; Telegram's token is tried (`getMe`). */
export async function checkChannels(config: ServerConfig): Promise<CheckResult[]> {
  const { telegram, slack, discord, webhook } = config.channels
  const configured = [
    telegram.token === undefined ? undefined : 'telegram',
    slack.token === undefined ? undefined : 'slack',
    discord.token === undefined ? undefined : 'discord',
    webhook.url === undefined ? undefined : 'webhook',
  ].filter((name): name is string => name !== undefined)
  const results: CheckResult[] = [
    configured.length === 0
      ? {
          name: 'channels',
          status: 'ok',
          message: 'none configured: results go to the server log only',
          details: { configured },
        }
      : {
          name: 'channels',
          status: 'ok',
          message: `configured: ${configured.join(', ')}`,
          details: { configured },
        },
  ]
  if (telegram.token !== undefined) results.push(await checkTelegram(telegram.token, telegram.apiUrl))
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
