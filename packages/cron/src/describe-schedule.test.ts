import { describe, expect, it } from 'vitest'
import { describeSchedule } from './index.js'

describe('describeSchedule on input it cannot read in words', () => {
  it.each([
    '0 99 * * *',
    '60 8 * * *',
    '*/99 * * * *',
    '0 */30 * * *',
    '0 8 32 * *',
    '0 8 0 * *',
    '75 0 8 * * *',
  ])('%s reads as the expression itself, never as a time that does not exist', (schedule) => {
    expect(describeSchedule({ scheduleType: 'cron', schedule })).toBe(`cron "${schedule}"`)
  })

  it.each(['cron', 'every', 'at', 'webhook'] as const)(
    'a %s job without a schedule reads as "no schedule" instead of throwing',
    (scheduleType) => {
      expect(describeSchedule({ scheduleType, schedule: undefined as unknown as string })).toBe('no schedule')
    },
  )
})
