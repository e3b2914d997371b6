/**
 * Type-level proof of ADR 0006 (one port vocabulary, one error shape), checked by `tsc --noEmit`:
 * a host writes each adapter once, the natural way — `run(request, { signal })`,
 * `send(target, text, { signal })`, a `Date` clock, one logger — and cron, background and workflow
 * all accept it with no cast; one `Kysely` typed for cron's and workflow's tables serves both stores.
 *
 * Method parameters are bivariant in TypeScript, so plain assignability would let a wrong shape
 * through; `Strict` re-declares each port method as a function type, whose parameters are checked
 * contravariantly, and the `@ts-expect-error` lines prove that the check does reject wrong shapes.
 */
import {
  type AgentRunner as BackgroundAgentRunner,
  type ChannelNotifier as BackgroundChannelNotifier,
  type Clock as BackgroundClock,
  type BackgroundError,
  type Logger as BackgroundLogger,
  BackgroundManager,
} from '@lango/background'
import {
  type AgentRunner as CronAgentRunner,
  type ChannelSender as CronChannelSender,
  type Clock as CronClock,
  type CronError,
  type Logger as CronLogger,
  CronService,
  type ShellRunner as CronShellRunner,
} from '@lango/cron'
import { type CronDatabase, migrateCron, SqliteCronStore } from '@lango/cron/sqlite'
import { type ExecError, type Logger as ExecLogger, run } from '@lango/exec'
import {
  type AgentRunner as WorkflowAgentRunner,
  type ChannelSender as WorkflowChannelSender,
  type Clock as WorkflowClock,
  WorkflowEngine,
  type WorkflowError,
  type Logger as WorkflowLogger,
  type ShellRunner as WorkflowShellRunner,
} from '@lango/workflow'
import { migrateWorkflow, SqliteWorkflowStore, type WorkflowDatabase } from '@lango/workflow/sqlite'
import type { Kysely } from 'kysely'
import type { ToolError } from './errors.js'

/** A port method re-declared as a function type, so its parameters are checked strictly. */
type Strict<Method> = Method extends (...args: infer Args) => infer Result ? (...args: Args) => Result : never
/** True only when `Source` may be used where `Target` is expected. */
type Fits<Source, Target> = [Source] extends [Target] ? true : false
declare function expectTrue<T extends true>(): T
declare function expectFalse<T extends false>(): T

// ── A host's adapters, written once ──────────────────────────────────────────────────────────────

const agentRunner = {
  async run(
    request: { readonly prompt: string; readonly sessionKey: string },
    { signal }: { readonly signal: AbortSignal },
  ): Promise<{ readonly text: string }> {
    signal.throwIfAborted()
    return { text: `answer to ${request.sessionKey}` }
  },
}

const shellRunner = {
  async run(
    request: { readonly command: string; readonly cwd?: string; readonly timeoutMs: number },
    { signal }: { readonly signal: AbortSignal },
  ) {
    const result = await run(request.command, {
      ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
      timeoutMs: request.timeoutMs,
      signal,
    })
    return {
      exitCode: result.exitCode,
      stdout: result.stdout,
      stderr: result.stderr,
      timedOut: result.timedOut,
    }
  },
}

const channel = {
  async send(target: string, text: string, { signal }: { readonly signal: AbortSignal }): Promise<void> {
    signal.throwIfAborted()
    void target
    void text
  },
}

