import { type CronExpression, CronExpressionParser } from 'cron-parser'
import { CronError } from './errors.js'
import type { ScheduleType } from './model.js'
import { type ZoneCalendar, zoneCalendar } from './time-zone.js'

/** Macros accepted in cron schedules, with the 5-field expression each stands for. */
export const CRON_MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
  '@weekdays': '0 0 * * 1-5',
  '@weekends': '0 0 * * 0,6',
}

/** How many wall-time candidates one search may reject (repeated hours) before giving up. */
const MAX_CANDIDATES = 2_000

/**
 * A schedule compiled for repeated next-fire computation. Pure: it never reads a clock; every
 * call says which instant to search after.
 */
export interface CompiledSchedule {
  readonly type: ScheduleType
  readonly timezone: string
  /** Typical gap between fires in ms (`undefined` for `at`); used for the catch-up window. */
  readonly periodMs: number | undefined
  /**
   * First fire strictly after `after` (epoch ms), or `undefined` when there is none.
   * `anchor` is the grid origin of `every` schedules (a previous fire); defaults to `after`.
   */
  next(after: number, anchor?: number): number | undefined
  /**
   * `cron` only: the first wall time (naive epoch ms, see `ZoneCalendar`) matching the expression
   * strictly after the wall time `wall`, before any DST rule maps it to an instant.
   */
  readonly nextWall?: (wall: number) => number | undefined
}

/**
 * Compiles an already validated schedule (see `validateSchedule`). `schedule` is a 5-field (or
 * literal-seconds 6-field) cron expression or macro, a duration in milliseconds, or an epoch ms.
 * Throws `CRON_INVALID_TIMEZONE` for an unknown zone, `CRON_INVALID_SCHEDULE` for a cron expression
 * that does not parse and `CRON_NEVER_FIRES` for one whose day of month never exists in its months
 * (`0 0 30 2 *`).
 */
export function compileSchedule(
  input:
    | { readonly type: 'cron'; readonly expression: string; readonly timezone: string }
    | { readonly type: 'every'; readonly intervalMs: number; readonly timezone: string }
    | { readonly type: 'at'; readonly at: number; readonly timezone: string }
    | { readonly type: 'webhook'; readonly timezone: string },
): CompiledSchedule {
  // Only cron reads the zone here; the others carry it to whoever formats their fires.
  if (input.type !== 'cron') zoneCalendar(input.timezone)
  switch (input.type) {
    case 'cron':
      return compileCron(input.expression, input.timezone)
    case 'every': {
      const intervalMs = input.intervalMs
      return {
        type: 'every',
        timezone: input.timezone,
        periodMs: intervalMs,
        next: (after, anchor = after) => {
          if (after < anchor) return anchor
          return anchor + (Math.floor((after - anchor) / intervalMs) + 1) * intervalMs
        },
      }
    }
    case 'at': {
      const at = input.at
      return {
        type: 'at',
        timezone: input.timezone,
        periodMs: undefined,
        next: (after) => (at > after ? at : undefined),
      }
    }
    case 'webhook':
      // Never due by the clock: only its hook starts a run.
      return { type: 'webhook', timezone: input.timezone, periodMs: undefined, next: () => undefined }
  }
}

/**
 * Next fire of a cron expression strictly after `after`, evaluated in `timezone`, applying the
 * DST rules: a wall time that does not exist (spring gap) fires at the first valid instant after
 * it; a wall time that exists twice (fall back) fires once, at its first occurrence.
 * Returns `undefined` when the expression never fires again, including one that never fires at
 * all (`0 0 30 2 *`). Throws `CRON_INVALID_SCHEDULE` for an expression that does not parse and
 * `CRON_INVALID_TIMEZONE` for an unknown zone. Pure; no clock reads.
 * @example nextFireTime('30 2 * * *', new Date('2026-03-08T05:00:00Z'), 'America/New_York')
 * // → 2026-03-08T07:00:00.000Z (03:00 EDT, the first instant after the nonexistent 02:30)
 */
export function nextFireTime(expression: string, after: Date, timezone: string): Date | undefined {
  let compiled: CompiledSchedule
  try {
    compiled = cachedCron(expression, timezone)
  } catch (error) {
    if (CronError.is(error) && error.code === 'CRON_NEVER_FIRES') return undefined
    throw error
  }
  const next = compiled.next(after.getTime())
  return next === undefined ? undefined : new Date(next)
}

const cronCache = new Map<string, CompiledSchedule>()

function cachedCron(expression: string, timezone: string): CompiledSchedule {
  const key = `${timezone}\u0000${expression}`
  let compiled = cronCache.get(key)
  if (compiled === undefined) {
    compiled = compileCron(expression, timezone)
    if (cronCache.size > 1000) cronCache.clear()
    cronCache.set(key, compiled)
  }
  return compiled
}

/** Expands macros; other text is returned trimmed with single spaces. */
export function expandCronMacro(expression: string): string {
  const trimmed = expression.trim().replace(/\s+/g, ' ')
  return CRON_MACROS[trimmed.toLowerCase()] ?? trimmed
}

function compileCron(expression: string, timezone: string): CompiledSchedule {
  const expanded = expandCronMacro(expression)
  const calendar = zoneCalendar(timezone)
  // The expression is evaluated over wall times: cron-parser runs in UTC on "naive" instants,
  // and this module maps each wall time to a real instant with the DST rules above.
  let parsed: CronExpression
  try {
    parsed = CronExpressionParser.parse(expanded, { tz: 'UTC', currentDate: 0 })
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    // cron-parser refuses a day of month that none of the named months has (February 30): the
    // expression is well formed but has no fire time at all.
    if (/day of month/i.test(message)) {
      throw new CronError(
        'CRON_NEVER_FIRES',
        `The cron expression "${expression}" never fires: its day of month does not exist in the months it names (e.g. February 30 or 31, April 31). Pick a day that exists, e.g. "0 0 28 2 *" or "0 0 L * *" (last day).`,
        { cause: error, data: { expression } },
      )
    }
    throw new CronError('CRON_INVALID_SCHEDULE', `Invalid cron expression: ${message}.`, {
      cause: error,
      data: { expression },
    })
  }
  const nextWall = (wall: number): number | undefined => {
    try {
      parsed.reset(new Date(wall))
      return parsed.next().getTime()
    } catch {
      return undefined
    }
  }
  const first = nextWall(0)
  const second = first === undefined ? undefined : nextWall(first)
  return {
    type: 'cron',
    timezone,
    periodMs: first !== undefined && second !== undefined ? second - first : undefined,
    next: (after) => nextCronInstant(nextWall, calendar, after),
    nextWall,
  }
}

function nextCronInstant(
  nextWall: (wall: number) => number | undefined,
  calendar: ZoneCalendar,
  after: number,
): number | undefined {
  let wall = calendar.wallAt(after)
  for (let candidate = 0; candidate < MAX_CANDIDATES; candidate++) {
    const nextWallTime = nextWall(wall)
    if (nextWallTime === undefined) return undefined
    const resolution = calendar.resolve(nextWallTime)
    const instant =
      resolution.kind === 'unique'
        ? resolution.instant
        : resolution.kind === 'repeated'
          ? resolution.earlier
          : resolution.firstValidInstant
    // A repeated wall time whose first occurrence is already past is not fired again.
    if (instant > after) return instant
    wall = nextWallTime
  }
  return undefined
}
