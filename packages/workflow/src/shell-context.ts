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
 * Bash also evaluates names with subscripts and arithmetic (`a[$(…)]` runs the `$(…)`) in `[[ … ]]`,
 * `((…))`, `let`, `declare -i`, `read`, `unset`, `printf -v`, `test -v`, `${!x}` and more, so a
 * second pass per reading refuses references bash could evaluate (see {@link evaluatedByBash}).
 * Two passes over the command per reading; conservative on purpose: a false alarm asks the author to
 * move the placeholder or pass the value another way, a miss would be an injection.
 */
export function findUnsafeReferences(
  command: string,
  references: readonly TemplateReference[],
): TemplateReference[] {
  if (references.length === 0) return []
  const unsafe = new Set<TemplateReference>()
  // Without `$'` the two readings are the same.
  const dialects: Dialect[] = command.includes("$'") ? ['ansi-quotes', 'posix-2017'] : ['ansi-quotes']
  for (const dialect of dialects) {
    // No quote, escape, expansion, comment or redirection character at all: every placeholder is
    // plain as far as quoting goes (bash's evaluation below is checked regardless).
    if (SPECIAL.test(command))
      for (const reference of unsafeIn(command, references, dialect)) unsafe.add(reference)
    for (const reference of evaluatedByBash(command, references, dialect)) unsafe.add(reference)
  }
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

/** Builtins that read every argument as code or arithmetic (`let n=…`, `eval …`, `trap … EXIT`). */
const CODE_BUILTINS = new Set(['let', 'eval', 'trap'])
/** Builtins whose arguments are `name` or `name=value` (a subscript in a name is arithmetic). */
const DECLARATION_BUILTINS = new Set(['declare', 'typeset', 'local', 'export', 'readonly'])
/** Builtins whose arguments (besides options) are variable names. */
const NAME_BUILTINS = new Set(['unset', 'read', 'mapfile', 'readarray', 'getopts'])
/** Builtins that take a variable name only with a flag: `printf -v`, `test -v`/`-R`, `[ -v`, `wait -p`. */
const NAME_FLAGS = new Map<string, RegExp>([
  ['printf', /^-[^-]*v/],
  ['test', /^-[vR]$/],
  ['[', /^-[vR]$/],
  ['wait', /^-[^-]*p/],
])
/** Every builtin the rules below look at, and `[[`. */
const EVALUATING_BUILTINS = new Set([
  ...CODE_BUILTINS,
  ...DECLARATION_BUILTINS,
  ...NAME_BUILTINS,
  ...NAME_FLAGS.keys(),
  '[[',
  'builtin',
  'command',
])
/** Words after which the next word is still in command position. */
const RESERVED_WORDS = new Set([
  '!',
  '{',
  '}',
  'if',
  'then',
  'elif',
  'else',
  'while',
  'until',
  'do',
  'fi',
  'done',
  'esac',
])
/**
 * Words that run the command named after them (and their options): `builtin let …`, `command read …`,
 * `coproc read …` (`coproc NAME { …; }`: a name followed by a reserved word is skipped too).
 */
const COMMAND_PREFIXES = new Set(['builtin', 'command', 'time', 'coproc'])
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
/** `name=`, `name+=` or `name[sub]=` at the start of a word. */
const ASSIGNMENT = /^[A-Za-z_]\w*(\[[^\]=]*\])?\+?=/
/** A plain `name`, `name=…` or `name+=…` argument of a declaration builtin. */
const PLAIN_NAME = /^[A-Za-z_]\w*(?:\+?=|$)/
/**
 * Bash variables whose assignment evaluates the value (`RANDOM`, `OPTIND`, `HISTCMD`, … as
 * arithmetic) or whose value is expanded later as a prompt (`PS4` under `set -x`, with `$(…)`).
 */
