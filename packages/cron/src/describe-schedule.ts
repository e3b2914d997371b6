import { readStoredInterval } from './duration.js'
import type { ScheduleType } from './model.js'
import { CRON_MACROS } from './next-fire-time.js'

const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday']
const MONTH_NAMES = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
]
const DAY_WORDS: Readonly<Record<string, number>> = { sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6 }
const INTERVAL_UNITS: readonly (readonly [string, number])[] = [
  ['week', 604_800_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
  ['millisecond', 1],
]
const STEP = /^\*\/(\d+)$/

/**
 * A stored schedule in words: `every day at 08:00`, `weekdays at 09:00`, `every 1 hour 30 minutes`,
 * `once at 2026-12-01T09:00:00+01:00`. Common cron forms read as words; any other expression,
 * including one with a field out of its range (`0 99 * * *`), reads as `cron "<expression>"`, so
 * the result is never empty. It never throws: a missing schedule reads as `no schedule`. The same reading for the tools, the CLI and the server (the
 * dashboard keeps its own copy in `schedules.js`).
 * @example describeSchedule({ scheduleType: 'cron', schedule: '0 8 * * 1-5' }) // 'weekdays at 08:00'
 */
export function describeSchedule(schedule: {
  readonly scheduleType: ScheduleType
  readonly schedule: string
}): string {
  const text = schedule?.schedule
  if (typeof text !== 'string' || text.trim() === '') return 'no schedule'
  if (schedule.scheduleType === 'every') return describeEvery(text)
  if (schedule.scheduleType === 'at') return `once at ${text}`
  if (schedule.scheduleType === 'webhook') return `on webhook ${text}`
  return describeCron(text) || `cron "${text}"`
}

function describeEvery(text: string): string {
  let rest: number
  try {
    rest = readStoredInterval(text)
  } catch {
    return `every ${text}`
  }
  const parts: string[] = []
  for (const [unit, size] of INTERVAL_UNITS) {
    const amount = Math.floor(rest / size)
    if (amount === 0) continue
    parts.push(`${amount} ${unit}${amount === 1 ? '' : 's'}`)
    rest -= amount * size
  }
  const [only] = parts
  return `every ${parts.length === 1 && only?.startsWith('1 ') ? only.slice(2) : parts.join(' ')}`
}

function isNumber(field: string): boolean {
  return /^\d+$/.test(field)
}

/** A plain number from `min` to `max`: what a field must be to be read as words. */
function inRange(field: string, min: number, max: number): boolean {
  return isNumber(field) && Number(field) >= min && Number(field) <= max
}

/** The step of `*\/N` when it is from 1 to `max`, else undefined. */
function stepOf(field: string, max: number): string | undefined {
  const step = STEP.exec(field)?.[1]
  return step !== undefined && inRange(step, 1, max) ? String(Number(step)) : undefined
}

function clock(hour: string, minute: string): string {
  return `${String(Number(hour)).padStart(2, '0')}:${String(Number(minute)).padStart(2, '0')}`
}

function dayNumber(day: string): number | undefined {
  if (isNumber(day)) return Number(day) <= 7 ? Number(day) : undefined
  return DAY_WORDS[day.toLowerCase()]
}

function describeCron(expression: string): string {
  const text = expression.trim().toLowerCase()
  if (text === '@hourly') return 'every hour'
  const expanded = CRON_MACROS[text] ?? expression.trim()
  const fields = expanded.split(/\s+/)
  // A 6-field expression has a literal seconds field (validateSchedule); say it after the rest.
  const secondsField = fields.length === 6 ? (fields.shift() as string) : '0'
  if (fields.length !== 5 || !inRange(secondsField, 0, 59)) return ''
  const seconds = Number(secondsField)
  const [minute = '', hour = '', dayOfMonth = '', month = '', dayOfWeek = ''] = fields
  const words = describeFields(minute, hour, dayOfMonth, month, dayOfWeek)
  if (words === '') return ''
  return seconds === 0 ? words : `${words}, at second ${seconds}`
}

function describeFields(
  minute: string,
  hour: string,
  dayOfMonth: string,
  month: string,
  dayOfWeek: string,
): string {
  let inMonth = ''
  if (month !== '*') {
    const months = month.split(',')
    if (!months.every((value) => isNumber(value) && Number(value) >= 1 && Number(value) <= 12)) return ''
    inMonth = ` in ${months.map((value) => MONTH_NAMES[Number(value) - 1]).join(', ')}`
  }
  const anyDay = dayOfMonth === '*' && dayOfWeek === '*'
  if (minute === '*' && hour === '*' && anyDay) return `every minute${inMonth}`
  const minuteStep = stepOf(minute, 59)
  if (minuteStep !== undefined && hour === '*' && anyDay) return `every ${minuteStep} minutes${inMonth}`
  if (!inRange(minute, 0, 59)) return ''
  if (hour === '*' && anyDay) return `every hour at minute ${Number(minute)}${inMonth}`
  const hourStep = stepOf(hour, 23)
  if (hourStep !== undefined && anyDay) return `every ${hourStep} hours at minute ${Number(minute)}${inMonth}`
  const hours = hour.split(',')
  if (!hours.every((value) => inRange(value, 0, 23))) return ''
  const at = `at ${hours.map((value) => clock(value, minute)).join(' and ')}`
  if (anyDay) return `every day ${at}${inMonth}`
  if (dayOfMonth === '*') {
    const upper = dayOfWeek.toUpperCase()
    if (dayOfWeek === '1-5' || upper === 'MON-FRI') return `weekdays ${at}${inMonth}`
    if (dayOfWeek === '0,6' || dayOfWeek === '6,0' || upper === 'SAT,SUN' || upper === 'SUN,SAT')
      return `weekends ${at}${inMonth}`
    const days = dayOfWeek.split(',').map(dayNumber)
    if (days.some((day) => day === undefined)) return ''
    return `every ${days.map((day) => DAY_NAMES[day as number]).join(', ')} ${at}${inMonth}`
  }
  if (dayOfWeek === '*' && dayOfMonth.toUpperCase() === 'L') return `on the last day of every month ${at}`
  if (dayOfWeek === '*' && dayOfMonth.split(',').every((value) => inRange(value, 1, 31))) {
    const days = dayOfMonth.split(',').map(Number).join(', ')
    const label = dayOfMonth.includes(',') ? 'days' : 'day'
    return month === '*' ? `on ${label} ${days} of every month ${at}` : `on ${label} ${days}${inMonth} ${at}`
  }
  return ''
}
