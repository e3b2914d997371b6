/** Codes of {@link AgentError}; callers branch on these, never on messages. */
export type AgentErrorCode =
  /** No model is configured (no base URL or no model name): agent runs cannot start. */
  | 'AGENT_NO_MODEL'
  /** The runner's options are invalid (a base URL that is not http(s), a step limit out of range). */
  | 'AGENT_INVALID_OPTIONS'
  /** The model server could not be reached (connection refused, DNS, reset) after the retries. */
  | 'AGENT_MODEL_UNREACHABLE'
  /** The model server refused the credentials (401 or 403). */
  | 'AGENT_MODEL_UNAUTHORIZED'
  /** The model server kept answering 429 Too Many Requests after the retries. */
  | 'AGENT_MODEL_RATE_LIMITED'
  /** The model server answered another error status (404 unknown model, 500, 503, …). */
  | 'AGENT_MODEL_ERROR'
  /** The model server answered 2xx with a body that is not a chat completion (not JSON, no choices). */
  | 'AGENT_INVALID_RESPONSE'
  /** The run did not finish within the runner's `timeoutMs`. */
  | 'AGENT_TIMEOUT'
  /** The model still wanted to call tools when the step limit (`maxSteps`) was reached. */
  | 'AGENT_STEP_LIMIT'
  /** The conversation memory could not be loaded. */
  | 'AGENT_MEMORY_FAILED'
  /** Anything else that went wrong in a run. */
  | 'AGENT_FAILED'

const brand = Symbol.for('lango.error')

/**
 * The agent runner's error, in the one error shape of ADR 0006 (`code`, `message`, `cause`, `data`,
 * `toJSON`). Messages name the model server's URL (without credentials or query) and never the API
 * key; `cause` is a redacted copy of the underlying error, never the original (whose fields may echo
 * request bodies or headers).
 */
export class AgentError extends Error {
  override readonly name = 'AgentError'
  readonly [brand] = true
  readonly data?: Readonly<Record<string, unknown>>

  constructor(
    readonly code: AgentErrorCode,
    message: string,
    options?: { cause?: unknown; data?: Record<string, unknown> },
  ) {
    super(message, { cause: options?.cause })
    if (options?.data !== undefined) this.data = Object.freeze({ ...options.data })
  }

  /** True for an `AgentError` from any copy of this module. */
  static is(value: unknown): value is AgentError {
    return (
      typeof value === 'object' &&
      value !== null &&
      brand in value &&
      (value as AgentError).name === 'AgentError'
    )
  }

  /** What may be returned to a caller: never `cause` or `stack`. */
  toJSON(): {
    name: 'AgentError'
    code: AgentErrorCode
    message: string
    data?: Readonly<Record<string, unknown>>
  } {
    return this.data === undefined
      ? { name: this.name, code: this.code, message: this.message }
      : { name: this.name, code: this.code, message: this.message, data: this.data }
  }
}
