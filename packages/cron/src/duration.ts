import { durationProblemMessage, readDuration } from '@lango/duration'
import { CronError, type CronErrorCode } from './errors.js'

/** Human description of the accepted interval forms, used in error messages. */
export const DURATION_FORMS =
  'a duration such as "90s", "5m", "1h30m", "1.5h", "2d" or "@every 5m": a number with a unit (ms, s, m, h, d or w)'

/**
 * Reads a duration given to the service: a text in the one grammar of ADR 0013 (`90s`, `5m`,
 * `1h30m`, `1.5h`, `2d`, `@every 5m` for intervals), or a number of milliseconds (the package API's
 * unit, rounded to whole milliseconds). A text without a unit (`"600"`) is refused: seconds or
 * milliseconds? Returns whole milliseconds, more than zero; throws `code` naming `field` otherwise.
 * @example parseDuration('1h30m') // 5_400_000
 */
export function parseDuration(
  value: string | number,
  options: { readonly field?: string; readonly code?: CronErrorCode } = {},
): number {
  const field = options.field ?? 'The duration'
  const code = options.code ?? 'CRON_INVALID_SCHEDULE'
  if (typeof value === 'number') {
    const milliseconds = Math.round(value)
    if (Number.isSafeInteger(milliseconds) && milliseconds > 0) return milliseconds
    throw new CronError(code, `${field} must be more than zero milliseconds, or ${DURATION_FORMS}.`, {
      data: { value },
    })
  }
  const text = typeof value === 'string' ? value.trim().replace(/^@every(?=\s|\d)\s*/i, '') : ''
  const reading = readDuration(text)
  if (reading.ok && reading.milliseconds > 0) return reading.milliseconds
  const problem = reading.ok ? 'must be more than zero' : undefined
  throw new CronError(
    code,
    `${field} ${problem ?? durationProblemMessage(text, reading.ok ? 'not-a-duration' : reading.problem)}.`,
    { data: { value: String(value).slice(0, 200), problem: reading.ok ? 'zero' : reading.problem } },
  )
}

/**
 * Reads the interval of a stored `every` job. Jobs stored before ADR 0013 may hold a bare number,
 * which the service then read as milliseconds; it still is (stored values keep their meaning), and
 * so is the old leniency about white space. New input goes through {@link parseDuration}.
 */
export function readStoredInterval(schedule: string): number {
  const compact = schedule.replace(/\s+/g, '').replace(/^@every/i, '')
  if (/^\d+$/.test(compact)) return parseDuration(Number(compact))
  return parseDuration(compact)
}

/** Formats milliseconds compactly: `90000` → `1m30s`, `500` → `500ms`. */
export function formatDuration(milliseconds: number): string {
  if (milliseconds < 1000) return `${Math.round(milliseconds)}ms`
  let rest = Math.round(milliseconds / 1000)
  const parts: string[] = []
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`)
      rest %= size
    }
  }
  return parts.join('')
}
