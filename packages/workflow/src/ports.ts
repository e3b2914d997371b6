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
 * - **owner** / **lease**: the engine instance working on a run, and how long its heartbeat stays
 *   valid. An engine takes over runs whose owner's lease expired (a crashed process), and resumes them.
 *
 * apps/server implements `AgentRunner`, `ShellRunner` and `ChannelSender`; structural typing checks
 * the fit there. `SqliteWorkflowStore` (`@lango/workflow/sqlite`) implements `WorkflowStore`.
 */

/** What an agent step asks the agent to do. */
export interface AgentStepRequest {
  /** The rendered prompt: templates substituted, earlier results marked as untrusted data. */
  readonly prompt: string
  /** `workflow:<name>:<run id>:<step id>`: one isolated session per step. */
  readonly sessionKey: string
  /** The step's `agent` routing hint, if any. */
  readonly agent?: string
  readonly workflowName: string
  readonly runId: string
  readonly stepId: string
}

/** What an agent step returns. */
export interface AgentStepResult {
  /** The agent's final answer; becomes the step's result (capped at `maxResultLength`). */
  readonly text: string
}

/**
 * Runs one agent turn for a `prompt` step. Implemented in apps/server (LLM tool-calling loop with
 * the automation prefix). Should reject with `signal.reason` when `signal` aborts (cancel, timeout,
 * stop); a runner that ignores it is abandoned and its late answer discarded.
 */
export interface AgentRunner {
  run(request: AgentStepRequest, options: { readonly signal: AbortSignal }): Promise<AgentStepResult>
}

/** What a shell step asks the shell to run. */
export interface ShellStepRequest {
  /**
   * The final rendered command: every `{{id.result}}` replaced by a POSIX single-quoted value.
   * `{{secret:…}}` tokens written in the YAML are passed through for the runner to resolve.
   */
  readonly command: string
  /** The step's timeout; the engine also aborts `signal` when it passes. */
  readonly timeoutMs: number
  readonly workflowName: string
  readonly runId: string
  readonly stepId: string
}

/** What a shell step returns. A non-zero `exitCode` (or `null`: killed) fails the attempt. */
export interface ShellStepResult {
  readonly exitCode: number | null
  /** Becomes the step's result, trailing newlines removed (like `$(…)`). */
  readonly stdout: string
  /** Its tail goes into the step's error when the command fails. */
  readonly stderr: string
  readonly timedOut?: boolean
}

/**
 * Runs a `run` step's command. apps/server implements it over `@lango/exec` `run()`, which applies
 * the `lango` CLI guard and the environment builder to this final rendered command at execution
 * time (SECURITY.md WF-9), runs `sh -c` in its own process group and caps output.
 * `ChildProcessShellRunner` in `@lango/workflow/testing` is a bare `sh -c` runner for tests only.
 */
export interface ShellRunner {
  run(request: ShellStepRequest, options: { readonly signal: AbortSignal }): Promise<ShellStepResult>
}

/**
 * Sends a message to a delivery target (`telegram:123`, `slack:C1`, `webhook`). Implemented in
 * apps/server; `RecordingChannelSender` in `@lango/workflow/testing`. A rejection is logged and
 * emitted as `'delivery:error'`; it never changes a run's or step's status.
 */
export interface ChannelSender {
  send(target: string, text: string, options: { readonly signal: AbortSignal }): Promise<void>
}

/** Options every store call takes. */
export interface StoreCallOptions {
  readonly signal?: AbortSignal
}

/** Store calls that change a run take the caller's owner id; they do nothing if another engine owns it. */
export interface OwnedCallOptions extends StoreCallOptions {
  readonly owner: string
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
  /** Step ids in definition order. */
  readonly stepIds: readonly string[]
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
}

/**
 * Persists runs and their steps. Implementations: `SqliteWorkflowStore` (`@lango/workflow/sqlite`,
 * portable kysely SQL) and `MemoryWorkflowStore` (`@lango/workflow/testing`); both pass
 * `workflowStoreContract()`.
 *
 * Rules every implementation keeps:
 * - each call that changes steps is one transaction (a step's state change never half-applies);
 * - `(runId, stepId)` is unique;
 * - owned calls change nothing and return `false` when the run's owner is not `options.owner`;
 * - `completedSteps` counts steps whose status is `completed`.
 */
export interface WorkflowStore {
  /** Inserts a run and one `pending` row per step, in one transaction. */
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
   * Ends a run if it is still `pending` or `running`. With `owner`, only if that engine owns it;
   * without, whoever owns it (cancelling a run no live engine holds). Returns whether it changed.
   */
  finishRun(
    runId: string,
    completion: RunCompletion,
    options?: StoreCallOptions & { readonly owner?: string },
  ): Promise<boolean>
  getRun(runId: string, options?: StoreCallOptions): Promise<WorkflowRunRecord | undefined>
  /** A run's steps in definition order. */
  listSteps(runId: string, options?: StoreCallOptions): Promise<StepRunRecord[]>
  listRuns(query?: ListRunsQuery, options?: StoreCallOptions): Promise<WorkflowRunRecord[]>
  /** Records that `owner` is alive at `now` (creates its row on first call). */
  heartbeat(owner: string, now: number, options?: StoreCallOptions): Promise<void>
  /** Forgets an owner, so its unfinished runs can be taken over at once (graceful stop). */
  releaseOwner(owner: string, options?: StoreCallOptions): Promise<void>
  /**
   * Takes over every `pending`/`running` run whose owner is not `owner` and has no heartbeat newer
   * than `staleBefore` (or no row at all), resetting its `running` steps to `pending`; each run in its
   * own transaction, compare-and-set on the old owner. Returns the ids taken.
   */
  claimRuns(owner: string, staleBefore: number, options?: StoreCallOptions): Promise<string[]>
  /**
   * Deletes ended runs (and their steps) that completed before `completedBefore`, and beyond the
   * newest `keep` ended runs. Returns how many runs were deleted.
   */
  pruneRuns(
    policy: { readonly completedBefore: number; readonly keep: number },
    options?: StoreCallOptions,
  ): Promise<number>
}

/** An opaque handle returned by `Clock.setTimeout`. */
export type TimerHandle = unknown

/** Source of wall-clock time and timers. `systemClock` by default. */
export interface Clock {
  /** The current wall-clock time (timestamps, leases). */
  now(): Date
  /** Calls `callback` once after `ms` milliseconds (timeouts, backoff, heartbeats). */
  setTimeout(callback: () => void, ms: number): TimerHandle
  /** Cancels a timer; unknown or already fired handles are ignored. */
  clearTimeout(handle: TimerHandle): void
}

/** Structured fields attached to a log line. Never prompts, results or secrets. */
export type LogFields = Readonly<Record<string, unknown>>

/** Narrow structured logger. `silentLogger` by default. */
export interface Logger {
  debug(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  error(message: string, fields?: LogFields): void
}
