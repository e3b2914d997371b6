import type { DoubleQuotedChild, ParameterExpansionPart, Word, WordPart } from 'unbash'
import { literalWordValue, scriptOutputs } from './command-output.ts'

/**
 * A word's possible expansions, as glob-like patterns over single characters (lower-cased) and
 * wildcards. `ANY` and `ONE` come from globs written in the text; `DYNAMIC` is an expansion whose
 * value the text does not reveal.
 */
export const ANY = 0
/** One character from a `?` glob. */
export const ONE = 1
/** A run-time value unknown from the text (a variable that is never assigned, `$(curl …)`). */
export const DYNAMIC = 2

/** A bracket expression such as `[a-c]` or `[!x]`. */
export interface CharacterClass {
  readonly negated: boolean
  readonly characters: string
  readonly ranges: readonly (readonly [string, string])[]
}

/** One element of a {@link WordPattern}. */
export type PatternPiece = string | typeof ANY | typeof ONE | typeof DYNAMIC | CharacterClass

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
export function wordPatterns(word: Word, scope: WordScope): WordPattern[] {
  const parts = word.parts
  if (parts === undefined) return [characters(word.value)]
  return concatenate(parts.map((part) => partPatterns(part, scope)))
}

/**
 * Whether some expansion of the patterns has the program name `lango` (basename, any case, Windows
 * suffix allowed). `'static'`: the text alone makes it `lango` (literal parts, known values, globs);
 * `'dynamic'`: only if an unknown value happens to fit; `undefined`: never.
 */
export function matchLango(patterns: readonly WordPattern[]): 'static' | 'dynamic' | undefined {
  let dynamic = false
  for (const pattern of patterns) {
    for (let start = 0; start <= pattern.length; start++) {
      const previous = pattern[start - 1]
      const atBoundary = start === 0 || previous === '/' || previous === '\\'
      // An unknown value may carry its own directory prefix, so a match may also begin inside it.
      if (!atBoundary && pattern[start] !== DYNAMIC) continue
      for (const target of TARGETS) {
        if (atBoundary && matchesFrom(pattern, start, target, false)) return 'static'
        if (!dynamic && matchesFrom(pattern, start, target, true)) dynamic = true
      }
    }
  }
  return dynamic ? 'dynamic' : undefined
}

/** The plain string a pattern stands for when it has no wildcards, else `undefined`. */
export function patternText(pattern: WordPattern): string | undefined {
  let text = ''
  for (const piece of pattern) {
    if (typeof piece !== 'string') return undefined
    text += piece
  }
  return text
}

function matchesFrom(pattern: WordPattern, start: number, target: string, allowDynamic: boolean): boolean {
  // Bit k set: the first k characters of target can be produced so far.
  let states = 1
  const full = 1 << target.length
  for (let index = start; index < pattern.length && states !== 0; index++) {
    const piece = pattern[index] as PatternPiece
    let next = 0
    if (piece === ANY || (piece === DYNAMIC && allowDynamic)) {
      const lowest = states & -states
      next = (full << 1) - lowest // every position at or after the lowest reachable one
    } else if (piece !== DYNAMIC) {
      for (let position = 0; position < target.length; position++) {
        if ((states & (1 << position)) === 0) continue
        const character = target[position] as string
        if (piece === ONE || (typeof piece === 'string' ? piece === character : inClass(piece, character))) {
          next |= 1 << (position + 1)
        }
      }
    }
    states = next & ((full << 1) - 1)
  }
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

function concatenate(alternatives: readonly (readonly WordPattern[])[]): WordPattern[] {
  let patterns: WordPattern[] = [[]]
  for (const options of alternatives) {
    if (options.length === 1) {
      const only = options[0] as WordPattern
      patterns = patterns.map((pattern) => [...pattern, ...only])
      continue
    }
    if (patterns.length * options.length > MAX_PATTERNS) {
      patterns = patterns.map((pattern) => [...pattern, DYNAMIC])
      continue
    }
    patterns = patterns.flatMap((pattern) => options.map((option) => [...pattern, ...option]))
  }
  return patterns
}

function partPatterns(part: WordPart | DoubleQuotedChild, scope: WordScope): WordPattern[] {
  switch (part.type) {
    case 'Literal':
    case 'SingleQuoted':
    case 'AnsiCQuoted':
      return [characters(part.value)]
    case 'DoubleQuoted':
    case 'LocaleString':
      return concatenate(part.parts.map((child) => partPatterns(child, scope)))
    case 'SimpleExpansion':
      return valuePatterns(variableValues(part.text.replace(/^\$\{?|\}$/g, ''), scope))
    case 'ParameterExpansion':
      return parameterPatterns(part, scope)
    case 'CommandExpansion': {
      const outputs = scriptOutputs(part.script)
      if (outputs === undefined) return [[DYNAMIC]]
      // Unquoted output is split into words, so its first word may be the program name too.
      return outputs.flatMap((output) => {
        const trimmed = output.replace(/\n+$/, '')
        const first = trimmed.trim().split(/\s+/)[0] ?? ''
        return first === trimmed ? [characters(trimmed)] : [characters(trimmed), characters(first)]
      })
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
      return [...(values === undefined ? [[DYNAMIC]] : valuePatterns(values)), ...operand]
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
      return valuePatterns(values.map((value) => replaceValue(value, search, replacement, operation.operator)))
    }
    case 'Slice': {
      const offset = Number(literalWordValue(operation.offset))
      const length = operation.length === undefined ? undefined : Number(literalWordValue(operation.length))
      if (values === undefined || !Number.isInteger(offset) || (length !== undefined && !Number.isInteger(length))) {
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
    for (let code = Math.min(from, to); code <= Math.max(from, to); code++) letters.push([String.fromCharCode(code)])
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
