import * as v from 'valibot'
import { buildApprovalSummary, cronAddSummary, manageCronJobsSummary } from './approval.js'
import {
  assertDeliverable,
  type DeliveryTargetCheck,
  deliversBeyond,
  noDeliveryNote,
  resolveDeliveryTargets,
} from './delivery.js'
import { ToolError } from './errors.js'
import { ID_MAX_LENGTH, isoTime } from './format.js'
import { refuseUnknownKeys } from './option-keys.js'
import { mentionsSecret } from './persistence-risk.js'
import { decodeRunCursor, encodeRunCursor, runCursorParameter } from './run-cursor.js'
import {
  lookUpSpend,
  type RunSpend,
  type RunSpendLookup,
  SPEND_UNAVAILABLE,
  spendFields,
  spendOf,
  usageUnavailableEntry,
} from './run-spend.js'
import { quoted, word } from './text.js'
import { type AnyTool, creatorOf, defineTool, type ToolContext, type ToolSafety } from './tool.js'

/** A job as `@lango/cron`'s `CronService` returns it. */
export interface CronJobView {
  readonly id: string
  readonly name: string
  readonly kind: 'ai' | 'shell'
  readonly scheduleType: 'cron' | 'every' | 'at' | 'webhook'
  readonly schedule: string
  readonly timezone: string
  readonly prompt: string | null
  readonly command: string | null
  readonly cwd: string | null
  readonly model: string | null
  readonly sessionMode: string
  readonly deliverTo: readonly string[]
  readonly enabled: boolean
  readonly timeoutMs: number
  readonly overlap: string
  /** Which runs are delivered: `always`, `failure`, `state_changes` or `never`. */
  readonly notify: string
  readonly createdAt: number
  readonly lastRunAt: number | null
  readonly nextRunAt: number | null
  readonly lastStatus: string | null
  /** Failed or timed-out runs since the last completed one (the scheduler pauses the job at its cap). */
  readonly consecutiveFailures: number
  readonly pauseReason: string | null
  readonly createdBy: string | null
  /** Dead-man monitor URL the job's runs ping (start, then success or fail); null or absent for none. */
  readonly pingUrl?: string | null
  /** An `ai` job's gate: the shell command run before each run (0 runs, 1 skips); null or absent for none. */
  readonly when?: string | null
  /** The ai job's daily budgets (tokens, US dollars); null or absent for none. */
  readonly maxTokensPerDay?: number | null
  readonly maxCostPerDay?: number | null
}

/** A fire time as `@lango/cron` reports it. */
export interface NextRunView {
  readonly utc: string
  readonly local: string
  readonly timezone: string
}

/** A fire time with its instant, as `@lango/cron`'s preview reports it. */
interface PreviewTimeView {
  readonly utc: string
  readonly local: string
  readonly timezone: string
}

/** A preview as `@lango/cron`'s `CronService.preview` returns it (what a create or update would do). */
export interface CronPreviewView {
  readonly action: 'create' | 'update'
  readonly jobId: string | null
  readonly name: string | null
  readonly scheduleType: string
  readonly schedule: string
  readonly timezone: string
  readonly description: string
  readonly enabled: boolean
  readonly fires: readonly PreviewTimeView[]
  readonly dstNotes: readonly {
    readonly kind: string
    readonly changeAt: string
    readonly offsetBefore: string
    readonly offsetAfter: string
    readonly localTimes: readonly string[]
    readonly firesAt?: PreviewTimeView
    readonly message: string
  }[]
  readonly clashes: readonly {
    readonly at: PreviewTimeView
    readonly jobId: string
    readonly jobName: string
    readonly otherAt: PreviewTimeView
  }[]
  readonly clashCount: number
  readonly delivery: {
    readonly targets: readonly string[]
    readonly route: string
    readonly notify: string
  } | null
  readonly promptEstimate?: {
    readonly chars: number
    readonly tokens: number
    readonly tokensWithHistory: number
    readonly method: string
  }
}

/** A ledger row as `@lango/cron` returns it. */
export interface CronRunView {
  readonly id: string
  readonly jobId: string
  readonly jobName: string
  readonly trigger: string
  readonly status: string
  readonly scheduledFor: number
  readonly startedAt: number | null
  readonly completedAt: number | null
  readonly durationMs: number | null
  readonly result: string | null
  readonly error: string | null
  readonly skipReason: string | null
  /** `delivered`, `failed`, `pending` (a target waits for a retry) or `none`. */
  readonly deliveryStatus: string
  /** Tokens the agent reported for an `ai` run; null for shell runs and runs without a count. */
  readonly inputTokens: number | null
  readonly outputTokens: number | null
}

/** A delivery ledger row (one per run and target) as `@lango/cron` returns it. */
export interface CronDeliveryView {
  readonly runId: string
  readonly target: string
  readonly status: string
  readonly attempts: number
  readonly nextAttemptAt: number | null
  readonly lastError: string | null
  readonly deliveredAt: number | null
}

/** The notify policies of a job. */
type NotifyPolicy = 'always' | 'failure' | 'state_changes' | 'never'

/** A job definition as the cron tools pass it to the service. */
export interface CronToolJobInput {
  readonly name?: string
  readonly kind?: 'ai' | 'shell'
  readonly scheduleType?: string
  readonly schedule?: string
  readonly timezone?: string
  readonly prompt?: string
  readonly command?: string
  readonly cwd?: string
  readonly model?: string
  readonly sessionMode?: 'isolated' | 'main'
  readonly deliverTo?: readonly string[]
  readonly timeout?: string | number
  readonly overlap?: 'skip' | 'queue_one' | 'allow'
  readonly notify?: NotifyPolicy
  readonly enabled?: boolean
  readonly createdBy?: string
  /** Dead-man monitor URL; `''` removes it (the service validates it). */
  readonly pingUrl?: string
  /** An `ai` job's gate command; `''` removes it (the service validates it). */
  readonly when?: string
  /** An ai job's daily budget in tokens; null removes it (the service validates it). */
  readonly maxTokensPerDay?: number | null
  /** An ai job's daily budget in US dollars; null removes it (the service validates it). */
  readonly maxCostPerDay?: number | null
}

/** Which jobs a page of cron_list holds (`CronService.listPage`'s filters). */
export interface CronJobFilter {
  readonly nameContains?: string
  /** The job's last outcome (`completed`, `failed`, `timed_out`); `null`: none yet. */
  readonly lastStatus?: Exclude<(typeof LAST_STATUSES)[number], 'never' | 'running'> | null
  /** `true`: only jobs with a run in progress. */
  readonly running?: boolean
  readonly kind?: 'ai' | 'shell'
  readonly timezone?: string
  readonly enabled?: boolean
  readonly failing?: boolean
  readonly lastDeliveryFailed?: boolean
}

/** Where a page of jobs starts: after the job named `after`, keyed `afterKey` in a sort other than name. */
export interface CronJobPagePosition {
  readonly after: string
  readonly afterKey?: number
}

/** What the cron tools need; `CronService` from `@lango/cron` fits as is. */
export interface CronToolsService {
  add(input: CronToolJobInput & { name: string; scheduleType: string; schedule: string }): Promise<{
    status: 'created' | 'updated'
    job: CronJobView
    nextRuns: readonly NextRunView[]
    preview?: CronPreviewView
  }>
  create(
    input: CronToolJobInput & { name: string; scheduleType: string; schedule: string },
  ): Promise<{ job: CronJobView; nextRuns: readonly NextRunView[]; preview?: CronPreviewView }>
  /**
   * What a create would do, storing nothing (`dry_run`); a taken name previews the update of that
   * job unless `existing` is `error`.
   */
  preview(
    input: CronToolJobInput & { scheduleType: string; schedule: string },
    options?: { count?: number; existing?: 'update' | 'error' },
  ): Promise<CronPreviewView>
  /** What an update would do, storing nothing (`dry_run`). */
  previewUpdate(
    idOrName: string,
    changes: CronToolJobInput,
    options?: { count?: number },
  ): Promise<CronPreviewView>
  list(): Promise<readonly CronJobView[]>
  /**
   * Optional: one page of the jobs matching `filter` in `sort` order after `from`, and where the
   * next page starts (`null` after the last); what cron_list's paging, filters and sort read.
   */
  listPage?(
    options: CronJobFilter & {
      readonly sort: 'name' | 'next_run' | 'last_run' | 'failures'
      readonly limit: number
      readonly from?: CronJobPagePosition
    },
  ): Promise<{ readonly jobs: readonly CronJobView[]; readonly next: CronJobPagePosition | null }>
  /** Optional: how many jobs match `filter` (cron_list's `total`). */
  count?(filter: CronJobFilter): Promise<number>
  get(idOrName: string): Promise<CronJobView>
  update(
    idOrName: string,
    changes: CronToolJobInput,
  ): Promise<{ job: CronJobView; nextRuns: readonly NextRunView[]; preview?: CronPreviewView }>
  pause(idOrName: string): Promise<CronJobView>
  resume(idOrName: string): Promise<{ job: CronJobView; nextRuns: readonly NextRunView[] }>
  remove(idOrName: string): Promise<CronJobView>
  /** Runs the job now; `started`, `queued` (behind a run or the concurrency cap) or `skipped` (overlap), with why. */
  trigger(
    idOrName: string,
  ): Promise<{ readonly status: 'started' | 'queued' | 'skipped'; readonly reason?: string }>
  history(options: {
    job?: string
    limit?: number
    status?: CronRunStatusName
    /** The page after the run of this `scheduledFor` and `id` (older runs, same order). */
    before?: { readonly scheduledFor: number; readonly id: string }
  }): Promise<readonly CronRunView[]>
  /** Optional: the per-target delivery rows of runs; `cron_history` shows them with each run. */
  deliveries?(runIds: readonly string[]): Promise<readonly CronDeliveryView[]>
}

