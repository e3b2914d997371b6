import type { Clock } from '@lango/cron'
import type { Logger } from '../../logger.js'
import type { RetryPolicy } from '../retry.js'

/** Options of {@link TelegramChannel}. */
export interface TelegramChannelOptions {
  /** The bot token from @BotFather (`LANGO_TELEGRAM_TOKEN`); never logged or put in an error. */
  readonly token: string
  /** The registered name; default `telegram`. */
  readonly name?: string
  /** The Bot API root (`LANGO_TELEGRAM_API_URL`); default `https://api.telegram.org`. */
  readonly apiRoot?: string
  /**
   * Chats the bot talks with (`LANGO_TELEGRAM_ALLOWED_CHATS`): messages from any other chat are
   * ignored (logged without their content), sends to any other chat are refused, and a bare
   * `telegram` target goes to the first. Empty: nothing is received.
   */
  readonly allowedChats: readonly (string | number)[]
  /**
   * A delivery (`send`) that splits into more messages than this goes as its first part plus the whole
   * text as a document (`result.md`); `Infinity` always splits. Default 3. Replies in a conversation
   * are always split.
   */
  readonly attachAfterParts?: number
  /** Long-polling timeout of one `getUpdates`. Default 30 s. */
  readonly pollTimeoutSeconds?: number
  /** How often `typing` is re-sent while the handler works (Telegram shows it for 5 s). Default 4000 ms. */
  readonly typingIntervalMs?: number
  /** Approvals waiting for a button press at once; one more is refused (`CHANNEL_APPROVALS_FULL`). Default 20. */
  readonly maxPendingApprovals?: number
  /** An approval nobody answers ends `undefined` (no answer) after this, whatever the caller's signal. Default 10 min. */
  readonly approvalTimeoutMs?: number
  /** Retries of 429 (after `retry_after`) and 5xx by @grammyjs/auto-retry. Default 2. */
  readonly maxRetryAttempts?: number
  /**
   * A `retry_after` longer than this fails the call instead of waiting (its `retryAfterSeconds` is
   * the delivery ledger's wait). Default 5 s, so the waits stay inside one delivery attempt.
   */
  readonly maxRetryAfterSeconds?: number
  /** Retries of network errors on sends (the shared backoff helper). Default 3 attempts. */
  readonly networkRetry?: RetryPolicy
  /** How long `start()` waits for the first poll to succeed before it gives up. Default 30 s. */
  readonly startTimeoutMs?: number
  /** How long `stop()` waits for the poll loop to end. Default 5 s. */
  readonly stopTimeoutMs?: number
  readonly clock?: Clock
  readonly logger?: Logger
}
