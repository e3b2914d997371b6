import { randomUUID } from 'node:crypto'
import { type CatchUpBounds, DEFAULT_CATCHUP_MAX_MS, DEFAULT_CATCHUP_MIN_MS } from './catch-up.js'
import { CronError } from './errors.js'
import { DEFAULT_MAX_PAYLOAD_IN_PROMPT_BYTES, MIN_RESULT_CHARS } from './executor.js'
import type { Retention } from './maintenance.js'
import { refuseUnknownKeys } from './option-keys.js'
import type {
  AgentRunner,
  ChannelSender,
  Clock,
  CronStore,
  IdGenerator,
  Logger,
  RunMonitor,
  RunScope,
  ShellRunner,
} from './ports.js'
import { silentLogger, systemClock } from './ports.js'

/** The delivery retry policy with its defaults applied (see {@link CronSchedulerOptions.delivery}). */
interface DeliveryRetrySettings {
  readonly maxAttempts: number
  readonly baseDelayMs: number
  readonly maxDelayMs: number
  readonly maxRetryAfterMs: number
  readonly random: () => number
}

/**
 * The longest delay a Node timer takes (2^31 − 1 ms, about 24.8 days): a longer one fires after
 * about 1 ms. Every option of cron that feeds a timer is checked against it.
 */
export const MAX_TIMER_MS = 2_147_483_647

/** Most earlier results an `ai` prompt may show (`recentResultsInPrompt`). */
export const MAX_RECENT_RESULTS_IN_PROMPT = 100