/** The statuses a cron run is recorded with (`cron_history`'s `status` filter). */
export const CRON_RUN_STATUSES = [
  'running',
  'completed',
  'failed',
  'timed_out',
  'cancelled',
  'skipped',
  'interrupted',
] as const

/** One of {@link CRON_RUN_STATUSES}. */
export type CronRunStatusName = (typeof CRON_RUN_STATUSES)[number]

/** Options for {@link createCronTools}. */
export interface CronToolsOptions {
  readonly service: CronToolsService
  /** What runs spent (model, tokens, cost), for `cron_history`; without it no model or cost is shown. */
  readonly spend?: RunSpendLookup
  /** Delivery targets when neither `deliver_to` nor the session names one. */
  readonly defaultDeliverTo?: readonly string[]
  /** Refuses a `deliver_to` target results could not reach (an unconfigured channel), before anything is stored. */
  readonly checkTarget?: DeliveryTargetCheck
}

const CRON_OPTION_KEYS = Object.keys({
  service: true,
  spend: true,
  defaultDeliverTo: true,
  checkTarget: true,
} satisfies Record<keyof CronToolsOptions, true>)
const checkCronKeys = refuseUnknownKeys('createCronTools options', CRON_OPTION_KEYS)
const checkManageKeys = refuseUnknownKeys('createManageCronJobsTool options', CRON_OPTION_KEYS)

const jobId = v.pipe(
  v.string('id must be a string'),
  v.minLength(1, 'id must not be empty'),
  v.maxLength(ID_MAX_LENGTH),
  v.description(`The job's id or its name (at most ${ID_MAX_LENGTH} characters), as cron_list shows them.`),
)
const name = v.pipe(
  v.string('name must be a string'),
  v.minLength(1, 'name must not be empty'),
  v.maxLength(64),
  v.description(
    'Unique job name, 1-64 letters, digits, -, _ or . (e.g. daily-news). Adding a job with an existing name updates that job.',
  ),
)
const schedule = v.pipe(
  v.string('schedule must be a string'),
  v.minLength(1),
  v.maxLength(200),
  v.description(
    'For cron: 5 fields "minute hour day-of-month month day-of-week" or a macro such as @daily (e.g. "0 8 * * 1-5"). For every: a duration with a unit such as 30m, 2h or 1h30m (at least 1 minute, at most 365d; a number without a unit is refused). For at: an ISO 8601 date-time, e.g. 2026-03-01T09:00 (local to timezone) or with an offset.',
  ),
)
const prompt = v.pipe(
  v.string('prompt must be a string'),
  v.minLength(1, 'prompt must not be empty'),
  v.maxLength(16_000),
  v.description(
    'What the agent should do on each run, written as an instruction to it (at most 16000 characters); the run has no memory of this conversation, so include everything it needs.',
  ),
)
const deliverTo = v.optional(
  v.pipe(
    v.array(v.pipe(v.string(), v.minLength(1), v.maxLength(256))),
    v.maxLength(10),
    v.description(
      "Where each run's result is sent: targets such as telegram, telegram:<chat id>, slack:<channel>, discord:<channel> or webhook (at most 10). Optional: omitted, the current conversation is used.",
    ),
  ),
)
/**
 * A job's dead-man monitor URL, checked in full by the service (http/https, no credentials, no
 * fragment, at most 2048 characters); `''` removes it. Its presence makes the call dangerous: the
 * job then makes an outbound HTTP call on every run, with nobody watching.
 */
const pingUrl = (field: string) =>
  v.optional(
    v.pipe(
      v.string(`${field} must be a string`),
      v.maxLength(2048, `${field} must be at most 2048 characters`),
      v.description(
        "Dead-man monitor URL (a healthchecks.io-style check, http or https, no user:password): each run requests <url>/start when it starts, then <url> when it completes or <url>/fail when it fails, times out or is cancelled, so the monitor alerts when runs stop. The request carries the run's status and exit code, never its output. '' removes it. Optional.",
      ),
    ),
  )

/** The `when` gate's description: what a model needs to write one. */
const WHEN_DESCRIPTION =
  "ai jobs: a shell command (/bin/sh -c, at most 8000 characters) run before each run to decide whether to wake the model at all. Exit 0: the run goes on, and if it prints JSON on stdout that JSON is given to the prompt (as untrusted data, at most 8000 characters). Exit 1: the run is recorded skipped, with what it printed as the reason, and uses no tokens. Any other exit code, a timeout or a refusal fails the run. Use it for cheap checks (new mail? a file changed? a value crossed a threshold?) so the agent only runs when there is something to do. '' removes it. Optional."

/** A job's `when` gate command; the service checks it (ai jobs only, length, NUL). */
const when = v.optional(
  v.pipe(
    v.string('when must be a string'),
    v.maxLength(8_000, 'when must be at most 8000 characters'),
    v.description(WHEN_DESCRIPTION),
  ),
)

/** True when a call sets a (non-empty) gate: a persisted shell command run with nobody watching. */
function setsWhen(value: unknown): boolean {
  return typeof value === 'string' && value.trim() !== ''
}
const DAILY_TOKENS =
  "Daily budget of this job's agent runs in tokens (input and output, over the UTC day): a run that would pass it stops before its next model call with budget_exhausted. null removes it. Optional."
const DAILY_COST =
  "Daily budget of this job's agent runs in US dollars, for models with a price (models.<id>.price): as for the token budget. null removes it. Optional."
/** A job's daily budget in tokens or dollars (`null` removes it); the service checks the range. */
const dailyBudget = (field: string, whole: boolean) =>
  v.optional(
    v.pipe(
      v.nullable(
        v.pipe(
          v.number(`${field} must be a number`),
          v.check(
            (value) => value > 0 && (!whole || Number.isSafeInteger(value)),
            whole ? `${field} must be a whole number of tokens above 0` : `${field} must be above 0`,
          ),
        ),
      ),
      v.description(whole ? DAILY_TOKENS : DAILY_COST),
    ),
  )

/** True when a call sets a (non-empty) ping URL: a persisted outbound call (see {@link pingUrl}). */
function setsPingUrl(value: unknown): boolean {
  return typeof value === 'string' && value.trim() !== ''
}

const timezone = v.optional(
  v.pipe(
    v.string(),
    v.minLength(1),
    v.maxLength(64),
    v.description(
      "IANA time zone the schedule is read in, e.g. Europe/Berlin; default: the server's configured zone.",
    ),
  ),
)
const timeout = v.optional(
  v.pipe(
    v.union([
      v.pipe(
        v.string(),
        v.maxLength(
          64,
          'timeout must be a duration with a unit such as 90s, 10m or 2h, at most 64 characters',
        ),
      ),
      v.pipe(v.number(), v.minValue(1)),
    ]),
    v.description(
      'How long one run may take before it is cancelled: a text with a unit such as "90s", "10m" or "2h" (a text without a unit, such as "600", is refused), or a JSON number of seconds (600). 1 second to 24 hours; default 10 minutes.',
    ),
  ),
)

/**
 * A cron_add timeout as the service takes it: a number of seconds becomes milliseconds (the
 * service's unit for numbers); a text goes as it is, and the service refuses one without a unit.
 */
function timeoutForService(value: string | number): string | number {
  return typeof value === 'number' ? Math.round(value * 1000) : value
}

/** An ISO 8601 instant, or null when there is none. */
const isoOrNull = v.nullable(v.string())
const textOrNull = v.nullable(v.string())
const countOrNull = v.nullable(v.number())

/** A job as the cron tools show it ({@link cronJobView}); `cron_list`'s `jobs`, `cron_add`'s `job`. */
export const cronJobViewSchema = v.strictObject({
  id: v.string(),
  name: v.string(),
  kind: v.picklist(['ai', 'shell']),
  schedule_type: v.picklist(['cron', 'every', 'at', 'webhook']),
  schedule: v.string(),
  timezone: v.string(),
  enabled: v.boolean(),
  next_run_at: isoOrNull,
  last_run_at: isoOrNull,
  last_status: textOrNull,
  consecutive_failures: v.number(),
  deliver_to: v.array(v.string()),
  prompt: textOrNull,
  command: textOrNull,
  /** The working directory of the job's runs; null: the host's default. */
  cwd: textOrNull,
  session_mode: v.string(),
  overlap: v.string(),
  notify: v.string(),
  timeout_ms: v.number(),
  pause_reason: textOrNull,
  created_by: textOrNull,
  ping_url: textOrNull,
  /** An `ai` job's gate (`when`), run before the model is called; null for none. */
  when: textOrNull,
  /** An `ai` job's daily budgets, tokens and US dollars; null for none. */
  max_tokens_per_day: v.nullable(v.number()),
  max_cost_per_day: v.nullable(v.number()),
})

