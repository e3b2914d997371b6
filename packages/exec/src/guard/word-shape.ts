import type { DoubleQuotedChild, ParameterExpansionPart, Word, WordPart } from 'unbash'
import { hasUnparsedExpansion, literalWordValue, scriptOutputs } from './command-output.js'
import { decodeBackslashEscapes } from './shell-text.js'
import { SET_POSITIONAL } from './variables.js'

/*
 * A word's possible expansions are modelled as glob-like patterns over single characters (lower-cased)
 * and markers: `ANY` and `ONE` come from globs written in the text, `DYNAMIC` is an expansion whose
 * value the text does not reveal and that may be empty, `NONEMPTY` one that is never empty, `END` cuts
 * a pattern at a field boundary.
 *
 * The rule for a static match (SECURITY.md §6.2 items 3 and 6, issue 11 finding 3): a word that becomes
 * `lango` (any case, optionally with a path prefix) when every expansion that can be empty is empty is
 * a lango invocation. So a `DYNAMIC` piece is matched as the empty string when the guard decides from
 * the text alone, and as any string when it asks whether an unknown value could make the word lango.
 */

/** Any run of characters, from a `*` glob. */
const ANY = 0
/** One character from a `?` glob. */
const ONE = 1
/** A run-time value unknown from the text that may be empty (`$x`, `$(cmd)`, `"$@"`, `${x%%*}`). */
export const DYNAMIC = 2
/** End of the first field of an unquoted expansion (`c="lango cron"; $c` runs lango); the rest is ignored. */
const END = 3
/** A run-time value unknown from the text that is never empty (`${x:-fallback}` when `x` is set). */
const NONEMPTY = 4

/** A bracket expression such as `[a-c]` or `[!x]`. */
interface CharacterClass {
  readonly negated: boolean
  readonly characters: string
  readonly ranges: readonly (readonly [string, string])[]
}

/** One element of a {@link WordPattern}. */
export type PatternPiece =
  | string
  | typeof ANY
  | typeof ONE
  | typeof DYNAMIC
  | typeof END
  | typeof NONEMPTY
  | CharacterClass

/** One possible expansion of a word. */
export type WordPattern = readonly PatternPiece[]

/** What a word evaluation may know about variables and positional parameters. */
export interface WordScope {
  /**
   * Patterns of the values assigned to `name` (element `index` of an array, 0 for a scalar) anywhere
   * in the text (flow-insensitive), `undefined` when the text never assigns it. The name
   * {@link SET_POSITIONAL} holds what `set --` assigns to `$1 $2 …`.
   */
  variablePatterns(name: string, index?: number): readonly WordPattern[] | undefined
  /**
   * One past the highest element index the text assigns to `name` (0 when it assigns none), one more
   * when it also assigns elements at indices it does not fix (`a+=(x)`).
   */
  arrayLength(name: string): number
  /** `$0`, `$1`, … of an `sh -c STRING ARG0 ARG1` string; `undefined` outside one. */
  readonly positional: readonly string[] | undefined
  /** The code may move its positional parameters (`shift`, `set --`), so `$1` may be any later one. */
  readonly shifts: boolean
  /** Charges pattern pieces against the guard's work budget; throws when the budget is spent. */
  charge(pieces: number): void
  /**
   * The text is parsed again inside another (`eval "$x"`, `sh -c "…"`, code piped or fed to a
   * shell): an expansion that was joined inside double quotes before (`eval "${a[*]}"`) reaches it
   * without its quotes, so an unquoted `${a[*]}` or `$*` is read joined as well as split.
   */
  readonly reparsed: boolean
}

/** Bound on the patterns kept per word; past it the rest of the word becomes {@link DYNAMIC}. */
export const MAX_PATTERNS = 32

/** Array elements (and positional parameters) followed for a join (`"${a[*]}"`) or a field list. */
const MAX_ELEMENTS = 16

/** How a word is expanded: as a command word or argument, or as the value of `x=WORD`. */
export type WordContext = 'argument' | 'assigned'

const TARGETS = ['lango', 'lango.exe', 'lango.cmd', 'lango.bat', 'lango.com'] as const

