import { ExecError } from './errors.js'
import { refuseUnknownKeys } from './option-keys.js'

/**
 * Shortest secret value exec accepts (SECURITY.md SEC-4). Shorter values cannot be masked safely:
 * masking them marks unrelated text (`seq -w 0 9999` would mark the line equal to a 4-digit PIN)
 * and so reveals them. `MemoryRefStore`, the redactor and every resolved reference refuse them
 * with `EXEC_SECRET_TOO_SHORT`; a vault should refuse to store them.
 */
export const MIN_SECRET_LENGTH = 8

const checkStreamKeys = refuseUnknownKeys('Redactor.stream options', ['stripAnsi'])

/** Escape strings (OSC titles, DCS) longer than this while unterminated are not waited for. */
const MAX_ESCAPE_LENGTH = 4096

/** Held text beyond this is compacted to its visible characters (see {@link StreamRedactor.push}). */
const MAX_HOLD = 4 * MAX_ESCAPE_LENGTH

const ANSI_PATTERN =
  // CSI; OSC/DCS/SOS/PM/APC strings (BEL or ST terminated); nF escapes such as `ESC ( B`; two-character escapes.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching terminal escapes is the point
  /\u001B\[[0-?]*[ -/]*[@-~]|\u001B[\]PX^_][^\u0007\u001B]*(?:\u0007|\u001B\\)|\u001B[ -/]+[0-~]|\u001B[0-~]/g

/** Removes ANSI escape sequences (colours, cursor movement, character sets, OSC titles). */
export function stripAnsi(text: string): string {
  return text.includes('\u001B') ? text.replace(ANSI_PATTERN, '') : text
}

/**
 * Characters a terminal does not show: C0 controls other than tab, newline and backspace (which is
 * handled apart), DEL, C1 controls, and zero-width or direction-formatting code points.
 */
const INVISIBLE_RANGES =
  '\\u0000-\\u0007\\u000B-\\u001F\\u007F-\\u009F\\u00AD\\u200B-\\u200F\\u202A-\\u202E\\u2060-\\u2064\\u2066-\\u2069\\uFEFF'
const INVISIBLE = new RegExp(`[${INVISIBLE_RANGES}]`)
/** Anything that makes the visible text differ from the raw text: the above, plus backspace. */
const SPECIAL = new RegExp(`[\\u0008${INVISIBLE_RANGES}]`)

/**
 * End of the escape sequence starting at `start` (`text[start]` is ESC), or -1 when the text ends
 * before the sequence does.
 */
function escapeEnd(text: string, start: number): number {
  const length = text.length
  if (start + 1 >= length) return -1
  const kind = text.charCodeAt(start + 1)
  if (kind === 0x5b) {
    // CSI: parameters 0x30–0x3F, intermediates 0x20–0x2F, a final byte 0x40–0x7E.
    for (let index = start + 2; index < length; index++) {
      const code = text.charCodeAt(index)
      if (code >= 0x40 && code <= 0x7e) return index + 1
      if (code < 0x20 || code > 0x3f) return index // malformed: the sequence ends before it
    }
    return -1
  }
  if (kind === 0x5d || kind === 0x50 || kind === 0x58 || kind === 0x5e || kind === 0x5f) {
    // OSC, DCS, SOS, PM, APC: a string ended by BEL or ST (ESC \); another ESC aborts it.
    for (let index = start + 2; index < length; index++) {
      const code = text.charCodeAt(index)
      if (code === 0x07) return index + 1
      if (code === 0x1b) {
        if (index + 1 >= length) return -1
        return text.charCodeAt(index + 1) === 0x5c ? index + 2 : index
      }
    }
    return -1
  }
  if (kind >= 0x20 && kind <= 0x2f) {
    // nF (`ESC ( B` selects a character set): intermediates, then a final byte.
    for (let index = start + 2; index < length; index++) {
      const code = text.charCodeAt(index)
      if (code >= 0x30 && code <= 0x7e) return index + 1
      if (code < 0x20 || code > 0x2f) return index
    }
    return -1
  }
  return kind >= 0x30 && kind <= 0x7e ? start + 2 : start + 1
}

/** Text as a terminal shows it, with the way back to the raw text. */
interface View {
  /** The visible characters. */
  readonly text: string
  /** Raw index of each visible character; `undefined` when the view is the raw text itself. */
  readonly raw: readonly number[] | undefined
  /** Raw spans of escape sequences, in order. */
  readonly escapes: ReadonlyArray<readonly [number, number]>
  /** Raw length that was read; an unfinished escape sequence starts here. */
  readonly scanned: number
}

