import type { Word } from 'unbash'

/**
 * Programs that run another program (SECURITY.md §6.2 item 4): `env`, `sudo`, `xargs`, `sh -c`,
 * interpreters and the like. Each runner reads an argv and says what it would run, without running
 * anything. Option tables cover the options that take a separate value, so the inner command word is
 * found where it is clear; anything unclear is treated as the inner command, which errs on blocking.
 */

/** One argv element as the guard sees it. */
export interface Argument {
  /** The value after quote removal when the text fixes it; `undefined` when it depends on run time. */
  readonly literal: string | undefined
  /** Quote-removed text with expansions left as written (`lango $X`), used for code strings. */
  readonly loose: string
  /** The parsed word, when the argument came from the parser. */
  readonly word: Word | undefined
}

/** Shell code a runner would hand to a shell, with `$0 $1 …` when it is an `sh -c` string. */
export interface ShellCode {
  readonly text: string
  readonly positional?: readonly string[]
}

/** A file a runner would execute: a shell or interpreter script, or a program or package name. */
export interface ScriptRun {
  readonly path: Argument
  readonly args: readonly Argument[]
  /** How its content would be read if the path is a process substitution such as `<(echo …)`. */
  readonly kind: 'shell' | 'code' | 'program'
}

/** What a runner would run, as far as the text shows. */
export interface RunnerResult {
  /** Inner argv lists (`sudo -u x CMD …` → `CMD …`). */
  readonly commands?: readonly (readonly Argument[])[]
  /** Strings parsed again as shell code (`sh -c STRING`, `eval`, `watch`, `ssh host CMD`). */
  readonly shellCode?: readonly ShellCode[]
  /** Code for another language (`python -c`, `node -e`, `awk PROGRAM`). */
  readonly interpreterCode?: readonly string[]
  /** Files it would execute. */
  readonly scripts?: readonly ScriptRun[]
  /** It reads its program from stdin, as shell code or as other code. */
  readonly stdin?: 'shell' | 'code'
}

/**
 * Reads an argv (index 0 is the runner itself) and reports what it would run. `input` is what the
 * text shows arriving on stdin (for `xargs` and `parallel`, which turn it into arguments).
 */
export type Runner = (argv: readonly Argument[], input?: readonly string[]) => RunnerResult | undefined

/** Options that take a separate value; the rest are flags. */
interface OptionSpec {
  /** Short option letters that take a value (`-u root` or `-uroot`). */
  readonly short?: string
  /** Long option names (without `--`) that take the next word as value when written without `=`. */
  readonly long?: readonly string[]
}

/** Builds an {@link Argument} for text the guard produced itself. */
export function textArgument(text: string): Argument {
  return { literal: text, loose: text, word: undefined }
}

/** Index of the first operand at or after `start`, skipping options and their values. */
function skipOptions(argv: readonly Argument[], start: number, spec: OptionSpec = {}): number {
  let index = start
  while (index < argv.length) {
    const text = argv[index]?.literal
    // A run-time word in option position may be the command itself: stop here and look at it.
    if (text === undefined) return index
    if (text === '--') return index + 1
    if (text.length < 2 || !text.startsWith('-')) return index
    if (text.startsWith('--')) {
      const name = text.slice(2)
      index += !name.includes('=') && spec.long?.includes(name) ? 2 : 1
      continue
    }
    let consumed = 1
    for (let position = 1; position < text.length; position++) {
      if (spec.short?.includes(text[position] as string)) {
        if (position === text.length - 1) consumed = 2
        break
      }
    }
    index += consumed
  }
  return index
}

/** True when a leading option (before the first operand) is a short cluster holding one of `letters`. */
function hasShortFlag(argv: readonly Argument[], letters: string, spec: OptionSpec = {}): boolean {
  const end = skipOptions(argv, 1, spec)
  for (let index = 1; index < end; index++) {
    const text = argv[index]?.literal ?? ''
    if (/^-[A-Za-z0-9]+$/.test(text) && Array.from(letters).some((letter) => text.includes(letter)))
      return true
  }
  return false
}

/** Value of `-x VALUE`, `-xVALUE`, `--long VALUE` or `--long=VALUE` anywhere in argv, with its index. */
function findOptionValue(
  argv: readonly Argument[],
  short: readonly string[],
  long: readonly string[],
): { value: string; index: number } | undefined {
  for (let index = 1; index < argv.length; index++) {
    const text = argv[index]?.literal
    if (text === undefined) continue
    if (text === '--') return undefined
    for (const name of long) {
      if (text === `--${name}`) return { value: argv[index + 1]?.loose ?? '', index: index + 1 }
      if (text.startsWith(`--${name}=`)) return { value: text.slice(name.length + 3), index }
    }
    for (const option of short) {
      // `-c VALUE`, or a flag cluster ending in the letter: `script -qc VALUE`.
      const clustered = text.length > 2 && /^-[A-Za-z]+$/.test(text) && text.endsWith(option.slice(1))
      if (text === option || clustered) return { value: argv[index + 1]?.loose ?? '', index: index + 1 }
    }
  }
  return undefined
}

