/** Codes carried by every {@link VaultError}; callers branch on these, never on messages. */
export type VaultErrorCode =
  /** No passphrase was given: set `LANGO_PASSPHRASE`. */
  | 'VAULT_NO_PASSPHRASE'
  /** The passphrase does not open this vault (its key-check value does not decrypt). */
  | 'VAULT_WRONG_PASSPHRASE'
  /** A secret name is not 1–64 characters of `A-Z a-z 0-9 _ . -`. */
  | 'VAULT_INVALID_NAME'
  /** A value is not a string, holds a NUL character, or is not valid UTF-8 / UTF-16. */
  | 'VAULT_INVALID_VALUE'
  /** A value is shorter than `MIN_SECRET_LENGTH` (8) characters: masking it would reveal it. */
  | 'VAULT_VALUE_TOO_SHORT'
  /** A value is longer than 64 KiB (UTF-8 bytes). */
  | 'VAULT_VALUE_TOO_LARGE'
  /** Stored data does not decrypt or parse: a changed ciphertext, a row moved to another name. */
  | 'VAULT_CORRUPT'
  /** An option was out of range (scrypt cost parameters). */
  | 'VAULT_INVALID_OPTION'
  /** Reading a value from the terminal ended without one (Ctrl-C, end of input). */
  | 'VAULT_INPUT_CANCELED'

const brand = Symbol.for('lango.error')

/**
 * The one error type of the secrets vault. Messages and `data` name secrets and limits, never a
 * value or the passphrase.
 */
export class VaultError extends Error {
  override readonly name = 'VaultError'
  readonly [brand] = true
  /** Names, limits and accepted forms; never values. */
  readonly data?: Readonly<Record<string, unknown>>

  constructor(
    readonly code: VaultErrorCode,
    message: string,
    options?: { cause?: unknown; data?: Record<string, unknown> },
  ) {
    super(message, { cause: options?.cause })
    if (options?.data !== undefined) this.data = Object.freeze({ ...options.data })
  }

  /** What a server may return to a caller: never `cause` or `stack`. */
  toJSON(): {
    name: 'VaultError'
    code: VaultErrorCode
    message: string
    data?: Readonly<Record<string, unknown>>
  } {
    return this.data === undefined
      ? { name: this.name, code: this.code, message: this.message }
      : { name: this.name, code: this.code, message: this.message, data: this.data }
  }

  /** True for a `VaultError` from any copy of this module (checked by brand, not `instanceof`). */
  static is(value: unknown): value is VaultError {
    return (
      typeof value === 'object' &&
      value !== null &&
      brand in value &&
      (value as { name?: unknown }).name === 'VaultError'
    )
  }
}
