import { randomBytes } from 'node:crypto'
import { styleText } from 'node:util'
import Table from 'cli-table3'

/**
 * Characters a terminal acts on instead of showing: C0 controls but tab and line feed (escape
 * sequences, carriage return, backspace, bell), DEL and the C1 controls (U+009B is a CSI on some
 * terminals), and the bidirectional and invisible formatting marks that reorder or hide what is
 * around them.
 */
const TERMINAL_UNSAFE = /(?![\t\n])[\p{Cc}\u061c\u200b\u200e\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]/gu

/**
 * `text` as a terminal may show it: every character a terminal would act on (an escape sequence
 * that clears the line or sets the clipboard, a carriage return that overwrites it, a bidi override)
 * written out as `\u{1b}`, so what a job's command or output holds is what the operator reads (the
 * approval summaries' rule, SECURITY.md CRON-5). Line breaks and tabs stay; `\r\n` is a line break.
 */
export function terminalText(text: string): string {
  return text
    .replace(/\r\n/g, '\n')
    .replace(TERMINAL_UNSAFE, (character) => `\\u{${(character.codePointAt(0) as number).toString(16)}}`)
}

/**
 * The same characters inside a JSON document's strings, as `\u` escapes (the same values, parsed):
 * `JSON.stringify` escapes the C0 controls itself, and its only line feeds are its own.
 */
const JSON_UNSAFE = /(?!\n)[\p{Cc}\u061c\u200b\u200e\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]/gu

/** A stream `lango` writes to: `process.stdout`/`stderr` or, in tests, anything writable. */
interface OutputStream {
  write(text: string): boolean
  readonly isTTY?: boolean
}

/** What a command reads and writes; `process`'s by default. */
export interface CliIo {
  readonly stdout: OutputStream
  readonly stderr: OutputStream
  readonly stdin: NodeJS.ReadableStream & { readonly isTTY?: boolean }
  readonly env: NodeJS.ProcessEnv
}

/** A `node:util` `styleText` format. */
export type Style = Parameters<typeof styleText>[0]

/** A table cell: text, or text with a style (applied only when colour is on). */
export type Cell =
  | string
  | number
  | boolean
  | null
  | undefined
  | { readonly text: string; readonly style: Style }

/** Borderless columns, two spaces apart: readable, and `grep`/`awk` friendly. */
const PLAIN_CHARS = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: '  ',
}

/**
 * Colour only on a terminal, never with `NO_COLOR` (https://no-color.org) or `TERM=dumb`;
 * `FORCE_COLOR` (other than `0`) turns it on anywhere.
 */
function colorEnabled(stream: OutputStream, env: NodeJS.ProcessEnv): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  if (env.FORCE_COLOR !== undefined) return env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false'
  return stream.isTTY === true && env.TERM !== 'dumb'
}

/**
 * Everything a command prints. With `--json`, stdout gets exactly one JSON document and nothing
 * else; people get tables and lines. Notes, progress and errors always go to stderr.
 */
export class Output {
  readonly json: boolean
  readonly #io: CliIo
  readonly #color: { readonly stdout: boolean; readonly stderr: boolean }
  /**
   * Stands for ESC in this output's own styling until it is written, so that every ESC the text
   * holds otherwise (from a job's output, a command, a server's message) is shown escaped. Random:
   * no text from elsewhere can hold it.
   */
  readonly #escape = `\u{e000}${randomBytes(8).toString('hex')}\u{e001}`
  #documentWritten = false

  constructor(io: CliIo, options: { readonly json: boolean }) {
    this.#io = io
    this.json = options.json
    this.#color = { stdout: colorEnabled(io.stdout, io.env), stderr: colorEnabled(io.stderr, io.env) }
  }

