/**
 * Terminology
 * - job: a stored schedule plus what it runs (an agent prompt or a shell command); see {@link CronJob}.
 * - occurrence: one instant at which a job's schedule fires, identified by `(jobId, scheduledFor)`.
 * - ledger: the `cron_runs` table. An occurrence is *claimed* by inserting its row (unique on
 *   `(job_id, scheduled_for)`) before any side effect, so it runs at most once even with several
 *   schedulers on one database. A row that lost the insert race means another scheduler owns it.
 * - run: the execution of a claimed occurrence, or of a manual trigger (its own row).
 * - owner: the instance id of the scheduler that claimed a run; owners heartbeat, and `running`
 *   rows of owners whose lease expired become `interrupted`.
 * - catch-up: on start, the one latest occurrence missed while no scheduler ran, if it is inside
 *   the job's catch-up window; every other missed occurrence is recorded `skipped` with a reason.
 *   A scheduler that starts while another is alive (see {@link CronStore.liveOwners}) plans the jobs
 *   it finds due as a late timer would, not as catch-up: the cluster was not down.
 * - exclusive claim: the claim of a `running` row of a job whose overlap is `skip` or `queue_one`;
 *   the store inserts it `running` only while no other row of the job is `running` (whichever
 *   scheduler owns that one), else `skipped` (see {@link NewCronRun.exclusive}).
 * - wall time: a date and clock reading in a job's time zone, which may not exist (spring gap) or
 *   exist twice (fall back).
 */
import type {
  CronDelivery,
  CronJob,
  CronJobKind,
  CronRun,
  CronRunStatus,
  DeliveryStatus,
  RunTrigger,
  ScheduleType,
} from './model.js'

/** Opaque handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown

/** Time and timers. Inject {@link FakeClock} (from `@lango/cron/testing`) in tests. */
export interface Clock {
  /** The current wall-clock time. */
  now(): Date
  setTimeout(callback: () => void, ms: number): TimerHandle
  clearTimeout(handle: TimerHandle): void
}

