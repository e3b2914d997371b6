import { spawn } from 'node:child_process'
import { readlinkSync, statSync, writeSync } from 'node:fs'
import { Socket } from 'node:net'
import { constants } from 'node:os'
import { closeInheritedDescriptors } from '@lango/exec'
import {
  credentialsIn,
  nodeEnvProxyOn,
  PROXY_VARIABLE,
  secretsIn,
  setGlobalProxyFromEnv,
} from '../config/environment-credentials.js'
import { DESCRIPTOR_PATH, readSecretFile, SECRET_VARIABLES } from '../config/secret-sources.js'

/**
 * Secrets given in the environment never stay where the commands a server runs can read them
 * (issue 21; SECURITY.md SEC-4). `/proc/<pid>/environ` of a process is the block it was started
 * with, readable by every process of the same user, and deleting a variable does not erase it; a
 * command that walks up its ancestors would find `LANGO_API_TOKEN` in the server's. So when
 * `lango serve`, `lango mcp` or `lango workflow run --local` finds a secret in its environment, it
 * becomes a small supervisor instead of the server:
 *
 * 1. it starts a short-lived launcher with the environment minus every secret variable; the
 *    launcher starts the real server in a session of its own and exits at once, so the server is
 *    re-parented (to init or the nearest subreaper) and the supervisor is not its ancestor;
 * 2. it hands the secrets over a socket pair on fd 3, which the server reads before anything else;
 * 3. it stays in the foreground: it passes SIGINT, SIGTERM and SIGHUP on as a stop (the second one
 *    as "exit now"), and exits with the server's exit code. If the supervisor dies, the server sees
 *    the socket close and stops too; stdin, stdout and stderr are the server's own (MCP over stdio
 *    works through it).
 *
 * The same holds for other tools' credentials the operator's environment carries
 * (`AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`, `PGPASSWORD`, a proxy URL with a password: `@lango/exec`'s
 * `isCredentialEnv`): the server's commands never inherit them, and they are handed over too, so
 * that the server's block does not hold them either. The server sets them in its `process.env`
 * (libraries such as `pg` read them there), which changes its environment in memory and not the
 * block `/proc/<pid>/environ` shows.
 *
 * Secrets given as `*_FILE` or systemd credentials never enter an environment, and then there is
 * no supervisor. What this cannot do: pid 1 (a container's init) is every orphan's parent, so in a
 * container give secrets as files; and root can read anything (README, Security).
 */

/** Set in the real server's environment: the fd of the socket to its supervisor. */
const HANDOVER_VARIABLE = 'LANGO_HANDOVER_FD'
const HANDOVER_FD = 3

/** The launcher: starts the server detached with fds 0–3 and exits, leaving it to be re-parented. */
const LAUNCHER = `
const { spawn } = require('node:child_process')
const [file, ...args] = JSON.parse(process.argv[1])
const child = spawn(file, args, { detached: true, stdio: ['inherit', 'inherit', 'inherit', 'inherit'] })
child.once('spawn', () => process.exit(0))
child.once('error', (error) => { process.stderr.write('lango: cannot start the server: ' + error.message + '\\n'); process.exit(1) })
`

/** Messages on the socket, one JSON object per line. */
type Message =
  | {
      readonly type: 'secrets'
      /** lango's own secret variables: the configuration reads them, never `process.env`. */
      readonly env: Readonly<Record<string, string>>
      /** Other tools' credentials: set in the server's `process.env`. */
      readonly inherited?: Readonly<Record<string, string>>
    }
  | { readonly type: 'stop'; readonly signal: NodeJS.Signals }
  | { readonly type: 'exit-now'; readonly signal?: NodeJS.Signals }
  | { readonly type: 'exit'; readonly code: number }

/** Whether `argv` (after `lango`) is a command whose process runs other commands. */
function runsCommands(argv: readonly string[]): boolean {
  const words: string[] = []
  for (let index = 0; index < argv.length; index++) {
    const word = argv[index] as string
    if (word === '--url') index++
    else if (!word.startsWith('-')) words.push(word)
  }
  const [command, subcommand] = words
  return (
    command === 'serve' ||
    command === 'mcp' ||
    (command === 'workflow' && subcommand === 'run' && argv.includes('--local'))
  )
}