const clock = {
  now: () => new Date(),
  setTimeout: (callback: () => void, ms: number): unknown => setTimeout(callback, ms),
  clearTimeout: (handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

type Fields = Readonly<Record<string, unknown>>
const logger = {
  debug(message: string, fields?: Fields) {
    void message
    void fields
  },
  info(message: string, fields?: Fields) {
    void message
    void fields
  },
  warn(message: string, fields?: Fields) {
    void message
    void fields
  },
  error(message: string, fields?: Fields) {
    void message
    void fields
  },
}

// ── Every package accepts them, method by method, strictly ───────────────────────────────────────

expectTrue<Fits<Strict<typeof agentRunner.run>, Strict<CronAgentRunner['run']>>>()
expectTrue<Fits<Strict<typeof agentRunner.run>, Strict<WorkflowAgentRunner['run']>>>()
expectTrue<Fits<Strict<typeof agentRunner.run>, Strict<BackgroundAgentRunner['run']>>>()

expectTrue<Fits<Strict<typeof shellRunner.run>, Strict<CronShellRunner['run']>>>()
expectTrue<Fits<Strict<typeof shellRunner.run>, Strict<WorkflowShellRunner['run']>>>()

expectTrue<Fits<Strict<typeof channel.send>, Strict<CronChannelSender['send']>>>()
expectTrue<Fits<Strict<typeof channel.send>, Strict<WorkflowChannelSender['send']>>>()
expectTrue<Fits<Strict<typeof channel.send>, Strict<BackgroundChannelNotifier['send']>>>()

expectTrue<Fits<typeof clock, CronClock>>()
expectTrue<Fits<typeof clock, WorkflowClock>>()
expectTrue<Fits<typeof clock, BackgroundClock>>()
expectTrue<Fits<ReturnType<CronClock['now']>, Date>>()
expectTrue<Fits<ReturnType<WorkflowClock['now']>, Date>>()
expectTrue<Fits<ReturnType<BackgroundClock['now']>, Date>>()

/** Every method of a port, re-declared strictly. */
type StrictPort<Port> = { [Key in keyof Port]-?: Strict<Port[Key]> }
const cronLogger: StrictPort<CronLogger> = logger
const workflowLogger: StrictPort<WorkflowLogger> = logger
const backgroundLogger: StrictPort<BackgroundLogger> = logger
const execLogger: StrictPort<ExecLogger> = logger
void [cronLogger, workflowLogger, backgroundLogger, execLogger]

// The shell result every package reads can say `blocked` with its message.
expectTrue<
  Fits<
    { exitCode: null; stdout: ''; stderr: ''; blocked: true; message: 'no' },
    Awaited<ReturnType<CronShellRunner['run']>>
  >
>()
expectTrue<
  Fits<
    { exitCode: null; stdout: ''; stderr: ''; blocked: true; message: 'no' },
    Awaited<ReturnType<WorkflowShellRunner['run']>>
  >
>()

// ── Token usage: one optional field, the same in every package ───────────────────────────────────

type CronUsage = Awaited<ReturnType<CronAgentRunner['run']>>['usage']
type WorkflowUsage = Awaited<ReturnType<WorkflowAgentRunner['run']>>['usage']
type BackgroundUsage = Awaited<ReturnType<BackgroundAgentRunner['run']>>['usage']
type Usage = { readonly inputTokens: number; readonly outputTokens: number } | undefined
expectTrue<Fits<CronUsage, Usage> & Fits<Usage, CronUsage>>()
expectTrue<Fits<WorkflowUsage, Usage> & Fits<Usage, WorkflowUsage>>()
expectTrue<Fits<BackgroundUsage, Usage> & Fits<Usage, BackgroundUsage>>()

/** A runner that counts (and says more, like the server's `totalTokens`) fits every package. */
const countingRunner = {
  async run(
    request: { readonly prompt: string; readonly sessionKey: string },
    { signal }: { readonly signal: AbortSignal },
  ) {
    signal.throwIfAborted()
    return { text: request.prompt, usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 } }
  },
}
expectTrue<Fits<Strict<typeof countingRunner.run>, Strict<CronAgentRunner['run']>>>()
expectTrue<Fits<Strict<typeof countingRunner.run>, Strict<WorkflowAgentRunner['run']>>>()
expectTrue<Fits<Strict<typeof countingRunner.run>, Strict<BackgroundAgentRunner['run']>>>()

/** Counts of another type are refused by every package. */
declare const textCounts: (
  request: { readonly prompt: string; readonly sessionKey: string },
  options: { readonly signal: AbortSignal },
) => Promise<{ readonly text: string; readonly usage: { inputTokens: string; outputTokens: string } }>
expectFalse<Fits<typeof textCounts, Strict<CronAgentRunner['run']>>>()
expectFalse<Fits<typeof textCounts, Strict<WorkflowAgentRunner['run']>>>()
expectFalse<Fits<typeof textCounts, Strict<BackgroundAgentRunner['run']>>>()

// ── The running token total: one optional listener, the same in every package ───────────────────

type CronRunOptions = Parameters<CronAgentRunner['run']>[1]
type WorkflowRunOptions = Parameters<WorkflowAgentRunner['run']>[1]
type BackgroundRunOptions = Parameters<BackgroundAgentRunner['run']>[1]
type RunOptions = {
  readonly signal: AbortSignal
  readonly onUsage?: (usage: { readonly inputTokens: number; readonly outputTokens: number }) => void
}
expectTrue<Fits<CronRunOptions, RunOptions> & Fits<RunOptions, CronRunOptions>>()
expectTrue<Fits<WorkflowRunOptions, RunOptions> & Fits<RunOptions, WorkflowRunOptions>>()
expectTrue<Fits<BackgroundRunOptions, RunOptions> & Fits<RunOptions, BackgroundRunOptions>>()

/** A runner that tells its running total (as the server's does) fits every package. */
const tellingRunner = {
  async run(
    request: { readonly prompt: string; readonly sessionKey: string },
    { signal, onUsage }: RunOptions,
  ) {
    signal.addEventListener('abort', () => onUsage?.({ inputTokens: 10, outputTokens: 0 }))
    onUsage?.({ inputTokens: 10, outputTokens: 5 })
    return { text: request.prompt }
  },
}
expectTrue<Fits<Strict<typeof tellingRunner.run>, Strict<CronAgentRunner['run']>>>()
expectTrue<Fits<Strict<typeof tellingRunner.run>, Strict<WorkflowAgentRunner['run']>>>()
expectTrue<Fits<Strict<typeof tellingRunner.run>, Strict<BackgroundAgentRunner['run']>>>()

/** One that wants the total in another unit is refused by every package. */
declare const textTotals: (
  request: { readonly prompt: string; readonly sessionKey: string },
  options: { readonly signal: AbortSignal; readonly onUsage?: (usage: { inputTokens: string }) => void },
) => Promise<{ readonly text: string }>
expectFalse<Fits<typeof textTotals, Strict<CronAgentRunner['run']>>>()
expectFalse<Fits<typeof textTotals, Strict<WorkflowAgentRunner['run']>>>()
expectFalse<Fits<typeof textTotals, Strict<BackgroundAgentRunner['run']>>>()

// ── The check rejects the shapes ADR 0006 replaced ───────────────────────────────────────────────

/** Cron's old agent port: the signal inside the request. */
declare const signalInRequest: (request: {
  readonly prompt: string
  readonly sessionKey: string
  readonly signal: AbortSignal
}) => Promise<{ readonly text: string }>
expectFalse<Fits<typeof signalInRequest, Strict<CronAgentRunner['run']>>>()
/** Background's old notifier: `notify(channel, message)` is not `send`. */
expectFalse<Fits<{ notify: typeof channel.send }, BackgroundChannelNotifier>>()
/** Cron's old clock: epoch milliseconds. */
expectFalse<
  Fits<
    { now: () => number; setTimeout: typeof clock.setTimeout; clearTimeout: typeof clock.clearTimeout },
    CronClock
  >
>()
/** A function logger (exec's and cron's old shape). */
expectFalse<Fits<(event: { level: string; message: string }) => void, CronLogger>>()

// ── Composition without a cast ───────────────────────────────────────────────────────────────────

declare const db: Kysely<CronDatabase & WorkflowDatabase>
export async function composeHost(): Promise<void> {
  await migrateCron(db)
  await migrateWorkflow(db)
  const ports = { agentRunner, shellRunner, channelSender: channel, clock, logger }
  const cron = new CronService({ store: new SqliteCronStore(db), ...ports })
  const workflow = new WorkflowEngine({ store: new SqliteWorkflowStore(db), ...ports })
  const background = new BackgroundManager({ agentRunner, channelSender: channel, clock, logger })
  void [cron, workflow, background]

  // A Kysely without the workflow tables is refused by the workflow store.
  const cronOnly = db as unknown as Kysely<CronDatabase>
  // @ts-expect-error cron's tables alone are not the workflow store's
  new SqliteWorkflowStore(cronOnly)
}

// ── One error shape ──────────────────────────────────────────────────────────────────────────────

interface LangoErrorShape {
  readonly name: string
  readonly code: string
  readonly message: string
  readonly cause?: unknown
  readonly data?: Readonly<Record<string, unknown>>
  toJSON(): {
    readonly name: string
    readonly code: string
    readonly message: string
    readonly data?: unknown
  }
}
expectTrue<Fits<CronError, LangoErrorShape>>()
expectTrue<Fits<WorkflowError, LangoErrorShape>>()
expectTrue<Fits<BackgroundError, LangoErrorShape>>()
expectTrue<Fits<ExecError, LangoErrorShape>>()
expectTrue<Fits<ToolError, LangoErrorShape>>()
/** Serialised errors never carry the cause or the stack. */
/** True when any member of the union `T` has the key `K`. */
type AnyHas<T, K extends PropertyKey> = true extends (
  T extends unknown
    ? K extends keyof T
      ? true
      : false
    : never
)
  ? true
  : false
type Serialised = ReturnType<(CronError | WorkflowError | BackgroundError | ExecError | ToolError)['toJSON']>
expectFalse<AnyHas<Serialised, 'cause'>>()
expectFalse<AnyHas<Serialised, 'stack'>>()
expectTrue<AnyHas<Serialised, 'code'>>()