function joinLoose(argv: readonly Argument[]): string {
  return argv.map((argument) => argument.loose).join(' ')
}

/** `RUNNER [options] [N operands] COMMAND ARGS…` */
function wrapper(spec: OptionSpec = {}, operands = 0): Runner {
  return (argv) => ({ commands: [argv.slice(skipOptions(argv, 1, spec) + operands)] })
}

/** `RUNNER SUBCOMMAND [options] [N operands] COMMAND ARGS…` for the listed subcommands. */
function subcommandWrapper(
  subcommands: readonly string[],
  spec: OptionSpec = {},
  operands = 0,
  globalSpec: OptionSpec = {},
): Runner {
  return (argv) => {
    const at = skipOptions(argv, 1, globalSpec)
    const subcommand = argv[at]?.literal?.toLowerCase()
    if (subcommand === undefined || !subcommands.includes(subcommand)) return undefined
    const rest = argv.slice(at)
    return { commands: [rest.slice(skipOptions(rest, 1, spec) + operands)] }
  }
}

const env: Runner = (argv) => {
  let index = 1
  while (index < argv.length) {
    const text = argv[index]?.literal
    if (text === undefined) break
    if (text === '--') {
      index++
      break
    }
    if (text === '-' || /^[A-Za-z_][A-Za-z0-9_]*=/.test(text)) {
      const [name, value] = splitOnce(argv[index]?.loose ?? text, '=')
      const kind = value === undefined ? undefined : variableRunKind(name)
      if (kind !== undefined && value !== undefined) return variableRun(kind, value, argv.slice(index + 1))
      index++
      continue
    }
    if (text.startsWith('--')) {
      const [name, value] = splitOnce(text.slice(2), '=')
      if (name === 'split-string') {
        const code = value ?? argv[index + 1]?.loose ?? ''
        return {
          shellCode: [
            { text: [code, joinLoose(argv.slice(value === undefined ? index + 2 : index + 1))].join(' ') },
          ],
        }
      }
      index += value === undefined && (name === 'unset' || name === 'chdir') ? 2 : 1
      continue
    }
    if (!text.startsWith('-')) break
    let consumed = 1
    for (let position = 1; position < text.length; position++) {
      const letter = text[position] as string
      if (letter === 'S') {
        const attached = text.slice(position + 1)
        const code = attached !== '' ? attached : (argv[index + 1]?.loose ?? '')
        const rest = argv.slice(attached !== '' ? index + 1 : index + 2)
        return { shellCode: [{ text: [code, joinLoose(rest)].join(' ') }] }
      }
      if ('uCP'.includes(letter)) {
        if (position === text.length - 1) consumed = 2
        break
      }
    }
    index += consumed
  }
  return { commands: [argv.slice(index)] }
}

/**
 * How the shell or a common tool runs a variable's value: `code` for shell code (`PS4` and
 * `PROMPT_COMMAND`, expanded by bash; `GIT_SSH_COMMAND`, `EDITOR`, `PAGER`, `SUDO_ASKPASS`, … run
 * through `sh -c`), `file` for a script path (`BASH_ENV`, `ENV`).
 */
export function variableRunKind(name: string): 'code' | 'file' | undefined {
  if (name === 'BASH_ENV' || name === 'ENV') return 'file'
  if (
    /^(?:PROMPT_COMMAND|PS[0-4]|EDITOR|VISUAL|(?:MAN)?PAGER|BROWSER|SHELL|TERMINAL|LESS(?:OPEN|CLOSE))$/.test(
      name,
    ) ||
    /_(?:COMMAND|EDITOR|PAGER|ASKPASS|SSH|EXTERNAL_DIFF|SEQUENCE_EDITOR|PROXY)$/.test(name)
  ) {
    return 'code'
  }
  return undefined
}

function variableRun(kind: 'code' | 'file', value: string, rest: readonly Argument[]): RunnerResult {
  const checked: RunnerResult =
    kind === 'file'
      ? { scripts: [{ path: textArgument(value), args: [], kind: 'shell' }] }
      : { shellCode: [{ text: value.replace(/^\|/, '') }] }
  return { ...checked, commands: [[textArgument('env'), ...rest]] }
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator)
  return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)]
}

function skipAssignments(argv: readonly Argument[], start: number): number {
  let index = start
  while (/^[A-Za-z_][A-Za-z0-9_]*=/.test(argv[index]?.literal ?? '')) index++
  return index
}

const SUDO_OPTIONS: OptionSpec = {
  short: 'ugCDhprtTUR',
  long: [
    'user',
    'group',
    'close-from',
    'chdir',
    'host',
    'prompt',
    'role',
    'type',
    'command-timeout',
    'other-user',
    'chroot',
  ],
}

