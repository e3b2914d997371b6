import { describe, expect, it } from 'vitest'
import { parseDuration, readStoredInterval } from './duration.js'
import { CronError } from './errors.js'
import * as entry from './index.js'
import { parseAtTime, validateSchedule } from './schedule.js'

const NOW = Date.parse('2026-03-01T12:00:00Z')

function rejects(input: Parameters<typeof validateSchedule>[0]): CronError {
  try {
    validateSchedule(input)
  } catch (error) {
    expect(CronError.is(error)).toBe(true)
    return error as CronError
  }
  throw new Error(`expected ${JSON.stringify(input)} to be rejected`)
}

describe('validateSchedule: cron', () => {
  it('accepts */5 * * * * and returns the next 3 fires in UTC and in the job zone', () => {
    const result = validateSchedule({
      scheduleType: 'cron',
      schedule: '*/5 * * * *',
      timezone: 'Europe/Berlin',
      now: NOW,
    })
    expect(result.scheduleType).toBe('cron')
    expect(result.nextRuns.map((run) => run.utc)).toEqual([
      '2026-03-01T12:05:00.000Z',
      '2026-03-01T12:10:00.000Z',
      '2026-03-01T12:15:00.000Z',
    ])
    expect(result.nextRuns[0]?.local).toBe('2026-03-01T13:05:00+01:00')
    expect(result.nextRuns[0]?.timezone).toBe('Europe/Berlin')
  })

  it('accepts macros and a 6-field expression whose seconds field is a literal', () => {
    expect(
      validateSchedule({ scheduleType: 'cron', schedule: '@daily', timezone: 'UTC', now: NOW }).schedule,
    ).toBe('@daily')
    const sixField = validateSchedule({
      scheduleType: 'cron',
      schedule: '30 */5 * * * *',
      timezone: 'UTC',
      now: NOW,
    })
    expect(sixField.nextRuns.map((run) => run.utc)).toEqual([
      '2026-03-01T12:00:30.000Z',
      '2026-03-01T12:05:30.000Z',
      '2026-03-01T12:10:30.000Z',
    ])
  })

  it.each([
    ['* * * * * *', 'CRON_INVALID_SCHEDULE', /seconds field is a single number/],
    ['*/10 * * * * *', 'CRON_INVALID_SCHEDULE', /seconds field is a single number/],
    ['0 0 31 2 *', 'CRON_NEVER_FIRES', /never fires/],
    ['59 23 31 2 *', 'CRON_NEVER_FIRES', /never fires/],
    ['0 0 30 2 *', 'CRON_NEVER_FIRES', /never fires/],
    ['61 * * * *', 'CRON_INVALID_SCHEDULE', /expected range 0-59\. Expected 5 fields/],
    ['* * *', 'CRON_INVALID_SCHEDULE', /has 3 fields; expected 5 fields/],
    ['not a cron', 'CRON_INVALID_SCHEDULE', /has 3 fields/],
    ['@reboot', 'CRON_INVALID_SCHEDULE', /Unknown cron macro.*Accepted: @yearly/],
    ['@secondly', 'CRON_INVALID_SCHEDULE', /Unknown cron macro/],
    ['H * * * *', 'CRON_INVALID_SCHEDULE', /"H"/],
    ['', 'CRON_INVALID_SCHEDULE', /empty/],
  ])('rejects %j with %s', (schedule, code, message) => {
    const error = rejects({ scheduleType: 'cron', schedule, timezone: 'UTC', now: NOW })
    expect(error.code).toBe(code)
    expect(error.message).toMatch(message)
  })

  it('rejects expressions that fire more often than minInterval over the next 20 fires', () => {
    const error = rejects({
      scheduleType: 'cron',
      schedule: '*/2 * * * *',
      timezone: 'UTC',
      now: NOW,
      minIntervalMs: 300_000,
    })
    expect(error.code).toBe('CRON_INTERVAL_TOO_SHORT')
    expect(error.message).toMatch(/every 2m; the minimum interval is 5m/)
    // the default floor is 60 s: every minute passes, seconds-level does not
    expect(
      validateSchedule({ scheduleType: 'cron', schedule: '* * * * *', timezone: 'UTC', now: NOW }).nextRuns,
    ).toHaveLength(3)
    // an irregular expression whose close pair appears later than the first fires
    const irregular = rejects({
      scheduleType: 'cron',
      schedule: '0,1 */6 * * *',
      timezone: 'UTC',
      now: NOW,
      minIntervalMs: 120_000,
    })
    expect(irregular.code).toBe('CRON_INTERVAL_TOO_SHORT')
  })

  it('rejects unknown time zones with the accepted form', () => {
    const error = rejects({ scheduleType: 'cron', schedule: '0 9 * * *', timezone: 'Mars/Olympus', now: NOW })
    expect(error.code).toBe('CRON_INVALID_TIMEZONE')
    expect(error.message).toMatch(/IANA name such as/)
    expect(rejects({ scheduleType: 'cron', schedule: '0 9 * * *', timezone: '', now: NOW }).code).toBe(
      'CRON_INVALID_TIMEZONE',
    )
  })

  it('canonicalises time zone spelling', () => {
    expect(
      validateSchedule({ scheduleType: 'cron', schedule: '0 9 * * *', timezone: 'Asia/Kolkata', now: NOW })
        .timezone,
    ).toBe('Asia/Kolkata')
    expect(
      validateSchedule({ scheduleType: 'cron', schedule: '0 9 * * *', timezone: 'europe/berlin', now: NOW })
        .timezone,
    ).toBe('Europe/Berlin')
    expect(
      validateSchedule({ scheduleType: 'cron', schedule: '0 9 * * *', timezone: 'utc', now: NOW }).timezone,
    ).toBe('UTC')
  })

  it('rejects unknown schedule types and names the accepted ones', () => {
    const error = rejects({ scheduleType: 'weekly', schedule: '0 9 * * *', timezone: 'UTC', now: NOW })
    expect(error.message).toMatch(
      /Accepted: cron, every, at, webhook \(aliases: interval = every, once = at\)/,
    )
  })
})

