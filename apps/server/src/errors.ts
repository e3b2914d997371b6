/** Codes of {@link ServerError}; callers branch on these, never on messages. */
export type ServerErrorCode =
  /** The database could not be opened (the SQLite file) or reached (PostgreSQL). */
  | 'SERVER_DATABASE_UNAVAILABLE'
  /** A package's migrations failed; nothing was started. */
  | 'SERVER_MIGRATION_FAILED'
  /** The server refused to start (e.g. a non-loopback address without `LANGO_API_TOKEN`). */
  | 'SERVER_UNSAFE_BIND'
  /** The address is taken or cannot be bound. */
  | 'SERVER_LISTEN_FAILED'
  /** A saved workflow's schedule could not be registered with cron. */
  | 'SERVER_SCHEDULE_FAILED'
  /** No pending approval has that id (never existed, answered or expired). */
  | 'SERVER_APPROVAL_NOT_FOUND'

const brand = Symbol.for('lango.error')

/** The server's own error, in the one error shape of ADR 0006 (`code`, `message`, `cause`, `data`, `toJSON`). */
export class ServerError extends Error {
  override readonly name = 'ServerError'
  readonly [brand] = true
  readonly data?: Readonly<Record<string, unknown>>

  constructor(
    readonly code: ServerErrorCode,
    message: string,
    options?: { cause?: unknown; data?: Record<string, unknown> },
  ) {
    super(message, { cause: options?.cause })
    if (options?.data !== undefined) this.data = Object.freeze({ ...options.data })
  }

  /** What may be returned to a caller: never `cause` or `stack`. */
  toJSON(): {
    name: 'ServerError'
    code: ServerErrorCode
    message: string
    data?: Readonly<Record<string, unknown>>
  } {
    return this.data === undefined
      ? { name: this.name, code: this.code, message: this.message }
      : { name: this.name, code: this.code, message: this.message, data: this.data }
  }
}
