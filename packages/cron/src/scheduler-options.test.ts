/**
 * Count, size and window options are checked when the scheduler or service is built: a value out
 * of range is `CRON_INVALID_INPUT` naming the option, never clamped or ignored. A negative
 * `retention.maxAgeMs` used to make `pruneHistory()` delete every finished run.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import { CronError, CronScheduler, type CronServiceOptions } from './index.js'

let harness: Harness | undefined

afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
})

/** The error `make` throws, or undefined when it does not throw. */
function thrown(make: () => unknown): CronError | undefined {
  try {
    make()
  } catch (error) {
    if (CronError.is(error)) return error
    throw error
  }
  return undefined
}

describe('scheduler and service options out of range are refused at construction', () => {
  it.each([
    ['retention.maxAgeMs', { retention: { maxAgeMs: -1 } }, '-1'],
    ['retention.maxAgeMs', { retention: { maxAgeMs: 0 } }, '0'],
    ['retention.maxRunsPerJob', { retention: { maxRunsPerJob: -1 } }, '-1'],
    ['retention.maxRunsPerJob', { retention: { maxRunsPerJob: 0 } }, '0'],
    ['retention.maxRunsPerJob', { retention: { maxRunsPerJob: 1.5 } }, '1.5'],
    ['maxConcurrentJobs', { maxConcurrentJobs: 0 }, '0'],
    ['maxConcurrentJobs', { maxConcurrentJobs: -1 }, '-1'],
    ['maxConcurrentJobs', { maxConcurrentJobs: Number.NaN }, 'NaN'],
    ['maxConcurrentJobs', { maxConcurrentJobs: 1.5 }, '1.5'],
    ['maxConsecutiveFailures', { maxConsecutiveFailures: 0 }, '0'],
    ['maxConsecutiveFailures', { maxConsecutiveFailures: -3 }, '-3'],
    ['maxConsecutiveFailures', { maxConsecutiveFailures: 2.5 }, '2.5'],
    ['recentResultsInPrompt', { recentResultsInPrompt: -1 }, '-1'],
    ['recentResultsInPrompt', { recentResultsInPrompt: 1.5 }, '1.5'],
    ['recentResultsInPrompt', { recentResultsInPrompt: 101 }, '101'],
    ['maxResultChars', { maxResultChars: 5 }, '5'],
    ['maxResultChars', { maxResultChars: 99 }, '99'],
    ['maxResultChars', { maxResultChars: Number.NaN }, 'NaN'],
    ['minIntervalMs', { minIntervalMs: -1 }, '-1'],
    ['minIntervalMs', { minIntervalMs: Number.NaN }, 'NaN'],
    ['maxJobs', { maxJobs: -1 }, '-1'],
    ['maxJobs', { maxJobs: 0 }, '0'],
    ['maxJobsPerCreator', { maxJobsPerCreator: -1 }, '-1'],
    ['catchupWindow.minMs', { catchupWindow: { minMs: -1 } }, '-1'],
    ['catchupWindow.maxMs', { catchupWindow: { minMs: 60_000, maxMs: 30_000 } }, '30000'],
  ] as const)(
    '%s: %j is CRON_INVALID_INPUT naming the option and the value',
    async (field, options, value) => {
      harness = await createHarness('2026-01-01T00:00:00Z')
      const error = thrown(() => harness?.another(options as Partial<CronServiceOptions>))
      expect(error?.code).toBe('CRON_INVALID_INPUT')
      expect(error?.data).toMatchObject({ field })
      expect(error?.message).toMatch(new RegExp(`^${field.replace('.', '\\.')} must be a whole number`))
      expect(error?.message).toMatch(new RegExp(`got ${value}$`))
    },
  )

  it('a scheduler built on its own refuses a negative retention.maxAgeMs too', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    const store = harness.store
    const error = thrown(() => new CronScheduler({ store, retention: { maxAgeMs: -1 } }))
    expect(error?.code).toBe('CRON_INVALID_INPUT')
    expect(error?.message).toBe(
      'retention.maxAgeMs must be a whole number of milliseconds, 1 or more; got -1',
    )
  })

  it('recentResultsInPrompt is checked by the service even with a scheduler passed in', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    const scheduler = new CronScheduler({ store: harness.store })
    const error = thrown(() => harness?.another({ scheduler, recentResultsInPrompt: -1 }))
    expect(error?.data).toMatchObject({ field: 'recentResultsInPrompt' })
  })

  it('each range starts just where its refusals end; Infinity still means never pause', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    const edges: readonly (readonly [Partial<CronServiceOptions>, Partial<CronServiceOptions>])[] = [
      [{ retention: { maxAgeMs: 1 } }, { retention: { maxAgeMs: 0 } }],
      [{ retention: { maxRunsPerJob: 1 } }, { retention: { maxRunsPerJob: 0 } }],
      [{ maxConcurrentJobs: 1 }, { maxConcurrentJobs: 0 }],
      [{ maxConsecutiveFailures: Number.POSITIVE_INFINITY }, { maxConsecutiveFailures: 0 }],
      [{ recentResultsInPrompt: 100 }, { recentResultsInPrompt: 101 }],
      [{ maxResultChars: 100 }, { maxResultChars: 99 }],
      [{ minIntervalMs: 0 }, { minIntervalMs: -1 }],
      [{ maxJobs: 1, maxJobsPerCreator: 1 }, { maxJobsPerCreator: 0 }],
      // Without maxMs, its default rises to a minMs above it; an explicit smaller one is refused.
      [
        { catchupWindow: { minMs: 3 * 3_600_000 } },
        { catchupWindow: { minMs: 3 * 3_600_000, maxMs: 3_600_000 } },
      ],
    ]
    for (const [accepted, refused] of edges) {
      expect(thrown(() => harness?.another(accepted))).toBeUndefined()
      expect(thrown(() => harness?.another(refused))?.code).toBe('CRON_INVALID_INPUT')
    }
  })
})

