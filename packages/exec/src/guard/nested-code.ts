import type { Assignment, Command, Pipeline, Redirection, SyntaxNode, Word } from 'unbash'
import { forEachChild } from 'unbash'
import { namesOwnInput } from './own-input.js'

/**
 * Where a command hands text to a second parser: a nested shell (`sh -c STRING`, `| sh`, a
 * here-document fed to a shell), `eval`, `source`, or an interpreter's inline program
 * (`python3 -c`, `node -e`, awk and sed scripts, remote commands of `ssh`). A value expanded there
 * is parsed again as code, so the outer quoting no longer protects it (SECURITY.md SEC-2, issue 11
 * finding 7). Conservative by design: a word is taken for a program when its basename matches,
 * wherever it sits in the simple command, so runners (`sudo`, `timeout`, `xargs`, `find -exec`,
 * `env`) need no table of their own.
 */
export interface CodeRegion {
  readonly start: number
  readonly end: number
  /** The program that parses the text again, as written (`sh`, `eval`, `python3`, `env -S` …). */
  readonly by: string
}

/** Shells: the word after `-c` is code; without `-c` or a script operand, stdin is. */
const SHELLS = new Set([
  'sh',
  'bash',
  'dash',
  'zsh',
  'ksh',
  'mksh',
  'pdksh',
  'oksh',
  'ash',
  'yash',
  'posh',
  'rbash',
  'fish',
  'csh',
  'tcsh',
])
/** Shell options that take an argument (which is not a script operand). */
const SHELL_OPTION_ARGUMENTS = new Set(['-o', '+o', '-O', '+O', '--rcfile', '--init-file'])

/**
 * Where a program takes code as an option's argument, read the way getopt reads a short-option
 * cluster: the first code letter takes the rest of the word (`su -c"…"`, `python3 -cCODE`), or the
 * next word when it ends the cluster (`su -lc "…"`, `python3 -Sc "…"`, `perl -we "…"`).
 */
interface CodeOptions {
  /** Short options whose argument is code. */
  readonly code: string
  /**
   * Short options that take an argument of their own. A code letter after one in the same word may
   * be that argument or, if the table is wrong, a code option: both the word and the next count.
   */
  readonly argument?: string
  /** Short options followed by optional digits only (`perl -l`, `-0777`). */
  readonly digits?: string
  /** Long options whose argument is code; unambiguous abbreviations (`--comm`) count too. */
  readonly long?: readonly string[]
  /** Long options that take the next word as their value (`node --require ./x.js -e …`). */
  readonly longArgument?: readonly string[]
  /**
   * No getopt clusters (node, bun): a word of flag letters holding a code letter (`-pe`) takes the
   * next word, and a code letter with other text attached is the code itself.
   */
  readonly loose?: boolean
  /** PowerShell: `-Command`, `-c`, `-EncodedCommand`, `-e`, `-ec`, `-cwa` or a prefix; all that follows is code. */
  readonly powershell?: boolean
}

/** Where an option word puts code: the next word, the word itself, or (unsure) both. */
type CodePlace = 'next' | 'word' | 'both'

/** Programs that run `-c COMMAND` through a shell wherever the option sits; otherwise a shell on stdin. */
const COMMAND_OPTION_RUNNERS: ReadonlyMap<string, CodeOptions> = new Map([
  // util-linux getopt strings: su `c:fg:G:lmpPs:hVw:`, runuser adds `u:`, script `ac:B:eE:fI:O:o:qm:T:t::Vh`.
  ['su', { code: 'c', argument: 'gGsw', long: ['--command', '--session-command'] }],
  ['runuser', { code: 'c', argument: 'gGsuw', long: ['--command', '--session-command'] }],
  ['script', { code: 'c', argument: 'BEIOomTt', long: ['--command'] }],
])

/** Every argument is code: joined and run by a shell (here, on another machine, or on a signal). */
const ALL_ARGUMENTS_CODE = new Set(['eval', 'watch', 'parallel', 'tmux', 'screen', 'ssh', 'trap'])

/** Options of ssh that take an argument, to tell whether a remote command follows the host. */
const SSH_OPTION_ARGUMENTS = new Set(
  '-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w -B'.split(' '),
)

