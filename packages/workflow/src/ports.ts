import type { RunStatus, StepRunRecord, StepStatus, WorkflowRunRecord } from './model.js'

/**
 * Everything `@lango/workflow` needs from outside, as narrow interfaces.
 *
 * Terminology
 * - **workflow**: a validated `*.flow.yaml` definition: a name, options and a list of steps.
 * - **step**: one unit of work, either an agent step (`prompt`, run by the `AgentRunner`) or a
 *   shell step (`run`, run by the `ShellRunner`). Steps form a DAG through `depends_on`.
 * - **run**: one execution of a workflow, persisted with its definition in the `WorkflowStore`.
 * - **attempt**: one try of a step. `retry.attempts` bounds them; a resumed step gets a fresh budget.
 * - **ready queue**: steps whose dependencies have all finished, waiting for one of the run's
 *   `max_parallel` slots; the step with the longest chain of descendants goes first.
 * - **template**: `{{step-id.result}}` in a `prompt` or `run`, replaced once, when the step starts,
 *   with an ancestor's result: shell-quoted in commands, marked as untrusted data in prompts.
 * - **delivery**: a message about a step or a run sent through the `ChannelSender` to each target
 *   in `deliver_to` (`channel` or `channel:id`), on success and on failure.
 * - **owner** / **lease**: the engine instance working on a run, and until when it may (the run's
 *   `leaseExpiresAt`). The owner's heartbeat renews the lease; an engine takes over runs whose lease
 *   expired (a crashed or stalled process), and resumes them.
 * - **lease version** (fencing token): counts a run's ownerships. Each takeover increments it, and
 *   every owned write names the version it was given, so a former owner (even one that later took
 *   the run back) cannot write with a stale one.
 *
 * The host implements `AgentRunner`, `ShellRunner` and `ChannelSender`, in the shapes every Lango
 * package shares (docs/decisions/0006-one-port-vocabulary.md), so one adapter serves them all.
 * `SqliteWorkflowStore` (`@lango/workflow/sqlite`) implements `WorkflowStore`.
 */

/**
 * What a `prompt` step asks the agent to do. `prompt` and `sessionKey` are the shared
 * `AgentRunRequest` of every Lango package (docs/decisions/0006); the rest are this package's extras.
 */
export interface AgentRunRequest {
  /** The rendered prompt: templates substituted, earlier results marked as untrusted data. */
  readonly prompt: string
  /** `workflow:<name>:<run id>:<step id>`: one isolated session per step. */
  readonly sessionKey: string
  /** The step's `agent` routing hint, if any. */
  readonly agent?: string
  /** The workflow's `name`. */
  readonly workflowName: string
  /** The run this step belongs to. */
  readonly runId: string
  /** The step's `id`. */
  readonly stepId: string
  /**
   * Who the run's spend counts against (`StartRunOptions.creator`), when it was started with one.
   * The same optional extra as every Lango package's `AgentRunRequest` (docs/decisions/0006): a host
   * bounds each creator's daily spend with it, so a workflow cannot spend past its starter's budget.
   */
  readonly creator?: string
}

/** What the agent answers. */
export interface AgentRunResult {
  /** The agent's final answer; becomes the step's result (capped at `maxResultLength`). */
  readonly text: string
  /**
   * Tokens the run used (`inputTokens`: what was sent to the model; `outputTokens`: what it
   * generated), the same optional field as in every Lango package's `AgentRunResult`
   * (docs/decisions/0006). A runner that cannot count leaves it out. The step's record keeps the
   * sum over its attempts, failed ones included (`AgentRunFailure.usage`) (`inputTokens`,
   * `outputTokens`; a count that is not a finite, non-negative number is stored as null).
   */
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
}

/**
 * What a rejection of `AgentRunner.run` may carry, read from whatever the runner throws (the same
 * optional fields in every Lango package, docs/decisions/0006). A runner that throws a plain
 * `Error` still fits: both are optional.
 */
export interface AgentRunFailure {
  /**
   * Tokens the run spent before it failed (a turn stopped by its budget spent them all the same).
   * Stored on the step (summed over its attempts).
   */
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
  /**
   * `false`: trying again cannot succeed (a spending budget is exhausted, the step limit was reached,
   * the model server refused the key). The step then gets no further attempt, whatever its `retry`.
   */
  readonly retryable?: boolean
  /**
   * `false`: the runner refused before doing anything (a daily spending budget already spent, no
   * model call). The step still fails (the run cannot go on without it).
   */
  readonly started?: boolean
}

