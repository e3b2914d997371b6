/** Codes of {@link ChannelError}; callers branch on these, never on messages. */
export type ChannelErrorCode =
  /** The target names no registered channel and is not a built-in one (`matrix:…` with no `matrix` adapter). */
  | 'CHANNEL_UNKNOWN'
  /** The target names a built-in channel (`telegram`, `slack`, `discord`, `webhook`) that is not configured. */
  | 'CHANNEL_NOT_CONFIGURED'
  /** The target or chat id is malformed (empty id, a Telegram chat id that is not a number …). */
  | 'CHANNEL_INVALID_TARGET'
  /** A bare target (`telegram`) but the channel has no default chat (no allowed chat, no default channel). */
  | 'CHANNEL_NO_DEFAULT_CHAT'
  /** The message text is empty or blank; nothing was sent. */
  | 'CHANNEL_INVALID_MESSAGE'
  /** The chat is not in the channel's allow list; nothing was sent. */
  | 'CHANNEL_TARGET_NOT_ALLOWED'
  /** The service refused the message, or it could not be reached after the bounded retries. */
  | 'CHANNEL_SEND_FAILED'
  /** The service rejected the credentials (HTTP 401, Slack `invalid_auth`). */
  | 'CHANNEL_AUTH_FAILED'
  /** Telegram answered 409 Conflict: another process long-polls this bot token (only one may). */
  | 'CHANNEL_CONFLICT'
  /** Receiving stopped for a reason other than 401/409 (the service kept failing). */
  | 'CHANNEL_RECEIVE_FAILED'
  /** Wrong lifecycle state: an approval before `start()` or after `stop()`, or a router started twice. */
  | 'CHANNEL_NOT_STARTED'
  /** Too many approvals are pending on this channel; the new request is refused (denied). */
  | 'CHANNEL_APPROVALS_FULL'
  /** An adapter's options are invalid (missing token, bad URL, bad name). */
  | 'CHANNEL_INVALID_OPTIONS'
  /** Two adapters were registered under one name. */
  | 'CHANNEL_DUPLICATE'
  /** The custom adapter module named in config does not exist. */
  | 'CHANNEL_ADAPTER_NOT_FOUND'
  /** The custom adapter module threw while loading, or its factory threw. */
  | 'CHANNEL_ADAPTER_LOAD_FAILED'
  /** The module has no default-exported factory, or the factory returned something that is not an adapter. */
  | 'CHANNEL_ADAPTER_INVALID'

const brand = Symbol.for('lango.error')

/**
 * The channels' error, in the one error shape of ADR 0006 (`code`, `message`, `cause`, `data`,
 * `toJSON`). Messages and data never hold a token, a webhook URL or message text.
 */
export class ChannelError extends Error {
  override readonly name = 'ChannelError'
  readonly [brand] = true
  readonly data?: Readonly<Record<string, unknown>>

  constructor(
    readonly code: ChannelErrorCode,
    message: string,
    options?: { cause?: unknown; data?: Record<string, unknown> },
  ) {
    super(message, { cause: options?.cause })
    if (options?.data !== undefined) this.data = Object.freeze({ ...options.data })
  }

  /** True for a `ChannelError` from any copy of this module (a `Symbol.for` brand, not `instanceof`). */
  static is(value: unknown): value is ChannelError {
    return (
      typeof value === 'object' &&
      value !== null &&
      brand in value &&
      (value as { name?: unknown }).name === 'ChannelError'
    )
  }

  /** What may be returned to a caller: never `cause` or `stack`. */
  toJSON(): {
    name: 'ChannelError'
    code: ChannelErrorCode
    message: string
    data?: Readonly<Record<string, unknown>>
  } {
    return this.data === undefined
      ? { name: this.name, code: this.code, message: this.message }
      : { name: this.name, code: this.code, message: this.message, data: this.data }
  }
}
