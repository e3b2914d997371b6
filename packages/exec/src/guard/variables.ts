import type { Assignment, Command, ParsedScript, SyntaxNode, Word } from 'unbash'
import { forEachChild } from 'unbash'
import { literalWordValue, redirectInputs } from './command-output.js'
import { formatPrintf } from './shell-text.js'

/**
 * The values a script assigns to variables, as the guard follows them (issue 11 finding 3): plain
 * and appending assignments, array elements, `for` lists, `printf -v`, `read` from a here-string or
 * here-document, `set --` for the positional parameters, and namerefs (`declare -n r=c`).
 * Flow-insensitive: every assignment anywhere in the text counts wherever the variable is used.
 */

/** `printf -v NAME FORMAT ARGS…` whose arguments are not all literal: evaluated with the scope. */
interface PrintfValue {
  readonly type: 'printf'
  readonly format: Word
  readonly args: readonly Word[]
}

/** `declare -n NAME=TARGET`: the variable stands for the one TARGET names (`a`, `a[1]`). */
interface ReferenceValue {
  readonly type: 'reference'
  readonly target: Word
}

/** One assignment the text makes. */
export interface ValueSource {
  /** Element index (`a[1]=…`, `a=(… …)`, `read -a`); 0 for a scalar; -1 when the text does not fix it. */
  readonly index: number
  /** The assigned word, text the guard derived (`printf -v`, `read`), or a value to evaluate. */
  readonly value: Word | string | PrintfValue | ReferenceValue
  /** `x+=…`: appended to what the variable held. */
  readonly append: boolean
  /**
   * How the word expands: `'assigned'` for `x=WORD` (no field splitting, so `"${a[@]}"` joins its
   * elements), `'each'` for a `for` list (the variable takes each field in turn), else one value.
   */
  readonly context?: 'assigned' | 'each'
}

/** The name under which `set -- A B …` records the positional parameters (`$1` is index 0). */
export const SET_POSITIONAL = '@set'

/** Assignments kept per variable. */
const MAX_SOURCES = 32

/** Collects the assignments of one parsed script. */
export function collectVariables(script: ParsedScript): Map<string, ValueSource[]> {
  const variables = new Map<string, ValueSource[]>()
  const add = (name: string, source: ValueSource): void => {
    const sources = variables.get(name) ?? []
    if (sources.length < MAX_SOURCES) sources.push(source)
    variables.set(name, sources)
  }
  // `declare -n r=c`: the assignments that make references, and every name declared a nameref.
  const references = new Set<Assignment>()
  const namerefs = new Set<string>()
  const visit = (node: SyntaxNode): void => {
    switch (node.type) {
      case 'Assignment': {
        const append = node.append === true
        if (node.value.type === 'Word' && references.has(node)) {
          add(node.name, { index: -1, value: { type: 'reference', target: node.value }, append: false })
        } else if (node.value.type === 'Word') {
          const index = node.index === undefined ? 0 : elementIndex(node.index)
          add(node.name, { index, value: node.value, append, context: 'assigned' })
        } else {
          // `a+=(x y)` appends after elements the text may not show.
          for (const [position, element] of node.value.elements.entries())
            add(node.name, { index: append ? -1 : position, value: element, append: false })
        }
        break
      }
      case 'For':
      case 'Select':
        for (const word of node.wordlist ?? [])
          add(node.name.value, { index: 0, value: word, append: false, context: 'each' })
        break
      case 'Command':
        commandAssignments(node, add)
        namerefDeclarations(node, references, namerefs)
        break
    }
    forEachChild(node, visit)
  }
  visit(script)
  followNamerefs(variables, namerefs, add)
  return variables
}

const DECLARATION_BUILTINS = new Set(['declare', 'typeset', 'local'])

/** `declare -n r=c`, `typeset -n`, `local -rn r`: the assignments that make references and the names. */
function namerefDeclarations(command: Command, references: Set<Assignment>, namerefs: Set<string>): void {
  const name = command.name === undefined ? undefined : literalWordValue(command.name)
  if (name === undefined || !DECLARATION_BUILTINS.has(name)) return
  let nameref = false
  for (const argument of command.suffix) {
    if (argument.type === 'Word') {
      const text = literalWordValue(argument)
      if (text !== undefined && /^-[a-zA-Z]*n/.test(text)) nameref = true
      else if (nameref && text !== undefined && /^[A-Za-z_][A-Za-z0-9_]*$/.test(text)) namerefs.add(text)
    } else if (argument.type === 'Assignment' && nameref) {
      references.add(argument)
      namerefs.add(argument.name)
    }
  }
}