const sudo: Runner = (argv) => {
  const end = skipOptions(argv, 1, SUDO_OPTIONS)
  for (let index = 1; index < end; index++) {
    const text = argv[index]?.literal ?? ''
    // `sudo -e` is sudoedit: its operands are files to edit, not a command.
    if (text === '--edit' || /^-[A-Za-z]*e[A-Za-z]*$/.test(text)) return undefined
  }
  return { commands: [argv.slice(skipAssignments(argv, end))] }
}

const command: Runner = (argv) => {
  // `command -v NAME` and `command -V NAME` only describe NAME.
  if (hasShortFlag(argv, 'vV')) return undefined
  return { commands: [argv.slice(skipOptions(argv, 1))] }
}

const XARGS_OPTIONS: OptionSpec = {
  short: 'ILnPsEda',
  long: ['arg-file', 'delimiter', 'max-args', 'max-procs', 'max-chars', 'process-slot-var'],
}

/** `hash -p PATH NAME` makes NAME run PATH. */
const hash: Runner = (argv) => {
  const path = findOptionValue(argv, ['-p'], [])
  return path === undefined
    ? undefined
    : { scripts: [{ path: textArgument(path.value), args: [], kind: 'program' }] }
}

const FIND_ACTIONS = new Set(['-exec', '-execdir', '-ok', '-okdir'])

const find: Runner = (argv) => {
  const commands: Argument[][] = []
  for (let index = 1; index < argv.length; index++) {
    if (!FIND_ACTIONS.has(argv[index]?.literal ?? '')) continue
    let end = index + 1
    while (end < argv.length && argv[end]?.literal !== ';' && argv[end]?.literal !== '+') end++
    commands.push(argv.slice(index + 1, end))
    index = end
  }
  return { commands }
}

const shell: Runner = (argv) => {
  let index = 1
  let hasCommandString = false
  let readsStdin = false
  while (index < argv.length) {
    const text = argv[index]?.literal
    if (text === undefined) break
    if (text === '--' || text === '-') {
      index++
      break
    }
    if (text.startsWith('--')) {
      if (text === '--command') {
        hasCommandString = true
        index++
        break
      }
      if (text.startsWith('--command=')) {
        return { shellCode: [{ text: text.slice('--command='.length) }] }
      }
      index += text === '--rcfile' || text === '--init-file' || text === '--init-command' ? 2 : 1
      continue
    }
    if (!/^[-+][A-Za-z]+$/.test(text)) break
    if (text.startsWith('-') && text.includes('c')) hasCommandString = true
    if (text.startsWith('-') && text.includes('s')) readsStdin = true
    index += /[oO]/.test(text) ? 2 : 1
  }
  if (hasCommandString) {
    const code = argv[index]
    if (code === undefined) return undefined
    const positional = argv.slice(index + 1).map((argument) => argument.literal ?? argument.loose)
    return { shellCode: [{ text: code.loose, positional }] }
  }
  const script = argv[index]
  if (readsStdin || script === undefined) return { stdin: 'shell' }
  return { scripts: [{ path: script, args: argv.slice(index + 1), kind: 'shell' }] }
}

const source: Runner = (argv) => {
  const script = argv[1]
  return script === undefined
    ? undefined
    : { scripts: [{ path: script, args: argv.slice(2), kind: 'shell' }] }
}

const evaluate: Runner = (argv) => ({ shellCode: [{ text: joinLoose(argv.slice(1)) }] })

const watch: Runner = (argv) => {
  const index = skipOptions(argv, 1, { short: 'nq', long: ['interval', 'equexit'] })
  return { shellCode: [{ text: joinLoose(argv.slice(index)) }] }
}

const flock: Runner = (argv) => {
  const code = findOptionValue(argv, ['-c'], ['command'])
  if (code !== undefined) return { shellCode: [{ text: code.value }] }
  const lockFile = skipOptions(argv, 1, { short: 'wE', long: ['timeout', 'conflict-exit-code'] })
  return { commands: [argv.slice(lockFile + 1)] }
}

const script: Runner = (argv) => {
  const code = findOptionValue(argv, ['-c'], ['command'])
  if (code !== undefined) return { shellCode: [{ text: code.value }] }
  // BSD form: script [-q] FILE COMMAND ARGS…
  const file = skipOptions(argv, 1, {
    short: 'EIOBTmF',
    long: ['echo', 'log-in', 'log-out', 'log-io', 'log-timing', 'logging-format', 'output-limit'],
  })
  return { commands: [argv.slice(file + 1)] }
}

const switchUser: Runner = (argv) => {
  const code = findOptionValue(argv, ['-c', '-C'], ['command', 'session-command'])
  if (code !== undefined) return { shellCode: [{ text: code.value }] }
  const name = argv[0]?.literal ?? ''
  if (name.endsWith('runuser') && argv.some((argument) => argument.literal === '-u')) {
    return {
      commands: [
        argv.slice(
          skipOptions(argv, 1, {
            short: 'ugGsw',
            long: ['user', 'group', 'supp-group', 'shell', 'whitelist-environment'],
          }),
        ),
      ],
    }
  }
  return undefined
}

