import { createRequire } from 'node:module'
import { readDuration } from '@lango/duration'
import type { CronExpressionParser } from 'cron-parser'

/**
 * The forms a workflow's `schedule` takes: those `@lango/cron` accepts for a cron job (which runs
 * saved workflows that have one). Fixed text: messages never quote the value.
 */
const SCHEDULE_FORMS =
  '5 fields "minute hour day-of-month month day-of-week" (such as "*/5 * * * *" or "0 9 * * 1-5"), 6 fields whose first (seconds) field is a single number 0-59, a macro (@hourly, @daily, @weekly, @monthly, @yearly, @weekdays, @weekends), or "@every <duration>" (such as "@every 1h")'

/** The macros `@lango/cron` accepts. */
const MACROS = new Set([
  '@yearly',
  '@annually',
  '@monthly',
  '@weekly',
  '@daily',
  '@midnight',
  '@hourly',
  '@weekdays',
  '@weekends',
])

interface Field {
  readonly name: string
  readonly min: number
  readonly max: number
  readonly names?: readonly string[]
  /** Day fields take cron-parser's `L` and `#` forms (it has no `W`). */
  readonly special?: (text: string) => boolean
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat']
const NAMES = new Set([...MONTHS, ...DAYS])

const FIELDS: readonly Field[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  // `L`: the month's last day (a capital, as cron-parser takes it).
  { name: 'day-of-month', min: 1, max: 31, special: (text) => text === 'L' },
  { name: 'month', min: 1, max: 12, names: MONTHS },
  {
    name: 'day-of-week',
    min: 0,
    max: 7,
    names: DAYS,
    special: lastOrNthWeekday,
  },
]

/**
 * `5L` (the month's last Friday) and `5#2` (its second), by number or name; a lone `L` is the
 * day-of-month's form. The `L` is a capital, as cron-parser takes it.
 */
function lastOrNthWeekday(text: string): boolean {
  const day = /^([0-7]|[A-Za-z]{3})(?:L|#[1-5])$/.exec(text)?.[1]
  return day !== undefined && (/^\d$/.test(day) || DAYS.includes(day.toLowerCase()))
}

/**
 * Why `text` is not a schedule `@lango/cron` takes, as a message for the `schedule` issue; `undefined`
 * when it is one. The macros, `@every` and the 6-field form are `@lango/cron`'s own rules, checked
 * here; a cron expression is parsed by cron-parser, as `@lango/cron` parses it (same library, same
 * options), so the two agree by construction: every list, duplicate and `L`/`#` rule is its. Whether
 * it ever fires, and cron's shortest interval, are `@lango/cron`'s to check when the job is made.
 * The message names the field (from a shape check of each field, else from cron-parser's refusal)
 * and never quotes the value.
 */
export function scheduleProblem(text: string): string | undefined {
  const trimmed = text.trim().replace(/\s+/g, ' ')
  const lower = trimmed.toLowerCase()
  if (lower.startsWith('@every')) {
    const reading = readDuration(trimmed.slice('@every'.length).trim())
    return reading.ok && reading.milliseconds > 0
      ? undefined
      : 'must be "@every <duration>" with a duration such as 30m, 1h or 1d'
  }
  if (lower.startsWith('@'))
    return MACROS.has(lower) ? undefined : `is not a known macro; expected ${SCHEDULE_FORMS}`
  const parts = trimmed.split(' ')
  if (parts.length === 6) {
    const seconds = parts.shift() as string
    if (!/^\d{1,2}$/.test(seconds) || Number(seconds) > 59)
      return `has 6 fields, but the first (seconds) is not a single number 0-59; expected ${SCHEDULE_FORMS}`
  }
  if (parts.length !== 5) return `must be a cron expression: ${SCHEDULE_FORMS}`
  // cron-parser takes Jenkins' `H` (a hashed value); `@lango/cron` refuses it.
  if (/h/i.test(trimmed.replace(/[a-z]{3}/gi, (word) => (NAMES.has(word.toLowerCase()) ? '' : word))))
    return `uses H (hashed values), which cron does not take; expected ${SCHEDULE_FORMS}`
  const refusal = cronRefusal(trimmed)
  if (refusal === undefined) return undefined
  for (const [index, field] of FIELDS.entries()) {
    if (!fieldIsValid(parts[index] as string, field))
      return `has an invalid ${field.name} field (numbers ${field.min}-${field.max}${field.names === undefined ? '' : ' or names'}, with *, ranges a-b, lists a,b and steps /n); expected ${SCHEDULE_FORMS}`
  }
  return refusal
}

/** cron-parser's parser, loaded at the first cron expression checked (a workflow without a schedule never loads it). */
let parser: typeof CronExpressionParser | undefined

/**
 * cron-parser's verdict on a 5- or 6-field expression, parsed as `@lango/cron` parses it (UTC, from
 * 0): `undefined` when it takes it, or refuses it only for a day of month that none of its months has
 * (`0 0 30 2 *`: a schedule that never fires, which is cron's to report), else a message naming what
 * is wrong without quoting the value.
 */
function cronRefusal(expression: string): string | undefined {
  parser ??= (createRequire(import.meta.url)('cron-parser') as typeof import('cron-parser'))
    .CronExpressionParser
  try {
    parser.parse(expression, { tz: 'UTC', currentDate: 0 })
    return undefined
  } catch (error) {
    const message = error instanceof Error ? error.message : ''
    if (/day of month/i.test(message)) return undefined
    const field = REFUSED_FIELD.find(([pattern]) => pattern.test(message))?.[1]
    if (/duplicate/i.test(message))
      return `names the same value twice in its ${field ?? ''} field (a value listed twice, or inside a range also listed); expected ${SCHEDULE_FORMS}`.replace(
        'its  field',
        'a field',
      )
    if (/special characters are incompatible/.test(message))
      return `uses # in a day-of-week field with other items, a range or a step (5#2, the second Friday, stands alone); expected ${SCHEDULE_FORMS}`
    return `is not a cron expression cron takes${field === undefined ? '' : ` (its ${field} field)`}; expected ${SCHEDULE_FORMS}`
  }
}

/** The field a cron-parser refusal names (`CronDayOfWeek …`, `invalid dayOfWeek …`). */
const REFUSED_FIELD: readonly (readonly [RegExp, string])[] = [
  [/CronSecond|\bsecond/i, 'seconds'],
  [/CronMinute|\bminute/i, 'minute'],
  [/CronHour|\bhour/i, 'hour'],
  [/CronDayOfMonth|dayOfMonth/i, 'day-of-month'],
  [/CronMonth|\bmonth\b/i, 'month'],
  [/CronDayOfWeek|dayOfWeek/i, 'day-of-week'],
]

function fieldIsValid(text: string, field: Field): boolean {
  return text.split(',').every((item) => {
    const [base, step, extra] = item.split('/')
    if (extra !== undefined || base === undefined || base === '') return false
    if (step !== undefined && (!/^\d{1,4}$/.test(step) || Number(step) === 0)) return false
    if (base === '*' || (base === '?' && field.special !== undefined)) return true
    if (field.special?.(base) === true) return step === undefined
    const bounds = base.split('-')
    if (bounds.length > 2) return false
    const values = bounds.map((bound) => fieldValue(bound, field))
    if (values.some((value) => value === undefined)) return false
    // A range runs upwards (`1-5`; `5-1` is refused, as cron refuses it).
    return values.length === 1 || (values[0] as number) <= (values[1] as number)
  })
}

function fieldValue(text: string, field: Field): number | undefined {
  if (/^\d{1,2}$/.test(text)) {
    const value = Number(text)
    return value >= field.min && value <= field.max ? value : undefined
  }
  // Names count from the field's first value: `jan` is 1, `sun` is 0.
  const index = field.names?.indexOf(text.toLowerCase()) ?? -1
  return index === -1 ? undefined : field.min + index
}