/** A delivery ledger row as the cron tools show it ({@link cronDeliveryView}). */
export const cronDeliveryViewSchema = v.strictObject({
  target: v.string(),
  status: v.string(),
  attempts: v.number(),
  next_attempt_at: isoOrNull,
  last_error: textOrNull,
  delivered_at: isoOrNull,
})

/** A run as the cron tools show it ({@link cronRunView}); `deliveries` when the service has them. */
export const cronRunViewSchema = v.strictObject({
  id: v.string(),
  job_id: v.string(),
  job_name: v.string(),
  trigger: v.string(),
  status: v.string(),
  scheduled_for: isoOrNull,
  started_at: isoOrNull,
  completed_at: isoOrNull,
  duration_ms: countOrNull,
  result: textOrNull,
  error: textOrNull,
  skip_reason: textOrNull,
  delivery_status: v.string(),
  deliveries: v.optional(v.array(cronDeliveryViewSchema)),
  input_tokens: countOrNull,
  output_tokens: countOrNull,
  /** The model that answered and what the run cost (`cron_history` with a usage reader); absent otherwise. */
  model: v.optional(v.nullable(v.string())),
  cost_usd: v.optional(v.nullable(v.number())),
})

const previewTimeResult = v.strictObject({ local: v.string(), utc: v.string() })

/** A preview as the cron tools show it ({@link cronPreviewView}). */
export const cronPreviewViewSchema = v.strictObject({
  action: v.picklist(['create', 'update']),
  job_id: textOrNull,
  name: textOrNull,
  schedule_type: v.string(),
  schedule: v.string(),
  timezone: v.string(),
  description: v.string(),
  enabled: v.boolean(),
  fires: v.array(previewTimeResult),
  dst_notes: v.array(
    v.strictObject({
      kind: v.string(),
      change_at: v.string(),
      offset_before: v.string(),
      offset_after: v.string(),
      local_times: v.array(v.string()),
      fires_at: v.nullable(previewTimeResult),
      message: v.string(),
    }),
  ),
  clashes: v.array(
    v.strictObject({
      at: previewTimeResult,
      job_id: v.string(),
      job_name: v.string(),
      other_at: v.strictObject({ local: v.string(), utc: v.string(), timezone: v.string() }),
    }),
  ),
  clash_count: v.number(),
  delivery: v.nullable(
    v.strictObject({ targets: v.array(v.string()), route: v.string(), notify: v.string() }),
  ),
  prompt_estimate: v.optional(
    v.strictObject({
      tokens: v.number(),
      tokens_with_history: v.number(),
      chars: v.number(),
      method: v.string(),
      note: v.string(),
    }),
  ),
})

const nextRunResult = v.strictObject({ utc: v.string(), local: v.string(), timezone: v.string() })

/** `cron_add`'s answer: a dry run's preview, or the job it created or updated. */
const cronAddOutput = v.union([
  v.strictObject({
    status: v.literal('preview'),
    dry_run: v.literal(true),
    preview: cronPreviewViewSchema,
    message: v.string(),
  }),
  v.strictObject({
    status: v.picklist(['created', 'updated']),
    job: cronJobViewSchema,
    next_runs: v.array(nextRunResult),
    message: v.string(),
    delivery_note: v.optional(v.string()),
    preview: v.optional(cronPreviewViewSchema),
  }),
])

/** `cron_list`'s answer: every job, or (with any parameter) one page with its cursor and total. */
const cronListOutput = v.strictObject({
  jobs: v.array(cronJobViewSchema),
  count: v.number(),
  next_cursor: v.optional(v.nullable(v.string())),
  total: v.optional(v.number()),
})

const jobChangeOutput = <const TStatus extends string>(status: TStatus) =>
  v.strictObject({ status: v.literal(status), id: v.string(), name: v.string() })

function jobView(job: CronJobView) {
  return {
    id: job.id,
    name: job.name,
    kind: job.kind,
    schedule_type: job.scheduleType,
    schedule: job.schedule,
    timezone: job.timezone,
    enabled: job.enabled,
    next_run_at: isoTime(job.nextRunAt),
    last_run_at: isoTime(job.lastRunAt),
    last_status: job.lastStatus,
    consecutive_failures: job.consecutiveFailures,
    deliver_to: [...job.deliverTo],
    prompt: job.prompt,
    command: job.command,
    cwd: job.cwd,
    session_mode: job.sessionMode,
    overlap: job.overlap,
    notify: job.notify,
    timeout_ms: job.timeoutMs,
    pause_reason: job.pauseReason,
    created_by: job.createdBy,
    ping_url: job.pingUrl ?? null,
    when: job.when ?? null,
    max_tokens_per_day: job.maxTokensPerDay ?? null,
    max_cost_per_day: job.maxCostPerDay ?? null,
  }
}

/** A delivery ledger row as the cron tools show it (snake_case; `cron_history`'s `deliveries`). */
function deliveryView(delivery: CronDeliveryView) {
  return {
    target: delivery.target,
    status: delivery.status,
    attempts: delivery.attempts,
    next_attempt_at: isoTime(delivery.nextAttemptAt),
    last_error: delivery.lastError,
    delivered_at: isoTime(delivery.deliveredAt),
  }
}

/** A run as the cron tools show it; with `deliveries`, its per-target delivery rows. */
function runView(run: CronRunView, deliveries?: readonly CronDeliveryView[], spends?: readonly RunSpend[]) {
  const spend = spends === undefined ? undefined : spendOf(spends, run.id)
  return {
    id: run.id,
    job_id: run.jobId,
    job_name: run.jobName,
    trigger: run.trigger,
    status: run.status,
    scheduled_for: isoTime(run.scheduledFor),
    started_at: isoTime(run.startedAt),
    completed_at: isoTime(run.completedAt),
    duration_ms: run.durationMs,
    result: run.result,
    error: run.error,
    skip_reason: run.skipReason,
    delivery_status: run.deliveryStatus,
    ...(deliveries === undefined
      ? {}
      : { deliveries: deliveries.filter((row) => row.runId === run.id).map(deliveryView) }),
    // A run that failed (a budget stopped it) recorded no tokens of its own: the ledger has them.
    input_tokens: run.inputTokens ?? spend?.inputTokens ?? null,
    output_tokens: run.outputTokens ?? spend?.outputTokens ?? null,
    ...(spends === undefined ? {} : spendFields(spend)),
  }
}

/** The policy parameter of cron_add. */
const notify = v.optional(
  v.pipe(
    v.picklist(
      ['always', 'failure', 'state_changes', 'never'],
      'notify must be one of always, failure, state_changes, never',
    ),
    v.description(
      'Which runs are delivered to deliver_to: always (default: every run), failure (failed and timed-out runs), state_changes (the first failure and the recovery), never.',
    ),
  ),
)

const dryRun = v.optional(
  v.pipe(
    v.boolean('dry_run must be true or false'),
    v.description(
      'true: store nothing, only preview what this call would do: the next fire times (job zone and UTC) with the schedule in words, DST notes (local times a clock change skips or repeats, and when the job then fires), clashes (other jobs firing in the same minute), the delivery route (targets, or "history only"), and for ai jobs an estimate of the prompt tokens. Use it to check a schedule with the user before saving. Default false; a real call returns the same preview.',
    ),
  ),
)
const previewCount = v.optional(
  v.pipe(
    v.number('preview_count must be a number'),
    v.integer('preview_count must be a whole number'),
    v.minValue(1, 'preview_count must be at least 1'),
    v.maxValue(50, 'preview_count must be at most 50'),
    v.description('How many upcoming fire times the preview lists: 1 to 50, default 5.'),
  ),
)

function previewTime(time: PreviewTimeView) {
  return { local: time.local, utc: time.utc }
}

/**
 * A preview as the tools, the HTTP API and the CLI show it (snake_case). The prompt estimate is
 * characters / 4 of the prompt the job sends (automation prefix included), not a tokenizer count.
 */