/** Options of {@link CronScheduler}. Only `store` is required. */
export interface CronSchedulerOptions {
  readonly store: CronStore
  /** Runs `ai` jobs; without it they fail with a clear error recorded on the run. */
  readonly agentRunner?: AgentRunner
  /** Runs `shell` jobs (apps/server applies the exec guard and env policy). */
  readonly shellRunner?: ShellRunner
  /** Delivers results to each job's `deliverTo` targets. */
  readonly channelSender?: ChannelSender
  readonly clock?: Clock
  readonly logger?: Logger
  readonly idGenerator?: IdGenerator
  /** This instance's id in the `owner` column; a fresh id by default. */
  readonly ownerId?: string
  /**
   * Runs in flight at once across all jobs (default 5; a whole number, 1 or more); further due runs
   * wait for a slot.
   */
  readonly maxConcurrentJobs?: number
  /**
   * Occurrences that may wait for a run slot beside another of their own job (default 100).
   * Every job may always have one occurrence waiting; only `overlap: 'allow'` jobs can have more,
   * and at most this many such further occurrences wait in all. Beyond it each is recorded
   * `skipped` (`queue full: …`), and a manual trigger returns `{ status: 'skipped', reason }`.
   */
  readonly maxWaitingRuns?: number
  /**
   * Consecutive failures (failed or timed out) after which a job is paused (default 5; a whole
   * number, 1 or more, or `Infinity` to never pause).
   */
  readonly maxConsecutiveFailures?: number
  /** How many earlier results an `ai` prompt shows (default 3; 0 to 100). */
  readonly recentResultsInPrompt?: number
  /** Text before every automated prompt. */
  readonly automationPrefix?: string
  /** Batching delay for next/last run time writes (default 250 ms; at most 2^31 − 1). */
  readonly scheduleWriteDelayMs?: number
  /**
   * Bound on a stored result (default 16,000 characters; at least 100, so a cut result keeps some
   * of its text beside the `… [truncated N characters]` marker).
   */
  readonly maxResultChars?: number
  /**
   * How much of a webhook payload an `ai` job's prompt carries, in bytes of its UTF-8 (default
   * 16 KiB): a longer payload is cut there, with a line after the block saying how much was cut. A
   * shell job's runner gets the whole payload.
   */
  readonly maxPayloadInPromptBytes?: number
  /**
   * The owner lease (default 60 s; below 1 s counts as 1 s; at most 2^31 − 1 ms): heartbeats come
   * every third of it, and an owner that has not heartbeated for two of them is dead (its running
   * rows become interrupted; a run its owner still finishes records its result all the same).
   */
  readonly leaseMs?: number
  /**
   * How often this scheduler reads the jobs changed in the store (default 2000 ms; 1 ms to 2^31 − 1
   * ms): jobs another scheduler on the same database created, changed, paused or resumed are armed,
   * re-armed or dropped here within about this long. Each read looks a few seconds further back than
   * the last one, so clocks of instances that differ that much lose nothing.
   */
  readonly syncIntervalMs?: number
  /**
   * Catch-up window = half the job's period clamped to [minMs, maxMs] (defaults 2 min and 2 h;
   * whole milliseconds, `minMs` 0 or more, `maxMs` at least `minMs`; without `maxMs`, a `minMs`
   * above 2 h raises it to `minMs`).
   */
  readonly catchupWindow?: { readonly minMs?: number; readonly maxMs?: number }
  /**
   * History retention (defaults 30 days and 1000 rows per job): `maxAgeMs` a whole number of
   * milliseconds, 1 or more; `maxRunsPerJob` a whole number, 1 or more.
   */
  readonly retention?: { readonly maxAgeMs?: number; readonly maxRunsPerJob?: number }
  /**
   * Whether maintenance prunes history hourly (default true). With false it never does; the host
   * calls {@link CronScheduler.pruneHistory} itself, say on one instance of several at a time.
   */
  readonly autoPrune?: boolean
  /**
   * Most `ai` runs started in any 24 hours (default 5000, room for three jobs every minute;
   * `Infinity` for none; SECURITY.md CRON-3).
   * Beyond it an `ai` occurrence is recorded `skipped` with the reason and when the next may run.
   * Counted from the store at start and from this scheduler's own starts after that.
   */
  readonly maxAiRunsPerDay?: number
  /**
   * Most tokens (input plus output, as the agent runner reports them in `usage`) that `ai` runs may
   * use in any 24 hours (default `Infinity`: no token budget; SECURITY.md CRON-3, the daily spend
   * budget). Once the tokens recorded by `ai` runs that ended in the last 24 hours reach it, an `ai`
   * occurrence is recorded `skipped` with the reason and when the next may run, like
   * `maxAiRunsPerDay`. Tokens are known only when a run ends, so runs already started when it is
   * reached still finish (and count). Counted from the store at start and from this scheduler's
   * own runs after that; a failed run counts what its runner's rejection says it spent
   * (`AgentRunFailure.usage`); runs whose runner reports no usage count nothing.
   */
  readonly maxAiTokensPerDay?: number
  /**
   * Spreads jobs that fall due at the same moment (SECURITY.md CRON-6): each recurring job fires a
   * fixed delay after each of its due times, from 0 to this many ms, derived from its id, so the
   * same job is always delayed alike. `scheduledFor` stays the due time; `startedAt` shows the
   * delay, which also stays below half the gap to the job's next due time. One-time (`at`) jobs and
   * manual triggers are never delayed. Default 0 (off); at most half the smallest catch-up window
   * (60 s by default). With jitter on, schedules are compiled when armed rather than when they fire.
   */
  readonly maxJitterMs?: number
  /**
   * Bound on each delivery send (default 30 s; 1 ms to 2^31 − 1 ms): a channel that has not
   * answered by then is aborted and the delivery recorded `failed` with the reason. Pause, remove
   * and stop abort deliveries in flight too.
   */
  readonly deliveryTimeoutMs?: number
  /**
   * Sends the dead-man pings of jobs with a `pingUrl` (start, then success or failure). Without it
   * those jobs run as usual and ping nothing.
   */
  readonly runMonitor?: RunMonitor
  /**
   * Bound on each ping (default 10 s; 1 ms to 2^31 − 1 ms), retries by the monitor included: its
   * signal aborts then and a ping still pending is abandoned, counted failed. Pings never delay or
   * fail a run; `stop()` waits for the ones in flight, so at most this long.
   */
  readonly pingTimeoutMs?: number
  /** Wraps each run, delivery included, in the host's context (its tracing); see {@link RunScope}. */
  readonly runScope?: RunScope
  /**
   * Retries of each delivery (one row per run and target in `cron_deliveries`): `maxAttempts` sends
   * in all (default 5), a failed send retried after an exponential backoff with jitter from
   * `baseDelayMs` (default 10 s; half of each wait fixed, half random) up to `maxDelayMs` (default
   * 15 min), or after the channel's `Retry-After` when it gave one (a `DeliveryError` with
   * `retryAfterMs`) unless that exceeds `maxRetryAfterMs` (default 1 h: then the delivery fails).
   * `random` (in [0, 1), default `Math.random`) is for tests.
   */
  readonly delivery?: {
    readonly maxAttempts?: number
    readonly baseDelayMs?: number
    readonly maxDelayMs?: number
    readonly maxRetryAfterMs?: number
    readonly random?: () => number
  }
}

