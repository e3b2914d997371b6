import { readDuration } from '@lango/duration'

/**
 * The forms a workflow's `schedule` takes: those `@lango/cron` accepts for a cron job (which runs
 * saved workflows that have one). Fixed text: messages never quote the value (WF-6).
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
 * when its shape is right. Checks the form, each field's numbers, names, ranges and steps; whether it
 * ever fires, and cron's shortest interval, are `@lango/cron`'s to check when the job is made.
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
  for (const [index, field] of FIELDS.entries()) {
    if (!fieldIsValid(parts[index] as string, field))
      return `has an invalid ${field.name} field (numbers ${field.min}-${field.max}${field.names === undefined ? '' : ' or names'}, with *, ranges a-b, lists a,b and steps /n); expected ${SCHEDULE_FORMS}`
  }
  return undefined
}

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