const SPECIAL_VARIABLE =
  /^(?:RANDOM|SRANDOM|OPTIND|OPTERR|SECONDS|LINENO|FUNCNEST|TMOUT|COLUMNS|LINES|PS[0-4]|PROMPT_\w*|SHELLOPTS|TIMEFORMAT|(?:BASH|HIST|EPOCH|COMP_|READLINE_)\w*)(?:\[|\+?=|$)/
/** A redirection word (`>`, `2>&1`, `<file`): it and, for a bare operator, the next word are no argument. */
const REDIRECTION = /^\d*(?:[<>]|&>)/
const BARE_REDIRECTION = /^\d*(?:<>|>>|>\||&>>?|[<>]&?|[<>])$/
/**
 * `${…}` forms bash evaluates: `${!x}` (the value of x as a name, subscript included), a subscript
 * `${a[…]}`, an offset `${s:…}` (arithmetic; `:-`, `:=`, `:?`, `:+` are not) and `${x@…}`
 * transformations (`@P` expands `$(…)` in the value).
 */
const EVALUATING_PARAMETER = /^\$\{(?:!|#?(?:[A-Za-z_]\w*|\d+|[@*#?$!-])(?:\[|@|:(?![-=?+])))/
/**
 * What the rest of a command must not hold once this pass can no longer follow it (after a heredoc
 * `<<`, whose body is expanded, or a `${…}` word it does not follow): any arithmetic, `[[`,
 * evaluating `${…}`, array subscript or name-evaluating builtin, wherever it stands.
 */
const EVALUATING_ANYWHERE =
  /\(\(|\$\[|\$\{!|\$\{#?(?:[A-Za-z_]\w*|\d+|[@*#?$!-])(?:\[|@|:(?![-=?+]))|\[\[|\w\[[^\]\s]{0,200}\]\+?=|(?:^|[^\w-])(?:let|eval|trap|declare|typeset|local|export|readonly|unset|read|mapfile|readarray|getopts|printf|test|wait|builtin|command)(?![\w-])/

/** One word of a simple command, at the top level of its `$(…)` (references nested deeper are not its). */
interface Word {
  readonly start: number
  readonly end: number
  readonly references: readonly TemplateReference[]
}

/** The simple command being read at one `$(…)` nesting level. */
interface Frame {
  words: Word[]
  wordStart: number
  wordReferences: TemplateReference[]
}

/**
 * The references bash (a `/bin/sh` on macOS, Fedora, Arch) would evaluate as code under one reading
 * of `$'…'`, though each is a single-quoted word: bash evaluates array subscripts in names and
 * arithmetic (`a[$(…)]` runs the `$(…)`), so a value must not reach a name or arithmetic context.
 *
 * - Every reference, when the command holds `((…))`, `$((…))`, `$[…]`, `[[ … ]]`, `let`, `${!…}`,
 *   `${a[…]}`, `${s:…}`, `${x@…}`, an array assignment (`a[i]=`, `a=(…)`), a declaration with `-i`,
 *   `-n`, `-a` or `-A`, a special variable (`RANDOM=`, `PS4=`, `read OPTIND`) or a name builtin
 *   whose name arguments are expansions (`unset "$x"`, `read "$n"`, `eval "$x"`): the value may
 *   reach them through a variable, a function's `$1` or a pipe, which no syntax check follows.
 * - A reference that is an argument of `eval`, `trap`, `unset`, `read`, `mapfile`, `readarray`,
 *   `getopts`, of `declare`/`typeset`/`local`/`export`/`readonly` (except as the value of a plain
 *   `name=` without options), of `printf -v`, `test -v`/`-R`, `[ -v`/`-R` or `wait -p`, or any
 *   argument of a command whose name is not a literal word (`$cmd {{x}}` could be `eval`).
 * - A reference in the command name itself (the value would choose the command, e.g. `eval`).
 */
function evaluatedByBash(
  command: string,
  references: readonly TemplateReference[],
  dialect: Dialect,
): readonly TemplateReference[] {
  return scanForBash(command, references, dialect) ?? references
}

/** {@link evaluatedByBash}; `undefined` when every reference is unsafe (the command evaluates). */
function scanForBash(
  command: string,
  references: readonly TemplateReference[],
  dialect: Dialect,
): TemplateReference[] | undefined {
  const unsafe: TemplateReference[] = []
  const stack: Context[] = ['plain']
  const frames: Frame[] = [{ words: [], wordStart: -1, wordReferences: [] }]
  const frame = () => frames[frames.length - 1] as Frame
  const startWord = (at: number) => {
    const current = frame()
    if (current.wordStart < 0) current.wordStart = at
  }
  const endWord = (at: number) => {
    const current = frame()
    if (current.wordStart < 0) return false
    const word = { start: current.wordStart, end: at, references: current.wordReferences }
    current.words.push(word)
    current.wordStart = -1
    current.wordReferences = []
    return command.slice(word.start, word.end) === '[['
  }
  const endCommand = (at: number) => {
    if (endWord(at)) return true
    const current = frame()
    const words = current.words
    current.words = []
    return checkSimpleCommand(command, words, unsafe, dialect)
  }
  let next = 0
  let index = 0
  const length = command.length
  while (index < length) {
    const context = stack[stack.length - 1] as Context
    const atWordLevel = context === 'plain' || context === 'substitution'
    let reference = references[next]
    // A reference jumped over sits in a quoted context the quoting pass refuses.
    while (reference !== undefined && reference.start < index) reference = references[++next]
    if (reference !== undefined && reference.start === index) {
      if (atWordLevel) {
        startWord(index)
        frame().wordReferences.push(reference)
      }
      next += 1
      index = reference.end
      continue
    }
    const char = command[index] as string
    const following = command[index + 1]
    if (
      char === '$' &&
      (context === 'plain' || context === 'substitution' || context === 'double' || context === 'parameter')
    ) {
      // Arithmetic and evaluating parameter forms, wherever they stand, taint the whole command.
      if (following === '[' || (following === '(' && command[index + 2] === '(')) return undefined
      if (following === '{' && EVALUATING_PARAMETER.test(command.slice(index, index + 300))) return undefined
    }
    if (char === '`' && (atWordLevel || context === 'double')) {
      // The body of a backtick substitution is a command of its own: checked the same way.
      if (atWordLevel) startWord(index)
      let end = index + 1
      let body = ''
      while (end < length && command[end] !== '`') {
        if (command[end] === '\\' && end + 1 < length) {
          const escaped = command[end + 1] as string
          body += escaped === '\\' || escaped === '`' || escaped === '$' ? escaped : `\\${escaped}`
          end += 2
        } else body += command[end++]
      }
      if (scanForBash(body, [], dialect) === undefined) return undefined
      index = end + 1
      continue
    }
    switch (context) {
      case 'plain':
      case 'substitution':
        if (char === ' ' || char === '\t') {
          if (endWord(index)) return undefined
        } else if (char === '\n' || char === ';' || char === '&' || char === '|') {
          if (endCommand(index)) return undefined
        } else if (char === '(') {
          // `((…))` and `for ((…))`: arithmetic. `a=(…)`: an array, whose `[i]=` subscripts evaluate.
          if (following === '(') return undefined
          if (frame().wordStart >= 0 && command[index - 1] === '=') return undefined
          if (endCommand(index)) return undefined
        } else if (char === ')') {
          if (endCommand(index)) return undefined
          if (context === 'substitution') {
            frames.pop()
            stack.pop()
          }
        } else if (char === '#' && frame().wordStart < 0) stack.push('comment')
        else if (char === '<' && following === '<') {
          // A heredoc's body is expanded and not followed here: nothing evaluating may follow.
          if (EVALUATING_ANYWHERE.test(command.slice(index))) return undefined
          return finish()
        } else {
          startWord(index)
          if (char === '\\') index += 1
          else if (char === "'") stack.push('single')
          else if (char === '"') stack.push('double')
          else if (char === '$') {
            if (following === '(') {
              stack.push('substitution')
              frames.push({ words: [], wordStart: -1, wordReferences: [] })
              index += 1
            } else if (following === '{') {
              stack.push('parameter')
              index += 1
            } else if (following === "'" && dialect === 'ansi-quotes') {
              stack.push('ansi')
              index += 1
            }
          }
        }
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
        else if (char === '$' && following === '(') {
          stack.push('substitution')
          frames.push({ words: [], wordStart: -1, wordReferences: [] })
          index += 1
        } else if (char === '$' && following === '{') {
          stack.push('parameter')
          index += 1
        }
        break
      case 'parameter':
        if (char === '}') stack.pop()
        else if (char === '$' && following !== undefined && /[\w@*#?!$-]/.test(following)) index += 1
        else if (UNFOLLOWED_IN_PARAMETER.has(char)) {
          if (EVALUATING_ANYWHERE.test(command.slice(index))) return undefined
          return finish()
        }
        break
      case 'comment':
        if (char === '\n') {
          stack.pop()
          if (endCommand(index)) return undefined
        }
        break
      default:
        break
    }
    index += 1
  }
  return finish()

  /** Checks the simple commands still open; `undefined` when one of them taints the command. */
  function finish(): TemplateReference[] | undefined {
    while (frames.length > 0) {
      if (endCommand(length)) return undefined
      frames.pop()
    }
    return unsafe
  }
}

/**
 * A word without quotes and escapes (`'let'`, `\let` and `$'let'` all run `let`). Only its first
 * 64 characters: enough for any name compared here, and linear over nested `$(…)` words.
 */
function unquoted(text: string): string {
  return text
    .slice(0, 64)
    .replace(/\$(?=['"])/g, '')
    .replace(/['"\\]/g, '')
}

/**
 * Checks one simple command's words: adds the references bash would evaluate to `unsafe`; true when
 * the command taints every reference (see {@link evaluatedByBash}).
 */
function checkSimpleCommand(
  command: string,
  allWords: readonly Word[],
  unsafe: TemplateReference[],
  dialect: Dialect,
): boolean {
  const words: Word[] = []
  // Redirections (`> out`, `2>&1`, `<file`) are no arguments.
  for (let index = 0; index < allWords.length; index += 1) {
    const word = allWords[index] as Word
    const text = command.slice(word.start, word.end)
    if (word.references.length === 0 && REDIRECTION.test(text)) {
      if (BARE_REDIRECTION.test(text)) index += 1
      continue
    }
    words.push(word)
  }
  // After a `)` that ended a word (`$(case x in a) let …`, misread as the end of the `$(`), a builtin
  // of the lists above may start a command: each such part is checked as one.
  let tainted = false
  let from = 0
  for (let split = 1; split <= words.length; split += 1) {
    const previous = words[split - 1] as Word
    const word = words[split]
    if (
      word === undefined ||
      (command[previous.end - 1] === ')' &&
        word.references.length === 0 &&
        EVALUATING_BUILTINS.has(unquoted(command.slice(word.start, word.end))))
    ) {
      if (checkWords(command, words.slice(from, split), unsafe, dialect)) tainted = true
      from = split
    }
  }
  return tainted
}

/** {@link checkSimpleCommand} for words that hold one command. */
function checkWords(
  command: string,
  words: readonly Word[],
  unsafe: TemplateReference[],
  dialect: Dialect,
): boolean {
  if (nestedScriptEvaluates(command, words, dialect)) return true
  let index = 0
  // Assignments, reserved words and `builtin`/`command`/`time` (with their options) come before the name.
  while (index < words.length) {
    const word = words[index] as Word
    const text = command.slice(word.start, word.end)
    const assignment = ASSIGNMENT.exec(text)
    if (assignment !== null) {
      // `a[i]=…` evaluates the subscript; `RANDOM=…`, `PS4=…` evaluate or expand the value.
      if (assignment[1] !== undefined || SPECIAL_VARIABLE.test(text)) return true
      index += 1
      continue
    }
    const name = word.references.length === 0 ? unquoted(text) : undefined
    if (name !== undefined && RESERVED_WORDS.has(name)) index += 1
    else if (name !== undefined && COMMAND_PREFIXES.has(name)) {
      index += 1
      // `coproc NAME { …; }` (or `while`, `if` …): the name is the coprocess's, not a command.
      const following = words[index + 1]
      if (
        name === 'coproc' &&
        following !== undefined &&
        following.references.length === 0 &&
        RESERVED_WORDS.has(unquoted(command.slice(following.start, following.end)))
      )
        index += 1
      while (
        index < words.length &&
        /^-/.test(unquoted(command.slice(words[index]?.start, words[index]?.end)))
      )
        index += 1
    } else break
  }
  const head = words[index]
  if (head === undefined) return false
  const headText = command.slice(head.start, head.end)
  // A placeholder in the name would let the value choose the command (`eval`, `let`, …).
  unsafe.push(...head.references)
  const args = words.slice(index + 1)
  const texts = args.map((word) => command.slice(word.start, word.end))
  const names = texts.map(unquoted)
  const argumentReferences = () => args.flatMap((word) => word.references)
  const expands = (text: string) => /[$`[]/.test(text)
  // A name that is not a literal word (`$cmd`, `$(which x)`) could be any builtin.
  if (head.references.length > 0 || /[$`]/.test(headText)) {
    unsafe.push(...argumentReferences())
    return false
  }
  const name = unquoted(headText)
  if (name === '[[' || name === 'let') return true
  if (CODE_BUILTINS.has(name)) {
    unsafe.push(...argumentReferences())
    return texts.some(expands)
  }
  if (DECLARATION_BUILTINS.has(name)) {
    const options = names.filter((text) => /^[-+]/.test(text))
    // `-i` (integer: later assignments are arithmetic), `-n` (name reference), `-a`/`-A` (arrays).
    if (options.some((option) => /[inaA]/.test(option))) return true
    for (let position = 0; position < args.length; position += 1) {
      const word = args[position] as Word
      const text = texts[position] as string
      if (SPECIAL_VARIABLE.test(text)) return true
      if (/^[-+]/.test(names[position] as string)) continue
      if (!PLAIN_NAME.test(text)) {
        // A computed or subscripted name: `declare "$x"=1`, `local a[i]=1`.
        if (expands(text)) return true
        unsafe.push(...word.references)
      } else if (options.length > 0) unsafe.push(...word.references)
    }
    return false
  }
  if (name === 'for' || name === 'select') return SPECIAL_VARIABLE.test(texts[0] ?? '')
  const flag = NAME_FLAGS.get(name)
  if (NAME_BUILTINS.has(name) || (flag !== undefined && names.some((text) => flag.test(text)))) {
    unsafe.push(...argumentReferences())
    return texts.some((text) => expands(text) || SPECIAL_VARIABLE.test(unquoted(text)))
  }
  return false
}

/**
 * True when a simple command hands a script that evaluates names or arithmetic (the command-wide
 * rule of {@link evaluatedByBash}) to a nested shell (`bash -c '…'`, by any path and after any runner
 * such as `sudo` or `env`) or to `eval`/`trap`: a placeholder's value may reach that script through
 * the environment or a pipe (`v={{a.result}} bash -c 'echo $((v))'`, `echo {{a.result}} | sh -c
 * 'read v; [[ $v -gt 1 ]]'`), so every placeholder of the command is refused. Read at the text level:
 * every word after the `-c` cluster (conservative: `bash -c -e '…'`) is unquoted and scanned.
 */
function nestedScriptEvaluates(command: string, words: readonly Word[], dialect: Dialect): boolean {
  const texts = words.map((word) => command.slice(word.start, word.end))
  const scripts: string[] = []
  // Only the first `eval`/`trap` and the first `-c` after the first shell: the words after them hold
  // any later one's (and one pass keeps long commands linear).
  const code = texts.findIndex((text) => ['eval', 'trap'].includes(unquoted(text)))
  if (code !== -1)
    scripts.push(
      texts
        .slice(code + 1)
        .map(shellText)
        .join(' '),
    )
  const shell = texts.findIndex((text) => NESTED_SHELLS.has(unquoted(text).replace(/^.*\//, '')))
  const option =
    shell === -1
      ? -1
      : texts.findIndex((text, at) => at > shell && COMMAND_STRING_OPTION.test(unquoted(text)))
  if (option !== -1) scripts.push(...texts.slice(option + 1).map(shellText))
  return scripts.some((script) => scanForBash(script, [], dialect) === undefined)
}

/**
 * A word's text as the shell passes it on, roughly: quotes removed, `\x` outside single quotes read
 * as `x` (in double quotes only before `$`, `` ` ``, `"`, `\`), `$'…'` taken as plain text. Expansions
 * stay as written, which is what a nested shell would see of a literal script.
 */
function shellText(text: string): string {
  let result = ''
  let quote: "'" | '"' | undefined
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index] as string
    if (quote === "'") {
      if (char === "'") quote = undefined
      else result += char
    } else if (char === '\\') {
      const next = text[index + 1]
      if (next === undefined) break
      if (quote === '"' && !'$`"\\\n'.includes(next)) result += char
      result += next
      index += 1
    } else if (quote === '"') {
      if (char === '"') quote = undefined
      else result += char
    } else if (char === "'" || char === '"') quote = char
    else if (char === '$' && (text[index + 1] === "'" || text[index + 1] === '"')) continue
    else result += char
  }
  return result
}
