import {
  type Argument,
  type OptionTable,
  options,
  optionsNamed,
  parseArgv,
  textArgument,
} from '../option-parser.js'
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
  wrapper,
} from '../runner-kit.js'

/**
 * Common tools whose options or subcommands name a program or a shell command (issue 11 finding 4):
 * `git -c core.sshCommand=…`, `git rebase --exec`, `tar -I`, `ssh -o ProxyCommand=…`, `rsync -e`,
 * `sort --compress-program`, `rg --pre`, `man -P`, `vim -c '!…'`, `socat EXEC:…`, `nc -e`, terminal
 * emulators' `-e`, benchmark and watch tools that take shell commands as operands.
 */

/** Values of an option anywhere in `args`: `-x V`, `-xV`, `-abx V`, `--name V`, `--name=V`, `--na=V`. */
function findValues(args: readonly Argument[], short: string, long: readonly string[]): Argument[] {
  const values: Argument[] = []
  for (let index = 0; index < args.length; index++) {
    const text = args[index]?.literal
    if (text === undefined) continue
    if (text === '--') break
    if (text.startsWith('--')) {
      const [name, attached] = splitOnce(text.slice(2), '=')
      // parse-options and getopt_long accept unambiguous abbreviations: match prefixes of 3+ letters.
      const fits = long.some((option) => option === name || (name.length >= 3 && option.startsWith(name)))
      if (!fits) continue
      if (attached !== undefined) values.push(textArgument(attached))
      else if (args[index + 1] !== undefined) values.push(args[++index] as Argument)
      continue
    }
    if (short === '' || !/^-[A-Za-z0-9]/.test(text)) continue
    for (let position = 1; position < text.length; position++) {
      if (!short.includes(text[position] as string)) continue
      const rest = text.slice(position + 1)
      if (rest !== '') values.push(textArgument(rest))
      else if (args[index + 1] !== undefined) values.push(args[++index] as Argument)
      break
    }
  }
  return values
}

// ---------------------------------------------------------------------------------------------------
// ssh, scp, sftp, rsync

/** ssh_config keys whose value is a local command (run through the user's shell). */
const SSH_COMMAND_KEYS = /^(?:proxycommand|localcommand|knownhostscommand)$/i

function sshOptionCode(values: readonly Argument[]): ShellCode[] {
  const code: ShellCode[] = []
  for (const value of values) {
    const match = /^\s*([A-Za-z]+)\s*(?:=\s*|\s+)(.*)$/s.exec(value.loose)
    if (match !== null && SSH_COMMAND_KEYS.test(match[1] as string)) code.push({ text: match[2] as string })
  }
  return code
}

const SSH = options('+46AaCfGgKkMNnqsTtVvXxYyB:b:c:D:E:e:F:I:i:J:L:l:m:O:o:P:p:Q:R:S:W:w:')

/** `ssh [options] HOST [CMD…]`: CMD runs on the host (checked as shell code); `-o ProxyCommand=` runs here. */
const ssh = byReading(SSH, (reading, argv) => {
  const shellCode = sshOptionCode(optionsNamed(reading, ['-o']).flatMap((option) => option.values))
  const host = reading.operands[0]
  const rest = host === undefined ? [] : argv.slice(host + 1)
  if (rest.length > 0) shellCode.push({ text: joinLoose(rest) })
  return { shellCode }
})

const SCP = options('346ABCpqrRTvc:D:F:i:J:l:o:P:S:X:', '', { permute: true })
const SFTP = options('46AaCfNpqrvB:b:c:D:F:i:J:l:o:P:R:S:s:X:', '', { permute: true })

/** scp and sftp: `-S PROGRAM` replaces ssh, sftp `-D PATH` runs a local sftp server, `-o ProxyCommand=`. */
function secureCopy(table: OptionTable): Runner {
  return byReading(table, (reading) => ({
    shellCode: sshOptionCode(optionsNamed(reading, ['-o']).flatMap((option) => option.values)),
    commands: optionsNamed(reading, ['-S', '-D']).flatMap((option) =>
      option.values[0] === undefined ? [] : [[option.values[0]]],
    ),
  }))
}

