import type { DoubleQuotedChild, ParameterExpansionPart, Word, WordPart } from 'unbash'
import { hasUnparsedExpansion, literalWordValue, scriptOutputs } from './command-output.js'

/*
 * A word's possible expansions are modelled as glob-like patterns over single characters (lower-cased)
 * and markers: `ANY` and `ONE` come from globs written in the text, `DYNAMIC` is an expansion whose
 * value the text does not reveal, `END` cuts a pattern at a field boundary.
 */

/** Any run of characters, from a `*` glob. */
export const ANY = 0
/** One character from a `?` glob. */
export const ONE = 1
/** A run-time value unknown from the text (a variable that is never assigned, `$(curl …)`). */
export const DYNAMIC = 2
/** End of the first field of an unquoted expansion (`c="lango cron"; $c` runs lango); the rest is ignored. */
export const END = 3

/** A bracket expression such as `[a-c]` or `[!x]`. */
export interface CharacterClass {
  readonly negated: boolean
  readonly characters: string
  readonly ranges: readonly (readonly [string, string])[]
}

/** One element of a {@link WordPattern}. */
export type PatternPiece = string | typeof ANY | typeof ONE | typeof DYNAMIC | typeof END | CharacterClass

/** One possible expansion of a word. */
export type WordPattern = readonly PatternPiece[]

/** What a word evaluation may know about variables and positional parameters. */
export interface WordScope {
  /** Literal values assigned to `name` anywhere in the text, `undefined` when none are known. */
  variableValues(name: string): readonly string[] | undefined
  /** `$0`, `$1`, … of an `sh -c STRING ARG0 ARG1` string; `undefined` outside one. */
  readonly positional: readonly string[] | undefined
}

/** Bound on the patterns kept per word; past it the rest of the word becomes {@link DYNAMIC}. */
const MAX_PATTERNS = 32

const TARGETS = ['lango', 'lango.exe', 'lango.cmd', 'lango.bat', 'lango.com'] as const

/** The patterns a word may expand to, bounded by {@link MAX_PATTERNS}. */
export function wordPatterns(word: Word, scope: WordScope): PatternPiece[][] {
  const parts = word.parts
  if (parts === undefined) return hasUnparsedExpansion(word) ? [[DYNAMIC]] : [characters(word.value)]
  return concatenate(parts.map((part) => partPatterns(part, scope, false)))
}

/**
 * Whether some expansion of the patterns has the program name `lango` (basename, any case, Windows
 * suffix allowed). `'static'`: the text alone makes it `lango` (literal parts, known values, globs);
 * `'dynamic'`: only if an unknown value happens to fit; `undefined`: never.
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

/** The plain string a pattern stands for when it has no wildcards, else `undefined`. */
export function patternText(pattern: WordPattern): string | undefined {
  let text = ''
  for (const piece of pattern) {
    if (piece === END) break
    if (typeof piece !== 'string') return undefined
    text += piece
  }
  return text
}

/**
 * One left-to-right pass that tries every start at once (an NFA over target positions held in a bit
 * set): a basename starts at the beginning, after a `/`, or, when unknown values may match, inside
 * one, since an unknown value may carry its own directory prefix. Linear in the pattern length.
 */
