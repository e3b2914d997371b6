import { type Argument, hasOption, options, parseArgv, textArgument } from '../option-parser.js'
import { namesOwnInput } from '../own-input.js'
import {
  commandsAt,
  joinLoose,
  type Runner,
  type ShellCode,
  shellCodeOf,
  splitOnce,
  wrapper,
} from '../runner-kit.js'
import { findOptionValue } from './option-scan.js'

/**
 * Shells and shell builtins that run code or another command: `sh -c`, `eval`, `source`, `exec`,
 * `command`, `hash -p`, `trap`, `alias`, and `at`/`batch` (shell code on standard input).
 */

const COMMAND = options('+pvV')

const command: Runner = (argv) => {
  const readings = parseArgv(argv, COMMAND)
  // `command -v NAME` and `command -V NAME` only describe NAME.
  const running = readings.filter((reading) => !hasOption(reading, ['-v', '-V']))
  return running.length === 0 ? undefined : { commands: commandsAt(argv, running) }
}

/** `hash -p PATH NAME` makes NAME run PATH. */
const hash: Runner = (argv) => {
  const path = findOptionValue(argv, ['-p'], [])
  return path === undefined
    ? undefined
    : { scripts: [{ path: textArgument(path), args: [], kind: 'program' }] }
}

const shell: Runner = (argv) => {
  let index = 1
  let hasCommandString = false
  let readsStdin = false
  const initCode: ShellCode[] = []
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
        return { shellCode: [...initCode, { text: text.slice('--command='.length) }] }
      }
      // fish runs `--init-command CODE` before anything else.
      if (text === '--init-command') initCode.push(...shellCodeOf([argv[index + 1]]))
      if (text.startsWith('--init-command=')) initCode.push({ text: text.slice('--init-command='.length) })
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
    if (code === undefined) return initCode.length === 0 ? undefined : { shellCode: initCode }
    const positional = argv.slice(index + 1).map((argument) => argument.literal ?? argument.loose)
    const shellCode = [...initCode, { text: code.loose, positional }]
    // `sh -c "$1"`: the calling shell expands `$1` before this shell starts, so its parameters
    // (not the ones given here) are read too.
    if (code.literal === undefined) shellCode.push({ text: code.loose })
    return { shellCode }
  }
  const script = argv[index]
  if (readsStdin || script === undefined) return { stdin: 'shell', shellCode: initCode }
  const scripts = [{ path: script, args: argv.slice(index + 1), kind: 'shell' as const }]
  // `sh /dev/stdin <<< …`: the script is the shell's own input; one not spelled out may be too.
  return readsOwnInput(script)
    ? { stdin: 'shell', shellCode: initCode, scripts }
    : { shellCode: initCode, scripts }
}

/** A script argument that is (or, not spelled out, may be) the command's own input. */
function readsOwnInput(script: Argument): boolean {
  return script.literal === undefined || namesOwnInput(script.literal)
}

const source: Runner = (argv) => {
  const script = argv[1]
  if (script === undefined) return undefined
  const scripts = [{ path: script, args: argv.slice(2), kind: 'shell' as const }]
  return readsOwnInput(script) ? { stdin: 'shell', scripts } : { scripts }
}

const evaluate: Runner = (argv) => ({ shellCode: [{ text: joinLoose(argv.slice(1)) }] })

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
  if (file !== undefined) return { scripts: [{ path: textArgument(file), args: [], kind: 'shell' }] }
  return { stdin: 'shell' }
}

const SHELLS = [
  'sh',
  'bash',
  'dash',
  'zsh',
  'ksh',
  'ksh93',
  'mksh',
  'ash',
  'hush',
  'yash',
  'posh',
  'lksh',
  'oksh',
  'loksh',
  'pdksh',
  'rbash',
  'osh',
  'fish',
  'csh',
  'tcsh',
  'nu',
  'elvish',
]

export const SHELL_RUNNERS: readonly [readonly string[], Runner][] = [
  [['exec'], wrapper(options('+a:cl'))],
  [['command'], command],
  [['hash'], hash],
  [SHELLS, shell],
  [['eval'], evaluate],
  [['.', 'source'], source],
  [['trap'], trap],
  [['alias'], alias],
  [['at', 'batch'], at],
]
