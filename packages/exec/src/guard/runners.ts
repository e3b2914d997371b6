import { awkCommands } from './awk-program.js'
import {
  type Argument,
  hasOption,
  type OptionTable,
  options,
  optionsNamed,
  optionValue,
  type ParsedArgv,
  parseArgv,
  textArgument,
} from './option-parser.js'
import {
  afterDoubleDash,
  byReading,
  commandsAt,
  joinLoose,
  merge,
  NO_OPTIONS,
  type Runner,
  type RunnerResult,
  type ShellCode,
  shellCodeOf,
  splitOnce,
  subcommandWrapper,
  wrapper,
} from './runner-kit.js'
import { TOOL_RUNNERS } from './tool-runners.js'

/**
 * Programs that run another program (SECURITY.md §6.2 item 4, issue 11 finding 4): `env`, `sudo`,
 * `xargs`, `sh -c`, interpreters, sandboxes, schedulers, tracers and the like. Each runner reads an argv
 * the way the program does (see `option-parser.ts`: which options take values, clusters,
 * abbreviations, `--`) and says what it would run, without running anything. Tools whose options
 * name a program or a shell command (`git -c`, `tar -I`, `ssh -o ProxyCommand`) are in
 * `tool-runners.ts`.
 */

/** Options that take a separate value, for the simple runners that do not need a full table. */
interface OptionSpec {
  /** Short option letters that take a value (`-u root` or `-uroot`). */
  readonly short?: string
  /** Long option names (without `--`) that take the next word as value when written without `=`. */
  readonly long?: readonly string[]
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

/** Value of `-x VALUE`, `-xVALUE`, `--long VALUE` or `--long=VALUE` anywhere in argv. */
function findOptionValue(
  argv: readonly Argument[],
  short: readonly string[],
  long: readonly string[],
): string | undefined {
  for (let index = 1; index < argv.length; index++) {
    const text = argv[index]?.literal
    if (text === undefined) continue
    if (text === '--') return undefined
    for (const name of long) {
      if (text === `--${name}`) return argv[index + 1]?.loose ?? ''
      if (text.startsWith(`--${name}=`)) return text.slice(name.length + 3)
    }
    for (const option of short) {
      // `-c VALUE`, or a flag cluster ending in the letter: `script -qc VALUE`.
      const clustered = text.length > 2 && /^-[A-Za-z]+$/.test(text) && text.endsWith(option.slice(1))
      if (text === option || clustered) return argv[index + 1]?.loose ?? ''
    }
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------------
// env and the variables tools run

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

// ---------------------------------------------------------------------------------------------------
// Privilege and identity changers

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

// ---------------------------------------------------------------------------------------------------
// Scheduling, resources, namespaces, sandboxes

const NICE = options('+n:', 'adjustment= help version')
const NOHUP = options('', 'help version')
const SETSID = options('+Vhcfw', 'ctty fork wait help version')
const TIME = options('+ao:f:pqvV', 'append output= format= portability quiet verbose help version')
const STDBUF = options('+i:o:e:', 'input= output= error= help version')
const CHROOT = options('+', 'groups= userspec= skip-chdir help version')

/** GNU and toybox `timeout [options] DURATION CMD`; old BusyBox `timeout -t SECS [-s SIG] CMD`. */
const TIMEOUT = options('+k:s:vt:i', 'kill-after= signal= verbose foreground preserve-status help version')

const timeout = byReading(TIMEOUT, (reading, argv) => ({
  commands: commandsAt(argv, [reading], hasOption(reading, ['-t']) ? 0 : 1),
}))

const PRLIMIT = options(
  '+c::d::e::f::i::l::m::n::q::r::s::t::u::v::x::y::p:o:hV',
  'core=? data=? nice=? fsize=? sigpending=? memlock=? rss=? nofile=? msgqueue=? rtprio=? stack=? ' +
    'cpu=? nproc=? as=? locks=? rttime=? pid= output= noheadings raw verbose help version',
)

const NUMACTL = options(
  '+ai:p:c:N:C:m:slHS:f:o:L:tM:dDI:uTVbw:P:h',
  'all interleave= preferred= cpubind= cpunodebind= physcpubind= membind= show localalloc hardware ' +
    'shm= file= offset= length= strict shmmode= dump dump-nodes shmid= huge touch verify balancing ' +
    'weighted-interleave= preferred-many= version help',
)

const CHRT = options(
  '+abdfhimoprRvVT:P:D:',
  'all-tasks batch deadline fifo idle other rr reset-on-fork sched-runtime= sched-period= ' +
    'sched-deadline= max pid verbose help version',
)
const TASKSET = options('+apchV', 'all-tasks pid cpu-list help version')
const IONICE = options('+c:n:p:P:u:tVh', 'class= classdata= pid= pgid= uid= ignore help version')
const CHOOM = options('+n:p:hV', 'adjust= pid= help version')
const CGEXEC = options('+g:sh', 'sticky help')
const CPULIMIT = options(
  'l:p:e:P:c:s:zikrvqhb',
  'limit= pid= exe= path= cpu= signal= lazy include-children kill restore verbose quiet help background',
)
const TRICKLE = options('hvVsd:u:w:t:l:n:')

const UNSHARE = options(
  '+fhVm::u::i::n::p::U::C::T::rcR:w:S:G:l::',
  'mount=? uts=? ipc=? net=? pid=? user=? cgroup=? time=? fork map-user= map-group= map-root-user ' +
    'map-current-user map-auto map-users= map-groups= map-subids kill-child=? mount-proc=? ' +
    'mount-binfmt=? load-interp= propagation= setgroups= keep-caps root= wd= setuid= setgid= ' +
    'monotonic= boottime= forward-signals=? help version',
)
const NSENTER = options(
  '+ahVt:m::u::i::n::p::C::U::T::S:G:r::w::W:FZceN:',
  'all target= mount=? uts=? ipc=? net=? pid=? cgroup=? user=? time=? user-parent setuid= setgid= ' +
    'preserve-credentials root=? wd=? wdns= env no-fork follow-context join-cgroup keep-caps ' +
    'net-socket= help version',
)

/** bubblewrap: its own parser (no abbreviations, no `=`); some options take two or three values. */
const BWRAP = options(
  '',
  'help version args= argv0= level-prefix unshare-all share-net unshare-user unshare-user-try ' +
    'unshare-ipc unshare-pid unshare-net unshare-uts unshare-cgroup unshare-cgroup-try userns= ' +
    'userns2= disable-userns assert-userns-disabled pidns= uid= gid= hostname= chdir= clearenv ' +
    'setenv=2 unsetenv= lock-file= sync-fd= bind=2 bind-try=2 dev-bind=2 dev-bind-try=2 ro-bind=2 ' +
    'ro-bind-try=2 bind-fd=2 ro-bind-fd=2 remount-ro= overlay-src= overlay=3 tmp-overlay= ro-overlay= ' +
    'exec-label= file-label= proc= dev= tmpfs= mqueue= dir= file=2 bind-data=2 ro-bind-data=2 ' +
    'symlink=2 seccomp= add-seccomp-fd= block-fd= userns-block-fd= info-fd= json-status-fd= ' +
    'new-session die-with-parent as-pid-1 cap-add= cap-drop= perms= size= chmod=2',
  { exact: true },
)

const bwrap: Runner = (argv) => {
  // An option the table does not know may take up to three values: follow each reading.
  const commands: (readonly Argument[])[] = []
  for (const reading of parseArgv(argv, BWRAP)) commands.push(...commandsAt(argv, [reading]))
  let unknown = 0
  for (let index = 1; index < argv.length && unknown < 4; index++) {
    const text = argv[index]?.literal ?? ''
    if (text === '--') break
    if (text.startsWith('--') && !BWRAP.long.has(text.slice(2))) {
      unknown++
      for (const skip of [2, 3, 4]) commands.push(...commandsAt(argv, parseArgv(argv, BWRAP, index + skip)))
    }
  }
  return { commands }
}

/** firejail: every option is one word (`--name=value`); `-c` runs the rest through a shell. */
const firejail: Runner = (argv) => {
  let index = 1
  while (index < argv.length) {
    const text = argv[index]?.literal
    if (text === undefined || !text.startsWith('-')) break
    index++
    if (text === '--') break
    if (text === '-c') return { shellCode: [{ text: joinLoose(argv.slice(index)) }] }
  }
  return { commands: [argv.slice(index)] }
}

const FAKEROOT = options('+l:f:i:s:ub:hv', 'lib= faked= unknown-is-real fd-base= help version')
const FAKECHROOT = options(
  '+e:c:l:d:shv',
  'environment= config-dir= lib= elfloader= use-system-libs help version',
)
const PROOT = options(
  'r:b:m:q:w:v:k:i:R:S:0h',
  'rootfs= bind= mount= qemu= cwd= pwd= verbose= kernel-release= root-id change-id= kill-on-exit ' +
    'link2symlink help version',
)

/** libfaketime's `faketime [switches] TIMESTAMP PROGRAM …`: exact words; `--date-prog PROG` runs PROG. */
const faketime: Runner = (argv) => {
  const commands: (readonly Argument[])[] = []
  let index = 1
  while (index < argv.length) {
    const text = argv[index]?.literal
    if (text === '-m' || text === '-f' || text === '--exclude-monotonic' || text === '--disable-shm') index++
    else if (text === '-p') index += 2
    else if (text === '--date-prog') {
      const program = argv[index + 1]
      if (program !== undefined) commands.push([program])
      index += 2
    } else break
  }
  commands.push(argv.slice(index + 1))
  return { commands }
}

const SYSTEMD_RUN = options(
  '+hrH:M:E:p:tPqGdSu:',
  'help version user system scope unit= property= description= slice= slice-inherit ' +
    'expand-environment= remain-after-exit send-sighup service-type= uid= gid= nice= ' +
    'working-directory= same-dir setenv= pty pty-late pipe quiet verbose collect shell no-block wait ' +
    'no-ask-password machine= host= path-property= socket-property= timer-property= on-active= ' +
    'on-boot= on-startup= on-unit-active= on-unit-inactive= on-calendar= on-timezone-change ' +
    'on-clock-change job-mode= ignore-failure background= json=',
)
const SYSTEMD_INHIBIT = options('', 'help version no-pager no-legend what= who= why= mode= list')
const DBUS_RUN_SESSION = options('', 'dbus-daemon= config-file= help version', { exact: true })
const DBUS_LAUNCH = options(
  '',
  'sh-syntax csh-syntax auto-syntax binary-syntax close-stderr exit-with-session exit-with-x11 ' +
    'autolaunch= config-file= version help',
  { exact: true },
)
const SETARCH = options(
  '+hVv3BFILRSTXZ',
  '32bit fdpic-funcptrs short-inode addr-compat-layout addr-no-randomize whole-seconds ' +
    'sticky-timeouts read-implies-exec mmap-page-zero 3gb 4gb uname-2.6 verbose list help version',
)

/** `setarch [ARCH] [options] [PROGRAM …]`; `linux32`, `linux64`, `i386`, … name the architecture. */
const setarch: Runner = (argv) => {
  const named = !/^setarch$/.test((argv[0]?.literal ?? '').replace(/^.*\//, ''))
  const start = named || (argv[1]?.literal ?? '-').startsWith('-') ? 1 : 2
  return { commands: commandsAt(argv, parseArgv(argv, SETARCH, start)) }
}

const START_STOP_DAEMON = options(
  'SKTHVx:a:p:n:u:g:c:s:r:d:N:P:I:k:bCO:mR:toqv',
  'start stop status help version pid= ppid= pidfile= exec= name= user= group= chuid= signal= ' +
    'startas= chroot= chdir= nicelevel= procsched= iosched= umask= background notify-await ' +
    'notify-timeout= no-close output= make-pidfile remove-pidfile retry= test oknodo quiet verbose',
  { permute: true },
)

/** `start-stop-daemon --start --exec PROG [--startas PROG] -- ARGS`. */
const startStopDaemon: Runner = (argv) => {
  const commands: (readonly Argument[])[] = []
  const dash = argv.findIndex((argument, index) => index > 0 && argument.literal === '--')
  const args = dash === -1 ? [] : argv.slice(dash + 1)
  for (const reading of parseArgv(argv.slice(0, dash === -1 ? argv.length : dash), START_STOP_DAEMON)) {
    // `--stop` and `--status` only look for a running process by its executable.
    if (!hasOption(reading, ['-S', '--start'])) continue
    for (const key of ['-x', '--exec', '-a', '--startas']) {
      const program = optionValue(reading, [key])
      if (program !== undefined) commands.push([program, ...args])
    }
  }
  return { commands }
}

const DAEMONIZE = options('+ac:e:o:p:l:u:vE:')
const SSH_AGENT = options('+a:cDdE:kO:P:st:')
const SSHPASS = options('+p:f:d:eP:vhV')

/** `runcon CONTEXT CMD` or `runcon [-c] [-u U] [-r R] [-t T] [-l L] CMD`. */
const RUNCON = options('+r:t:u:l:c', 'role= type= user= range= compute help version')
const runcon = byReading(RUNCON, (reading, argv) => {
  const context = !hasOption(reading, ['-r', '-t', '-u', '-l', '--role', '--type', '--user', '--range'])
  return { commands: commandsAt(argv, [reading], context ? 1 : 0) }
})

const SCHROOT = options(
  'c:u:d:n:o:pqvilbreh?V',
  'chroot= user= directory= session-name= option= preserve-environment quiet verbose info list ' +
    'begin-session recover-session run-session end-session all all-chroots all-sessions automatic-session ' +
    'force help version config location',
)

const CCACHE = options('', '', { exact: true })

// ---------------------------------------------------------------------------------------------------
// Builtins and shells

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
    return { shellCode: [...initCode, { text: code.loose, positional }] }
  }
  const script = argv[index]
  if (readsStdin || script === undefined) return { stdin: 'shell', shellCode: initCode }
  return { shellCode: initCode, scripts: [{ path: script, args: argv.slice(index + 1), kind: 'shell' }] }
}

const source: Runner = (argv) => {
  const script = argv[1]
  return script === undefined
    ? undefined
    : { scripts: [{ path: script, args: argv.slice(2), kind: 'shell' }] }
}

const evaluate: Runner = (argv) => ({ shellCode: [{ text: joinLoose(argv.slice(1)) }] })

// ---------------------------------------------------------------------------------------------------
// Repeaters, lockers, recorders

const WATCH = options(
  '+bcCd::efgn:pq:rs:twxhv',
  'beep color no-color differences=? errexit follow chgexit interval= precise equexit= no-rerun ' +
    'shotsdir= no-title no-wrap exec help version',
)

/** `watch CMD…` joins its operands and runs them through `sh -c`; `watch -x` runs them directly. */
const watch = byReading(WATCH, (reading, argv) => {
  const start = reading.operands[0]
  if (start === undefined) return undefined
  const rest = argv.slice(start)
  return hasOption(reading, ['-x', '--exec'])
    ? { commands: [rest] }
    : { shellCode: [{ text: joinLoose(rest) }] }
})

const FLOCK = options(
  '+sexnoFuw:E:hV',
  'shared exclusive nonblock nb close unlock timeout= wait= conflict-exit-code= no-fork verbose help version',
)

/**
 * `flock [options] FILE CMD…`, `flock [options] FILE -c CMD`, `flock [options] FD`. util-linux reads
 * `-c`/`--command` only right after the file (before it they are rejected).
 */
const flock = byReading(FLOCK, (reading, argv) => {
  const file = reading.operands[0]
  if (file === undefined) return undefined
  const next = argv[file + 1]?.literal
  if (next === '-c' || next === '--command') return { shellCode: shellCodeOf([argv[file + 2]]) }
  if (next?.startsWith('--command=')) return { shellCode: [{ text: next.slice(10) }] }
  return { commands: [argv.slice(file + 1)] }
})

const SCRIPT = options(
  'ac:eE:fhI:O:B:T:t::m:o:qVw',
  'append command= echo= return flush force log-in= log-out= log-io= log-timing= timing=? ' +
    'logging-format= output-limit= quiet help version',
  { permute: true },
)

/** util-linux `script -c CMD [FILE]`; BSD `script [-q] FILE CMD…`. */
const script = byReading(SCRIPT, (reading, argv) => {
  const codes = optionsNamed(reading, ['-c', '--command'])
  if (codes.length > 0) return { shellCode: shellCodeOf(codes.map((code) => code.values[0])) }
  return { commands: commandsAt(argv, [reading], 1) }
})

// ---------------------------------------------------------------------------------------------------
// Argument builders: xargs, find, parallel

const XARGS = options(
  '+0a:E:e::i::I:l::L:n:prs:txP:d:oJ:R:S:',
  'null arg-file= delimiter= eof=? replace=? max-lines=? max-args= max-procs= open-tty interactive ' +
    'no-run-if-empty max-chars= verbose exit show-limits process-slot-var= help version',
)

/** Most substituted values tried per `xargs`/`parallel` call; each becomes one command to check. */
const MAX_SUBSTITUTIONS = 16

/** Longest text a substitution may produce (`{}{}{}…` times a long line would multiply the input). */
const MAX_SUBSTITUTED_LENGTH = 64 * 1024

/** `text` with every `search` replaced by `value`; just `value` when the result would be too long. */
function substitute(text: string, search: string, value: string): string {
  const count = text.split(search).length - 1
  return count * value.length > MAX_SUBSTITUTED_LENGTH ? value : text.replaceAll(search, value)
}

function inputLines(input: readonly string[] | undefined): string[] {
  return (input ?? []).flatMap((text) => text.split('\n')).filter((line) => line.trim() !== '')
}

/** The replace string of `xargs -I R`, `-i[R]`, `--replace[=R]` or BSD `-J R`, if any. */
function xargsReplaceString(reading: ParsedArgv): string | undefined {
  for (const option of reading.options) {
    const value = option.values[0]?.literal
    if (option.key === '-I' || option.key === '-J') return value
    if (option.key === '-i' || option.key === '--replace') return value ?? '{}'
  }
  return undefined
}

const xargs = byReading(XARGS, (reading, argv, input) => {
  const start = reading.operands[0]
  const inner = start === undefined ? [] : argv.slice(start)
  const commands: (readonly Argument[])[] = [inner]
  const replace = xargsReplaceString(reading)
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
})

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

/** fd (`fdfind`): `-x CMD…` / `-X CMD…` run the rest of the line (up to `;`) for the results. */
const fd: Runner = (argv) => {
  const commands: Argument[][] = []
  for (let index = 1; index < argv.length; index++) {
    const text = argv[index]?.literal ?? ''
    if (!/^(?:-x|-X|--exec|--exec-batch)$/.test(text)) continue
    let end = index + 1
    while (end < argv.length && argv[end]?.literal !== ';') end++
    commands.push(argv.slice(index + 1, end))
    index = end
  }
  return { commands }
}

const PARALLEL = options(
  '0a:b:d:E:I:i::j:kl::L:m:n:N:P:qrS:s:tuvVxX',
  'null arg-file= arg-file-sep= arg-sep= basefile= bf= block= block-size= colsep= delimiter= ' +
    'env= eof=? halt= header= jobs= joblog= load= max-args= max-chars= max-lines= max-procs= ' +
    'max-replace-args= memfree= nice= replace=? results= res= retries= sshlogin= S= sshloginfile= ' +
    'slf= tag-string= tagstring= timeout= tmpdir= workdir= wd= delay= rpl= profile= semaphorename= ' +
    'id= fifo cat pipe pipepart quote keep-order group ungroup line-buffer tag dry-run verbose ' +
    'semaphore bg fg shebang shebang-wrap no-run-if-empty',
)

const parallel = byReading(PARALLEL, (reading, argv, input) => {
  const start = reading.operands[0] ?? argv.length
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
  if (template !== '') commands.push(template)
  return { shellCode: commands.map((text) => ({ text })) }
})

// ---------------------------------------------------------------------------------------------------
// Tracers and profilers

const STRACE = options(
  '+a:Ab:cCdDe:E:fFhiI:kno:O:p:P:qrs:S:tTu:U:vVwxX:yYzZ',
  'columns= attach= detach-on= daemonize=? env= trace= signal= status= trace-path= successful-only ' +
    'failed-only abbrev= verbose= raw= read= write= quiet=? silent=? silence=? kvm= decode-fds=? ' +
    'decode-pids=? follow-forks output-separately output= instruction-pointer stack-trace ' +
    'stack-traces syscall-number timestamps=? relative-timestamps=? absolute-timestamps=? ' +
    'syscall-times=? summary-only summary summary-columns= summary-sort-by= ' +
    'summary-syscall-overhead= summary-wall-clock string-limit= user= seccomp-bpf ' +
    'const-print-style= no-abbrev debug help version tips=? argv0= secontext=? interruptible= ' +
    'inject= fault= quiet-messages=? always-show-pid kill-on-exit trace-fds= namespace=? ' +
    'pidns-translation strings-in-hex=? stack-trace-frame-filter= output-append-mode',
)
const LTRACE = options(
  '+a:A:bcCD:e:F:hiLl:n:o:p:rs:Su:tTVw:x:',
  'align= demangle debug= failed help indent= library= output= version no-signals where= no-plt config=',
)

/** valgrind: every option is one word (`--tool=memcheck`, `-q`); the first other word is the program. */
const valgrind: Runner = (argv) => {
  let index = 1
  while (index < argv.length) {
    const text = argv[index]?.literal
    if (text === undefined || !text.startsWith('-')) break
    index++
    if (text === '--') break
  }
  return { commands: [argv.slice(index)] }
}

/** `gosu USER CMD`, `setuidgid USER CMD`, `envdir DIR CMD`: one operand, then the command. */
const gosuLike = wrapper(NO_OPTIONS, 1)
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
  if (code !== undefined) return { shellCode: [{ text: code }] }
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

const PNPM_SUBCOMMANDS = new Set([
  'add',
  'install',
  'i',
  'update',
  'up',
  'upgrade',
  'remove',
  'rm',
  'uninstall',
  'un',
  'link',
  'ln',
  'unlink',
  'import',
  'rebuild',
  'rb',
  'prune',
  'fetch',
  'install-test',
  'it',
  'patch',
  'patch-commit',
  'patch-remove',
  'audit',
  'list',
  'ls',
  'outdated',
  'why',
  'licenses',
  'run',
  'run-script',
  'test',
  't',
  'start',
  'create',
  'env',
  'init',
  'publish',
  'pack',
  'root',
  'bin',
  'store',
  'server',
  'setup',
  'config',
  'c',
  'get',
  'set',
  'deploy',
  'doctor',
  'help',
  'self-update',
  'recursive',
  'm',
  'multi',
  'cat-file',
  'cat-index',
  'find-hash',
  'dedupe',
  'approve-builds',
  'ignored-builds',
  'cache',
  'login',
  'logout',
  'whoami',
  'version',
  'catalog',
  'sbom',
  'docs',
  'home',
  'view',
  'info',
  'search',
  'stars',
  'owner',
  'dist-tag',
  'deprecate',
  'undeprecate',
  'unpublish',
])

const pnpm: Runner = (argv) => {
  const at = skipOptions(argv, 1, {
    short: 'CF',
    long: ['dir', 'filter', 'filter-prod', 'reporter', 'loglevel'],
  })
  const subcommand = argv[at]?.literal?.toLowerCase()
  if (subcommand === undefined) return undefined
  // `pnpm NAME` for a name that is not a pnpm command runs a script or a bin of that name.
  if (subcommand !== 'exec' && subcommand !== 'dlx') {
    return PNPM_SUBCOMMANDS.has(subcommand) ? undefined : { commands: [argv.slice(at)] }
  }
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

const YARN_SUBCOMMANDS = new Set([
  'add',
  'audit',
  'autoclean',
  'bin',
  'cache',
  'check',
  'config',
  'create',
  'generate-lock-entry',
  'global',
  'help',
  'import',
  'info',
  'init',
  'install',
  'licenses',
  'link',
  'list',
  'login',
  'logout',
  'outdated',
  'owner',
  'pack',
  'policies',
  'publish',
  'remove',
  'tag',
  'team',
  'unlink',
  'unplug',
  'upgrade',
  'upgrade-interactive',
  'version',
  'versions',
  'why',
  'workspace',
  'workspaces',
  'up',
  'set',
  'plugin',
  'constraints',
  'explain',
  'npm',
  'patch',
  'patch-commit',
  'rebuild',
  'search',
  'stage',
  'dedupe',
  'test',
])

/** `yarn exec|dlx|run CMD`, and `yarn CMD` for a name that is not a yarn command (a bin or a script). */
const yarn: Runner = (argv) => {
  const at = skipOptions(argv, 1, { long: ['cwd'] })
  const subcommand = argv[at]?.literal?.toLowerCase()
  if (subcommand === undefined) return undefined
  if (subcommand === 'exec' || subcommand === 'dlx' || subcommand === 'run') {
    const rest = argv.slice(at)
    const start = skipOptions(rest, 1, { short: 'p', long: ['package'] })
    const target = rest[start]
    return target === undefined
      ? undefined
      : { commands: [[packageArgument(target), ...rest.slice(start + 1)]] }
  }
  if (YARN_SUBCOMMANDS.has(subcommand)) return undefined
  return { commands: [argv.slice(at)] }
}

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
  if (code !== undefined) return { interpreterCode: [code] }
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

const entr: Runner = (argv) => {
  const start = skipOptions(argv, 1)
  const shellMode = argv.slice(1, start).some((argument) => /^-[A-Za-z]*s/.test(argument.literal ?? ''))
  if (shellMode) return { shellCode: [{ text: joinLoose(argv.slice(start)) }] }
  return { commands: [argv.slice(start)] }
}

const GDB_COMMANDS = new Set([
  '-ex',
  '--ex',
  '-iex',
  '--iex',
  '-eval-command',
  '--eval-command',
  '-init-eval-command',
  '--init-eval-command',
])

/** gdb: `--args PROG …`, `gdb PROG`, and `-ex 'shell CMD'` / `-ex '!CMD'` commands. */
const gdb: Runner = (argv) => {
  const results: RunnerResult[] = []
  for (let index = 1; index < argv.length; index++) {
    const text = argv[index]?.literal ?? ''
    if (text === '--args' || text === '-args') {
      results.push({ commands: [argv.slice(index + 1)] })
      break
    }
    const [name, attached] = splitOnce(text, '=')
    if (GDB_COMMANDS.has(name)) {
      const value = attached ?? argv[index + 1]?.loose ?? ''
      const shellCommand = /^\s*(?:shell\b|!|pipe\b.*?\|)\s*(.*)$/s.exec(value)
      if (shellCommand !== null) results.push({ shellCode: [{ text: shellCommand[1] ?? '' }] })
      if (attached === undefined) index++
    }
  }
  if (results.length === 0) {
    const program = skipOptions(argv, 1, {
      short: 'xpcd',
      long: ['ex', 'command', 'pid', 'core', 'directory', 'cd', 'init-command'],
    })
    const target = argv[program]
    if (target !== undefined) results.push({ scripts: [{ path: target, args: [], kind: 'program' }] })
  }
  return merge(results)
}

const nixShell: Runner = (argv) => {
  const code = findOptionValue(argv, [], ['run', 'command'])
  return code === undefined ? undefined : { shellCode: [{ text: code }] }
}

const nix: Runner = (argv) => {
  const subcommand = argv[1]?.literal
  if (subcommand !== 'shell' && subcommand !== 'develop') return undefined
  const index = argv.findIndex((argument) => argument.literal === '-c' || argument.literal === '--command')
  return index === -1 ? undefined : { commands: [argv.slice(index + 1)] }
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

const entries: [readonly string[], Runner][] = [
  [['env'], env],
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
  [['rustup'], subcommandWrapper(['run'], NO_OPTIONS, 1)],
  [['setlock', 's6-setlock'], wrapper(SETLOCK, 1)],
  [
    [
      'pgrphack',
      'fghack',
      'nocache',
      'catchsegv',
      'nocorrect',
      'noglob',
      'builtin',
      'unbuffer',
      'chronic',
      'ifne',
      'torify',
      'tsocks',
    ],
    wrapper(options('+eEnpv')),
  ],
  [['eatmydata', 'nohup'], wrapper(NOHUP)],
  [['busybox', 'toybox'], wrapper(options('', 'install list list-full help'))],
  [['ccache', 'sccache', 'distcc', 'icecc', 'buildcache'], wrapper(CCACHE)],
  [['time'], wrapper(TIME)],
  [['nice'], wrapper(NICE)],
  [['timeout'], timeout],
  [['stdbuf'], wrapper(STDBUF)],
  [['setsid'], wrapper(SETSID)],
  [['prlimit'], wrapper(PRLIMIT)],
  [
    ['numactl'],
    wrapper(NUMACTL, 0, { runs: (reading) => !hasOption(reading, ['-s', '--show', '-H', '--hardware']) }),
  ],
  [['chrt'], wrapper(CHRT, 1, { runs: (reading) => !hasOption(reading, ['-p', '--pid', '-m', '--max']) })],
  [['taskset'], wrapper(TASKSET, 1, { runs: (reading) => !hasOption(reading, ['-p', '--pid']) })],
  [
    ['ionice'],
    wrapper(IONICE, 0, {
      runs: (reading) => !hasOption(reading, ['-p', '-P', '-u', '--pid', '--pgid', '--uid']),
    }),
  ],
  [['choom'], wrapper(CHOOM, 0, { runs: (reading) => !hasOption(reading, ['-p', '--pid']) })],
  [['cgexec'], wrapper(CGEXEC)],
  [['cpulimit'], wrapper(CPULIMIT)],
  [['trickle'], wrapper(TRICKLE)],
  [['chroot'], wrapper(CHROOT, 1)],
  [['unshare'], wrapper(UNSHARE)],
  [['nsenter'], wrapper(NSENTER)],
  [['bwrap'], bwrap],
  [['firejail'], firejail],
  [['fakeroot', 'fakeroot-ng'], wrapper(FAKEROOT, 0, { programs: ['-f', '--faked'] })],
  [['fakechroot'], wrapper(FAKECHROOT, 0, { programs: ['-d', '--elfloader'] })],
  [['proot'], wrapper(PROOT, 0, { programs: ['-q', '--qemu'] })],
  [['schroot'], wrapper(SCHROOT)],
  [['faketime'], faketime],
  [['systemd-run'], wrapper(SYSTEMD_RUN)],
  [['systemd-inhibit'], wrapper(SYSTEMD_INHIBIT)],
  [['dbus-run-session'], wrapper(DBUS_RUN_SESSION, 0, { programs: ['--dbus-daemon'] })],
  [['dbus-launch'], wrapper(DBUS_LAUNCH)],
  [
    ['setarch', 'linux32', 'linux64', 'i386', 'i686', 'x86_64', 'uname26', 'arm', 'aarch64', 'ppc', 'ppc64'],
    setarch,
  ],
  [['start-stop-daemon'], startStopDaemon],
  [['daemonize'], wrapper(DAEMONIZE)],
  [['ssh-agent'], wrapper(SSH_AGENT)],
  [['sshpass'], wrapper(SSHPASS)],
  [['runcon'], runcon],
  [['exec'], wrapper(options('+a:cl'))],
  [['command'], command],
  [['xargs'], xargs],
  [['hash'], hash],
  [['find'], find],
  [['fd', 'fdfind'], fd],
  [SHELLS, shell],
  [['eval'], evaluate],
  [['.', 'source'], source],
  [['watch'], watch],
  [['flock'], flock],
  [['strace'], wrapper(STRACE)],
  [['ltrace'], wrapper(LTRACE)],
  [['valgrind', 'valgrind.bin'], valgrind],
  [['script'], script],
  [['parallel', 'sem'], parallel],
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
  [['tclsh', 'wish', 'expect'], tcl],
  [['deno'], deno],
  [['awk', 'gawk', 'mawk', 'nawk', 'busybox-awk'], awk],
  [['sed', 'gsed'], sed],
  [['powershell', 'pwsh'], powershell],
  [['cmd'], windowsCommand],
  [['caffeinate'], wrapper(options('disumt:w:'))],
  [['torsocks'], wrapper(options('+u:p:a:P:idqh', 'user= pass= address= port= isolate shell version help'))],
  [['proxychains', 'proxychains4'], wrapper(options('+qf:'))],
  [['rlwrap'], wrapper(options('+aAb:cC:D:e:f:F:g:hH:il:nNm::M:o:O:p::P:q:rRs:S:t:vw:W:z:'))],
  [
    ['xvfb-run'],
    wrapper(
      options(
        '+an:s:e:f:p:w:hl',
        'auto-servernum server-num= server-args= error-file= auth-file= xauth-protocol= wait= help listen-tcp',
      ),
    ),
  ],
  [['screen'], screen],
  [['wsl'], afterDoubleDash([], options('d:u:e', 'distribution= user= cd= exec shell-type= system'))],
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
    subcommandWrapper(['run'], options('', 'with= from= python= env=')),
  ],
  [['uvx'], packageRunner],
  [['pipx'], subcommandWrapper(['run'], options('', 'spec= python='))],
  [['bundle', 'bundler'], subcommandWrapper(['exec'], NO_OPTIONS)],
  [['conda', 'mamba', 'micromamba'], subcommandWrapper(['run'], options('n:p:', 'name= prefix= cwd='))],
  [['mise', 'rtx', 'asdf'], afterDoubleDash(['exec', 'x'], NO_OPTIONS)],
  [['rbenv', 'pyenv', 'nodenv', 'goenv', 'jenv', 'plenv', 'phpenv'], subcommandWrapper(['exec'], NO_OPTIONS)],
  [['direnv'], subcommandWrapper(['exec'], NO_OPTIONS, 1)],
  [
    ['op', 'doppler', 'infisical', 'berglas', 'teller', 'dotenvx'],
    afterDoubleDash(['run', 'exec'], options('', 'env-file= project= config= env=')),
  ],
  [['chamber'], afterDoubleDash(['exec'], NO_OPTIONS, 1)],
  [['aws-vault'], afterDoubleDash(['exec'], NO_OPTIONS, 1)],
  [['dotenv'], afterDoubleDash([], options('e:c:v:p'))],
  [['guix'], afterDoubleDash(['shell', 'environment'], NO_OPTIONS)],
  [['toolbox'], subcommandWrapper(['run'], options('c:r:d:', 'container= release= distro='))],
  [['distrobox'], afterDoubleDash(['enter'], NO_OPTIONS, 1)],
  [['distrobox-enter'], afterDoubleDash([], NO_OPTIONS, 1)],
  [['minijail0', 'nsjail'], afterDoubleDash([], NO_OPTIONS)],
  [
    ['flatpak-spawn'],
    wrapper(
      options(
        '',
        'host watch-bus expose-pids share-pids sandbox no-network clear-env latest-version env= unset-env= forward-fd= directory= sandbox-expose= sandbox-expose-ro= sandbox-flag= app-path= usr-path= verbose help',
      ),
    ),
  ],
  [
    ['gnome-session-inhibit'],
    wrapper(options('', 'app-id= reason= inhibit= inhibit-only list help version')),
  ],
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
  ...TOOL_RUNNERS,
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