/**
 * Runs one agent turn for a `prompt` step. Implemented by the host (an LLM tool-calling loop);
 * `RecordingAgentRunner` in `@lango/workflow/testing`. Should reject with `signal.reason` when
 * `signal` aborts (cancel, timeout, stop); a runner that ignores it is abandoned and its late
 * answer discarded.
 */
export interface AgentRunner {
  run(request: AgentRunRequest, options: AgentRunOptions): Promise<AgentRunResult>
}

/** The second argument of `AgentRunner.run` (the same in every Lango package, docs/decisions/0006). */
export interface AgentRunOptions {
  /** Aborted on the step's timeout, the run's cancel or timeout, and the engine's stop. */
  readonly signal: AbortSignal
  /**
   * Tells the engine the tokens the turn has spent so far (a running total; the last call wins). An
   * attempt that ends by its `signal` (step timeout, cancel) keeps the last total told, on the step
   * (`inputTokens` / `outputTokens`, summed over attempts): its promise is not waited for, so a
   * runner says what the call under way cost from a listener on `signal` (listeners run before the
   * engine records the attempt). An answer's or rejection's own `usage` wins. Never calling it is fine; the engine passes it on every prompt step (other callers of a runner may not).
   */
  readonly onUsage?: (usage: { readonly inputTokens: number; readonly outputTokens: number }) => void
}

/**
 * What a `run` step asks the shell to run. `command`, `cwd` and `timeoutMs` are the shared
 * `ShellRunRequest` of every Lango package (docs/decisions/0006); the rest are this package's extras.
 */
export interface ShellRunRequest {
  /**
   * The final rendered command: every `{{id.result}}` replaced by a POSIX single-quoted value.
   * `{{secret:…}}` tokens written in the YAML are passed through for the runner to resolve.
   */
  readonly command: string
  /** The engine's `cwd` option when it has one; otherwise absent and the runner uses its default. */
  readonly cwd?: string
  /** The step's timeout; the engine also aborts `signal` when it passes. */
  readonly timeoutMs: number
  /** The workflow's `name`. */
  readonly workflowName: string
  /** The run this step belongs to. */
  readonly runId: string
  /** The step's `id`. */
  readonly stepId: string
  /**
   * True when the command is the step's `when` gate (`StepDefinition.when`), run before the step's
   * own work; its exit code decides whether the step runs (0), is skipped (1) or fails.
   */
  readonly gate?: boolean
}

/**
 * What the shell returns. A non-zero `exitCode` (or `null`: killed) fails the attempt;
 * `blocked: true` fails the step at once, without further attempts, with `message` as its error.
 */
export interface ShellRunResult {
  readonly exitCode: number | null
  /** Becomes the step's result, trailing newlines removed (like `$(…)`). */
  readonly stdout: string
  /** Its tail goes into the step's error when the command fails. */
  readonly stderr: string
  /** The runner's own timeout ended the command; the attempt fails with `WORKFLOW_STEP_TIMEOUT`. */
  readonly timedOut?: boolean
  /** The runner's guard refused the command (e.g. a `lango` CLI call); nothing ran. */
  readonly blocked?: boolean
  /** Why the command was blocked; becomes the step's error. */
  readonly message?: string
}

/**
 * Runs a `run` step's command, and any step's `when` gate (`gate: true`). The host implements it
 * over `@lango/exec` `run()`: the `lango` CLI guard first (a refused command returns
 * `{ blocked: true, message }`), then the environment builder, on this final rendered command at
 * execution time (SECURITY.md WF-9), with `sh -c` in its own process group and capped output. `ChildProcessShellRunner` in `@lango/workflow/testing`
 * is a bare `sh -c` runner for tests only.
 */
export interface ShellRunner {
  run(request: ShellRunRequest, options: { readonly signal: AbortSignal }): Promise<ShellRunResult>
}

/**
 * Sends text to a delivery target (`telegram`, `telegram:123`, `slack:C1`, `webhook`). Implemented
 * by the host; `RecordingChannelSender` in `@lango/workflow/testing`. `signal` aborts after
 * `deliveryTimeoutMs`. A rejection is logged and emitted as `'delivery:error'`; it never changes a
 * run's or step's status.
 */
export interface ChannelSender {
  send(target: string, text: string, options: { readonly signal: AbortSignal }): Promise<void>
}

/** Options every store call takes. */
export interface StoreCallOptions {
  readonly signal?: AbortSignal
}

/**
 * An engine's hold on a run: its owner id and the lease version (fencing token) it got when it
 * inserted the run (version 1) or took it over (`claimRuns`).
 */
