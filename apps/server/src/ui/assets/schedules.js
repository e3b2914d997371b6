// @ts-check
import { h } from './dom.js'
import { describeEvery } from './intervals.js'

/** Schedules in words (common forms only; the raw text is always shown). */

const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday']

export function describeSchedule(job) {
  if (job.schedule_type === 'every') return describeEvery(job.schedule)
  if (job.schedule_type === 'at') return 'once'
  if (job.schedule_type === 'webhook') return `on webhook ${job.schedule}`
  return describeCron(job.schedule)
}

function isNumber(field) {
  return /^\d+$/.test(field)
}

function clock(hour, minute) {
  return `${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}`
}

function describeCron(expression) {
  const text = String(expression).trim()
  const macros = {
    '@hourly': 'every hour',
    '@daily': 'every day at 00:00',
    '@midnight': 'every day at 00:00',
    '@weekly': 'every Sunday at 00:00',
    '@monthly': 'on day 1 of every month at 00:00',
    '@yearly': 'every 1 January at 00:00',
    '@annually': 'every 1 January at 00:00',
  }
  if (macros[text]) return macros[text]
  const fields = text.split(/\s+/)
  if (fields.length !== 5) return ''
  const [minute, hour, dayOfMonth, month, dayOfWeek] = fields
  if (month !== '*') return ''
  if (minute === '*' && hour === '*' && dayOfMonth === '*' && dayOfWeek === '*') return 'every minute'
  const step = /^\*\/(\d+)$/
  if (step.test(minute) && hour === '*' && dayOfMonth === '*' && dayOfWeek === '*')
    return `every ${/** @type {RegExpMatchArray} */ (minute.match(step))[1]} minutes`
  if (!isNumber(minute)) return ''
  if (hour === '*' && dayOfMonth === '*' && dayOfWeek === '*') return `every hour at minute ${Number(minute)}`
  if (step.test(hour) && dayOfMonth === '*' && dayOfWeek === '*')
    return `every ${/** @type {RegExpMatchArray} */ (hour.match(step))[1]} hours at minute ${Number(minute)}`
  const hours = hour.split(',')
  if (!hours.every(isNumber)) return ''
  const at = `at ${hours.map((value) => clock(value, minute)).join(' and ')}`
  if (dayOfMonth === '*' && dayOfWeek === '*') return `every day ${at}`
  if (dayOfMonth === '*') {
    if (dayOfWeek === '1-5' || dayOfWeek.toUpperCase() === 'MON-FRI') return `weekdays ${at}`
    if (dayOfWeek === '0,6' || dayOfWeek === '6,0' || dayOfWeek.toUpperCase() === 'SAT,SUN')
      return `weekends ${at}`
    const days = dayOfWeek.split(',')
    if (days.every((day) => isNumber(day) && Number(day) <= 7))
      return `every ${days.map((day) => DAY_NAMES[Number(day)]).join(', ')} ${at}`
    return ''
  }
  if (dayOfWeek === '*' && isNumber(dayOfMonth)) return `on day ${Number(dayOfMonth)} of every month ${at}`
  return ''
}

export function scheduleCell(job) {
  const words = describeSchedule(job)
  return h(
    'span',
    {},
    h('code', {}, `${job.schedule_type} ${job.schedule}`),
    words ? h('span', { className: 'words' }, words) : null,
  )
}