/** {@link CronSchedulerOptions} with every default applied and every limit checked. */
export interface SchedulerSettings {
  readonly store: CronStore
  readonly agentRunner: AgentRunner | undefined
  readonly shellRunner: ShellRunner | undefined
  readonly channelSender: ChannelSender | undefined
  readonly clock: Clock
  readonly logger: Logger
  readonly newId: IdGenerator
  readonly ownerId: string
  readonly maxConcurrentJobs: number
  readonly maxWaitingRuns: number
  readonly maxConsecutiveFailures: number
  readonly recentResultsInPrompt: number
  readonly automationPrefix: string | undefined
  readonly scheduleWriteDelayMs: number
  readonly maxResultChars: number
  readonly maxPayloadInPromptBytes: number
  readonly leaseMs: number
  readonly syncIntervalMs: number
  readonly catchUp: CatchUpBounds
  readonly retention: Retention
  readonly autoPrune: boolean
  readonly maxAiRunsPerDay: number
  readonly maxAiTokensPerDay: number
  readonly maxJitterMs: number
  readonly deliveryTimeoutMs: number
  readonly runMonitor: RunMonitor | undefined
  readonly pingTimeoutMs: number
  readonly runScope: RunScope | undefined
  readonly delivery: DeliveryRetrySettings
}

/** How the scheduler's background parts (schedule writes, maintenance) hand it work and errors. */
export interface BackgroundHooks {
  /** Keeps a background task in the scheduler's in-flight work (`whenIdle`, `stop`). */
  readonly track: (task: Promise<unknown>) => void
  /** Reports an error the part survived. */
  readonly report: (error: unknown) => void
}

/** Every key of {@link CronSchedulerOptions}, in the order its docs list them. */
export const SCHEDULER_OPTION_KEYS = [
  'store',
  'agentRunner',
  'shellRunner',
  'channelSender',
  'clock',
  'logger',
  'idGenerator',
  'ownerId',
  'maxConcurrentJobs',
  'maxWaitingRuns',
  'maxConsecutiveFailures',
  'recentResultsInPrompt',
  'automationPrefix',
  'scheduleWriteDelayMs',
  'maxResultChars',
  'maxPayloadInPromptBytes',
  'leaseMs',
  'syncIntervalMs',
  'catchupWindow',
  'retention',
  'autoPrune',
  'maxAiRunsPerDay',
  'maxAiTokensPerDay',
  'maxJitterMs',
  'deliveryTimeoutMs',
  'runMonitor',
  'pingTimeoutMs',
  'runScope',
  'delivery',
] as const

const checkSchedulerKeys = refuseUnknownKeys('CronScheduler options', SCHEDULER_OPTION_KEYS)
const checkCatchupKeys = refuseUnknownKeys('catchupWindow', ['minMs', 'maxMs'])
const checkRetentionKeys = refuseUnknownKeys('retention', ['maxAgeMs', 'maxRunsPerJob'])
const checkDeliveryKeys = refuseUnknownKeys('delivery', [
  'maxAttempts',
  'baseDelayMs',
  'maxDelayMs',
  'maxRetryAfterMs',
  'random',
])

/** Refuses unknown keys in the nested options (`catchupWindow`, `retention`, `delivery`). */
export function checkNestedSchedulerKeys(options: CronSchedulerOptions): void {
  checkCatchupKeys(options.catchupWindow)
  checkRetentionKeys(options.retention)
  checkDeliveryKeys(options.delivery)
}

/** The scheduler's own options out of a larger object (the service's), for `new CronScheduler`. */
export function schedulerOptionsOf(options: CronSchedulerOptions): CronSchedulerOptions {
  const picked: Record<string, unknown> = {}
  for (const key of SCHEDULER_OPTION_KEYS) if (options[key] !== undefined) picked[key] = options[key]
  return picked as unknown as CronSchedulerOptions
}

/**
 * Applies the defaults; throws `CRON_INVALID_INPUT` naming the option that is out of range, or a
 * key it does not know (with the closest known one).
 */