export interface RunLease {
  readonly owner: string
  readonly version: number
}

/**
 * Store calls that change a run take the caller's lease; they change nothing unless the run's
 * owner and lease version both still match it.
 */
export interface OwnedCallOptions extends StoreCallOptions {
  readonly lease: RunLease
}

/** A run an engine holds, as `claimRuns` returns it and `renewLeases` takes it. */
export interface LeasedRun {
  readonly runId: string
  /** The run's lease version: what owned writes must name. */
  readonly version: number
}

/** What `claimRuns` takes over and on what terms. All times are epoch ms from the engine's clock. */
export interface ClaimRunsRequest {
  /** Runs whose lease expired before this are taken over. */
  readonly now: number
  /** The lease expiry the taken runs get. */
  readonly leaseExpiresAt: number
  /**
   * Runs without a lease expiry (stored before leases existed) fall back to their owner's
   * heartbeat: they are taken when the owner has none at or after this time (or no row at all).
   */
  readonly staleBefore: number
  /** Take at most this many runs, oldest first; default: every expired run. */
  readonly limit?: number
}

/** A run to insert with all its steps `pending`. */
export interface NewWorkflowRun {
  readonly id: string
  readonly workflowName: string
  readonly definition: string
  readonly status: RunStatus
  readonly deliverTo: readonly string[]
  readonly originSession: string | null
  readonly owner: string
  readonly startedAt: number
  /** Until when `owner` holds the run without renewing (epoch ms); the run starts at lease version 1. */
  readonly leaseExpiresAt: number
  /** Step ids in definition order. */
  readonly stepIds: readonly string[]
  /** The run this one reruns (`WorkflowEngine.rerunRun`); stored as `rerunOf`, default null. */
  readonly rerunOf?: string | null
  /** `{{trigger.payload}}` of the run (see `WorkflowRunRecord.triggerPayload`); default null. */
  readonly triggerPayload?: string | null
  /** Who the run's spend counts against (see `WorkflowRunRecord.creator`); default null. */
  readonly creator?: string | null
  /**
   * Steps of a rerun inserted `completed` with an earlier run's result instead of `pending` (same
   * transaction; they count in `completedSteps`). Each id must be one of `stepIds`.
   */
  readonly reusedSteps?: readonly ReusedStep[]
}

/** A step a rerun takes over from an earlier run: inserted `completed`, attempt 0, no tokens. */
export interface ReusedStep {
  readonly stepId: string
  /** The run whose step of this id produced the result (stored as the step's `reusedFrom`). */
  readonly reusedFrom: string
  readonly result: string | null
  /** The rendered input the result was produced from. */
  readonly input: string | null
  /** When the rerun took the result over (its start), epoch ms. */
  readonly completedAt: number
}

/** A change to one or more steps. Omitted fields keep their value. */
export interface StepPatch {
  readonly status: StepStatus
  readonly input?: string | null
  readonly result?: string | null
  readonly error?: string | null
  readonly attempt?: number
  readonly startedAt?: number | null
  readonly completedAt?: number | null
  readonly inputTokens?: number | null
  readonly outputTokens?: number | null
}

/** How a run ended. */
export interface RunCompletion {
  readonly status: RunStatus
  readonly error: string | null
  readonly completedAt: number
  /** Steps still `pending` or `running` get this status in the same transaction (e.g. `cancelled`). */
  readonly remainingSteps?: StepStatus
}

/** Filter and page of `listRuns`. */
export interface ListRunsQuery {
  /** Newest first; default 20, at most 500 (SECURITY.md SQL-4). */
  readonly limit?: number
  readonly status?: RunStatus
  readonly workflowName?: string
  /**
   * Only runs older, in the listing's order (`startedAt`, a run not started counting as 0, then
   * `id`, newest first), than the one with this `startedAt` and `id`: the page after a page that
   * ended with that run.
   */
  readonly before?: { readonly startedAt: number; readonly id: string }
}

/**
 * Persists runs and their steps. Implementations: `SqliteWorkflowStore` (`@lango/workflow/sqlite`,
 * portable kysely SQL) and `MemoryWorkflowStore` (`@lango/workflow/testing`); both pass
 * `workflowStoreContract()`.
 *
 * Rules every implementation keeps:
 * - each call that changes steps is one transaction (a step's state change never half-applies);
 * - `(runId, stepId)` is unique;
 * - owned calls change nothing and return `false` unless the run is `pending`/`running` and its owner
 *   and lease version are `options.lease`'s (the fencing condition is part of the same statement);
 * - a run's lease version only grows: `insertRun` stores 1 and every `claimRuns` of it adds 1;
 * - `completedSteps` counts steps whose status is `completed`.
 */
