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

  it('the list, page and count filters refuse a misspelt filter instead of listing every job', async () => {
    const store = new MemoryCronStore()
    const cron = new CronService({ store, defaultTimezone: 'UTC' })
    await cron.create({
      name: 'on',
      kind: 'shell',
      command: 'true',
      scheduleType: 'cron',
      schedule: '0 9 * * *',
    })
    await expect(cron.list({ enable: false } as never)).rejects.toEqual(unknownField('enable', 'enabled'))
    await expect(cron.list({ namecontains: 'x' } as never)).rejects.toEqual(
      unknownField('namecontains', 'nameContains'),
    )
    await expect(cron.list({ ids: ['x'] } as never)).rejects.toEqual(unknownField('ids'))
    await expect(cron.listPage({ limit: 10, lastStatu: null } as never)).rejects.toEqual(
      unknownField('lastStatu', 'lastStatus'),
    )
    await expect(cron.listPage({ limit: 10, from: { afer: 'a' } } as never)).rejects.toEqual(
      unknownField('afer', 'after'),
    )
    await expect(cron.count({ failng: true } as never)).rejects.toEqual(unknownField('failng', 'failing'))
    await expect(cron.count({ limit: 1 } as never)).rejects.toEqual(unknownField('limit'))
    // Every accepted key still passes, and a page is read through list's own filter.
    expect(await cron.list({ enabled: false, sort: 'next_run', limit: 5 })).toEqual([])
    expect((await cron.listPage({ limit: 1, enabled: true, sort: 'name' })).jobs).toHaveLength(1)
    expect(await cron.count({ enabled: true, createdBy: undefined })).toBe(1)
  })

  it('the call options of every job and run call refuse unknown keys', async () => {
    const store = new MemoryCronStore()
    const cron = new CronService({ store, defaultTimezone: 'UTC' })
    await cron.create({
      name: 'on',
      kind: 'shell',
      command: 'true',
      scheduleType: 'cron',
      schedule: '0 9 * * *',
    })
    const signal = new AbortController().signal
    const typo = { signl: signal } as never
    await expect(cron.get('on', typo)).rejects.toEqual(unknownField('signl', 'signal'))
    await expect(cron.nextRuns('on', 3, typo)).rejects.toEqual(unknownField('signl', 'signal'))
    await expect(cron.pause('on', typo)).rejects.toEqual(unknownField('signl', 'signal'))
    await expect(cron.resume('on', typo)).rejects.toEqual(unknownField('signl', 'signal'))
    await expect(cron.remove('on', typo)).rejects.toEqual(unknownField('signl', 'signal'))
    await expect(cron.getRun('run_1', typo)).rejects.toEqual(unknownField('signl', 'signal'))
    await expect(cron.deliveries(['run_1'], typo)).rejects.toEqual(unknownField('signl', 'signal'))
    await expect(cron.start(typo)).rejects.toEqual(unknownField('signl', 'signal'))
    await expect(cron.stop(typo)).rejects.toEqual(unknownField('signl', 'signal'))
    expect((await cron.get('on', { signal })).enabled).toBe(true)
  })

  it("the CronScheduler's health, start, stop and trigger refuse unknown keys", async () => {
    const store = new MemoryCronStore()
    const scheduler = new CronScheduler({ store })
    expect(thrown(() => scheduler.health({ staleAfter: 5 } as never))).toEqual(
      unknownField('staleAfter', 'staleAfterMs'),
    )
    await expect(scheduler.start({ sigal: undefined } as never)).rejects.toEqual(
      unknownField('sigal', 'signal'),
    )
    await expect(scheduler.stop({ sigal: undefined } as never)).rejects.toEqual(
      unknownField('sigal', 'signal'),
    )
    const service = new CronService({ store, defaultTimezone: 'UTC' })
    const { job } = await service.create({
      name: 'hook',
      kind: 'shell',
      command: 'true',
      scheduleType: 'webhook',
      schedule: 'hook',
    })
    await expect(scheduler.trigger(job, { payloads: '{}' } as never)).rejects.toEqual(
      unknownField('payloads', 'payload'),
    )
    expect(scheduler.health({ staleAfterMs: 5 }).staleAfterMs).toBe(5)
  })
})
