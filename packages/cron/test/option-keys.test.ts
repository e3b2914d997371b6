/**
 * An outside probe: `new CronService({ stroe, maxConcurent: 3 })` and a misspelt job field were
 * dropped without a word. Every options object and job definition now refuses an unknown key with
 * `CRON_INVALID_INPUT` naming it, the closest known key and what is accepted. Through the public API.
 */
import { describe, expect, it } from 'vitest'
import { CronError, CronScheduler, CronService } from '../src/index.js'
import { MemoryCronStore } from '../src/testing/index.js'

const unknownField = (field: string, suggestion?: string) =>
  expect.objectContaining({
    name: 'CronError',
    code: 'CRON_INVALID_INPUT',
    message: expect.stringContaining(`unknown option "${field}"`),
    data: expect.objectContaining({
      field,
      accepted: expect.any(Array),
      ...(suggestion === undefined ? {} : { suggestion }),
    }),
  })

function thrown(action: () => unknown): unknown {
  try {
    action()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw')
}

describe('unknown option keys', () => {
  it('the CronService constructor refuses misspelt options', () => {
    const store = new MemoryCronStore()
    const error = thrown(() => new CronService({ store, maxConcurentJobs: 3 } as never))
    expect(error).toEqual(unknownField('maxConcurentJobs', 'maxConcurrentJobs'))
    expect(CronError.is(error)).toBe(true)
    expect((error as Error).message).toMatch(
      /^unknown option "maxConcurentJobs" in CronService options \(did you mean "maxConcurrentJobs"\?\); accepted: store, agentRunner, .*maxJobs/,
    )
    expect(thrown(() => new CronService({ stroe: store } as never))).toEqual(unknownField('stroe', 'store'))
    expect(thrown(() => new CronService({ store, defaultTimeZone: 'UTC' } as never))).toEqual(
      unknownField('defaultTimeZone', 'defaultTimezone'),
    )
    expect(thrown(() => new CronService({ store, retention: { maxAge: 1000 } } as never))).toEqual(
      unknownField('maxAge', 'maxAgeMs'),
    )
  })

  it('the CronScheduler constructor refuses unknown keys, nested ones included', () => {
    const store = new MemoryCronStore()
    expect(thrown(() => new CronScheduler({ store, maxJobs: 5 } as never))).toEqual(unknownField('maxJobs'))
    expect(thrown(() => new CronScheduler({ store, delivery: { maxAttempt: 2 } } as never))).toEqual(
      unknownField('maxAttempt', 'maxAttempts'),
    )
    expect(thrown(() => new CronScheduler({ store, catchupWindow: { min: 1 } } as never))).toEqual(
      unknownField('min'),
    )
  })

  it('a job definition with a misspelt field is refused and nothing is stored', async () => {
    const store = new MemoryCronStore()
    const cron = new CronService({ store, defaultTimezone: 'UTC' })
    const job = {
      name: 'report',
      kind: 'shell',
      command: 'true',
      scheduleType: 'cron',
      schedule: '0 9 * * *',
      timezon: 'Europe/Berlin',
    }
    await expect(cron.create(job as never)).rejects.toEqual(unknownField('timezon', 'timezone'))
    await expect(cron.add(job as never)).rejects.toEqual(unknownField('timezon', 'timezone'))
    await expect(cron.preview(job as never)).rejects.toEqual(unknownField('timezon', 'timezone'))
    expect(await cron.list()).toEqual([])
    const { timezon: _typo, ...valid } = job
    const { job: created } = await cron.create({ ...valid, timezone: 'UTC' } as never)
    await expect(cron.update(created.id, { comand: 'false' } as never)).rejects.toEqual(
      unknownField('comand', 'command'),
    )
    await expect(cron.history({ jobs: 'report' } as never)).rejects.toEqual(unknownField('jobs', 'job'))
    await expect(cron.trigger('report', { payloads: '{}' } as never)).rejects.toEqual(
      unknownField('payloads', 'payload'),
    )
    await expect(
      cron.preview({ scheduleType: 'cron', schedule: '* * * * *' }, { cout: 3 } as never),
    ).rejects.toEqual(unknownField('cout', 'count'))
  })
})
