import { type AnyServerErrorCode, isServerErrorNamed, LangoServerError } from '../errors.js'

/** Codes of {@link AgentError} (`AGENT_*` in `SERVER_ERROR_CODES`); callers branch on these, never on messages. */
export type AgentErrorCode = Extract<AnyServerErrorCode, `AGENT_${string}`>

/**
 * Failures that the same turn tried again would meet again, whatever the wait: a spending budget
 * that is exhausted, a model still calling tools at the step limit, no model or a refused key, bad
 * options. A workflow step's `retry` does not spend another attempt on them.
 */
const FINAL_CODES: ReadonlySet<AgentErrorCode> = new Set<AgentErrorCode>([
  'AGENT_BUDGET_EXHAUSTED',
  'AGENT_STEP_LIMIT',
  'AGENT_NO_MODEL',
  'AGENT_MODEL_UNAUTHORIZED',
  'AGENT_INVALID_OPTIONS',
])

/**
 * The agent runner's error, in the one error shape of ADR 0006 (`code`, `message`, `cause`, `data`,
 * `toJSON`). Messages name the model server's URL (without credentials or query) and never the API
 * key; `cause` is a redacted copy of the underlying error, never the original (whose fields may echo
 * request bodies or headers).
 *
 * It is also the packages' `AgentRunFailure` (docs/decisions/0006): `usage` says what a failed turn
 * spent (cron counts it against its daily AI token budget, workflow steps and background tasks keep
 * it), `retryable` is false for the codes another attempt cannot fix, and `started` is false for a
 * turn refused before it did anything (cron then records its run skipped).
 */
export class AgentError extends LangoServerError<AgentErrorCode> {
  override readonly name = 'AgentError'
  /** Tokens the turn spent before it failed; absent when it made no model call. */
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
  /** False when the turn was refused before it did anything (a daily budget already spent). */
  readonly started?: boolean

  constructor(
    code: AgentErrorCode,
    message: string,
    options?: {
      readonly cause?: unknown
      readonly data?: Record<string, unknown>
      readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
      readonly started?: boolean
    },
  ) {
    super(code, message, options)
    if (options?.started !== undefined) this.started = options.started
    const usage = options?.usage
    if (usage !== undefined)
      this.usage = Object.freeze({ inputTokens: usage.inputTokens, outputTokens: usage.outputTokens })
  }

  /** False when trying the same turn again cannot succeed (budget, step limit, no model, refused key). */
  get retryable(): boolean {
    return !FINAL_CODES.has(this.code)
  }

  /** True for an `AgentError` from any copy of this module. */
  static is(value: unknown): value is AgentError {
    return isServerErrorNamed(value, 'AgentError')
  }
}