export function resolveSchedulerOptions(options: CronSchedulerOptions): SchedulerSettings {
  checkSchedulerKeys(options)
  checkNestedSchedulerKeys(options)
  const newId = options.idGenerator ?? randomUUID
  const maxAiRunsPerDay = options.maxAiRunsPerDay ?? 5000
  if (typeof maxAiRunsPerDay !== 'number' || !(maxAiRunsPerDay >= 0)) {
    throw invalid(
      'maxAiRunsPerDay',
      'maxAiRunsPerDay must be a number of runs, 0 or more (Infinity for no budget)',
    )
  }
  const maxAiTokensPerDay = options.maxAiTokensPerDay ?? Number.POSITIVE_INFINITY
  if (typeof maxAiTokensPerDay !== 'number' || !(maxAiTokensPerDay >= 0)) {
    throw invalid(
      'maxAiTokensPerDay',
      'maxAiTokensPerDay must be a number of tokens, 0 or more (Infinity for no budget)',
    )
  }
  const catchUpMinMs = wholeNumber(
    options.catchupWindow?.minMs ?? DEFAULT_CATCHUP_MIN_MS,
    'catchupWindow.minMs',
    'milliseconds',
    0,
  )
  // Without an explicit maxMs, the default rises to a larger minMs rather than refusing it.
  const catchUp = {
    minMs: catchUpMinMs,
    maxMs: wholeNumber(
      options.catchupWindow?.maxMs ?? Math.max(DEFAULT_CATCHUP_MAX_MS, catchUpMinMs),
      'catchupWindow.maxMs',
      'milliseconds',
      catchUpMinMs,
    ),
  }
  const maxJitterMs = options.maxJitterMs ?? 0
  const jitterLimit = Math.floor(catchUp.minMs / 2)
  if (!Number.isSafeInteger(maxJitterMs) || maxJitterMs < 0 || maxJitterMs > jitterLimit) {
    throw invalid(
      'maxJitterMs',
      `maxJitterMs must be a whole number of milliseconds from 0 to ${jitterLimit} (half the smallest catch-up window)`,
      { max: jitterLimit },
    )
  }
  const maxWaitingRuns = options.maxWaitingRuns ?? 100
  if (!Number.isSafeInteger(maxWaitingRuns) || maxWaitingRuns < 0) {
    throw invalid('maxWaitingRuns', 'maxWaitingRuns must be a whole number of occurrences, 0 or more')
  }
  const deliveryTimeoutMs = timerMs(options.deliveryTimeoutMs ?? 30_000, 'deliveryTimeoutMs', 1)
  const pingTimeoutMs = timerMs(options.pingTimeoutMs ?? 10_000, 'pingTimeoutMs', 1)
  const scheduleWriteDelayMs = timerMs(options.scheduleWriteDelayMs ?? 250, 'scheduleWriteDelayMs', 0)
  const leaseMs = Math.max(1000, timerMs(options.leaseMs ?? 60_000, 'leaseMs', 0))
  const syncIntervalMs = timerMs(options.syncIntervalMs ?? 2000, 'syncIntervalMs', 1)
  const maxPayloadInPromptBytes = options.maxPayloadInPromptBytes ?? DEFAULT_MAX_PAYLOAD_IN_PROMPT_BYTES
  if (!Number.isSafeInteger(maxPayloadInPromptBytes) || maxPayloadInPromptBytes < 1) {
    throw invalid(
      'maxPayloadInPromptBytes',
      'maxPayloadInPromptBytes must be a whole number of bytes, 1 or more',
    )
  }
  const autoPrune = options.autoPrune ?? true
  if (typeof autoPrune !== 'boolean') {
    throw invalid('autoPrune', 'autoPrune must be true (maintenance prunes history) or false (the host does)')
  }
  const maxAttempts = options.delivery?.maxAttempts ?? 5
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 100) {
    throw invalid(
      'delivery.maxAttempts',
      'delivery.maxAttempts must be a whole number of sends from 1 to 100',
    )
  }
  const maxConcurrentJobs = wholeNumber(options.maxConcurrentJobs ?? 5, 'maxConcurrentJobs', 'runs', 1)
  const failuresBeforePause = options.maxConsecutiveFailures ?? 5
  // Infinity: a job is never paused for its failures.
  const maxConsecutiveFailures =
    failuresBeforePause === Number.POSITIVE_INFINITY
      ? failuresBeforePause
      : wholeNumber(failuresBeforePause, 'maxConsecutiveFailures', 'failures', 1, Number.MAX_SAFE_INTEGER, {
          orInfinity: 'never pause',
        })
  const recentResultsInPrompt = wholeNumber(
    options.recentResultsInPrompt ?? 3,
    'recentResultsInPrompt',
    'results',
    0,
    MAX_RECENT_RESULTS_IN_PROMPT,
  )
  const maxResultChars = wholeNumber(
    options.maxResultChars ?? 16_000,
    'maxResultChars',
    'characters',
    MIN_RESULT_CHARS,
  )
  const retention: Retention = {
    maxAgeMs: wholeNumber(
      options.retention?.maxAgeMs ?? 30 * 86_400_000,
      'retention.maxAgeMs',
      'milliseconds',
      1,
    ),
    maxRunsPerJob: wholeNumber(
      options.retention?.maxRunsPerJob ?? 1000,
      'retention.maxRunsPerJob',
      'runs',
      1,
    ),
  }
  const delivery: DeliveryRetrySettings = Object.freeze({
    maxAttempts,
    baseDelayMs: timerMs(options.delivery?.baseDelayMs ?? 10_000, 'delivery.baseDelayMs', 0),
    maxDelayMs: timerMs(options.delivery?.maxDelayMs ?? 900_000, 'delivery.maxDelayMs', 0),
    maxRetryAfterMs: timerMs(options.delivery?.maxRetryAfterMs ?? 3_600_000, 'delivery.maxRetryAfterMs', 0),
    random: options.delivery?.random ?? Math.random,
  })
  return Object.freeze({
    store: options.store,
    agentRunner: options.agentRunner,
    shellRunner: options.shellRunner,
    channelSender: options.channelSender,
    runScope: options.runScope,
    clock: options.clock ?? systemClock,
    logger: options.logger ?? silentLogger,
    newId,
    ownerId: options.ownerId ?? newId(),
    maxConcurrentJobs,
    maxWaitingRuns,
    maxConsecutiveFailures,
    recentResultsInPrompt,
    automationPrefix: options.automationPrefix,
    scheduleWriteDelayMs,
    maxResultChars,
    maxPayloadInPromptBytes,
    leaseMs,
    syncIntervalMs,
    catchUp,
    retention,
    autoPrune,
    maxAiRunsPerDay,
    maxAiTokensPerDay,
    maxJitterMs,
    deliveryTimeoutMs,
    runMonitor: options.runMonitor,
    pingTimeoutMs,
    delivery,
  })
}

