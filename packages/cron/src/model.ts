/** What a job runs: an agent prompt (`ai`) or a shell command (`shell`). */
export type CronJobKind = 'ai' | 'shell'

/**
 * How the schedule text is read. `interval` and `once` (seed 002) are accepted as aliases on input.
 * `webhook` never fires by the clock: its schedule is a hook name, and the host starts a run with
 * `CronService.trigger` and a payload when that hook is called.
 */
export type ScheduleType = 'cron' | 'every' | 'at' | 'webhook'

/** Which agent session an `ai` job runs in: one per run (`isolated`) or one shared per job (`main`). */
export type SessionMode = 'isolated' | 'main'

/** What happens when an occurrence comes due while the job's previous run is still going. */
export type OverlapPolicy = 'skip' | 'queue_one' | 'allow'

/** What happens on start to occurrences missed while no scheduler was running. */
export type CatchupPolicy = 'latest' | 'none'

/** Why a run row exists: `webhook` is a run a `webhook` job's hook started with a payload. */
export type RunTrigger = 'schedule' | 'manual' | 'catchup' | 'webhook'

/** Life cycle of a run row; only `running` is not final. */
export type CronRunStatus =
  | 'running'
  | 'completed'
  | 'failed'
  | 'timed_out'
  | 'cancelled'
  | 'skipped'
  | 'interrupted'

/**
 * Summary of delivering a run's result to its targets, recorded separately from the run status:
 * `none` (no target, or the job's `notify` policy skipped this run), `pending` while any target is
 * waiting for a first send or a retry, `failed` once every target is final and one failed,
 * `delivered` when every target was delivered. The per-target rows are {@link CronDelivery}.
 */
export type DeliveryStatus = 'delivered' | 'failed' | 'pending' | 'none'

/**
 * Which runs a job delivers: `always` (every completed, failed or timed-out run; the default),
 * `failure` (failed and timed-out runs only), `state_changes` (a run whose outcome differs from the
 * previous run's: the first failure after a success, the first success after a failure; a job's
 * first run counts as following a success), `never`.
 */
export type NotifyPolicy = 'always' | 'failure' | 'state_changes' | 'never'

/** Life cycle of one delivery row: `pending` (due at `nextAttemptAt`), `sending`, then final. */
export type CronDeliveryStatus = 'pending' | 'sending' | 'delivered' | 'failed'

/**
 * One row of the delivery ledger `cron_deliveries`: a run's result on its way to one target, unique
 * on `(runId, target)`. Times are epoch milliseconds (UTC).
 */
export interface CronDelivery {
  /** Also the idempotency key a channel that deduplicates gets with each send. */
  readonly id: string
  readonly runId: string
  readonly jobId: string
  readonly target: string
  readonly status: CronDeliveryStatus
  /** Sends started so far (a send is counted when it starts). */
  readonly attempts: number
  /** When a `pending` row is due; null once final. */
  readonly nextAttemptAt: number | null
  /** The channel's reason for the last failure (bounded), null when none. */
  readonly lastError: string | null
  /** The text to send: the `[Cron] <name>` header and the result or error. */
  readonly text: string
  /** The scheduler sending it (`sending` rows), or that last sent it. */
  readonly owner: string | null
  readonly createdAt: number
  readonly updatedAt: number
  readonly deliveredAt: number | null
}

/** A stored job (ARCHITECTURE.md §3). Times are epoch milliseconds (UTC). */
export interface CronJob {
  readonly id: string
  readonly name: string
  readonly kind: CronJobKind
  readonly scheduleType: ScheduleType
  readonly schedule: string
  /** IANA zone the schedule is evaluated in; resolved and stored at creation. */
  readonly timezone: string
  readonly prompt: string | null
  /** The unresolved command text (secret tokens stay tokens; SECURITY.md CRON-4). */
  readonly command: string | null
  readonly cwd: string | null
  readonly model: string | null
  readonly sessionMode: SessionMode
  /** Delivery targets, each `channel` or `channel:id`. */
  readonly deliverTo: readonly string[]
  readonly enabled: boolean
  readonly timeoutMs: number
  readonly overlap: OverlapPolicy
  readonly catchup: CatchupPolicy
  /** Which runs are delivered to `deliverTo` (default `always`). */
  readonly notify: NotifyPolicy
  readonly createdAt: number
  /** Last change to the job's definition (not to its run state). */
  readonly updatedAt: number
  readonly lastRunAt: number | null
  readonly nextRunAt: number | null
  readonly lastStatus: CronRunStatus | null
  readonly consecutiveFailures: number
  /** Why the job is disabled when the scheduler disabled it (auto-pause, `at` done). */
  readonly pauseReason: string | null
  /** Who created the job (a session key such as `telegram:1:2`), shown when listing (SECURITY.md CRON-5). */
  readonly createdBy: string | null
  /**
   * Dead-man monitor URL (healthchecks.io style), or null: each run pings `<url>/start` when it
   * starts and `<url>` or `<url>/fail` when it ends, through the scheduler's `RunMonitor` port.
   * An http(s) URL without credentials, at most 2048 characters (checked on create and update).
   */
  readonly pingUrl: string | null
  /**
   * The gate of an `ai` job, or null: a shell command (unresolved, like `command`) run through the
   * host's `ShellRunner` before each run. Exit 0 runs the model (a JSON stdout is given to the
   * prompt as untrusted data), exit 1 records the run `skipped` with the output as its reason and
   * costs no tokens, anything else (another code, a timeout, a refusal) fails the run.
   */
  readonly when: string | null
  /**
   * The `ai` job's daily budget in tokens (input and output, over its runs of the UTC day), or
   * null for none. The host bounds its agent turns by it (migration 0008); the scheduler only keeps it.
   */
  readonly maxTokensPerDay: number | null
  /** The `ai` job's daily budget in US dollars, as {@link CronJob.maxTokensPerDay}; null for none. */
  readonly maxCostPerDay: number | null
}

/** One row of the occurrence ledger `cron_runs`, unique on `(jobId, scheduledFor)`. */
export interface CronRun {
  readonly id: string
  readonly jobId: string
  readonly jobName: string
  readonly trigger: RunTrigger
  readonly status: CronRunStatus
  readonly scheduledFor: number
  readonly startedAt: number | null
  readonly completedAt: number | null
  readonly durationMs: number | null
  /** Bounded result text (agent reply or shell stdout). */
  readonly result: string | null
  readonly error: string | null
  readonly skipReason: string | null
  readonly deliveryStatus: DeliveryStatus
  readonly deliveryError: string | null
  /**
   * Tokens the agent reported for an `ai` run (prompt, tool results and history sent to the model);
   * for a failed run, what its runner's rejection said it spent (`AgentRunFailure.usage`). Null for
   * shell runs, runs whose runner reported no usage, and runs cancelled or timed out.
   */
  readonly inputTokens: number | null
  /** Tokens the model generated in an `ai` run; null as for {@link CronRun.inputTokens}. */
  readonly outputTokens: number | null
  /** Instance id of the scheduler that claimed the row. */
  readonly owner: string | null
}

/** A fire time reported after create/update: the same instant in UTC and in the job's zone. */
export interface NextRun {
  /** Epoch milliseconds. */
  readonly at: number
  /** ISO 8601 in UTC, e.g. `2026-03-08T07:00:00.000Z`. */
  readonly utc: string
  /** ISO 8601 in the job's zone with its offset, e.g. `2026-03-08T03:00:00-04:00`. */
  readonly local: string
  readonly timezone: string
}