/**
 * The patterns a word may expand to, bounded by {@link MAX_PATTERNS}. In an `'assigned'` context
 * (`x=WORD`) there is no field splitting, so `${a[@]}` and `$@` join their elements with spaces.
 */
export function wordPatterns(
  word: Word,
  scope: WordScope,
  context: WordContext = 'argument',
): PatternPiece[][] {
  const parts = word.parts
  if (parts === undefined) return hasUnparsedExpansion(word) ? [[DYNAMIC]] : [characters(word.value)]
  return concatenate(
    parts.map((part) => partPatterns(part, scope, false, context)),
    scope,
  )
}

/**
 * The fields a command argument expands to, each with its patterns: the elements of a whole-word
 * `"${a[@]}"`, `${a[*]}` or `"$@"` when the text fixes them, else the word as one field.
 */
export function wordFields(word: Word, scope: WordScope): WordPattern[][] {
  const only = word.parts?.length === 1 ? word.parts[0] : undefined
  const inner = only?.type === 'DoubleQuoted' && only.parts.length === 1 ? only.parts[0] : undefined
  const quoted = inner !== undefined
  const part = inner ?? only
  let name: string | undefined
  let star = false
  if (part?.type === 'SimpleExpansion' && (part.text === '$@' || part.text === '$*')) {
    name = part.text.slice(1)
    star = name === '*'
  } else if (
    part?.type === 'ParameterExpansion' &&
    part.operation === undefined &&
    part.prefix === undefined
  ) {
    const index = part.index?.value
    if (part.parameter === '@' || part.parameter === '*') name = part.parameter
    else if (index === '@' || index === '*') name = part.parameter
    star = part.parameter === '*' || index === '*'
  }
  // `"${a[*]}"` is one field: the joined elements.
  const elements = name === undefined || (quoted && star) ? undefined : arrayElements(name, scope)
  return elements ?? [wordPatterns(word, scope)]
}

/**
 * The elements of array `name`, or of the positional parameters for `@` and `*`, with their
 * patterns; `undefined` when the text does not fix them. Unset elements are skipped, as bash does.
 */
function arrayElements(name: string, scope: WordScope): WordPattern[][] | undefined {
  if (name === '@' || name === '*') {
    if (scope.positional !== undefined) {
      if (scope.shifts) return undefined
      return scope.positional.slice(1, MAX_ELEMENTS + 1).map((value) => [characters(value)])
    }
    name = SET_POSITIONAL
  }
  const length = Math.min(scope.arrayLength(name), MAX_ELEMENTS)
  if (length === 0) return undefined
  const elements: WordPattern[][] = []
  for (let index = 0; index < length; index++) {
    const values = scope.variablePatterns(name, index)
    if (values !== undefined && values.length > 0) elements.push([...values])
  }
  return elements
}

/**
 * `"${a[*]}"` and `"$*"` join the elements with the first character of IFS (a space when IFS is
 * unset, nothing when it is empty); `${a[@]}` in an assignment joins them with a space. IFS is
 * followed flow-insensitively, so every separator the text may set is tried. `undefined` when the
 * text does not fix the elements.
 */
function joinedElements(name: string, star: boolean, scope: WordScope): WordPattern[] | undefined {
  const elements = arrayElements(name, scope)
  if (elements === undefined) return undefined
  const separators: WordPattern[] = [[' ']]
  if (star) {
    for (const value of scope.variablePatterns('IFS') ?? []) {
      const first = value[0]
      const separator: WordPattern =
        first === undefined ? [] : typeof first === 'string' ? [first] : [DYNAMIC]
      if (!separators.some((known) => known.length === separator.length && known[0] === separator[0]))
        separators.push(separator)
    }
  }
  const joined: WordPattern[] = []
  for (const separator of separators) {
    const alternatives: WordPattern[][] = []
    for (const element of elements) {
      if (alternatives.length > 0) alternatives.push([separator])
      alternatives.push(element)
    }
    joined.push(...concatenate(alternatives, scope))
  }
  // Flow-insensitive: later elements may not be set yet (`a+=(x)` in a branch), so the first element
  // alone counts too, and the variable may also be unset where it is used.
  const first = elements[0] ?? []
  return [...first, ...joined].slice(0, MAX_PATTERNS - 1).concat([[]])
}

