/**
 * Text helpers shared by the lango CLI guard: program-name normalisation, the "standalone word
 * lango" test, escape decoding for `echo -e`/`printf`, and the fail-closed token scan used when the
 * parser rejects a command (SECURITY.md §6.2 items 3, 6 and 8).
 */

const WINDOWS_EXECUTABLE_SUFFIX = /\.(?:exe|cmd|bat|com)$/

/**
 * Normalises a program path the way §6.2 item 3 compares it: basename after the last `/` (or `\`),
 * lower-cased, with a Windows executable suffix (`.exe .cmd .bat .com`, not `.sh`) removed.
 */
export function normalizeProgramName(path: string): string {
  const cut = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'))
  return path
    .slice(cut + 1)
    .toLowerCase()
    .replace(WINDOWS_EXECUTABLE_SUFFIX, '')
}

// `lango` as a word of its own: not part of `mylango`, `lango-helper`, `lango_test`, `lango.sh` or the
// assignment `lango=1`. A path prefix (`/usr/bin/lango`) and a Windows suffix (`lango.exe`) still count.
const LANGO_WORD = /(?<![A-Za-z0-9_.-])lango(?:\.(?:exe|cmd|bat|com))?(?![A-Za-z0-9_=-]|\.[A-Za-z0-9])/gi

/** End offset of the first standalone word `lango` in `text`, or -1 when there is none. */
function findLangoWord(text: string): number {
  LANGO_WORD.lastIndex = 0
  const match = LANGO_WORD.exec(text)
  return match === null ? -1 : match.index + match[0].length
}

/** True when `text` holds the standalone word `lango` (any case). */
export function containsLangoWord(text: string): boolean {
  return findLangoWord(text) !== -1
}

/** Removes quote characters, backslashes and line continuations: a rough shell quote removal. */
export function stripShellQuoting(text: string): string {
  return text.replace(/\\\r?\n/g, '').replace(/['"\\]/g, '')
}

// Constructs that expand to nothing or may: `$()`, `` `…` ``, `$(…)` and `${…}` without nesting, `$name`,
// `$1`, `$@`, `$*`, `$!`, `$-`, and empty quotes. `$?`, `$$`, `$#`, `${#x}` (numbers) and `${x:-word}`,
// `${x:=word}`, `${x:?}` with a non-empty word (never empty) are kept.
const EMPTY_EXPANSIONS = /\$\([^()]*\)|`[^`]*`|\$\{[^{}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*!-]|''|""/g

function removeIfMayBeEmpty(match: string): string {
  if (!match.startsWith('${')) return ''
  const body = match.slice(2, -1)
  if (body.startsWith('#') || /^[?$#]$/.test(body)) return match
  return /^[^:]*:(?:[-=]..*|\?.*)$/s.test(body) && !/:[-=](?:''|"")?$/.test(body) ? match : ''
}

/**
 * `text` with every expansion that may be empty removed (issue 11 finding 3), so a name split by them
 * shows: `lan$()go`, ``lan``go``, `lan${x}go` and `lan"$x"go` all read `lango`. A rough textual
 * rewrite for heuristics (free text, interpreter code, unparsable input); parsed words go through the
 * word patterns of `word-shape.ts` instead.
 */
export function removeEmptyExpansions(text: string): string {
  if (!/[$`'"]/.test(text)) return text
  let reduced = text
  // Removing `$x` from `"$x"` leaves `""`: repeat a few times so nested leftovers go too.
  for (let round = 0; round < 3; round++) {
    const next = reduced.replace(EMPTY_EXPANSIONS, removeIfMayBeEmpty)
    if (next === reduced) break
    reduced = next
  }
  return reduced
}

/** True when `text`, or `text` with its possibly empty expansions removed, holds the word `lango`. */
export function namesLango(text: string): boolean {
  if (containsLangoWord(text)) return true
  const reduced = removeEmptyExpansions(text)
  return reduced !== text && containsLangoWord(reduced)
}

/**
 * The word that follows a standalone `lango` in free text (interpreter code, a token list), skipping
 * quotes, commas, brackets and blanks, lower-cased; `undefined` when there is none.
 */