/** rsync `-e CMD` / `--rsh=CMD` runs CMD to reach the remote side. */
const rsync: Runner = (argv) => ({ shellCode: shellCodeOf(findValues(argv.slice(1), 'e', ['rsh'])) })

// ---------------------------------------------------------------------------------------------------
// git

/** Config keys whose value git runs as a command (or hands to a shell). */
const GIT_COMMAND_KEY =
  /^(?:core\.(?:sshcommand|pager|editor|askpass|fsmonitor|gitproxy|hookspath)|sequence\.editor|diff\.external|(?:diff|merge|mergetool|difftool|filter|browser|man|gpg|pager|credential|remote|sendemail|imap|uploadpack|web|gpg)\..+)$/i

function gitConfigCode(key: string, value: string): ShellCode[] {
  if (/^alias\./i.test(key)) return value.startsWith('!') ? [{ text: value.slice(1) }] : []
  if (!GIT_COMMAND_KEY.test(key)) return []
  return [{ text: value.replace(/^!/, '') }]
}

const GIT_GLOBAL = options(
  '+C:c:hpPv',
  'exec-path=? html-path man-path info-path paginate no-pager no-replace-objects no-lazy-fetch ' +
    'no-optional-locks no-advice bare git-dir= work-tree= namespace= super-prefix= config-env= ' +
    'literal-pathspecs glob-pathspecs noglob-pathspecs icase-pathspecs attr-source= list-cmds= ' +
    'version help',
)

const GIT_FILTERS = [
  'env-filter',
  'tree-filter',
  'index-filter',
  'parent-filter',
  'msg-filter',
  'commit-filter',
  'tag-name-filter',
]

/**
 * git: `-c KEY=VALUE` for keys that name commands (`core.sshCommand`, `core.pager`, `alias.x=!cmd`,
 * …), `git config KEY VALUE` for the same keys (the value runs later), `bisect run`, `rebase --exec`,
 * `submodule foreach`, `difftool --extcmd`, `filter-branch --*-filter`, `grep -O`, and the
 * `--upload-pack`/`--receive-pack`/`--exec` programs of transports.
 */
const git = byReading(GIT_GLOBAL, (reading, argv) => {
  const shellCode: ShellCode[] = []
  for (const option of optionsNamed(reading, ['-c'])) {
    const [key, value] = splitOnce(option.values[0]?.loose ?? '', '=')
    if (value !== undefined) shellCode.push(...gitConfigCode(key, value))
  }
  const at = reading.operands[0]
  const subcommand =
    at === undefined ? undefined : gitSubcommand(argv[at]?.literal?.toLowerCase(), argv.slice(at + 1))
  return merge([{ shellCode }, subcommand])
})

function gitSubcommand(subcommand: string | undefined, args: readonly Argument[]): RunnerResult | undefined {
  switch (subcommand) {
    case 'config': {
      const operands = args.filter((argument) => !(argument.literal ?? '').startsWith('-'))
      const start = ['set', 'add'].includes(operands[0]?.literal ?? '') ? 1 : 0
      const key = operands[start]?.loose
      const value = operands[start + 1]?.loose
      return key === undefined || value === undefined ? undefined : { shellCode: gitConfigCode(key, value) }
    }
    case 'bisect': {
      const run = args.findIndex((argument) => argument.literal === 'run')
      return run === -1 ? undefined : { commands: [args.slice(run + 1)] }
    }
    case 'rebase':
      return { shellCode: shellCodeOf(findValues(args, 'x', ['exec'])) }
    case 'submodule': {
      const foreach = args.findIndex((argument) => argument.literal === 'foreach')
      if (foreach === -1) return undefined
      const rest = args
        .slice(foreach + 1)
        .filter((argument) => !/^(?:--recursive|-q|--quiet)$/.test(argument.literal ?? ''))
      return { shellCode: [{ text: joinLoose(rest) }] }
    }
    case 'difftool':
      return { shellCode: shellCodeOf(findValues(args, 'x', ['extcmd'])) }
    case 'filter-branch':
      return { shellCode: shellCodeOf(findValues(args, '', GIT_FILTERS)) }
    case 'grep': {
      // `-O[PAGER]` / `--open-files-in-pager[=PAGER]`: the value is optional and attached.
      const code: ShellCode[] = []
      for (const argument of args) {
        const text = argument.literal ?? ''
        const match = /^(?:-O|--open-files-in-pager=|--open-files-in=|--open-files=)(.+)$/.exec(text)
        if (match !== null) code.push({ text: match[1] as string })
      }
      return { shellCode: code }
    }
    case 'clone':
    case 'fetch':
    case 'pull':
    case 'ls-remote':
    case 'archive':
    case 'push':
    case 'send-pack':
    case 'fetch-pack':
      return {
        shellCode: shellCodeOf(
          findValues(args, subcommand === 'clone' ? 'u' : '', ['upload-pack', 'receive-pack', 'exec']),
        ),
      }
    case 'send-email':
      return {
        shellCode: shellCodeOf(
          findValues(args, '', ['sendmail-cmd', 'to-cmd', 'cc-cmd', 'header-cmd', 'smtp-server']),
        ),
      }
    default:
      return undefined
  }
}