/** The real clock; wraps the globals in arrows so `vi.useFakeTimers()` also applies. */
export const systemClock: Clock = {
  now: () => new Date(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

/** Structured fields of a log line, scoped by `jobId` / `runId`. Never prompts, results or commands. */
export type LogFields = Readonly<Record<string, unknown>>

/**
 * Narrow structured logger; {@link silentLogger} by default. Library code never calls `console.*`.
 * A pino logger fits with `(message, fields) => pino.info(fields ?? {}, message)` per level.
 */
export interface Logger {
  debug(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  error(message: string, fields?: LogFields): void
}

/** The logger used when none is given: drops everything. */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
}

/** Makes unique ids for jobs, runs and scheduler instances. */
export type IdGenerator = () => string

/** What an `ai` job asks of the agent. */
export interface AgentRunRequest {
  /** The job prompt wrapped with the automation prefix and the recent results. */
  readonly prompt: string
  /** `cron:<name>` (main session) or `cron:<name>:<runId>` (isolated). */
  readonly sessionKey: string
  readonly model?: string
  readonly jobName: string
  /**
   * The job's id: unlike its name it never changes, so a host that keeps per-job records (a
   * daily budget) keys them by it and a rename does not reset them.
   */
  readonly jobId: string
  readonly runId: string
  /**
   * Who the run's spend counts against: the job's `createdBy` (the session key of the person who
   * created it); absent for a job the host made. The same optional extra as every Lango package's
   * `AgentRunRequest` (docs/decisions/0006): a host bounds each creator's daily spend with it.
   */
  readonly creator?: string
}

/** The agent's answer. */
export interface AgentRunResult {
  readonly text: string
  /**
   * Tokens the run used (`inputTokens`: prompt, tool results and history sent to the model;
   * `outputTokens`: what the model generated), summed over every model call of the run. Stored on
   * the run (`CronRun.inputTokens` / `outputTokens`) and counted by the daily AI token budget
   * (`maxAiTokensPerDay`). A runner that cannot count leaves it out; the run then records none.
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
   * Stored on the failed run and counted by the daily AI token budget (`maxAiTokensPerDay`),
   * like a completed run's.
   */
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
  /**
   * `false`: trying again cannot succeed (a spending budget is exhausted, the step limit was reached,
   * the model server refused the key). Cron never retries a run, so it does not read this.
   */
  readonly retryable?: boolean
  /**
   * `false`: the runner refused before doing anything (a daily spending budget already spent, no
   * model call). Cron then records the run `skipped` with the error's message, as its own budgets do: not a
   * failure, so a job whose daily budget is spent is not paused for good.
   */
  readonly started?: boolean
}

/** The second argument of `AgentRunner.run` (the same in every Lango package, docs/decisions/0006). */
export interface AgentRunOptions {
  /**
   * Aborted on the job's timeout, pause, remove and scheduler stop. Its `reason` says which: a
   * `CronError` `CRON_RUN_TIMEOUT` for the timeout, `CRON_RUN_CANCELLED` with `data.status`
   * `cancelled` for a pause or remove and `interrupted` for a stop (or a run another scheduler
   * took for dead while this one stalled): the run is recorded with that status.
   */
  readonly signal: AbortSignal
  /**
   * Tells cron the tokens the run has spent so far (a running total; the last call wins). A run
   * that ends by its `signal` (timed out, cancelled, interrupted) is recorded, and counted by
   * `maxAiTokensPerDay`, with the last total told: its promise is not waited for, so a runner says
   * what the call under way cost from a listener on `signal` (listeners run before cron records the
   * run). A completed or failed run's own `usage` wins. A runner that cannot count never calls it; cron passes it on every run (other callers of a runner may not).
   */
  readonly onUsage?: (usage: { readonly inputTokens: number; readonly outputTokens: number }) => void
}

/** Runs one agent turn for a fired `ai` job. Implemented by the host. */
export interface AgentRunner {
  run(request: AgentRunRequest, options: AgentRunOptions): Promise<AgentRunResult>
}

/** What a `shell` job asks of the shell. The command is the stored, unresolved text. */
export interface ShellRunRequest {
  readonly command: string
  /** The job's working directory, when it has one; the runner's default otherwise. */
  readonly cwd?: string
  readonly timeoutMs: number
  readonly jobName: string
  readonly runId: string
  /**
   * True when the command is an `ai` job's `when` gate (`CronJob.when`), run before the model is
   * called; its exit code decides whether the run goes on (0), is skipped (1) or fails.
   */
  readonly gate?: boolean
  /**
   * The body of the webhook call that started the run (`trigger: 'webhook'`), untrusted: never
   * part of `command`. A host may hand it to the command out of band (the server writes it to a
   * shell job's stdin, and hands it to a saved workflow as `{{trigger.payload}}`).
   */
  readonly payload?: string
}

/** Result of a shell run; a non-zero exit code or `blocked` makes the run `failed`. */
export interface ShellRunResult {
  readonly exitCode: number | null
  readonly stdout: string
  readonly stderr: string
  readonly timedOut?: boolean
  /** The runner's guard refused the command (SECURITY.md CRON-4); the run fails with `message`. */
  readonly blocked?: boolean
  readonly message?: string
}

/**
 * Runs a `shell` job's command. Implemented by the host over `@lango/exec`, applying the CLI
 * guard, the env builder, secret resolution and output caps at every fire (SECURITY.md CRON-4).
 * `options.signal` is aborted as for {@link AgentRunner}, with the same `reason`s.
 */
export interface ShellRunner {
  run(request: ShellRunRequest, options: { readonly signal: AbortSignal }): Promise<ShellRunResult>
}

/**
 * Sends text to a delivery target (`telegram`, `telegram:123`, `slack:C1`, `webhook`). Implemented
 * by the host's channels. `options.signal` is aborted after `deliveryTimeoutMs` and on pause,
 * remove and stop.
 */
export interface ChannelSender {
  /**
   * Rejects to fail the attempt: with a `DeliveryError` (`retryAfterMs`, `permanent`) to steer the
   * delivery ledger's retry, with anything else to have it retried with backoff. `idempotencyKey`
   * (the delivery's id, the same on every attempt) is given to cron's deliveries; a channel that can
   * deduplicate passes it on (the webhook's `Idempotency-Key` header).
   */
  send(
    target: string,
    text: string,
    options: { readonly signal: AbortSignal; readonly idempotencyKey?: string },
  ): Promise<void>
  /**
   * Optional capability: true when the channel of `target` deduplicates sends by `idempotencyKey`,
   * so a send whose outcome is unknown (timed out, or in flight when the server stopped) may be sent
   * again. Without it, or false, such a delivery is recorded `failed` rather than risk a duplicate.
   */
  canDeduplicate?(target: string): boolean
}

/** The moment of a run a {@link RunMonitor} is told about: it started, completed, or ended otherwise. */
export type PingPhase = 'start' | 'success' | 'failure'

/**
 * What a ping may say about its run besides the phase: identifiers, the final status and an exit
 * code. Never the result text, the error text, the command or the prompt (they may hold secrets).
 */
export interface PingDetails {
  readonly jobId: string
  readonly jobName: string
  readonly runId: string
  /** The run's final status (end pings only). */
  readonly status?: CronRunStatus
  /** The run's duration in milliseconds (end pings only). */
  readonly durationMs?: number
  /** A failed shell run's exit code, when it exited with one. */
  readonly exitCode?: number
}

/**
 * Tells an outside dead-man monitor (a healthchecks.io-style service) about a job's runs, for jobs
 * with a `pingUrl`. Implemented by the host (apps/server sends HTTP requests to `<url>/start`,
 * `<url>` and `<url>/fail`). The scheduler calls it fire-and-forget: a ping never delays or fails a
 * run. `options.signal` is aborted after `pingTimeoutMs`; a rejection is logged and counted (see
 * `CronScheduler.pingStats`), never thrown into the run.
 */
export interface RunMonitor {
  ping(
    url: string,
    phase: PingPhase,
    options: { readonly signal: AbortSignal; readonly details: PingDetails },
  ): Promise<void>
}
/** What a {@link RunScope} is told about the run it wraps: ids, names and kinds only. */
export interface RunScopeInfo {
  readonly jobId: string
  readonly jobName: string
  readonly runId: string
  readonly kind: CronJobKind
  readonly trigger: RunTrigger
}

/**
 * Wraps the whole of each run (the agent or shell port, the completion, the delivery) in the host's
 * own context: apps/server starts the run's trace span there, so the port calls of the run nest
 * under it. It must call `work` once and settle as `work` does. Default: none.
 */
export type RunScope = <T>(run: RunScopeInfo, work: () => Promise<T>) => Promise<T>

/** Which jobs {@link CronStore.listJobs} returns, and which page of them. */
export interface JobListFilter {
  readonly enabled?: boolean
  readonly ids?: readonly string[]
  readonly createdBy?: string
  /** Only jobs whose name sorts after this one (the last name of the previous page). */
  readonly after?: string
  /**
   * Only jobs whose `updatedAt` is at or after this time (epoch ms): what a scheduler reads to pick
   * up jobs another instance created, changed, paused or resumed. Combines with the other filters
   * and with keyset paging.
   */
  readonly changedSince?: number
  /** At most this many jobs (a positive integer). */
  readonly limit?: number
  /** Only jobs whose name contains this text, ignoring ASCII case. */
  readonly nameContains?: string
  readonly kind?: CronJobKind
  /** Only jobs whose schedule is read in this IANA zone. */
  readonly timezone?: string
  /** Only jobs of this schedule type. */
  readonly scheduleType?: ScheduleType
  /**
   * Only jobs whose stored schedule is exactly this text: with `scheduleType: 'webhook'`, the jobs
   * of one hook (an indexed lookup, not a scan of every job).
   */
  readonly schedule?: string
  /**
   * Only jobs whose last outcome is this status: the job's `lastStatus`, set by the last run that
   * ended `completed`, `failed` or `timed_out` (what failure counts and `notify: state_changes`
   * follow; a cancelled, skipped or interrupted run leaves it as it was). `null`: jobs without one.
   */
  readonly lastStatus?: CronRunStatus | null
  /** `true`: only jobs with a run in progress (on any instance); `false`: only the others. */
  readonly running?: boolean
  /** `true`: only jobs with a failure since their last completed run; `false`: only jobs without. */
  readonly failing?: boolean
  /**
   * `true`: only jobs whose newest run with a final delivery (`delivered` or `failed`) failed to
   * deliver; `false`: only the others.
   */
  readonly lastDeliveryFailed?: boolean
  /** The order (default `name`); see `jobSortKey` (job-order.ts). */
  readonly sort?: JobSort
  /**
   * With a `sort` other than `name`, the keyset position of the previous page's last job: its
   * `jobSortKey`; `after` is then its name, the tie-breaker.
   */
  readonly afterKey?: number
}

/**
 * Orders of {@link CronStore.listJobs}: `name`; `next_run` (soonest first, none last); `last_run`
 * (most recent first, never last); `failures` (most consecutive failures first). Ties by name.
 */
export type JobSort = 'name' | 'next_run' | 'last_run' | 'failures'

/** The filters of {@link JobListFilter} without its paging, order and id list: what a count takes. */
export type JobCountFilter = Omit<JobListFilter, 'ids' | 'after' | 'afterKey' | 'limit' | 'sort'>

/** Options every store call accepts. */
export interface StoreCallOptions {
  readonly signal?: AbortSignal
}

/** Fields of a job the store can change; run-state fields do not touch `updatedAt`. */
export type CronJobPatch = Partial<Omit<CronJob, 'id' | 'createdAt'>>

/** A ledger row to insert; conflicts on `(jobId, scheduledFor)` are ignored. */
export interface NewCronRun {
  readonly id: string
  readonly jobId: string
  readonly jobName: string
  readonly trigger: RunTrigger
  /** `running` (a claim that starts now) or `skipped` (a recorded miss). */
  readonly status: 'running' | 'skipped'
  readonly scheduledFor: number
  readonly startedAt: number | null
  readonly completedAt: number | null
  readonly skipReason: string | null
  readonly owner: string | null
  /**
   * Only on a `running` row: claim it exclusively (overlap `skip` and `queue_one`). In the same
   * statement as the insert, the store checks the job for another `running` row, whoever owns it;
   * if there is one, the row is stored `skipped` instead, with `skipReason`, `startedAt` null and
   * `completedAt` set to this row's `startedAt`. Either way it takes the occurrence's one row.
   */
  readonly exclusive?: { readonly skipReason: string }
}

/** An occurrence: a job and the instant its schedule fired, the ledger's unique key. */
export interface OccurrenceKey {
  readonly jobId: string
  readonly scheduledFor: number
}

/** What {@link CronStore.insertRuns} did with the rows it was given. */
export interface RunInsertResult {
  /** Ids of the rows this call inserted: the occurrences it claimed. The others were taken already. */
  readonly inserted: ReadonlySet<string>
  /**
   * Ids of the `exclusive` rows among `inserted` that were stored `skipped` because another run of
   * their job was `running`: the occurrence is claimed, and recorded skipped.
   */
  readonly overlapSkipped: ReadonlySet<string>
}

/** A final run status to record on its job ({@link CronStore.recordOutcome}'s arguments). */
export interface RunOutcome {
  readonly jobId: string
  readonly status: CronRunStatus
  readonly failed: boolean
}

/** What {@link CronStore.completeRunWithOutcome} did. */
export interface CompletionWithOutcome {
  /** The run row was finalised (what `completeRun` returns). */
  readonly updated: boolean
  /** The job's `consecutiveFailures` after the outcome, or undefined (not finalised, or no job). */
  readonly failures: number | undefined
}

/** The final state of a run. */
export interface RunCompletion {
  /** `skipped` only for a run its job's `when` gate skipped (with `skipReason`). */
  readonly status: Exclude<CronRunStatus, 'running'>
  readonly completedAt: number
  readonly durationMs: number
  readonly result: string | null
  readonly error: string | null
  /** Tokens the agent reported for an `ai` run; null for shell runs and runs without a count. */
  readonly inputTokens: number | null
  readonly outputTokens: number | null
  /** Why the run was skipped (a `skipped` completion); left as it is when absent. */
  readonly skipReason?: string | null
  /**
   * The scheduler finalising the run, when it is the run's owner: a row that another scheduler
   * marked `interrupted` (taking a late heartbeat for a dead owner) while this one still ran it is
   * finalised too, so a run that finished records what it did.
   */
  readonly owner?: string
}

/** Tokens recorded by runs that ended within one time bucket; see {@link CronStore.aiTokenTotals}. */
export interface TokenTotal {
  /** Start of the bucket: epoch milliseconds, a multiple of the bucket size. */
  readonly at: number
  /** Input plus output tokens of the runs that ended in the bucket. */
  readonly tokens: number
}

/**
 * Run-state update for one job after its occurrence was handled. Applied by compare-and-set (see
 * {@link CronStore.updateSchedules}): it only ever moves a job forward.
 */
export interface JobScheduleUpdate {
  readonly id: string
  /** The next occurrence; null (no further one) is written only with `disable`, else ignored. */
  readonly nextRunAt: number | null
  readonly lastRunAt?: number
  /** Set to disable the job (an `at` job that fired, or an auto-pause). */
  readonly disable?: { readonly reason: string }
  /**
   * The job's `updatedAt` the update was computed from: when given, a job changed since then (its
   * `updatedAt` differs) is left as it is, for its new definition has its own next run time.
   */
  readonly version?: number
}

/**
 * An enabled job's schedule, without its definition: what a preview reads of every other job to find
 * the ones that fire in the same minute; see {@link CronStore.enabledSchedules}. A {@link CronJob} is one.
 */
export type JobSchedule = Pick<
  CronJob,
  'id' | 'name' | 'scheduleType' | 'schedule' | 'timezone' | 'enabled' | 'nextRunAt'
>

/** A job's identity and version, without its definition; see {@link CronStore.changedJobVersions}. */
export interface JobVersion {
  readonly id: string
  readonly name: string
  readonly enabled: boolean
  readonly updatedAt: number
}

/** A delivery ledger row to insert (`pending`, due at `nextAttemptAt`); conflicts on `(runId, target)` are ignored. */
export interface NewCronDelivery {
  readonly id: string
  readonly runId: string
  readonly jobId: string
  readonly target: string
  readonly text: string
  readonly createdAt: number
  readonly nextAttemptAt: number
}

/** How one send of a claimed (`sending`) delivery ended; see {@link CronStore.finishDelivery}. */
export interface DeliveryUpdate {
  /** The owner that claimed the row: the update applies only while the row is `sending` by it. */
  readonly owner: string
  /** `pending` (a retry, due at `nextAttemptAt`), or final. */
  readonly status: 'pending' | 'delivered' | 'failed'
  readonly nextAttemptAt: number | null
  readonly lastError: string | null
  readonly now: number
}

/** Filter for {@link CronStore.listRuns}. */
export interface ListRunsOptions extends StoreCallOptions {
  readonly jobId?: string
  /** Capped by the store at 500 (SECURITY.md SQL-4). */
  readonly limit?: number
  readonly status?: CronRunStatus
  /**
   * Only runs older, in the listing's order (`scheduledFor` then `id`, newest first), than the one
   * with this `scheduledFor` and `id`: the page after a page that ended with that run.
   */
  readonly before?: { readonly scheduledFor: number; readonly id: string }
}

/**
 * Persists jobs and the occurrence ledger. Implementations: `SqliteCronStore`
 * (`@lango/cron/sqlite`, portable kysely queries) and `MemoryCronStore` (`@lango/cron/testing`).
 * Every state change is a single statement, so two schedulers on one database never hold a
 * transaction across an `await`.
 */
export interface CronStore {
  /** Inserts a job; throws `CRON_DUPLICATE_NAME` when the name is taken. */
  insertJob(job: CronJob, options?: StoreCallOptions): Promise<void>
  /** Applies a patch and returns the updated job, or `undefined` when it does not exist. */
  updateJob(id: string, patch: CronJobPatch, options?: StoreCallOptions): Promise<CronJob | undefined>
  /** Deletes a job, its runs and their deliveries; false when it did not exist. */
  deleteJob(id: string, options?: StoreCallOptions): Promise<boolean>
  getJob(id: string, options?: StoreCallOptions): Promise<CronJob | undefined>
  getJobByName(name: string, options?: StoreCallOptions): Promise<CronJob | undefined>
  /**
   * Jobs ordered by name. `ids` restricts to those ids, `enabled` to enabled or disabled jobs,
   * `createdBy` to those one session key created; `after` (a name) and `limit` read one page, the
   * jobs named after `after`, at most `limit` of them (keyset paging: start-up reads its jobs page
   * by page, so 10,000 jobs never sit decoded in memory twice).
   */
  listJobs(options?: StoreCallOptions & JobListFilter): Promise<CronJob[]>
  /**
   * Optional capability: the schedule of every enabled job ({@link JobSchedule}), by name. What
   * a create's or update's preview reads to find clashes, without reading and decoding every job's
   * definition (prompt, command, targets) on each create. Without it, the preview reads
   * {@link listJobs} with `enabled: true`.
   */
  enabledSchedules?(options?: StoreCallOptions): Promise<JobSchedule[]>
  /**
   * How many jobs there are; with `createdBy`, only those created by that session key (CRON-3); the
   * other filters as in {@link listJobs}.
   */
  countJobs(options?: StoreCallOptions & JobCountFilter): Promise<number>
  /** Cheap freshness check at fire time: `enabled` and `updatedAt` of the given jobs (missing ids are absent). */
  jobVersions(
    ids: readonly string[],
    options?: StoreCallOptions,
  ): Promise<ReadonlyMap<string, { readonly enabled: boolean; readonly updatedAt: number }>>
  /**
   * The version (`id`, `name`, `enabled`, `updatedAt`) of each job changed at or after `changedSince`,
   * ordered by name, one page: those named after `after`, at most `limit`. What the job sync reads
   * every few seconds: no job is decoded unless its version differs from the one armed.
   */
  changedJobVersions(
    input: { readonly changedSince: number; readonly after?: string; readonly limit: number },
    options?: StoreCallOptions,
  ): Promise<JobVersion[]>
  /**
   * Sets next/last run times (and optionally disables) for many jobs, by compare-and-set, so a late
   * write of one scheduler never undoes a newer write of another: `next_run_at` is set only on an
   * enabled job and only forward (where it is null or earlier than the update's), `last_run_at`
   * only forward, and a disable only on an enabled job; with `version`, only while the job's
   * `updatedAt` still equals it. A job disabled meanwhile is never given a next run time back.
   */
  updateSchedules(updates: readonly JobScheduleUpdate[], options?: StoreCallOptions): Promise<void>
  /**
   * Inserts ledger rows, ignoring those whose `(jobId, scheduledFor)` exists: the claim. Rows marked
   * `exclusive` are stored `running` only while no other row of their job is `running`, checked in
   * the insert's own statement, else `skipped` with their reason. Returns the ids this call
   * inserted, and which of those were stored `skipped` for overlap: a row in neither set belongs to
   * another scheduler.
   */
  insertRuns(runs: readonly NewCronRun[], options?: StoreCallOptions): Promise<RunInsertResult>
  /**
   * Optional capability: which of `occurrences` have a ledger row already, whoever wrote it, in any
   * order. A scheduler that lost the claim of an occurrence waiting for one of its run slots asks
   * this about the others still waiting, and drops those another scheduler took, instead of racing
   * for each in turn. Without it, each waiting occurrence is claimed (and lost) on its own.
   */
  claimedOccurrences?(
    occurrences: readonly OccurrenceKey[],
    options?: StoreCallOptions,
  ): Promise<OccurrenceKey[]>
  /**
   * Finalises a `running` row, or an `interrupted` one owned by `completion.owner`; any other row
   * is left as it is. Returns true if updated.
   */
  completeRun(id: string, completion: RunCompletion, options?: StoreCallOptions): Promise<boolean>
  /**
   * Optional capability: {@link completeRun} and then, only when it finalised the row,
   * {@link recordOutcome} of `outcome` on the run's job, in one round trip to the database (a run
   * that changes its job's outcome: its first, a failure, a recovery). Without it the scheduler makes
   * the two calls. `failures` is what `recordOutcome` returned (undefined when the row was not
   * finalised or the job is gone).
   */
  completeRunWithOutcome?(
    id: string,
    completion: RunCompletion,
    outcome: RunOutcome,
    options?: StoreCallOptions,
  ): Promise<CompletionWithOutcome>
  /** Sets a run's delivery summary (`CronRun.deliveryStatus` and `deliveryError`). */
  setDelivery(
    id: string,
    status: DeliveryStatus,
    error: string | null,
    options?: StoreCallOptions,
  ): Promise<void>
  /** Inserts delivery ledger rows, ignoring those whose `(runId, target)` exists. */
  insertDeliveries(rows: readonly NewCronDelivery[], options?: StoreCallOptions): Promise<void>
  /**
   * Claims a `pending` delivery for a send: sets it `sending` by `owner`, counts the attempt, and
   * returns the row as updated; undefined when it is not `pending` (another scheduler took it, or it
   * is gone). One compare-and-set statement.
   */
  claimDelivery(
    id: string,
    input: { readonly owner: string; readonly now: number },
    options?: StoreCallOptions,
  ): Promise<CronDelivery | undefined>
  /** Records how a send ended, only while the row is `sending` by `update.owner`; true if updated. */
  finishDelivery(id: string, update: DeliveryUpdate, options?: StoreCallOptions): Promise<boolean>
  /** `pending` deliveries, the earliest `nextAttemptAt` first, at most `limit` (capped at 500). */
  pendingDeliveries(input: { readonly limit: number }, options?: StoreCallOptions): Promise<CronDelivery[]>
  /**
   * `sending` deliveries whose owner has not heartbeated since `aliveSince` (or is unknown): sends
   * a dead scheduler left mid-way. At most `limit` (capped at 500).
   */
  orphanedDeliveries(
    input: { readonly aliveSince: number; readonly limit: number },
    options?: StoreCallOptions,
  ): Promise<CronDelivery[]>
  /** The deliveries of the given runs, by run then target. */
  listDeliveries(runIds: readonly string[], options?: StoreCallOptions): Promise<CronDelivery[]>
  /**
   * Records a final run status on its job: `lastStatus`, and `consecutiveFailures` reset to 0
   * or incremented when `failed`. Returns the new `consecutiveFailures`, or undefined if no job.
   */
  recordOutcome(
    jobId: string,
    status: CronRunStatus,
    failed: boolean,
    options?: StoreCallOptions,
  ): Promise<number | undefined>
  getRun(id: string, options?: StoreCallOptions): Promise<CronRun | undefined>
  /** Runs newest first (by `scheduledFor`). */
  listRuns(options?: ListRunsOptions): Promise<CronRun[]>
  /**
   * Start times of runs of `ai` jobs that started at or after `since` (skipped rows excluded), newest
   * first, at most `limit` (capped at 100,000): what the daily AI run budget counts (CRON-3).
   */
  aiRunStartTimes(
    input: { readonly since: number; readonly limit: number },
    options?: StoreCallOptions,
  ): Promise<number[]>
  /**
   * Tokens (input plus output) recorded by runs that ended at or after `since`, summed per
   * `bucketMs` of their end time, oldest bucket first; buckets without a counted run are absent.
   * Only `ai` runs record tokens. What the daily AI token budget counts at start (CRON-3). `bucketMs`
   * is a whole number of milliseconds, 1 or more (else `CRON_INVALID_INPUT`).
   */
  aiTokenTotals(
    input: { readonly since: number; readonly bucketMs: number },
    options?: StoreCallOptions,
  ): Promise<TokenTotal[]>
  /** Results of the job's latest `completed` runs, newest first. */
  recentResults(jobId: string, limit: number, options?: StoreCallOptions): Promise<string[]>
  /** Records that scheduler `owner` is alive at `now`. */
  heartbeat(owner: string, now: number, options?: StoreCallOptions): Promise<void>
  removeOwner(owner: string, options?: StoreCallOptions): Promise<void>
  /** Ids of the owners (schedulers) whose last heartbeat is at or after `aliveSince`, in id order. */
  liveOwners(input: { readonly aliveSince: number }, options?: StoreCallOptions): Promise<string[]>
  /**
   * Marks `running` rows whose owner has not heartbeated since `aliveSince` (or is unknown)
   * `interrupted`; returns those rows as they now are (the scheduler reports each as `run:end`).
   */
  interruptOrphanedRuns(
    input: { readonly now: number; readonly aliveSince: number; readonly reason: string },
    options?: StoreCallOptions,
  ): Promise<CronRun[]>
  /**
   * Deletes final runs scheduled before `olderThan` and all but the newest `keepPerJob` per job, and
   * the deliveries of the runs it deletes.
   */
  pruneRuns(
    input: { readonly olderThan: number; readonly keepPerJob: number },
    options?: StoreCallOptions,
  ): Promise<number>
}
