import { awkCommands } from '../awk-program.js'
import { hasOption, options, optionsNamed, textArgument } from '../option-parser.js'
import { namesOwnInput } from '../own-input.js'
import {
  byReading,
  joinLoose,
  merge,
  type Runner,
  type RunnerResult,
  type ShellCode,
  splitOnce,
} from '../runner-kit.js'
import { type OptionSpec, skipOptions } from './option-scan.js'

/**
 * Interpreters whose options carry program code (`python -c`, `node -e`, `perl -e`, `deno eval`,
 * PowerShell `-Command`, `cmd /c`), and awk and sed programs that run commands.
 */

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
    const scripts = [{ path: target, args: argv.slice(index + 1), kind: 'code' as const }]
    // `python3 /dev/stdin <<< …`: the script is the interpreter's own input.
    return target.literal === undefined || namesOwnInput(target.literal)
      ? { stdin: 'code', scripts }
      : { scripts }
  }
}

export const python = interpreter({ codeShort: 'c', moduleShort: 'm', options: { short: 'WXQ' } })
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

const tcl = interpreter({ codeShort: 'c', options: { short: 'fbDiInN' } })

const GAWK = options(
  'f:v:F:e:E:i:l:bcCd::D::gh?hL::MnNoO::p::PrsStVW:',
  'file= assign= field-separator= source= exec= include= load= characters-as-bytes traditional ' +
    'copyright dump-variables=? debug=? gen-pot help lint=? bignum use-lc-numeric non-decimal-data ' +
    'optimize pretty-print=? no-optimize posix re-interval sandbox lint-old version profile=? csv',
)

/**
 * awk: the program is data unless it runs commands (`system`, pipes, `getline` from a command);
 * literal commands are parsed as shell code, computed ones count as a run-time command. Documented in
 * `awk-program.ts`.
 */
const awk = byReading(GAWK, (reading, argv) => {
  const files = optionsNamed(reading, ['-f', '--file', '-E', '--exec'])
  const sources = optionsNamed(reading, ['-e', '--source']).map((option) => option.values[0]?.loose ?? '')
  if (files.length === 0 && sources.length === 0) {
    const program = reading.operands[0]
    if (program !== undefined) sources.push(argv[program]?.loose ?? '')
  }
  const found = sources.map(awkCommands)
  return {
    scripts: files.map((file) => ({
      path: file.values[0] ?? textArgument(''),
      args: [],
      kind: 'code' as const,
    })),
    shellCode: found.flatMap((commands) => commands.shellCode.map((text) => ({ text }))),
    computed: found.some((commands) => commands.computed),
  }
})

const SED = options(
  'nrsEuzi::e:f:l:',
  'quiet silent debug expression= file= in-place=? line-length= null-data zero-terminated posix ' +
    'regexp-extended separate sandbox unbuffered follow-symlinks help version',
  { permute: true },
)

/**
 * GNU sed runs commands with `e COMMAND`, with a bare `e` (the pattern space) and with the `e` flag of
 * `s///` (the substituted pattern space). `--sandbox` turns them off.
 */
const sed = byReading(SED, (reading, argv) => {
  if (hasOption(reading, ['--sandbox'])) return undefined
  const expressions = optionsNamed(reading, ['-e', '--expression'])
  const scripts = expressions.map((option) => option.values[0]?.loose ?? '')
  const files = optionsNamed(reading, ['-f', '--file'])
  if (scripts.length === 0 && files.length === 0) {
    const first = reading.operands[0]
    if (first !== undefined) scripts.push(argv[first]?.loose ?? '')
  }
  return merge([...scripts.map(sedCommands), { computed: files.length > 0 }])
})

function sedCommands(script: string): RunnerResult {
  if (!script.includes('e')) return {}
  const shellCode: ShellCode[] = []
  let computed = false
  let index = 0
  const length = script.length
  const skipTo = (stops: string): void => {
    while (index < length && !stops.includes(script[index] as string)) index++
  }
  const delimited = (): string => {
    const delimiter = script[index++]
    let text = ''
    while (index < length && script[index] !== delimiter && script[index] !== '\n') {
      if (script[index] === '\\') text += script[index++] ?? ''
      text += script[index++] ?? ''
    }
    index++
    return text
  }
  while (index < length) {
    const character = script[index] as string
    if (/[\s;{}!]/.test(character)) {
      index++
      continue
    }
    // Addresses: numbers, `$`, `/re/`, `\cREc`, ranges and steps.
    if (/[0-9$,~+]/.test(character)) {
      index++
      continue
    }
    if (character === '/') {
      delimited()
      continue
    }
    if (character === '\\') {
      index++
      delimited()
      continue
    }
    index++
    switch (character) {
      case 'e': {
        const start = index
        skipTo('\n;}')
        const code = script.slice(start, index).trim()
        if (code === '') computed = true
        else shellCode.push({ text: code })
        break
      }
      case 's': {
        delimited()
        // The replacement, then the flags.
        index--
        const replacement = delimited()
        const flagsStart = index
        skipTo('\n;}')
        if (/e/.test(script.slice(flagsStart, index).replace(/w\s.*$/, ''))) {
          computed = true
          shellCode.push({ text: replacement })
        }
        break
      }
      case 'y':
        delimited()
        index--
        delimited()
        break
      case 'a':
      case 'i':
      case 'c':
      case 'r':
      case 'R':
      case 'w':
      case 'W':
      case 'b':
      case 't':
      case 'T':
      case ':':
      case 'q':
      case 'Q':
      case 'l':
      case 'L':
        skipTo(character === 'b' || character === 't' || character === 'T' ? '\n;}' : '\n')
        break
      default:
        break
    }
  }
  return { shellCode, computed }
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

export const INTERPRETER_RUNNERS: readonly [readonly string[], Runner][] = [
  [['node', 'nodejs', 'tsx', 'ts-node'], node],
  [['perl'], perl],
  [['ruby'], ruby],
  [['php'], php],
  [['lua', 'luajit', 'rscript', 'osascript'], simpleEval],
  [['tclsh', 'wish', 'expect'], tcl],
  [['deno'], deno],
  [['awk', 'gawk', 'mawk', 'nawk', 'busybox-awk'], awk],
  [['sed', 'gsed'], sed],
  [['powershell', 'pwsh'], powershell],
  [['cmd'], windowsCommand],
]
