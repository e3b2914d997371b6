export { DiscordChannel } from './discord.js'
export { ChannelError } from './errors.js'
export { loadChannelAdapter } from './loader.js'
export { parseRetryAfter, withRetry } from './retry.js'
export { BUSY_REPLY, ChannelRouter, type ConversationHandler } from './router.js'
export { SlackChannel } from './slack.js'
export { splitMessage } from './split.js'
export { deliveryTargetFromSession, parseSessionKey, parseTarget, sessionKeyOf } from './target.js'
export { TelegramChannel } from './telegram/channel.js'
export type { TelegramChannelOptions } from './telegram/options.js'
// The custom adapter contract (examples/channel-adapter): a module's default export is a
// ChannelAdapterFactory; test/channel-adapter.test-d.ts checks it as documented.
export type {
  ChannelAdapter,
  ChannelAdapterContext,
  ChannelAdapterFactory,
  ChannelApprovalRequest,
  ChannelCallOptions,
  ChannelStartOptions,
  InboundHandler,
  InboundMessage,
  InboundOptions,
} from './types.js'
export { WebhookChannel, type WebhookPayload } from './webhook.js'