  /** Writes the `--json` document (once: a second call is ignored, so stdout stays one document). */
  document(value: unknown): void {
    if (this.#documentWritten) return
    this.#documentWritten = true
    const text = JSON.stringify(value, null, 2).replace(
      JSON_UNSAFE,
      (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
    )
    this.#io.stdout.write(`${text}\n`)
  }

  /** True once the `--json` document was written. */
  get documentWritten(): boolean {
    return this.#documentWritten
  }

  /** A line for people on stdout; nothing under `--json`. */
  print(text = ''): void {
    if (!this.json) this.#io.stdout.write(`${this.#shown(text)}\n`)
  }

  /** A line on stderr (progress, hints, warnings), also under `--json`. */
  note(text: string): void {
    this.#io.stderr.write(`${this.#shown(text)}\n`)
  }

  /** `error: <message>` on stderr, with each issue on its own line below. */
  error(message: string, details: readonly string[] = []): void {
    const label = this.paint('red', 'error:', 'stderr')
    this.#io.stderr.write(
      this.#shown(`${label} ${message}\n${details.map((line) => `  ${line}\n`).join('')}`),
    )
  }

  /**
   * `text` in `style` when colour is on for that stream. Everything printed goes through
   * {@link terminalText}; only the styling added here reaches the terminal as escape sequences.
   */
  paint(style: Style, text: string, stream: 'stdout' | 'stderr' = 'stdout'): string {
    const shown = terminalText(text)
    return this.#color[stream] ? styleText(style, shown).replaceAll('\u001b', this.#escape) : shown
  }

  /** `text` made safe for a terminal ({@link terminalText}), this output's own styling restored. */
  #shown(text: string): string {
    return terminalText(text).replaceAll(this.#escape, '\u001b')
  }

  /** A table on stdout (people only); `empty` is printed instead when there are no rows. */
  table(head: readonly string[], rows: readonly (readonly Cell[])[], empty = '(none)'): void {
    if (this.json) return
    if (rows.length === 0) {
      this.print(this.paint('dim', empty))
      return
    }
    // Each cell made safe on its own, so that cli-table3 measures the styled cells right.
    const table = new Table({
      head: head.map((title) => this.#shown(this.paint('bold', title))),
      chars: PLAIN_CHARS,
      style: { 'padding-left': 0, 'padding-right': 0, head: [], border: [] },
    })
    for (const row of rows) table.push(row.map((cell) => this.#shown(this.#cell(cell))))
    // cli-table3 pads every line to the table width: trailing spaces help nobody.
    const lines = table
      .toString()
      .split('\n')
      .map((line) => line.trimEnd())
    this.#io.stdout.write(`${lines.join('\n')}\n`)
  }

  /** `label  value` lines, labels aligned (one record for people). */
  fields(pairs: readonly (readonly [string, Cell])[]): void {
    if (this.json) return
    const width = Math.max(...pairs.map(([label]) => label.length))
    for (const [label, value] of pairs)
      this.print(`${this.paint('bold', `${label}:`.padEnd(width + 1))}  ${this.#cell(value)}`)
  }

  /** A status word coloured by what it means (green done, red failed, yellow going, grey ended). */
  status(status: string | null | undefined): Cell {
    if (status === null || status === undefined) return '-'
    return { text: status, style: statusStyle(status) }
  }

  #cell(cell: Cell): string {
    if (cell === null || cell === undefined || cell === '') return '-'
    if (typeof cell === 'object') return this.paint(cell.style, cell.text)
    return String(cell)
  }
}

function statusStyle(status: string): Style {
  switch (status) {
    case 'ok':
    case 'completed':
    case 'done':
    case 'delivered':
    case 'approved':
    case 'created':
    case 'updated':
    case 'saved':
    case 'resumed':
    case 'started':
    case 'enabled':
      return 'green'
    case 'failed':
    case 'fail':
    case 'timed_out':
    case 'interrupted':
    case 'denied':
    case 'expired':
      return 'red'
    case 'running':
    case 'pending':
    case 'queued':
    case 'warn':
    case 'paused':
      return 'yellow'
    default:
      return 'gray'
  }
}

/** `2026-03-01T08:00:00.000Z` → `2026-03-01 09:00:00` in the local zone; `-` for nothing. */
export function formatTime(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '-'
  const date = new Date(value)
  if (Number.isNaN(date.getTime())) return String(value)
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`
}

/** `1234` → `1.2s`, `65000` → `1m5s`; `-` for nothing. */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-'
  if (ms < 1000) return `${Math.round(ms)}ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`
  const minutes = Math.floor(ms / 60_000)
  const seconds = Math.round((ms % 60_000) / 1000)
  if (minutes < 60) return seconds === 0 ? `${minutes}m` : `${minutes}m${seconds}s`
  const hours = Math.floor(minutes / 60)
  return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`
}

/** The first line of `text`, cut to `max` characters with `…`. */
export function oneLine(text: string | null | undefined, max = 60): string {
  if (text === null || text === undefined || text === '') return '-'
  const [first = ''] = text.split('\n')
  const cut = first.length > max ? `${first.slice(0, max - 1)}…` : first
  return text.includes('\n') && cut === first ? `${cut} …` : cut
}