const switchGroup: Runner = (argv) => {
  const code = findOptionValue(argv, ['-c'], [])
  if (code !== undefined) return { shellCode: [{ text: code.value }] }
  const group = skipOptions(argv, 1)
  const text = argv[group + 1]
  return text === undefined ? undefined : { shellCode: [{ text: text.loose }] }
}

const PARALLEL_OPTIONS: OptionSpec = {
  short: 'jdEIaSnNPL',
  long: [
    'jobs',
    'delimiter',
    'eof',
    'replace',
    'arg-file',
    'sshlogin',
    'max-args',
    'max-lines',
    'max-procs',
    'timeout',
    'workdir',
    'results',
    'joblog',
    'tmpdir',
    'colsep',
    'basefile',
    'tag-string',
    'env',
    'retries',
    'memfree',
    'load',
    'delay',
  ],
}

/** Most substituted values tried per `xargs`/`parallel` call; each becomes one command to check. */
const MAX_SUBSTITUTIONS = 16

/** Longest text a substitution may produce (`{}{}{}…` times a long line would multiply the input). */
const MAX_SUBSTITUTED_LENGTH = 64 * 1024

/** `text` with every `search` replaced by `value`; just `value` when the result would be too long. */
function substitute(text: string, search: string, value: string): string {
  const count = text.split(search).length - 1
  return count * value.length > MAX_SUBSTITUTED_LENGTH ? value : text.replaceAll(search, value)
}

const parallel: Runner = (argv, input) => {
  const start = skipOptions(argv, 1, PARALLEL_OPTIONS)
  let separator = start
  while (separator < argv.length && !/^::::?\+?$/.test(argv[separator]?.literal ?? '')) separator++
  const template = joinLoose(argv.slice(start, separator))
  const values =
    separator < argv.length
      ? argv
          .slice(separator + 1)
          .filter((argument) => !/^::::?\+?$/.test(argument.literal ?? ''))
          .map((argument) => argument.loose)
      : inputLines(input)
  // Each value fills `{}` in the template, or is appended; with no template each value is a command.
  const commands = values
    .slice(0, MAX_SUBSTITUTIONS)
    .map((value) =>
      template === ''
        ? value
        : template.includes('{}')
          ? substitute(template, '{}', value)
          : `${template} ${value}`,
    )
  if (template !== '') commands.unshift(template)
  return { shellCode: commands.map((text) => ({ text })) }
}

function inputLines(input: readonly string[] | undefined): string[] {
  return (input ?? []).flatMap((text) => text.split('\n')).filter((line) => line.trim() !== '')
}

/** The replace string of `xargs -I R`, `-IR`, `-i` or `--replace[=R]`, if any. */
function xargsReplaceString(options: readonly Argument[]): string | undefined {
  for (let index = 0; index < options.length; index++) {
    const text = options[index]?.literal ?? ''
    if (text === '-I') return options[index + 1]?.literal
    if (text.startsWith('-I')) return text.slice(2)
    if (text === '-i' || text === '--replace') return '{}'
    if (text.startsWith('-i')) return text.slice(2)
    if (text.startsWith('--replace=')) return text.slice('--replace='.length)
  }
  return undefined
}

const xargs: Runner = (argv, input) => {
  const start = skipOptions(argv, 1, XARGS_OPTIONS)
  const inner = argv.slice(start)
  const commands: (readonly Argument[])[] = [inner]
  const replace = xargsReplaceString(argv.slice(1, start))
  // What arrives on stdin becomes arguments: `echo lango | xargs sh -c` runs `sh -c lango`.
  for (const line of inputLines(input).slice(0, MAX_SUBSTITUTIONS)) {
    if (replace !== undefined && replace !== '') {
      commands.push(
        inner.map((argument) => ({
          literal: argument.literal === undefined ? undefined : substitute(argument.literal, replace, line),
          loose: substitute(argument.loose, replace, line),
          word: undefined,
        })),
      )
    } else {
      const words = line.trim().split(/\s+/).map(textArgument)
      commands.push([...(inner.length > 0 ? inner : [textArgument('echo')]), ...words])
    }
  }
  return { commands }
}

/** Strips a version (`lango@1.2`) so `npx lango@latest` names the package `lango`. */
function packageArgument(argument: Argument): Argument {
  const text = argument.literal
  if (text === undefined) return argument
  const at = text.indexOf('@', 1)
  return at === -1 ? argument : { ...argument, literal: text.slice(0, at) }
}

const PACKAGE_RUNNER_OPTIONS: OptionSpec = {
  short: 'pw',
  long: ['package', 'node-options', 'cache', 'registry', 'userconfig', 'workspace', 'prefix'],
}

const packageRunner = (argv: readonly Argument[]): RunnerResult | undefined => {
  const code = findOptionValue(argv, ['-c'], ['call'])
  if (code !== undefined) return { shellCode: [{ text: code.value }] }
  const index = skipOptions(argv, 1, PACKAGE_RUNNER_OPTIONS)
  const target = argv[index]
  if (target === undefined) return undefined
  return { commands: [[packageArgument(target), ...argv.slice(index + 1)]] }
}

