import * as v from 'valibot'
import { refuseUnknownKeys } from './option-keys.js'
import { type AnyTool, defineTool } from './tool.js'

/** The result of a finished command, as `@lango/exec`'s `run` and `runWithPty` return it. */
export interface ExecRunOutcome {
  readonly exitCode: number | null
  readonly stdout: string
  readonly stderr: string
  readonly timedOut: boolean
  readonly durationMs: number
  readonly truncated: boolean
}

/** Options the exec tools pass to a run. */
export interface ExecRunRequest {
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
  readonly envSource: 'agent'
  readonly timeoutMs: number
  readonly signal?: AbortSignal
  readonly stripAnsi?: boolean
}

/** A background process as `@lango/exec`'s `BackgroundProcess` exposes it. */
export interface ExecBackgroundProcess {
  readonly id: string
  readonly pid: number
  readonly command: string
  readonly status: string
  readonly exitCode: number | null
  read(offset?: number, maxBytes?: number): { output: string; nextOffset: number; droppedBytes: number }
  write(input: string): void
  kill(): Promise<{ status: string }>
  snapshot(): { startedAt: number; endedAt: number | null }
}

/** What the exec tools need; `@lango/exec` provides every member (`run`, `runWithPty`, a `ProcessRegistry`, `blockLangoExec`). */
export interface ExecToolsBackend {
  run(command: string, options: ExecRunRequest): Promise<ExecRunOutcome>
  /** Needed for `pty: true` in `exec`. */
  runWithPty?(command: string, options: ExecRunRequest): Promise<ExecRunOutcome>
  readonly registry: {
    start(
      command: string,
      options: { cwd?: string; env?: Readonly<Record<string, string>>; envSource: 'agent'; pty?: boolean },
    ): Promise<ExecBackgroundProcess>
    require(id: string): ExecBackgroundProcess
  }
  blockLangoExec(
    command: string,
    options: { automationAvailable: boolean | { cron?: boolean; background?: boolean; workflow?: boolean } },
  ): string
  /**
   * Optional: throws (`@lango/exec`'s `EXEC_ENV_REJECTED`) for `env` overrides the spawner would
   * refuse. Called before anyone is asked to approve the call, so nobody approves a call that
   * cannot run; without it the refusal comes when the call runs.
   */
  checkEnv?(env: Readonly<Record<string, string>>): void
}

/** Options for {@link createExecTools}. */
export interface ExecToolsOptions {
  readonly backend: ExecToolsBackend
  /** Which automation features exist, for the guard's guidance (default: all). */
  readonly automationAvailable?: boolean | { cron?: boolean; background?: boolean; workflow?: boolean }
  /** Default timeout of `exec` in seconds (default 30). */
  readonly defaultTimeoutSeconds?: number
  /** The most an agent may ask for (default 600). */
  readonly maxTimeoutSeconds?: number
  /** Largest output chunk `exec_status` returns per call (default 64 KiB). */
  readonly maxStatusBytes?: number
}

const checkExecKeys = refuseUnknownKeys(
  'createExecTools options',
  Object.keys({
    backend: true,
    automationAvailable: true,
    defaultTimeoutSeconds: true,
    maxTimeoutSeconds: true,
    maxStatusBytes: true,
  } satisfies Record<keyof ExecToolsOptions, true>),
)
const checkAvailabilityKeys = refuseUnknownKeys('automationAvailable', ['cron', 'background', 'workflow'])

const command = v.pipe(
  v.string('command must be a string'),
  v.minLength(1, 'command must not be empty'),
  v.maxLength(16 * 1024, 'command must be at most 16384 characters'),
  v.description(
    'The command line, run by /bin/sh -c; at most 16384 characters. Secret references such as {{secret:NAME}} are resolved when it runs and masked in the output; {{secretfile:NAME}} becomes the path of a private file holding the value (e.g. curl -H @{{secretfile:NAME}}), which keeps it out of all process argument lists. A reference inside sh -c, eval or inline interpreter code is refused. Never a lango CLI command (those are refused: use the automation tools or ask the user).',
  ),
)
const cwd = v.optional(
  v.pipe(
    v.string(),
    v.minLength(1),
    v.maxLength(4096),
    v.description(
      "Working directory of the command (an existing directory, at most 4096 characters); default: the server's working directory.",
    ),
  ),
)
const env = v.optional(
  v.pipe(
    v.record(v.pipe(v.string(), v.maxLength(128)), v.pipe(v.string(), v.maxLength(32 * 1024))),
    v.check((value) => Object.keys(value).length <= 64, 'env may set at most 64 variables'),
    v.description(
      'Extra environment variables, name to value: at most 64, names of letters, digits and _, values up to 32 KiB. PATH, HOME, TMPDIR, TERM, loader and credential variables cannot be set. Values may be {{secret:NAME}} or {{secretfile:NAME}} references.',
    ),
  ),
)
const processId = v.pipe(
  v.string('id must be a string'),
  v.minLength(1),
  v.maxLength(128),
  v.description('The id of a background process, as exec_bg returned it.'),
)

