import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { StringDecoder } from 'node:string_decoder'
import type { EnvPolicy } from './env.js'
import { ExecError, spawnFailed } from './errors.js'
import { refuseUnknownKeys } from './option-keys.js'
import { type Logger, type PtyDriver, type RefStore, silentLogger } from './ports.js'
import { type PreparedSpawn, prepareSpawn, SPAWN_OPTION_KEYS, type SpawnOptions } from './prepare.js'
import { GroupSupervisor, releasePipes } from './process-group.js'
import { type StreamRedactor, streamRedactorFor } from './redact.js'
import { ByteRingBuffer } from './ring-buffer.js'
import { checkTimeout, DEFAULT_KILL_GRACE_MS } from './run.js'

/** Lifecycle of a background process. */
export type BackgroundStatus = 'running' | 'exited' | 'killed' | 'timed_out'

/** PTY settings for a background session. */
export interface PtySettings {
  readonly cols?: number
  readonly rows?: number
  /** Remove ANSI escapes before output is buffered (default false: kept for rendering). */
  readonly stripAnsi?: boolean
}

/** Options for {@link ProcessRegistry.start}. */
export interface BackgroundOptions extends Omit<SpawnOptions, 'refStore' | 'envPolicy'> {
  /** Run on a pseudo-terminal (needs a `ptyDriver` on the registry); accepts input through `write`. */
  readonly pty?: boolean | PtySettings
  /** Maximum lifetime; the group is killed and the status becomes `timed_out` (default: the registry's). */
  readonly timeoutMs?: number
}

/** A point-in-time view of a background process, safe to serialise and hand to an agent. */
export interface BackgroundSnapshot {
  readonly id: string
  readonly pid: number
  /** The original command, reference tokens unresolved. */
  readonly command: string
  readonly status: BackgroundStatus
  readonly pty: boolean
  readonly exitCode: number | null
  readonly signal: string | null
  /** Epoch milliseconds. */
  readonly startedAt: number
  readonly endedAt: number | null
  /** Bytes of output produced so far (after redaction). */
  readonly outputBytes: number
  /** Bytes the ring buffer has overwritten. */
  readonly droppedBytes: number
}

/** Output read from a background process by offset. */
export interface OutputRead {
  readonly output: string
  /** Absolute offset of the first byte of `output`. */
  readonly offset: number
  /** Offset to pass to the next read. */
  readonly nextOffset: number
  /** Bytes between the requested offset and `offset` that were overwritten before being read. */
  readonly droppedBytes: number
}

/** The spawned child, pipe-based or PTY-based, seen through one narrow shape. */
interface ChildHandle {
  readonly pid: number
  write?(data: string): void
}

function isContinuationByte(byte: number | undefined): boolean {
  return byte !== undefined && (byte & 0xc0) === 0x80
}

/** Number of trailing bytes that start an incomplete UTF-8 sequence. */
function incompleteTail(data: Buffer): number {
  for (let back = 1; back <= Math.min(3, data.length); back++) {
    const byte = data[data.length - back] as number
    if (isContinuationByte(byte)) continue
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return needed > back ? back : 0
  }
  return 0
}

/**
 * A command running in the background with its output in a bounded ring buffer. Reads by
 * offset are safe while the process writes: each read sees a consistent prefix of the stream.
 */
export class BackgroundProcess {
  readonly id: string
  readonly pid: number
  readonly command: string
  readonly pty: boolean
  readonly startedAt: number
  readonly #ring: ByteRingBuffer
  readonly #exited: Promise<void>
  readonly #supervisor: GroupSupervisor
  #resolveExited!: () => void
  #child: ChildHandle | undefined
  #status: BackgroundStatus = 'running'
  #exitCode: number | null = null
  #signal: string | null = null
  #endedAt: number | null = null
  #killRequested = false

  /** @internal Created by {@link ProcessRegistry.start}. */
  readonly #onEnd: () => void
  readonly #release: () => void