/**
 * Checks a millisecond option that feeds a timer: a whole number from `min` to {@link MAX_TIMER_MS};
 * throws `CRON_INVALID_INPUT` naming the option otherwise.
 */
export function timerMs(value: unknown, field: string, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > MAX_TIMER_MS) {
    throw invalid(
      field,
      `${field} must be a whole number of milliseconds from ${min} to ${MAX_TIMER_MS} (the longest timer Node keeps); got ${shown(value)}`,
      { min, max: MAX_TIMER_MS },
    )
  }
  return value
}

/**
 * Checks a count or size option: a whole number of `unit` from `min` to `max` (no upper bound by
 * default); throws `CRON_INVALID_INPUT` naming the option otherwise.
 */
export function wholeNumber(
  value: unknown,
  field: string,
  unit: string,
  min: number,
  max: number = Number.MAX_SAFE_INTEGER,
  options: { readonly orInfinity?: string } = {},
): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `${min} or more` : `from ${min} to ${max}`
    const infinity = options.orInfinity === undefined ? '' : ` (Infinity to ${options.orInfinity})`
    throw invalid(
      field,
      `${field} must be a whole number of ${unit}, ${range}${infinity}; got ${shown(value)}`,
      {
        min,
        ...(max === Number.MAX_SAFE_INTEGER ? {} : { max }),
      },
    )
  }
  return value
}

/** How a refused option value reads in its error: numbers as they are, anything else by its type. */
function shown(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value)
  if (typeof value === 'string') return `the text ${JSON.stringify(value.slice(0, 32))}`
  return typeof value
}

function invalid(field: string, message: string, data: Record<string, unknown> = {}): CronError {
  return new CronError('CRON_INVALID_INPUT', message, { data: { field, ...data } })
}