export function cronPreviewView(preview: CronPreviewView) {
  return {
    action: preview.action,
    job_id: preview.jobId,
    name: preview.name,
    schedule_type: preview.scheduleType,
    schedule: preview.schedule,
    timezone: preview.timezone,
    description: preview.description,
    enabled: preview.enabled,
    fires: preview.fires.map(previewTime),
    dst_notes: preview.dstNotes.map((note) => ({
      kind: note.kind,
      change_at: note.changeAt,
      offset_before: note.offsetBefore,
      offset_after: note.offsetAfter,
      local_times: [...note.localTimes],
      fires_at: note.firesAt === undefined ? null : previewTime(note.firesAt),
      message: note.message,
    })),
    clashes: preview.clashes.map((clash) => ({
      at: previewTime(clash.at),
      job_id: clash.jobId,
      job_name: clash.jobName,
      other_at: { ...previewTime(clash.otherAt), timezone: clash.otherAt.timezone },
    })),
    clash_count: preview.clashCount,
    delivery:
      preview.delivery === null
        ? null
        : {
            targets: [...preview.delivery.targets],
            route: preview.delivery.route,
            notify: preview.delivery.notify,
          },
    ...(preview.promptEstimate === undefined
      ? {}
      : {
          prompt_estimate: {
            tokens: preview.promptEstimate.tokens,
            tokens_with_history: preview.promptEstimate.tokensWithHistory,
            chars: preview.promptEstimate.chars,
            method: preview.promptEstimate.method,
            note: 'An estimate (characters / 4) of the prompt the job sends, automation prefix included; tokens_with_history adds the earlier results later runs show, at their longest. The system prompt and tools come on top.',
          },
        }),
  }
}

/** One line on a preview, for a dry run's message. */
function previewSummary(preview: CronPreviewView): string {
  const first = preview.fires[0]
  const parts = [
    `${preview.description} (${preview.timezone})`,
    first === undefined ? 'it never fires again' : `next: ${first.local}`,
  ]
  if (preview.dstNotes.length > 0)
    parts.push(`DST: ${preview.dstNotes.map((note) => note.message).join(' ')}`)
  if (preview.clashCount > 0)
    parts.push(
      `${preview.clashCount} clash${preview.clashCount === 1 ? '' : 'es'} with ${[...new Set(preview.clashes.map((clash) => clash.jobName))].join(', ')}`,
    )
  if (preview.delivery !== null) parts.push(`delivery: ${preview.delivery.route}`)
  if (preview.promptEstimate !== undefined) parts.push(`about ${preview.promptEstimate.tokens} prompt tokens`)
  return parts.join('; ')
}

function nextRunsView(runs: readonly NextRunView[]) {
  return runs.map((run) => ({ utc: run.utc, local: run.local, timezone: run.timezone }))
}

const listFlag = (field: string, meaning: string) =>
  v.optional(v.pipe(v.boolean(`${field} must be true or false`), v.description(meaning)))

const JOB_SORTS = ['name', 'next_run', 'last_run', 'failures'] as const
/**
 * cron_list's `status`: a job's last outcome (what ended `completed`, `failed` or `timed_out`; a
 * cancelled, skipped or interrupted run leaves it as it was), `running` (a run in progress) or `never`
 * (no outcome yet). The other run statuses are cron_history's filter, where runs are listed.
 */
const LAST_STATUSES = ['never', 'running', 'completed', 'failed', 'timed_out'] as const

/** cron_list's optional filters, order and page (none: every job, the original answer). */
const cronListParameters = v.strictObject({
  limit: v.optional(
    v.pipe(
      v.number('limit must be a number'),
      v.integer('limit must be a whole number'),
      v.minValue(1, 'limit must be at least 1'),
      v.maxValue(500, 'limit must be at most 500'),
      v.description('Jobs per page: 1 to 500, default 50.'),
    ),
  ),
  cursor: v.optional(
    v.pipe(
      v.string('cursor must be a string'),
      v.maxLength(400, 'cursor must be at most 400 characters'),
      v.check((text) => decodeCursor(text) !== undefined, 'cursor must be a next_cursor of an earlier page'),
      v.description('The next_cursor of the page before, with the same filters and sort.'),
    ),
  ),
  q: v.optional(
    v.pipe(
      v.string('q must be a string'),
      v.maxLength(64, 'q must be at most 64 characters'),
      v.description('Only jobs whose name contains this text (ignoring case).'),
    ),
  ),
  status: v.optional(
    v.pipe(
      v.picklist(
        LAST_STATUSES,
        (issue) =>
          `status must be one of ${LAST_STATUSES.join(', ')} (got ${JSON.stringify(issue.input)})${
            CRON_RUN_STATUSES.includes(issue.input as CronRunStatusName)
              ? `: a job's status is its last outcome; to find ${String(issue.input)} runs, use cron_history's status filter`
              : ''
          }`,
      ),
      v.description(
        "Only jobs whose last outcome is completed, failed or timed_out (a cancelled, skipped or interrupted run leaves it as it was; cron_history lists those runs); 'running': jobs with a run in progress; 'never': jobs without an outcome yet.",
      ),
    ),
  ),
  kind: v.optional(
    v.pipe(v.picklist(['ai', 'shell'], 'kind must be ai or shell'), v.description('Only jobs of this kind.')),
  ),
  zone: v.optional(
    v.pipe(
      v.string('zone must be a string'),
      v.minLength(1, 'zone must not be empty'),
      v.maxLength(64, 'zone must be at most 64 characters'),
      v.description('Only jobs whose schedule is read in this IANA zone, e.g. Europe/Berlin.'),
    ),
  ),
  paused: listFlag('paused', 'true: only paused jobs; false: only enabled ones.'),
  failing: listFlag(
    'failing',
    'true: only jobs that failed since their last completed run; false: the others.',
  ),
  delivery_failed: listFlag(
    'delivery_failed',
    'true: only jobs whose newest final delivery failed; false: the others.',
  ),
  sort: v.optional(
    v.pipe(
      v.picklist(JOB_SORTS, `sort must be one of ${JOB_SORTS.join(', ')}`),
      v.description(
        'name (default); next_run: soonest first; last_run: most recent first; failures: most consecutive failures first.',
      ),
    ),
  ),
})

type CronListParameters = v.InferOutput<typeof cronListParameters>

/** What a cron_list cursor holds: the sort it belongs to and the last job's position in it. */
interface ListCursor {
  readonly sort: (typeof JOB_SORTS)[number]
  readonly after: string
  readonly afterKey?: number
}

function encodeCursor(cursor: ListCursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url')
}

/** The cursor in `text`, or undefined when it is not one {@link encodeCursor} made. */
function decodeCursor(text: string): ListCursor | undefined {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { sort, after, afterKey } = value as Record<string, unknown>
  if (!JOB_SORTS.includes(sort as ListCursor['sort']) || typeof after !== 'string' || after.length > 128)
    return undefined
  if (afterKey !== undefined && !(typeof afterKey === 'number' && Number.isFinite(afterKey))) return undefined
  return { sort: sort as ListCursor['sort'], after, ...(afterKey === undefined ? {} : { afterKey }) }
}

/** One page of cron_list: `{ jobs, count, next_cursor, total }`. */
async function listPage(service: CronToolsService, params: CronListParameters) {
  if (service.listPage === undefined || service.count === undefined) {
    throw new ToolError('TOOL_FAILED', 'this server cannot page, filter or sort cron jobs')
  }
  const sort = params.sort ?? 'name'
  const from = params.cursor === undefined ? undefined : decodeCursor(params.cursor)
  if (from !== undefined && from.sort !== sort) {
    throw new ToolError(
      'TOOL_INVALID_PARAMETERS',
      `invalid parameters: cursor: the cursor belongs to sort ${from.sort}, not ${sort}`,
    )
  }
  const filter: CronJobFilter = {
    ...(params.q === undefined || params.q === '' ? {} : { nameContains: params.q }),
    ...(params.status === undefined
      ? {}
      : params.status === 'running'
        ? { running: true }
        : { lastStatus: params.status === 'never' ? null : params.status }),
    ...(params.kind === undefined ? {} : { kind: params.kind }),
    ...(params.zone === undefined ? {} : { timezone: params.zone }),
    ...(params.paused === undefined ? {} : { enabled: !params.paused }),
    ...(params.failing === undefined ? {} : { failing: params.failing }),
    ...(params.delivery_failed === undefined ? {} : { lastDeliveryFailed: params.delivery_failed }),
  }
  const [page, total] = await Promise.all([
    service.listPage({
      ...filter,
      sort,
      limit: params.limit ?? 50,
      ...(from === undefined
        ? {}
        : {
            from: { after: from.after, ...(from.afterKey === undefined ? {} : { afterKey: from.afterKey }) },
          }),
    }),
    service.count(filter),
  ])
  const jobs = page.jobs.map(jobView)
  return {
    jobs,
    count: jobs.length,
    next_cursor: page.next === null ? null : encodeCursor({ sort, ...page.next }),
    total,
  }
}

/**
 * The job a call names, as an approver reads it: its name first, then its id, schedule and what it
 * runs, every command and prompt whole (`⟦backup⟧ (id 4f…; cron ⟦0 3 * * *⟧ ⟦Europe/Berlin⟧; command: ⟦tar czf …⟧)`).
 */