const NODE_CODE: CodeOptions = {
  code: 'ep',
  argument: 'rC',
  long: ['--eval', '--print'],
  longArgument: [
    '--require',
    '--import',
    '--loader',
    '--experimental-loader',
    '--conditions',
    '--env-file',
    '--input-type',
    '--title',
    '--disable-warning',
    '--watch-path',
    '--inspect-port',
    '--redirect-warnings',
  ],
  loose: true,
}
const POWERSHELL_CODE: CodeOptions = { code: '', powershell: true }

/** Interpreters and the options whose argument is an inline program. */
const INLINE_PROGRAMS: ReadonlyMap<string, CodeOptions> = new Map([
  ['python', { code: 'c', argument: 'WXm', longArgument: ['--check-hash-based-pycs'] }],
  ['pypy', { code: 'c', argument: 'WXm', longArgument: ['--check-hash-based-pycs'] }],
  ['node', NODE_CODE],
  ['nodejs', NODE_CODE],
  ['bun', NODE_CODE],
  ['perl', { code: 'eE', argument: 'CdDFiIMmVx', digits: '0l' }],
  ['ruby', { code: 'e', argument: 'CEFiIKrx', digits: '0TW' }],
  // php runs the code of -r, and of -B, -R and -E around and per input line.
  ['php', { code: 'rBRE', argument: 'cdfzFtS' }],
  ['lua', { code: 'e', argument: 'l' }],
  ['luajit', { code: 'e', argument: 'lbjO' }],
  ['julia', { code: 'eE', argument: 'CgHJLmOpt', long: ['--eval', '--print'] }],
  ['r', { code: 'e', argument: 'dfg' }],
  ['rscript', { code: 'e' }],
  ['osascript', { code: 'e', argument: 'ils' }],
  ['pwsh', POWERSHELL_CODE],
  ['powershell', POWERSHELL_CODE],
])

/** PowerShell's parameters whose value, and everything after it, is a command. */
const POWERSHELL_COMMANDS = ['-command', '-commandwithargs', '-encodedcommand']

/** Where `value`, one word of a command line, puts code for a program that reads options as `options` says. */
function codePlace(value: string, options: CodeOptions): CodePlace | undefined {
  if (options.powershell === true) {
    // Parameter names are case-insensitive and may be shortened; `--` and `/` work as `-` too.
    const name = value.toLowerCase().replace(/^(?:--|\/)/, '-')
    if (name.length < 2 || !name.startsWith('-')) return undefined
    const known =
      name === '-ec' || name === '-cwa' || POWERSHELL_COMMANDS.some((option) => option.startsWith(name))
    return known ? 'next' : undefined
  }
  if (value.startsWith('--')) {
    const equals = value.indexOf('=')
    const name = equals === -1 ? value : value.slice(0, equals)
    if (name.length < 4 || options.long?.some((option) => option.startsWith(name)) !== true) return undefined
    return equals === -1 ? 'next' : 'word'
  }
  if (!/^-[^-]/.test(value)) return undefined
  if (options.loose === true) {
    if (/^-[A-Za-z]+$/.test(value))
      return [...value.slice(1)].some((letter) => options.code.includes(letter))
        ? value.length === 2
          ? 'next'
          : 'both'
        : undefined
    return options.code.includes(value[1] as string) ? 'word' : undefined
  }
  let swallowed = false // an option that takes an argument came first: what follows may be it
  for (let at = 1; at < value.length; at++) {
    const letter = value[at] as string
    if (options.code.includes(letter)) return swallowed ? 'both' : at === value.length - 1 ? 'next' : 'word'
    if (options.argument?.includes(letter) === true) swallowed = true
    else if (options.digits?.includes(letter) === true) while (/[0-9]/.test(value[at + 1] ?? '')) at++
    else if (!/[A-Za-z0-9]/.test(letter) && !swallowed) return undefined
  }
  return undefined
}

/** True when `value` is an option (or a cluster ending in one) that takes the next word as its argument. */
function takesNextWord(value: string, options: CodeOptions): boolean {
  if (/^-[A-Za-z]$/.test(value)) return true // conservative: any single-letter option may take one
  if (options.longArgument?.includes(value) === true) return true
  return /^-[A-Za-z0-9]+$/.test(value) && options.argument?.includes(value.at(-1) as string) === true
}

