import type { Command, CommandNode, ParsedScript, Redirection, Word } from 'unbash'
import {
  decodeBackslashEscapes,
  decodeBase64,
  decodeHex,
  formatPrintf,
  normalizeProgramName,
} from './shell-text.js'

/** Upper bound on the candidate outputs kept per command, so a crafted pipeline stays cheap. */
const MAX_OUTPUTS = 8

/**
 * The value of a word with no expansions or globs after quote removal (`'la'"ngo"` → `lango`,
 * `$'\x6cango'` → `lango`), or `undefined` when its value depends on the run time.
 */
export function literalWordValue(word: Word): string | undefined {
  const parts = word.parts
  if (parts === undefined) return hasUnparsedExpansion(word) ? undefined : word.value
  for (const part of parts) {
    switch (part.type) {
      case 'Literal':
      case 'SingleQuoted':
      case 'AnsiCQuoted':
        continue
      case 'DoubleQuoted':
      case 'LocaleString':
        if (part.parts.every((child) => child.type === 'Literal')) continue
        return undefined
      default:
        return undefined
    }
  }
  return word.value
}

/**
 * True for a word the parser left as plain text although it holds an expansion: that happens past
 * the parser's nesting limit, so its value is unknown rather than literal.
 */
export function hasUnparsedExpansion(word: Word): boolean {
  return word.parts === undefined && /(?<!\\)(?:\$[({]|`)/.test(word.text)
}

/** The text fed to a command's stdin by its here-documents and here-strings, if any. */
export function redirectInputs(redirects: readonly Redirection[]): string[] | undefined {
  const inputs: string[] = []
  for (const redirect of redirects) {
    if (redirect.type === 'HereString' && redirect.target !== undefined)
      inputs.push(`${redirect.target.value}\n`)
    else if (redirect.type === 'HereDoc') inputs.push(redirect.body.text)
  }
  return inputs.length === 0 ? undefined : inputs
}

/**
 * What a substitution's script prints when that is knowable from the text alone: a single pipeline
 * of `echo`, `printf`, `cat <<EOF`, `base64 -d`, `rev`, `xxd -r -p`, `tee`. Otherwise `undefined`.
 */
export function scriptOutputs(script: ParsedScript | undefined): string[] | undefined {
  const statement = script?.commands.length === 1 ? script.commands[0] : undefined
  if (statement === undefined) return undefined
  const node = statement.command
  if (node.type === 'Command') return pipelineOutputs([node])
  if (node.type === 'Pipeline') return pipelineOutputs(node.commands)
  return undefined
}

/** Folds {@link nextPipelineOutputs} over the stages of a pipeline; `undefined` once one is unknown. */
function pipelineOutputs(commands: readonly CommandNode[]): string[] | undefined {
  let outputs: string[] | undefined
  for (const node of commands) {
    outputs = nextPipelineOutputs(node, outputs)
    if (outputs === undefined) return undefined
  }
  return outputs
}

/** What one pipeline stage prints given what the previous stages printed (`piped`), when knowable. */
export function nextPipelineOutputs(
  node: CommandNode,
  piped: readonly string[] | undefined,
): string[] | undefined {
  if (node.type === 'Command') return commandOutputs(node, piped)
  if (node.type !== 'BraceGroup' && node.type !== 'Subshell') return undefined
  // `{ echo a; echo b; }`: the statements' outputs in order, when each one is known.
  let combined = ['']
  for (const statement of node.body.commands) {
    const inner = statement.command
    const outputs =
      inner.type === 'Pipeline'
        ? pipelineOutputs(inner.commands)
        : inner.type === 'AndOr'
          ? undefined
          : nextPipelineOutputs(inner, piped)
    if (outputs === undefined || outputs.length === 0) return undefined
    combined = combined.flatMap((before) => outputs.map((output) => before + output)).slice(0, MAX_OUTPUTS)
  }
  return combined
}

function commandOutputs(command: Command, piped: readonly string[] | undefined): string[] | undefined {
  const nameWord = command.name
  const rawName = nameWord === undefined ? undefined : literalWordValue(nameWord)
  if (rawName === undefined) return undefined
  const name = normalizeProgramName(rawName)
  const input = redirectInputs(command.redirects) ?? piped
  const values: string[] = []
  for (const argument of command.suffix) {
    if (argument.type === 'Word') values.push(argument.value)
    else if (argument.type === 'Assignment') values.push(argument.text)
  }
  switch (name) {
    case 'echo': {
      let first = 0
      while (first < values.length && /^-[neE]+$/.test(values[first] ?? '')) first++
      const text = `${values.slice(first).join(' ')}\n`
      const decoded = decodeBackslashEscapes(text)
      return decoded === text ? [text] : [text, decoded]
    }
    case 'printf': {
      const rest = values[0] === '--' ? values.slice(1) : values
      if (rest[0] === '-v') return [] // prints nothing: assigns a variable
      return [formatPrintf(rest[0] ?? '', rest.slice(1))]
    }
    case 'cat':
    case 'tee':
      return values.some((value) => !value.startsWith('-')) && name === 'cat' ? undefined : bounded(input)
    case 'base64':
      if (!values.some((value) => value === '-d' || value === '--decode' || value === '-D')) return undefined
      return bounded(input?.flatMap((text) => decodeBase64(text) ?? []))
    case 'rev':
      return bounded(input?.map((text) => text.split('\n').map(reverse).join('\n')))
    case 'xxd':
      if (!values.includes('-r') || !values.some((value) => /^-(?:p|ps|plain)$/.test(value))) return undefined
      return bounded(input?.flatMap((text) => decodeHex(text) ?? []))
    default:
      return undefined
  }
}

function reverse(line: string): string {
  return Array.from(line).reverse().join('')
}

function bounded(outputs: readonly string[] | undefined): string[] | undefined {
  return outputs === undefined ? undefined : outputs.slice(0, MAX_OUTPUTS)
}
