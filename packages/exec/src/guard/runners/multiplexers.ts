import { type Argument, hasOption, options, optionValue } from '../option-parser.js'
import { byReading, commandsAt, joinLoose, type Runner, shellCodeOf } from '../runner-kit.js'
import { findOptionValue, skipOptions } from './option-scan.js'

/**
 * Terminal multiplexers: `tmux` (commands of new sessions, windows and panes, `send-keys`) and
 * `screen` (its command, `-s SHELL`, `-X stuff`).
 */

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
  if (global !== undefined) return { shellCode: [{ text: global }] }
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

const SCREEN = options('aAc:dDe:fh:iJlLmOp:qQrRs:S:t:T:UvwxX', 'help version', { exact: true })

/** screen: `screen [options] CMD…`; `-s SHELL`; `-X stuff TEXT` types into a session's shell. */
const screen = byReading(SCREEN, (reading, argv) => {
  const shellProgram = optionValue(reading, ['-s'])
  const commands: (readonly Argument[])[] = shellProgram === undefined ? [] : [[shellProgram]]
  if (!hasOption(reading, ['-X'])) return { commands: [...commands, ...commandsAt(argv, [reading])] }
  const first = reading.operands[0]
  const subcommand = first === undefined ? undefined : argv[first]?.literal
  const rest = first === undefined ? [] : argv.slice(first + 1)
  if (subcommand === 'stuff') return { commands, shellCode: shellCodeOf(rest) }
  if (subcommand === 'exec' || subcommand === 'screen') commands.push(rest)
  return { commands }
})

export const MULTIPLEXER_RUNNERS: readonly [readonly string[], Runner][] = [
  [['screen'], screen],
  [['tmux'], tmux],
]