describe('validateSchedule: every / interval', () => {
  it('accepts durations and the seed 002 alias "interval"', () => {
    const result = validateSchedule({
      scheduleType: 'interval',
      schedule: '1h30m',
      timezone: 'UTC',
      now: NOW,
    })
    expect(result.scheduleType).toBe('every')
    expect(result.nextRuns[0]?.at).toBe(NOW + 5_400_000)
    expect(
      validateSchedule({ scheduleType: 'every', schedule: '@every 5m', timezone: 'UTC', now: NOW }).schedule,
    ).toBe('5m')
    expect(
      validateSchedule({ scheduleType: 'cron', schedule: '@every 2h', timezone: 'UTC', now: NOW })
        .scheduleType,
    ).toBe('every')
    expect(
      validateSchedule({ scheduleType: 'every', schedule: 90_000, timezone: 'UTC', now: NOW }).nextRuns[0]
        ?.at,
    ).toBe(NOW + 90_000)
  })

  it('rejects every 1s and anything under minInterval', () => {
    const error = rejects({ scheduleType: 'every', schedule: '1s', timezone: 'UTC', now: NOW })
    expect(error.code).toBe('CRON_INTERVAL_TOO_SHORT')
    expect(error.message).toMatch(/1s is below the minimum of 1m/)
    expect(rejects({ scheduleType: 'every', schedule: '59s', timezone: 'UTC', now: NOW }).code).toBe(
      'CRON_INTERVAL_TOO_SHORT',
    )
  })

  it('rejects malformed durations with the accepted forms', () => {
    const error = rejects({ scheduleType: 'every', schedule: 'five minutes', timezone: 'UTC', now: NOW })
    expect(error.code).toBe('CRON_INVALID_SCHEDULE')
    expect(error.message).toMatch(/a number with a unit \(ms, s, m, h, d or w\), such as 90s, 10m, 1h30m/)
  })
})

