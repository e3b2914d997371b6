import { CronExpressionParser } from 'cron-parser'
import { afterEach, describe, expect, it } from 'vitest'
import * as entry from './index.js'
import { compileSchedule, nextFireTime } from './next-fire-time.js'

const iso = (date: Date | undefined) => date?.toISOString()

/** Fires of `expression` in `timezone` from `from` (exclusive) up to `until`. */
function firesBetween(expression: string, timezone: string, from: string, until: string): string[] {
  const fires: string[] = []
  let cursor = new Date(from)
  const end = new Date(until).getTime()
  for (;;) {
    const next = nextFireTime(expression, cursor, timezone)
    if (next === undefined || next.getTime() > end) return fires
    fires.push(next.toISOString())
    cursor = next
  }
}

describe('nextFireTime (pure, DST rules)', () => {
  it('fires 30 2 * * * at 03:00 EDT on the New York spring-forward day (first valid instant)', () => {
    expect(
      firesBetween('30 2 * * *', 'America/New_York', '2026-03-06T12:00:00Z', '2026-03-10T12:00:00Z'),
    ).toEqual([
      '2026-03-07T07:30:00.000Z', // 02:30 EST
      '2026-03-08T07:00:00.000Z', // 02:30 does not exist → 03:00 EDT
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
      '2026-03-10T06:30:00.000Z',
    ])
  })

  it('pins the cron-parser behaviour we correct (it says 03:30 on the spring-forward day)', () => {
    const library = CronExpressionParser.parse('30 2 * * *', {
      tz: 'America/New_York',
      currentDate: new Date('2026-03-07T12:00:00Z'),
    })
    expect(library.next().toDate().toISOString()).toBe('2026-03-08T07:30:00.000Z')
    expect(iso(nextFireTime('30 2 * * *', new Date('2026-03-07T12:00:00Z'), 'America/New_York'))).toBe(
      '2026-03-08T07:00:00.000Z',
    )
  })

  it('fires 30 2 * * * once on the New York fall-back day (02:30 exists once; 01:xx repeats)', () => {
    expect(
      firesBetween('30 2 * * *', 'America/New_York', '2026-10-30T12:00:00Z', '2026-11-02T12:00:00Z'),
    ).toEqual([
      '2026-10-31T06:30:00.000Z', // 02:30 EDT
      '2026-11-01T07:30:00.000Z', // 02:30 EST, once
      '2026-11-02T07:30:00.000Z',
    ])
  })

  it('fires a repeated wall time once, at its first occurrence (30 1 * * * on 2026-11-01)', () => {
    expect(
      firesBetween('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', '2026-11-02T12:00:00Z'),
    ).toEqual([
      '2026-11-01T05:30:00.000Z', // 01:30 EDT; 01:30 EST is not fired again
      '2026-11-02T06:30:00.000Z',
    ])
  })

  it('does not fire minute-wildcard expressions twice in the repeated hour', () => {
    const fires = firesBetween(
      '*/30 * * * *',
      'America/New_York',
      '2026-11-01T04:40:00Z',
      '2026-11-01T07:40:00Z',
    )
    expect(fires).toEqual([
      '2026-11-01T05:00:00.000Z', // 01:00 EDT
      '2026-11-01T05:30:00.000Z', // 01:30 EDT
      // 01:00 EST and 01:30 EST are repeats: not fired
      '2026-11-01T07:00:00.000Z', // 02:00 EST
      '2026-11-01T07:30:00.000Z',
    ])
    expect(new Set(fires).size).toBe(fires.length)
  })

  it('searching from inside the second pass of the repeated hour skips to the next new wall time', () => {
    // 06:10Z is 01:10 EST (second pass)
    expect(iso(nextFireTime('*/5 * * * *', new Date('2026-11-01T06:10:00Z'), 'America/New_York'))).toBe(
      '2026-11-01T07:00:00.000Z',
    )
  })

  it('collapses every wall time of the spring gap onto one fire at 03:00', () => {
    const fires = firesBetween(
      '*/15 * * * *',
      'America/New_York',
      '2026-03-08T06:40:00Z',
      '2026-03-08T07:20:00Z',
    )
    expect(fires).toEqual([
      '2026-03-08T06:45:00.000Z', // 01:45 EST
      '2026-03-08T07:00:00.000Z', // 02:00..02:45 do not exist → 03:00 EDT, once
      '2026-03-08T07:15:00.000Z', // 03:15 EDT
    ])
  })

  it('evaluates half-hour offset zones (Asia/Kolkata, UTC+05:30)', () => {
    expect(firesBetween('0 9 * * *', 'Asia/Kolkata', '2026-01-01T00:00:00Z', '2026-01-03T00:00:00Z')).toEqual(
      ['2026-01-01T03:30:00.000Z', '2026-01-02T03:30:00.000Z'],
    )
    expect(iso(nextFireTime('30 0 * * *', new Date('2026-06-30T18:00:00Z'), 'Asia/Kolkata'))).toBe(
      '2026-06-30T19:00:00.000Z',
    )
  })

  it('handles Lord Howe (30-minute DST shift)', () => {
    // Australia/Lord_Howe springs forward 02:00 → 02:30 on 2026-10-04
    expect(iso(nextFireTime('15 2 * * *', new Date('2026-10-03T12:00:00Z'), 'Australia/Lord_Howe'))).toBe(
      '2026-10-03T15:30:00.000Z',
    )
  })

  describe('a job zone that differs from the host zone', () => {
    const original = process.env.TZ
    afterEach(() => {
      if (original === undefined) delete process.env.TZ
      else process.env.TZ = original
    })
    for (const hostZone of ['Asia/Tokyo', 'America/Los_Angeles', 'UTC']) {
      it(`gives the same instants with TZ=${hostZone}`, () => {
        process.env.TZ = hostZone
        expect(
          firesBetween('30 2 * * *', 'America/New_York', '2026-03-07T12:00:00Z', '2026-03-09T12:00:00Z'),
        ).toEqual(['2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z'])
        expect(iso(nextFireTime('0 9 * * *', new Date('2026-01-01T00:00:00Z'), 'Asia/Kolkata'))).toBe(
          '2026-01-01T03:30:00.000Z',
        )
      })
    }
  })

  it('is strictly after `after`, to the millisecond', () => {
    expect(iso(nextFireTime('*/5 * * * *', new Date('2026-01-01T00:05:00.000Z'), 'UTC'))).toBe(
      '2026-01-01T00:10:00.000Z',
    )
    expect(iso(nextFireTime('*/5 * * * *', new Date('2026-01-01T00:04:59.999Z'), 'UTC'))).toBe(
      '2026-01-01T00:05:00.000Z',
    )
  })

  it('supports macros, L, # and the Vixie day-of-month OR day-of-week rule', () => {
    expect(iso(nextFireTime('@daily', new Date('2026-01-01T10:00:00Z'), 'UTC'))).toBe(
      '2026-01-02T00:00:00.000Z',
    )
    expect(iso(nextFireTime('0 0 L * *', new Date('2026-02-01T00:00:00Z'), 'UTC'))).toBe(
      '2026-02-28T00:00:00.000Z',
    )
    expect(iso(nextFireTime('0 0 * * 1#1', new Date('2026-01-01T00:00:00Z'), 'UTC'))).toBe(
      '2026-01-05T00:00:00.000Z',
    )
    // 13th of the month OR Friday
    expect(iso(nextFireTime('0 0 13 * 5', new Date('2026-01-01T00:00:00Z'), 'UTC'))).toBe(
      '2026-01-02T00:00:00.000Z',
    )
  })

  it('finds rare fires (0 0 29 2 *)', () => {
    expect(iso(nextFireTime('0 0 29 2 *', new Date('2026-01-01T00:00:00Z'), 'UTC'))).toBe(
      '2028-02-29T00:00:00.000Z',
    )
  })
})