const npm: Runner = (argv) => {
  const at = skipOptions(argv, 1, PACKAGE_RUNNER_OPTIONS)
  const subcommand = argv[at]?.literal?.toLowerCase()
  if (subcommand !== 'exec' && subcommand !== 'x') return undefined
  return packageRunner(argv.slice(at))
}

const pnpm: Runner = (argv) => {
  const at = skipOptions(argv, 1, {
    short: 'CF',
    long: ['dir', 'filter', 'filter-prod', 'reporter', 'loglevel'],
  })
  const subcommand = argv[at]?.literal?.toLowerCase()
  if (subcommand !== 'exec' && subcommand !== 'dlx') return undefined
  const rest = argv.slice(at)
  const start = skipOptions(rest, 1, { long: ['package', 'reporter'] })
  if (
    rest.slice(1, start).some((argument) => argument.literal === '-c' || argument.literal === '--shell-mode')
  ) {
    return { shellCode: [{ text: joinLoose(rest.slice(start)) }] }
  }
  const target = rest[start]
  return target === undefined
    ? undefined
    : { commands: [[packageArgument(target), ...rest.slice(start + 1)]] }
}

const yarn = subcommandWrapper(['exec', 'dlx', 'run'], { short: 'p', long: ['package'] }, 0, {
  long: ['cwd'],
})

const BUN_SUBCOMMANDS = new Set([
  'add',
  'build',
  'create',
  'init',
  'install',
  'i',
  'link',
  'outdated',
  'pm',
  'publish',
  'remove',
  'rm',
  'repl',
  'test',
  'unlink',
  'update',
  'upgrade',
  'audit',
  'info',
  'patch',
  'why',
])

const bun: Runner = (argv) => {
  const code = findOptionValue(argv, ['-e', '-p'], ['eval', 'print'])
  if (code !== undefined) return { interpreterCode: [code.value] }
  const at = skipOptions(argv, 1, { short: 'r', long: ['preload', 'cwd', 'config', 'env-file'] })
  const subcommand = argv[at]?.literal?.toLowerCase()
  if (subcommand === undefined) return undefined
  if (subcommand === 'x' || subcommand === 'run') return packageRunner(argv.slice(at))
  if (subcommand === 'exec') return { shellCode: [{ text: joinLoose(argv.slice(at + 1)) }] }
  if (BUN_SUBCOMMANDS.has(subcommand)) return undefined
  const target = argv[at] as Argument
  return { scripts: [{ path: target, args: argv.slice(at + 1), kind: 'code' }] }
}

const GO_VALUE_FLAGS = new Set([
  '-tags',
  '-ldflags',
  '-gcflags',
  '-asmflags',
  '-mod',
  '-modfile',
  '-C',
  '-o',
  '-p',
  '-pkgdir',
  '-toolexec',
  '-overlay',
  '-pgo',
  '-buildmode',
  '-compiler',
  '-installsuffix',
  '-gccgoflags',
  '-coverpkg',
  '-covermode',
])

const go: Runner = (argv) => {
  if (argv[1]?.literal !== 'run') return undefined
  const commands: Argument[][] = []
  let index = 2
  while (index < argv.length) {
    const text = argv[index]?.literal
    if (text === undefined || !text.startsWith('-')) break
    if (text === '--') {
      index++
      break
    }
    if (text === '-exec') {
      // `go run -exec PROGRAM` runs the built binary through PROGRAM.
      const program = argv[index + 1]
      if (program !== undefined) commands.push([program])
    }
    index += GO_VALUE_FLAGS.has(text) || text === '-exec' ? 2 : 1
  }
  const target = argv[index]
  if (target === undefined) return { commands }
  const pattern = target.literal?.replace(/@.*$/, '').replace(/\/\.\.\.$/, '')
  const path = pattern === undefined ? target : { ...target, literal: pattern }
  return { commands, scripts: [{ path, args: argv.slice(index + 1), kind: 'program' }] }
}

interface InterpreterSpec {
  /** Short options whose value is program code (`-c`, `-e`). */
  readonly codeShort: string
  /** Long options whose value is program code (`--eval`). */
  readonly codeLong?: readonly string[]
  /** Options with a value that is not code. */
  readonly options?: OptionSpec
  /** Short option whose value names a module or file to run (`python -m`, `php -f`). */
  readonly moduleShort?: string
}

