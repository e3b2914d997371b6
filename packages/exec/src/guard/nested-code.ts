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

/** Programs that run `-c COMMAND` through a shell wherever the option sits; otherwise a shell on stdin. */
const COMMAND_OPTION_RUNNERS = new Set(['su', 'runuser', 'script'])

/** Every argument is code: joined and run by a shell, here or on another machine. */
const ALL_ARGUMENTS_CODE = new Set(['eval', 'watch', 'parallel', 'tmux', 'screen', 'ssh'])

/** Options of ssh that take an argument, to tell whether a remote command follows the host. */
const SSH_OPTION_ARGUMENTS = new Set(
  '-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w -B'.split(' '),
)

/** Interpreters and the options whose argument is an inline program. */
const INLINE_PROGRAM_OPTIONS: ReadonlyMap<string, readonly string[]> = new Map([
  ['python', ['-c']],
  ['pypy', ['-c']],
  ['node', ['-e', '--eval', '-p', '--print']],
  ['nodejs', ['-e', '--eval', '-p', '--print']],
  ['bun', ['-e', '--eval', '-p', '--print']],
  ['perl', ['-e', '-E']],
  ['ruby', ['-e']],
  ['php', ['-r']],
  ['lua', ['-e']],
  ['luajit', ['-e']],
  ['julia', ['-e', '--eval', '-E', '--print']],
  ['r', ['-e']],
  ['rscript', ['-e']],
  ['osascript', ['-e']],
  ['pwsh', ['-c', '-command', '-encodedcommand', '-ec']],
  ['powershell', ['-c', '-command', '-encodedcommand', '-ec']],
])

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
  return INLINE_PROGRAM_OPTIONS.has(versionless) ? versionless : base
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
        if (SHELL_OPTION_ARGUMENTS.has(value)) {
          at++
          continue
        }
        if (/^-[A-Za-z]*c[A-Za-z]*$/.test(value)) {
          mark(words[at + 1], by)
          return feedsArguments ? by : undefined
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
    if (COMMAND_OPTION_RUNNERS.has(name)) {
      for (let at = index + 1; at < words.length; at++) {
        const value = (words[at] as ShellWord).value
        if (value === '-c' || value === '--command') {
          mark(words[at + 1], by)
          return undefined
        }
        if (value.startsWith('--command=')) {
          mark(words[at], by)
          return undefined
        }
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
    const inline = INLINE_PROGRAM_OPTIONS.get(name)
    if (inline !== undefined) {
      for (let at = index + 1; at < words.length; at++) {
        const value = (words[at] as ShellWord).value
        const flag = value.toLowerCase()
        if (inline.includes(flag)) {
          mark(words[at + 1], by)
          return undefined
        }
        if (inline.some((option) => option.length === 2 && value.startsWith(option) && value.length > 2)) {
          mark(words[at], by) // `-e'code'`
          return undefined
        }
        if (value === '-') return by
        if (!isOption(value)) {
          // A script: what follows is its data. `-W ignore`-style option arguments are skipped.
          const previous = (words[at - 1] as ShellWord).value
          if (at > index + 1 && /^-[A-Za-z]$/.test(previous)) continue
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
      const first = node.commands[0]
      found = first === undefined ? undefined : readsCode(first)
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
      // Everything earlier in the pipeline writes into a parser's input.
      for (const earlier of pipeline.commands.slice(0, index))
        regions.push({ start: earlier.pos, end: earlier.end, by: reader })
      return
    }
  }

  visit(root)
  return regions
}
