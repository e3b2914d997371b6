import { randomUUID } from 'node:crypto'
import { describeSchedule } from './describe-schedule.js'
import { formatDuration, parseDuration } from './duration.js'
import { CronError, toError } from './errors.js'
import type { Unsubscribe } from './events.js'
import { jobSortKey } from './job-order.js'
import type {
  CatchupPolicy,
  CronDelivery,
  CronJob,
  CronJobKind,
  CronRun,
  CronRunStatus,
  NextRun,
  NotifyPolicy,
  OverlapPolicy,
  SessionMode,
} from './model.js'
import type { CompiledSchedule } from './next-fire-time.js'
import { refuseUnknownKeys } from './option-keys.js'
import { checkPingUrl } from './ping-url.js'
import type {
  Clock,
  CronJobPatch,
  CronStore,
  IdGenerator,
  JobCountFilter,
  JobListFilter,
  JobSort,
} from './ports.js'
import { systemClock } from './ports.js'
import {
  type CronPreview,
  DEFAULT_PREVIEW_COUNT,
  deliveryRoute,
  dstNotes,
  estimatePrompt,
  findClashes,
  MAX_PREVIEW_COUNT,
  previewFires,
} from './preview.js'
import {
  compileJobSchedule,
  DEFAULT_MIN_INTERVAL_MS,
  MAX_INTERVAL_MS,
  toNextRun,
  type ValidatedSchedule,
  validateSchedule,
} from './schedule.js'
import { CronScheduler, type TriggerOptions, type TriggerResult } from './scheduler.js'
import type { CronSchedulerEvents } from './scheduler-events.js'
import {
  type CronSchedulerOptions,
  checkNestedSchedulerKeys,
  MAX_RECENT_RESULTS_IN_PROMPT,
  SCHEDULER_OPTION_KEYS,
  schedulerOptionsOf,
  timerMs,
  wholeNumber,
} from './scheduler-options.js'
import { hostTimeZone, resolveTimeZone } from './time-zone.js'

/** Options of {@link CronService}: the scheduler's, plus validation limits and defaults. */
export interface CronServiceOptions extends CronSchedulerOptions {
  /** Zone for jobs created without one (default: the host zone, resolved at construction). */
  readonly defaultTimezone?: string
  /**
   * Smallest gap between two fires of a job (default 60 s; whole milliseconds from 0 to 365 days;
   * SECURITY.md CRON-2).
   */
  readonly minIntervalMs?: number
  /**
   * Smallest gap between two fires of an `ai` job, whose every fire is a model run (default:
   * `minIntervalMs`; whole milliseconds from 0 to 365 days; SECURITY.md CRON-2 suggests 5 minutes).
   * A value below `minIntervalMs` is `minIntervalMs`: an `ai` job's floor is never the lower.
   */
  readonly minAgentIntervalMs?: number
  /** Most jobs the store may hold (default 500; a whole number, 1 or more; SECURITY.md CRON-3). */
  readonly maxJobs?: number
  /**
   * Most jobs one session key (`<channel>:<chat>:<user>`, the job's `createdBy`) may keep (default
   * 50; a whole number, 1 or more; SECURITY.md CRON-3: a cap per user and channel). Jobs without
   * `createdBy`, made by the host itself, count only against `maxJobs`.
   */
  readonly maxJobsPerCreator?: number
  /** Run timeout for jobs created without one (default 10 min; from 1 s to `maxTimeoutMs`). */
  readonly defaultTimeoutMs?: number
  /** Largest accepted run timeout (default 24 h; at most 2^31 − 1 ms, the longest Node timer). */
  readonly maxTimeoutMs?: number
  /** Use this scheduler instead of building one from the options. */
  readonly scheduler?: CronScheduler
  /**
   * The host's check of a shell job's `command` and an `ai` job's `when`, run on create and update
   * (`field` names which): throw to refuse the text, and the job is refused with
   * `CRON_INVALID_INPUT` carrying the error's message (and it as `cause`). For what the host's
   * shell runner would refuse at every run, said once when the job is written: with
   * `@lango/exec`, `checkSecretPlacement` (a secret token in single quotes). Default: none.
   */
  readonly checkCommand?: (command: string, field: 'command' | 'when') => void
}

/** A job definition as the tools pass it. Only `name`, `scheduleType` and `schedule` are always required. */
export interface CronJobInput {
  readonly name: string
  /** `ai` (default when a prompt is given) or `shell` (default when only a command is given). */
  readonly kind?: CronJobKind
  /** `cron`, `every` or `at`; seed 002's `interval` and `once` are aliases. */
  readonly scheduleType: string
  /**
   * Cron expression, interval or ISO 8601 date-time. An interval is a duration with a unit (`5m`,
   * `1h30m`, `@every 1h`; ADR 0013) or a number of milliseconds; a text without a unit is refused.
   */
  readonly schedule: string | number
  /** IANA zone; default from the service options. */
  readonly timezone?: string
  readonly prompt?: string
  /** Shell command, stored unresolved (secret tokens stay tokens). */
  readonly command?: string
  readonly cwd?: string
  readonly model?: string
  readonly sessionMode?: SessionMode
  /** Targets `channel` or `channel:id`; a single string is accepted. */
  readonly deliverTo?: readonly string[] | string
  /**
   * Run timeout: a duration with a unit such as `90s` or `5m` (ADR 0013), or a number of
   * milliseconds. A text without a unit (`"600"`) is refused with `CRON_INVALID_INPUT`.
   */
  readonly timeout?: string | number
  /**
   * When a run is due while the job's previous one still goes: `skip` (the default), `queue_one` (the
   * default of a `webhook` job: a call is not dropped while one run goes) or `allow`.
   */
  readonly overlap?: OverlapPolicy
  readonly catchup?: CatchupPolicy
  /**
   * Which runs are delivered to `deliverTo`: `always` (default), `failure` (failed and timed-out
   * runs), `state_changes` (failure and recovery), `never`.
   */
  readonly notify?: NotifyPolicy
  readonly enabled?: boolean
  /** Session key of whoever created the job (SECURITY.md CRON-5). */
  readonly createdBy?: string
  /**
   * Dead-man monitor URL (healthchecks.io style): each run pings `<url>/start`, then `<url>` or
   * `<url>/fail`. An http(s) URL without credentials or fragment, at most 2048 characters; `null`
   * or `''` clears it on update. A bad one is `CRON_INVALID_INPUT` with `data.field: 'ping_url'`.
   */
  readonly pingUrl?: string | null
  /**
   * An `ai` job's gate: a shell command run (through the scheduler's `ShellRunner`, as a shell
   * job's command is) before each run. Exit 0 runs the model, with a JSON stdout given to the prompt
   * as untrusted data; exit 1 records the run `skipped` (its output is the reason) at no token cost;
   * any other outcome fails the run. `null` or `''` clears it on update; refused on a shell job.
   */
  readonly when?: string | null
  /**
   * An `ai` job's daily budget in tokens (`max_tokens_per_day`): a whole number above 0, or `null`
   * to clear it on update. Kept on the job; the host's agent bounds the job's turns by it.
   */
  readonly maxTokensPerDay?: number | null
  /** An `ai` job's daily budget in US dollars (`max_cost_per_day`): a number above 0, or `null` to clear it. */
  readonly maxCostPerDay?: number | null
}

