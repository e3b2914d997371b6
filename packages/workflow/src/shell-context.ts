import type { TemplateReference } from './template.js'

type Context =
  | 'plain'
  | 'substitution'
  | 'single'
  | 'double'
  | 'ansi'
  | 'backtick'
  | 'parameter'
  | 'arithmetic'
  | 'comment'

/** Characters that can open a context other than plain text. */
const SPECIAL = /['"`$\\#<]/

const WORD_BREAK = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')'])

/** Characters inside `${…}` after which the pass no longer knows the quoting (see `parameter`). */
const UNFOLLOWED_IN_PARAMETER = new Set(["'", '"', '`', '\\', '$'])

/**
 * How the shell reads `$'…'`: bash, ksh, zsh and POSIX.1-2024 as one quoted string with
 * backslash escapes (`\'` does not end it); dash (Debian's and Ubuntu's `/bin/sh`) and older POSIX
 * shells as `$` and then a plain single-quoted string (`\'` ends it).
 */
type Dialect = 'ansi-quotes' | 'posix-2017'

/**
 * Returns the references in a `run` command that sit where a single-quoted value would not stay one
 * plain shell word (SECURITY.md WF-8): inside `'…'`, `"…"`, `$'…'`, backticks, `${…}`, `$((…))`, a
 * comment (a newline in the value would end it), after a backslash, anywhere after a heredoc
 * `<<` (its body is not parsed for quotes) or after a `${…}` whose word holds a quote, a backslash,
 * `$` or a backtick (`${x:-"}"}`: not followed). Unquoted text and `$(…)` are safe.
 * Commands run with `/bin/sh`, which is bash on some systems and dash on others, and the two read
 * `$'…'` differently: a reference counts as safe only when it is plain under both readings (after
 * `$'a\'b'` bash is outside quotes where dash is inside, and a value's own quote would then end
 * dash's string: an injection).
 * One pass over the command per reading; conservative on purpose: a false alarm asks the author to
 * move the placeholder out of quotes, a miss would be an injection.
 */
export function findUnsafeReferences(
  command: string,
  references: readonly TemplateReference[],
): TemplateReference[] {
  if (references.length === 0) return []
  // No quote, escape, expansion, comment or redirection character at all: every placeholder is plain.
  if (!SPECIAL.test(command)) return []
  const unsafe = new Set(unsafeIn(command, references, 'ansi-quotes'))
  // Without `$'` the two readings are the same.
  if (command.includes("$'"))
    for (const reference of unsafeIn(command, references, 'posix-2017')) unsafe.add(reference)
  return references.filter((reference) => unsafe.has(reference))
}

/** {@link findUnsafeReferences} under one reading of `$'…'`. */
function unsafeIn(
  command: string,
  references: readonly TemplateReference[],
  dialect: Dialect,
): TemplateReference[] {
  const unsafe: TemplateReference[] = []
  const stack: Context[] = ['plain']
  // After a heredoc `<<` (its body is not parsed for quotes) or a `${…}` word with quotes or
  // expansions (not followed): no placeholder is in a context this pass can vouch for.
  let untracked = false
  let next = 0
  let index = 0
  const length = command.length
  while (index < length) {
    let reference = references[next]
    // A reference whose start was jumped over (e.g. after a backslash) is not in a clean context.
    while (reference !== undefined && reference.start < index) {
      unsafe.push(reference)
      next += 1
      reference = references[next]
    }
    const context = stack[stack.length - 1] as Context
    if (reference !== undefined && reference.start === index) {
      if (untracked || (context !== 'plain' && context !== 'substitution')) unsafe.push(reference)
      next += 1
      index = reference.end
      continue
    }
    const char = command[index] as string
    const following = command[index + 1]
    switch (context) {
      case 'plain':
      case 'substitution':
        if (char === '\\') index += 1
        else if (char === "'") stack.push('single')
        else if (char === '"') stack.push('double')
        else if (char === '`') stack.push('backtick')
        else if (char === '$') {
          if (following === '(' && command[index + 2] === '(') {
            stack.push('arithmetic')
            index += 2
          } else if (following === '(') {
            stack.push('substitution')
            index += 1
          } else if (following === '{') {
            stack.push('parameter')
            index += 1
          } else if (following === "'" && dialect === 'ansi-quotes') {
            stack.push('ansi')
            index += 1
          }
        } else if (char === ')' && context === 'substitution') stack.pop()
        else if (char === '<' && following === '<') untracked = true
        else if (char === '#' && (index === 0 || WORD_BREAK.has(command[index - 1] as string)))
          stack.push('comment')
        break
      case 'single':
        if (char === "'") stack.pop()
        break
      case 'ansi':
        if (char === '\\') index += 1
        else if (char === "'") stack.pop()
        break
      case 'double':
        if (char === '\\') index += 1
        else if (char === '"') stack.pop()
        else if (char === '`') stack.push('backtick')
        else if (char === '$' && following === '(') {
          stack.push('substitution')
          index += 1
        } else if (char === '$' && following === '{') {
          stack.push('parameter')
          index += 1
        }
        break
      case 'backtick':
        if (char === '\\') index += 1
        else if (char === '`') stack.pop()
        break
      case 'parameter':
        // `${x:-word}`: the word has quotes and expansions of its own, which shells read differently
        // inside and outside double quotes (`"${x:-"}"}"`); a `}` in them does not end it. Not
        // followed: from a quote, backslash, `$` or backtick inside `${…}` on, every placeholder is
        // unsafe (an outside probe ran `$(…)` from a step's output past `"${C:-"{}"}" "{{a.result}}"`).
        if (char === '}') stack.pop()
        // `$name` and `$1` in the word are plain expansions; `$(`, `${`, `$'` and `$"` are not followed.
        else if (char === '$' && following !== undefined && /[\w@*#?!$-]/.test(following)) index += 1
        else if (UNFOLLOWED_IN_PARAMETER.has(char)) untracked = true
        break
      case 'arithmetic':
        if (char === ')' && following === ')') {
          stack.pop()
          index += 1
        }
        break
      case 'comment':
        if (char === '\n') stack.pop()
        break
    }
    index += 1
  }
  for (; next < references.length; next += 1) unsafe.push(references[next] as TemplateReference)
  return unsafe
}