const AWKS = new Set(['awk', 'gawk', 'mawk', 'nawk'])
/** awk options that take an argument; `-f`/`--file` means the program comes from a file. */
const AWK_OPTION_ARGUMENTS = new Set([
  '-v',
  '-F',
  '-f',
  '--assign',
  '--field-separator',
  '--file',
  '-i',
  '-l',
])

interface ShellWord {
  readonly value: string
  readonly pos: number
  readonly end: number
  readonly literal: boolean
}

function shellWord(node: Word | Assignment): ShellWord {
  if (node.type === 'Assignment') return { value: node.text, pos: node.pos, end: node.end, literal: false }
  return {
    value: node.value,
    pos: node.pos,
    end: node.end,
    literal: !/[$`]/.test(node.value),
  }
}

/** The program a word names: its basename, lower-case, without a version (`python3.12` → `python`). */
function programName(word: ShellWord): string {
  const base = word.value.slice(word.value.lastIndexOf('/') + 1).toLowerCase()
  const versionless = base.replace(/[0-9][0-9.]*$/, '')
  return INLINE_PROGRAMS.has(versionless) ? versionless : base
}

/**
 * True when a script operand may be the command's own input: `-`, `/dev/stdin`, `/dev/fd/N` or
 * `/proc/<self|thread-self|pid>/fd/N` (written any way `..`, `.` and doubled slashes allow), or a
 * word that is not literal (`"$script"` may name any of those). A shell or interpreter given such a
 * script reads a here-document, a here-string or a pipe as code (`sh /dev/stdin <<< "…"`).
 */
function readsOwnInput(word: ShellWord): boolean {
  return !word.literal || namesOwnInput(word.value)
}

/** How many of the following words a shell option word takes as arguments (`-o NAME`, `-eo NAME`). */
function shellOptionArguments(value: string): number {
  if (SHELL_OPTION_ARGUMENTS.has(value)) return 1
  if (!/^[-+][A-Za-z]+$/.test(value)) return 0
  return [...value].filter((letter) => letter === 'o' || letter === 'O').length
}

function isOption(value: string): boolean {
  return value.length > 1 && (value.startsWith('-') || value.startsWith('+'))
}

/**
 * Finds the code regions of one simple command; returns the program's name when the command also
 * reads code from its standard input (a shell without `-c`, `python3` with no script, `source
 * /dev/stdin`, `xargs sh -c '… {}'`), else undefined.
 */
function analyseCommand(command: Command, regions: CodeRegion[]): string | undefined {
  const words: ShellWord[] = []
  if (command.name !== undefined) words.push(shellWord(command.name))
  for (const argument of command.args) words.push(shellWord(argument))
  const mark = (word: ShellWord | undefined, by: string) => {
    if (word !== undefined) regions.push({ start: word.pos, end: word.end, by })
  }
  const markFrom = (index: number, by: string) => {
    for (const word of words.slice(index)) mark(word, by)
  }
  /**
   * A shell's `-c` option at `at`: the command string is the first operand after the options, so
   * `bash -c -o pipefail "…"` and `bash -oc pipefail "…"` are read too. Options between are marked
   * as well (conservative).
   */
  const markCommandString = (at: number, by: string) => {
    let pending = shellOptionArguments((words[at] as ShellWord).value)
    for (let next = at + 1; next < words.length; next++) {
      const value = (words[next] as ShellWord).value
      mark(words[next], by)
      if (pending > 0) {
        pending--
        continue
      }
      if (value === '--') {
        mark(words[next + 1], by)
        return
      }
      if (!isOption(value)) return
      pending = shellOptionArguments(value)
    }
  }
  let feedsArguments = false // xargs or parallel earlier: stdin becomes part of the command
  for (let index = 0; index < words.length; index++) {
    const word = words[index] as ShellWord
    const name = programName(word)
    const by = word.literal ? word.value.slice(word.value.lastIndexOf('/') + 1) : word.value
    if (name === 'xargs' || name === 'parallel') feedsArguments = true
    if (name === 'env') {
      // `env -S STRING` splits STRING and runs it; other env forms run a command we keep scanning.
      const split = words.findIndex(
        (other, at) => at > index && (other.value === '-S' || other.value === '--split-string'),
      )
      if (split > index) mark(words[split + 1], 'env -S')
      for (const other of words.slice(index + 1))
        if (other.value.startsWith('--split-string=') || /^-S./.test(other.value)) mark(other, 'env -S')
      continue
    }
    if (SHELLS.has(name) || (index === 0 && !word.literal)) {
      for (let at = index + 1; at < words.length; at++) {
        const value = (words[at] as ShellWord).value
        if (/^-[A-Za-z]*c[A-Za-z]*$/.test(value)) {
          markCommandString(at, by)
          return feedsArguments ? by : undefined
        }
        if (SHELL_OPTION_ARGUMENTS.has(value) || /^[-+][A-Za-z]*[oO][A-Za-z]*$/.test(value)) {
          at += shellOptionArguments(value) // `-o pipefail`, `-eo pipefail`: not a script operand
          continue
        }
        if (/^-[A-Za-z]*s[A-Za-z]*$/.test(value)) return by
        if (value === '--' || !isOption(value)) {
          // A script operand: its content is code (`bash <(…)`); arguments after it are data,
          // unless the script is the command's own input (`sh /dev/stdin <<< "…"`).
          const script = words[value === '--' ? at + 1 : at]
          mark(script, by)
          return script !== undefined && readsOwnInput(script) ? by : undefined
        }
      }
      return by
    }
    const runner = COMMAND_OPTION_RUNNERS.get(name)
    if (runner !== undefined) {
      for (let at = index + 1; at < words.length; at++) {
        const place = codePlace((words[at] as ShellWord).value, runner)
        if (place === 'word' || place === 'both') mark(words[at], by) // `su -c"…"`
        if (place === 'next' || place === 'both') mark(words[at + 1], by) // `su -lc "…"`
        if (place === 'next' || place === 'word') return undefined
      }
      return by
    }
    if (ALL_ARGUMENTS_CODE.has(name)) {
      markFrom(index + 1, by)
      if (name !== 'ssh') return name === 'parallel' ? by : undefined
      // ssh with no remote command runs a login shell that reads stdin.
      let operands = 0
      for (let at = index + 1; at < words.length; at++) {
        const value = (words[at] as ShellWord).value
        if (SSH_OPTION_ARGUMENTS.has(value)) at++
        else if (!isOption(value)) operands++
      }
      return operands <= 1 ? by : undefined
    }
    if ((name === '.' && index === 0) || name === 'source') {
      markFrom(index + 1, by)
      const file = words[index + 1]
      return file === undefined || readsOwnInput(file) ? by : undefined
    }
    const inline = INLINE_PROGRAMS.get(name)
    if (inline !== undefined) {
      for (let at = index + 1; at < words.length; at++) {
        const value = (words[at] as ShellWord).value
        const place = codePlace(value, inline)
        if (place !== undefined && inline.powershell === true) {
          // `-Command` takes the rest of the line; `-Command -` reads it from stdin.
          markFrom(at + 1, by)
          return words[at + 1]?.value === '-' ? by : undefined
        }
        if (place === 'word' || place === 'both') mark(words[at], by) // `-e'code'`, `-pe`
        if (place === 'word') return undefined
        if (place === 'next' || place === 'both') {
          const code = words[at + 1]
          mark(code, by)
          // `node -p -e CODE`: the word after may be another option; keep reading. Unsure: keep reading.
          if (place === 'next' && (code === undefined || !isOption(code.value))) return undefined
          continue
        }
        if (value === '-') return by
        // PowerShell's parameters take values, and `-Command` may follow other ones: read every word.
        if (inline.powershell === true) continue
        if (!isOption(value)) {
          // A script: what follows is its data. `-W ignore`-style option arguments are skipped.
          const previous = (words[at - 1] as ShellWord).value
          if (at > index + 1 && takesNextWord(previous, inline)) continue
          return readsOwnInput(words[at] as ShellWord) ? by : undefined
        }
      }
      return by
    }
    if (AWKS.has(name)) {
      let fromFile = false
      for (let at = index + 1; at < words.length; at++) {
        const value = (words[at] as ShellWord).value
        if (value === '-f' || value === '--file' || value.startsWith('--file=')) fromFile = true
        if (value === '-e' || value === '--source') mark(words[at + 1], by)
        if (AWK_OPTION_ARGUMENTS.has(value)) {
          at++
          continue
        }
        if (isOption(value)) continue
        if (!fromFile) mark(words[at], by)
        break
      }
      return undefined
    }
    if (name === 'sed' || name === 'gsed') {
      markFrom(index + 1, by)
      return undefined
    }
  }
  return undefined
}

/**
 * Here-documents, here-strings and `< <(…)` among `redirects`: their text (or what the substitution
 * prints) is what the command reads.
 */
function markInputs(redirects: readonly Redirection[], by: string, regions: CodeRegion[]): void {
  for (const redirect of redirects) {
    if (redirect.type === 'HereDoc') regions.push({ start: redirect.body.pos, end: redirect.body.end, by })
    else if (redirect.type === 'HereString' && redirect.target !== undefined)
      regions.push({ start: redirect.target.pos, end: redirect.target.end, by })
    else if (redirect.type === 'Redirect' && readsSubstitution(redirect) && redirect.target !== undefined)
      regions.push({ start: redirect.target.pos, end: redirect.target.end, by })
  }
}

/** `< <(…)` or `0< <(…)`: standard input is a process substitution's output. */
function readsSubstitution(redirect: Redirection & { type: 'Redirect' }): boolean {
  const descriptor = redirect.descriptor
  const fromStdin =
    descriptor === undefined || (descriptor.type === 'FileDescriptor' && descriptor.value === 0)
  return (
    fromStdin &&
    (redirect.operator === '<' || redirect.operator === '<>') &&
    redirect.target?.parts?.some((part) => part.type === 'ProcessSubstitution') === true
  )
}

/**
 * Every code region of a parsed command. Scripts of `$(…)` and `<(…)` are visited where their
 * positions are the command's own; backquoted text with escapes is analysed separately by the caller.
 */
export function findCodeRegions(root: SyntaxNode): CodeRegion[] {
  const regions: CodeRegion[] = []
  /** Program that reads code from stdin in `node`, if any (first found). */
  const stdinReader = new Map<SyntaxNode, string | undefined>()

  const readsCode = (node: SyntaxNode): string | undefined => {
    if (stdinReader.has(node)) return stdinReader.get(node)
    let found: string | undefined
    if (node.type === 'Command') {
      found = analyseCommand(node, [])
    } else if (node.type === 'Pipeline') {
      // What the first command reads may be passed on (`(cat | sh)`): any command may be the reader.
      for (const command of node.commands) {
        found = readsCode(command)
        if (found !== undefined) break
      }
    } else if (node.type !== 'CommandExpansion' && node.type !== 'ProcessSubstitution') {
      forEachChild(node, (child) => {
        found ??= readsCode(child)
      })
    }
    stdinReader.set(node, found)
    return found
  }

  const visit = (node: SyntaxNode): void => {
    if (node.type === 'Command') {
      // One pass marks the command's regions and answers whether it reads code from stdin.
      const reader = analyseCommand(node, regions)
      if (reader !== undefined) markInputs(node.redirects, reader, regions)
    } else if (node.type === 'Redirected') {
      const reader = readsCode(node.command)
      if (reader !== undefined) markInputs(node.redirects, reader, regions)
    } else if (node.type === 'Pipeline') {
      markPipeline(node)
    } else if (
      (node.type === 'CommandExpansion' || node.type === 'ProcessSubstitution') &&
      node.script?.source
    ) {
      return // positions inside index decoded text: the caller handles it
    }
    forEachChild(node, visit)
  }

  const markPipeline = (pipeline: Pipeline): void => {
    for (let index = 1; index < pipeline.commands.length; index++) {
      const reader = readsCode(pipeline.commands[index] as SyntaxNode)
      if (reader === undefined) continue
      // Everything earlier in the pipeline writes into a parser's input, here-document bodies too
      // (they lie after the line, outside the command's range: `cat <<EOF | sh`).
      for (const earlier of pipeline.commands.slice(0, index)) {
        regions.push({ start: earlier.pos, end: earlier.end, by: reader })
        markHereDocBodies(earlier, reader)
      }
      return
    }
  }

  const markHereDocBodies = (node: SyntaxNode, by: string): void => {
    if (node.type === 'HereDoc') regions.push({ start: node.body.pos, end: node.body.end, by })
    if ((node.type === 'CommandExpansion' || node.type === 'ProcessSubstitution') && node.script?.source)
      return // positions inside index decoded text; they lie within the command's range anyway
    forEachChild(node, (child) => markHereDocBodies(child, by))
  }

  visit(root)
  return regions
}
