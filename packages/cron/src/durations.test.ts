import { DURATION_TABLE } from '@lango/duration/table'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import { CronError } from './errors.js'
import type { CronJobInput } from './service.js'
import { createTestJob } from './testing/test-job.js'

// ADR 0013: every entry point reads the one table the same way. Here: CronService (the package
// API behind cron_add, manage_cron_jobs and the operator routes) for run timeouts and intervals.

let harness: Harness
beforeEach(async () => {
  harness = await createHarness('2026-03-01T12:00:00Z')
  await harness.service.start()
})
afterEach(async () => {
  await harness.cleanup()
})

async function outcome(promise: Promise<{ readonly job: { readonly timeoutMs: number } }>) {
  return promise.then(
    (result) => ({ ok: true as const, job: result.job }),
    (error: unknown) => {
      if (!CronError.is(error)) throw error
      return { ok: false as const, error }
    },
  )
}

const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE
const base: CronJobInput = { name: 'job', scheduleType: 'cron', schedule: '0 9 * * *', prompt: 'x' }

describe('the duration table through CronService', () => {
  it.each(DURATION_TABLE)('timeout $input', async (row) => {
    const result = await outcome(harness.service.create({ ...base, timeout: row.input }))
    if ('milliseconds' in row && row.milliseconds >= 1000 && row.milliseconds <= DAY) {
      expect(result.ok && result.job.timeoutMs).toBe(row.milliseconds)
    } else if ('milliseconds' in row) {
      expect(!result.ok && result.error.message).toMatch(/^timeout must be between 1s and 1d/)
    } else {
      expect(!result.ok && result.error.code).toBe('CRON_INVALID_INPUT')
      expect(!result.ok && result.error.data?.problem).toBe(row.problem)
      expect(!result.ok && result.error.message).toMatch(
        /^timeout .*a number with a unit \(ms, s, m, h, d or w\)/,
      )
    }
  })

  it.each(DURATION_TABLE)('every $input', async (row) => {
    const result = await outcome(
      harness.service.create({ ...base, scheduleType: 'every', schedule: row.input }),
    )
    if ('milliseconds' in row && row.milliseconds >= MINUTE) {
      expect(result.ok).toBe(true)
      const job = await harness.service.get('job')
      const [first, second] = await harness.service.nextRuns('job', 2)
      expect(Date.parse(second?.utc ?? '') - Date.parse(first?.utc ?? '')).toBe(row.milliseconds)
      expect(job.scheduleType).toBe('every')
    } else if ('milliseconds' in row) {
      expect(!result.ok && result.error.code).toBe('CRON_INTERVAL_TOO_SHORT')
    } else {
      expect(!result.ok && result.error.code).toBe('CRON_INVALID_SCHEDULE')
      expect(!result.ok && result.error.data?.problem).toBe(row.problem)
    }
  })

  it('bounds an every interval at 365 days with a typed error, never a date past the calendar', async () => {
    expect(
      (await outcome(harness.service.create({ ...base, scheduleType: 'every', schedule: '365d' }))).ok,
    ).toBe(true)
    for (const schedule of ['366d', '2450000000h']) {
      const result = await outcome(
        harness.service.create({ ...base, name: 'far', scheduleType: 'every', schedule }),
      )
      expect(!result.ok && result.error.code).toBe('CRON_INVALID_SCHEDULE')
      expect(!result.ok && result.error.data?.problem).toBe('too-long')
      expect(!result.ok && result.error.message).toMatch(
        /longer than the maximum of 365d\. For a yearly job use a cron expression/,
      )
    }
  })

  it('reads a timeout given as a number as milliseconds, as the package API documents', async () => {
    const { job } = await harness.service.create({ ...base, timeout: 90_000 })
    expect(job.timeoutMs).toBe(90_000)
  })

  it('refuses "600" as a timeout instead of reading 600 ms (the defect of issue 21, item 13)', async () => {
    const result = await outcome(harness.service.create({ ...base, timeout: '600' }))
    expect(!result.ok && result.error.message).toBe(
      'timeout has no unit: write "600s" for seconds or "600ms" for milliseconds (a duration is a number with a unit (ms, s, m, h, d or w), such as 90s, 10m, 1h30m, 1.5h or 2d).',
    )
    expect(await harness.service.list()).toEqual([])
  })

  it('stores an interval given as a number of milliseconds with its unit', async () => {
    const { job } = await harness.service.create({ ...base, scheduleType: 'every', schedule: 300_000 })
    expect(job.schedule).toBe('300000ms')
  })
})

describe('jobs stored before ADR 0013 keep their meaning', () => {
  it('an every job stored with a bare number still fires every that many milliseconds, and survives resume and update', async () => {
    const now = harness.clock.now().getTime()
    await harness.store.insertJob(
      createTestJob({
        id: 'legacy',
        name: 'legacy',
        scheduleType: 'every',
        schedule: '300000',
        enabled: false,
        nextRunAt: null,
        createdAt: now,
        updatedAt: now,
      }),
    )
    const { nextRuns } = await harness.service.resume('legacy')
    expect(Date.parse(nextRuns[1]?.utc ?? '') - Date.parse(nextRuns[0]?.utc ?? '')).toBe(300_000)
    // Changing something else (or resending the same text) keeps the stored schedule as it is.
    const { job } = await harness.service.update('legacy', {
      timeout: '2m',
      schedule: '300000',
      timezone: 'Europe/Berlin',
    })
    expect(job.schedule).toBe('300000')
    expect(job.timeoutMs).toBe(120_000)
    // A new text without a unit is new input, and refused.
    const error = await harness.service
      .update('legacy', { schedule: '600000' })
      .catch((caught: unknown) => caught)
    expect(CronError.is(error) && error.data?.problem).toBe('unit-missing')
  })
})
