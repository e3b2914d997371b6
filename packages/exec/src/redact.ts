const MIN_SECRET_LENGTH = 4
const MIN_LINE_LENGTH = 8

const ANSI_PATTERN =
  // CSI, OSC (BEL or ST terminated), and two-character escapes.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching terminal escapes is the point
  /\u001B\[[0-?]*[ -/]*[@-~]|\u001B\][^\u0007\u001B]*(?:\u0007|\u001B\\)|\u001B[@-Z\\-_]/g

/** Removes ANSI escape sequences (colours, cursor movement, OSC titles). */
export function stripAnsi(text: string): string {
  return text.includes('\u001B') ? text.replace(ANSI_PATTERN, '') : text
}

function base64Variants(bytes: Buffer): string[] {
  const variants: string[] = []
  for (let shift = 0; shift < 3; shift++) {
    const shifted = shift === 0 ? bytes : Buffer.concat([Buffer.alloc(shift), bytes])
    const encoded = shifted.toString('base64')
    // Characters fully determined by the value's bytes: skip those mixed with the unknown prefix,
    // and stop before the last group, which mixes with whatever follows.
    const skip = shift === 0 ? 0 : shift + 1
    const fullGroups = Math.floor(shifted.length / 3) * 4
    const core = encoded.slice(skip, fullGroups)
    if (core.length >= MIN_SECRET_LENGTH) variants.push(core, core.replaceAll('+', '-').replaceAll('/', '_'))
    if (shift === 0) {
      variants.push(encoded, encoded.replace(/=+$/, ''))
      const urlSafe = encoded.replaceAll('+', '-').replaceAll('/', '_')
      variants.push(urlSafe, urlSafe.replace(/=+$/, ''))
    }
  }
  return variants
}

function xmlEscape(value: string): string {
  return value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;')
}

/** Every form of `value` the redactor looks for (SECURITY.md SEC-4). */
export function encodedForms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8')
  const forms = [
    value,
    JSON.stringify(value).slice(1, -1),
    encodeURIComponent(value),
    xmlEscape(value),
    bytes.toString('hex'),
    bytes.toString('hex').toUpperCase(),
    ...base64Variants(bytes),
  ]
  if (value.includes('\n')) {
    for (const line of value.split(/\r?\n/)) if (line.length >= MIN_LINE_LENGTH) forms.push(line)
  }
  return forms
}

/**
 * Masks known secret values, and their common encodings, in text before it is returned, stored
 * or logged. Longest forms are replaced first, so a secret containing another is masked whole.
 * A safety net against accidents, not a control against a determined agent (SEC-9).
 */
export class Redactor {
  readonly #labels = new Map<string, string>()
  #pattern: RegExp | undefined
  #maxLength = 0

  /** Registers a value under a label; it will show as `[secret:<label>]`. Values under 4 characters are ignored. */
  add(value: string, label: string): this {
    if (value.length < MIN_SECRET_LENGTH) return this
    for (const form of encodedForms(value)) {
      if (form.length < MIN_SECRET_LENGTH || this.#labels.has(form)) continue
      this.#labels.set(form, label)
    }
    this.#pattern = undefined
    return this
  }

  /** True when nothing is registered: callers skip redaction entirely. */
  get isEmpty(): boolean {
    return this.#labels.size === 0
  }

  /** Length of the longest registered form. */
  get maxFormLength(): number {
    this.#compile()
    return this.#maxLength
  }

  /**
   * Length of the longest suffix of `text` that is the start of a registered form: the part a
   * streaming redactor must hold back, because the next chunk could complete a secret.
   */
  pendingSuffixLength(text: string): number {
    this.#compile()
    const window = Math.min(text.length, this.#maxLength - 1)
    for (let length = window; length > 0; length--) {
      const suffix = text.slice(text.length - length)
      for (const form of this.#labels.keys())
        if (form.length > length && form.startsWith(suffix)) return length
    }
    return 0
  }

  #compile(): RegExp | undefined {
    if (this.#pattern === undefined && this.#labels.size > 0) {
      const forms = [...this.#labels.keys()].sort((a, b) => b.length - a.length)
      this.#maxLength = forms[0]?.length ?? 0
      this.#pattern = new RegExp(
        forms.map((form) => form.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'),
        'g',
      )
    }
    return this.#pattern
  }

  /** Returns `text` with every registered form replaced by its mask. */
  redact(text: string): string {
    const pattern = this.#compile()
    if (pattern === undefined) return text
    return text.replace(pattern, (match) => `[secret:${this.#labels.get(match) ?? 'redacted'}]`)
  }

  /** Redacts, and also catches values split by ANSI escapes (falling back to the stripped text). */
  redactTerminal(text: string): string {
    const redacted = this.redact(text)
    if (!redacted.includes('\u001B')) return redacted
    const stripped = stripAnsi(redacted)
    const strippedRedacted = this.redact(stripped)
    return strippedRedacted === stripped ? redacted : strippedRedacted
  }

  /** A streaming view that holds back enough characters to catch a value split across chunks (SEC-5). */
  stream(options: { terminal?: boolean } = {}): StreamRedactor {
    return new StreamRedactor(this, options.terminal === true)
  }
}

/** Redacts a stream chunk by chunk; call {@link StreamRedactor.flush} at the end. */
export class StreamRedactor {
  readonly #redactor: Redactor
  readonly #terminal: boolean
  #pending = ''

  constructor(redactor: Redactor, terminal: boolean) {
    this.#redactor = redactor
    this.#terminal = terminal
  }

  /** Returns the text that is safe to emit now. */
  push(chunk: string): string {
    const combined = this.#pending + chunk
    const redacted = this.#terminal
      ? this.#redactor.redactTerminal(combined)
      : this.#redactor.redact(combined)
    // Hold back only what could be the start of a secret: a prompt such as "name? " is released
    // at once, a half-written secret waits for the next chunk.
    let hold = this.#redactor.pendingSuffixLength(redacted)
    // Never split a UTF-16 surrogate pair between what is emitted and what is held.
    const cut = redacted.length - hold
    if (hold > 0 && cut > 0 && /[\uD800-\uDBFF]/.test(redacted.charAt(cut - 1))) hold++
    this.#pending = redacted.slice(redacted.length - hold)
    return redacted.slice(0, redacted.length - hold)
  }

  /** Returns whatever was held back. */
  flush(): string {
    const rest = this.#pending
    this.#pending = ''
    return rest
  }
}