// ---------------------------------------------------------------------------------------------------
// tar, sort, rg, man

/** GNU tar old-style letters (`tar czIf PROG out.tgz`) that take the next operand as their value. */
const TAR_OLD_STYLE_VALUES = 'bfFgIKLNTVXC'

/** tar: `-I PROG`, `--use-compress-program`, `--to-command`, `--checkpoint-action=exec=`, `-F`, … */
const tar: Runner = (argv) => {
  const args = argv.slice(1)
  const code: Argument[] = []
  const first = args[0]?.literal
  if (first !== undefined && !first.startsWith('-') && /^[A-Za-z]+$/.test(first)) {
    let next = 1
    for (const letter of first) {
      if (!TAR_OLD_STYLE_VALUES.includes(letter)) continue
      const value = args[next++]
      if ((letter === 'I' || letter === 'F') && value !== undefined) code.push(value)
    }
  }
  code.push(
    ...findValues(args, 'IF', [
      'use-compress-program',
      'to-command',
      'info-script',
      'new-volume-script',
      'rsh-command',
      'rmt-command',
    ]),
  )
  for (const value of findValues(args, '', ['checkpoint-action'])) {
    const match = /^exec=(.*)$/s.exec(value.loose)
    if (match !== null) code.push(textArgument(match[1] as string))
  }
  return { shellCode: shellCodeOf(code) }
}

const sort: Runner = (argv) => ({
  commands: findValues(argv.slice(1), '', ['compress-program']).map((value) => [value]),
})

const ripgrep: Runner = (argv) => ({
  commands: findValues(argv.slice(1), '', ['pre', 'hostname-bin']).map((value) => [value]),
})

/** man: `-P PAGER` / `--pager=PAGER` and `-H[BROWSER]` / `--html[=BROWSER]` run through a shell. */
const man: Runner = (argv) => {
  const code = shellCodeOf(findValues(argv.slice(1), 'P', ['pager']))
  for (const argument of argv.slice(1)) {
    const match = /^(?:-H|--html=)(.+)$/.exec(argument.literal ?? '')
    if (match !== null) code.push({ text: match[1] as string })
  }
  return { shellCode: code }
}

// ---------------------------------------------------------------------------------------------------
// Editors and debuggers with command options

/** vim commands that run programs: `:!cmd`, `:r !cmd`, `:w !cmd`, and calls such as `system(…)`. */
function vimCommand(value: Argument): RunnerResult {
  const text = value.loose
  const bang = text.indexOf('!')
  const result: RunnerResult = bang === -1 ? {} : { shellCode: [{ text: text.slice(bang + 1) }] }
  if (/\b(?:system|systemlist|jobstart|termopen|term|terminal|call|py3?|python3?|lua|perl|ruby)\b/.test(text))
    return { ...result, interpreterCode: [text] }
  return result
}