/**
 * What `printf FORMAT ARGS…` prints (for `printf -v`) when some argument is known only from the
 * scope: conversions take the argument fields in turn, and the format is reused while fields remain.
 * Numeric conversions print digits; a format the text does not fix gives {@link DYNAMIC}.
 */
export function printfPatterns(format: Word, args: readonly Word[], scope: WordScope): WordPattern[] {
  const text = literalWordValue(format)
  if (text === undefined) return [[DYNAMIC]]
  const fields: WordPattern[][] = []
  for (const argument of args) {
    for (const field of wordFields(argument, scope)) if (fields.length < MAX_ELEMENTS) fields.push(field)
  }
  const pieces = decodeBackslashEscapes(text).split(/(%(?:%|[-+ #0]*\d*(?:\.\d*)?[a-zA-Z]))/)
  const alternatives: WordPattern[][] = []
  let next = 0
  for (let round = 0; round <= fields.length; round++) {
    let consumed = false
    for (const [position, piece] of pieces.entries()) {
      if (position % 2 === 0) {
        if (piece !== '') alternatives.push([characters(piece)])
        continue
      }
      if (piece === '%%') {
        alternatives.push([['%']])
        continue
      }
      consumed = true
      const field = fields[next++]
      if (/[diouxXeEfFgGaA]$/.test(piece)) alternatives.push([['0']])
      else alternatives.push(field ?? [[]])
    }
    if (!consumed || next >= fields.length) break
  }
  return concatenate(alternatives, scope)
}

/**
 * Whether some expansion of the patterns has the program name `lango` (basename, any case, Windows
 * suffix allowed). `'static'`: the text alone makes it `lango` (literal parts, known values, globs, and
 * expansions that may be empty taken as empty); `'dynamic'`: only if an unknown value happens to fit;
 * `undefined`: never.
 */
export function matchLango(patterns: readonly WordPattern[]): 'static' | 'dynamic' | undefined {
  let dynamic = false
  for (const pattern of patterns) {
    for (const target of TARGETS) {
      if (scanPattern(pattern, target, false)) return 'static'
      if (!dynamic && scanPattern(pattern, target, true)) dynamic = true
    }
  }
  return dynamic ? 'dynamic' : undefined
}

/**
 * The plain string a pattern stands for when its expansions that may be empty are empty and it has
 * no wildcards (up to a field end), else `undefined`: `s$()udo` → `sudo`.
 */
export function emptiedText(pattern: WordPattern): string | undefined {
  let text = ''
  for (const piece of pattern) {
    if (piece === END) break
    if (piece === DYNAMIC) continue
    if (typeof piece !== 'string') return undefined
    text += piece
  }
  return text
}

/**
 * True when the word can expand to no field at all, so the next word becomes the command: unquoted
 * expansions that may all be empty (`$x lango`), `"$@"`, `"${a[@]}"`, and with `nullglob` a glob that
 * matches nothing.
 */
export function canVanish(word: Word, scope: WordScope, nullglob: boolean): boolean {
  const parts = word.parts
  if (parts === undefined) return hasUnparsedExpansion(word)
  for (const part of parts) {
    switch (part.type) {
      case 'SimpleExpansion':
      case 'ParameterExpansion':
      case 'CommandExpansion':
        continue
      case 'Glob':
      case 'ExtendedGlob':
        return nullglob
      case 'Literal':
        if (part.value === '') continue
        return nullglob && /[*?[]/.test(part.value)
      case 'DoubleQuoted':
        if (part.parts.length > 0 && part.parts.every(isAllPositional)) continue
        return false
      default:
        return false
    }
  }
  return wordPatterns(word, scope).some((pattern) =>
    pattern.every((piece) => piece === DYNAMIC || piece === END || piece === ANY),
  )
}

/** `$@` and `${name[@]}`: inside double quotes they expand to no field when empty. */
function isAllPositional(child: DoubleQuotedChild): boolean {
  if (child.type === 'SimpleExpansion') return child.text === '$@'
  if (child.type === 'ParameterExpansion')
    return child.parameter === '@' || child.index?.value === '@' || child.index?.text === '@'
  return false
}

/**
 * One left-to-right pass that tries every start at once (an NFA over target positions held in a bit
 * set): a basename starts at the beginning or after a `/` (or `\`). In static mode a {@link DYNAMIC}
 * piece is empty and a {@link NONEMPTY} one never matches; in dynamic mode both may be any string,
 * including one that ends in a directory prefix. Linear in the pattern length.
 */
function scanPattern(pattern: WordPattern, target: string, allowDynamic: boolean): boolean {
  const full = 1 << target.length
  const mask = (full << 1) - 1
  let states = 0
  let startHere = true
  let seen = false
  for (const piece of pattern) {
    if (piece === END) break
    if (startHere) states |= 1
    if (piece === DYNAMIC && !allowDynamic) continue // empty: states and start carry over
    seen = true
    if (piece === DYNAMIC || piece === NONEMPTY) {
      if (!allowDynamic) {
        states = 0
        startHere = false
        continue
      }
      // Any string, which may hold its own directory prefix: a start inside it, then every position
      // at or after the lowest reachable one, and a new start after it.
      states |= 1
      states = ((full << 1) - (states & -states)) & mask
      startHere = true
      continue
    }
    startHere = piece === '/' || piece === '\\'
    if (states === 0) continue
    if (piece === ANY) {
      states = ((full << 1) - (states & -states)) & mask
      continue
    }
    let next = 0
    for (let position = 0; position < target.length; position++) {
      if ((states & (1 << position)) === 0) continue
      const character = target[position] as string
      if (piece === ONE || (typeof piece === 'string' ? piece === character : inClass(piece, character))) {
        next |= 1 << (position + 1)
      }
    }
    states = next & mask
  }
  if (!seen) return false
  return (states & full) !== 0
}

function inClass(characterClass: CharacterClass, character: string): boolean {
  const member =
    characterClass.characters.includes(character) ||
    characterClass.ranges.some(([from, to]) => character >= from && character <= to)
  return member !== characterClass.negated
}

function characters(text: string): string[] {
  return Array.from(text.toLowerCase())
}

/** The pattern of a plain text (lower-cased characters). */
export function textPattern(text: string): PatternPiece[] {
  return characters(text)
}

function concatenate(alternatives: readonly (readonly WordPattern[])[], scope: WordScope): PatternPiece[][] {
  // Accumulators are extended in place: copying them per part would be quadratic in the word length.
  let patterns: PatternPiece[][] = [[]]
  for (const options of alternatives) {
    const only = options.length === 1 ? options[0] : undefined
    if (only !== undefined || patterns.length * options.length > MAX_PATTERNS) {
      for (const pattern of patterns) {
        if (only === undefined) pushPiece(pattern, DYNAMIC)
        else for (const piece of only) pushPiece(pattern, piece)
      }
      scope.charge(patterns.length * (only?.length ?? 1))
      continue
    }
    const next: PatternPiece[][] = []
    for (const pattern of patterns) {
      for (const option of options) {
        const combined = [...pattern]
        for (const piece of option) pushPiece(combined, piece)
        next.push(combined)
        scope.charge(combined.length)
      }
    }
    patterns = next
  }
  return patterns
}

/** Appends a piece; runs of {@link DYNAMIC} collapse into one (same meaning, bounded length). */
function pushPiece(pattern: PatternPiece[], piece: PatternPiece): void {
  if (piece === DYNAMIC && pattern[pattern.length - 1] === DYNAMIC) return
  pattern.push(piece)
}

function partPatterns(
  part: WordPart | DoubleQuotedChild,
  scope: WordScope,
  quoted: boolean,
  context: WordContext,
): WordPattern[] {
  switch (part.type) {
    case 'Literal':
    case 'SingleQuoted':
    case 'AnsiCQuoted':
      return [characters(part.value)]
    case 'DoubleQuoted':
    case 'LocaleString':
      return concatenate(
        part.parts.map((child) => partPatterns(child, scope, true, context)),
        scope,
      )
    case 'SimpleExpansion': {
      const name = part.text.replace(/^\$\{?|\}$/g, '')
      const joined = joins(name, name === '*', quoted, context, scope)
        ? joinedElements(name, name === '*', scope)
        : undefined
      return fields(joined ?? parameterValues(name, scope), scope, quoted)
    }
    case 'ParameterExpansion':
      return fields(parameterPatterns(part, scope, quoted, context), scope, quoted)
    case 'CommandExpansion': {
      const outputs = scriptOutputs(part.script)
      if (outputs === undefined) return [[DYNAMIC]]
      return fields(
        outputs.map((output) => characters(output.replace(/\n+$/, ''))),
        scope,
        quoted,
      )
    }
    case 'ArithmeticExpansion':
      // Always a number: never empty, never letters.
      return [['0']]
    case 'ProcessSubstitution':
      return [characters('/dev/fd/63')]
    case 'Glob':
      if (part.kind === 'star') return [[ANY]]
      if (part.kind === 'question') return [[ONE]]
      return [[bracketClass(part.text)]]
    case 'ExtendedGlob':
      return extendedGlobPatterns(part.operator, part.pattern)
    case 'BraceExpansion':
      return braceExpansionPatterns(part.text)
  }
}

/**
 * Unquoted expansions are split into fields on IFS, so only the first field is the program name:
 * keep the whole value and add the first field, cut with {@link END}. Splits on blanks and on any IFS
 * value the text assigns.
 */
function fields(patterns: readonly WordPattern[], scope: WordScope, quoted: boolean): WordPattern[] {
  if (quoted) return [...patterns]
  const separators = new Set([' ', '\t', '\n'])
  for (const value of scope.variablePatterns('IFS') ?? []) {
    for (const piece of value) if (typeof piece === 'string') separators.add(piece)
  }
  const result: WordPattern[] = []
  for (const pattern of patterns) {
    let start = 0
    while (start < pattern.length && separators.has(pattern[start] as string)) start++
    let end = start
    while (end < pattern.length && !separators.has(pattern[end] as string)) end++
    // The first field goes first: it is the one that can be a program name.
    if (start > 0 || end < pattern.length) result.push([...pattern.slice(start, end), END])
    result.push(pattern)
  }
  return result.length > MAX_PATTERNS ? result.slice(0, MAX_PATTERNS) : result
}

/**
 * Every value a parameter may have where it is used. Special parameters `$?`, `$$` and `$#` are
 * numbers; `$!`, `$-` and `$_` may be empty. A positional parameter of a known `sh -c` argument list
 * is exact, or, when the code shifts or sets them, any later argument or anything. A variable the text assigns may
 * still be unset where it is used (the guard does not follow control flow), so it may be empty too.
 */
function parameterValues(name: string, scope: WordScope, index = 0): WordPattern[] {
  if (/^[0-9]+$/.test(name)) return positionalPatterns(scope, Number(name))
  // "$@" and "$*" in command position start with $1.
  if (name === '@' || name === '*') return positionalPatterns(scope, 1)
  if (name === '?' || name === '$' || name === '#') return [['0']]
  if (name === '!' || name === '-' || name === '_') return [[DYNAMIC]]
  const values = scope.variablePatterns(name, index)
  if (values === undefined || values.length === 0) return [[DYNAMIC]]
  return [...values.slice(0, MAX_PATTERNS - 1), []]
}

function positionalPatterns(scope: WordScope, index: number): WordPattern[] {
  const positional = scope.positional
  if (positional === undefined) {
    // `set -- a b` in the text: `$1` may be `a` (or, when the code shifts, a later one).
    const set: WordPattern[] = []
    for (let at = index - 1; index > 0 && at < index + (scope.shifts ? 8 : 0); at++)
      set.push(...(scope.variablePatterns(SET_POSITIONAL, at) ?? []))
    return [...set.slice(0, MAX_PATTERNS - 1), [DYNAMIC]]
  }
  if (index === 0) {
    const value = positional[0]
    return value === undefined ? [[DYNAMIC]] : [characters(value)]
  }
  if (!scope.shifts) {
    const value = positional[index]
    return [value === undefined ? [] : characters(value)]
  }
  return [...positional.slice(index, index + MAX_PATTERNS - 1).map(characters), [DYNAMIC]]
}

/** The value patterns without their empty expansions; an unknown value becomes {@link NONEMPTY}. */
function nonEmpty(patterns: readonly WordPattern[]): WordPattern[] {
  const result: WordPattern[] = []
  for (const pattern of patterns) {
    const definite = pattern.some(
      (piece) =>
        typeof piece === 'string' || piece === ONE || piece === NONEMPTY || typeof piece === 'object',
    )
    if (definite) result.push(pattern)
    else if (pattern.some((piece) => piece === DYNAMIC || piece === ANY)) result.push([NONEMPTY])
  }
  return result.length === 0 ? [[NONEMPTY]] : result
}

/**
 * Whether `$@`/`$*`/`${a[@]}`/`${a[*]}` expand to one joined value here: `*` inside double quotes or
 * in an assignment, `@` in an assignment, and `*` unquoted in text parsed again (whose quotes an
 * earlier expansion removed). Elsewhere they are separate fields.
 */
function joins(
  name: string,
  star: boolean,
  quoted: boolean,
  context: WordContext,
  scope: WordScope,
): boolean {
  if (name !== '@' && name !== '*' && !star) return false
  return context === 'assigned' || (star && (quoted || scope.reparsed))
}

function parameterPatterns(
  part: ParameterExpansionPart,
  scope: WordScope,
  quoted: boolean,
  context: WordContext,
): WordPattern[] {
  if (part.prefix === '#') return [['0']]
  if (part.prefix === '!') return [[DYNAMIC]]
  let index = 0
  let joined: WordPattern[] | undefined
  if (part.index !== undefined) {
    // `${a[@]}` and `${a[*]}` start with the first element, or join them all; `${a[N]}` is element N.
    const text = part.index.value
    if (/^[0-9]+$/.test(text)) index = Number(text)
    else if (text !== '@' && text !== '*') return [[DYNAMIC]]
    else if (joins(text, text === '*', quoted, context, scope))
      joined = joinedElements(part.parameter, text === '*', scope)
  } else if (part.parameter === '@' || part.parameter === '*') {
    if (joins(part.parameter, part.parameter === '*', quoted, context, scope))
      joined = joinedElements(part.parameter, part.parameter === '*', scope)
  }
  const values = joined ?? parameterValues(part.parameter, scope, index)
  const operation = part.operation
  if (operation === undefined) return values
  switch (operation.type) {
    case 'Default': {
      const operand = wordPatterns(operation.operand, scope, context)
      switch (operation.operator) {
        case '+':
        case ':+':
          return [...operand, []]
        case ':?':
          return nonEmpty(values)
        case '?':
          return values
        case ':-':
        case ':=':
          return [...nonEmpty(values), ...operand].slice(0, MAX_PATTERNS)
        default:
          return [...values, ...operand].slice(0, MAX_PATTERNS)
      }
    }
    case 'CaseModification':
      return values
    case 'Remove': {
      const affix = literalWordValue(operation.operand)?.toLowerCase()
      if (affix === undefined) return [[DYNAMIC]]
      const glob = /[*?[]/.test(affix)
      // `${x%%*}` and `${x##*}` remove everything; `${x%*}` and `${x#*}` remove nothing.
      if (glob && affix === '*') return operation.operator.length === 2 ? [[]] : values
      if (glob) return [[DYNAMIC]]
      const fromStart = operation.operator.startsWith('#')
      return mapValues(values, (value) =>
        fromStart
          ? value.startsWith(affix)
            ? value.slice(affix.length)
            : value
          : value.endsWith(affix)
            ? value.slice(0, value.length - affix.length)
            : value,
      )
    }
    case 'Replace': {
      const search = literalWordValue(operation.pattern)
      const replacement = literalWordValue(operation.replacement)
      if (search === undefined || replacement === undefined || /[*?[]/.test(search)) return [[DYNAMIC]]
      const mapped = mapValues(values, (value) =>
        replaceValue(value, search, replacement, operation.operator),
      )
      // `${x/#/lan}` and `${x/%/lan}` add the replacement to a set value, even an empty one.
      if (search === '' && (operation.operator === '/#' || operation.operator === '/%')) {
        const added = characters(replacement)
        mapped.push(operation.operator === '/#' ? [...added, DYNAMIC] : [DYNAMIC, ...added])
      }
      return mapped.slice(0, MAX_PATTERNS)
    }
    case 'Slice': {
      const offset = Number(literalWordValue(operation.offset))
      const length = operation.length === undefined ? undefined : Number(literalWordValue(operation.length))
      if (!Number.isInteger(offset) || (length !== undefined && !Number.isInteger(length))) return [[DYNAMIC]]
      return mapValues(values, (value) => {
        const begin = offset < 0 ? Math.max(0, value.length + offset) : offset
        if (length === undefined) return value.slice(begin)
        return length < 0 ? value.slice(begin, value.length + length) : value.slice(begin, begin + length)
      })
    }
    default:
      return [[DYNAMIC]]
  }
}

/** Applies a string operation to each plain value; a value with unknown parts becomes {@link DYNAMIC}. */
function mapValues(values: readonly WordPattern[], operation: (value: string) => string): WordPattern[] {
  return values.map((pattern) => {
    let text = ''
    for (const piece of pattern) {
      if (typeof piece !== 'string') return [DYNAMIC]
      text += piece
    }
    return characters(operation(text))
  })
}

function replaceValue(value: string, search: string, replacement: string, operator: string): string {
  const needle = search.toLowerCase()
  const by = replacement.toLowerCase()
  if (needle === '') {
    if (operator === '/#') return by + value
    if (operator === '/%') return value + by
    return value
  }
  if (operator === '//') return value.split(needle).join(by)
  if (operator === '/#') return value.startsWith(needle) ? by + value.slice(needle.length) : value
  if (operator === '/%') {
    return value.endsWith(needle) ? value.slice(0, value.length - needle.length) + by : value
  }
  return value.replace(needle, by)
}

function globCharacters(text: string): WordPattern {
  return Array.from(text.toLowerCase()).map((character) =>
    character === '*' ? ANY : character === '?' ? ONE : character,
  )
}

function extendedGlobPatterns(operator: string, pattern: string): WordPattern[] {
  if (operator === '!') return [[ANY]]
  const options = pattern.split('|').map(globCharacters)
  if (operator === '?' || operator === '*') options.push([])
  return options.length > MAX_PATTERNS ? [[ANY]] : options
}

function braceExpansionPatterns(text: string): WordPattern[] {
  const inner = text.slice(1, -1)
  const range = /^([A-Za-z])\.\.([A-Za-z])$/.exec(inner)
  if (range !== null) {
    const from = (range[1] as string).toLowerCase().charCodeAt(0)
    const to = (range[2] as string).toLowerCase().charCodeAt(0)
    const letters: WordPattern[] = []
    for (let code = Math.min(from, to); code <= Math.max(from, to); code++)
      letters.push([String.fromCharCode(code)])
    return letters
  }
  const options: string[] = []
  let depth = 0
  let current = ''
  for (const character of inner) {
    if (character === '{') depth++
    if (character === '}') depth--
    if (character === ',' && depth === 0) {
      options.push(current)
      current = ''
    } else {
      current += character
    }
  }
  options.push(current)
  if (options.length < 2) return [characters(text)]
  if (options.length > MAX_PATTERNS) return [[DYNAMIC]]
  return options.map((option) => characters(option.replace(/['"\\]/g, '')))
}

function bracketClass(text: string): CharacterClass {
  let body = text.slice(1, -1).toLowerCase()
  const negated = body.startsWith('!') || body.startsWith('^')
  if (negated) body = body.slice(1)
  let plain = ''
  const ranges: [string, string][] = []
  const symbols = Array.from(body.replace(/\\(.)/g, '$1'))
  for (let index = 0; index < symbols.length; index++) {
    const character = symbols[index] as string
    const next = symbols[index + 2]
    if (symbols[index + 1] === '-' && next !== undefined) {
      ranges.push([character, next])
      index += 2
    } else {
      plain += character
    }
  }
  return { negated, characters: plain, ranges }
}
