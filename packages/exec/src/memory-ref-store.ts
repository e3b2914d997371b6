import { ExecError } from './errors.js'
import type { RefStore } from './ports.js'
import { MIN_SECRET_LENGTH } from './redact.js'

/**
 * An in-memory {@link RefStore}: tokens map to values. Useful in tests and in hosts that resolve
 * secrets up front.
 * @example
 * const refs = new MemoryRefStore({ '{{secret:api-key}}': 'sk-test-123456' })
 */
export class MemoryRefStore implements RefStore {
  readonly #values = new Map<string, string>()

  constructor(entries: Readonly<Record<string, string>> = {}) {
    for (const [token, value] of Object.entries(entries)) this.set(token, value)
  }

  /**
   * Stores `value` under an exact token such as `{{secret:api-key}}`.
   * @throws ExecError `EXEC_INVALID_OPTION` for a malformed token, `EXEC_SECRET_TOO_SHORT` for a
   * value under {@link MIN_SECRET_LENGTH} characters (it could not be masked without revealing it).
   */
  set(token: string, value: string): this {
    const match = /^\{\{(?:secret|decrypt):([^}]+)\}\}$/.exec(token)
    if (match === null)
      throw new ExecError('EXEC_INVALID_OPTION', 'tokens look like {{secret:NAME}} or {{decrypt:ID}}')
    if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH)
      throw new ExecError(
        'EXEC_SECRET_TOO_SHORT',
        `the value of ${token} is shorter than ${MIN_SECRET_LENGTH} characters; store a longer secret`,
        { data: { name: match[1], minLength: MIN_SECRET_LENGTH } },
      )
    this.#values.set(token, value)
    return this
  }

  delete(token: string): boolean {
    return this.#values.delete(token)
  }

  resolve(token: string): string | undefined {
    return this.#values.get(token)
  }

  *heldValues(): Iterable<{ label: string; value: string }> {
    for (const [token, value] of this.#values)
      yield { label: token.slice(2, -2).split(':')[1] ?? 'secret', value }
  }
}
