/** Codes carried by every {@link SessionError}; callers branch on these, never on messages. */
export type SessionErrorCode =
  /** A session key is not `<kind>:<id>` (kind `[a-z][a-z0-9_-]{0,31}`, id 1–223 characters, no control characters). */
  | 'SESSION_INVALID_KEY'
  /** A message is not a model message (`role` system/user/assistant/tool with string or part-array `content`), or is not JSON-serialisable. */
  | 'SESSION_INVALID_MESSAGE'
  /** A message is larger than `maxMessageBytes` even after its binary parts were omitted and its long texts shortened. */
  | 'SESSION_MESSAGE_TOO_LARGE'
  /** One `append` carries more messages than `maxMessages` or more bytes than `maxSessionBytes`. */
  | 'SESSION_TURN_TOO_LARGE'
  /** A store option is out of range or inconsistent (e.g. `keepRecentMessages` ≥ `observeAfterMessages`). */
  | 'SESSION_INVALID_OPTION'
  /** A stored row failed validation (edited by hand or written by an incompatible version). */
  | 'SESSION_STORE_CORRUPT'
  /** The observer threw, was aborted, timed out, returned no text or an empty reflection; the session is unchanged. */
  | 'SESSION_OBSERVER_FAILED'

const brand = Symbol.for('lango.error')

/**
 * The one error type of the session store. Messages and `data` name keys, indexes and limits,
 * never message content.
 */
export class SessionError extends Error {
  override readonly name = 'SessionError'
  readonly [brand] = true
  /** Keys, indexes and limits; never content. */
  readonly data?: Readonly<Record<string, unknown>>

  constructor(
    readonly code: SessionErrorCode,
    message: string,
    options?: { cause?: unknown; data?: Record<string, unknown> },
  ) {
    super(message, { cause: options?.cause })
    if (options?.data !== undefined) this.data = Object.freeze({ ...options.data })
  }

  /** What a server may return to a caller: never `cause` or `stack`. */
  toJSON(): {
    name: 'SessionError'
    code: SessionErrorCode
    message: string
    data?: Readonly<Record<string, unknown>>
  } {
    return this.data === undefined
      ? { name: this.name, code: this.code, message: this.message }
      : { name: this.name, code: this.code, message: this.message, data: this.data }
  }

  /** True for a `SessionError` from any copy of this module (checked by brand, not `instanceof`). */
  static is(value: unknown): value is SessionError {
    return (
      typeof value === 'object' &&
      value !== null &&
      brand in value &&
      (value as { name?: unknown }).name === 'SessionError'
    )
  }
}
