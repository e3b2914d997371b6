import { type Argument, hasOption, options, optionsNamed, optionValue, parseArgv } from '../option-parser.js'
import {
  afterDoubleDash,
  byReading,
  commandsAt,
  joinLoose,
  merge,
  NO_OPTIONS,
  type Runner,
  type RunnerResult,
  shellCodeOf,
  splitOnce,
  subcommandWrapper,
  wrapper,
} from '../runner-kit.js'
import { skipOptions } from './option-scan.js'

/**
 * Programs that run the rest of their argv with changed scheduling, resources, namespaces or
 * sandboxes (`nice`, `timeout`, `unshare`, `bwrap`, `firejail`, `systemd-run`, …), repeaters, lockers and
 * recorders (`watch`, `flock`, `script`, `entr`), tracers and debuggers (`strace`, `valgrind`, `gdb`), and
 * other one-word wrappers (`torsocks`, `xvfb-run`, `flatpak-spawn`, …).
 */

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

export const WRAPPER_RUNNERS: readonly [readonly string[], Runner][] = [
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
  [['watch'], watch],
  [['flock'], flock],
  [['strace'], wrapper(STRACE)],
  [['ltrace'], wrapper(LTRACE)],
  [['valgrind', 'valgrind.bin'], valgrind],
  [['script'], script],
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
  [['wsl'], afterDoubleDash([], options('d:u:e', 'distribution= user= cd= exec shell-type= system'))],
  [['entr'], entr],
  [['gdb'], gdb],
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
]