function viewOf(text: string, final: boolean): View {
  if (!SPECIAL.test(text)) return { text, raw: undefined, escapes: [], scanned: text.length }
  const codes: number[] = []
  const raw: number[] = []
  const escapes: Array<readonly [number, number]> = []
  let index = 0
  while (index < text.length) {
    const code = text.charCodeAt(index)
    if (code === 0x1b) {
      let end = escapeEnd(text, index)
      if (end < 0) {
        if (!final && text.length - index <= MAX_ESCAPE_LENGTH) break // wait for the rest
        end = final ? text.length : index + 1
      }
      escapes.push([index, end])
      index = end
      continue
    }
    if (code === 0x08) {
      // Backspace: the next character takes the previous one's place on screen.
      if (codes.length > 0 && codes[codes.length - 1] !== 0x0a) {
        codes.pop()
        raw.pop()
      }
    } else if (!INVISIBLE.test(text[index] as string)) {
      codes.push(code)
      raw.push(index)
    }
    index++
  }
  let visible = ''
  for (let at = 0; at < codes.length; at += 8192)
    visible += String.fromCharCode(...codes.slice(at, at + 8192))
  return { text: visible, raw, escapes, scanned: index }
}

interface Range {
  start: number
  end: number
  label: string
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
    variants.push(core, core.replaceAll('+', '-').replaceAll('/', '_'))
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

function urlForms(value: string): string[] {
  const component = encodeURIComponent(value)
  // RFC 3986 also escapes !'()* (Python's quote, Go's QueryEscape); forms use + for spaces.
  const strict = component.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  const forms = [component, strict, component.replaceAll('%20', '+'), strict.replaceAll('%20', '+')]
  return [...forms, ...forms.map((form) => form.replace(/%[0-9A-F]{2}/g, (percent) => percent.toLowerCase()))]
}

/**
 * `value` inside a JSON string as encoders write it: as `JSON.stringify` does, with every non-ASCII
 * character as `\uXXXX` (Python's `json.dumps` by default, lower and upper case hex), and with
 * `<`, `>` and `&` escaped too (Go's `encoding/json`).
 */
function jsonForms(value: string): string[] {
  const json = JSON.stringify(value).slice(1, -1)
  const unicodeEscaped = (pattern: RegExp, upper: boolean) =>
    json.replace(pattern, (char) => {
      const hex = char.charCodeAt(0).toString(16).padStart(4, '0')
      return `\\u${upper ? hex.toUpperCase() : hex}`
    })
  return [
    json,
    unicodeEscaped(/[\u0080-\uffff]/g, false),
    unicodeEscaped(/[\u0080-\uffff]/g, true),
    unicodeEscaped(/[<>&\u2028\u2029]/g, false),
  ]
}

/**
 * `value` as shells quote it when they print it: the inside of `'…'` with each `'` as `'\''` (bash's
 * `set -x` trace) or `'"'"'` (dash's `export -p`), and backslash-escaped as bash's `printf %q`
 * writes printable text.
 */
function shellQuotedForms(value: string): string[] {
  return [value.replaceAll("'", "'\\''"), value.replaceAll("'", `'"'"'`), printfQuoted(value)]
}

/**
 * As bash 5's `printf %q` writes printable text: a backslash before every character but letters,
 * digits, non-ASCII and `_ . / : = @ % + -`, and before `~` and `#` only at the start (`a,b` is
 * `a\,b`, `~x` is `\~x`, `a~b` stays).
 */
function printfQuoted(value: string): string {
  const escaped = value.replace(/[^A-Za-z0-9_./:=@%+\-~#\u0080-\uffff]/g, '\\$&')
  return /^[~#]/.test(escaped) ? `\\${escaped}` : escaped
}

/**
 * Every form of `value` the redactor looks for (SECURITY.md SEC-4). `wrapped` forms (base64, hex)
 * are also found when line breaks cut them, as `base64` (76 columns) and `xxd -p` (60) print them.
 */
function encodedForms(value: string): { plain: string[]; wrapped: string[] } {
  const bytes = Buffer.from(value, 'utf8')
  const plain = [value, ...jsonForms(value), ...urlForms(value), xmlEscape(value), ...shellQuotedForms(value)]
  if (value.includes('\n')) {
    for (const line of value.split(/\r?\n/)) if (line.length >= MIN_SECRET_LENGTH) plain.push(line)
  }
  const hex = bytes.toString('hex')
  const wrapped = [hex, hex.toUpperCase(), ...base64Variants(bytes)]
  return { plain, wrapped }
}

/** The compiled alternation of a set of forms, and an index by first character for prefix checks. */
class FormSet {
  readonly labels = new Map<string, string>()
  #pattern: RegExp | undefined
  #byFirst: Map<string, string[]> | undefined
  #maxLength = 0

  add(form: string, label: string): void {
    if (form.length < MIN_SECRET_LENGTH || this.labels.has(form)) return
    this.labels.set(form, label)
    this.#pattern = undefined
    this.#byFirst = undefined
  }

  #compile(): void {
    const forms = [...this.labels.keys()].sort((a, b) => b.length - a.length)
    this.#maxLength = forms[0]?.length ?? 0
    this.#pattern = new RegExp(
      forms.map((form) => form.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'),
      'g',
    )
    this.#byFirst = new Map()
    for (const form of forms) {
      const first = form.charAt(0)
      const list = this.#byFirst.get(first)
      if (list === undefined) this.#byFirst.set(first, [form])
      else list.push(form)
    }
  }

  /** Matches in `text` as `[start, end, label]`, longest form first at each position. */
  matches(text: string): Array<[number, number, string]> {
    if (this.labels.size === 0) return []
    if (this.#pattern === undefined) this.#compile()
    const pattern = this.#pattern as RegExp
    const found: Array<[number, number, string]> = []
    pattern.lastIndex = 0
    for (let match = pattern.exec(text); match !== null; match = pattern.exec(text))
      found.push([match.index, match.index + match[0].length, this.labels.get(match[0]) ?? 'redacted'])
    return found
  }

  /** Length of the longest suffix of `text` that starts some form without completing it. */
  pendingSuffix(text: string): number {
    if (this.labels.size === 0) return 0
    if (this.#byFirst === undefined) this.#compile()
    const byFirst = this.#byFirst as Map<string, string[]>
    for (let at = Math.max(0, text.length - this.#maxLength + 1); at < text.length; at++) {
      const candidates = byFirst.get(text.charAt(at))
      if (candidates === undefined) continue
      const suffix = text.slice(at)
      if (candidates.some((form) => form.length > suffix.length && form.startsWith(suffix)))
        return text.length - at
    }
    return 0
  }
}

/**
 * Masks known secret values, and their common encodings, in text before it is returned, stored
 * or logged, as `[secret:<label>]`. It reads the text as a terminal shows it: escape sequences,
 * invisible characters and backspaced characters inside a value do not hide it, and base64 or hex
 * cut by line breaks is still found. Longest forms are replaced first, so a secret containing
 * another is masked whole. A safety net against accidents, not a control against a determined
 * agent (SEC-9).
 */
export class Redactor {
  readonly #plain = new FormSet()
  readonly #wrapped = new FormSet()

  /**
   * Registers a value under a label; it will show as `[secret:<label>]`.
   * @throws ExecError `EXEC_SECRET_TOO_SHORT` for values under {@link MIN_SECRET_LENGTH} characters.
   */
  add(value: string, label: string): this {
    if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH)
      throw new ExecError(
        'EXEC_SECRET_TOO_SHORT',
        `secret ${JSON.stringify(label)} is shorter than ${MIN_SECRET_LENGTH} characters and cannot be masked without revealing it`,
        { data: { name: label, minLength: MIN_SECRET_LENGTH } },
      )
    const { plain, wrapped } = encodedForms(value)
    for (const form of plain) this.#plain.add(form, label)
    for (const form of wrapped) this.#wrapped.add(form, label)
    return this
  }

  /** True when nothing is registered: callers skip redaction entirely. */
  get isEmpty(): boolean {
    return this.#plain.labels.size === 0 && this.#wrapped.labels.size === 0
  }

  /** Returns `text` with every registered form masked. */
  redact(text: string): string {
    return this.#process(text, true, false).emit
  }

  /**
   * A streaming view for output that arrives in chunks (SEC-5): it holds back only what could
   * still become a secret (or an unfinished escape sequence), so a prompt is shown at once.
   * With `stripAnsi`, escape sequences are removed from what it emits.
   */
  stream(options: { stripAnsi?: boolean } = {}): StreamRedactor {
    checkStreamKeys(options)
    const strip = options.stripAnsi === true
    return new ChunkRedactor((text, final) => this.#process(text, final, strip))
  }

  /** Masks `raw`; unless `final`, keeps back a tail that the next chunk could turn into a secret. */
  #process(raw: string, final: boolean, strip: boolean): { emit: string; hold: string } {
    const view = viewOf(raw, final)
    const rawIndex = (visible: number) => (view.raw === undefined ? visible : (view.raw[visible] as number))
    const ranges: Range[] = []
    const addMatch = (start: number, end: number, label: string) =>
      ranges.push({ start: rawIndex(start), end: rawIndex(end - 1) + 1, label })
    for (const [start, end, label] of this.#plain.matches(view.text)) addMatch(start, end, label)
    // Wrapped forms: the same text without line breaks, mapped back to visible positions.
    let unwrapped = view.text
    let visibleOf: number[] | undefined
    if (this.#wrapped.labels.size > 0 && view.text.includes('\n')) {
      visibleOf = []
      for (let index = 0; index < view.text.length; index++)
        if (view.text[index] !== '\n') visibleOf.push(index)
      unwrapped = view.text.replaceAll('\n', '')
    }
    const visibleIndex = (at: number) => (visibleOf === undefined ? at : (visibleOf[at] as number))
    for (const [start, end, label] of this.#wrapped.matches(unwrapped))
      addMatch(visibleIndex(start), visibleIndex(end - 1) + 1, label)
    const merged = mergeRanges(ranges)

    let holdStart = final ? raw.length : view.scanned
    if (!final) {
      const plainHold = this.#plain.pendingSuffix(view.text)
      if (plainHold > 0) holdStart = Math.min(holdStart, rawIndex(view.text.length - plainHold))
      const wrappedHold = this.#wrapped.pendingSuffix(unwrapped)
      if (wrappedHold > 0)
        holdStart = Math.min(holdStart, rawIndex(visibleIndex(unwrapped.length - wrappedHold)))
      // A match reaching into the held tail may still grow into a longer form: hold it whole.
      while (merged.length > 0 && (merged[merged.length - 1] as Range).end > holdStart)
        holdStart = Math.min(holdStart, (merged.pop() as Range).start)
    }

    let emit = ''
    let cursor = 0
    let firstEscape = 0
    const copy = (from: number, to: number) => {
      if (!strip || view.escapes.length === 0) {
        emit += raw.slice(from, to)
        return
      }
      let at = from
      while (
        firstEscape < view.escapes.length &&
        (view.escapes[firstEscape] as readonly [number, number])[1] <= from
      )
        firstEscape++
      for (let next = firstEscape; next < view.escapes.length; next++) {
        const [start, end] = view.escapes[next] as readonly [number, number]
        if (start >= to) break
        emit += raw.slice(at, Math.max(at, start))
        at = Math.max(at, end)
      }
      if (at < to) emit += raw.slice(at, to)
    }
    for (const range of merged) {
      copy(cursor, range.start)
      emit += `[secret:${range.label}]`
      // Keep the terminal's state (a colour switched on or off inside the value) unless stripping.
      if (!strip)
        for (const [start, end] of view.escapes)
          if (start >= range.start && end <= range.end) emit += raw.slice(start, end)
      cursor = range.end
    }
    copy(cursor, holdStart)
    return { emit, hold: raw.slice(holdStart) }
  }
}

/**
 * A stream redactor for `redactor`, or undefined when one would hand every chunk back unchanged
 * (nothing registered, no stripping asked): spawners then skip decoding and masking entirely.
 */
export function streamRedactorFor(
  redactor: Redactor,
  options: { stripAnsi?: boolean } = {},
): StreamRedactor | undefined {
  return redactor.isEmpty && options.stripAnsi !== true ? undefined : redactor.stream(options)
}

function mergeRanges(ranges: Range[]): Range[] {
  if (ranges.length <= 1) return ranges
  ranges.sort((a, b) => a.start - b.start || b.end - a.end)
  const merged: Range[] = [ranges[0] as Range]
  for (const range of ranges.slice(1)) {
    const last = merged[merged.length - 1] as Range
    if (range.start < last.end) last.end = Math.max(last.end, range.end)
    else merged.push(range)
  }
  return merged
}

/** Redacts a stream chunk by chunk; call {@link StreamRedactor.flush} at the end. Made by {@link Redactor.stream}. */
export interface StreamRedactor {
  /** Returns the text that is safe to emit now. */
  push(chunk: string): string
  /** Returns whatever was held back, masked. */
  flush(): string
}

/** The {@link StreamRedactor} {@link Redactor.stream} makes (a type only in the public API). */
class ChunkRedactor implements StreamRedactor {
  readonly #process: (text: string, final: boolean) => { emit: string; hold: string }
  #pending = ''

  /** @internal Use {@link Redactor.stream}. */
  constructor(process: (text: string, final: boolean) => { emit: string; hold: string }) {
    this.#process = process
  }

  /** Returns the text that is safe to emit now. */
  push(chunk: string): string {
    const { emit, hold } = this.#process(this.#pending + chunk, false)
    // A held secret prefix padded with endless escapes or invisible characters: keep only what a
    // terminal would show of it (bounded by the longest form) and the unfinished escape, if any.
    if (hold.length > MAX_HOLD) {
      const view = viewOf(hold, false)
      this.#pending = view.text + hold.slice(view.scanned)
    } else this.#pending = hold
    return emit
  }

  /** Returns whatever was held back, masked. */
  flush(): string {
    const { emit } = this.#process(this.#pending, true)
    this.#pending = ''
    return emit
  }
}