describe('validateSchedule: at / once', () => {
  it('reads a time without offset in the job zone and one with offset exactly', () => {
    const local = validateSchedule({
      scheduleType: 'once',
      schedule: '2026-03-08T09:00',
      timezone: 'America/New_York',
      now: NOW,
    })
    expect(local.scheduleType).toBe('at')
    expect(local.nextRuns).toEqual([
      {
        at: Date.parse('2026-03-08T13:00:00Z'),
        utc: '2026-03-08T13:00:00.000Z',
        local: '2026-03-08T09:00:00-04:00',
        timezone: 'America/New_York',
      },
    ])
    expect(local.schedule).toBe('2026-03-08T09:00:00-04:00')
    const offset = validateSchedule({
      scheduleType: 'at',
      schedule: '2026-03-08T09:00:00+05:30',
      timezone: 'UTC',
      now: NOW,
    })
    expect(offset.nextRuns[0]?.utc).toBe('2026-03-08T03:30:00.000Z')
  })

  it('moves a nonexistent local time to the first valid instant', () => {
    expect(new Date(parseAtTime('2026-03-08T02:30', 'America/New_York')).toISOString()).toBe(
      '2026-03-08T07:00:00.000Z',
    )
    expect(new Date(parseAtTime('2026-11-01T01:30', 'America/New_York')).toISOString()).toBe(
      '2026-11-01T05:30:00.000Z',
    )
  })

  it('rejects times in the past and malformed dates', () => {
    const past = rejects({ scheduleType: 'at', schedule: '2020-01-01T00:00:00Z', timezone: 'UTC', now: NOW })
    expect(past.code).toBe('CRON_AT_IN_PAST')
    expect(past.message).toMatch(/is in the past/)
    expect(
      rejects({ scheduleType: 'at', schedule: '2026-02-30T10:00', timezone: 'UTC', now: NOW }).code,
    ).toBe('CRON_INVALID_SCHEDULE')
    expect(rejects({ scheduleType: 'at', schedule: 'tomorrow', timezone: 'UTC', now: NOW }).message).toMatch(
      /ISO 8601/,
    )
  })
})

describe('parseDuration', () => {
  it.each([
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['2d', 172_800_000],
    ['@every 5m', 300_000],
    ['1.5h', 5_400_000],
  ])('%s → %d', (text, milliseconds) => {
    expect(parseDuration(text)).toBe(milliseconds)
  })

  it('reads a number as milliseconds (the package API), rounded to whole ones', () => {
    expect(parseDuration(1500)).toBe(1500)
    expect(parseDuration(1500.6)).toBe(1501)
  })

  it.each(['', '0', '0s', '-5m', '5 minutes', 'm5', '5y'])('rejects %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/duration/)
  })

  it('refuses a text without a unit instead of guessing milliseconds (ADR 0013)', () => {
    expect(() => parseDuration('1500')).toThrow(
      'has no unit: write "1500s" for seconds or "1500ms" for milliseconds',
    )
  })
})

describe('readStoredInterval', () => {
  it('keeps the meaning of intervals stored before ADR 0013: a bare number is milliseconds', () => {
    expect(readStoredInterval('300000')).toBe(300_000)
    expect(readStoredInterval('@every 300000')).toBe(300_000)
    expect(readStoredInterval('5m')).toBe(300_000)
    expect(readStoredInterval('1 h 30 m')).toBe(5_400_000)
  })
})

describe('validateSchedule: its own inputs', () => {
  it.each([
    ['cron', '0 8 * * *'],
    ['every', '1h'],
    ['at', '2026-12-01T09:00'],
  ])('a NaN now is CRON_INVALID_INPUT naming now (%s), not a schedule problem', (scheduleType, schedule) => {
    let error: unknown
    try {
      entry.validateSchedule({ scheduleType, schedule, timezone: 'UTC', now: Number.NaN })
    } catch (caught) {
      error = caught
    }
    expect(entry.CronError.is(error) && error.code).toBe('CRON_INVALID_INPUT')
    expect(entry.CronError.is(error) && error.data).toEqual({ field: 'now' })
    expect(error).toHaveProperty(
      'message',
      expect.stringMatching(/^now must be an instant in epoch milliseconds.*; got NaN$/),
    )
  })

  it('a minIntervalMs that is not a whole number of milliseconds is CRON_INVALID_INPUT', () => {
    const error = rejects({
      scheduleType: 'every',
      schedule: '1m',
      timezone: 'UTC',
      now: NOW,
      minIntervalMs: Number.NaN,
    })
    expect(error.code).toBe('CRON_INVALID_INPUT')
    expect(error.data).toMatchObject({ field: 'minIntervalMs' })
  })
})
