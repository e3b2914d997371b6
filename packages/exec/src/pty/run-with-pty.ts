import { constants } from 'node:os'
import { ExecError } from '../errors.js'
import { refuseUnknownKeys } from '../option-keys.js'
import { type PtyDriver, type PtyProcess, silentLogger } from '../ports.js'
import { GroupSupervisor } from '../process-group.js'
import { streamRedactorFor } from '../redact.js'
import { HeadTailCapture } from '../ring-buffer.js'
import {
  checkOutputBytes,
  checkSignal,
  checkTimeout,
  DEFAULT_KILL_GRACE_MS,
  DEFAULT_TIMEOUT_MS,
  describeOutcome,
  prepareLimited,
  RUN_OPTION_KEYS,
  type RunOptions,
  type RunResult,
} from '../run.js'
import { nodePtyDriver } from './node-pty-driver.js'

/** Options for {@link runWithPty}. */
export interface PtyRunOptions extends Omit<RunOptions, 'input'> {
  /** Terminal width (default 120). */
  readonly cols?: number
  /** Terminal height (default 30). */
  readonly rows?: number
  /** Remove ANSI escape sequences from the output (default false: kept for rendering). */
  readonly stripAnsi?: boolean
  /** Text typed into the terminal right after start (for example answers to prompts). */
  readonly input?: string
  /** Defaults to {@link nodePtyDriver}. */
  readonly driver?: PtyDriver
}

/** A PTY run's result: like {@link RunResult}, with terminal output in `stdout` and `stderr` empty. */
export type PtyRunResult = RunResult

/** The keys {@link runWithPty} accepts; any other fails with `EXEC_INVALID_OPTION` naming it. */
const checkPtyRunKeys = refuseUnknownKeys('runWithPty options', [
  ...RUN_OPTION_KEYS,
  'cols',
  'rows',
  'driver',
])

function checkSize(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isInteger(value) || value < 1 || value > 1000)
    throw new ExecError('EXEC_INVALID_OPTION', `${name} must be an integer from 1 to 1000`)
  return value
}

let defaultDriver: PtyDriver | undefined

function sharedDriver(): PtyDriver {
  if (defaultDriver === undefined) defaultDriver = nodePtyDriver()
  return defaultDriver
}

/**
 * Runs `command` on a pseudo-terminal, for programs that behave differently (or prompt) when
 * attached to a terminal. Same environment, secret, timeout and process-group rules as `run`;
 * the output is never cut short at exit.
 * @example
 * const result = await runWithPty('ls --color=always', { stripAnsi: true })
 */
export async function runWithPty(command: string, options: PtyRunOptions = {}): Promise<PtyRunResult> {
  checkPtyRunKeys(options)
  checkSignal(options.signal)
  const timeoutMs = checkTimeout(options.timeoutMs, 'timeoutMs', DEFAULT_TIMEOUT_MS)
  const graceMs = checkTimeout(options.killGraceMs, 'killGraceMs', DEFAULT_KILL_GRACE_MS)
  const cols = checkSize(options.cols, 'cols', 120)
  const rows = checkSize(options.rows, 'rows', 30)
  const maxOutputBytes = checkOutputBytes(options.maxOutputBytes)
  const logger = options.logger ?? silentLogger
  const driver = options.driver ?? sharedDriver()
  options.signal?.throwIfAborted()
  const prepared = await prepareLimited(command, { ...options, pty: true })
  const startedAt = performance.now()
  let terminal: PtyProcess
  try {
    options.signal?.throwIfAborted()
    terminal = driver.spawn(prepared.shell, prepared.args, {
      cwd: prepared.cwd,
      env: prepared.env,
      cols,
      rows,
    })
  } catch (error) {
    prepared.release()
    throw error
  }
  const pid = terminal.pid
  const capture = new HeadTailCapture(maxOutputBytes)
  // Masking and stripping read the stream as a terminal shows it, across chunk boundaries.
  const redactor = streamRedactorFor(prepared.redactor, { stripAnsi: options.stripAnsi })
  terminal.onData((data) => {
    const safe = redactor === undefined ? data : redactor.push(data)
    if (safe.length > 0) capture.push(Buffer.from(safe, 'utf8'))
  })
  if (options.input !== undefined) terminal.write(options.input)

  return new Promise<PtyRunResult>((resolve) => {
    const supervisor = new GroupSupervisor(pid, {
      marker: prepared.marker,
      timeoutMs,
      graceMs,
      signal: options.signal,
    })
    terminal.onExit(({ exitCode, signal }) => {
      supervisor.finish()
      prepared.release()
      const { timedOut, isCanceled } = supervisor
      if (redactor !== undefined) {
        const rest = redactor.flush()
        if (rest.length > 0) capture.push(Buffer.from(rest, 'utf8'))
      }
      const { text, truncated } = capture.text()
      const signalName = signal === null ? null : signalNameOf(signal)
      const code = signal === null ? exitCode : null
      const durationMs = performance.now() - startedAt
      logger.debug('exec:pty:end', { command, exitCode: code, timedOut, isCanceled, durationMs })
      resolve({
        command,
        exitCode: code,
        signal: signalName,
        stdout: text,
        stderr: '',
        timedOut,
        isCanceled,
        ok: code === 0 && !timedOut && !isCanceled,
        durationMs,
        truncated,
        message: prepared.redactor.redact(
          describeOutcome(command, { exitCode: code, signal: signalName, timedOut, isCanceled, timeoutMs }),
        ),
      })
    })
  })
}

function signalNameOf(signal: number): NodeJS.Signals {
  for (const [name, number] of Object.entries(constants.signals))
    if (number === signal) return name as NodeJS.Signals
  return 'SIGKILL'
}
