/**
 * What an awk program runs (issue 11 finding 4). An awk program is data — `awk '/lango/ {print}'` and
 * `awk '$1=="lango"{print $2}'` only read text — unless it runs commands: `system(EXPR)`,
 * `print … | EXPR`, `printf … | EXPR`, `EXPR | getline`, gawk's `|&` coprocesses and indirect calls
 * (`@f()`). A command written as string literals (`system("lango cron")`, `"lan" "go" | getline`) is
 * shell code the guard parses; a command computed at run time (`system($2)`, `cmd | getline` with
 * `cmd` built from fields or `-v` values) is reported as such, and the guard then blocks only when the
 * command line names lango somewhere, as it does for a command word it cannot resolve.
 */

/** The commands an awk program runs, as far as its text shows. */
export interface AwkCommands {
  /** Command strings fixed by the program text (concatenated string literals). */
  readonly shellCode: readonly string[]
  /** True when some command is computed at run time. */
  readonly computed: boolean
}

type TokenKind = 'string' | 'regex' | 'name' | 'number' | 'punct' | 'newline'

interface Token {
  readonly kind: TokenKind
  readonly text: string
  /** Decoded value of a string literal. */
  readonly value?: string
}

const NO_COMMANDS: AwkCommands = { shellCode: [], computed: false }

/** Keywords after which a `/` starts a regular expression rather than a division. */
const REGEX_AFTER_NAMES = new Set(['print', 'printf', 'return', 'in', 'case', 'getline', 'do', 'else'])

const TWO_CHARACTER_OPERATORS = new Set([
  '||',
  '&&',
  '|&',
  '==',
  '!=',
  '<=',
  '>=',
  '++',
  '--',
  '+=',
  '-=',
  '*=',
  '/=',
  '%=',
  '^=',
  '>>',
  '!~',
  '**',
])

/** Reads an awk program and reports the commands it runs. */
export function awkCommands(program: string): AwkCommands {
  // Cheap exit for the common case: nothing in the text can run a command.
  if (!/system|\||@/.test(program)) return NO_COMMANDS
  const tokens = tokenize(program)
  const shellCode: string[] = []
  let computed = false
  const take = (expression: readonly Token[]): void => {
    const value = literalValue(expression)
    if (value === undefined) computed = true
    else shellCode.push(value)
  }
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index] as Token
    if (token.kind === 'name' && token.text === 'system' && tokens[index + 1]?.text === '(') {
      const end = matchingParen(tokens, index + 1)
      take(tokens.slice(index + 2, end))
      continue
    }
    if (token.kind === 'punct' && token.text === '@' && tokens[index + 1]?.kind === 'name') {
      // gawk indirect call: `@f(…)` may be `system`.
      computed = true
      continue
    }
    if (token.kind !== 'punct' || (token.text !== '|' && token.text !== '|&')) continue
    if (tokens[index + 1]?.text === 'getline') take(expressionBefore(tokens, index))
    else take(expressionAfter(tokens, index))
  }
  return { shellCode, computed }
}

/** The concatenated value of an expression made only of string literals (and parentheses). */
function literalValue(expression: readonly Token[]): string | undefined {
  let value = ''
  let strings = 0
  for (const token of expression) {
    if (token.kind === 'string') {
      value += token.value ?? ''
      strings++
    } else if (token.text !== '(' && token.text !== ')') {
      return undefined
    }
  }
  return strings === 0 ? undefined : value
}

function matchingParen(tokens: readonly Token[], open: number): number {
  let depth = 0
  for (let index = open; index < tokens.length; index++) {
    const text = tokens[index]?.text
    if (text === '(') depth++
    else if (text === ')' && --depth === 0) return index
  }
  return tokens.length
}

const BOUNDARIES = new Set([
  ';',
  '{',
  '}',
  ',',
  '&&',
  '||',
  '!',
  '=',
  '+=',
  '-=',
  '*=',
  '/=',
  '%=',
  '^=',
  '?',
  ':',
])

/** `cmd | getline`: the operand before the pipe, back to a statement or operator boundary. */
function expressionBefore(tokens: readonly Token[], pipe: number): Token[] {
  let depth = 0
  let start = pipe
  for (let index = pipe - 1; index >= 0; index--) {
    const token = tokens[index] as Token
    if (token.text === ')') depth++
    else if (token.text === '(') {
      if (depth === 0) break
      depth--
    } else if (depth === 0 && (token.kind === 'newline' || BOUNDARIES.has(token.text))) break
    else if (
      depth === 0 &&
      token.kind === 'name' &&
      /^(?:if|while|for|print|printf|return)$/.test(token.text)
    )
      break
    start = index
  }
  return tokens.slice(start, pipe)
}

