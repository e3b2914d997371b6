import type { ArithmeticExpression, Assignment, Command, SyntaxNode, Word } from 'unbash'
import { forEachChild, parse } from 'unbash'
import type { CodeRegion } from './nested-code.js'

/**
 * Where bash (the `/bin/sh` of macOS, Fedora, Arch) evaluates a value as code although it is one
 * quoted expansion: bash evaluates array subscripts in names and arithmetic, and a subscript's
 * `$(…)` runs (`a[$(touch /tmp/F)]` in `$(( "$V" ))`, `[[ $V -eq 0 ]]`, `let n=$V`, `read "$V"`).
 * A value token rewritten to `"${__LANGO_REF_0}"` there would still run its own code.
 *
 * - `everywhere`: the command holds a construct that evaluates names or arithmetic (`(( ))`,
 *   `$(( ))`, `$[ ]`, `[[ ]]`, `let`, `${!x}`, `${a[i]}`, `${s:n}`, `${x@…}`, an array
 *   assignment with a computed subscript, `declare -i/-n/-a/-A`, a bash special variable such as
 *   `RANDOM`, `OPTIND` or `PS4`, a name builtin given an expansion). A value may reach it through
 *   a variable, a function's `$1` or a pipe (`v={{secret:x}}; echo $((v+1))`), which no syntax
 *   check follows, so every value token of the command is refused. Names the construct.
 * - `regions`: words whose value bash reads as a name (`unset`, `read`, `mapfile`, `readarray`,
 *   `getopts`, `printf -v`, `test -v`/`-R`, `[ -v`/`-R`, `wait -p`, the names of `declare` and
 *   its family), the command name itself, and the arguments of a command whose name is computed
 *   (`$cmd {{secret:x}}` could be `let`).
 *
 * Conservative on purpose (a false alarm asks for the value to be passed another way; a miss runs
 * code). Arithmetic made of number literals only (`$((60 * 60))`) is no reason to refuse: no
 * value can reach it. `eval` and `trap` are code regions of {@link findCodeRegions} already.
 */
export interface BashEvaluation {
  readonly everywhere: string | undefined
  readonly regions: readonly CodeRegion[]
}

/** Builtins whose arguments (besides options) are variable names. */
const NAME_BUILTINS = new Set(['unset', 'read', 'mapfile', 'readarray', 'getopts'])
/** Builtins that take a variable name only with a flag: `printf -v`, `test -v`/`-R`, `[ -v`, `wait -p`. */
const NAME_FLAGS: ReadonlyMap<string, RegExp> = new Map([
  ['printf', /^-[^-]*v/],
  ['test', /^-[vR]$/],
  ['[', /^-[vR]$/],
  ['wait', /^-[^-]*p/],
])
/** Builtins whose arguments are `name` or `name=value` (a subscript in a name is arithmetic). */
const DECLARATION_BUILTINS = new Set(['declare', 'typeset', 'local', 'export', 'readonly'])
/** Words that run the builtin named after them (and take options of their own). */
const COMMAND_PREFIXES = new Set(['builtin', 'command'])
/** Shells whose `-c` argument is a script of its own (`bash -c '…'`, `/bin/sh -ec '…'`). */
const NESTED_SHELLS = new Set([
  'sh',
  'bash',
  'rbash',
  'dash',
  'ash',
  'ksh',
  'mksh',
  'pdksh',
  'oksh',
  'zsh',
  'yash',
  'posh',
])
/** A short-option cluster holding `c`: `-c`, `-ec`, `-xce`. */
const COMMAND_STRING_OPTION = /^-[A-Za-z]*c[A-Za-z]*$/
/** Builtins whose arguments, joined, are a script: `eval '…'`, `trap '…' EXIT`. */
const SCRIPT_BUILTINS = new Set(['eval', 'trap'])
/**
 * Bash variables whose assignment evaluates the value (`RANDOM`, `OPTIND`, `SECONDS` … as
 * arithmetic) or whose value is expanded later as a prompt (`PS4` under `set -x`, with `$(…)`).
 */
const SPECIAL_VARIABLE =
  /^(?:RANDOM|SRANDOM|OPTIND|OPTERR|SECONDS|LINENO|FUNCNEST|TMOUT|COLUMNS|LINES|PS[0-4]|PROMPT_\w*|SHELLOPTS|TIMEFORMAT|(?:BASH|HIST|EPOCH|COMP_|READLINE_)\w*)$/