function scanPattern(pattern: WordPattern, target: string, allowDynamic: boolean): boolean {
  const full = 1 << target.length
  const mask = (full << 1) - 1
  let states = 0
  for (let index = 0; index < pattern.length; index++) {
    const piece = pattern[index] as PatternPiece
    if (piece === END) break
    const previous = pattern[index - 1]
    if (index === 0 || previous === '/' || previous === '\\' || (allowDynamic && piece === DYNAMIC))
      states |= 1
    if (states === 0) continue
    let next = 0
    if (piece === ANY || (piece === DYNAMIC && allowDynamic)) {
      next = (full << 1) - (states & -states) // every position at or after the lowest reachable one
    } else if (piece !== DYNAMIC) {
      for (let position = 0; position < target.length; position++) {
        if ((states & (1 << position)) === 0) continue
        const character = target[position] as string
        if (piece === ONE || (typeof piece === 'string' ? piece === character : inClass(piece, character))) {
          next |= 1 << (position + 1)
        }
      }
    }
    states = next & mask
  }
  if (pattern.length === 0) return false
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

function concatenate(alternatives: readonly (readonly WordPattern[])[]): PatternPiece[][] {
  // Accumulators are extended in place: copying them per part would be quadratic in the word length.
  let patterns: PatternPiece[][] = [[]]
  for (const options of alternatives) {
    const only = options.length === 1 ? options[0] : undefined
    if (only !== undefined || patterns.length * options.length > MAX_PATTERNS) {
      for (const pattern of patterns) {
        if (only === undefined) pattern.push(DYNAMIC)
        else for (const piece of only) pattern.push(piece)
      }
      continue
    }
    const next: PatternPiece[][] = []
    for (const pattern of patterns) {
      for (const option of options) next.push([...pattern, ...option])
    }
    patterns = next
  }
  return patterns
}

function partPatterns(part: WordPart | DoubleQuotedChild, scope: WordScope, quoted: boolean): WordPattern[] {
  switch (part.type) {
    case 'Literal':
    case 'SingleQuoted':
    case 'AnsiCQuoted':
      return [characters(part.value)]
    case 'DoubleQuoted':
    case 'LocaleString':
      return concatenate(part.parts.map((child) => partPatterns(child, scope, true)))
    case 'SimpleExpansion':
      return fields(valuePatterns(variableValues(part.text.replace(/^\$\{?|\}$/g, ''), scope)), scope, quoted)
    case 'ParameterExpansion':
      return fields(parameterPatterns(part, scope), scope, quoted)
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
function fields(patterns: WordPattern[], scope: WordScope, quoted: boolean): WordPattern[] {
  if (quoted) return patterns
  const separators = new Set([
    ' ',
    '\t',
    '\n',
    ...(scope.variableValues('IFS') ?? []).flatMap((value) => Array.from(value)),
  ])
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

function variableValues(name: string, scope: WordScope): readonly string[] | undefined {
  if (/^[0-9]+$/.test(name)) return positionalValue(scope, Number(name))
  // "$@" and "$*" in command position start with $1.
  if (name === '@' || name === '*') return positionalValue(scope, 1)
  return scope.variableValues(name)
}

function positionalValue(scope: WordScope, index: number): readonly string[] | undefined {
  const value = scope.positional?.[index]
  return value === undefined ? undefined : [value]
}

function valuePatterns(values: readonly string[] | undefined): WordPattern[] {
  if (values === undefined || values.length === 0) return [[DYNAMIC]]
  return values.slice(0, MAX_PATTERNS).map(characters)
}

function parameterPatterns(part: ParameterExpansionPart, scope: WordScope): WordPattern[] {
  if (part.prefix === '#') return [['0']]
  if (part.prefix === '!' || part.index !== undefined) return [[DYNAMIC]]
  const values = variableValues(part.parameter, scope)
  const operation = part.operation
  if (operation === undefined) return valuePatterns(values)
  switch (operation.type) {
    case 'Default': {
      const operand = wordPatterns(operation.operand, scope)
      if (operation.operator === '+' || operation.operator === ':+') return [...operand, []]
      if (operation.operator === '?' || operation.operator === ':?') return valuePatterns(values)
      // An unassigned variable may still come from the environment: keep an unknown alternative.
      const unknown: WordPattern[] = [[DYNAMIC]]
      return [...(values === undefined ? unknown : valuePatterns(values)), ...operand]
    }
    case 'CaseModification':
      return valuePatterns(values)
    case 'Remove': {
      const affix = literalWordValue(operation.operand)
      if (values === undefined || affix === undefined || /[*?[]/.test(affix)) return [[DYNAMIC]]
      const fromStart = operation.operator.startsWith('#')
      return valuePatterns(
        values.map((value) =>
          fromStart
            ? value.startsWith(affix)
              ? value.slice(affix.length)
              : value
            : value.endsWith(affix)
              ? value.slice(0, value.length - affix.length)
              : value,
        ),
      )
    }
    case 'Replace': {
      const search = literalWordValue(operation.pattern)
      const replacement = literalWordValue(operation.replacement)
      if (values === undefined || search === undefined || replacement === undefined || /[*?[]/.test(search)) {
        return [[DYNAMIC]]
      }
      return valuePatterns(
        values.map((value) => replaceValue(value, search, replacement, operation.operator)),
      )
    }
    case 'Slice': {
      const offset = Number(literalWordValue(operation.offset))
      const length = operation.length === undefined ? undefined : Number(literalWordValue(operation.length))
      if (
        values === undefined ||
        !Number.isInteger(offset) ||
        (length !== undefined && !Number.isInteger(length))
      ) {
        return [[DYNAMIC]]
      }
      return valuePatterns(
        values.map((value) => {
          const begin = offset < 0 ? Math.max(0, value.length + offset) : offset
          if (length === undefined) return value.slice(begin)
          return length < 0 ? value.slice(begin, value.length + length) : value.slice(begin, begin + length)
        }),
      )
    }
    default:
      return [[DYNAMIC]]
  }
}

function replaceValue(value: string, search: string, replacement: string, operator: string): string {
  if (search === '') return value
  if (operator === '//') return value.split(search).join(replacement)
  if (operator === '/#') return value.startsWith(search) ? replacement + value.slice(search.length) : value
  if (operator === '/%') {
    return value.endsWith(search) ? value.slice(0, value.length - search.length) + replacement : value
  }
  return value.replace(search, replacement)
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
