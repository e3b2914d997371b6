import type { RefStore } from './ports.js'

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

  /** Stores `value` under an exact token such as `{{secret:api-key}}`. */
  set(token: string, value: string): this {
    if (!/^\{\{(secret|decrypt):[^}]+\}\}$/.test(token))
      throw new TypeError('tokens look like {{secret:NAME}} or {{decrypt:ID}}')
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