/**
 * The environment a `lango` invocation reads its configuration from; a command that runs commands
 * first closes the descriptors it inherited (`@lango/exec`'s `closeInheritedDescriptors`). In the real server started by
 * a supervisor: this process's environment plus the secrets read from the socket (never written to
 * `process.env`). In a command that runs commands and was given secrets in its environment (not as
 * pid 1): becomes the supervisor and never resolves (the process exits with the server). Otherwise:
 * `process.env`.
 */
export async function environmentWithSecrets(argv: readonly string[]): Promise<NodeJS.ProcessEnv> {
  const handedOver = process.env[HANDOVER_VARIABLE] === String(HANDOVER_FD)
  // A descriptor this process inherited open (a job runner's pipe, `lango serve 20</run/secret`) would
  // otherwise reach every command it runs: closed first, the handover socket excepted.
  if (handedOver || runsCommands(argv)) {
    nameDescriptorFiles(process.env)
    closeInheritedDescriptors(handedOver ? [HANDOVER_FD] : [])
  }
  if (handedOver) return receiveSecrets()
  const secrets = secretsIn(process.env)
  const credentials = credentialsIn(process.env)
  const found = Object.keys(secrets).length + Object.keys(credentials).length
  if (!runsCommands(argv) || found === 0 || process.pid === 1) return process.env
  return supervise(argv, secrets, credentials)
}

/**
 * A `<VARIABLE>_FILE` that names a descriptor this process inherited (`lango serve 20</run/secret`
 * with `LANGO_API_TOKEN_FILE=/dev/fd/20`) would name nothing once inherited descriptors are closed.
 * For lango's own secret variables the secret is read from the descriptor now (a regular file of at
 * most 64 KiB, one trailing newline dropped, as the configuration reads a `_FILE`; a deleted file
 * too) and kept in `env` (memory, not the environment block: a supervisor hands it over like a
 * secret given in the environment). Another tool's `_FILE` is pointed at the file's path. A
 * descriptor on anything else (a pipe, as bash's `<(…)` gives) is left as it is, and the
 * configuration says it cannot be read.
 */
function nameDescriptorFiles(env: NodeJS.ProcessEnv): void {
  const own = new Set<string>(SECRET_VARIABLES)
  for (const [variable, value] of Object.entries(env)) {
    if (!variable.endsWith('_FILE') || value === undefined || !DESCRIPTOR_PATH.test(value)) continue
    const secret = variable.slice(0, -'_FILE'.length)
    try {
      // A file's descriptor links to its path (`/run/secret`, `/tmp/x (deleted)`); a pipe's or a
      // socket's to `pipe:[…]`, `socket:[…]`, which are not statted.
      const target = readlinkSync(value)
      if (!target.startsWith('/') || !statSync(value).isFile()) continue
      if (own.has(secret)) {
        if ((env[secret] ?? '') !== '') continue
        // As the configuration reads a `_FILE` (its size limit, one trailing newline dropped);
        // a problem is left for the configuration to report on the descriptor's path.
        const text = readSecretFile(value, variable, [])
        if (text === undefined) continue
        env[secret] = text
        delete env[variable]
      } else if (statSync(target).isFile()) env[variable] = target
    } catch {
      // Not open, or on something without a path: left for the configuration to report.
    }
  }
}

