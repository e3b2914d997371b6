/** Codes of errors a tool call can end with. */
export type ToolErrorCode =
  /**
   * Parameters failed validation; `issues` names each field and what is accepted. Also thrown by a
   * factory (`createExecTools`, `registerTools`, …) for an option key it does not know: `data` holds
   * `option`, `suggestion` and `accepted`.
   */
  | 'TOOL_INVALID_PARAMETERS'
  /** No tool with that name. */
  | 'TOOL_NOT_FOUND'
  /** The approval policy required approval and it was not given (or not answered). */
  | 'TOOL_DENIED'
  /** The handler failed; the message says why (never with secret values). */
  | 'TOOL_FAILED'
  /** The call was canceled through its signal. */
  | 'TOOL_CANCELED'

const brand = Symbol.for('lango.error')

/** An error raised inside a handler that should reach the model with a code. */
export class ToolError extends Error {
  override readonly name = 'ToolError'
  readonly [brand] = true
  /** Ids, limits and statuses; never secrets or user text. */
  readonly data?: Readonly<Record<string, unknown>>
  /**
   * The service's own code behind a `TOOL_FAILED` the tool itself detected (`WORKFLOW_RUN_NOT_FOUND`),
   * passed on as the failure's `reason` like the code of an error a service threw.
   */
  readonly reason?: string

  constructor(
    readonly code: ToolErrorCode,
    message: string,
    options?: { cause?: unknown; data?: Record<string, unknown>; reason?: string },
  ) {
    super(message, { cause: options?.cause })
    if (options?.data !== undefined) this.data = Object.freeze({ ...options.data })
    if (options?.reason !== undefined) this.reason = options.reason
  }

  /** True for a `ToolError` from any copy of this package (by brand and name, not `instanceof`). */
  static is(value: unknown): value is ToolError {
    return (
      typeof value === 'object' &&
      value !== null &&
      brand in value &&
      (value as { name?: unknown }).name === 'ToolError'
    )
  }

  /** What a server may return to a caller: never `cause` or `stack` (ADR 0006). */
  toJSON(): {
    name: 'ToolError'
    code: ToolErrorCode
    message: string
    reason?: string
    data?: Readonly<Record<string, unknown>>
  } {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      ...(this.reason === undefined ? {} : { reason: this.reason }),
      ...(this.data === undefined ? {} : { data: this.data }),
    }
  }
}
