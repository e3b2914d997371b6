import { type Argument, type OptionTable, options, type ParsedArgv, parseArgv } from './option-parser.js'

/**
 * The shapes and helpers shared by the runner tables (SECURITY.md §6.2 item 4): a runner reads an argv
 * and says what it would run, without running anything.
 */

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
  /** Code for another language (`python -c`, `node -e`): a standalone word lango in it blocks. */
  readonly interpreterCode?: readonly string[]
  /** Files it would execute. */
  readonly scripts?: readonly ScriptRun[]
  /** It reads its program from stdin, as shell code or as other code. */
  readonly stdin?: 'shell' | 'code'
  /**
   * It runs a command computed at run time (`awk '{system($2)}'`, `sed 's/x/y/e'`): the guard treats
   * it like a command word it cannot resolve, blocking when the text names lango.
   */
  readonly computed?: boolean
}

/**
 * Reads an argv (index 0 is the runner itself) and reports what it would run. `input` is what the
 * text shows arriving on stdin (for `xargs` and `parallel`, which turn it into arguments).
 */
export type Runner = (argv: readonly Argument[], input?: readonly string[]) => RunnerResult | undefined

/** The table of a program that takes no options: every word is an operand (`--` still ends options). */
export const NO_OPTIONS: OptionTable = options('')

/** The words joined with spaces, quote-removed but with expansions as written: text to parse again. */
export function joinLoose(argv: readonly Argument[]): string {
  return argv.map((argument) => argument.loose).join(' ')
}

/** `text` split at the first `separator`. */
export function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator)
  return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)]
}

/** Merges results; `undefined` when nothing would run. */
export function merge(results: readonly (RunnerResult | undefined)[]): RunnerResult | undefined {
  const commands: (readonly Argument[])[] = []
  const shellCode: ShellCode[] = []
  const interpreterCode: string[] = []
  const scripts: ScriptRun[] = []
  let stdin: 'shell' | 'code' | undefined
  let computed = false
  for (const result of results) {
    if (result === undefined) continue
    commands.push(...(result.commands ?? []))
    shellCode.push(...(result.shellCode ?? []))
    interpreterCode.push(...(result.interpreterCode ?? []))
    scripts.push(...(result.scripts ?? []))
    stdin ??= result.stdin
    computed ||= result.computed === true
  }
  if (
    commands.length + shellCode.length + interpreterCode.length + scripts.length === 0 &&
    stdin === undefined &&
    !computed
  ) {
    return undefined
  }
  return { commands, shellCode, interpreterCode, scripts, stdin, computed }
}

/**
 * A runner that reads argv with `table` and reports, for each reading the table leaves open, what that
 * reading would run; the reports are merged. `input` is the runner's stdin text (see {@link Runner}).
 */
export function byReading(
  table: OptionTable,
  read: (
    reading: ParsedArgv,
    argv: readonly Argument[],
    input?: readonly string[],
  ) => RunnerResult | undefined,
): Runner {
  return (argv, input) => merge(parseArgv(argv, table).map((reading) => read(reading, argv, input)))
}

/** The command that starts at operand `skip` of each reading (distinct start indexes). */
export function commandsAt(
  argv: readonly Argument[],
  readings: readonly ParsedArgv[],
  skip = 0,
): (readonly Argument[])[] {
  const starts = new Set<number>()
  for (const reading of readings) {
    const at = reading.operands[skip]
    if (at !== undefined) starts.add(at)
  }
  return [...starts].map((start) => argv.slice(start))
}

/**
 * `RUNNER [options] [skip operands] COMMAND ARGS…`. `runs` says whether a reading runs a command at
 * all (`taskset -p` does not); `programs` lists options whose value is a program the runner starts
 * (`fakeroot --faked PROG`).
 */
export function wrapper(
  table: OptionTable,
  skip = 0,
  settings: {
    readonly runs?: (reading: ParsedArgv) => boolean
    readonly programs?: readonly string[]
  } = {},
): Runner {
  return (argv) => {
    const readings = parseArgv(argv, table)
    const running = settings.runs === undefined ? readings : readings.filter(settings.runs)
    const commands = commandsAt(argv, running, skip)
    for (const reading of readings) {
      for (const option of reading.options) {
        const value = option.values[0]
        if (settings.programs?.includes(option.key) && value !== undefined) commands.push([value])
      }
    }
    return commands.length === 0 ? undefined : { commands }
  }
}

/** `RUNNER [global options] SUBCOMMAND [options] [skip operands] COMMAND …` for the listed subcommands. */
export function subcommandWrapper(
  subcommands: readonly string[],
  table: OptionTable,
  skip = 0,
  globalTable?: OptionTable,
): Runner {
  return (argv) => {
    const results: RunnerResult[] = []
    for (const global of globalTable === undefined ? [undefined] : parseArgv(argv, globalTable)) {
      const at = global === undefined ? 1 : global.operands[0]
      if (at === undefined) continue
      const subcommand = argv[at]?.literal?.toLowerCase()
      if (subcommand === undefined || !subcommands.includes(subcommand)) continue
      const rest = argv.slice(at)
      results.push({ commands: commandsAt(rest, parseArgv(rest, table), skip) })
    }
    return merge(results)
  }
}

/**
 * Runs the words after the first `--` (`op run -- CMD`), or after the options when there is none, for
 * the listed subcommands (any when the list is empty).
 */
export function afterDoubleDash(subcommands: readonly string[], table: OptionTable, skip = 0): Runner {
  return (argv) => {
    const subcommand = argv[1]?.literal?.toLowerCase()
    if (subcommands.length > 0 && (subcommand === undefined || !subcommands.includes(subcommand)))
      return undefined
    const first = subcommands.length > 0 ? 2 : 1
    const dash = argv.findIndex((argument, index) => index >= first && argument.literal === '--')
    if (dash !== -1) return { commands: [argv.slice(dash + 1)] }
    const rest = argv.slice(first - 1)
    const commands = commandsAt(rest, parseArgv(rest, table), skip)
    return commands.length === 0 ? undefined : { commands }
  }
}

/** Shell code from each non-empty value. */
export function shellCodeOf(values: readonly (Argument | undefined)[]): ShellCode[] {
  const code: ShellCode[] = []
  for (const value of values)
    if (value !== undefined && value.loose.trim() !== '') code.push({ text: value.loose })
  return code
}