/** The real server's side: reads the secrets, then follows the supervisor (stop, exit now, gone). */
async function receiveSecrets(): Promise<NodeJS.ProcessEnv> {
  delete process.env[HANDOVER_VARIABLE]
  const socket = new Socket({ fd: HANDOVER_FD, readable: true, writable: true })
  const send = (message: Message): void => {
    try {
      // Synchronous: the last one is written from the 'exit' event.
      writeSync(HANDOVER_FD, `${JSON.stringify(message)}\n`)
    } catch {
      // The supervisor is gone.
    }
  }
  process.once('exit', (code) => send({ type: 'exit', code }))
  let stopping = false
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return
    stopping = true
    // The handlers the command installed (serve, mcp) stop it as for a signal sent to it directly.
    process.kill(process.pid, signal)
  }
  const secrets = await new Promise<Record<string, string>>((resolve, reject) => {
    let buffered = ''
    let received: Record<string, string> | undefined
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      buffered += chunk
      for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
        const line = buffered.slice(0, end)
        buffered = buffered.slice(end + 1)
        const message = parseMessage(line)
        if (message?.type === 'secrets' && received === undefined) {
          received = { ...message.env }
          const inherited = Object.entries(message.inherited ?? {})
          for (const [variable, value] of inherited)
            if (typeof value === 'string') process.env[variable] = value
          // Node read its proxy settings at start, before the proxy URL was here: apply them now.
          if (
            nodeEnvProxyOn(process.env) &&
            typeof setGlobalProxyFromEnv === 'function' &&
            inherited.some(([variable]) => PROXY_VARIABLE.test(variable))
          )
            setGlobalProxyFromEnv()
          resolve(received)
        } else if (message?.type === 'stop') stop(message.signal)
        else if (message?.type === 'exit-now')
          process.exit(128 + (constants.signals[message.signal ?? 'SIGINT'] ?? 2))
      }
    })
    // The supervisor died (or was killed): stop as for SIGTERM.
    socket.once('close', () => {
      if (received === undefined)
        reject(new Error('the lango supervisor closed before handing over the secrets'))
      else stop('SIGTERM')
    })
    socket.once('error', () => {})
  })
  // Never the reason this process stays alive.
  socket.unref()
  return { ...process.env, ...secrets }
}

/** The supervisor's side: starts the server as described above and exits with its exit code. */
function supervise(
  argv: readonly string[],
  secrets: Record<string, string>,
  credentials: Record<string, string>,
): Promise<never> {
  const env: NodeJS.ProcessEnv = { ...process.env, [HANDOVER_VARIABLE]: String(HANDOVER_FD) }
  for (const variable of [...Object.keys(secrets), ...Object.keys(credentials)]) delete env[variable]
  const server = [process.execPath, ...process.execArgv, process.argv[1] as string, ...argv]
  const launcher = spawn(process.execPath, ['-e', LAUNCHER, JSON.stringify(server)], {
    env,
    stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
  })
  const socket = launcher.stdio[HANDOVER_FD] as Socket
  socket.write(
    `${JSON.stringify({ type: 'secrets', env: secrets, inherited: credentials } satisfies Message)}\n`,
  )
  let exitCode: number | undefined
  let lastSignal: NodeJS.Signals | undefined
  let buffered = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => {
    buffered += chunk
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const message = parseMessage(buffered.slice(0, end))
      buffered = buffered.slice(end + 1)
      if (message?.type === 'exit') exitCode = message.code
    }
  })
  socket.once('error', () => {})
  launcher.once('exit', (code) => {
    // The launcher failed before the server started: nothing else will close the socket.
    if (code !== 0) process.exit(code ?? 1)
  })
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => {
      const again = lastSignal !== undefined
      lastSignal = signal
      if (socket.destroyed) process.exit(128 + constants.signals[signal])
      socket.write(
        `${JSON.stringify((again ? { type: 'exit-now', signal } : { type: 'stop', signal }) satisfies Message)}\n`,
      )
    })
  return new Promise<never>(() => {
    socket.once('close', () => {
      if (exitCode === undefined) {
        process.stderr.write('lango: the server ended without an exit status (killed?)\n')
        process.exit(lastSignal === undefined ? 1 : 128 + constants.signals[lastSignal])
      }
      process.exit(exitCode)
    })
  })
}

function parseMessage(line: string): Message | undefined {
  try {
    const value = JSON.parse(line) as Message
    return typeof value === 'object' && value !== null && typeof value.type === 'string' ? value : undefined
  } catch {
    return undefined
  }
}
