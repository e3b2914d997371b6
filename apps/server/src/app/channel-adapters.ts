import { loadChannelAdapter } from '../channels/loader.js'
import type { ChannelAdapter } from '../channels/types.js'
import type { ServerConfig } from '../config/types.js'
import type { Logger } from '../logger.js'

/**
 * The channel adapters the configuration asks for: Telegram, Slack, Discord and the webhook when
 * their token or URL is set, then each `channels.custom` module (a module that cannot be loaded
 * stops start-up with its error: the operator asked for it).
 */
export async function channelAdapters(
  config: ServerConfig,
  logger: Logger,
  options: {
    /**
     * Only these channels (built-in names; a custom channel by its name): `lango doctor` builds each
     * one on its own to check targets with it.
     */
    readonly only?: readonly string[]
  } = {},
): Promise<ChannelAdapter[]> {
  const wanted = (name: string) => options.only === undefined || options.only.includes(name)
  const { telegram, slack, discord, webhook } = config.channels
  const custom = config.channels.custom.filter((spec) => wanted(spec.name))
  const adapters: ChannelAdapter[] = []
  // Each channel's client library loads only when that channel is configured.
  if (telegram.token !== undefined && wanted('telegram')) {
    const { TelegramChannel } = await import('../channels/telegram/channel.js')
    adapters.push(
      new TelegramChannel({
        token: telegram.token,
        ...(telegram.apiUrl === undefined ? {} : { apiRoot: telegram.apiUrl }),
        allowedChats: telegram.allowedChats,
        approvalTimeoutMs: config.approvals.timeoutMs,
        logger,
      }),
    )
  }
  if (slack.token !== undefined && wanted('slack')) {
    const { SlackChannel } = await import('../channels/slack.js')
    adapters.push(
      new SlackChannel({
        token: slack.token,
        ...(slack.apiUrl === undefined ? {} : { apiUrl: slack.apiUrl }),
        ...(slack.defaultChannel === undefined ? {} : { defaultChannel: slack.defaultChannel }),
        ...(slack.allowedChannels === undefined ? {} : { allowedChannels: slack.allowedChannels }),
        logger,
      }),
    )
  }
  if (discord.token !== undefined && wanted('discord')) {
    const { DiscordChannel } = await import('../channels/discord.js')
    adapters.push(
      new DiscordChannel({
        token: discord.token,
        ...(discord.apiUrl === undefined ? {} : { apiUrl: discord.apiUrl }),
        ...(discord.defaultChannel === undefined ? {} : { defaultChannel: discord.defaultChannel }),
        ...(discord.allowedChannels === undefined ? {} : { allowedChannels: discord.allowedChannels }),
        logger,
      }),
    )
  }
  if (webhook.url !== undefined && wanted('webhook')) {
    const { WebhookChannel } = await import('../channels/webhook.js')
    adapters.push(
      new WebhookChannel({
        url: webhook.url,
        ...(webhook.secret === undefined ? {} : { secret: webhook.secret }),
        logger,
      }),
    )
  }
  for (const spec of custom) {
    adapters.push(await loadChannelAdapter(spec, { home: config.home, logger }))
  }
  return adapters
}
