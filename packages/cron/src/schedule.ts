import { DURATION_FORMS, formatDuration, parseDuration, readStoredInterval } from './duration.js'
import { CronError } from './errors.js'
import type { CronJob, NextRun, ScheduleType } from './model.js'
import { type CompiledSchedule, CRON_MACROS, compileSchedule, expandCronMacro } from './next-fire-time.js'
import { wholeNumber } from './scheduler-options.js'
import { resolveTimeZone, zoneCalendar } from './time-zone.js'

/** Default floor between two fires of one job (ARCHITECTURE.md §3, SECURITY.md CRON-2). */
export const DEFAULT_MIN_INTERVAL_MS = 60_000
/**
 * The longest `every` interval accepted (365 days). Longer ones are a yearly cron expression or an
 * `at` time; without a bound, `every 2450000000h` passed the parser and failed on a date past the
 * end of JavaScript's calendar.
 */
export const MAX_INTERVAL_MS = 365 * 24 * 60 * 60 * 1000

/** How many upcoming fires the interval floor is checked over. */
const MIN_INTERVAL_CHECKED_FIRES = 20

const CRON_FORMS =
  '5 fields "minute hour day-of-month month day-of-week" (e.g. "*/5 * * * *", "0 9 * * 1-5"), a macro (@hourly, @daily, @weekly, @monthly, @yearly, @weekdays, @weekends), or 6 fields whose first (seconds) field is a single number 0-59'

const AT_FORMS =
  'an ISO 8601 date-time such as "2026-12-01T09:00" (read in the job\'s time zone) or "2026-12-01T09:00:00+01:00" / "2026-12-01T08:00:00Z"'

const WEBHOOK_FORMS =
  'a hook name of 1 to 56 characters of A-Z, a-z, 0-9, "_" and "-" (called as POST /hooks/<name>)'

/** A `webhook` job's schedule: the hook's name, the last segment of `POST /hooks/<name>`. */
export const WEBHOOK_NAME_PATTERN = /^[A-Za-z0-9_-]{1,56}$/

const AT_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/

/** Result of {@link validateSchedule}: what to store and when it fires. */
export interface ValidatedSchedule {
  readonly scheduleType: ScheduleType
  /** Canonical schedule text to store (an `at` time is stored with its offset). */
  readonly schedule: string
  readonly timezone: string
  readonly compiled: CompiledSchedule
  /** Up to the next 3 fires after `now`. */
  readonly nextRuns: readonly NextRun[]
}

/** Input of {@link validateSchedule}. */
export interface ScheduleInput {
  /** `cron`, `every`, `at` or `webhook`; the seed 002 aliases `interval` and `once` are accepted. */
  readonly scheduleType: string
  /** A text; for `every`, a number is milliseconds (stored as `<n>ms`). */
  readonly schedule: string | number
  readonly timezone: string
  /** The instant the schedule is validated at (creation or update time), in epoch ms; a finite number. */
  readonly now: number
  /** Smallest gap between two fires (default 60 s; whole milliseconds from 0 to 365 days). */
  readonly minIntervalMs?: number
  /**
   * What `minIntervalMs` is the floor of, named in the error when the schedule is below it (e.g.
   * `an ai job`, whose floor may be higher than a shell job's); unnamed by default.
   */
  readonly minIntervalOf?: string
  /**
   * The schedule is the job's stored one, unchanged: an `every` interval stored before ADR 0013 as
   * a bare number keeps its meaning (milliseconds). New input never is.
   */
  readonly stored?: boolean
}

/** Maps `interval` → `every`, `once` → `at`; throws for unknown types. */
function normalizeScheduleType(scheduleType: string): ScheduleType {
  const value = typeof scheduleType === 'string' ? scheduleType.trim().toLowerCase() : ''
  if (value === 'cron' || value === 'every' || value === 'at' || value === 'webhook') return value
  if (value === 'interval') return 'every'
  if (value === 'once') return 'at'
  throw new CronError(
    'CRON_INVALID_SCHEDULE',
    `Unknown schedule type "${String(scheduleType).slice(0, 32)}". Accepted: cron, every, at, webhook (aliases: interval = every, once = at).`,
    { data: { scheduleType: String(scheduleType).slice(0, 100) } },
  )
}

/**
 * Validates a schedule before anything is stored: parses it, resolves the zone, rejects
 * never-firing expressions, `at` times in the past and schedules that fire more often than
 * `minIntervalMs` over the next 20 fires; returns the canonical form and the next 3 fires. A `now`
 * that is not an instant (NaN) or a `minIntervalMs` out of range is `CRON_INVALID_INPUT`.
 */