function jobLine(job: CronJobView): string {
  const runs =
    job.kind === 'shell' ? `command: ${quoted(job.command ?? '')}` : `prompt: ${quoted(job.prompt ?? '')}`
  const gate = job.when === undefined || job.when === null ? '' : `; when: ${quoted(job.when)}`
  return `${quoted(job.name)} (id ${word(job.id)}; ${word(job.scheduleType)} ${quoted(job.schedule)} ${quoted(job.timezone)}; ${runs}${gate})`
}

/**
 * The approval line of a call that names a job by id or name (`cron_remove`, `manage_cron_jobs`
 * delete, …): the generic line ({@link buildApprovalSummary}) with the job as it is stored in place
 * of what the call gave, so the approver sees the job's name, not only an id. A job that is not
 * found throws: invokeTool shows the generic line, and the handler reports the error.
 */
async function namedJobSummary(
  service: CronToolsService,
  toolName: string,
  params: Record<string, unknown>,
  idOrName: string,
): Promise<string> {
  return withJobLine(buildApprovalSummary(toolName, params), idOrName, await service.get(idOrName))
}

/** `base` (an approval line naming `idOrName`) with the job as it is stored in place of the name (see {@link namedJobSummary}). */
function withJobLine(base: string, idOrName: string, job: CronJobView): string {
  const given = `: ${quoted(idOrName)}`
  const at = base.indexOf(given)
  return at === -1
    ? `${base} (${jobLine(job)})`
    : `${base.slice(0, at)}: ${jobLine(job)}${base.slice(at + given.length)}`
}

/**
 * What a call that starts a job's runs (resume, trigger) must show its approver besides the job:
 * who made it and where its runs' results go (the caller may not see them).
 */
function startsLine(job: CronJobView): string {
  const targets = job.deliverTo.length === 0 ? 'the run history only' : job.deliverTo.map(quoted).join(', ')
  const maker = job.createdBy === null ? 'the host' : quoted(job.createdBy)
  return ` — a job created by ${maker}; its runs' results go to: ${targets}`
}

/** A job's daily budgets as a call would set them: a value, `null` (removed) or undefined (left alone). */
interface BudgetChange {
  readonly maxTokensPerDay: number | null | undefined
  readonly maxCostPerDay: number | null | undefined
}

/**
 * True when `change` raises or removes a daily budget `job` has: a bound the job's runs were held
 * to, lifted, so more can be spent with nobody watching (the call needs approval). Lowering one, or
 * setting one where there was none (a new job's too), is not. `job` null: no such job (created).
 */
function raisesBudget(job: CronJobView | null, change: BudgetChange): boolean {
  if (job === null) return false
  const raises = (now: number | null | undefined, next: number | null | undefined) =>
    next !== undefined && now !== undefined && now !== null && (next === null || next > now)
  return (
    raises(job.maxTokensPerDay, change.maxTokensPerDay) || raises(job.maxCostPerDay, change.maxCostPerDay)
  )
}

/** True when a call changes a daily budget at all. */
function changesBudget(change: BudgetChange): boolean {
  return change.maxTokensPerDay !== undefined || change.maxCostPerDay !== undefined
}

/** True for a `webhook` schedule type: the job opens an entry point that calls from outside start. */
function schedulesWebhook(scheduleType: unknown): boolean {
  return String(scheduleType) === 'webhook'
}

/**
 * The job a create-or-update call would change, read before approval (`preflight`): its safety
 * (raising a budget, renaming) and approval line (old → new) are judged on it. Keyed by the
 * validated parameters object invokeTool hands to each; null: no such job. Only read when the
 * call's safety depends on it.
 */
function currentJobs(service: CronToolsService) {
  const known = new WeakMap<object, CronJobView | null>()
  return {
    /** Reads and remembers the job named `idOrName` (null when there is none). */
    async read(params: object, idOrName: string): Promise<void> {
      try {
        known.set(params, await service.get(idOrName))
      } catch (error) {
        if (!isNotFound(error)) throw error
        known.set(params, null)
      }
    },
    /** The job read for `params`: null for none, undefined when it was not read (unknown). */
    of(params: object): CronJobView | null | undefined {
      return known.get(params)
    },
  }
}

/**
 * Who makes each `cron_add` call (remembered by its preflight): updating a job another creator
 * made — an operator's from the CLI, another chat's — changes what runs on their budget, so it is
 * `dangerous` (an outside probe had an agent rewrite an operator's job's prompt unasked).
 */
function jobCallers() {
  const known = new WeakMap<object, string | undefined>()
  const sessions = new WeakMap<object, string | undefined>()
  return {
    remember(params: object, context: ToolContext): void {
      known.set(params, creatorOf(context).creator)
      sessions.set(params, context.sessionKey)
    },
    /** The session the call came from (undefined when not remembered or none). */
    sessionOf(params: object): string | undefined {
      return sessions.get(params)
    },
    of(params: object): string | undefined {
      return known.get(params)
    },
    /**
     * The job exists and the caller (when known) is not its creator. A job with no creator was made
     * by the host itself (`POST /api/cron/jobs`, a host's own code): an operator's, as `cli` is.
     */
    updatesOthers(params: object, job: CronJobView | null | undefined): boolean {
      if (job === undefined || job === null || !known.has(params)) return false
      const caller = known.get(params)
      return job.createdBy === null ? caller !== undefined : job.createdBy !== caller
    },
  }
}

/**
 * Whether a call that would start runs of a stored job (resume, trigger) starts them for someone
 * else: the job read in preflight reports beyond the caller's chat, or another creator made it;
 * true too when the job was not read (its worst case).
 */
function startsOthersRule(
  current: ReturnType<typeof currentJobs>,
  callers: ReturnType<typeof jobCallers>,
  defaults: readonly string[] | undefined,
): (params: object) => boolean {
  return (params) => {
    const job = current.of(params)
    if (job === undefined) return true
    if (job === null) return false
    return (
      callers.updatesOthers(params, job) || deliversBeyond(job.deliverTo, callers.sessionOf(params), defaults)
    )
  }
}

/**
 * `{ createdBy }` of a job a call creates: who its runs' spend counts against (the per-creator daily
 * budget, the per-creator job cap) — the call's creator, so a job made from inside a background task
 * or workflow run is its starter's, not the run's.
 */
function createdByOf(context: ToolContext): { readonly createdBy?: string } {
  const { creator } = creatorOf(context)
  return creator === undefined ? {} : { createdBy: creator }
}