function interpreter(spec: InterpreterSpec): Runner {
  return (argv) => {
    const code: string[] = []
    let index = 1
    scan: while (index < argv.length) {
      const text = argv[index]?.literal
      if (text === undefined || text === '-' || text.length < 2 || !text.startsWith('-')) break
      if (text === '--') {
        index++
        break
      }
      if (text.startsWith('--')) {
        const [name, value] = splitOnce(text.slice(2), '=')
        if (spec.codeLong?.includes(name)) {
          code.push(value ?? argv[index + 1]?.loose ?? '')
          index += value === undefined ? 2 : 1
          continue
        }
        index += value === undefined && spec.options?.long?.includes(name) ? 2 : 1
        continue
      }
      for (let position = 1; position < text.length; position++) {
        const letter = text[position] as string
        const attached = text.slice(position + 1)
        if (spec.codeShort.includes(letter) || letter === spec.moduleShort) {
          // `node -pe CODE`, `perl -ne CODE`: one or two more flag letters, and the value follows.
          const inline = attached !== '' && !/^[A-Za-z]{1,2}$/.test(attached)
          const value = inline ? attached : (argv[index + 1]?.loose ?? '')
          const next = inline ? index + 1 : index + 2
          if (letter === spec.moduleShort) {
            // `python -m lango.cli` runs code from the lango package.
            const segments = value.split('.')
            const module = segments.some((segment) => segment.toLowerCase() === 'lango')
              ? 'lango'
              : segments.at(-1)
            return {
              scripts: [{ path: textArgument(module ?? value), args: argv.slice(next), kind: 'code' }],
            }
          }
          code.push(value)
          index = next
          continue scan
        }
        if (spec.options?.short?.includes(letter)) {
          index += attached !== '' ? 1 : 2
          continue scan
        }
      }
      index++
    }
    if (code.length > 0) return { interpreterCode: code }
    const target = argv[index]
    if (target === undefined || target.literal === '-') return { stdin: 'code' }
    return { scripts: [{ path: target, args: argv.slice(index + 1), kind: 'code' }] }
  }
}

const python = interpreter({ codeShort: 'c', moduleShort: 'm', options: { short: 'WXQ' } })
const node = interpreter({
  codeShort: 'ep',
  codeLong: ['eval', 'print'],
  options: {
    short: 'rC',
    long: [
      'require',
      'import',
      'loader',
      'experimental-loader',
      'conditions',
      'input-type',
      'env-file',
      'title',
    ],
  },
})
const perl = interpreter({ codeShort: 'eE', options: { short: 'IM' } })
const ruby = interpreter({ codeShort: 'e', options: { short: 'IrEC' } })
const php = interpreter({ codeShort: 'r', moduleShort: 'f', options: { short: 'cdz' } })
const simpleEval = interpreter({ codeShort: 'e', options: { short: 'l' } })

const deno: Runner = (argv) => {
  const subcommand = argv[1]?.literal
  if (subcommand === 'eval') return { interpreterCode: [joinLoose(argv.slice(2))] }
  if (subcommand !== 'run') return undefined
  const index = skipOptions(argv, 2, { long: ['config', 'import-map', 'location', 'seed', 'env-file'] })
  const target = argv[index]
  return target === undefined
    ? undefined
    : { scripts: [{ path: target, args: argv.slice(index + 1), kind: 'code' }] }
}

const awk: Runner = (argv) => {
  const file = findOptionValue(argv, ['-f'], ['file'])
  if (file !== undefined) return { scripts: [{ path: textArgument(file.value), args: [], kind: 'code' }] }
  const index = skipOptions(argv, 1, { short: 'Fv', long: ['field-separator', 'assign'] })
  const program = argv[index]
  return program === undefined ? undefined : { interpreterCode: [program.loose] }
}

const powershell: Runner = (argv) => {
  for (let index = 1; index < argv.length; index++) {
    const text = argv[index]?.literal?.toLowerCase() ?? ''
    if (/^[-/](?:c|command)$/.test(text)) return { interpreterCode: [joinLoose(argv.slice(index + 1))] }
    if (/^[-/](?:e|ec|encodedcommand)$/.test(text)) {
      const encoded = argv[index + 1]?.literal ?? ''
      return { interpreterCode: [Buffer.from(encoded, 'base64').toString('utf16le')] }
    }
    if (/^[-/](?:f|file)$/.test(text)) {
      const target = argv[index + 1]
      return target === undefined
        ? undefined
        : { scripts: [{ path: target, args: argv.slice(index + 2), kind: 'code' }] }
    }
  }
  return undefined
}

const windowsCommand: Runner = (argv) => {
  for (let index = 1; index < argv.length; index++) {
    const text = argv[index]?.literal ?? ''
    const match = /^\/[ckCK](.*)$/s.exec(text)
    if (match !== null) {
      const attached = match[1] ?? ''
      return { shellCode: [{ text: [attached, joinLoose(argv.slice(index + 1))].join(' ') }] }
    }
  }
  return undefined
}

const ssh: Runner = (argv) => {
  const host = skipOptions(argv, 1, { short: 'BbcDEeFIiJLlmOoPpQRSWw' })
  const rest = argv.slice(host + 1)
  return rest.length === 0 ? undefined : { shellCode: [{ text: joinLoose(rest) }] }
}

const trap: Runner = (argv) => {
  const first = argv[1]?.literal
  if (first === '-p' || first === '-l' || first === '-P') return undefined
  const code = first === '--' ? argv[2] : argv[1]
  return code === undefined ? undefined : { shellCode: [{ text: code.loose }] }
}

const alias: Runner = (argv) => ({
  shellCode: argv
    .slice(1)
    .map((argument) => splitOnce(argument.loose, '=')[1])
    .filter((value): value is string => value !== undefined)
    .map((text) => ({ text })),
})