export function validateSchedule(input: ScheduleInput): ValidatedSchedule {
  checkNow(input.now)
  let scheduleType = normalizeScheduleType(input.scheduleType)
  const timezone = resolveTimeZone(input.timezone)
  const minIntervalMs = wholeNumber(
    input.minIntervalMs ?? DEFAULT_MIN_INTERVAL_MS,
    'minIntervalMs',
    'milliseconds',
    0,
    MAX_INTERVAL_MS,
  )
  const floorOf = input.minIntervalOf === undefined ? '' : ` for ${input.minIntervalOf}`
  const raw = typeof input.schedule === 'number' ? String(input.schedule) : input.schedule
  if (typeof raw !== 'string' || raw.trim().length === 0) {
    throw new CronError('CRON_INVALID_SCHEDULE', `The schedule is empty; expected ${formsOf(scheduleType)}.`)
  }
  if (raw.length > 256) {
    throw new CronError(
      'CRON_INVALID_SCHEDULE',
      `The schedule is longer than 256 characters; expected ${formsOf(scheduleType)}.`,
    )
  }
  let text = raw.trim()
  if (scheduleType === 'cron' && text.toLowerCase().startsWith('@every')) scheduleType = 'every'

  let compiled: CompiledSchedule
  let schedule: string
  if (scheduleType === 'every') {
    const intervalMs =
      typeof input.schedule === 'number'
        ? parseDuration(input.schedule, { field: 'The interval' })
        : input.stored === true
          ? readStoredInterval(text)
          : parseDuration(text, { field: 'The interval' })
    if (intervalMs < minIntervalMs) {
      throw new CronError(
        'CRON_INTERVAL_TOO_SHORT',
        `An interval of ${formatDuration(intervalMs)} is below the minimum of ${formatDuration(minIntervalMs)}${floorOf}. Use ${formatDuration(minIntervalMs)} or longer, e.g. "every ${formatDuration(Math.max(minIntervalMs, 300_000))}".`,
        { data: { intervalMs, minIntervalMs } },
      )
    }
    if (intervalMs > MAX_INTERVAL_MS && input.stored !== true) {
      throw new CronError(
        'CRON_INVALID_SCHEDULE',
        `An interval of ${formatDuration(intervalMs)} is longer than the maximum of 365d. For a yearly job use a cron expression (e.g. "0 9 1 1 *"); for one run far ahead, an "at" time.`,
        { data: { intervalMs, maxIntervalMs: MAX_INTERVAL_MS, problem: 'too-long' } },
      )
    }
    text = text.replace(/^@every\s*/i, '')
    compiled = compileSchedule({ type: 'every', intervalMs, timezone })
    // A number (milliseconds) is stored with its unit, so the stored text reads the same everywhere.
    schedule = typeof input.schedule === 'number' ? `${intervalMs}ms` : text
    const nextRuns = [1, 2, 3].map((count) => toNextRun(input.now + count * intervalMs, timezone))
    return { scheduleType, schedule, timezone, compiled, nextRuns }
  }
  if (scheduleType === 'webhook') {
    if (!WEBHOOK_NAME_PATTERN.test(text)) {
      throw new CronError(
        'CRON_INVALID_SCHEDULE',
        `"${text.slice(0, 64)}" is not a webhook name; expected ${WEBHOOK_FORMS}.`,
        { data: { schedule: text.slice(0, 100) } },
      )
    }
    // Never due by the clock: no next runs.
    return {
      scheduleType,
      schedule: text,
      timezone,
      compiled: compileSchedule({ type: 'webhook', timezone }),
      nextRuns: [],
    }
  }
  if (scheduleType === 'at') {
    const at = parseAtTime(text, timezone)
    if (at < input.now) {
      throw new CronError(
        'CRON_AT_IN_PAST',
        `The "at" time ${new Date(at).toISOString()} is in the past (now ${new Date(input.now).toISOString()}); expected a future time as ${AT_FORMS}.`,
        { data: { at, now: input.now } },
      )
    }
    compiled = compileSchedule({ type: 'at', at, timezone })
    schedule = zoneCalendar(timezone).formatIso(at)
    return { scheduleType, schedule, timezone, compiled, nextRuns: [toNextRun(at, timezone)] }
  }

  const expression = checkCronShape(text)
  try {
    compiled = compileSchedule({ type: 'cron', expression, timezone })
  } catch (error) {
    const message = CronError.is(error) && error.cause instanceof Error ? error.cause.message : String(error)
    if (/day of month/i.test(message)) {
      throw new CronError(
        'CRON_NEVER_FIRES',
        `The cron expression "${text}" never fires: its day of month does not exist in the months it names (e.g. February 30 or 31, April 31). Pick a day that exists, e.g. "0 0 28 2 *" or "0 0 L * *" (last day).`,
        { cause: error, data: { expression: text } },
      )
    }
    throw new CronError(
      'CRON_INVALID_SCHEDULE',
      `Invalid cron expression "${text}": ${message}. Expected ${CRON_FORMS}.`,
      {
        cause: error,
        data: { expression: text },
      },
    )
  }
  const fires: number[] = []
  let cursor = input.now
  for (let index = 0; index <= MIN_INTERVAL_CHECKED_FIRES; index++) {
    const next = compiled.next(cursor)
    if (next === undefined) break
    fires.push(next)
    cursor = next
  }
  if (fires.length === 0) {
    throw new CronError(
      'CRON_NEVER_FIRES',
      `The cron expression "${text}" never fires. Check that its day of month and month exist together; expected ${CRON_FORMS}.`,
      { data: { expression: text } },
    )
  }
  let smallestGap = Number.POSITIVE_INFINITY
  for (let index = 1; index < fires.length; index++) {
    smallestGap = Math.min(smallestGap, (fires[index] as number) - (fires[index - 1] as number))
  }
  if (smallestGap < minIntervalMs) {
    throw new CronError(
      'CRON_INTERVAL_TOO_SHORT',
      `The cron expression "${text}" fires as often as every ${formatDuration(smallestGap)}; the minimum interval${floorOf} is ${formatDuration(minIntervalMs)}. Use a coarser expression such as ${coarserThan(minIntervalMs)}.`,
      { data: { expression: text, smallestGapMs: smallestGap, minIntervalMs } },
    )
  }
  schedule = text.replace(/\s+/g, ' ')
  return {
    scheduleType,
    schedule,
    timezone,
    compiled,
    nextRuns: fires.slice(0, 3).map((at) => toNextRun(at, timezone)),
  }
}

