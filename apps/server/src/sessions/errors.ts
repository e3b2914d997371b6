import { type AnyServerErrorCode, isServerErrorNamed, LangoServerError } from '../errors.js'

/** Codes carried by every {@link SessionError} (`SESSION_*` in `SERVER_ERROR_CODES`); callers branch on these, never on messages. */
export type SessionErrorCode = Extract<AnyServerErrorCode, `SESSION_${string}`>

/**
 * The one error type of the session store. Messages and `data` name keys, indexes and limits,
 * never message content.
 */
export class SessionError extends LangoServerError<SessionErrorCode> {
  override readonly name = 'SessionError'

  /** True for a `SessionError` from any copy of this module (checked by brand, not `instanceof`). */
  static is(value: unknown): value is SessionError {
    return isServerErrorNamed(value, 'SessionError')
  }
}
