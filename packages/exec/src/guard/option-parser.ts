import type { Word } from 'unbash'

/**
 * A getopt emulation for the runner table (SECURITY.md §6.2 item 4, issue 11 finding 4): it reads a
 * runner's options the way the runner itself does, so the guard finds the inner command where the
 * runner would. It follows GNU `getopt_long` rules: short clusters (`-nu root`, `-uroot`), required
 * and optional values (an optional value must be attached: `-n10`, `--nofile=10`), `--name=value`,
 * unambiguous abbreviations of long names (`--sig KILL` is `--signal KILL`), `--` and, for programs
 * that permute, options after operands.
 *
 * Where the table cannot say how the runner reads a word (a long option it does not list, an
 * abbreviation that fits options of different kinds) the parser follows every reading, so a
 * version of a tool with an extra option cannot hide the command from the guard.
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

/** How many values an option takes: a count, or `'optional'` (attached only: `-n10`, `--nofile=10`). */
type Arity = 0 | 1 | 2 | 3 | 'optional'

/** How a program reads its options. */
export interface OptionTable {
  /** Short option letters and their arity. */
  readonly short: ReadonlyMap<string, Arity>
  /** Long option names (without dashes) and their arity. */
  readonly long: ReadonlyMap<string, Arity>
  /** Long names must be written in full (custom parsers: `bwrap`, `faketime`, `valgrind`). */
  readonly exact: boolean
  /** Options may follow operands (GNU `getopt` without `+`: `su root -c CMD`). */
  readonly permute: boolean
  /** Long options are also written with one dash (`gdb -ex`, `xterm -e`); short clusters are then off. */
  readonly singleDash: boolean
  /** Words that the program skips as assignments between its options (`sudo A=1 -u root cmd`). */
  readonly assignment: ((text: string) => boolean) | undefined
}

/** Extra settings for {@link options}. */
export interface OptionTableSettings {
  readonly exact?: boolean
  readonly permute?: boolean
  readonly singleDash?: boolean
  readonly assignment?: (text: string) => boolean
}

/**
 * Builds an {@link OptionTable} from a getopt option string (`'+a:bc::'`: `a` takes a value, `b` is a
 * flag, `c` takes an optional attached value; a leading `+` or `-` is ignored) and a list of long
 * options (`'user= help nofile=? bind=2'`: `=` one value, `=?` optional, `=2`/`=3` several).
 */
export function options(short: string, long = '', settings: OptionTableSettings = {}): OptionTable {
  const shortMap = new Map<string, Arity>()
  const letters = short.replace(/^[+-]/, '')
  for (let index = 0; index < letters.length; index++) {
    const letter = letters[index] as string
    if (letter === ':') continue
    if (letters[index + 1] === ':') {
      const optional = letters[index + 2] === ':'
      shortMap.set(letter, optional ? 'optional' : 1)
      index += optional ? 2 : 1
    } else {
      shortMap.set(letter, 0)
    }
  }
  const longMap = new Map<string, Arity>()
  for (const entry of long.split(/\s+/)) {
    if (entry === '') continue
    const match = /^([^=]+)(=(\?|[123])?)?$/.exec(entry)
    if (match === null) continue
    const name = match[1] as string
    const kind = match[3]
    longMap.set(
      name,
      match[2] === undefined
        ? 0
        : kind === '?'
          ? 'optional'
          : kind === undefined
            ? 1
            : (Number(kind) as Arity),
    )
  }
  return {
    short: shortMap,
    long: longMap,
    exact: settings.exact ?? false,
    permute: settings.permute ?? false,
    singleDash: settings.singleDash ?? false,
    assignment: settings.assignment,
  }
}

/** An option the parser read. */
export interface ParsedOption {
  /** `-c` for a short option, `--command` for a long one (the full name, also when abbreviated). */
  readonly key: string
  /** Its values (empty for a flag). */
  readonly values: readonly Argument[]
  /** Index of the option word in argv. */
  readonly index: number
}

/** One reading of an argv. */
export interface ParsedArgv {
  /** Indexes of the operands in argv, in order. */
  readonly operands: readonly number[]
  readonly options: readonly ParsedOption[]
}

/** Readings followed per argv before the parser stops branching. */
const MAX_READINGS = 8

interface Reading {
  index: number
  readonly options: ParsedOption[]
  readonly operands: number[]
}

/**
 * Reads `argv` from `start` (index 0 is the program) with `table` and returns every reading the
 * table leaves open (usually one).
 */
export function parseArgv(argv: readonly Argument[], table: OptionTable, start = 1): ParsedArgv[] {
  const done: ParsedArgv[] = []
  const pending: Reading[] = [{ index: start, options: [], operands: [] }]
  let readings = 1
  while (pending.length > 0) {
    const reading = pending.pop() as Reading
    for (;;) {
      const forks = step(argv, table, reading)
      if (forks === 'done') {
        done.push({ operands: reading.operands, options: reading.options })
        break
      }
      for (const fork of forks) {
        if (readings >= MAX_READINGS) break
        readings++
        pending.push(fork)
      }
    }
  }
  return done
}

function copy(reading: Reading): Reading {
  return { index: reading.index, options: [...reading.options], operands: [...reading.operands] }
}

