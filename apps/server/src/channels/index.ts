export { DiscordChannel, type DiscordChannelOptions } from './discord.js'
export { ChannelError, type ChannelErrorCode } from './errors.js'
export {
  type CustomChannelSpec,
  isChannelAdapter,
  type LoadChannelAdapterOptions,
  loadChannelAdapter,
} from './loader.js'
export {
  parseRetryAfter,
  type RetryDecision,
  type RetryOptions,
  type RetryPolicy,
  withRetry,
} from './retry.js'
export {
  BUSY_REPLY,
  ChannelRouter,
  type ChannelRouterOptions,
  type ChannelStartResult,
  type ConversationContext,
  type ConversationHandler,
  createLogChannel,
} from './router.js'
export { SlackChannel, type SlackChannelOptions } from './slack.js'
export { splitMessage } from './split.js'
export {
  type ChannelTarget,
  deliveryTargetFromSession,
  parseSessionKey,
  parseTarget,
  sessionKeyOf,
} from './target.js'
export { TelegramChannel, type TelegramChannelOptions } from './telegram.js'
export type {
  ChannelAdapter,
  ChannelAdapterContext,
  ChannelAdapterFactory,
  ChannelApprovalRequest,
  ChannelCallOptions,
  ChannelSender,
  ChannelStartOptions,
  InboundHandler,
  InboundMessage,
  InboundOptions,
} from './types.js'
export { WebhookChannel, type WebhookChannelOptions, type WebhookPayload } from './webhook.js'