const at: Runner = (argv) => {
  const file = findOptionValue(argv, ['-f'], [])
  if (file !== undefined) return { scripts: [{ path: textArgument(file.value), args: [], kind: 'shell' }] }
  return { stdin: 'shell' }
}

const TMUX_SHELL_SUBCOMMANDS = new Set([
  'new',
  'new-session',
  'new-window',
  'neww',
  'split-window',
  'splitw',
  'respawn-pane',
  'respawnp',
  'respawn-window',
  'respawnw',
  'run-shell',
  'run',
  'display-popup',
  'popup',
])

const tmux: Runner = (argv) => {
  const global = findOptionValue(argv.slice(0, skipOptions(argv, 1, { short: 'LSfcT' })), ['-c'], [])
  if (global !== undefined) return { shellCode: [{ text: global.value }] }
  const at = skipOptions(argv, 1, { short: 'LSfT' })
  const subcommand = argv[at]?.literal?.toLowerCase()
  if (subcommand === undefined) return undefined
  const rest = argv.slice(at)
  if (TMUX_SHELL_SUBCOMMANDS.has(subcommand)) {
    const start = skipOptions(rest, 1, { short: 'ceFflnstxy' })
    const code = rest.slice(start)
    return code.length === 0 ? undefined : { shellCode: [{ text: joinLoose(code) }] }
  }
  if (subcommand === 'send-keys' || subcommand === 'send') {
    const start = skipOptions(rest, 1, { short: 'Nt' })
    return { shellCode: rest.slice(start).map((argument) => ({ text: argument.loose })) }
  }
  return undefined
}

const entr: Runner = (argv) => {
  const start = skipOptions(argv, 1)
  if (hasShortFlag(argv, 's')) return { shellCode: [{ text: joinLoose(argv.slice(start)) }] }
  return { commands: [argv.slice(start)] }
}

const gdb: Runner = (argv) => {
  const index = argv.findIndex((argument) => argument.literal === '--args')
  if (index !== -1) return { commands: [argv.slice(index + 1)] }
  const program = skipOptions(argv, 1, {
    short: 'xpcd',
    long: ['ex', 'command', 'pid', 'core', 'directory', 'cd', 'init-command'],
  })
  const target = argv[program]
  return target === undefined ? undefined : { scripts: [{ path: target, args: [], kind: 'program' }] }
}

const nixShell: Runner = (argv) => {
  const code = findOptionValue(argv, [], ['run', 'command'])
  return code === undefined ? undefined : { shellCode: [{ text: code.value }] }
}

const nix: Runner = (argv) => {
  const subcommand = argv[1]?.literal
  if (subcommand !== 'shell' && subcommand !== 'develop') return undefined
  const index = argv.findIndex((argument) => argument.literal === '-c' || argument.literal === '--command')
  return index === -1 ? undefined : { commands: [argv.slice(index + 1)] }
}

/** Runs the words after the first `--` (`op run -- CMD`), or after options when there is none. */
function afterDoubleDash(subcommands: readonly string[], spec: OptionSpec = {}, operands = 0): Runner {
  return (argv) => {
    const subcommand = argv[1]?.literal?.toLowerCase()
    if (subcommands.length > 0 && (subcommand === undefined || !subcommands.includes(subcommand)))
      return undefined
    const first = subcommands.length > 0 ? 2 : 1
    const dash = argv.findIndex((argument, index) => index >= first && argument.literal === '--')
    if (dash !== -1) return { commands: [argv.slice(dash + 1)] }
    return { commands: [argv.slice(skipOptions(argv, first, spec) + operands)] }
  }
}

const SHELLS = [
  'sh',
  'bash',
  'dash',
  'zsh',
  'ksh',
  'mksh',
  'ash',
  'yash',
  'posh',
  'lksh',
  'pdksh',
  'rbash',
  'fish',
  'csh',
  'tcsh',
]