function restAsOperands(argv: readonly Argument[], reading: Reading, from: number): 'done' {
  for (let index = from; index < argv.length; index++) reading.operands.push(index)
  reading.index = argv.length
  return 'done'
}

/** Advances one word; returns `'done'` or the alternative readings forked at this word. */
function step(argv: readonly Argument[], table: OptionTable, reading: Reading): 'done' | Reading[] {
  const index = reading.index
  if (index >= argv.length) return 'done'
  const text = argv[index]?.literal
  if (text === undefined || text === '-' || text.length < 2 || !text.startsWith('-')) {
    if (text !== undefined && table.assignment?.(text) === true && reading.operands.length === 0) {
      reading.index++
      return []
    }
    // A run-time word is taken as an operand: it may be the command itself.
    if (!table.permute || text === undefined) return restAsOperands(argv, reading, index)
    reading.operands.push(index)
    reading.index++
    return []
  }
  if (text === '--') return restAsOperands(argv, reading, index + 1)
  if (text.startsWith('--') || (table.singleDash && !table.short.has(text.slice(1)))) {
    return longOption(argv, table, reading, text.replace(/^--?/, ''))
  }
  return shortCluster(argv, table, reading, text)
}

function longOption(
  argv: readonly Argument[],
  table: OptionTable,
  reading: Reading,
  body: string,
): 'done' | Reading[] {
  const at = body.indexOf('=')
  const name = at === -1 ? body : body.slice(0, at)
  const attached = at === -1 ? undefined : body.slice(at + 1)
  const candidates = longCandidates(table, name)
  const arities: Arity[] = candidates.length > 0 ? candidates : attached === undefined ? [0, 1] : [1]
  const forks: Reading[] = []
  const before = arities.length > 1 ? copy(reading) : reading
  for (const [position, arity] of arities.entries()) {
    const target = position === 0 ? reading : copy(before)
    const key = `--${candidates.length > 0 ? (longName(table, name) ?? name) : name}`
    applyLong(argv, target, key, arity, attached)
    if (position > 0) forks.push(target)
  }
  return forks
}

function applyLong(
  argv: readonly Argument[],
  reading: Reading,
  key: string,
  arity: Arity,
  attached: string | undefined,
): void {
  const index = reading.index
  const values: Argument[] = []
  let consumed = 1
  if (attached !== undefined) {
    values.push(textArgument(attached))
    const more = typeof arity === 'number' ? Math.max(0, arity - 1) : 0
    for (let extra = 1; extra <= more; extra++) values.push(argv[index + extra] ?? textArgument(''))
    consumed += more
  } else if (typeof arity === 'number' && arity > 0) {
    for (let extra = 1; extra <= arity; extra++) values.push(argv[index + extra] ?? textArgument(''))
    consumed += arity
  }
  reading.options.push({ key, values, index })
  reading.index = index + consumed
}

/** Arities of the long options `name` selects: an exact name, or every name it abbreviates. */
function longCandidates(table: OptionTable, name: string): Arity[] {
  const exact = table.long.get(name)
  if (exact !== undefined) return [exact]
  if (table.exact || name === '') return []
  const arities = new Set<Arity>()
  for (const [candidate, arity] of table.long) if (candidate.startsWith(name)) arities.add(arity)
  return [...arities]
}

/** The full name `name` abbreviates when only one long option fits. */
function longName(table: OptionTable, name: string): string | undefined {
  if (table.long.has(name)) return name
  let found: string | undefined
  for (const candidate of table.long.keys()) {
    if (!candidate.startsWith(name)) continue
    if (found !== undefined) return undefined
    found = candidate
  }
  return found
}

function shortCluster(
  argv: readonly Argument[],
  table: OptionTable,
  reading: Reading,
  text: string,
): Reading[] {
  const index = reading.index
  for (let position = 1; position < text.length; position++) {
    const letter = text[position] as string
    const arity = table.short.get(letter) ?? 0
    if (arity === 0) {
      reading.options.push({ key: `-${letter}`, values: [], index })
      continue
    }
    const rest = text.slice(position + 1)
    if (arity === 'optional' || rest !== '') {
      reading.options.push({ key: `-${letter}`, values: rest === '' ? [] : [textArgument(rest)], index })
      reading.index = index + 1
      return []
    }
    const values: Argument[] = []
    for (let extra = 1; extra <= arity; extra++) values.push(argv[index + extra] ?? textArgument(''))
    reading.options.push({ key: `-${letter}`, values, index })
    reading.index = index + 1 + arity
    return []
  }
  reading.index = index + 1
  return []
}

/** Builds an {@link Argument} for text the guard produced itself. */
export function textArgument(text: string): Argument {
  return { literal: text, loose: text, word: undefined }
}

/** The options of a reading with one of `keys` (`['-c', '--command']`). */
export function optionsNamed(parsed: ParsedArgv, keys: readonly string[]): ParsedOption[] {
  return parsed.options.filter((option) => keys.includes(option.key))
}

/** True when the reading has an option with one of `keys`. */
export function hasOption(parsed: ParsedArgv, keys: readonly string[]): boolean {
  return parsed.options.some((option) => keys.includes(option.key))
}

/** The first value of the last option with one of `keys`, if any. */
export function optionValue(parsed: ParsedArgv, keys: readonly string[]): Argument | undefined {
  const found = optionsNamed(parsed, keys)
  return found.at(-1)?.values[0]
}
