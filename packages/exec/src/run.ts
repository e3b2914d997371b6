import { type ChildProcess, spawn } from 'node:child_process'
import { StringDecoder } from 'node:string_decoder'
import { ExecError, spawnFailed } from './errors.js'
import type { RunLimiter } from './limiter.js'
import { refuseUnknownKeys } from './option-keys.js'
import { type Logger, silentLogger } from './ports.js'
import { type PreparedSpawn, prepareSpawn, SPAWN_OPTION_KEYS, type SpawnOptions } from './prepare.js'
import { GroupSupervisor, releasePipes } from './process-group.js'
import { type Redactor, type StreamRedactor, streamRedactorFor } from './redact.js'
import { HeadTailCapture } from './ring-buffer.js'

/** Default and bounds shared by `run` and `runWithPty`. */
export const DEFAULT_TIMEOUT_MS = 30_000
export const DEFAULT_KILL_GRACE_MS = 2_000
const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024

/** Options for {@link run}. */
export interface RunOptions extends SpawnOptions {
  /**
   * Remove ANSI escape sequences from `stdout` and `stderr` (default false), as `runWithPty` does:
   * for a program that colours its output whatever it writes to (`ls --color=always`).
   */
  readonly stripAnsi?: boolean
  /** Kill the whole process group after this long (default 30 s). */
  readonly timeoutMs?: number
  /** Time between SIGTERM and SIGKILL of the process group (default 2 s). */
  readonly killGraceMs?: number
  /**
   * Aborting kills the process group; the result then has `isCanceled: true`. A signal already
   * aborted at the call (or while it waits for a `limiter` slot) rejects with `signal.reason`,
   * unchanged, and nothing is spawned.
   */
  readonly signal?: AbortSignal
  /** Bytes kept per stream: the first and last halves; the middle is counted and dropped (default 1 MiB). */
  readonly maxOutputBytes?: number
  /** Text written to the child's stdin; without it stdin is `/dev/null`. */
  readonly input?: string
  readonly logger?: Logger
  /** Bounds concurrent runs: the call takes a slot first, waits or fails when none is free. */
  readonly limiter?: RunLimiter
}

/** The outcome of a command. `run` never throws for a failing command; read the flags. */
export interface RunResult {
  /** The command as given, with reference tokens unresolved. */
  readonly command: string
  /** Exit code, or `null` when the shell was killed by a signal. */
  readonly exitCode: number | null
  /** The signal that ended the shell, if any. */
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
  readonly timedOut: boolean
  readonly isCanceled: boolean
  /** True when the shell exited 0 and was neither timed out nor canceled. */
  readonly ok: boolean
  readonly durationMs: number
  /** True when either stream exceeded `maxOutputBytes` and its middle was dropped. */
  readonly truncated: boolean
  /** A one-line account of what happened, for an agent or a log (never contains secret values). */
  readonly message: string
}

/**
 * Takes a slot of `options.limiter`, if any, then prepares the spawn; the returned `release` also
 * gives the slot back. Nothing is held when it throws. Shared by `run` and `runWithPty`.
 */
export async function prepareLimited(
  command: string,
  options: RunOptions & { readonly pty?: boolean },
): Promise<PreparedSpawn> {
  const releaseSlot = await options.limiter?.acquire({ signal: options.signal })
  if (releaseSlot === undefined) return prepareSpawn(command, options)
  try {
    const prepared = await prepareSpawn(command, options)
    return {
      ...prepared,
      release: () => {
        prepared.release()
        releaseSlot()
      },
    }
  } catch (error) {
    releaseSlot()
    throw error
  }
}

/** The keys {@link run} accepts; any other fails with `EXEC_INVALID_OPTION` naming it. */
export const RUN_OPTION_KEYS = [
  ...SPAWN_OPTION_KEYS,
  'timeoutMs',
  'killGraceMs',
  'signal',
  'maxOutputBytes',
  'input',
  'logger',
  'limiter',
  'stripAnsi',
] as const

const checkRunKeys = refuseUnknownKeys('run options', RUN_OPTION_KEYS)

/** `maxOutputBytes` checked (a whole number of bytes, 0 or more), or the default when absent. */
export function checkOutputBytes(value: number | undefined): number {
  const maxOutputBytes = value ?? DEFAULT_MAX_OUTPUT_BYTES
  if (!Number.isSafeInteger(maxOutputBytes) || maxOutputBytes < 0)
    throw new ExecError('EXEC_INVALID_OPTION', 'maxOutputBytes must be a non-negative integer')
  return maxOutputBytes
}

/** `value` checked as a timer delay (positive, at most 2^31 − 1 ms), or `fallback` when absent. */
export function checkTimeout(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isFinite(value) || value <= 0 || value > 2_147_483_647)
    throw new ExecError(
      'EXEC_INVALID_OPTION',
      `${name} must be a positive number of milliseconds up to 2147483647`,
    )
  return value
}

/** `signal` is an `AbortSignal` or absent (a plain object would fail later, untyped). */
export function checkSignal(signal: unknown): void {
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw new ExecError('EXEC_INVALID_OPTION', 'signal must be an AbortSignal (from an AbortController)')
}