/** The six cron tools of the contract: `cron_add`, `cron_list`, `cron_pause`, `cron_resume`, `cron_remove`, `cron_history`. */
export function createCronTools(options: CronToolsOptions): AnyTool[] {
  checkCronKeys(options)
  const { service } = options
  const current = currentJobs(service)
  const callers = jobCallers()
  const startsOthers = startsOthersRule(current, callers, options.defaultDeliverTo)
  const budgetOf = (params: {
    max_tokens_per_day?: number | null | undefined
    max_cost_per_day?: number | null | undefined
  }): BudgetChange => ({ maxTokensPerDay: params.max_tokens_per_day, maxCostPerDay: params.max_cost_per_day })
  return [
    defineTool({
      name: 'cron_add',
      title: 'Add or update cron job',
      description:
        'Create a scheduled agent job, or update the job with the same name. schedule_type is cron (5 fields, evaluated in timezone), every (a duration such as 30m or 2h), at (an ISO date-time, runs once) or webhook (schedule is a hook name; each signed POST /hooks/<name> starts a run with the request body as untrusted data). deliver_to is optional: when omitted, results go to the current chat (Telegram, Slack, Discord, …) or the configured default; if there is neither, the result says so and they are only kept in the run history. when is an optional shell check run before each run (exit 0 runs, 1 skips at no token cost). Returns the next run times: tell the user.',
      safety: 'moderate',
      // A persisted job runs later with nobody watching (SECURITY.md CRON-5): one that carries a
      // secret reference needs the same confirmation as running it now.
      // A ping URL persists an outbound HTTP call on every run: the approver must see it.
      // A webhook schedule opens an entry point that calls from outside start runs through.
      // Raising or removing the daily budget of the job of that name lifts a bound on its spend
      // (a job not read yet is unknown: its worst case). A dry run stores nothing and runs nothing.
      safetyFor: (params) => {
        if (params.dry_run === true) return 'safe'
        const budget = budgetOf(params)
        const job = current.of(params)
        return mentionsSecret(params.prompt, params.when) ||
          callers.updatesOthers(params, job) ||
          deliversBeyond(params.deliver_to ?? [], callers.sessionOf(params), options.defaultDeliverTo) ||
          setsPingUrl(params.ping_url) ||
          setsWhen(params.when) ||
          schedulesWebhook(params.schedule_type) ||
          (changesBudget(budget) && (job === undefined || raisesBudget(job, budget)))
          ? 'dangerous'
          : 'moderate'
      },
      worstSafety: 'dangerous',
      // The job of that name is read first: updating it changes what its runs spend, and whose.
      async preflight(params, context) {
        assertDeliverable(params.deliver_to ?? [], options.checkTarget, 'deliver_to')
        callers.remember(params, context)
        if (params.dry_run !== true) await current.read(params, params.name)
        return undefined
      },
      // Says Update, with each budget as old → new, when a job of that name exists, and whose it is
      // when it is not the caller's; and where results go, as the handler will store it.
      async approvalSummary(params, context) {
        if (current.of(params) === undefined) await current.read(params, params.name)
        return cronAddSummary(
          params,
          current.of(params) ?? undefined,
          callers.of(params),
          resolveDeliveryTargets(params.deliver_to, context.sessionKey, options.defaultDeliverTo),
        )
      },
      // An upsert by name: the same call again leaves the same job.
      idempotent: true,
      output: cronAddOutput,
      parameters: v.strictObject({
        name,
        schedule_type: v.pipe(
          v.picklist(
            ['cron', 'every', 'at', 'webhook'],
            'schedule_type must be one of cron, every, at, webhook',
          ),
          v.description(
            'cron: a cron expression, evaluated in timezone; every: a fixed interval; at: once, at a date-time; webhook: never by the clock, schedule is a hook name and a signed call to it starts a run.',
          ),
        ),
        schedule,
        prompt,
        timezone,
        session_mode: v.optional(
          v.pipe(
            v.picklist(['isolated', 'main']),
            v.description(
              'isolated (default): each run starts a fresh agent session; main: runs share one session and see earlier runs.',
            ),
          ),
        ),
        deliver_to: deliverTo,
        timeout,
        ping_url: pingUrl('ping_url'),
        when,
        max_tokens_per_day: dailyBudget('max_tokens_per_day', true),
        max_cost_per_day: dailyBudget('max_cost_per_day', false),
        overlap: v.optional(
          v.pipe(
            v.picklist(['skip', 'queue_one', 'allow']),
            v.description(
              'When a run is due while the previous one still runs: skip it (default), queue_one (run it after, at most one waiting; the default of webhook jobs, so a call is not dropped) or allow (run both).',
            ),
          ),
        ),
        notify,
        dry_run: dryRun,
        preview_count: previewCount,
      }),
      async handler(params, context) {
        const input = {
          name: params.name,
          kind: 'ai' as const,
          scheduleType: params.schedule_type,
          schedule: params.schedule,
          prompt: params.prompt,
          ...(params.timezone === undefined ? {} : { timezone: params.timezone }),
          ...(params.session_mode === undefined ? {} : { sessionMode: params.session_mode }),
          ...(params.timeout === undefined ? {} : { timeout: timeoutForService(params.timeout) }),
          ...(params.overlap === undefined ? {} : { overlap: params.overlap }),
          ...(params.ping_url === undefined ? {} : { pingUrl: params.ping_url }),
          ...(params.when === undefined ? {} : { when: params.when }),
          ...(params.max_tokens_per_day === undefined ? {} : { maxTokensPerDay: params.max_tokens_per_day }),
          ...(params.max_cost_per_day === undefined ? {} : { maxCostPerDay: params.max_cost_per_day }),
          ...(params.notify === undefined ? {} : { notify: params.notify }),
          deliverTo: resolveDeliveryTargets(params.deliver_to, context.sessionKey, options.defaultDeliverTo),
          ...createdByOf(context),
        }
        if (params.dry_run === true) {
          const preview = await service.preview(input, {
            ...(params.preview_count === undefined ? {} : { count: params.preview_count }),
          })
          return {
            status: 'preview' as const,
            dry_run: true as const,
            preview: cronPreviewView(preview),
            message: `Preview only, nothing stored: cron job "${params.name}" would be ${preview.action === 'create' ? 'created' : 'updated'}: ${previewSummary(preview)}. Call again without dry_run to save it.`,
          }
        }
        const result = await service.add(input)
        const next = result.nextRuns[0]
        const note = result.job.deliverTo.length === 0 ? noDeliveryNote(result.job.name) : undefined
        return {
          status: result.status,
          job: jobView(result.job),
          next_runs: nextRunsView(result.nextRuns),
          message: `Cron job "${result.job.name}" ${result.status} (${result.job.scheduleType} ${result.job.schedule}, ${result.job.timezone}).${
            next === undefined ? '' : ` Next run: ${next.local}.`
          }${note === undefined ? '' : ` ${note}`}`,
          ...(note === undefined ? {} : { delivery_note: note }),
          ...(result.preview === undefined ? {} : { preview: cronPreviewView(result.preview) }),
        }
      },
    }),
    defineTool({
      name: 'cron_list',
      title: 'List cron jobs',
      description:
        'Cron jobs with their ids, names, schedules, enabled state and next run: all of them, or, with any parameter, one page of those that match (then next_cursor reads the next page and total counts every match).',
      safety: 'safe',
      parameters: cronListParameters,
      output: cronListOutput,
      async handler(params) {
        if (Object.keys(params).length === 0) {
          const jobs = (await service.list()).map(jobView)
          return { jobs, count: jobs.length }
        }
        return listPage(service, params)
      },
    }),
    defineTool({
      name: 'cron_pause',
      title: 'Pause cron job',
      idempotent: true,
      description: 'Pause a cron job (by id or name): it stops firing and a run in progress is cancelled.',
      safety: 'moderate',
      parameters: v.strictObject({ id: jobId }),
      output: jobChangeOutput('paused'),
      approvalSummary: (params) => namedJobSummary(service, 'cron_pause', params, params.id),
      async handler(params) {
        const job = await service.pause(params.id)
        return { status: 'paused' as const, id: job.id, name: job.name }
      },
    }),
    defineTool({
      name: 'cron_resume',
      title: 'Resume cron job',
      idempotent: true,
      description: 'Resume a paused cron job (by id or name).',
      safety: 'moderate',
      // Resuming a job someone else made, or one that reports to another chat, starts runs whose
      // results go where the caller cannot see: asked about first, as making such a job is.
      safetyFor: (params) => (startsOthers(params) ? 'dangerous' : 'moderate'),
      worstSafety: 'dangerous',
      async preflight(params, context) {
        callers.remember(params, context)
        await current.read(params, params.id)
        return undefined
      },
      parameters: v.strictObject({ id: jobId }),
      output: v.strictObject({
        status: v.literal('resumed'),
        id: v.string(),
        name: v.string(),
        next_run_at: isoOrNull,
      }),
      async approvalSummary(params) {
        const job = current.of(params) ?? (await service.get(params.id))
        return `${withJobLine(buildApprovalSummary('cron_resume', params), params.id, job)}${startsLine(job)}`
      },
      async handler(params) {
        const { job } = await service.resume(params.id)
        return { status: 'resumed' as const, id: job.id, name: job.name, next_run_at: isoTime(job.nextRunAt) }
      },
    }),
    defineTool({
      name: 'cron_remove',
      title: 'Remove cron job',
      idempotent: true,
      description: 'Delete a cron job (by id or name) and its run history permanently.',
      safety: 'dangerous',
      parameters: v.strictObject({ id: jobId }),
      output: jobChangeOutput('removed'),
      approvalSummary: (params) => namedJobSummary(service, 'cron_remove', params, params.id),
      async handler(params) {
        const job = await service.remove(params.id)
        return { status: 'removed' as const, id: job.id, name: job.name }
      },
    }),
    defineTool({
      name: 'cron_history',
      title: 'Cron run history',
      description:
        'Recent runs, newest first, of one job (job_id: id or name) or of all jobs, optionally only those with one status, each with its delivery to every target (status, attempts, last error).',
      safety: 'safe',
      parameters: v.strictObject({
        job_id: v.optional(
          v.pipe(jobId, v.description('Only runs of this job (its id or name); default: runs of all jobs.')),
        ),
        limit: v.optional(
          v.pipe(
            v.number('limit must be a number'),
            v.integer('limit must be a whole number'),
            v.minValue(1, 'limit must be at least 1'),
            v.maxValue(200, 'limit must be at most 200'),
            v.description('How many runs to return, newest first: 1 to 200, default 20.'),
          ),
        ),
        status: v.optional(
          v.pipe(
            v.picklist(CRON_RUN_STATUSES, `status must be one of ${CRON_RUN_STATUSES.join(', ')}`),
            v.description(
              `Only runs with this status (${CRON_RUN_STATUSES.join(', ')}): e.g. failed to see what went wrong, skipped to find missed runs. Default: every status.`,
            ),
          ),
        ),
        cursor: runCursorParameter('job_id and status'),
      }),
      output: v.strictObject({
        entries: v.array(cronRunViewSchema),
        count: v.number(),
        /** Where the next (older) page starts; null when this page is the last. */
        next_cursor: v.nullable(v.string()),
        ...usageUnavailableEntry,
      }),
      async handler(params) {
        const limit = params.limit ?? 20
        const cursor = params.cursor === undefined ? undefined : decodeRunCursor(params.cursor)
        const before = cursor === undefined ? undefined : { scheduledFor: cursor.key, id: cursor.id }
        const runs = await service.history({
          ...(params.job_id === undefined ? {} : { job: params.job_id }),
          limit,
          ...(params.status === undefined ? {} : { status: params.status }),
          ...(before === undefined ? {} : { before }),
        })
        const last = runs.at(-1)
        // Each run with its targets: which were delivered, which wait for a retry, and why one failed.
        const deliveries =
          service.deliveries === undefined || runs.length === 0
            ? undefined
            : await service.deliveries(runs.map((run) => run.id))
        const spends =
          options.spend === undefined || runs.length === 0
            ? undefined
            : await lookUpSpend(
                options.spend,
                runs.map((run) => run.id),
              )
        // A ledger that cannot be read leaves the runs as cron recorded them.
        const unavailable = spends === SPEND_UNAVAILABLE
        const entries = runs.map((run) => runView(run, deliveries, unavailable ? undefined : spends))
        return {
          entries,
          count: entries.length,
          // A full page may have more behind it; a short one is the last.
          next_cursor:
            runs.length === limit && last !== undefined ? encodeRunCursor(last.scheduledFor, last.id) : null,
          ...(unavailable ? { usage_unavailable: true as const } : {}),
        }
      },
    }),
  ]
}

