import { type AnyServerErrorCode, isServerErrorNamed, LangoServerError } from '../errors.js'

/** Codes carried by every {@link VaultError} (`VAULT_*` in `SERVER_ERROR_CODES`); callers branch on these, never on messages. */
export type VaultErrorCode = Extract<AnyServerErrorCode, `VAULT_${string}`>

/**
 * The one error type of the secrets vault. Messages and `data` name secrets and limits, never a
 * value or the passphrase.
 */
export class VaultError extends LangoServerError<VaultErrorCode> {
  override readonly name = 'VaultError'

  /** True for a `VaultError` from any copy of this module (checked by brand, not `instanceof`). */
  static is(value: unknown): value is VaultError {
    return isServerErrorNamed(value, 'VaultError')
  }
}