/** vim, vi, nvim, ex, view: `-c CMD`, `+CMD`, `--cmd CMD`. */
const vim: Runner = (argv) => {
  const results: RunnerResult[] = []
  for (let index = 1; index < argv.length; index++) {
    const argument = argv[index] as Argument
    const text = argument.literal ?? argument.loose
    if (text === '--') break
    if ((text === '-c' || text === '--cmd') && argv[index + 1] !== undefined) {
      results.push(vimCommand(argv[++index] as Argument))
    } else if (text.startsWith('+') && text.length > 1) {
      results.push(vimCommand({ ...argument, loose: argument.loose.slice(1) }))
    }
  }
  return merge(results)
}

/** emacs `--eval EXPR` / `-eval` / `--execute`: Lisp, checked like other interpreter code. */
const emacs: Runner = (argv) => {
  const code: string[] = []
  for (let index = 1; index < argv.length; index++) {
    const match = /^--?(?:eval|execute)(?:=(.*))?$/s.exec(argv[index]?.literal ?? '')
    if (match === null) continue
    const value = match[1] ?? argv[++index]?.loose
    if (value !== undefined) code.push(value)
  }
  return { interpreterCode: code }
}

const LLDB = options(
  'f:o:O:k:K:s:S:a:p:n:c:x:bwXvhPQ',
  'file= one-line= one-line-before-file= one-line-on-crash= source= source-before-file= ' +
    'source-on-crash= arch= attach-pid= attach-name= core= batch wait-for no-lldbinit local-lldbinit ' +
    'version help print-script-interpreter-info source-quietly',
)

const lldb = wrapper(LLDB, 0, { programs: ['-f', '--file'] })

const PERF_SUBCOMMANDS = new Set([
  'record',
  'stat',
  'trace',
  'mem',
  'c2c',
  'sched',
  'lock',
  'kvm',
  'timechart',
  'kmem',
  'ftrace',
  'iostat',
])
const PERF = options(
  'e:o:p:t:u:c:F:C:m:G:r:I:x:D:j:b:k:aAdgiInNqsTvwR',
  'event= output= pid= tid= uid= count= freq= cpu= mmap-pages= cgroup= realtime= interval-print= ' +
    'field-separator= delay= branch-filter= clockid= call-graph= repeat= all-cpus append quiet verbose',
)

/** `perf record|stat|trace … [--] CMD`. */
const perf: Runner = (argv) => {
  let at = 1
  while (at < argv.length && (argv[at]?.literal ?? '').startsWith('-')) at++
  const subcommand = argv[at]?.literal
  if (subcommand === undefined || !PERF_SUBCOMMANDS.has(subcommand)) return undefined
  let rest = argv.slice(at)
  // `perf mem record …`, `perf c2c record …`
  if (rest[1]?.literal === 'record') rest = rest.slice(1)
  return { commands: commandsAt(rest, parseArgv(rest, PERF)) }
}

// ---------------------------------------------------------------------------------------------------
// Network tools that run programs

/** socat `EXEC:cmd args,opts` and `SYSTEM:shell cmd,opts` addresses. */
const socat: Runner = (argv) => {
  const code: ShellCode[] = []
  for (const argument of argv.slice(1)) {
    for (const address of argument.loose.split('!!')) {
      const match = /^(?:EXEC|SYSTEM):(.*)$/is.exec(address)
      if (match === null) continue
      // Address options follow the command after a comma: `EXEC:'lango cron',pty,stderr`.
      code.push({ text: (match[1] as string).split(',')[0] ?? '' })
    }
  }
  return { shellCode: code }
}

/** nc, ncat, netcat: `-e PROG` / `--exec` runs PROG, `-c CMD` / `--sh-exec` runs CMD through sh. */
const netcat: Runner = (argv) => {
  const args = argv.slice(1)
  return {
    shellCode: shellCodeOf([...findValues(args, 'ec', ['exec', 'sh-exec', 'lua-exec'])]),
  }
}

// ---------------------------------------------------------------------------------------------------
// Terminal emulators

