import {
  type Argument,
  hasOption,
  type OptionTable,
  options,
  optionValue,
  parseArgv,
  textArgument,
} from '../option-parser.js'
import { byReading, commandsAt, NO_OPTIONS, type Runner, wrapper } from '../runner-kit.js'
import { findOptionValue, skipOptions } from './option-scan.js'

/**
 * Privilege and identity changers: `sudo`, `doas`, `su`, `runuser`, `setpriv`, `capsh`, and the
 * runit/daemontools/s6 program launchers (`chpst`, `setuidgid`, `envdir`, `setlock`, …).
 */

/** sudo 1.9 and sudo-rs: `sudo [options] [NAME=VALUE …] COMMAND`; assignments may sit between options. */
const SUDO = options(
  '+Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv',
  'askpass auth-type= background bell close-from= login-class= chdir= preserve-env=? edit group= ' +
    'set-home help host= login remove-timestamp reset-timestamp list no-update non-interactive ' +
    'preserve-groups prompt= chroot= role= stdin shell command-timeout= type= other-user= user= ' +
    'version validate',
  { assignment: (text) => text.includes('=') && !text.startsWith('/') },
)

/** Options that make sudo edit, list, validate or print instead of running a command. */
const SUDO_NO_RUN = [
  '-e',
  '--edit',
  '-l',
  '--list',
  '-v',
  '--validate',
  '-V',
  '--version',
  '-K',
  '--remove-timestamp',
  '--help',
]

const sudo: Runner = (argv) => {
  const readings = parseArgv(argv, SUDO).filter((reading) => !hasOption(reading, SUDO_NO_RUN))
  const commands = commandsAt(argv, readings)
  for (const reading of readings) {
    // `sudo -h host CMD`: a lone `-h` followed by a word names a remote host, not the help.
    const host = reading.options.find((option) => option.key === '-h' && argv[option.index]?.literal === '-h')
    if (host !== undefined && reading.operands[0] === host.index + 1)
      commands.push(...commandsAt(argv, [reading], 1))
  }
  return commands.length === 0 ? undefined : { commands }
}

const DOAS = options('+a:C:Lnsu:')

const doas = wrapper(DOAS, 0, { runs: (reading) => !hasOption(reading, ['-C', '-L']) })

const RUN0 = options(
  '+hVu:g:D:',
  'help version no-ask-password machine= unit= property= description= slice= slice-inherit user= ' +
    'group= nice= chdir= setenv= background= pty pipe shell-prompt-prefix= lightweight= area= via-shell',
)

const PKEXEC = options('u:', 'user= disable-internal-agent keep-cwd help version')

const SU_LONG =
  'command= session-command= fast group= supp-group= login preserve-environment pty shell= ' +
  'whitelist-environment= help version'
const SU = options('c:fg:G:lmpPs:w:hV', SU_LONG, { permute: true })
const RUNUSER = options('c:fg:G:lmpPs:u:w:hV', `${SU_LONG} user=`, { permute: true })

/**
 * `su`/`runuser`: `-c CMD` runs CMD through the user's shell; `-s SHELL` picks that shell; other
 * operands after the user are handed to the shell (`su root lango` runs `sh lango`); `runuser -u USER
 * CMD …` runs CMD directly.
 */
function switchUser(table: OptionTable): Runner {
  return byReading(table, (reading, argv) => {
    const operands = reading.operands.filter((index) => argv[index]?.literal !== '-')
    if (hasOption(reading, ['-u', '--user']))
      return { commands: [operands.map((index) => argv[index] as Argument)] }
    const shell = optionValue(reading, ['-s', '--shell']) ?? textArgument('sh')
    // The last `-c` wins, as in su.
    const code = optionValue(reading, ['-c', '--command', '--session-command'])
    const args = operands.slice(1).map((index) => argv[index] as Argument)
    return { commands: [code === undefined ? [shell, ...args] : [shell, textArgument('-c'), code, ...args]] }
  })
}

const switchGroup: Runner = (argv) => {
  const code = findOptionValue(argv, ['-c'], [])
  if (code !== undefined) return { shellCode: [{ text: code }] }
  const group = skipOptions(argv, 1)
  const text = argv[group + 1]
  return text === undefined ? undefined : { shellCode: [{ text: text.loose }] }
}

const SETPRIV = options(
  '+dhV',
  'dump nnp no-new-privs ambient-caps= inh-caps= bounding-set= ruid= euid= rgid= egid= reuid= regid= ' +
    'clear-groups keep-groups init-groups groups= securebits= pdeathsig= selinux-label= ' +
    'apparmor-profile= landlock-access= landlock-rule= seccomp-filter= reset-env ptracer= help version',
)

/** `capsh … -- ARGS` runs `bash ARGS` (or `--shell=PATH ARGS`); `== ARGS` runs capsh again. */
const capsh: Runner = (argv) => {
  let shell = textArgument('/bin/bash')
  for (let index = 1; index < argv.length; index++) {
    const argument = argv[index] as Argument
    const text = argument.literal
    if (text === undefined) continue
    if (text.startsWith('--shell=')) shell = { ...argument, literal: text.slice(8), loose: text.slice(8) }
    if (text === '--' || text === '-+') return { commands: [[shell, ...argv.slice(index + 1)]] }
    if (text === '==' || text === '=+')
      return { commands: [[textArgument('capsh'), ...argv.slice(index + 1)]] }
  }
  return undefined
}

/** `chpst` (runit), `softlimit`, `setuidgid`, … (daemontools): single-letter options, then the program. */
const CHPST = options('u:U:b:e:/:C:n:l:L:m:d:o:p:f:c:r:t:vP012')
const SOFTLIMIT = options('a:c:d:f:l:m:o:p:r:s:t:')
const SETLOCK = options('nNxX')

/** `gosu USER CMD`, `setuidgid USER CMD`, `envdir DIR CMD`: one operand, then the command. */
const gosuLike = wrapper(NO_OPTIONS, 1)

export const PRIVILEGE_RUNNERS: readonly [readonly string[], Runner][] = [
  [['sudo', 'sudo-rs'], sudo],
  [['doas'], doas],
  [['run0'], wrapper(RUN0)],
  [['pkexec'], wrapper(PKEXEC)],
  [['su'], switchUser(SU)],
  [['runuser'], switchUser(RUNUSER)],
  [['sg'], switchGroup],
  [['setpriv'], wrapper(SETPRIV, 0, { runs: (reading) => !hasOption(reading, ['-d', '--dump']) })],
  [['capsh'], capsh],
  [['chpst'], wrapper(CHPST)],
  [['softlimit', 's6-softlimit'], wrapper(SOFTLIMIT)],
  [['setuidgid', 'envuidgid', 'envdir', 's6-setuidgid', 's6-envdir', 'gosu', 'su-exec'], gosuLike],
  [['setlock', 's6-setlock'], wrapper(SETLOCK, 1)],
]
