/**
 * A saved workflow's `schedule` is checked twice: by `@lango/workflow` when the file is parsed or
 * saved (`@lango/cron`'s own rules copied, the expression parsed by cron-parser as cron parses it),
 * and by `@lango/cron` when the server schedules it. The two must agree on which texts are schedules, or a file would be saved
 * and then never run (or refused although cron takes it). Whether a schedule ever fires, and cron's
 * interval floor, are cron's alone: not compared here.
 */
import { CronError, validateSchedule } from '@lango/cron'
import { parseWorkflow } from '@lango/workflow'
import { describe, expect, it } from 'vitest'

const SCHEDULES = [
  '0 9 * * *',
  '*/5 * * * *',
  '0 9 * * 1-5',
  '0 9 * * mon-fri',
  '0 0 1 jan,jul *',
  '30 0 9 * * *',
  '0 0 L * *',
  '0 0 * * 5L',
  '0 0 * * 1#2',
  '@daily',
  '@hourly',
  '@weekdays',
  '@every 1h',
  '@every 90m',
  '61 * * * *',
  '* 24 * * *',
  '0 0 0 * *',
  '0 0 * 13 *',
  '0 0 * * 8',
  '*/0 * * * *',
  '5-1 * * * *',
  '*/5 0 9 * * *',
  '0 0 9 * * * *',
  '* * * *',
  'whenever',
  '@reboot',
  '@every',
  '@every soon',
  'H * * * *',
  // Names count from 1 for months (`apr` is 4) and from 0 for days (`sun` is 0).
  '0 9 * apr-3 *',
  '0 9 * jan-mar *',
  '0 9 * mar,dec *',
  '0 9 * * sun-sat',
  '0 9 * * mon-7',
  // Day forms cron-parser takes and refuses.
  '0 9 1,L * *',
  '0 9 ? * 1',
  '0 9 * * fri#2',
  '0 9 * * friL',
  '0 9 * * 0L',
  '0 9 LW * *',
  '0 9 15W * *',
  '0 9 L-2 * *',
  '0 9 * * L',
  '0 9 * * 8L',
  '0 9 * * 1#6',
  '0 9 * * xyzL',
  '0 9 * * xyz#2',
  '0 9 * * SUNL',
  '0 9 * * sunL',
  '0 9 * * 5l',
  '0 9 l * *',
  '0 9 * JAN *',
  // `?` in any field; `#` only alone in its field; an item twice.
  '? 9 * * *',
  '0 ? * * *',
  '0 9 * ? *',
  '0 9 * * 1#2,1#4',
  '0 9 * * 1-5,5#2',
  '0 9 * * 5#2,5L',
  '0 9 * * 5#2/2',
  '0 9 * * 5L,3',
  '0 9 * * 2,5L',
  '0 9 L,15 * *',
  '0 9 L,L * *',
  '0 9 * * 5L,5L',
  '0 9 1,1 * *',
  '0 9 * * 1,1',
  '0 9 * * 0,7',
  '0 9 * jan,1 *',
  '0 9 * * 1,01',
  '0 9 1-5,3 * *',
  '0 9 */2,4 * *',
  '0,0 9 * * *',
  '0 9 * * thu',
  '0 9 * * 1-5/H',
  'H/5 * * * *',
  '0 h * * *',
]

/** What cron says of a text as a cron-type schedule: taken, or refused as no schedule. */
function cronTakes(schedule: string): boolean {
  try {
    validateSchedule({
      scheduleType: 'cron',
      schedule,
      timezone: 'UTC',
      now: Date.UTC(2026, 0, 1),
      minIntervalMs: 0,
    })
    return true
  } catch (error) {
    if (CronError.is(error) && error.code === 'CRON_NEVER_FIRES') return true
    if (
      CronError.is(error) &&
      (error.code === 'CRON_INVALID_SCHEDULE' || error.code === 'CRON_INVALID_INPUT')
    )
      return false
    throw error
  }
}

function workflowTakes(schedule: string): boolean {
  const yaml = `name: agreement\nschedule: ${JSON.stringify(schedule)}\nsteps:\n  - id: a\n    run: echo a\n`
  return parseWorkflow(yaml).ok
}

describe("a saved workflow's schedule: @lango/workflow and @lango/cron take the same texts", () => {
  it.each(SCHEDULES)('%s', (schedule) => {
    expect(workflowTakes(schedule)).toBe(cronTakes(schedule))
  })
})