/** A number bash's arithmetic reads without looking up a name: `42`, `0x1F`, `2#101`. */
const NUMBER = /^(?:0[xX][0-9A-Fa-f]+|[0-9]+(?:#[0-9A-Za-z@_]+)?)$/
/** A subscript no value can reach: a number, or `@`/`*` for every element. */
const PLAIN_SUBSCRIPT = /^(?:[0-9]+|[@*])$/
/** `[sub]=` at the start of an element of `a=(…)`. */
const ELEMENT_SUBSCRIPT = /^\[([^\]]*)\]\+?=/

/** True when a word's text holds an expansion or a subscript (`"$x"`, `` `…` ``, `a[i]`). */
function expands(text: string): boolean {
  return /[$`[]/.test(text)
}

/** True when a word has a literal `/` outside its expansions: after expansion it names a path. */
function holdsSlash(word: Word): boolean {
  const literal = (part: SyntaxNode): boolean =>
    ((part.type === 'Literal' || part.type === 'SingleQuoted') && part.value.includes('/')) ||
    ((part.type === 'DoubleQuoted' || part.type === 'LocaleString') && part.parts.some(literal))
  return word.parts === undefined ? word.value.includes('/') : word.parts.some(literal)
}

/** True when `expression` holds anything but number literals: a name, an expansion, a parse gap. */
function readsNames(expression: ArithmeticExpression | undefined): boolean {
  if (expression === undefined) return true
  let names = false
  const visit = (node: SyntaxNode): void => {
    if (names) return
    if (node.type === 'ArithmeticWord' && !NUMBER.test(node.value)) names = true
    else if (node.type === 'ArithmeticCommandExpansion') names = true
    else forEachChild(node, visit)
  }
  visit(expression)
  return names
}

/** The bash evaluation contexts of a parsed command (see {@link BashEvaluation}). */
export function findBashEvaluation(root: SyntaxNode): BashEvaluation {
  const regions: CodeRegion[] = []
  let everywhere: string | undefined
  const taint = (by: string): void => {
    everywhere ??= by
  }

  /** `decoded`: inside backquotes with escapes, whose positions index decoded text (no regions). */
  const visit = (node: SyntaxNode, decoded: boolean): void => {
    const mark = (word: Word | Assignment | undefined, by: string): void => {
      if (word !== undefined && !decoded) regions.push({ start: word.pos, end: word.end, by })
    }
    switch (node.type) {
      case 'ArithmeticExpansion':
        // `$(( ))` and `$[ ]`
        if (readsNames(node.expression)) taint('bash arithmetic')
        break
      case 'ArithmeticCommand':
        if (readsNames(node.expression)) taint('bash arithmetic')
        break
      case 'ArithmeticFor':
        if ([node.initialize, node.test, node.update].some((part) => part === undefined || readsNames(part)))
          taint('bash arithmetic')
        break
      case 'TestCommand':
        taint('bash [[ ]]')
        break
      case 'ParameterExpansion':
        if (node.prefix === '!') taint('bash ${!name}')
        else if (node.index !== undefined && !PLAIN_SUBSCRIPT.test(node.index.text))
          taint('bash array subscript')
        else if (
          node.operation?.type === 'Slice' &&
          [node.operation.offset, node.operation.length].some(
            (part) => part !== undefined && !/^\s*-?[0-9]+\s*$/.test(part.text),
          )
        )
          taint('bash arithmetic')
        else if (node.operation?.type === 'Transform') taint('bash ${name@…}')
        break
      case 'Assignment':
        if (node.index !== undefined && !PLAIN_SUBSCRIPT.test(node.index.text)) taint('bash array subscript')
        if (SPECIAL_VARIABLE.test(node.name)) taint(`bash ${node.name}`)
        if (node.value.type === 'ArrayValue')
          for (const element of node.value.elements) {
            const subscript = ELEMENT_SUBSCRIPT.exec(element.text)?.[1]
            if (subscript !== undefined && !PLAIN_SUBSCRIPT.test(subscript)) taint('bash array subscript')
          }
        break
      case 'For':
      case 'Select':
        if (SPECIAL_VARIABLE.test(node.name.text)) taint(`bash ${node.name.text}`)
        break
      case 'HereDoc':
        // A quoted delimiter: the body is not expanded.
        if (node.delimiter?.quoted === true) return
        break
      case 'Command':
        analyseCommand(node, mark, taint)
        break
      case 'CommandExpansion':
      case 'ProcessSubstitution':
      case 'ArithmeticCommandExpansion':
        if (node.script !== undefined) visit(node.script, decoded || node.script.source !== undefined)
        return
      default:
        break
    }
    forEachChild(node, (child) => visit(child, decoded))
  }

  visit(root, false)
  return { everywhere, regions }
}

/** The rules of one simple command: regions for name arguments, `taint` for command-wide ones. */
function analyseCommand(
  command: Command,
  mark: (word: Word | Assignment | undefined, by: string) => void,
  taint: (by: string) => void,
): void {
  const name = command.name
  if (name === undefined) return
  const words: (Word | Assignment)[] = [name, ...command.args]
  let at = 0
  // `builtin let …`, `command -p declare -i …`: the builtin named after them runs.
  const valueAt = (index: number): string => {
    const word = words[index]
    return word?.type === 'Word' ? word.value : ''
  }
  while (at < words.length - 1 && COMMAND_PREFIXES.has(valueAt(at))) {
    at++
    while (at < words.length - 1 && /^-/.test(valueAt(at))) at++
  }
  const head = words[at] as Word | Assignment
  const args = words.slice(at + 1)
  // A nested shell's command string or `eval`'s script: the value may reach it through a variable
  // or a pipe (`V={{secret:x}} bash -c 'echo $((V))'`), so its command-wide rule is this command's.
  for (const script of nestedScripts(words, head, args)) {
    const inner = nestedEvaluation(script.text)
    if (inner !== undefined) taint(`${script.by}: ${inner}`)
  }
  // A value as the command name would choose the command (`let`, `read` …).
  mark(name, 'bash command name')
  if (head.type === 'Word' && (head !== name || at > 0)) mark(head, 'bash command name')
  if (head.type !== 'Word' || (/[$`]/.test(head.value) && !holdsSlash(head))) {
    // A computed name (`$cmd`, `$(which x)`) may be any builtin: its arguments may be names. One
    // with a `/` of its own (`"$HOME/bin/tool"`) names a file, never a builtin.
    for (const word of args) mark(word, `bash ${head.text}`)
    return
  }
  const builtin = head.value
  if (builtin === 'let') {
    taint('bash let')
    return
  }
  const options = args.filter((word) => word.type === 'Word' && /^[-+]/.test(word.value))
  if (DECLARATION_BUILTINS.has(builtin)) {
    // `-i` (integer: assignments are arithmetic), `-n` (a name reference), `-a`/`-A` (arrays).
    const evaluating = options.find((word) => /[inaA]/.test(word.text))
    if (evaluating !== undefined) {
      taint(`bash ${builtin} ${evaluating.text}`)
      return
    }
    for (const word of args) {
      if (options.includes(word)) continue
      if (word.type === 'Assignment') {
        // Only the value of a plain `name=value` without options is data.
        if (options.length > 0) mark(word, `bash ${builtin}`)
        else if (word.index !== undefined) mark(word, `bash ${builtin}`)
        continue
      }
      // A name argument, or a computed one (`declare "$x"=1`, `local a[i]=1`).
      if (expands(word.text)) taint(`bash ${builtin}`)
      if (SPECIAL_VARIABLE.test(word.value.replace(/[+]?=.*$/s, ''))) taint(`bash ${builtin}`)
      mark(word, `bash ${builtin}`)
    }
    return
  }
  const flag = NAME_FLAGS.get(builtin)
  const flagged = flag !== undefined ? options.find((word) => flag.test(word.text)) : undefined
  if (NAME_BUILTINS.has(builtin) || flagged !== undefined) {
    const by = flagged === undefined ? `bash ${builtin}` : `bash ${builtin} ${flagged.text}`
    for (const word of args) {
      mark(word, by)
      if (expands(word.text) || SPECIAL_VARIABLE.test(word.text)) taint(by)
    }
  }
}