const entries: [readonly string[], Runner][] = [
  [['env'], env],
  [['sudo'], sudo],
  [['doas'], wrapper({ short: 'uCa' })],
  [
    [
      'nohup',
      'setsid',
      'builtin',
      'catchsegv',
      'nocorrect',
      'noglob',
      'busybox',
      'toybox',
      'unbuffer',
      'dbus-run-session',
      'valgrind',
      'firejail',
      'pkexec',
      'sudo-rs',
    ],
    wrapper({ long: ['user', 'config-file', 'dbus-daemon'] }),
  ],
  [['time'], wrapper({ short: 'fo', long: ['format', 'output'] })],
  [['nice'], wrapper({ short: 'n', long: ['adjustment'] })],
  [['timeout'], wrapper({ short: 'sk', long: ['signal', 'kill-after'] }, 1)],
  [['stdbuf'], wrapper({ short: 'ioe', long: ['input', 'output', 'error'] })],
  [['exec'], wrapper({ short: 'a' })],
  [['command'], command],
  [['xargs'], xargs],
  [['hash'], hash],
  [['find'], find],
  [SHELLS, shell],
  [['eval'], evaluate],
  [['.', 'source'], source],
  [['watch'], watch],
  [['flock'], flock],
  [['strace', 'ltrace'], wrapper({ short: 'abeEIoOpPsSuUXAnlLw' })],
  [['script'], script],
  [['su', 'runuser'], switchUser],
  [['sg'], switchGroup],
  [['parallel'], parallel],
  [['npx', 'bunx', 'pnpx'], packageRunner],
  [['npm'], npm],
  [['pnpm'], pnpm],
  [['yarn'], yarn],
  [['bun'], bun],
  [['go'], go],
  [['node', 'nodejs', 'tsx', 'ts-node'], node],
  [['perl'], perl],
  [['ruby'], ruby],
  [['php'], php],
  [['lua', 'luajit', 'rscript', 'osascript'], simpleEval],
  [['deno'], deno],
  [['awk', 'gawk', 'mawk', 'nawk'], awk],
  [['powershell', 'pwsh'], powershell],
  [['cmd'], windowsCommand],
  [['ssh'], ssh],
  [['chroot'], wrapper({ long: ['userspec', 'groups'] }, 1)],
  [['ionice'], wrapper({ short: 'cnp' })],
  [['taskset'], (argv) => (hasShortFlag(argv, 'p') ? undefined : wrapper({}, 1)(argv))],
  [['chrt'], (argv) => (hasShortFlag(argv, 'p') ? undefined : wrapper({ short: 'TPD' }, 1)(argv))],
  [
    ['unshare'],
    wrapper({
      short: 'SGRw',
      long: ['setuid', 'setgid', 'root', 'wd', 'map-user', 'map-group', 'propagation', 'setgroups'],
    }),
  ],
  [['nsenter'], wrapper({ short: 'tSG', long: ['target', 'setuid', 'setgid'] })],
  [
    ['systemd-run'],
    wrapper({
      short: 'pEuMH',
      long: [
        'unit',
        'property',
        'setenv',
        'uid',
        'gid',
        'nice',
        'working-directory',
        'machine',
        'host',
        'slice',
        'description',
        'on-calendar',
        'on-active',
        'on-boot',
        'on-startup',
        'on-unit-active',
        'on-unit-inactive',
        'timer-property',
        'path-property',
        'socket-property',
        'service-type',
      ],
    }),
  ],
  [['caffeinate'], wrapper({ short: 'tw' })],
  [['torsocks'], wrapper({ short: 'uapP' })],
  [['proxychains', 'proxychains4'], wrapper({ short: 'f' })],
  [['rlwrap'], wrapper({ short: 'aCfFgHlOpPqSswz' })],
  [['xvfb-run'], wrapper({ short: 'nsefpw' })],
  [['screen'], wrapper({ short: 'cehpSTt' })],
  [['wsl'], afterDoubleDash([], { short: 'du', long: ['distribution', 'user', 'cd'] })],
  [['entr'], entr],
  [['gdb'], gdb],
  [['trap'], trap],
  [['alias'], alias],
  [['at', 'batch'], at],
  [['tmux'], tmux],
  [['nix-shell'], nixShell],
  [['nix'], nix],
  [
    ['poetry', 'pipenv', 'uv', 'pdm', 'hatch', 'rye', 'devbox', 'pixi'],
    subcommandWrapper(['run'], { long: ['with', 'from', 'python', 'env'] }),
  ],
  [['uvx'], packageRunner],
  [['pipx'], subcommandWrapper(['run'], { long: ['spec', 'python'] })],
  [['bundle', 'bundler'], subcommandWrapper(['exec'])],
  [
    ['conda', 'mamba', 'micromamba'],
    subcommandWrapper(['run'], { short: 'np', long: ['name', 'prefix', 'cwd'] }),
  ],
  [['mise', 'rtx', 'asdf'], afterDoubleDash(['exec', 'x'])],
  [['direnv'], subcommandWrapper(['exec'], {}, 1)],
  [
    ['op', 'doppler', 'infisical'],
    afterDoubleDash(['run'], { long: ['env-file', 'project', 'config', 'env'] }),
  ],
  [['aws-vault'], afterDoubleDash(['exec'], {}, 1)],
  [['dotenv'], afterDoubleDash([], { short: 'ecv' })],
]

/** Runners by normalised program name (basename, lower case, no Windows suffix). */
const RUNNERS: ReadonlyMap<string, Runner> = new Map(
  entries.flatMap(([names, runner]) => names.map((name) => [name, runner] as const)),
)

/** `python`, `python3`, `python3.12`, `pypy3`: names the table cannot list one by one. */
function isPythonName(name: string): boolean {
  return /^(?:python[0-9.]*|pypy[0-9.]*)$/.test(name)
}

/** The runner for a program name, including version-suffixed interpreters such as `python3.12`. */
export function runnerFor(name: string): Runner | undefined {
  return RUNNERS.get(name) ?? (isPythonName(name) ? python : undefined)
}