/** A change to a job: any field of {@link CronJobInput}. */
export type CronJobUpdate = Partial<CronJobInput>

/** Every key of {@link CronJobInput}: a job's definition, as `create`, `add`, `update` and `preview` take it. */
const JOB_INPUT_KEYS = [
  'name',
  'kind',
  'scheduleType',
  'schedule',
  'timezone',
  'prompt',
  'command',
  'cwd',
  'model',
  'sessionMode',
  'deliverTo',
  'timeout',
  'overlap',
  'catchup',
  'notify',
  'enabled',
  'createdBy',
  'pingUrl',
  'when',
  'maxTokensPerDay',
  'maxCostPerDay',
] as const satisfies readonly (keyof CronJobInput)[]

const checkServiceKeys = refuseUnknownKeys('CronService options', [
  ...SCHEDULER_OPTION_KEYS,
  'defaultTimezone',
  'minIntervalMs',
  'minAgentIntervalMs',
  'maxJobs',
  'maxJobsPerCreator',
  'defaultTimeoutMs',
  'maxTimeoutMs',
  'scheduler',
  'checkCommand',
] satisfies readonly (keyof CronServiceOptions)[])
const checkJobKeys = refuseUnknownKeys('the job definition', JOB_INPUT_KEYS)
const checkSignalKeys = refuseUnknownKeys('call options', ['signal'])
const checkPreviewKeys = refuseUnknownKeys('preview options', ['count', 'existing', 'signal'])
const checkPreviewUpdateKeys = refuseUnknownKeys('previewUpdate options', ['count', 'signal'])
const checkTriggerKeys = refuseUnknownKeys('trigger options', ['payload', 'signal'])
const checkHistoryKeys = refuseUnknownKeys('history options', ['job', 'limit', 'status', 'before', 'signal'])

/** Every filter of {@link CronService.count}: a filter added to `JobCountFilter` and not here fails typecheck. */
const COUNT_FILTERS = {
  enabled: true,
  createdBy: true,
  changedSince: true,
  nameContains: true,
  kind: true,
  timezone: true,
  scheduleType: true,
  schedule: true,
  lastStatus: true,
  running: true,
  failing: true,
  lastDeliveryFailed: true,
} as const satisfies Record<keyof JobCountFilter, true>
/** Every key of {@link CronService.list}'s options (its filters, order and paging). */
const LIST_KEYS = Object.keys({
  ...COUNT_FILTERS,
  sort: true,
  after: true,
  afterKey: true,
  limit: true,
  signal: true,
} as const satisfies Record<Exclude<keyof JobListFilter, 'ids'> | 'signal', true>)
const checkListKeys = refuseUnknownKeys('list options', LIST_KEYS)
const checkListPageKeys = refuseUnknownKeys('listPage options', [
  ...Object.keys(COUNT_FILTERS),
  'sort',
  'limit',
  'from',
  'signal',
])
const checkPageFromKeys = refuseUnknownKeys('listPage from', ['after', 'afterKey'])
const checkCountKeys = refuseUnknownKeys('count filter', [...Object.keys(COUNT_FILTERS), 'signal'])

/** A job with its next fire times (job zone and UTC). */
export interface JobWithNextRuns {
  readonly job: CronJob
  readonly nextRuns: readonly NextRun[]
  /**
   * What the create or update was previewed as, just before it was stored: the next 5 fires, the
   * schedule in words, DST notes, clashes, delivery route and prompt estimate (see {@link CronService.preview}).
   * Absent from pause and resume.
   */
  readonly preview?: CronPreview
}

/**
 * Input of {@link CronService.preview}: a job definition as {@link CronService.create} takes it, or
 * only a schedule (`scheduleType`, `schedule`, optionally `timezone`) for a schedule-only preview.
 */
export type CronPreviewInput = Partial<CronJobInput> & {
  readonly scheduleType: string
  readonly schedule: string | number
}

/** Options of {@link CronService.preview} and {@link CronService.previewUpdate}. */
export interface CronPreviewOptions {
  /** How many fires to list: 1 to 50, default 5. */
  readonly count?: number
  /**
   * When `input.name` is already taken: `update` (default, as {@link CronService.add} does) previews
   * the update of that job; `error` refuses with `CRON_DUPLICATE_NAME`, as {@link CronService.create} does.
   */
  readonly existing?: 'update' | 'error'
  readonly signal?: AbortSignal
}

/** What a preview is computed from, once the input is validated. */
interface PreviewPlan {
  readonly action: 'create' | 'update'
  readonly jobId: string | null
  readonly definition: Pick<CronJob, 'name' | 'kind' | 'prompt' | 'deliverTo' | 'notify'> | null
  readonly enabled: boolean
  readonly scheduleType: CronJob['scheduleType']
  readonly schedule: string
  readonly timezone: string
  readonly compiled: CompiledSchedule
  /** The `at` text as given (its DST note needs to know whether it named a wall time). */
  readonly atText?: string
  /** An unchanged schedule's stored next fire, the grid of its further fires. */
  readonly anchor?: number
}

/** Result of {@link CronService.add}. */
export interface AddJobResult extends JobWithNextRuns {
  readonly status: 'created' | 'updated'
}

/**
 * Where a page of {@link CronService.listPage} starts: after the job named `after` (and, in a sort
 * other than name, keyed `afterKey`).
 */
export interface JobPagePosition {
  readonly after: string
  readonly afterKey?: number
}

/** Options of {@link CronService.history}. */
export interface HistoryOptions {
  /** Job id or name; all jobs when omitted. */
  readonly job?: string
  /** Default 20, at most 200. */
  readonly limit?: number
  readonly status?: CronRunStatus
  /**
   * The page after one that ended with the run of this `scheduledFor` and `id` (the last run a
   * call returned): older runs, in the same order.
   */
  readonly before?: { readonly scheduledFor: number; readonly id: string }
  readonly signal?: AbortSignal
}

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/
const TARGET_PATTERN = /^[a-z][a-z0-9_-]{0,31}(?::[^\s]{1,200})?$/
const MAX_PROMPT_CHARS = 16_000
const MAX_COMMAND_CHARS = 8_000
const MAX_TARGETS = 10
const NOTIFY_POLICIES: readonly string[] = ['always', 'failure', 'state_changes', 'never']
const NAME_RULE =
  'names are 1-64 characters of letters, digits, "-", "_" or ".", starting with a letter or digit'

