/**
 * Everything `@lango/background` needs from outside, as narrow interfaces.
 *
 * Terminology
 * - **task**: one prompt submitted to run in the background. It has an id, a status and timestamps.
 * - **runner**: the single `AgentRunner.run` call that does a task's work.
 * - **slot**: permission to run. At most `maxConcurrentTasks` tasks are `running` at once.
 * - **queue**: `pending` tasks waiting for a slot, first in first out, bounded by `maxQueuedTasks`.
 * - **ended** (terminal): a task whose status is `done`, `failed` or `cancelled`. It never changes again.
 * - **deadline**: `startedAt + timeoutMs`. At the deadline the task ends `failed` with a timeout error,
 *   whether or not the runner honours its abort signal.
 * - **origin channel**: the channel a task was submitted from (e.g. `telegram:123`). Notices go there.
 * - **notice**: a short human-readable text sent through the `ChannelNotifier` to the origin channel
 *   when a task starts and when it ends.
 * - **eviction**: forgetting the oldest ended tasks beyond `maxFinishedTasks`.
 *
 * apps/server implements `AgentRunner` and `ChannelNotifier`; structural typing checks the fit there.
 * The shapes are the ones every Lango package uses (ADR 0006), so one host adapter serves them all.
 */

/** What the manager asks an agent to do for one task. */
export interface AgentRunRequest {
  /** The task's prompt, already prefixed with the automation prefix. */
  readonly prompt: string
  /** `bg:<task id>`: one isolated agent session per task. */
  readonly sessionKey: string
  /**
   * Who the task's spend counts against (`SubmitRequest.creator`), when it was submitted with one.
   * The same optional extra as every Lango package's `AgentRunRequest` (docs/decisions/0006): a host
   * bounds each creator's daily spend with it, so a task cannot spend past its submitter's budget.
   */
  readonly creator?: string
}

/** What an agent run returns. */
export interface AgentRunResult {
  /** The agent's final answer. The manager caps what it keeps (`maxResultLength`). */
  readonly text: string
  /**
   * Tokens the run used (`inputTokens`: what was sent to the model; `outputTokens`: what it
   * generated), summed over the run's model calls. Kept on the done task (`TaskSnapshot.usage`).
   * A runner that cannot count leaves it out.
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
   * Kept on the failed task (`TaskSnapshot.usage`).
   */
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
  /**
   * `false`: trying again cannot succeed (a spending budget is exhausted, the step limit was reached,
   * the model server refused the key). The failed task then says `retryable: false`, as for a `PermanentError`.
   */
  readonly retryable?: boolean
  /**
   * `false`: the runner refused before doing anything (a daily spending budget already spent, no
   * model call). The task still fails.
   */
  readonly started?: boolean
}

/**
 * Runs one agent turn for a background task. Implemented in apps/server.
 *
 * The runner should stop and reject with `signal.reason` when `signal` aborts (cancel, timeout or
 * stop). A runner that ignores its signal cannot hold a slot past the task's deadline: the manager
 * ends the task without it and discards whatever it returns later.
 */
export interface AgentRunner {
  run(request: AgentRunRequest, options: AgentRunOptions): Promise<AgentRunResult>
}

/** The second argument of `AgentRunner.run` (the same in every Lango package, docs/decisions/0006). */
export interface AgentRunOptions {
  /** Aborted on the task's cancel, timeout and the manager's stop. */
  readonly signal: AbortSignal
  /**
   * Tells the manager the tokens the turn has spent so far (a running total; the last call wins).
   * A task that ends by its `signal` (cancelled, timed out, stopped) keeps the last total told as
   * its `usage`: the manager does not wait for the runner, so a runner says what the call under
   * way cost from a listener on `signal` (listeners run before the task ends). An answer's or a
   * rejection's own `usage` wins. Never calling it is fine; the manager passes it on every task (other callers of a runner may not).
   */
  readonly onUsage?: (usage: { readonly inputTokens: number; readonly outputTokens: number }) => void
}

/**
 * Sends a notice about a task to the channel it came from: the seed's name for ADR 0006's
 * `ChannelSender`, with the same `send` method, so a host's sender fits as it is. Implemented in
 * apps/server; `RecordingChannelSender` in `@lango/background/testing`.
 *
 * A rejection, or not settling before `notifyTimeoutMs` (then `signal` aborts), is logged and
 * emitted as `'notify:error'`; it never changes the task's status.
 */
export interface ChannelNotifier {
  /** Sends `text` to `target`, the task's origin channel (`telegram:123`, `slack:C1`, `webhook`). */
  send(target: string, text: string, options: { readonly signal: AbortSignal }): Promise<void>
}

/** An opaque handle returned by `Clock.setTimeout`. */
export type TimerHandle = unknown

/**
 * Source of wall-clock time and timers. `systemClock` by default; `FakeClock` in tests. The three
 * required members are ADR 0006's `Clock`, shared by every Lango package.
 */
export interface Clock {
  /** The current wall-clock time, used for timestamps only (never for deadlines). */
  now(): Date
  /** Calls `callback` once after `ms` milliseconds. */
  setTimeout(callback: () => void, ms: number): TimerHandle
  /** Cancels a timer; unknown or already fired handles are ignored. */
  clearTimeout(handle: TimerHandle): void
  /**
   * Optional: milliseconds from an arbitrary origin that never jump (like `performance.now()`). With
   * it the manager watches all deadlines with one timer; without it, one timer per running task.
   * Either way deadlines run on elapsed time, so wall-clock steps never move them.
   */
  monotonicNow?(): number
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

/** Makes a new unique task id. The default is `crypto.randomUUID`. */
export type IdGenerator = () => string