const ACTION_SAFETY: Readonly<Record<string, ToolSafety>> = {
  list: 'safe',
  get: 'safe',
  create: 'moderate',
  update: 'moderate',
  trigger: 'moderate',
  delete: 'dangerous',
}

const SCHEDULE_ALIASES: Readonly<Record<string, string>> = { cron: 'cron', every: 'interval', at: 'once' }

/** A job in seed 002's camelCase shape. */
function seedJobView(job: CronJobView) {
  return {
    id: job.id,
    name: job.name,
    type: job.kind,
    scheduleType: SCHEDULE_ALIASES[job.scheduleType] ?? job.scheduleType,
    scheduleValue: job.schedule,
    timezone: job.timezone,
    config:
      job.kind === 'shell'
        ? { command: job.command, ...(job.cwd === null ? {} : { cwd: job.cwd }) }
        : {
            prompt: job.prompt,
            ...(job.model === null ? {} : { model: job.model }),
            ...(job.cwd === null ? {} : { cwd: job.cwd }),
          },
    enabled: job.enabled,
    deliverTo: [...job.deliverTo],
    nextRunAt: isoTime(job.nextRunAt),
    lastRunAt: isoTime(job.lastRunAt),
    lastStatus: job.lastStatus,
    createdAt: isoTime(job.createdAt),
    pingUrl: job.pingUrl ?? null,
    when: job.when ?? null,
    maxTokensPerDay: job.maxTokensPerDay ?? null,
    maxCostPerDay: job.maxCostPerDay ?? null,
  }
}

const seedJobSchema = {
  id: v.string(),
  name: v.string(),
  type: v.picklist(['ai', 'shell']),
  scheduleType: v.string(),
  scheduleValue: v.string(),
  timezone: v.string(),
  config: v.union([
    v.strictObject({ command: textOrNull, cwd: v.optional(v.string()) }),
    v.strictObject({ prompt: textOrNull, model: v.optional(v.string()), cwd: v.optional(v.string()) }),
  ]),
  enabled: v.boolean(),
  deliverTo: v.array(v.string()),
  nextRunAt: isoOrNull,
  lastRunAt: isoOrNull,
  lastStatus: textOrNull,
  createdAt: isoOrNull,
  pingUrl: textOrNull,
  when: textOrNull,
  maxTokensPerDay: v.nullable(v.number()),
  maxCostPerDay: v.nullable(v.number()),
}

/**
 * `manage_cron_jobs`' answers, seed 002's camelCase: `list`'s jobs; a job (`get`; `create` and
 * `update` with their preview, `create` with a note when nothing is delivered); a dry run's preview;
 * `delete`'s and `trigger`'s `{ ok: true }`; and a failure's `{ error }` (an MCP `isError` result).
 */
const manageCronJobsOutput = v.union([
  v.strictObject({ jobs: v.array(v.strictObject(seedJobSchema)) }),
  v.strictObject({
    ...seedJobSchema,
    preview: v.optional(cronPreviewViewSchema),
    deliveryNote: v.optional(v.string()),
  }),
  v.strictObject({ dryRun: v.literal(true), preview: cronPreviewViewSchema, message: v.string() }),
  v.strictObject({ ok: v.literal(true), message: v.optional(v.string()), run_id: v.optional(v.string()) }),
  v.strictObject({ error: v.string() }),
])

function isNotFound(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'CRON_JOB_NOT_FOUND'
}

const configSchema = v.pipe(
  v.strictObject({
    prompt: v.optional(
      v.pipe(
        v.string(),
        v.maxLength(16_000),
        v.description('ai jobs: what the agent should do on each run (at most 16000 characters).'),
      ),
    ),
    command: v.optional(
      v.pipe(
        v.string(),
        v.maxLength(8_000),
        v.description(
          'shell jobs: the command line run by /bin/sh -c (at most 8000 characters); {{secret:NAME}} references are resolved at run time.',
        ),
      ),
    ),
    model: v.optional(
      v.pipe(
        v.string(),
        v.maxLength(128),
        v.description('ai jobs: the model to use instead of the default (at most 128 characters).'),
      ),
    ),
    maxTokensPerDay: dailyBudget('maxTokensPerDay', true),
    maxCostPerDay: dailyBudget('maxCostPerDay', false),
    cwd: v.optional(
      v.pipe(
        v.string(),
        v.maxLength(4096),
        v.description("Working directory of the run; default: the server's working directory."),
      ),
    ),
    when: v.optional(v.pipe(v.string(), v.maxLength(8_000), v.description(WHEN_DESCRIPTION))),
  }),
  v.description(
    "The job's work: {prompt, model, cwd, when} for type ai, {command, cwd} for type shell. Needed by create; update changes only the fields given.",
  ),
)

/** The job fields a seed 002 `config` object sets (only those present). */
function configFields(config: v.InferOutput<typeof configSchema> | undefined): CronToolJobInput {
  if (config === undefined) return {}
  return Object.fromEntries(Object.entries(config).filter(([, value]) => value !== undefined))
}

/**
 * Seed 002's trigger answer when the run started; a queued run says so (it starts later), and a
 * skipped one (overlap `skip`: the previous run still goes) is an `{ error }`, since nothing runs.
 */
function triggerResult(outcome: {
  readonly status: string
  readonly reason?: string
  readonly runId?: string
}) {
  const why = outcome.reason === undefined ? '' : `: ${outcome.reason}`
  // Seed 002's answer, plus the started run's id so a caller can follow it (cron_history, --wait).
  if (outcome.status === 'started') {
    return {
      ok: true as const,
      message: 'Job triggered',
      ...(outcome.runId === undefined ? {} : { run_id: outcome.runId }),
    }
  }
  if (outcome.status === 'queued') return { ok: true as const, message: `Job queued${why}` }
  return { error: `Job not triggered${why}` }
}