/** The one-line `message` of a run's result; callers mask it with the spawn's redactor. */
export function describeOutcome(
  command: string,
  outcome: {
    exitCode: number | null
    signal: string | null
    timedOut: boolean
    isCanceled: boolean
    timeoutMs: number
  },
): string {
  const shown = command.length > 200 ? `${command.slice(0, 200)}…` : command
  if (outcome.timedOut) return `Command timed out after ${outcome.timeoutMs} ms and was killed: ${shown}`
  if (outcome.isCanceled) return `Command was canceled: ${shown}`
  if (outcome.signal !== null) return `Command was killed by ${outcome.signal}: ${shown}`
  if (outcome.exitCode === 0) return `Command succeeded: ${shown}`
  return `Command failed with exit code ${outcome.exitCode}: ${shown}`
}

class StreamSink {
  readonly capture: HeadTailCapture
  readonly #decoder: StringDecoder | undefined
  readonly #redactor: StreamRedactor | undefined

  constructor(maxBytes: number, redactor: Redactor, stripAnsi: boolean | undefined) {
    this.capture = new HeadTailCapture(maxBytes)
    this.#redactor = streamRedactorFor(redactor, { stripAnsi })
    if (this.#redactor !== undefined) this.#decoder = new StringDecoder('utf8')
  }

  push(chunk: Buffer): void {
    if (this.#redactor === undefined || this.#decoder === undefined) {
      this.capture.push(chunk)
      return
    }
    const safe = this.#redactor.push(this.#decoder.write(chunk))
    if (safe.length > 0) this.capture.push(Buffer.from(safe, 'utf8'))
  }

  finish(): void {
    if (this.#redactor === undefined || this.#decoder === undefined) return
    const rest = this.#redactor.push(this.#decoder.end()) + this.#redactor.flush()
    if (rest.length > 0) this.capture.push(Buffer.from(rest, 'utf8'))
  }
}

/**
 * Runs `command` with `/bin/sh -c` in a new process group and waits for it.
 *
 * Reference tokens are resolved right before spawning and passed through the environment; the
 * environment is built by the deny-wins policy of SECURITY.md §1; on timeout or cancel the whole
 * group gets SIGTERM, then SIGKILL after `killGraceMs`. When the shell exits, anything it left
 * running in its group is terminated the same way, so `run` never leaves processes behind.
 * @example
 * const result = await run('git status --short', { cwd: '/srv/repo', timeoutMs: 10_000 })
 * if (!result.ok) console.error(result.message, result.stderr)
 */
export async function run(command: string, options: RunOptions = {}): Promise<RunResult> {
  checkRunKeys(options)
  checkSignal(options.signal)
  const timeoutMs = checkTimeout(options.timeoutMs, 'timeoutMs', DEFAULT_TIMEOUT_MS)
  const graceMs = checkTimeout(options.killGraceMs, 'killGraceMs', DEFAULT_KILL_GRACE_MS)
  const maxOutputBytes = checkOutputBytes(options.maxOutputBytes)
  const logger = options.logger ?? silentLogger
  options.signal?.throwIfAborted()
  const prepared = await prepareLimited(command, options)
  let child: ChildProcess
  const startedAt = performance.now()
  try {
    options.signal?.throwIfAborted()
    logger.debug('exec:start', { command, cwd: prepared.cwd, droppedEnv: prepared.droppedEnv })
    child = spawn(prepared.shell, prepared.args, {
      cwd: prepared.cwd,
      env: prepared.env,
      detached: true,
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      windowsHide: true,
    })
  } catch (error) {
    prepared.release()
    throw error
  }
  const stdout = new StreamSink(maxOutputBytes, prepared.redactor, options.stripAnsi)
  const stderr = new StreamSink(maxOutputBytes, prepared.redactor, options.stripAnsi)
  child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk))
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk))
  if (options.input !== undefined && child.stdin !== null) {
    child.stdin.on('error', () => {}) // EPIPE when the child does not read its input
    child.stdin.end(options.input)
  }

  return new Promise<RunResult>((resolve, reject) => {
    let exitCode: number | null = null
    let exitSignal: NodeJS.Signals | null = null
    let settled = false
    const supervisor = new GroupSupervisor(child.pid, {
      marker: prepared.marker,
      timeoutMs,
      graceMs,
      signal: options.signal,
      // Descendants that escaped the group may still hold our pipes: stop waiting for them.
      onKilled: () => releasePipes(child),
    })

    const finish = (error?: Error) => {
      if (settled) return
      settled = true
      // The leader is gone; nothing it started may linger in its group, no secret file on disk.
      supervisor.finish()
      prepared.release()
      if (error !== undefined) {
        // Built from the unresolved command only: spawn errors carry argv and env (SEC-6).
        reject(spawnFailed(prepared.shell, command, error))
        return
      }
      stdout.finish()
      stderr.finish()
      const out = stdout.capture.text()
      const err = stderr.capture.text()
      const { timedOut, isCanceled } = supervisor
      const outcome = { exitCode, signal: exitSignal, timedOut, isCanceled, timeoutMs }
      const durationMs = performance.now() - startedAt
      logger.debug('exec:end', { command, exitCode, timedOut, isCanceled, durationMs })
      resolve({
        command,
        exitCode,
        signal: exitSignal,
        stdout: out.text,
        stderr: err.text,
        timedOut,
        isCanceled,
        ok: exitCode === 0 && !timedOut && !isCanceled,
        durationMs,
        truncated: out.truncated || err.truncated,
        message: prepared.redactor.redact(describeOutcome(command, outcome)),
      })
    }

    child.once('error', (error) => finish(error))
    child.once('exit', (code, signal) => {
      exitCode = code
      exitSignal = signal
      // Background jobs of the shell may keep our pipes open: ask the group to leave.
      if (!settled) supervisor.leaderExited()
    })
    child.once('close', () => finish())
  })
}