/** Scripts a command hands to a nested shell (`sh -c`, by any path, after any runner) or to `eval`/`trap`. */
function nestedScripts(
  words: readonly (Word | Assignment)[],
  head: Word | Assignment,
  args: readonly (Word | Assignment)[],
): { text: string; by: string }[] {
  const scripts: { text: string; by: string }[] = []
  if (head.type === 'Word' && SCRIPT_BUILTINS.has(head.value))
    scripts.push({
      text: args.map((word) => (word.type === 'Word' ? word.value : word.text)).join(' '),
      by: head.value,
    })
  for (let index = 0; index < words.length; index++) {
    const word = words[index] as Word | Assignment
    const shell = word.type === 'Word' ? word.value.replace(/^.*\//, '') : ''
    if (!NESTED_SHELLS.has(shell)) continue
    const option = words.findIndex(
      (later, at) => at > index && later.type === 'Word' && COMMAND_STRING_OPTION.test(later.value),
    )
    if (option === -1) continue
    // Conservative: every later word may be the command string (`bash -c -e '…'`).
    for (const later of words.slice(option + 1))
      if (later.type === 'Word') scripts.push({ text: later.value, by: `${shell} -c` })
    break
  }
  return scripts
}

/** The command-wide construct of a nested script (see {@link BashEvaluation}), if any. */
function nestedEvaluation(script: string): string | undefined {
  try {
    return findBashEvaluation(parse(script)).everywhere
  } catch {
    return 'bash (unparsable nested script)' // conservative: bash may still run part of it
  }
}
