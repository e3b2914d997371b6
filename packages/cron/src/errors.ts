/** Codes carried by every {@link CronError}; callers branch on these, never on messages. */
export type CronErrorCode =
  /** A field of a job (name, kind, prompt, command, deliver_to, timeout, overlap …) is missing or malformed. */
  | 'CRON_INVALID_INPUT'
  /** The schedule type is unknown or the schedule text cannot be parsed (cron expression, duration, date-time). */
  | 'CRON_INVALID_SCHEDULE'
  /** The time zone is not a known IANA name. */
  | 'CRON_INVALID_TIMEZONE'
  /** The schedule fires more often than `minIntervalMs` (checked over the next 20 fires). */
  | 'CRON_INTERVAL_TOO_SHORT'
  /** The cron expression has no next fire time (for example `0 0 31 2 *`). */
  | 'CRON_NEVER_FIRES'
  /** An `at` schedule names a time that has already passed. */
  | 'CRON_AT_IN_PAST'
  /** Another job already has this name. */
  | 'CRON_DUPLICATE_NAME'
  /** No job has this id or name. */
  | 'CRON_JOB_NOT_FOUND'
  /** No run has this id. */
  | 'CRON_RUN_NOT_FOUND'
  /** Creating the job would exceed `maxJobs`, or `maxJobsPerCreator` for its session key. */
  | 'CRON_TOO_MANY_JOBS'
  /** The operation needs a started scheduler (manual trigger). */
  | 'CRON_NOT_RUNNING'
  /** A run exceeded its job's `timeout_ms`; recorded on the run as status `timed_out`. */
  | 'CRON_RUN_TIMEOUT'
  /** A run was cancelled because its job was paused or removed, or the scheduler stopped. */
  | 'CRON_RUN_CANCELLED'
  /** The agent or shell runner reported a failure; recorded on the run as status `failed`. */
  | 'CRON_RUN_FAILED'
  /** A channel did not accept a delivery within `deliveryTimeoutMs`; recorded as the run's `deliveryError`. */
  | 'CRON_DELIVERY_TIMEOUT'
  /** A dead-man ping (a job's `pingUrl`) got no answer within `pingTimeoutMs`; logged and counted, never fails the run. */
  | 'CRON_PING_TIMEOUT'
  /** A stored row failed validation on read (corrupt JSON column, unknown enum value). */
  | 'CRON_STORE_CORRUPT'
  /** The database lacks cron's tables: `migrateCron` was not run on it (`data.table` names one). */
  | 'CRON_STORE_NOT_MIGRATED'

const brand = Symbol.for('lango.error')

/** The one error type `@lango/cron` throws. Messages say what was wrong and what is accepted. */
export class CronError extends Error {
  override readonly name = 'CronError'
  readonly [brand] = true
  readonly data?: Readonly<Record<string, unknown>>

  constructor(
    readonly code: CronErrorCode,
    message: string,
    options?: { cause?: unknown; data?: Record<string, unknown> },
  ) {
    super(message, { cause: options?.cause })
    if (options?.data !== undefined) this.data = Object.freeze({ ...options.data })
  }

  /** What a server may return to a caller: name, code, message and data; never `cause` or `stack`. */
  toJSON(): {
    name: 'CronError'
    code: CronErrorCode
    message: string
    data?: Readonly<Record<string, unknown>>
  } {
    return this.data === undefined
      ? { name: this.name, code: this.code, message: this.message }
      : { name: this.name, code: this.code, message: this.message, data: this.data }
  }

  /** True for a `CronError` from any copy of this package (checked by brand, not `instanceof`). */
  static is(value: unknown): value is CronError {
    return (
      typeof value === 'object' &&
      value !== null &&
      brand in value &&
      (value as { name?: unknown }).name === 'CronError'
    )
  }
}

/** Normalises anything thrown into an `Error` (strings and plain objects become messages). */
export function toError(value: unknown): Error {
  if (value instanceof Error) return value
  if (typeof value === 'string') return new Error(value)
  try {
    return new Error(JSON.stringify(value))
  } catch {
    return new Error(String(value))
  }
}

const deliveryBrand = Symbol.for('lango.cron.delivery-error')

/**
 * What a {@link ChannelSender} throws to steer the delivery ledger's retry: `retryAfterMs` when the
 * service said how long to wait (HTTP `Retry-After`, Telegram's `retry_after`), `permanent` when a
 * retry cannot help (bad token, unknown chat, a target not allowed). Any other error is retried with
 * backoff until the attempts run out. The message is the channel's reason, stored on the row.
 * @example throw new DeliveryError('telegram: 429 Too Many Requests', { retryAfterMs: 3000 })
 */
export class DeliveryError extends Error {
  override readonly name = 'DeliveryError'
  readonly [deliveryBrand] = true
  /** Wait at least this long before the next attempt. */
  readonly retryAfterMs?: number
  /** No further attempt: the delivery fails now. */
  readonly permanent: boolean

  constructor(
    message: string,
    options?: { readonly retryAfterMs?: number; readonly permanent?: boolean; readonly cause?: unknown },
  ) {
    super(message, { cause: options?.cause })
    const wait = options?.retryAfterMs
    if (wait !== undefined && Number.isFinite(wait) && wait >= 0) this.retryAfterMs = Math.ceil(wait)
    this.permanent = options?.permanent ?? false
  }

  /** True for a `DeliveryError` from any copy of this package (checked by brand, not `instanceof`). */
  static is(value: unknown): value is DeliveryError {
    return typeof value === 'object' && value !== null && deliveryBrand in value
  }
}