const compiledCache = new Map<string, CompiledSchedule>()

/**
 * Compiles a stored job's schedule (already validated when it was stored). Results are shared
 * between jobs with the same schedule and zone; compiled schedules are stateless between calls.
 */
export function compileJobSchedule(
  job: Pick<CronJob, 'scheduleType' | 'schedule' | 'timezone'>,
): CompiledSchedule {
  const key = `${job.scheduleType}\u0000${job.timezone}\u0000${job.schedule}`
  let compiled = compiledCache.get(key)
  if (compiled === undefined) {
    compiled = compileUncached(job)
    if (compiledCache.size >= 10_000) compiledCache.clear()
    compiledCache.set(key, compiled)
  }
  return compiled
}

function compileUncached(job: Pick<CronJob, 'scheduleType' | 'schedule' | 'timezone'>): CompiledSchedule {
  switch (job.scheduleType) {
    case 'cron':
      return compileSchedule({ type: 'cron', expression: job.schedule, timezone: job.timezone })
    case 'every':
      return compileSchedule({
        type: 'every',
        intervalMs: readStoredInterval(job.schedule),
        timezone: job.timezone,
      })
    case 'at':
      return compileSchedule({
        type: 'at',
        at: parseAtTime(job.schedule, job.timezone),
        timezone: job.timezone,
      })
    case 'webhook':
      return compileSchedule({ type: 'webhook', timezone: job.timezone })
  }
}

/** One fire time as {@link NextRun}. */
export function toNextRun(at: number, timezone: string): NextRun {
  return { at, utc: new Date(at).toISOString(), local: zoneCalendar(timezone).formatIso(at), timezone }
}

/**
 * Reads an ISO 8601 date-time. With an offset (`Z`, `+01:00`) it is exact; without one it is a
 * wall time in `timezone` (a nonexistent wall time moves to the first valid instant after it,
 * a repeated one takes its first occurrence).
 */
export function parseAtTime(text: string, timezone: string): number {
  const match = AT_PATTERN.exec(text.trim())
  if (match !== null) {
    const [, year, month, day, hour, minute, second = '0', fraction = '0', offset] = match
    const milliseconds = Number(fraction.padEnd(3, '0').slice(0, 3))
    const wall = Date.UTC(
      Number(year),
      Number(month) - 1,
      Number(day),
      Number(hour),
      Number(minute),
      Number(second),
      milliseconds,
    )
    const check = new Date(wall)
    const valid =
      check.getUTCFullYear() === Number(year) &&
      check.getUTCMonth() === Number(month) - 1 &&
      check.getUTCDate() === Number(day) &&
      check.getUTCHours() === Number(hour) &&
      check.getUTCMinutes() === Number(minute) &&
      check.getUTCSeconds() === Number(second)
    if (valid) {
      if (offset !== undefined) {
        if (offset === 'Z' || offset === 'z') return wall
        const digits = offset.replace(':', '')
        const sign = digits.startsWith('-') ? -1 : 1
        const hours = Number(digits.slice(1, 3))
        const minutes = digits.length > 3 ? Number(digits.slice(3, 5)) : 0
        if (hours <= 23 && minutes <= 59) return wall - sign * (hours * 3_600_000 + minutes * 60_000)
      } else {
        const resolution = zoneCalendar(timezone).resolve(wall)
        if (resolution.kind === 'unique') return resolution.instant
        if (resolution.kind === 'repeated') return resolution.earlier
        return resolution.firstValidInstant
      }
    }
  }
  throw new CronError(
    'CRON_INVALID_SCHEDULE',
    `Cannot read "${text.slice(0, 64)}" as a date-time; expected ${AT_FORMS}.`,
    {
      data: { value: text.slice(0, 200) },
    },
  )
}