  constructor(init: {
    id: string
    pid: number
    command: string
    pty: boolean
    bufferBytes: number
    graceMs: number
    lifetimeMs: number
    marker: string
    onEnd: () => void
    /** Removes the spawn's secret files; called once, when the process has ended. */
    release: () => void
    /** Releases the output once the group is dead and the grace period is over (piped children). */
    onKilled?: () => void
  }) {
    this.#onEnd = init.onEnd
    this.#release = init.release
    this.id = init.id
    this.pid = init.pid
    this.command = init.command
    this.pty = init.pty
    this.startedAt = Date.now()
    // The lifetime limit is the supervisor's timeout; it also tracks the group for host exit.
    this.#supervisor = new GroupSupervisor(init.pid, {
      marker: init.marker,
      timeoutMs: init.lifetimeMs,
      graceMs: init.graceMs,
      unrefTimer: true,
      onKilled: init.onKilled,
    })
    this.#ring = new ByteRingBuffer(init.bufferBytes)
    this.#exited = new Promise((resolve) => {
      this.#resolveExited = resolve
    })
  }

  get status(): BackgroundStatus {
    return this.#status
  }

  get exitCode(): number | null {
    return this.#exitCode
  }

  /** Reads output from `offset` (default 0). Never splits a UTF-8 character. */
  read(offset = 0, maxBytes?: number): OutputRead {
    if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0)
      throw new ExecError(
        'EXEC_INVALID_OPTION',
        `offset must be a whole number of bytes from 0 up (a read's nextOffset), got ${String(offset)}`,
      )
    if (
      maxBytes !== undefined &&
      (typeof maxBytes !== 'number' || !Number.isSafeInteger(maxBytes) || maxBytes < 1)
    )
      throw new ExecError(
        'EXEC_INVALID_OPTION',
        `maxBytes must be a whole number from 1 up, got ${String(maxBytes)}`,
      )
    const raw = this.#ring.read(offset, maxBytes)
    let data = raw.data
    let start = raw.offset
    // A read that begins mid-character (after a drop) skips the orphaned continuation bytes.
    if (raw.droppedBytes > 0) {
      let skip = 0
      while (skip < data.length && isContinuationByte(data[skip])) skip++
      data = data.subarray(skip)
      start += skip
    }
    // Hold back a character cut in half by the end of the read; it comes whole next time.
    const cutShort = this.#status === 'running' || raw.nextOffset < this.#ring.endOffset
    const keepBack = cutShort ? incompleteTail(data) : 0
    if (keepBack > 0) data = data.subarray(0, data.length - keepBack)
    return {
      output: data.toString('utf8'),
      offset: start,
      nextOffset: start + data.length,
      // Past the end (an offset from another process, a guess) nothing was dropped.
      droppedBytes: Math.max(0, start - offset),
    }
  }

  /** Sends input to a PTY session (for example an answer to a prompt, ending in `\r`). */
  write(input: string): void {
    if (!this.pty || this.#child?.write === undefined)
      throw new ExecError('EXEC_NOT_WRITABLE', `process ${this.id} is not a PTY session and takes no input`)
    if (this.#status !== 'running') throw new ExecError('EXEC_NOT_WRITABLE', `process ${this.id} has ended`)
    this.#child.write(input)
  }

  /** Terminates the whole process group (SIGTERM, then SIGKILL after the grace period) and waits. */
  async kill(): Promise<BackgroundSnapshot> {
    if (this.#endedAt === null) {
      // The first reason wins: a process already timing out stays `timed_out`.
      if (!this.#supervisor.timedOut) this.#killRequested = true
      this.#supervisor.stop()
    }
    await this.#exited
    return this.snapshot()
  }

  /** Resolves when the process has ended. */
  async wait(options: { signal?: AbortSignal } = {}): Promise<BackgroundSnapshot> {
    checkWaitKeys(options)
    const { signal } = options
    signal?.throwIfAborted()
    if (signal === undefined) {
      await this.#exited
      return this.snapshot()
    }
    let onAbort: (() => void) | undefined
    try {
      await Promise.race([
        this.#exited,
        new Promise<never>((_, reject) => {
          onAbort = () => reject(signal.reason)
          signal.addEventListener('abort', onAbort, { once: true })
        }),
      ])
    } finally {
      if (onAbort !== undefined) signal.removeEventListener('abort', onAbort)
    }
    return this.snapshot()
  }

  snapshot(): BackgroundSnapshot {
    return {
      id: this.id,
      pid: this.pid,
      command: this.command,
      status: this.#status,
      pty: this.pty,
      exitCode: this.#exitCode,
      signal: this.#signal,
      startedAt: this.startedAt,
      endedAt: this.#endedAt,
      outputBytes: this.#ring.endOffset,
      droppedBytes: this.#ring.droppedBytes,
    }
  }

  /** @internal */
  attach(child: ChildHandle): void {
    this.#child = child
  }

  /** @internal */
  append(chunk: Buffer): void {
    if (chunk.length > 0) this.#ring.write(chunk)
  }

  /** @internal Called once the child has exited and its output has been drained. */
  settle(exitCode: number | null, signal: string | null): void {
    if (this.#endedAt !== null) return
    this.#supervisor.finish()
    this.#release()
    this.#exitCode = exitCode
    this.#signal = signal
    this.#status = this.#killRequested ? 'killed' : this.#supervisor.timedOut ? 'timed_out' : 'exited'
    this.#endedAt = Date.now()
    this.#resolveExited()
    this.#onEnd()
  }

  /** @internal Shell exited but may have left descendants holding the output open. */
  leaderExited(): void {
    this.#supervisor.leaderExited()
  }
}

/** Options for {@link ProcessRegistry}. */
export interface ProcessRegistryOptions {
  /** Running processes allowed at once (default 16); `start` beyond it fails with `EXEC_TOO_MANY_PROCESSES`. */
  readonly maxRunning?: number
  /** Finished processes kept for status reads (default 64); the oldest are forgotten first. */
  readonly maxRetained?: number
  /** Ring buffer size per process (default 1 MiB). */
  readonly outputBufferBytes?: number
  /** Default maximum lifetime of a background process (default 1 hour). */
  readonly maxLifetimeMs?: number
  readonly killGraceMs?: number
  readonly refStore?: RefStore
  /** How every start treats a token the `refStore` does not know (see `SpawnOptions`; default `keep`). */
  readonly unknownReferences?: 'keep' | 'refuse'
  readonly envPolicy?: EnvPolicy
  /** Needed for `pty: true`; use `nodePtyDriver()` from `@lango/exec/pty`. */
  readonly ptyDriver?: PtyDriver
  readonly logger?: Logger
  readonly idGenerator?: () => string
}

const DEFAULT_OUTPUT_BUFFER = 1024 * 1024

const BACKGROUND_OPTION_KEYS = [
  ...SPAWN_OPTION_KEYS.filter((key) => key !== 'refStore' && key !== 'envPolicy'),
  'pty',
  'timeoutMs',
]
const checkRegistryKeys = refuseUnknownKeys('ProcessRegistry options', [
  'maxRunning',
  'maxRetained',
  'outputBufferBytes',
  'maxLifetimeMs',
  'killGraceMs',
  'refStore',
  'unknownReferences',
  'envPolicy',
  'ptyDriver',
  'logger',
  'idGenerator',
])
const checkStartKeys = refuseUnknownKeys('ProcessRegistry.start options', BACKGROUND_OPTION_KEYS)
const checkStartBackgroundKeys = refuseUnknownKeys('startBackground options', [
  ...BACKGROUND_OPTION_KEYS,
  'registry',
])
const checkPtyKeys = refuseUnknownKeys('pty settings', ['cols', 'rows', 'stripAnsi'])
const checkWaitKeys = refuseUnknownKeys('BackgroundProcess.wait options', ['signal'])

/** A count option: a whole number from `min` up (undefined: the default). */
function checkCount(value: number | undefined, name: string, min: number): void {
  if (value === undefined) return
  if (!Number.isSafeInteger(value) || value < min)
    throw new ExecError(
      'EXEC_INVALID_OPTION',
      `${name} must be a whole number from ${min} up, got ${typeof value === 'number' ? value : JSON.stringify(value)}`,
    )
}

/**
 * Starts, tracks, bounds and cleans up background processes.
 * @example
 * await using registry = new ProcessRegistry({ refStore })
 * const build = await registry.start('npm run build')
 * const { output, nextOffset } = build.read(0)
 */
export class ProcessRegistry {
  readonly #options: Readonly<
    Required<Omit<ProcessRegistryOptions, 'refStore' | 'envPolicy' | 'ptyDriver'>> &
      Pick<ProcessRegistryOptions, 'refStore' | 'envPolicy' | 'ptyDriver'>
  >
  readonly #processes = new Map<string, BackgroundProcess>()
  #starting = 0
  #stopped = false

  constructor(options: ProcessRegistryOptions = {}) {
    checkRegistryKeys(options)
    checkCount(options.maxRunning, 'maxRunning', 1)
    checkCount(options.maxRetained, 'maxRetained', 0)
    checkTimeout(options.maxLifetimeMs, 'maxLifetimeMs', 0)
    checkTimeout(options.killGraceMs, 'killGraceMs', 0)
    if (options.unknownReferences !== undefined && !['keep', 'refuse'].includes(options.unknownReferences))
      throw new ExecError(
        'EXEC_INVALID_OPTION',
        `unknownReferences must be "keep" or "refuse", got ${JSON.stringify(options.unknownReferences)}`,
      )
    if (options.idGenerator !== undefined && typeof options.idGenerator !== 'function')
      throw new ExecError('EXEC_INVALID_OPTION', 'idGenerator must be a function returning an id')
    this.#options = Object.freeze({
      ...options,
      maxRunning: options.maxRunning ?? 16,
      maxRetained: options.maxRetained ?? 64,
      outputBufferBytes: options.outputBufferBytes ?? DEFAULT_OUTPUT_BUFFER,
      maxLifetimeMs: options.maxLifetimeMs ?? 60 * 60 * 1000,
      killGraceMs: options.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
      logger: options.logger ?? silentLogger,
      idGenerator: options.idGenerator ?? (() => `proc_${randomUUID().slice(0, 8)}`),
      unknownReferences: options.unknownReferences ?? 'keep',
    })
    if (!Number.isSafeInteger(this.#options.outputBufferBytes) || this.#options.outputBufferBytes <= 0)
      throw new ExecError('EXEC_INVALID_OPTION', 'outputBufferBytes must be a positive integer')
  }

  /** Running processes. */
  get runningCount(): number {
    let count = 0
    for (const process of this.#processes.values()) if (process.status === 'running') count++
    return count
  }

  /** Starts `command` in the background and returns at once. */
  async start(command: string, options: BackgroundOptions = {}): Promise<BackgroundProcess> {
    checkStartKeys(options)
    if (typeof options.pty === 'object') checkPtyKeys(options.pty)
    if (this.#stopped) throw new ExecError('EXEC_INVALID_OPTION', 'the process registry has been stopped')
    const lifetimeMs = checkTimeout(options.timeoutMs, 'timeoutMs', this.#options.maxLifetimeMs)
    if (this.runningCount + this.#starting >= this.#options.maxRunning)
      throw new ExecError(
        'EXEC_TOO_MANY_PROCESSES',
        `${this.#options.maxRunning} background processes are already running; stop one first`,
        { data: { maxRunning: this.#options.maxRunning } },
      )
    const ptySettings =
      options.pty === undefined || options.pty === false ? undefined : options.pty === true ? {} : options.pty
    if (ptySettings !== undefined && this.#options.ptyDriver === undefined)
      throw new ExecError(
        'EXEC_PTY_UNAVAILABLE',
        'pty: true needs a registry created with ptyDriver: nodePtyDriver()',
      )
    this.#starting++
    try {
      const prepared = await prepareSpawn(command, {
        ...options,
        refStore: this.#options.refStore,
        unknownReferences: options.unknownReferences ?? this.#options.unknownReferences,
        envPolicy: this.#options.envPolicy,
        pty: ptySettings !== undefined,
      })
      const id = this.#options.idGenerator()
      // Masking (and stripping, for PTY sessions that ask) reads the output as a terminal shows it.
      const redactor = streamRedactorFor(prepared.redactor, { stripAnsi: ptySettings?.stripAnsi })
      let started: [BackgroundProcess, ChildHandle]
      try {
        started =
          ptySettings === undefined
            ? await this.#startPiped(id, command, prepared, redactor, lifetimeMs)
            : this.#startPty(id, command, prepared, redactor, ptySettings, lifetimeMs)
      } catch (error) {
        prepared.release() // nothing started: no secret file may stay behind
        throw error
      }
      const [process, handle] = started
      process.attach(handle)
      this.#processes.set(id, process)
      this.#evictFinished()
      this.#options.logger.info('exec:background:start', { id, command, pid: process.pid })
      return process
    } finally {
      this.#starting--
    }
  }

  async #startPiped(
    id: string,
    command: string,
    prepared: PreparedSpawn,
    redactor: StreamRedactor | undefined,
    lifetimeMs: number,
  ): Promise<[BackgroundProcess, ChildHandle]> {
    const child = spawn(prepared.shell, prepared.args, {
      cwd: prepared.cwd,
      env: prepared.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    if (child.pid === undefined) {
      // The 'error' event follows on the next tick; unheard, it would crash the host.
      const error = await new Promise<NodeJS.ErrnoException>((resolve) => child.once('error', resolve))
      throw spawnFailed(prepared.shell, command, error)
    }
    const process = new BackgroundProcess({
      id,
      pid: child.pid,
      command,
      pty: false,
      bufferBytes: this.#options.outputBufferBytes,
      graceMs: this.#options.killGraceMs,
      lifetimeMs,
      marker: prepared.marker,
      release: prepared.release,
      onEnd: () => this.#evictFinished(),
      onKilled: () => releasePipes(child),
    })
    const decoders =
      redactor === undefined ? undefined : [new StringDecoder('utf8'), new StringDecoder('utf8')]
    const sink = (index: number) => (chunk: Buffer) => {
      if (redactor === undefined || decoders === undefined) process.append(chunk)
      else process.append(Buffer.from(redactor.push((decoders[index] as StringDecoder).write(chunk)), 'utf8'))
    }
    child.stdout.on('data', sink(0))
    child.stderr.on('data', sink(1))
    let exit: [number | null, string | null] = [null, null]
    child.once('error', () => process.settle(null, null))
    child.once('exit', (code, signal) => {
      exit = [code, signal]
      process.leaderExited()
    })
    child.once('close', () => {
      if (redactor !== undefined) process.append(Buffer.from(redactor.flush(), 'utf8'))
      process.settle(exit[0], exit[1])
    })
    return [process, { pid: child.pid }]
  }

  #startPty(
    id: string,
    command: string,
    prepared: PreparedSpawn,
    redactor: StreamRedactor | undefined,
    settings: PtySettings,
    lifetimeMs: number,
  ): [BackgroundProcess, ChildHandle] {
    const driver = this.#options.ptyDriver as PtyDriver
    const terminal = driver.spawn(prepared.shell, prepared.args, {
      cwd: prepared.cwd,
      env: prepared.env,
      cols: settings.cols ?? 120,
      rows: settings.rows ?? 30,
    })
    const process = new BackgroundProcess({
      id,
      pid: terminal.pid,
      command,
      pty: true,
      bufferBytes: this.#options.outputBufferBytes,
      graceMs: this.#options.killGraceMs,
      lifetimeMs,
      marker: prepared.marker,
      release: prepared.release,
      onEnd: () => this.#evictFinished(),
    })
    terminal.onData((data) => {
      process.append(Buffer.from(redactor === undefined ? data : redactor.push(data), 'utf8'))
    })
    terminal.onExit(({ exitCode, signal }) => {
      if (redactor !== undefined) process.append(Buffer.from(redactor.flush(), 'utf8'))
      process.settle(signal ? null : exitCode, signal ? `signal ${signal}` : null)
    })
    return [process, { pid: terminal.pid, write: (data) => terminal.write(data) }]
  }

  /** The process with this id, or `undefined`. */
  get(id: string): BackgroundProcess | undefined {
    return this.#processes.get(id)
  }

  /** The process with this id; throws `EXEC_PROCESS_NOT_FOUND` otherwise. */
  require(id: string): BackgroundProcess {
    const process = this.#processes.get(id)
    if (process === undefined)
      throw new ExecError('EXEC_PROCESS_NOT_FOUND', `no background process with id ${JSON.stringify(id)}`)
    return process
  }

  /** Snapshots of every known process, newest first. */
  list(): BackgroundSnapshot[] {
    return [...this.#processes.values()].reverse().map((process) => process.snapshot())
  }

  /** Kills every running process and waits for them; the registry accepts no new work. */
  async stop(): Promise<void> {
    this.#stopped = true
    await Promise.all(
      [...this.#processes.values()].filter((p) => p.status === 'running').map((p) => p.kill()),
    )
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop()
  }

  #evictFinished(): void {
    let finished = 0
    for (const process of this.#processes.values()) if (process.status !== 'running') finished++
    for (const [id, process] of this.#processes) {
      if (finished <= this.#options.maxRetained) break
      if (process.status !== 'running') {
        this.#processes.delete(id)
        finished--
      }
    }
  }
}

/**
 * Starts a background process in `options.registry` (the contract name for
 * {@link ProcessRegistry.start}).
 */
export async function startBackground(
  command: string,
  options: BackgroundOptions & { readonly registry: ProcessRegistry },
): Promise<BackgroundProcess> {
  checkStartBackgroundKeys(options)
  const { registry, ...rest } = options
  return registry.start(command, rest)
}