export interface WorkflowStore {
  /**
   * Inserts a run (lease version 1, `leaseExpiresAt` as given, `rerunOf`) and one row per step, in
   * one transaction: `pending`, or `completed` with `reusedFrom` for each of `reusedSteps`.
   */
  insertRun(run: NewWorkflowRun, options?: StoreCallOptions): Promise<void>
  /** Changes one step (and the run's `completedSteps` when it becomes `completed`) in one transaction. */
  updateStep(runId: string, stepId: string, patch: StepPatch, options: OwnedCallOptions): Promise<boolean>
  /** Applies one patch to several steps in one transaction (a failure's descendants become `skipped`). */
  updateSteps(
    runId: string,
    stepIds: readonly string[],
    patch: StepPatch,
    options: OwnedCallOptions,
  ): Promise<boolean>
  /**
   * Ends a run if it is still `pending` or `running`. With `lease`, only if the run's owner and
   * lease version are still that lease's; without, whoever owns it (cancelling a run another
   * engine or none holds). Returns whether it changed.
   */
  finishRun(
    runId: string,
    completion: RunCompletion,
    options?: StoreCallOptions & { readonly lease?: RunLease },
  ): Promise<boolean>
  getRun(runId: string, options?: StoreCallOptions): Promise<WorkflowRunRecord | undefined>
  /** A run's steps in definition order. */
  listSteps(runId: string, options?: StoreCallOptions): Promise<StepRunRecord[]>
  listRuns(query?: ListRunsQuery, options?: StoreCallOptions): Promise<WorkflowRunRecord[]>
  /** Records that `owner` is alive at `now` (creates its row on first call). */
  heartbeat(owner: string, now: number, options?: StoreCallOptions): Promise<void>
  /**
   * Extends to `leaseExpiresAt` the lease of each given run that is still `pending`/`running`,
   * owned by `owner` at that lease version, in one statement. Returns the ids it extended: a run
   * left out was taken over or ended, and `owner` must stop working on it.
   */
  renewLeases(
    owner: string,
    runs: readonly LeasedRun[],
    leaseExpiresAt: number,
    options?: StoreCallOptions,
  ): Promise<string[]>
  /**
   * Forgets an owner and expires the leases of its unfinished runs, so they can be taken over at
   * once (graceful stop, or a host that knows the owner is dead).
   */
  releaseOwner(owner: string, options?: StoreCallOptions): Promise<void>
  /**
   * Takes over `pending`/`running` runs whose lease expired before `request.now` (whoever owned
   * them, `owner` included), or that have no lease expiry and an owner silent since
   * `request.staleBefore`: in one transaction, each gets `owner`, lease version + 1 and
   * `request.leaseExpiresAt`, and its `running` steps are reset to `pending`. Concurrent claims
   * never take the same run twice (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite: the transaction
   * takes the write lock first). Returns the runs taken with their new versions, oldest first.
   */
  claimRuns(owner: string, request: ClaimRunsRequest, options?: StoreCallOptions): Promise<LeasedRun[]>
  /**
   * Deletes ended runs (and their steps) that completed before `completedBefore`, and beyond the
   * newest `keep` ended runs. Returns how many runs were deleted.
   */
  pruneRuns(
    policy: { readonly completedBefore: number; readonly keep: number },
    options?: StoreCallOptions,
  ): Promise<number>
}

/** Opaque handle returned by `Clock.setTimeout`. */
export type TimerHandle = unknown

/** Time and timers; `systemClock` by default (it wraps the globals in arrows, so fake timers apply). */
export interface Clock {
  /**
   * The current wall-clock time (timestamps, leases). Engines sharing a database compare lease
   * expiries written by each other's clocks: give them clocks that agree (the host's clock
   * corrected to the database server's time).
   */
  now(): Date
  /** Calls `callback` once after `ms` milliseconds (timeouts, backoff, heartbeats). */
  setTimeout(callback: () => void, ms: number): TimerHandle
  /** Cancels a timer; unknown or already fired handles are ignored. */
  clearTimeout(handle: TimerHandle): void
}

/** Structured fields of a log line. Never prompts, results, commands' secrets or env values. */
export type LogFields = Readonly<Record<string, unknown>>

/** Narrow structured logger; `silentLogger` by default. A pino logger fits with `(m, f) => pino.info(f ?? {}, m)`. */
export interface Logger {
  debug(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  error(message: string, fields?: LogFields): void
}