/** `print … | cmd`: the operand after the pipe, up to the end of the statement. */
function expressionAfter(tokens: readonly Token[], pipe: number): Token[] {
  let depth = 0
  let end = pipe + 1
  for (; end < tokens.length; end++) {
    const token = tokens[end] as Token
    if (token.text === '(') depth++
    else if (token.text === ')') {
      if (depth === 0) break
      depth--
    } else if (depth === 0 && (token.kind === 'newline' || token.text === ';' || token.text === '}')) break
  }
  return tokens.slice(pipe + 1, end)
}

function regexAllowed(previous: Token | undefined): boolean {
  if (previous === undefined) return true
  switch (previous.kind) {
    case 'string':
    case 'regex':
    case 'number':
      return false
    case 'name':
      return REGEX_AFTER_NAMES.has(previous.text)
    case 'newline':
      return true
    case 'punct':
      return !(
        previous.text === ')' ||
        previous.text === ']' ||
        previous.text === '$' ||
        previous.text === '++' ||
        previous.text === '--'
      )
  }
}

function tokenize(program: string): Token[] {
  const tokens: Token[] = []
  let index = 0
  const length = program.length
  while (index < length) {
    const character = program[index] as string
    if (character === '\\' && program[index + 1] === '\n') {
      index += 2
      continue
    }
    if (character === ' ' || character === '\t' || character === '\r') {
      index++
      continue
    }
    if (character === '\n') {
      tokens.push({ kind: 'newline', text: '\n' })
      index++
      continue
    }
    if (character === '#') {
      while (index < length && program[index] !== '\n') index++
      continue
    }
    if (character === '"') {
      let value = ''
      index++
      while (index < length && program[index] !== '"') {
        if (program[index] === '\\' && index + 1 < length) {
          const escaped = /^(?:[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|.)/s.exec(program.slice(index + 1, index + 4))
          const sequence = escaped?.[0] ?? ''
          value += decodeEscape(sequence)
          index += 1 + sequence.length
        } else {
          value += program[index]
          index++
        }
      }
      index++
      tokens.push({ kind: 'string', text: '"', value })
      continue
    }
    if (character === '/' && regexAllowed(tokens.at(-1))) {
      index++
      let inBracket = false
      while (index < length && program[index] !== '\n') {
        const current = program[index]
        if (current === '\\') index++
        else if (current === '[') inBracket = true
        else if (current === ']') inBracket = false
        else if (current === '/' && !inBracket) break
        index++
      }
      index++
      tokens.push({ kind: 'regex', text: '/' })
      continue
    }
    if (/[A-Za-z_]/.test(character)) {
      const start = index
      while (index < length && /[A-Za-z0-9_]/.test(program[index] as string)) index++
      tokens.push({ kind: 'name', text: program.slice(start, index) })
      continue
    }
    if (/[0-9.]/.test(character)) {
      const start = index
      while (index < length && /[0-9.eExXa-fA-F]/.test(program[index] as string)) index++
      tokens.push({ kind: 'number', text: program.slice(start, index) })
      continue
    }
    const pair = program.slice(index, index + 2)
    if (TWO_CHARACTER_OPERATORS.has(pair)) {
      tokens.push({ kind: 'punct', text: pair })
      index += 2
      continue
    }
    tokens.push({ kind: 'punct', text: character })
    index++
  }
  return tokens
}

const ESCAPES: Readonly<Record<string, string>> = {
  n: '\n',
  t: '\t',
  r: '\r',
  a: '\u0007',
  b: '\b',
  f: '\f',
  v: '\v',
  '"': '"',
  '\\': '\\',
  '/': '/',
}

/** Decodes one escape sequence (without its backslash): octal `\154`, gawk hex `\x6c`, or one letter. */
function decodeEscape(sequence: string): string {
  if (/^[0-7]+$/.test(sequence)) return String.fromCharCode(Number.parseInt(sequence, 8))
  if (/^x[0-9A-Fa-f]+$/.test(sequence)) return String.fromCharCode(Number.parseInt(sequence.slice(1), 16))
  // Unknown escapes keep the backslash: the shell that runs the command removes it (`l\ango`).
  return ESCAPES[sequence] ?? `\\${sequence}`
}