/** An optional boolean parameter (`pty`, `strip_ansi`) with its description. */
function flag(description: string) {
  return v.optional(v.pipe(v.boolean(), v.description(description)))
}

/** What exec and exec_bg return when the lango guard refuses the command (an MCP `isError` result). */
const blockedOutput = v.strictObject({ blocked: v.literal(true), message: v.string() })
type Blocked = v.InferOutput<typeof blockedOutput>

/** `exec`'s answer: the finished command, or the guard's refusal. */
const execOutput = v.union([
  v.strictObject({
    exit_code: v.nullable(v.number()),
    stdout: v.string(),
    stderr: v.string(),
    timed_out: v.boolean(),
    duration_ms: v.number(),
    truncated: v.boolean(),
  }),
  blockedOutput,
])

/** `exec_bg`'s answer: the started process, or the guard's refusal. */
const execBackgroundOutput = v.union([
  v.strictObject({ id: v.string(), pid: v.number(), status: v.string() }),
  blockedOutput,
])

function isBlocked(result: unknown): boolean {
  return (result as { blocked?: unknown } | null)?.blocked === true
}

/** The five exec tools of the contract: `exec`, `exec_bg`, `exec_status`, `exec_write`, `exec_stop`. */
export function createExecTools(options: ExecToolsOptions): AnyTool[] {
  checkExecKeys(options)
  if (typeof options.automationAvailable === 'object') checkAvailabilityKeys(options.automationAvailable)
  const { backend } = options
  const automationAvailable = options.automationAvailable ?? true
  const maxTimeout = options.maxTimeoutSeconds ?? 600
  const defaultTimeout = Math.min(options.defaultTimeoutSeconds ?? 30, maxTimeout)
  const maxStatusBytes = options.maxStatusBytes ?? 64 * 1024
  /** The lango guard: `{ blocked, message }` for a refused command, else `undefined`. */
  const guard = (params: { command: string }): Blocked | undefined => {
    const message = backend.blockLangoExec(params.command, { automationAvailable })
    return message === '' ? undefined : { blocked: true, message }
  }
  /** Before approval: the guard, then the env overrides the spawner would refuse (throws). */
  const preflight = (params: {
    command: string
    env?: Readonly<Record<string, string>> | undefined
  }): Blocked | undefined => {
    const blocked = guard(params)
    if (blocked === undefined && params.env !== undefined) backend.checkEnv?.(params.env)
    return blocked
  }

  const exec = defineTool({
    name: 'exec',
    title: 'Run shell command',
    description:
      'Run a shell command (/bin/sh -c) and wait for it. Returns exit_code, stdout, stderr, timed_out, duration_ms and truncated; a non-zero exit_code is a normal result to read, not a tool error. Use pty for programs that need a terminal. For commands that run longer than the timeout, use exec_bg. Never use it to run the lango CLI: such commands return { blocked: true, message } without running.',
    safety: 'dangerous',
    openWorld: true,
    parameters: v.strictObject({
      command,
      timeout: v.optional(
        v.pipe(
          v.number('timeout must be a number of seconds'),
          v.minValue(1, 'timeout must be at least 1 second'),
          v.maxValue(maxTimeout, `timeout must be at most ${maxTimeout} seconds`),
          v.description(
            `Seconds to wait before the command and everything it started are killed (then timed_out is true and the output so far is returned); 1 to ${maxTimeout}, default ${defaultTimeout}.`,
          ),
        ),
      ),
      cwd,
      env,
      pty: flag(
        'true runs the command in a pseudo-terminal, for programs that need one (prompts, colour, progress bars); stdout then holds the terminal output and stderr is empty. Default false.',
      ),
      strip_ansi: flag('true removes ANSI colour and cursor codes from the output. Default false.'),
    }),
    output: execOutput,
    preflight,
    isFailure: isBlocked,
    async handler(params, context) {
      const blocked = guard(params)
      if (blocked !== undefined) return blocked
      const request: ExecRunRequest = {
        cwd: params.cwd,
        env: params.env,
        envSource: 'agent',
        timeoutMs: (params.timeout ?? defaultTimeout) * 1000,
        signal: context.signal,
        stripAnsi: params.strip_ansi,
      }
      if (params.pty === true && backend.runWithPty === undefined)
        throw new Error('PTY execution is not available here')
      const result =
        params.pty === true && backend.runWithPty !== undefined
          ? await backend.runWithPty(params.command, request)
          : await backend.run(params.command, request)
      return {
        exit_code: result.exitCode,
        stdout: result.stdout,
        stderr: result.stderr,
        timed_out: result.timedOut,
        duration_ms: Math.round(result.durationMs),
        truncated: result.truncated,
      }
    },
  })

  const execBackground = defineTool({
    name: 'exec_bg',
    title: 'Start background command',
    description:
      'Start a shell command in the background and return its id, pid and status at once. Read its output with exec_status, answer prompts of a pty session with exec_write, stop it with exec_stop. lango CLI commands return { blocked: true, message } without running.',
    safety: 'dangerous',
    openWorld: true,
    parameters: v.strictObject({
      command,
      cwd,
      env,
      pty: flag('true starts it in a pseudo-terminal, so exec_write can answer its prompts. Default false.'),
    }),
    output: execBackgroundOutput,
    preflight,
    isFailure: isBlocked,
    async handler(params) {
      const blocked = guard(params)
      if (blocked !== undefined) return blocked
      const process = await backend.registry.start(params.command, {
        cwd: params.cwd,
        env: params.env,
        envSource: 'agent',
        pty: params.pty,
      })
      return { id: process.id, pid: process.pid, status: process.status }
    },
  })

  const execStatus = defineTool({
    name: 'exec_status',
    title: 'Background command status',
    description:
      'Status and output of a background process. Pass the previous next_offset as offset to read only new output; dropped_bytes says how much was overwritten before you read it.',
    safety: 'safe',
    parameters: v.strictObject({
      id: processId,
      offset: v.optional(
        v.pipe(
          v.number(),
          v.integer(),
          v.minValue(0),
          v.description(
            `Byte offset to read from: the next_offset of your previous exec_status call. Default 0 (all output still buffered). At most ${maxStatusBytes} bytes come back per call.`,
          ),
        ),
      ),
    }),
    output: v.strictObject({
      id: v.string(),
      command: v.string(),
      status: v.string(),
      exit_code: v.nullable(v.number()),
      output: v.string(),
      next_offset: v.number(),
      dropped_bytes: v.number(),
      started_at: v.string(),
      ended_at: v.nullable(v.string()),
    }),
    async handler(params) {
      const process = backend.registry.require(params.id)
      const read = process.read(params.offset ?? 0, maxStatusBytes)
      const snapshot = process.snapshot()
      return {
        id: process.id,
        command: process.command,
        status: process.status,
        exit_code: process.exitCode,
        output: read.output,
        next_offset: read.nextOffset,
        dropped_bytes: read.droppedBytes,
        started_at: new Date(snapshot.startedAt).toISOString(),
        ended_at: snapshot.endedAt === null ? null : new Date(snapshot.endedAt).toISOString(),
      }
    },
  })

  const execWrite = defineTool({
    name: 'exec_write',
    title: 'Type into background command',
    description: 'Type input into a pty background session (end a line with \\r, as Enter would).',
    safety: 'dangerous',
    parameters: v.strictObject({
      id: processId,
      input: v.pipe(
        v.string(),
        v.maxLength(16 * 1024),
        v.description(
          'Text to type, at most 16384 characters; end a line with \\r, as the Enter key would. Sent as is (no secret resolution).',
        ),
      ),
    }),
    output: v.strictObject({ id: v.string(), written: v.number() }),
    async handler(params) {
      backend.registry.require(params.id).write(params.input)
      return { id: params.id, written: Buffer.byteLength(params.input) }
    },
  })

  const execStop = defineTool({
    name: 'exec_stop',
    title: 'Stop background command',
    description: 'Stop a background process and everything it started (its whole process group).',
    safety: 'dangerous',
    idempotent: true,
    parameters: v.strictObject({ id: processId }),
    output: v.strictObject({ id: v.string(), status: v.string() }),
    async handler(params) {
      const snapshot = await backend.registry.require(params.id).kill()
      return { id: params.id, status: snapshot.status }
    },
  })

  return [exec, execBackground, execStatus, execWrite, execStop]
}