export function wordAfterLango(text: string): string | undefined {
  const end = findLangoWord(text)
  if (end === -1) return undefined
  const match = /^[\s'",[\]()]*([A-Za-z0-9][A-Za-z0-9_-]*)/.exec(text.slice(end))
  return match?.[1]?.toLowerCase()
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  a: '\u0007',
  b: '\b',
  e: '\u001b',
  E: '\u001b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  '"': '"',
  "'": "'",
}

/**
 * Decodes the backslash escapes `echo -e` and `printf` understand (`\n`, `\t`, `\\`, octal `\NNN` and
 * `\0NNN`, `\xHH`, `\uHHHH`, `\UHHHHHHHH`). Unknown escapes are kept as they are.
 */
export function decodeBackslashEscapes(text: string): string {
  if (!text.includes('\\')) return text
  return text.replace(
    /\\(?:0?([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|(.))/gs,
    (whole, octal?: string, hex?: string, unicode?: string, wide?: string, other?: string) => {
      const code = octal
        ? Number.parseInt(octal, 8)
        : hex
          ? Number.parseInt(hex, 16)
          : unicode
            ? Number.parseInt(unicode, 16)
            : wide
              ? Number.parseInt(wide, 16)
              : undefined
      if (code !== undefined) return code <= 0x10ffff ? String.fromCodePoint(code) : ''
      return (other !== undefined && SIMPLE_ESCAPES[other]) || whole
    },
  )
}

/** Longest text the guard derives from a command (printf output), in UTF-16 code units. */
const MAX_DERIVED_TEXT = 64 * 1024

/**
 * What `printf FORMAT ARGS…` prints, approximately: escapes decoded, `%s`-style conversions filled
 * from the arguments, the format reused while arguments remain (bounded).
 */
export function formatPrintf(format: string, values: readonly string[]): string {
  const decoded = decodeBackslashEscapes(format)
  let output = ''
  let next = 0
  // Reusing the format for every argument could multiply the input; stop at the guard's input cap.
  for (let round = 0; round <= values.length && output.length <= MAX_DERIVED_TEXT; round++) {
    let consumed = false
    output += decoded.replace(/%(?:%|[-+ #0]*\d*(?:\.\d*)?([a-zA-Z]))/g, (_whole, conversion?: string) => {
      if (conversion === undefined) return '%'
      consumed = true
      const value = values[next++] ?? ''
      return conversion === 'b' ? decodeBackslashEscapes(value) : value
    })
    if (!consumed || next >= values.length) break
  }
  return output
}

/** Decodes standard or URL-alphabet base64 text; `undefined` when it is not base64. */
export function decodeBase64(text: string): string | undefined {
  const compact = text.replace(/\s+/g, '')
  if (compact === '' || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(compact)) return undefined
  return Buffer.from(compact.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8')
}

/** Decodes plain hex text (`xxd -r -p`); `undefined` when it is not hex. */
export function decodeHex(text: string): string | undefined {
  const compact = text.replace(/\s+/g, '')
  if (compact === '' || compact.length % 2 !== 0 || !/^[0-9A-Fa-f]+$/.test(compact)) return undefined
  return Buffer.from(compact, 'hex').toString('utf8')
}

/** Result of {@link scanTokensForLango}. */
export interface TokenScanResult {
  /** True when some token's program name is `lango`. */
  readonly found: boolean
  /** The token after it, lower-cased, when there is one. */
  readonly nextToken: string | undefined
}

/**
 * The fail-closed scan for text the parser rejects (§6.2 item 8): split on whitespace and shell
 * operators, drop quotes and backslashes, and look for a token whose program name is `lango`.
 */
export function scanTokensForLango(text: string): TokenScanResult {
  const direct = scanTokens(text)
  if (direct.found) return direct
  const reduced = removeEmptyExpansions(text)
  return reduced === text ? direct : scanTokens(reduced)
}

function scanTokens(text: string): TokenScanResult {
  const tokens = text
    // `${NAME:-WORD}` and friends: keep WORD as a token of its own.
    .replace(/\$\{[#!]?[A-Za-z0-9_@*?]*(?:\[[^\]]*\])?(?::?[-=+?]|[#%]{1,2}|\/{1,2}|[\^,]{1,2})?/g, ' ')
    .split(/[\s;&|()<>`{}!]+/)
    .map((token) => token.replace(/['"\\]/g, '').replace(/^\$/, ''))
    .filter((token) => token !== '')
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index]
    if (token !== undefined && normalizeProgramName(token) === 'lango') {
      return { found: true, nextToken: tokens[index + 1]?.toLowerCase() }
    }
  }
  return { found: false, nextToken: undefined }
}
