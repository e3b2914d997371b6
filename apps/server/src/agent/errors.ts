import { type AnyServerErrorCode, isServerErrorNamed, LangoServerError } from '../errors.js'

/** Codes of {@link AgentError} (`AGENT_*` in `SERVER_ERROR_CODES`); callers branch on these, never on messages. */
export type AgentErrorCode = Extract<AnyServerErrorCode, `AGENT_${string}`>

/**
 * The agent runner's error, in the one error shape of ADR 0006 (`code`, `message`, `cause`, `data`,
 * `toJSON`). Messages name the model server's URL (without credentials or query) and never the API
 * key; `cause` is a redacted copy of the underlying error, never the original (whose fields may echo
 * request bodies or headers).
 */
export class AgentError extends LangoServerError<AgentErrorCode> {
  override readonly name = 'AgentError'

  /** True for an `AgentError` from any copy of this module. */
  static is(value: unknown): value is AgentError {
    return isServerErrorNamed(value, 'AgentError')
  }
}