describe('compileSchedule', () => {
  it('every: anchored on a grid, strictly after', () => {
    const every = compileSchedule({ type: 'every', intervalMs: 60_000, timezone: 'UTC' })
    expect(every.next(1_000)).toBe(61_000)
    expect(every.next(61_000, 1_000)).toBe(121_000)
    expect(every.next(150_000, 1_000)).toBe(181_000)
    expect(every.next(500, 1_000)).toBe(1_000)
  })

  it('at: fires once', () => {
    const at = compileSchedule({ type: 'at', at: 5_000, timezone: 'UTC' })
    expect(at.next(4_999)).toBe(5_000)
    expect(at.next(5_000)).toBeUndefined()
  })
})

describe('nextFireTime and compileSchedule on bad input (through the package entry)', () => {
  it('an unknown zone is CRON_INVALID_TIMEZONE, not a raw RangeError', () => {
    const fromNextFireTime = caught(() => entry.nextFireTime('0 8 * * *', new Date(), 'Nowhere/X'))
    expect(fromNextFireTime?.code).toBe('CRON_INVALID_TIMEZONE')
    expect(fromNextFireTime?.message).toMatch(/^Unknown time zone "Nowhere\/X"\. Use an IANA name/)
    for (const type of ['cron', 'every', 'at', 'webhook'] as const) {
      const input = { type, expression: '0 8 * * *', intervalMs: 60_000, at: 0, timezone: 'X/Y' }
      expect(caught(() => entry.compileSchedule(input))?.code).toBe('CRON_INVALID_TIMEZONE')
    }
  })

  it('an expression that never fires (February 30) returns undefined, as documented', () => {
    expect(entry.nextFireTime('0 0 30 2 *', new Date('2026-01-01T00:00:00Z'), 'UTC')).toBeUndefined()
    expect(entry.nextFireTime('0 0 31 4,6 *', new Date('2026-01-01T00:00:00Z'), 'UTC')).toBeUndefined()
    // compileSchedule and the service name it for what it is.
    const error = caught(() =>
      entry.compileSchedule({ type: 'cron', expression: '0 0 30 2 *', timezone: 'UTC' }),
    )
    expect(error?.code).toBe('CRON_NEVER_FIRES')
    expect(
      caught(() =>
        entry.validateSchedule({ scheduleType: 'cron', schedule: '0 0 30 2 *', timezone: 'UTC', now: 0 }),
      )?.code,
    ).toBe('CRON_NEVER_FIRES')
    // A malformed expression still throws.
    expect(caught(() => entry.nextFireTime('0 99 * * *', new Date(), 'UTC'))?.code).toBe(
      'CRON_INVALID_SCHEDULE',
    )
  })
})

function caught(run: () => unknown): entry.CronError | undefined {
  try {
    run()
  } catch (error) {
    if (entry.CronError.is(error)) return error
    throw error
  }
  return undefined
}
