/**
 * Millisecond options that feed a timer are bounded by the longest delay Node keeps, 2^31 − 1 ms:
 * Node runs a longer timer after about 1 ms, so a 30-day `deliveryTimeoutMs` would fail every
 * delivery at once.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import { CronError } from './errors.js'
import type { Clock } from './ports.js'
import type { CronServiceOptions } from './service.js'
import { createDeferred } from './testing/recording-runners.js'

const MAX_TIMER_MS = 2 ** 31 - 1
const MINUTE = 60_000
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

describe('options that feed a timer are at most 2^31 − 1 ms', () => {
  it.each([
    ['deliveryTimeoutMs', 2 ** 31],
    ['deliveryTimeoutMs', 30 * 86_400_000],
    ['deliveryTimeoutMs', 0],
    ['scheduleWriteDelayMs', 2 ** 31],
    ['scheduleWriteDelayMs', -1],
    ['leaseMs', 2 ** 31],
    ['leaseMs', Number.NaN],
    ['maxTimeoutMs', 2 ** 31],
    ['maxTimeoutMs', 999],
  ] as const)('%s: %d is refused with CRON_INVALID_INPUT naming the option', async (field, value) => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    const error = thrown(() => harness?.another({ [field]: value } as Partial<CronServiceOptions>))
    expect(error?.code).toBe('CRON_INVALID_INPUT')
    expect(error?.data).toMatchObject({ field })
    expect(error?.message).toMatch(new RegExp(`^${field} must be a whole number of milliseconds`))
  })

  it('2^31 − 1 ms itself is accepted for each', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    for (const field of ['deliveryTimeoutMs', 'scheduleWriteDelayMs', 'leaseMs', 'maxTimeoutMs']) {
      expect(thrown(() => harness?.another({ [field]: MAX_TIMER_MS }))).toBeUndefined()
    }
  })

  it('defaultTimeoutMs is from 1 s to maxTimeoutMs, and defaults to maxTimeoutMs when that is below 10 min', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    const above = thrown(() => harness?.another({ maxTimeoutMs: 60_000, defaultTimeoutMs: 60_001 }))
    expect(above).toMatchObject({ code: 'CRON_INVALID_INPUT', data: { field: 'defaultTimeoutMs' } })
    expect(thrown(() => harness?.another({ defaultTimeoutMs: 500 }))?.data).toMatchObject({
      field: 'defaultTimeoutMs',
    })
    const short = harness.another({ maxTimeoutMs: 60_000 })
    const { job } = await short.add({ name: 'short', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    expect(job.timeoutMs).toBe(60_000)
  })

  it('a stored run timeout beyond 2^31 − 1 ms (written by another process) does not time the run out at once', async () => {
    // Like Node: a delay above 2^31 − 1 ms is run after 1 ms.
    harness = await createHarness('2026-01-01T00:00:00Z', {
      clockFor: (clock): Clock => ({
        now: () => clock.now(),
        setTimeout: (callback, ms) => clock.setTimeout(callback, ms > MAX_TIMER_MS ? 1 : ms),
        clearTimeout: (handle) => clock.clearTimeout(handle),
      }),
    })
    const gate = createDeferred<string>()
    harness.agent.respond(() => gate.promise)
    const { job } = await harness.service.add({
      name: 'long',
      scheduleType: 'cron',
      schedule: '0 * * * *',
      prompt: 'x',
    })
    await harness.store.updateJob(job.id, { timeoutMs: 40 * 86_400_000 })
    await harness.service.start()
    await harness.clock.advance(60 * MINUTE + 10)
    expect(harness.service.scheduler.runningCount).toBe(1)
    expect(harness.agent.signals[0]?.aborted).toBe(false)
    gate.resolve('done')
    await harness.service.scheduler.whenIdle()
    expect((await harness.runs()).map((run) => run.status)).toEqual(['completed'])
  })
})