describe('maxResultChars', () => {
  it('a cut result keeps its first characters and says truly how many were cut', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxResultChars: 100 })
    const text = 'abcdefghij'.repeat(30)
    harness.agent.respond(() => ({ text }))
    await harness.service.start()
    await harness.service.create({ name: 'long', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    const ended = harness.service.scheduler.events.next('run:end')
    await harness.service.trigger('long')
    const result = (await ended).run.result ?? ''
    const match = /^(.*)… \[truncated (\d+) characters\]$/.exec(result)
    const kept = match?.[1] ?? ''
    expect(result.length).toBeLessThanOrEqual(100)
    expect(kept.length).toBeGreaterThanOrEqual(60)
    expect(text.startsWith(kept)).toBe(true)
    expect(Number(match?.[2])).toBe(text.length - kept.length)
  })
})

describe('maxResultChars of a shell job', () => {
  it('a cut output keeps its beginning and its end, and says truly how many characters were cut between them', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxResultChars: 200 })
    const text = `START ${'x'.repeat(5_000)} END-MARKER`
    harness.shell.respond(() => ({ exitCode: 0, stdout: text, stderr: '' }))
    await harness.service.start()
    await harness.service.create({ name: 'loud', scheduleType: 'every', schedule: '1h', command: 'loud' })
    const ended = harness.service.scheduler.events.next('run:end')
    await harness.service.trigger('loud')
    const result = (await ended).run.result ?? ''
    const match = /^(.*) … \[truncated (\d+) characters\] … (.*)$/s.exec(result)
    expect(match).not.toBeNull()
    const [, head = '', cut, tail = ''] = match as RegExpExecArray
    expect(result.length).toBeLessThanOrEqual(200)
    expect(head.startsWith('START ')).toBe(true)
    expect(tail.endsWith(' END-MARKER')).toBe(true)
    expect(text.startsWith(head) && text.endsWith(tail)).toBe(true)
    expect(Number(cut)).toBe(text.length - head.length - tail.length)
  })
})