/**
 * The operations the agent tools need (cron_add/list/pause/resume/remove/history and
 * manage_cron_jobs): validation before storage, the store, and a {@link CronScheduler} kept in
 * sync so changes take effect at once. Every create/update returns the next 3 fire times.
 * @example
 * const cron = new CronService({ store, agentRunner, channelSender, defaultTimezone: 'Europe/Berlin' })
 * await cron.start()
 * const { job, nextRuns } = await cron.create({ name: 'news', scheduleType: 'cron', schedule: '0 8 * * *', prompt: 'Headlines' })
 */
export class CronService {
  /** The scheduler this service drives (subscribe to its events with {@link CronService.on}). */
  readonly scheduler: CronScheduler
  readonly #store: CronStore
  readonly #clock: Clock
  readonly #newId: IdGenerator
  readonly #defaultTimezone: string
  readonly #minIntervalMs: number
  readonly #minAgentIntervalMs: number
  readonly #maxJobs: number
  readonly #maxJobsPerCreator: number
  readonly #checkCommand: CronServiceOptions['checkCommand']
  readonly #defaultTimeoutMs: number
  readonly #maxTimeoutMs: number
  readonly #automationPrefix: string | undefined
  readonly #recentResultsInPrompt: number

  constructor(options: CronServiceOptions) {
    checkServiceKeys(options)
    checkNestedSchedulerKeys(options)
    this.scheduler = options.scheduler ?? new CronScheduler(schedulerOptionsOf(options))
    this.#store = options.store
    this.#clock = options.clock ?? systemClock
    this.#newId = options.idGenerator ?? randomUUID
    this.#defaultTimezone = resolveTimeZone(options.defaultTimezone ?? hostTimeZone())
    this.#minIntervalMs = wholeNumber(
      options.minIntervalMs ?? DEFAULT_MIN_INTERVAL_MS,
      'minIntervalMs',
      'milliseconds',
      0,
      MAX_INTERVAL_MS,
    )
    this.#minAgentIntervalMs = Math.max(
      this.#minIntervalMs,
      wholeNumber(
        options.minAgentIntervalMs ?? this.#minIntervalMs,
        'minAgentIntervalMs',
        'milliseconds',
        0,
        MAX_INTERVAL_MS,
      ),
    )
    this.#maxJobs = wholeNumber(options.maxJobs ?? 500, 'maxJobs', 'jobs', 1)
    this.#maxJobsPerCreator = wholeNumber(options.maxJobsPerCreator ?? 50, 'maxJobsPerCreator', 'jobs', 1)
    if (options.checkCommand !== undefined && typeof options.checkCommand !== 'function')
      throw new CronError('CRON_INVALID_INPUT', 'checkCommand must be a function (command, field) => void.')
    this.#checkCommand = options.checkCommand
    this.#maxTimeoutMs = timerMs(options.maxTimeoutMs ?? 86_400_000, 'maxTimeoutMs', 1000)
    this.#defaultTimeoutMs = options.defaultTimeoutMs ?? Math.min(600_000, this.#maxTimeoutMs)
    this.#automationPrefix = options.automationPrefix
    // Checked here too: a scheduler passed in (`options.scheduler`) never saw this option.
    this.#recentResultsInPrompt = wholeNumber(
      options.recentResultsInPrompt ?? 3,
      'recentResultsInPrompt',
      'results',
      0,
      MAX_RECENT_RESULTS_IN_PROMPT,
    )
    if (
      !Number.isSafeInteger(this.#defaultTimeoutMs) ||
      this.#defaultTimeoutMs < 1000 ||
      this.#defaultTimeoutMs > this.#maxTimeoutMs
    ) {
      throw new CronError(
        'CRON_INVALID_INPUT',
        `defaultTimeoutMs must be a whole number of milliseconds from 1000 to maxTimeoutMs (${this.#maxTimeoutMs})`,
        { data: { field: 'defaultTimeoutMs', min: 1000, max: this.#maxTimeoutMs } },
      )
    }
  }

  /**
   * Subscribes to an event of the scheduler this service drives; returns the unsubscribe function.
   * The same shape as `engine.on(...)` (workflow) and `background.on(...)`; it replaces
   * `cron.scheduler.events.on(...)`, which still works for one release.
   * @example
   * const unsubscribe = cron.on('run:end', ({ job, run }) => console.log(job.name, run.status))
   */
  on<K extends keyof CronSchedulerEvents>(
    event: K,
    listener: (payload: CronSchedulerEvents[K]) => void,
  ): Unsubscribe {
    return this.scheduler.on(event, listener)
  }

  /** Starts the scheduler (see {@link CronScheduler.start}). */
  async start(options?: { readonly signal?: AbortSignal }): Promise<void> {
    checkSignalKeys(options)
    await this.scheduler.start(options)
  }

  /** Stops the scheduler (see {@link CronScheduler.stop}). */
  async stop(options?: { readonly signal?: AbortSignal }): Promise<void> {
    checkSignalKeys(options)
    await this.scheduler.stop(options)
  }

  /** Same as {@link CronService.stop}; for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop()
  }

  /** Creates a job, or updates the job with the same name (cron_add). */
  async add(input: CronJobInput, options?: { readonly signal?: AbortSignal }): Promise<AddJobResult> {
    checkJobKeys(input)
    checkSignalKeys(options)
    options?.signal?.throwIfAborted()
    const name = checkName(input?.name)
    const existing = await this.#store.getJobByName(name, options)
    if (existing !== undefined)
      return { status: 'updated', ...(await this.update(existing.id, input, options)) }
    return { status: 'created', ...(await this.create(input, options)) }
  }

  /** Creates a job; a taken name is a `CRON_DUPLICATE_NAME` error (manage_cron_jobs create). */
  async create(input: CronJobInput, options?: { readonly signal?: AbortSignal }): Promise<JobWithNextRuns> {
    checkJobKeys(input)
    checkSignalKeys(options)
    options?.signal?.throwIfAborted()
    const now = this.#clock.now().getTime()
    const definition = this.#definition(input, undefined)
    const schedule = this.#newSchedule(input, now, definition.kind)
    await this.#checkCreate(definition.name, input.createdBy ?? undefined, options)
    const enabled = input.enabled ?? true
    const preview = await this.#preview(
      {
        action: 'create',
        jobId: null,
        definition,
        enabled,
        ...schedule,
        atText: String(input.schedule),
      },
      now,
      DEFAULT_PREVIEW_COUNT,
      options,
    )
    const job: CronJob = {
      id: this.#newId(),
      ...definition,
      scheduleType: schedule.scheduleType,
      schedule: schedule.schedule,
      timezone: schedule.timezone,
      enabled,
      createdAt: now,
      updatedAt: now,
      lastRunAt: null,
      nextRunAt: enabled ? (schedule.nextRuns[0]?.at ?? null) : null,
      lastStatus: null,
      consecutiveFailures: 0,
      pauseReason: enabled ? null : 'created disabled',
      createdBy: input.createdBy ?? null,
    }
    await this.#store.insertJob(job, options)
    this.scheduler.register(job)
    this.scheduler.events.emit('job:change', { job, change: 'created' })
    return { job, nextRuns: schedule.nextRuns, preview }
  }

  /**
   * Jobs ordered by name or by `sort`; `enabled`, `createdBy`, `nameContains`, `kind`, `timezone`,
   * `scheduleType`, `schedule` (exact: with `scheduleType: 'webhook'`, the jobs of one hook),
   * `lastStatus`, `running`, `failing` and `lastDeliveryFailed` filter, `after` (a name, with `afterKey` for a
   * `sort` other than name) and `limit` read one page (see {@link CronStore.listJobs}).
   */
  async list(options?: Omit<JobListFilter, 'ids'> & { readonly signal?: AbortSignal }): Promise<CronJob[]> {
    checkListKeys(options)
    options?.signal?.throwIfAborted()
    const limit = options?.limit
    if (limit !== undefined && !(Number.isInteger(limit) && limit > 0)) {
      throw new CronError('CRON_INVALID_INPUT', `limit must be a positive integer (got ${String(limit)})`)
    }
    if (options?.afterKey !== undefined && !Number.isFinite(options.afterKey)) {
      throw new CronError(
        'CRON_INVALID_INPUT',
        `afterKey must be a finite number (got ${String(options.afterKey)})`,
      )
    }
    await this.scheduler.flushPendingWrites()
    return this.#store.listJobs(options)
  }

  /**
   * One page of jobs in `sort` order (default `name`) after the position `from` (the `next` of the
   * page before; none for the first page), with the position of the next page, or `null` after the
   * last. Keyset paging: a job created or removed meanwhile never shifts the pages.
   */
  async listPage(
    options: JobCountFilter & {
      readonly sort?: JobSort
      readonly limit: number
      readonly from?: JobPagePosition
      readonly signal?: AbortSignal
    },
  ): Promise<{ readonly jobs: CronJob[]; readonly next: JobPagePosition | null }> {
    checkListPageKeys(options)
    checkPageFromKeys(options.from)
    const { from, limit, ...filter } = options
    const sort = options.sort ?? 'name'
    const jobs = await this.list({
      ...filter,
      limit: limit + 1,
      ...(from === undefined ? {} : { after: from.after }),
      ...(from?.afterKey === undefined ? {} : { afterKey: from.afterKey }),
    })
    if (jobs.length <= limit) return { jobs, next: null }
    jobs.length = limit
    const last = jobs[limit - 1] as CronJob
    return {
      jobs,
      next: { after: last.name, ...(sort === 'name' ? {} : { afterKey: jobSortKey(last, sort) }) },
    }
  }

  /** How many jobs match `filter` (the filters of {@link list}, without its paging and order). */
  async count(filter?: JobCountFilter & { readonly signal?: AbortSignal }): Promise<number> {
    checkCountKeys(filter)
    filter?.signal?.throwIfAborted()
    await this.scheduler.flushPendingWrites()
    return this.#store.countJobs(filter)
  }

  /** A job by id or name; `CRON_JOB_NOT_FOUND` when none. */
  async get(idOrName: string, options?: { readonly signal?: AbortSignal }): Promise<CronJob> {
    checkSignalKeys(options)
    return this.#resolve(idOrName, options)
  }

  /**
   * The next `count` fire times of a job (none when disabled): a whole number from 1 to 50, default
   * 3, else `CRON_INVALID_INPUT` (as {@link preview}'s).
   */
  async nextRuns(
    idOrName: string,
    count = 3,
    options?: { readonly signal?: AbortSignal },
  ): Promise<NextRun[]> {
    checkSignalKeys(options)
    const checked = previewCount(count)
    return nextRunsOf(await this.#resolve(idOrName, options), checked)
  }

  /**
   * Changes a job. Schedule changes are validated and take effect at once; `enabled: false`
   * pauses (cancelling a run in flight), `enabled: true` resumes.
   */
  async update(
    idOrName: string,
    changes: CronJobUpdate,
    options?: { readonly signal?: AbortSignal },
  ): Promise<JobWithNextRuns> {
    checkJobKeys(changes)
    checkSignalKeys(options)
    return this.#update(idOrName, changes, options, true)
  }

  /**
   * {@link CronService.update}; without `withPreview` (pause, resume) no preview is worked out: its
   * clash search reads and plans every other job, which a pause has no use for.
   */
  async #update(
    idOrName: string,
    changes: CronJobUpdate,
    options: { readonly signal?: AbortSignal } | undefined,
    withPreview: boolean,
  ): Promise<JobWithNextRuns> {
    options?.signal?.throwIfAborted()
    const current = await this.#resolve(idOrName, options)
    const now = this.#clock.now().getTime()
    const plan = await this.#planUpdate(current, changes, now, options)
    const preview = withPreview
      ? await this.#preview(plan.preview, now, DEFAULT_PREVIEW_COUNT, options)
      : undefined
    const updated = await this.#store.updateJob(current.id, plan.patch, options)
    if (updated === undefined) throw notFound(idOrName)
    if (updated.enabled) this.scheduler.register(updated)
    else await this.scheduler.unregister(updated.id, 'paused')
    const change =
      current.enabled && !updated.enabled
        ? 'paused'
        : !current.enabled && updated.enabled
          ? 'resumed'
          : 'updated'
    this.scheduler.events.emit('job:change', { job: updated, change })
    return { job: updated, nextRuns: nextRunsOf(updated, 3), ...(preview === undefined ? {} : { preview }) }
  }

  /**
   * What creating this job would do, storing nothing: the next `count` fires (job zone and UTC),
   * the schedule in words, DST notes, clashes with other jobs, the delivery route and, for `ai`
   * jobs, an estimate of the prompt's tokens. The input is validated as {@link CronService.create}
   * validates it, with the same errors. A taken name previews the update of that job (see
   * {@link CronPreviewOptions.existing}); input without `name`, `prompt` and `command` is a
   * schedule-only preview (no delivery, no estimate).
   * @example
   * const preview = await cron.preview({ scheduleType: 'cron', schedule: '30 2 * * *', timezone: 'Europe/Berlin' }, { count: 10 })
   * preview.dstNotes[0]?.message // '2026-03-29 02:30 does not exist in Europe/Berlin (clocks go from 02:00 to 03:00): fires at 03:00 …'
   */
  async preview(input: CronPreviewInput, options?: CronPreviewOptions): Promise<CronPreview> {
    checkJobKeys(input)
    checkPreviewKeys(options)
    options?.signal?.throwIfAborted()
    const count = previewCount(options?.count)
    if (typeof input !== 'object' || input === null) {
      throw new CronError('CRON_INVALID_INPUT', 'A job definition object is required.')
    }
    const scheduleOnly =
      (input.name === undefined || input.name === '') &&
      input.prompt === undefined &&
      input.command === undefined
    const now = this.#clock.now().getTime()
    if (!scheduleOnly) {
      const name = checkName(input.name)
      await this.scheduler.flushPendingWrites()
      const existing = await this.#store.getJobByName(name, options)
      if (existing !== undefined && (options?.existing ?? 'update') === 'update') {
        const { name: _name, ...changes } = input
        const plan = await this.#planUpdate(existing, changes, now, options)
        return this.#preview(plan.preview, now, count, options)
      }
    }
    const definition = scheduleOnly
      ? null
      : this.#definition({ ...input, name: input.name } as CronJobInput, undefined)
    // A schedule-only preview is checked against the floor of the kind it names (a shell job's when none).
    const schedule = this.#newSchedule(input, now, definition?.kind ?? (input.kind === 'ai' ? 'ai' : 'shell'))
    if (definition !== null) await this.#checkCreate(definition.name, input.createdBy ?? undefined, options)
    return this.#preview(
      {
        action: 'create',
        jobId: null,
        definition,
        enabled: input.enabled ?? true,
        ...schedule,
        atText: String(input.schedule),
      },
      now,
      count,
      options,
    )
  }

  /**
   * What {@link CronService.update} with these changes would do, storing nothing (see
   * {@link CronService.preview}); the job itself is left out of the clashes.
   */
  async previewUpdate(
    idOrName: string,
    changes: CronJobUpdate,
    options?: Omit<CronPreviewOptions, 'existing'>,
  ): Promise<CronPreview> {
    checkJobKeys(changes)
    checkPreviewUpdateKeys(options)
    options?.signal?.throwIfAborted()
    const count = previewCount(options?.count)
    const current = await this.#resolve(idOrName, options)
    const now = this.#clock.now().getTime()
    const plan = await this.#planUpdate(current, changes, now, options)
    return this.#preview(plan.preview, now, count, options)
  }

  /** Validates an update and works out its patch and preview plan, storing nothing. */
  async #planUpdate(
    current: CronJob,
    changes: CronJobUpdate,
    now: number,
    options: { readonly signal?: AbortSignal } | undefined,
  ): Promise<{ patch: CronJobPatch; preview: PreviewPlan }> {
    const definition = this.#definition(
      { ...inputOf(current), ...stripUndefined(changes) } as CronJobInput,
      current,
    )
    const enabled = changes.enabled ?? current.enabled
    const scheduleChanged =
      (changes.scheduleType !== undefined && changes.scheduleType !== current.scheduleType) ||
      (changes.schedule !== undefined && String(changes.schedule) !== current.schedule) ||
      (changes.timezone !== undefined && changes.timezone !== current.timezone)
    if (definition.name !== current.name) {
      const holder = await this.#store.getJobByName(definition.name, options)
      if (holder !== undefined && holder.id !== current.id) throw duplicateName(definition.name)
    }
    const patch: { -readonly [K in keyof CronJobPatch]: CronJobPatch[K] } = {
      ...definition,
      updatedAt: now,
      enabled,
    }
    const base = { action: 'update' as const, jobId: current.id, definition, enabled }
    let preview: PreviewPlan
    if (scheduleChanged || (enabled && !current.enabled)) {
      const schedule = validateSchedule({
        scheduleType: changes.scheduleType ?? current.scheduleType,
        schedule: changes.schedule ?? current.schedule,
        timezone: changes.timezone ?? current.timezone,
        now,
        ...this.#floor(definition.kind),
        // The stored schedule, unchanged, keeps its stored meaning (ADR 0013).
        stored:
          (changes.scheduleType ?? current.scheduleType) === current.scheduleType &&
          (changes.schedule === undefined || String(changes.schedule) === current.schedule),
      })
      patch.scheduleType = schedule.scheduleType
      patch.schedule = schedule.schedule
      patch.timezone = schedule.timezone
      patch.nextRunAt = enabled ? (schedule.nextRuns[0]?.at ?? null) : null
      preview = { ...base, ...schedule, atText: String(changes.schedule ?? current.schedule) }
    } else {
      if (enabled && definition.kind === 'ai' && current.kind !== 'ai') {
        // A shell job made an ai job keeps its schedule and next run only if they clear an ai
        // job's floor (a paused one is checked when it is resumed, above).
        validateSchedule({
          scheduleType: current.scheduleType,
          schedule: current.schedule,
          timezone: current.timezone,
          now,
          ...this.#floor('ai'),
          stored: true,
        })
      }
      preview = {
        ...base,
        scheduleType: current.scheduleType,
        schedule: current.schedule,
        timezone: current.timezone,
        compiled: compileJobSchedule(current),
        ...(current.enabled && current.nextRunAt !== null ? { anchor: current.nextRunAt } : {}),
      }
    }
    if (!enabled) {
      patch.nextRunAt = null
      if (current.enabled) patch.pauseReason = 'paused by request'
    } else if (!current.enabled) {
      patch.pauseReason = null
      patch.consecutiveFailures = 0
    }
    return { patch, preview }
  }

  /** Computes a preview from its plan: reads the other jobs for clashes, stores nothing. */
  async #preview(
    plan: PreviewPlan,
    now: number,
    count: number,
    options: { readonly signal?: AbortSignal } | undefined,
  ): Promise<CronPreview> {
    const fires = previewFires(plan.compiled, {
      now,
      count,
      ...(plan.anchor === undefined ? {} : { anchor: plan.anchor }),
    })
    await this.scheduler.flushPendingWrites()
    const signal = options?.signal ? { signal: options.signal } : {}
    const others =
      this.#store.enabledSchedules === undefined
        ? await this.#store.listJobs({ enabled: true, ...signal })
        : await this.#store.enabledSchedules(signal)
    const { clashes, count: clashCount } = findClashes(fires, plan.timezone, others, plan.jobId ?? undefined)
    const last = fires[fires.length - 1]
    const definition = plan.definition
    return {
      action: plan.action,
      jobId: plan.jobId,
      name: definition?.name ?? null,
      scheduleType: plan.scheduleType,
      schedule: plan.schedule,
      timezone: plan.timezone,
      description: describeSchedule(plan),
      enabled: plan.enabled,
      fires: fires.map((at) => toNextRun(at, plan.timezone)),
      dstNotes:
        last === undefined
          ? []
          : dstNotes(
              {
                scheduleType: plan.scheduleType,
                timezone: plan.timezone,
                compiled: plan.compiled,
                ...(plan.atText === undefined ? {} : { atText: plan.atText }),
              },
              now,
              last,
            ),
      clashes,
      clashCount,
      delivery: definition === null ? null : deliveryRoute(definition.deliverTo, definition.notify),
      ...(definition?.kind === 'ai' && definition.prompt !== null
        ? {
            promptEstimate: estimatePrompt(
              { name: definition.name, prompt: definition.prompt },
              {
                ...(this.#automationPrefix === undefined ? {} : { automationPrefix: this.#automationPrefix }),
                recentResults: this.#recentResultsInPrompt,
              },
            ),
          }
        : {}),
    }
  }

  /** Disables a job and unregisters it at once, cancelling a run in flight (cron_pause). */
  async pause(idOrName: string, options?: { readonly signal?: AbortSignal }): Promise<CronJob> {
    checkSignalKeys(options)
    const current = await this.#resolve(idOrName, options)
    if (!current.enabled) return current
    return (await this.#update(current.id, { enabled: false }, options, false)).job
  }

  /** Enables a job again, with a fresh next fire and its failure count reset (cron_resume). */
  async resume(idOrName: string, options?: { readonly signal?: AbortSignal }): Promise<JobWithNextRuns> {
    checkSignalKeys(options)
    const current = await this.#resolve(idOrName, options)
    if (current.enabled) return { job: current, nextRuns: nextRunsOf(current, 3) }
    return this.#update(current.id, { enabled: true }, options, false)
  }

  /** Deletes a job and its history, cancelling a run in flight (cron_remove). */
  async remove(idOrName: string, options?: { readonly signal?: AbortSignal }): Promise<CronJob> {
    checkSignalKeys(options)
    const current = await this.#resolve(idOrName, options)
    await this.scheduler.unregister(current.id, 'removed')
    await this.#store.deleteJob(current.id, options)
    this.scheduler.events.emit('job:change', { job: current, change: 'removed' })
    return current
  }

  /**
   * Runs a job now, asynchronously, as a `manual` ledger row (manage_cron_jobs trigger), or with
   * `payload` as a `webhook` row whose payload reaches the run as untrusted data (see
   * {@link TriggerOptions}).
   */
  async trigger(
    idOrName: string,
    options?: TriggerOptions & { readonly signal?: AbortSignal },
  ): Promise<TriggerResult & { readonly job: CronJob }> {
    checkTriggerKeys(options)
    const job = await this.#resolve(idOrName, options)
    const payload = options?.payload
    return { ...(await this.scheduler.trigger(job, payload === undefined ? {} : { payload })), job }
  }

  /** Run history, newest first, for one job (id or name) or all (cron_history). */
  async history(options?: HistoryOptions): Promise<CronRun[]> {
    checkHistoryKeys(options)
    const limit = Math.min(200, Math.max(1, Math.floor(options?.limit ?? 20)))
    const signal = options?.signal === undefined ? {} : { signal: options.signal }
    const before = checkBefore(options?.before)
    const page = {
      limit,
      ...(options?.status === undefined ? {} : { status: options.status }),
      ...(before === undefined ? {} : { before }),
      ...signal,
    }
    if (options?.job === undefined) return this.#store.listRuns(page)
    const job = await this.#resolve(options.job, signal)
    return this.#store.listRuns({ jobId: job.id, ...page })
  }

  /** One run (ledger row) by id; `CRON_RUN_NOT_FOUND` when none. */
  async getRun(runId: string, options?: { readonly signal?: AbortSignal }): Promise<CronRun> {
    checkSignalKeys(options)
    options?.signal?.throwIfAborted()
    const run =
      typeof runId === 'string' && runId.length > 0 ? await this.#store.getRun(runId, options) : undefined
    if (run === undefined)
      throw new CronError('CRON_RUN_NOT_FOUND', 'Run not found: no run has this id.', {
        data: { id: String(runId).slice(0, 200) },
      })
    return run
  }

  /**
   * The delivery ledger rows of the given runs (one per run and target: status, attempts, next
   * attempt, last error), by run then target.
   */
  async deliveries(
    runIds: readonly string[],
    options?: { readonly signal?: AbortSignal },
  ): Promise<CronDelivery[]> {
    checkSignalKeys(options)
    options?.signal?.throwIfAborted()
    if (runIds.length === 0) return []
    return this.#store.listDeliveries(runIds, options)
  }

  /** The schedule of a job being created (or previewed as one), validated in its zone or the default. */
  #newSchedule(
    input: Pick<CronJobInput, 'scheduleType' | 'schedule' | 'timezone'>,
    now: number,
    kind: CronJobKind,
  ): ValidatedSchedule {
    return validateSchedule({
      scheduleType: input.scheduleType,
      schedule: input.schedule,
      timezone: input.timezone ?? this.#defaultTimezone,
      now,
      ...this.#floor(kind),
    })
  }

  /** The smallest gap between two fires of a job of `kind` (SECURITY.md CRON-2), and what it is of. */
  #floor(kind: CronJobKind): { readonly minIntervalMs: number; readonly minIntervalOf?: string } {
    // Named only when it differs: one floor for every kind reads as "the minimum", as before.
    if (kind === 'ai' && this.#minAgentIntervalMs > this.#minIntervalMs)
      return { minIntervalMs: this.#minAgentIntervalMs, minIntervalOf: 'an ai job' }
    return { minIntervalMs: this.#minIntervalMs }
  }

  /** The checks a create makes before storing: the name is free and the job caps allow one more. */
  async #checkCreate(
    name: string,
    createdBy: string | undefined,
    options: { readonly signal?: AbortSignal } | undefined,
  ): Promise<void> {
    const definition = { name }
    if ((await this.#store.getJobByName(definition.name, options)) !== undefined) {
      throw duplicateName(definition.name)
    }
    if ((await this.#store.countJobs(options)) >= this.#maxJobs) {
      throw new CronError(
        'CRON_TOO_MANY_JOBS',
        `There are already ${this.#maxJobs} jobs, the maximum; remove jobs you no longer need first.`,
        { data: { maxJobs: this.#maxJobs } },
      )
    }
    if (
      createdBy !== undefined &&
      (await this.#store.countJobs({ ...options, createdBy })) >= this.#maxJobsPerCreator
    ) {
      throw new CronError(
        'CRON_TOO_MANY_JOBS',
        `This user already has ${this.#maxJobsPerCreator} jobs in this channel, the maximum; remove jobs they no longer need first.`,
        { data: { maxJobsPerCreator: this.#maxJobsPerCreator } },
      )
    }
  }

  async #resolve(idOrName: string, options?: { readonly signal?: AbortSignal }): Promise<CronJob> {
    options?.signal?.throwIfAborted()
    await this.scheduler.flushPendingWrites()
    if (typeof idOrName !== 'string' || idOrName.trim().length === 0) {
      throw new CronError('CRON_INVALID_INPUT', 'id is required: give the job id or its name.')
    }
    const key = idOrName.trim()
    const job = (await this.#store.getJob(key, options)) ?? (await this.#store.getJobByName(key, options))
    if (job === undefined) throw notFound(key)
    return job
  }

  /** The host's {@link CronServiceOptions.checkCommand}, its refusal as `CRON_INVALID_INPUT`. */
  #hostCheck(command: string, field: 'command' | 'when'): void {
    if (this.#checkCommand === undefined) return
    try {
      this.#checkCommand(command, field)
    } catch (error) {
      throw new CronError('CRON_INVALID_INPUT', `${field}: ${toError(error).message}`, {
        data: { field },
        cause: error,
      })
    }
  }

  /** {@link checkWhen}, then the host's check of a gate that is new or changed. */
  #when(kind: CronJobKind, value: unknown, current: CronJob | undefined): string | null {
    const when = checkWhen(kind, value)
    if (when !== null && when !== current?.when) this.#hostCheck(when, 'when')
    return when
  }

  /** Validates everything but the schedule; throws CRON_INVALID_INPUT naming the field. */
  #definition(
    input: CronJobInput,
    current: CronJob | undefined,
  ): Pick<
    CronJob,
    | 'name'
    | 'kind'
    | 'prompt'
    | 'command'
    | 'cwd'
    | 'model'
    | 'sessionMode'
    | 'deliverTo'
    | 'timeoutMs'
    | 'overlap'
    | 'catchup'
    | 'pingUrl'
    | 'notify'
    | 'when'
    | 'maxTokensPerDay'
    | 'maxCostPerDay'
  > {
    if (typeof input !== 'object' || input === null) {
      throw new CronError('CRON_INVALID_INPUT', 'A job definition object is required.')
    }
    const name = checkName(input.name)
    if (
      input.scheduleType === undefined ||
      input.scheduleType === null ||
      String(input.scheduleType).trim() === ''
    ) {
      throw new CronError(
        'CRON_INVALID_INPUT',
        'scheduleType is required: one of cron, every, at, webhook (aliases interval, once).',
      )
    }
    const hasPrompt = typeof input.prompt === 'string' && input.prompt.trim().length > 0
    const hasCommand = typeof input.command === 'string' && input.command.trim().length > 0
    const kind = input.kind ?? current?.kind ?? (hasCommand && !hasPrompt ? 'shell' : 'ai')
    if (kind !== 'ai' && kind !== 'shell') {
      throw new CronError(
        'CRON_INVALID_INPUT',
        `kind must be "ai" or "shell"; got "${String(kind).slice(0, 20)}".`,
      )
    }
    // Given the other kind's text, a job would drop it without a word: the caller meant something.
    // (An update keeps what the job had before a change of kind; only text given now counts.)
    if (kind === 'shell' && hasPrompt && input.prompt !== current?.prompt)
      throw new CronError(
        'CRON_INVALID_INPUT',
        'prompt is for ai jobs: a shell job runs its command and no model. Drop the prompt, or make it an ai job (kind: "ai") without a command.',
        { data: { field: 'prompt' } },
      )
    if (kind === 'ai' && hasCommand && input.command !== current?.command)
      throw new CronError(
        'CRON_INVALID_INPUT',
        'command is for shell jobs: an ai job runs its prompt (a when gate may run a command first). Drop the command, or make it a shell job (kind: "shell") without a prompt.',
        { data: { field: 'command' } },
      )
    if (kind === 'ai') {
      if (!hasPrompt)
        throw new CronError(
          'CRON_INVALID_INPUT',
          'prompt is required for an ai job: say what the agent should do.',
        )
      checkLength('prompt', input.prompt as string, MAX_PROMPT_CHARS)
    } else {
      if (!hasCommand) throw new CronError('CRON_INVALID_INPUT', 'command is required for a shell job.')
      checkLength('command', input.command as string, MAX_COMMAND_CHARS)
      // A job written before the host's check keeps its other edits: only new text is checked.
      if (input.command !== current?.command) this.#hostCheck(input.command as string, 'command')
    }
    const sessionMode = input.sessionMode ?? 'isolated'
    if (sessionMode !== 'isolated' && sessionMode !== 'main') {
      throw new CronError(
        'CRON_INVALID_INPUT',
        'session_mode must be "isolated" (a new session per run) or "main" (one shared session).',
      )
    }
    // A webhook call is an event its sender sends once: by default one waits behind a run still
    // going rather than being dropped (a call skipped by every job is refused, for a retry later).
    const webhook = String(input.scheduleType).trim().toLowerCase() === 'webhook'
    const overlap = input.overlap ?? (webhook ? 'queue_one' : 'skip')
    if (overlap !== 'skip' && overlap !== 'queue_one' && overlap !== 'allow') {
      throw new CronError(
        'CRON_INVALID_INPUT',
        'overlap must be "skip" (the default; "queue_one" for webhook jobs), "queue_one" or "allow".',
      )
    }
    const catchup = input.catchup ?? 'latest'
    if (catchup !== 'latest' && catchup !== 'none') {
      throw new CronError('CRON_INVALID_INPUT', 'catchup must be "latest" (default) or "none".')
    }
    const notify = input.notify ?? 'always'
    if (!NOTIFY_POLICIES.includes(notify)) {
      throw new CronError(
        'CRON_INVALID_INPUT',
        'notify must be "always" (default: every run), "failure" (failed and timed-out runs), "state_changes" (failure and recovery) or "never".',
      )
    }
    return {
      name,
      kind,
      prompt: kind === 'ai' ? (input.prompt as string) : null,
      command: kind === 'shell' ? (input.command as string) : null,
      cwd: checkCwd(input.cwd, current?.cwd),
      model: kind === 'ai' ? optionalText('model', input.model, 200) : null,
      sessionMode,
      deliverTo: checkTargets(input.deliverTo),
      timeoutMs: this.#timeout(input.timeout),
      overlap,
      catchup,
      pingUrl: checkPingUrl(input.pingUrl),
      notify,
      when: this.#when(kind, input.when, current),
      maxTokensPerDay: kind === 'ai' ? dailyBudget('max_tokens_per_day', input.maxTokensPerDay, true) : null,
      maxCostPerDay: kind === 'ai' ? dailyBudget('max_cost_per_day', input.maxCostPerDay, false) : null,
    }
  }

  #timeout(value: string | number | undefined): number {
    if (value === undefined || value === null || value === '') return this.#defaultTimeoutMs
    const milliseconds = parseDuration(value, { field: 'timeout', code: 'CRON_INVALID_INPUT' })
    if (milliseconds < 1000 || milliseconds > this.#maxTimeoutMs) {
      throw new CronError(
        'CRON_INVALID_INPUT',
        `timeout must be between 1s and ${formatDuration(this.#maxTimeoutMs)}; got ${formatDuration(milliseconds)}.`,
        { data: { timeoutMs: milliseconds, maxTimeoutMs: this.#maxTimeoutMs } },
      )
    }
    return milliseconds
  }
}

/** A preview's `count`, checked: a whole number from 1 to 50, default 5. */
function previewCount(count: number | undefined): number {
  if (count === undefined) return DEFAULT_PREVIEW_COUNT
  if (!Number.isInteger(count) || count < 1 || count > MAX_PREVIEW_COUNT) {
    throw new CronError(
      'CRON_INVALID_INPUT',
      `count must be a whole number from 1 to ${MAX_PREVIEW_COUNT}; got ${String(count).slice(0, 20)}.`,
      { data: { field: 'count', min: 1, max: MAX_PREVIEW_COUNT } },
    )
  }
  return count
}

/** The next `count` fires of a stored job, starting at its persisted `nextRunAt`. */
function nextRunsOf(job: CronJob, count: number): NextRun[] {
  if (!job.enabled || job.nextRunAt === null) return []
  const compiled = compileJobSchedule(job)
  const runs: NextRun[] = [toNextRun(job.nextRunAt, job.timezone)]
  let cursor = job.nextRunAt
  while (runs.length < count) {
    const next = compiled.next(cursor, cursor)
    if (next === undefined) break
    runs.push(toNextRun(next, job.timezone))
    cursor = next
  }
  return runs
}

function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.trim().length === 0) {
    throw new CronError('CRON_INVALID_INPUT', `name is required: ${NAME_RULE}.`)
  }
  const trimmed = name.trim()
  if (!NAME_PATTERN.test(trimmed)) {
    throw new CronError('CRON_INVALID_INPUT', `name is not valid: ${NAME_RULE}.`, {
      data: { name: trimmed.slice(0, 100) },
    })
  }
  return trimmed
}

function checkLength(field: string, value: string, max: number): void {
  if (value.length > max)
    throw new CronError('CRON_INVALID_INPUT', `${field} is longer than ${max} characters.`)
  if (value.includes('\u0000'))
    throw new CronError('CRON_INVALID_INPUT', `${field} contains a NUL character.`)
}

/** A job's daily budget, checked: above 0 (tokens whole), or null for none. */
function dailyBudget(field: string, value: unknown, whole: boolean): number | null {
  if (value === undefined || value === null) return null
  const valid =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    value > 0 &&
    (!whole || (Number.isSafeInteger(value) && value <= 1_000_000_000_000))
  if (!valid)
    throw new CronError(
      'CRON_INVALID_INPUT',
      whole
        ? `${field} must be a whole number of tokens above 0 (null for none).`
        : `${field} must be a number of US dollars above 0 (null for none).`,
      { data: { field } },
    )
  return value
}

function optionalText(field: string, value: unknown, max: number): string | null {
  if (value === undefined || value === null || value === '') return null
  if (typeof value !== 'string') throw new CronError('CRON_INVALID_INPUT', `${field} must be a string.`)
  checkLength(field, value, max)
  return value
}

/** `history`'s `before`: a finite `scheduledFor` and a string `id`, or refused naming what it takes. */
function checkBefore(
  value: HistoryOptions['before'],
): { readonly scheduledFor: number; readonly id: string } | undefined {
  if (value === undefined) return undefined
  if (
    typeof value !== 'object' ||
    value === null ||
    !Number.isFinite(value.scheduledFor) ||
    typeof value.id !== 'string' ||
    value.id.length > 200
  )
    throw new CronError(
      'CRON_INVALID_INPUT',
      'before must be { scheduledFor, id } of a run a page ended with (a number and an id).',
      { data: { field: 'before' } },
    )
  return { scheduledFor: value.scheduledFor, id: value.id }
}

/**
 * A job's working directory: null for the host's default; else an absolute path (a relative one is
 * refused at every run). Only one given now is refused: a job stored with a relative one before
 * can still be paused, resumed and edited (a pause would otherwise fail on it).
 */
function checkCwd(value: unknown, stored: string | null | undefined): string | null {
  const cwd = optionalText('cwd', value, 1024)
  if (cwd !== null && cwd !== stored && !cwd.startsWith('/'))
    throw new CronError(
      'CRON_INVALID_INPUT',
      `cwd must be an absolute path such as /srv/app (got a relative one, "${cwd.slice(0, 64)}"), or left out for the host's working directory.`,
      { data: { field: 'cwd' } },
    )
  return cwd
}

/** A job's `when` gate: null for none (absent, null or blank); only an `ai` job may have one. */
function checkWhen(kind: CronJobKind, value: unknown): string | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'string')
    throw new CronError('CRON_INVALID_INPUT', 'when must be a shell command (a string).', {
      data: { field: 'when' },
    })
  if (value.trim() === '') return null
  if (kind !== 'ai')
    throw new CronError(
      'CRON_INVALID_INPUT',
      'when is for ai jobs (it decides whether to wake the model); a shell job can test its condition in its own command.',
      { data: { field: 'when' } },
    )
  checkLength('when', value, MAX_COMMAND_CHARS)
  return value
}

function checkTargets(value: readonly string[] | string | undefined): string[] {
  if (value === undefined || value === null) return []
  const list = typeof value === 'string' ? [value] : value
  if (!Array.isArray(list))
    throw new CronError(
      'CRON_INVALID_INPUT',
      'deliver_to must be a list of targets such as ["telegram:123"].',
    )
  if (list.length > MAX_TARGETS)
    throw new CronError('CRON_INVALID_INPUT', `deliver_to accepts at most ${MAX_TARGETS} targets.`)
  const targets: string[] = []
  for (const target of list) {
    if (typeof target !== 'string' || !TARGET_PATTERN.test(target.trim())) {
      throw new CronError(
        'CRON_INVALID_INPUT',
        'Each deliver_to target must be "channel" or "channel:id" (e.g. "telegram", "telegram:123", "slack:C0123").',
        { data: { target: String(target).slice(0, 100) } },
      )
    }
    if (!targets.includes(target.trim())) targets.push(target.trim())
  }
  return targets
}

function inputOf(job: CronJob): CronJobInput {
  return {
    name: job.name,
    kind: job.kind,
    scheduleType: job.scheduleType,
    schedule: job.schedule,
    timezone: job.timezone,
    ...(job.prompt === null ? {} : { prompt: job.prompt }),
    ...(job.command === null ? {} : { command: job.command }),
    ...(job.cwd === null ? {} : { cwd: job.cwd }),
    ...(job.model === null ? {} : { model: job.model }),
    sessionMode: job.sessionMode,
    deliverTo: job.deliverTo,
    timeout: job.timeoutMs,
    overlap: job.overlap,
    catchup: job.catchup,
    pingUrl: job.pingUrl,
    notify: job.notify,
    when: job.when,
    maxTokensPerDay: job.maxTokensPerDay,
    maxCostPerDay: job.maxCostPerDay,
  }
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>
}

function duplicateName(name: string): CronError {
  return new CronError(
    'CRON_DUPLICATE_NAME',
    `A job named "${name}" already exists; choose another name or update that job.`,
    {
      data: { name },
    },
  )
}

function notFound(idOrName: string): CronError {
  return new CronError('CRON_JOB_NOT_FOUND', 'Job not found: no job has this id or name.', {
    data: { id: idOrName.slice(0, 200) },
  })
}
