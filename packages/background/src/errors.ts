/** Every error code `@lango/background` raises or records on a task. */
export type BackgroundErrorCode =
  /** An argument or option is invalid (empty prompt, prompt too long, unknown status filter, bad limit). */
  | 'BACKGROUND_INVALID_INPUT'
  /** The queue already holds `maxQueuedTasks` pending tasks; the submission was rejected. */
  | 'BACKGROUND_QUEUE_FULL'
  /** The submission is deeper than `maxNesting` in a chain of runs started from inside runs (SECURITY.md WF-7). */
  | 'BACKGROUND_NESTING_TOO_DEEP'
  /** The manager is stopping or stopped: no submissions, no restart. Also the error of tasks `stop()` cancelled. */
  | 'BACKGROUND_STOPPED'
  /** No task with this id (never existed, or evicted after it ended). */
  | 'BACKGROUND_TASK_NOT_FOUND'
  /** `result()` was asked for a task that is not `done`; `data.status` says what it is. */
  | 'BACKGROUND_TASK_NOT_DONE'
  /** `cancel()` was asked for a task that already ended; `data.status` says how. */
  | 'BACKGROUND_TASK_ENDED'
  /** The task's error when it was cancelled on request; also the reason its runner's signal aborts with. */
  | 'BACKGROUND_TASK_CANCELLED'
  /** The task's error when it passed its deadline; also the reason its runner's signal aborts with. */
  | 'BACKGROUND_TASK_TIMEOUT'
  /** The task's error when its runner threw or rejected; the runner's error is the `cause`. */
  | 'BACKGROUND_TASK_FAILED'
  /** The injected `idGenerator` returned an id that is empty or already in use. */
  | 'BACKGROUND_DUPLICATE_ID'
  /** A notice was not delivered: the notifier rejected (the `cause`) or did not settle in time. */
  | 'BACKGROUND_NOTIFY_FAILED'

const brand = Symbol.for('lango.error')

/** The error class of `@lango/background`. Branch on `code`; check identity with `BackgroundError.is`. */
export class BackgroundError extends Error {
  override readonly name = 'BackgroundError'
  readonly [brand] = true
  /** Machine-readable details (task id, status, limits). Never prompts or secrets. */
  readonly data?: Readonly<Record<string, unknown>>

  constructor(
    readonly code: BackgroundErrorCode,
    message: string,
    options?: { cause?: unknown; data?: Readonly<Record<string, unknown>> },
  ) {
    super(message, { cause: options?.cause })
    this.data = options?.data
  }

  /** True for a `BackgroundError` from any copy of this package (pnpm may install two). */
  static is(value: unknown): value is BackgroundError {
    return (
      typeof value === 'object' &&
      value !== null &&
      brand in value &&
      (value as { name?: unknown }).name === 'BackgroundError'
    )
  }

  /** What a server may return to a caller: `name`, `code`, `message` and `data`, never `cause` or `stack`. */
  toJSON(): {
    name: 'BackgroundError'
    code: BackgroundErrorCode
    message: string
    data?: Readonly<Record<string, unknown>>
  } {
    return this.data === undefined
      ? { name: this.name, code: this.code, message: this.message }
      : { name: this.name, code: this.code, message: this.message, data: this.data }
  }
}

/**
 * Thrown by a task's runner to say "this will not succeed if tried again" (like bullmq's
 * `UnrecoverableError`). The manager never retries; it records the failure with `retryable: false`
 * so whoever resubmits tasks (a person, cron, a workflow) knows not to.
 *
 * @example
 * throw new PermanentError('The repository no longer exists')
 */
export class PermanentError extends Error {
  override readonly name = 'PermanentError'
  readonly [brand] = true

  /** True for a `PermanentError` from any copy of this package. */
  static is(value: unknown): value is PermanentError {
    return (
      typeof value === 'object' &&
      value !== null &&
      brand in value &&
      (value as { name?: unknown }).name === 'PermanentError'
    )
  }
}

/** Normalises anything thrown into an `Error`, keeping the original as `cause` when it was not one. Internal. */
export function toError(value: unknown): Error {
  if (value instanceof Error) return value
  let text: string
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value))
  } catch {
    text = Object.prototype.toString.call(value)
  }
  return new Error(text, { cause: value })
}