/**
 * Flow-insensitive namerefs: a plain assignment to a nameref may set its target (`declare -n r; r=c`)
 * or assign through it (`declare -n r=c; r=lango` assigns `c`), so it counts as both a target and a
 * value of the nameref, and as a value of every target the text declares for it.
 */
function followNamerefs(
  variables: Map<string, ValueSource[]>,
  namerefs: ReadonlySet<string>,
  add: (name: string, source: ValueSource) => void,
): void {
  for (const name of namerefs) {
    const sources = [...(variables.get(name) ?? [])]
    const plain = sources.filter((source) => !isReference(source.value))
    for (const source of sources) {
      if (!isReference(source.value)) continue
      const target = literalWordValue(source.value.target)?.replace(/\[.*$/, '')
      if (target === undefined || target === name) continue
      for (const assigned of plain) add(target, assigned)
    }
    for (const source of plain) {
      if (typeof source.value !== 'string' && source.value.type === 'Word' && source.index === 0)
        add(name, { index: -1, value: { type: 'reference', target: source.value }, append: false })
    }
  }
}

function isReference(value: ValueSource['value']): value is ReferenceValue {
  return typeof value !== 'string' && value.type === 'reference'
}

function elementIndex(word: Word): number {
  const text = literalWordValue(word)
  return text !== undefined && /^[0-9]+$/.test(text) ? Number(text) : -1
}

/** `printf -v NAME FORMAT ARGS…`, `read [-a] NAMES <<< TEXT`, `set -- ARGS…`. */
function commandAssignments(command: Command, add: (name: string, source: ValueSource) => void): void {
  const name = command.name === undefined ? undefined : literalWordValue(command.name)
  if (name !== 'printf' && name !== 'read' && name !== 'set') return
  const words: Word[] = []
  for (const argument of command.suffix) if (argument.type === 'Word') words.push(argument)
  const texts = words.map((word) => literalWordValue(word))
  if (name === 'set') {
    const dash = texts.indexOf('--')
    const first = dash !== -1 ? dash + 1 : /^[-+]/.test(texts[0] ?? '-') ? -1 : 0
    if (first === -1) return
    for (const [position, word] of words.slice(first).entries())
      add(SET_POSITIONAL, { index: position, value: word, append: false })
    return
  }
  if (name === 'printf') {
    if (texts[0] !== '-v' || texts[1] === undefined || words[2] === undefined) return
    // `printf -v c %s "${a[@]}"`: arguments known only from the scope are evaluated where `$c` is used.
    if (texts.slice(2).includes(undefined)) {
      add(texts[1], {
        index: 0,
        value: { type: 'printf', format: words[2], args: words.slice(3) },
        append: false,
      })
      return
    }
    const format = words[2].value
    add(texts[1], {
      index: 0,
      value: formatPrintf(
        format,
        words.slice(3).map((word) => word.value),
      ),
      append: false,
    })
    return
  }
  // read: the first line of a here-string or here-document, split into fields.
  const input = redirectInputs(command.redirects)?.[0]
  if (input === undefined) return
  let array: string | undefined
  const names: string[] = []
  for (let index = 0; index < texts.length; index++) {
    const text = texts[index]
    if (text === undefined) return
    if (/^-[a-zA-Z]*[adpntNuiI]$/.test(text)) {
      if (text.endsWith('a')) array = texts[index + 1]
      index++
    } else if (!text.startsWith('-')) names.push(text)
  }
  const line = input.split('\n')[0] ?? ''
  const fields = line.trim().split(/[ \t]+/)
  if (array !== undefined) {
    for (const [position, field] of fields.entries())
      add(array, { index: position, value: field, append: false })
  }
  for (const [position, variable] of names.entries()) {
    const value = position === names.length - 1 ? fields.slice(position).join(' ') : (fields[position] ?? '')
    add(variable, { index: 0, value, append: false })
  }
  if (names.length === 0 && array === undefined) add('REPLY', { index: 0, value: line, append: false })
}