/**
 * The wall time (naive epoch ms) an `at` text names when it carries no offset, so the zone's DST
 * rules decide its instant; `undefined` for a text with an offset or one that does not read.
 */
export function atWallTime(text: string): number | undefined {
  const match = AT_PATTERN.exec(text.trim())
  if (match === null || match[8] !== undefined) return undefined
  const [, year, month, day, hour, minute, second = '0'] = match
  const wall = Date.UTC(
    Number(year),
    Number(month) - 1,
    Number(day),
    Number(hour),
    Number(minute),
    Number(second),
  )
  return Number.isNaN(wall) ? undefined : wall
}

function checkCronShape(text: string): string {
  const lower = text.toLowerCase()
  if (lower.startsWith('@')) {
    if (CRON_MACROS[lower] === undefined) {
      throw new CronError(
        'CRON_INVALID_SCHEDULE',
        `Unknown cron macro "${text.slice(0, 32)}". Accepted: ${Object.keys(CRON_MACROS).join(', ')}, or "@every <duration>" with schedule type every.`,
        { data: { expression: text } },
      )
    }
    return lower
  }
  const expanded = expandCronMacro(text)
  const fields = expanded.split(' ')
  if (fields.length !== 5 && fields.length !== 6) {
    throw new CronError(
      'CRON_INVALID_SCHEDULE',
      `The cron expression "${text}" has ${fields.length} fields; expected ${CRON_FORMS}.`,
      {
        data: { expression: text },
      },
    )
  }
  if (fields.length === 6 && !/^\d{1,2}$/.test(fields[0] as string)) {
    throw new CronError(
      'CRON_INVALID_SCHEDULE',
      `A 6-field cron expression is accepted only when its seconds field is a single number 0-59 (e.g. "30 */5 * * * *"); got seconds field "${fields[0]}". Use 5 fields for minute-level schedules.`,
      { data: { expression: text } },
    )
  }
  if (fields.length === 6 && Number(fields[0]) > 59) {
    throw new CronError(
      'CRON_INVALID_SCHEDULE',
      `The seconds field "${fields[0]}" is out of range; expected a number 0-59.`,
      {
        data: { expression: text },
      },
    )
  }
  if (
    /[hH]/.test(
      expanded.replace(/[a-zA-Z]{3}/g, (word) =>
        /^(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|sun|mon|tue|wed|thu|fri|sat)$/i.test(word)
          ? ''
          : word,
      ),
    )
  ) {
    throw new CronError(
      'CRON_INVALID_SCHEDULE',
      `The cron expression "${text}" uses "H" (hashed values), which is not supported; expected ${CRON_FORMS}.`,
      { data: { expression: text } },
    )
  }
  return expanded
}

/** The largest epoch ms a `Date` holds (±100,000,000 days from 1970). */
const MAX_DATE_MS = 8_640_000_000_000_000

function checkNow(now: unknown): void {
  if (typeof now !== 'number' || !Number.isFinite(now) || Math.abs(now) > MAX_DATE_MS) {
    throw new CronError(
      'CRON_INVALID_INPUT',
      `now must be an instant in epoch milliseconds, a finite number as Date.getTime() gives; got ${typeof now === 'number' ? String(now) : typeof now}`,
      { data: { field: 'now' } },
    )
  }
}

function formsOf(scheduleType: ScheduleType): string {
  if (scheduleType === 'every') return DURATION_FORMS
  if (scheduleType === 'at') return AT_FORMS
  if (scheduleType === 'webhook') return WEBHOOK_FORMS
  return CRON_FORMS
}

/** A cron expression that fires no more often than `minIntervalMs` (at most 365 days), for error hints. */
function coarserThan(minIntervalMs: number): string {
  if (minIntervalMs <= 300_000) return '"*/5 * * * *" (every 5 minutes)'
  if (minIntervalMs <= 3_600_000) return '"0 * * * *" (every hour)'
  if (minIntervalMs <= 86_400_000) return '"0 9 * * *" (every day at 9:00)'
  return '"0 9 1 1 *" (once a year)'
}