/** xterm-style `-e PROG ARGS…` (the rest of the line) and gnome-terminal-style `-- PROG ARGS…`. */
const terminal: Runner = (argv) => {
  for (let index = 1; index < argv.length; index++) {
    const text = argv[index]?.literal ?? ''
    if (text === '-e' || text === '--command' || text === '-x' || text === '--execute' || text === '--') {
      const rest = argv.slice(index + 1)
      // gnome-terminal and xfce4-terminal take one string for `-e`; xterm takes the rest of the line.
      return rest.length === 1 ? { shellCode: shellCodeOf(rest) } : { commands: [rest] }
    }
    const match = /^(?:--command|--execute|-e)=(.+)$/s.exec(text)
    if (match !== null) return { shellCode: [{ text: match[1] as string }] }
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------------
// Tools that take shell commands as operands

const HYPERFINE = options(
  'w:r:m:M:p:c:s:P:D:L:S:ihNu:n:',
  'warmup= runs= min-runs= max-runs= prepare= conclude= cleanup= setup= parameter-scan=3 ' +
    'parameter-step-size= parameter-list=2 shell= ignore-failure style= sort= time-unit= ' +
    'export-asciidoc= export-csv= export-json= export-markdown= export-orgmode= show-output output= ' +
    'input= command-name= help version',
  { permute: true },
)

/** hyperfine: every operand, and the `--prepare`, `--setup`, `--cleanup`, `--conclude` values, are shell commands. */
const hyperfine = byReading(HYPERFINE, (reading, argv) => ({
  shellCode: shellCodeOf([
    ...reading.operands.map((index) => argv[index]),
    ...optionsNamed(reading, ['-p', '--prepare', '-c', '--cleanup', '-s', '--setup', '--conclude']).map(
      (option) => option.values[0],
    ),
  ]),
}))

/** Every operand is a shell command (`concurrently`, moreutils `pee` and `mispipe`). */
function operandsAsShell(table: OptionTable): Runner {
  return byReading(table, (reading, argv) => ({
    shellCode: shellCodeOf(reading.operands.map((index) => argv[index])),
  }))
}

const CONCURRENTLY = options(
  'n:c:p:kl:t:s:rmiP',
  'names= name-separator= prefix-colors= prefix= prefix-length= timestamp-format= kill-others ' +
    'kill-others-on-fail kill-signal= success= raw max-processes= restart-tries= restart-after= ' +
    'handle-input default-input-target= hide= group no-color passthrough-arguments cwd= help version',
  { permute: true },
)

const WATCHEXEC = options(
  'w:W:e:f:i:d:s:E:pcrnNoqvhV',
  'watch= watch-non-recursive= exts= filter= ignore= debounce= signal= stop-signal= stop-timeout= ' +
    'env= shell= workdir= project-origin= on-busy-update= poll=? delay-run= postpone clear restart ' +
    'no-vcs-ignore no-project-ignore no-global-ignore no-default-ignore no-discover-ignore notify ' +
    'emit-events-to= print-events manual quiet verbose help version wrap-process= timings bell color=',
)

/** watchexec `[options] [--] COMMAND…`: the words run through a shell. */
const watchexec = byReading(WATCHEXEC, (reading, argv) => {
  const start = reading.operands[0]
  return start === undefined ? undefined : { shellCode: [{ text: joinLoose(argv.slice(start)) }] }
})

const NODEMON = options(
  'x:w:e:i:V:d:C:I:qvhLs',
  'exec= watch= ext= ignore= delay= config= signal= spawn exitcrash legacy-watch polling-interval= ' +
    'no-colors no-stdin quiet verbose help version on-change-only cwd=',
  { permute: true },
)

/** nodemon: `--exec CMD` is a shell command; otherwise the script runs with node. */
const nodemon = byReading(NODEMON, (reading, argv) => {
  const exec = optionsNamed(reading, ['-x', '--exec']).map((option) => option.values[0])
  const script = reading.operands[0]
  if (exec.length > 0 || script === undefined) return { shellCode: shellCodeOf(exec) }
  return { scripts: [{ path: argv[script] as Argument, args: argv.slice(script + 1), kind: 'code' }] }
})

/** `sops exec-env FILE CMD` and `sops exec-file FILE CMD`: CMD is shell code. */
const sops: Runner = (argv) => {
  const at = argv.findIndex((argument) => argument.literal === 'exec-env' || argument.literal === 'exec-file')
  if (at === -1) return undefined
  const operands = argv.slice(at + 1).filter((argument) => !(argument.literal ?? '').startsWith('-'))
  return { shellCode: shellCodeOf([operands[1]]) }
}

const MACHINECTL_SHELL = options('qE:', 'uid= setenv= quiet')

/** `machinectl shell [options] [[USER@]NAME [CMD…]]`. */
const machinectl: Runner = (argv) => {
  const at = argv.findIndex((argument) => argument.literal === 'shell')
  if (at === -1) return undefined
  const rest = argv.slice(at)
  return { commands: commandsAt(rest, parseArgv(rest, MACHINECTL_SHELL), 1) }
}

const DETACHER = options('e:Er:zfrlpq')

/** dtach `-c|-A|-n|-N SOCKET [options] CMD…`; abduco `[options] -c|-A|-n NAME CMD…`. */
const detacher: Runner = (argv) => {
  const mode = argv.findIndex((argument, index) => index > 0 && /^-[cAnN]$/.test(argument.literal ?? ''))
  if (mode === -1) return undefined
  const rest = argv.slice(mode + 1)
  return { commands: commandsAt(rest, parseArgv(rest, DETACHER)) }
}

const HEAPTRACK = options('o:p:a:dDhvr', 'output= pid= analyze debug use-inject raw record-only help version')

const RR_RECORD = options('nb:c:e:', 'no-syscall-buffer env= output-trace-dir=')

/** `rr record [options] CMD…`. */
const rr: Runner = (argv) => {
  if (argv[1]?.literal !== 'record') return undefined
  const rest = argv.slice(1)
  return { commands: commandsAt(rest, parseArgv(rest, RR_RECORD)) }
}

const UFTRACE = options('F:N:T:D:t:d:s:', 'filter= notrace= trigger= depth= time-filter= data= sort=')

/** `uftrace [record|live] [options] CMD…`. */
const uftrace: Runner = (argv) => {
  const rest = /^(?:record|live)$/.test(argv[1]?.literal ?? '') ? argv.slice(1) : argv
  return { commands: commandsAt(rest, parseArgv(rest, UFTRACE)) }
}

/** Runners for the tools above, by program name. */
export const TOOL_RUNNERS: readonly [readonly string[], Runner][] = [
  [['ssh'], ssh],
  [['scp'], secureCopy(SCP)],
  [['sftp'], secureCopy(SFTP)],
  [['rsync'], rsync],
  [['git'], git],
  [['tar', 'gtar', 'bsdtar'], tar],
  [['sort', 'gsort'], sort],
  [['rg', 'ripgrep'], ripgrep],
  [['man'], man],
  [['vim', 'vi', 'nvim', 'ex', 'view', 'gvim', 'vimdiff', 'rvim', 'evim'], vim],
  [['emacs', 'emacsclient'], emacs],
  [['lldb'], lldb],
  [['perf'], perf],
  [['heaptrack'], wrapper(HEAPTRACK)],
  [['rr'], rr],
  [['uftrace'], uftrace],
  [['socat'], socat],
  [['nc', 'ncat', 'netcat', 'nc.traditional', 'nc.openbsd'], netcat],
  [
    [
      'xterm',
      'uxterm',
      'rxvt',
      'urxvt',
      'st',
      'alacritty',
      'konsole',
      'tilix',
      'x-terminal-emulator',
      'gnome-terminal',
      'mate-terminal',
      'xfce4-terminal',
      'terminator',
      'lxterminal',
      'qterminal',
      'sakura',
      'terminology',
      'kitty',
      'foot',
    ],
    terminal,
  ],
  [['hyperfine'], hyperfine],
  [['concurrently'], operandsAsShell(CONCURRENTLY)],
  [['pee', 'mispipe'], operandsAsShell(NO_OPTIONS)],
  [['watchexec'], watchexec],
  [['nodemon'], nodemon],
  [['sops'], sops],
  [['machinectl'], machinectl],
  [['dtach', 'abduco'], detacher],
  [['wezterm'], afterDoubleDash(['start'], NO_OPTIONS)],
]