/** Seed 002's `manage_cron_jobs`: one tool with actions list, get, create, update, delete, trigger. */
export function createManageCronJobsTool(options: CronToolsOptions): AnyTool {
  checkManageKeys(options)
  const { service } = options
  const current = currentJobs(service)
  const callers = jobCallers()
  /** A trigger, or an update that resumes the job: it starts runs (see cron_resume). */
  const starts = (params: { action: string; enabled?: boolean | undefined; id?: string | undefined }) =>
    params.id !== undefined &&
    (params.action === 'trigger' || (params.action === 'update' && params.enabled === true))
  const startsOthers = startsOthersRule(current, callers, options.defaultDeliverTo)
  const budgetOf = (params: {
    config?: { maxTokensPerDay?: number | null | undefined; maxCostPerDay?: number | null | undefined }
  }): BudgetChange => ({
    maxTokensPerDay: params.config?.maxTokensPerDay,
    maxCostPerDay: params.config?.maxCostPerDay,
  })
  /** An update that changes when the job runs. */
  const changesSchedule = (params: {
    scheduleType?: string | undefined
    scheduleValue?: string | undefined
  }) => params.scheduleType !== undefined || params.scheduleValue !== undefined
  /**
   * An update whose safety depends on the job as it is: a budget change, a new name, or a new
   * schedule (a shell job's command was approved to run on its schedule, not on another).
   */
  const judgesJob = (params: {
    action: string
    id?: string | undefined
    name?: string | undefined
    scheduleType?: string | undefined
    scheduleValue?: string | undefined
    dry_run?: boolean | undefined
    config?: { maxTokensPerDay?: number | null | undefined; maxCostPerDay?: number | null | undefined }
  }) =>
    params.action === 'update' &&
    params.dry_run !== true &&
    params.id !== undefined &&
    (params.name !== undefined || changesBudget(budgetOf(params)) || changesSchedule(params))
  return defineTool({
    name: 'manage_cron_jobs',
    title: 'Manage cron jobs',
    description:
      'Manage scheduled jobs. action: list | get | create | update | delete | trigger. create needs name, type (ai or shell), scheduleType (cron, interval, once or webhook), scheduleValue and config ({prompt, model, cwd} for ai, {command, cwd} for shell). update, get, delete and trigger need id. trigger runs the job now, in the background (queued behind a run still going when the job allows it; otherwise it answers with an error).',
    safety: 'dangerous',
    worstSafety: 'dangerous',
    safetyFor: (params) => {
      // A dry run of create or update stores nothing and runs nothing.
      if ((params.action === 'create' || params.action === 'update') && params.dry_run === true) return 'safe'
      const base = ACTION_SAFETY[params.action] ?? 'dangerous'
      // Persisted shell commands and secret references run later with nobody watching
      // (SECURITY.md CRON-5): creating or changing such a job needs confirmation. So does its
      // working directory, which decides what a relative command (`./job.sh`) runs.
      const persistsRisk =
        (params.action === 'create' || params.action === 'update') &&
        (params.type === 'shell' ||
          params.config?.command !== undefined ||
          params.config?.cwd !== undefined ||
          setsWhen(params.config?.when) ||
          mentionsSecret(params.config?.prompt, params.config?.command, params.config?.when) ||
          setsPingUrl(params.pingUrl) ||
          // A webhook schedule opens an entry point that calls from outside start runs through.
          schedulesWebhook(params.scheduleType))
      if (persistsRisk) return 'dangerous'
      // Raising or removing a job's daily budget lifts a bound on its spend; renaming it changes
      // what people know it by. Both need confirmation (a job not read yet is unknown: its worst case).
      // Running a job someone else made, or one that reports to another chat: asked about first.
      if (starts(params) && startsOthers(params)) return 'dangerous'
      if (judgesJob(params)) {
        const job = current.of(params)
        if (job === undefined) return 'dangerous'
        if (job !== null && params.name !== undefined && params.name !== job.name) return 'dangerous'
        if (raisesBudget(job, budgetOf(params))) return 'dangerous'
        if (job !== null && job.kind === 'shell' && changesSchedule(params)) return 'dangerous'
      }
      return base
    },
    async preflight(params, context) {
      callers.remember(params, context)
      if (judgesJob(params) || starts(params)) await current.read(params, params.id as string)
      return undefined
    },
    parameters: v.strictObject({
      action: v.pipe(
        v.picklist(
          ['list', 'get', 'create', 'update', 'delete', 'trigger'],
          'action must be one of list, get, create, update, delete, trigger',
        ),
        v.description(
          'list: all jobs; get: one job; create: a new job; update: change fields of a job; delete: remove a job and its schedule; trigger: run a job once now, in the background.',
        ),
      ),
      id: v.optional(
        v.pipe(jobId, v.description('The job id (or name), for get, update, delete and trigger.')),
      ),
      name: v.optional(
        v.pipe(
          v.string(),
          v.maxLength(64),
          v.description(
            'Job name for create (required), or a new name for update: 1-64 letters, digits, -, _ or ., unique.',
          ),
        ),
      ),
      type: v.optional(
        v.pipe(
          v.picklist(['ai', 'shell'], 'type must be ai or shell'),
          v.description('ai: an agent runs config.prompt; shell: config.command runs. Required by create.'),
        ),
      ),
      scheduleType: v.optional(
        v.pipe(
          v.picklist(
            ['cron', 'interval', 'once', 'webhook'],
            'scheduleType must be cron, interval, once or webhook',
          ),
          v.description(
            'cron: a cron expression; interval: a fixed interval; once: a single date-time; webhook: never by the clock, each signed POST /hooks/<scheduleValue> starts a run with the request body as untrusted data. Required by create.',
          ),
        ),
      ),
      scheduleValue: v.optional(
        v.pipe(
          v.string(),
          v.maxLength(200),
          v.description(
            'For cron: 5 fields such as "0 3 * * *" (03:00 every day); for interval: a duration with a unit such as 30m or 2h (at least 1 minute, at most 365d; a number without a unit is refused); for once: an ISO 8601 date-time; for webhook: the hook name. Required by create.',
          ),
        ),
      ),
      config: v.optional(configSchema),
      pingUrl: pingUrl('pingUrl'),
      enabled: v.optional(
        v.pipe(
          v.boolean(),
          v.description('false pauses the job (it stops firing), true resumes it. Default true on create.'),
        ),
      ),
      notify,
      dry_run: v.optional(
        v.pipe(
          v.boolean('dry_run must be true or false'),
          v.description(
            'create and update only. true: store nothing, only preview what the call would do: the next fire times (job zone and UTC) with the schedule in words, DST notes (local times a clock change skips or repeats), clashes (other jobs firing in the same minute), the delivery route, and for ai jobs an estimate of the prompt tokens. Default false; a real create or update returns the same preview.',
          ),
        ),
      ),
      preview_count: previewCount,
    }),
    output: manageCronJobsOutput,
    approvalSummary: async (params, context) => {
      // A new job delivers where the handler resolves it to: the approver is shown where.
      if (params.action === 'create')
        return manageCronJobsSummary(
          params,
          undefined,
          resolveDeliveryTargets(undefined, context.sessionKey, options.defaultDeliverTo),
        )
      if (params.action === 'list' || params.action === 'get' || params.id === undefined)
        return buildApprovalSummary('manage_cron_jobs', params)
      // The job as it is now: its name in place of the id, and each budget changed as old → new.
      const job = current.of(params) ?? (await service.get(params.id))
      const line = withJobLine(manageCronJobsSummary(params, job), params.id, job)
      return starts(params) ? `${line}${startsLine(job)}` : line
    },
    isFailure: (result) => typeof (result as { error?: unknown } | null)?.error === 'string',
    async handler(params, context) {
      const count = params.preview_count === undefined ? {} : { count: params.preview_count }
      const required = (field: string, value: unknown) =>
        value === undefined || value === '' ? { error: `${field} is required` } : undefined
      try {
        switch (params.action) {
          case 'list':
            return { jobs: (await service.list()).map(seedJobView) }
          case 'get': {
            const missing = required('id', params.id)
            if (missing !== undefined) return missing
            return seedJobView(await service.get(params.id as string))
          }
          case 'create': {
            const missing =
              required('name', params.name) ??
              required('type', params.type) ??
              required('scheduleType', params.scheduleType) ??
              required('scheduleValue', params.scheduleValue)
            if (missing !== undefined) return missing
            const input = {
              name: params.name as string,
              ...(params.type === undefined ? {} : { kind: params.type }),
              scheduleType: params.scheduleType as string,
              schedule: params.scheduleValue as string,
              ...configFields(params.config),
              ...(params.enabled === undefined ? {} : { enabled: params.enabled }),
              ...(params.pingUrl === undefined ? {} : { pingUrl: params.pingUrl }),
              ...(params.notify === undefined ? {} : { notify: params.notify }),
              deliverTo: resolveDeliveryTargets(undefined, context.sessionKey, options.defaultDeliverTo),
              ...createdByOf(context),
            }
            if (params.dry_run === true) {
              const preview = await service.preview(input, { existing: 'error', ...count })
              return {
                dryRun: true as const,
                preview: cronPreviewView(preview),
                message: previewSummary(preview),
              }
            }
            const { job, preview } = await service.create(input)
            const view = {
              ...seedJobView(job),
              ...(preview === undefined ? {} : { preview: cronPreviewView(preview) }),
            }
            return job.deliverTo.length === 0 ? { ...view, deliveryNote: noDeliveryNote(job.name) } : view
          }
          case 'update': {
            const missing = required('id', params.id)
            if (missing !== undefined) return missing
            const changes = {
              ...(params.name === undefined ? {} : { name: params.name }),
              ...(params.type === undefined ? {} : { kind: params.type }),
              ...(params.scheduleType === undefined ? {} : { scheduleType: params.scheduleType }),
              ...(params.scheduleValue === undefined ? {} : { schedule: params.scheduleValue }),
              ...configFields(params.config),
              ...(params.enabled === undefined ? {} : { enabled: params.enabled }),
              ...(params.pingUrl === undefined ? {} : { pingUrl: params.pingUrl }),
              ...(params.notify === undefined ? {} : { notify: params.notify }),
            }
            if (params.dry_run === true) {
              const preview = await service.previewUpdate(params.id as string, changes, count)
              return {
                dryRun: true as const,
                preview: cronPreviewView(preview),
                message: previewSummary(preview),
              }
            }
            const { job, preview } = await service.update(params.id as string, changes)
            return {
              ...seedJobView(job),
              ...(preview === undefined ? {} : { preview: cronPreviewView(preview) }),
            }
          }
          case 'delete': {
            const missing = required('id', params.id)
            if (missing !== undefined) return missing
            await service.remove(params.id as string)
            return { ok: true as const }
          }
          case 'trigger': {
            const missing = required('id', params.id)
            if (missing !== undefined) return missing
            return triggerResult(await service.trigger(params.id as string))
          }
        }
      } catch (error) {
        if (isNotFound(error)) return { error: 'Job not found' }
        return { error: error instanceof Error ? error.message : String(error) }
      }
    },
  })
}

/** A job as cron_list shows it: what an operator route shows for one job without listing them all. */
export { deliveryView as cronDeliveryView, jobView as cronJobView, runView as cronRunView }
