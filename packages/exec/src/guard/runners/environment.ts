import { type Argument, options, optionsNamed, textArgument } from '../option-parser.js'
import {
  afterDoubleDash,
  byReading,
  joinLoose,
  merge,
  NO_OPTIONS,
  type Runner,
  type RunnerResult,
  splitOnce,
  wrapper,
} from '../runner-kit.js'

/**
 * `env` and the tools that set variables or secrets, then run a command (`cross-env`, `env-cmd`,
 * `op run`, `doppler run`, `aws-vault exec`, `dotenv`, …), and which variables the shell or a tool runs.
 */

const ENV = options(
  '+a:iu:0C:S:v',
  'argv0= ignore-environment null unset= chdir= split-string= block-signal=? default-signal=? ' +
    'ignore-signal=? list-signal-handling debug help version',
)

/** `env`: options, then `NAME=VALUE` words (any word with `=`), then the command. */
const env = byReading(ENV, (reading, argv) => {
  const split = optionsNamed(reading, ['-S', '--split-string'])[0]
  if (split !== undefined) {
    // `env -S'-i lango cron' …`: the string is split into more arguments that env reads again.
    const value = split.values[0]
    const after = value === argv[split.index + 1] ? split.index + 2 : split.index + 1
    return { shellCode: [{ text: `env ${value?.loose ?? ''} ${joinLoose(argv.slice(after))}` }] }
  }
  let index = reading.operands[0] ?? argv.length
  if (argv[index]?.literal === '-') index++
  const checks: RunnerResult[] = []
  while (index < argv.length) {
    const argument = argv[index] as Argument
    if (!hasLiteralEquals(argument)) break
    const [name, value] = splitOnce(argument.loose, '=')
    const kind = value === undefined ? undefined : variableRunKind(name)
    if (kind !== undefined && value !== undefined) checks.push(variableRun(kind, value))
    index++
  }
  return merge([...checks, { commands: [argv.slice(index)] }])
})

/** True when the word has an `=` of its own (not one inside an expansion such as `${x=}`). */
function hasLiteralEquals(argument: Argument): boolean {
  if (argument.literal !== undefined) return argument.literal.includes('=')
  const parts = argument.word?.parts
  if (parts === undefined) return argument.loose.includes('=')
  return parts.some((part) => {
    if (part.type === 'Literal' || part.type === 'SingleQuoted' || part.type === 'AnsiCQuoted')
      return part.value.includes('=')
    if (part.type === 'DoubleQuoted')
      return part.parts.some((child) => child.type === 'Literal' && child.value.includes('='))
    return false
  })
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

function variableRun(kind: 'code' | 'file', value: string): RunnerResult {
  return kind === 'file'
    ? { scripts: [{ path: textArgument(value), args: [], kind: 'shell' }] }
    : { shellCode: [{ text: value.replace(/^\|/, '') }] }
}

export const ENVIRONMENT_RUNNERS: readonly [readonly string[], Runner][] = [
  [['env'], env],
  [
    ['op', 'doppler', 'infisical', 'berglas', 'teller', 'dotenvx'],
    afterDoubleDash(['run', 'exec'], options('', 'env-file= project= config= env=')),
  ],
  [['chamber'], afterDoubleDash(['exec'], NO_OPTIONS, 1)],
  [['aws-vault'], afterDoubleDash(['exec'], NO_OPTIONS, 1)],
  [['dotenv'], afterDoubleDash([], options('e:c:v:p'))],
  [['cross-env'], env],
  [
    ['cross-env-shell'],
    (argv) => ({
      shellCode: [
        { text: joinLoose(argv.slice(1).filter((argument) => !(argument.literal ?? '').includes('='))) },
      ],
    }),
  ],
  [
    ['env-cmd'],
    wrapper(
      options(
        'f:e:r:',
        'file= environments= rc-file= fallback no-override use-shell expand-envs silent verbose help',
      ),
    ),
  ],
]
