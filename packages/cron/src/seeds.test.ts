/**
 * What CronService does for the seed scenarios, on a real SQLite file: the service operations the
 * seed's tools call (seed 000: add, list, pause, resume, remove, history; seed 002: create, get,
 * update, remove, trigger). These tests call the service directly; the tools themselves
 * (cron_add … cron_history, manage_cron_jobs) are tested through the tools in packages/tools.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import { CronError } from './errors.js'

const START = '2026-05-04T08:00:00.000Z'

let harness: Harness
beforeEach(async () => {
  harness = await createHarness(START)
  await harness.service.start()
})
afterEach(async () => {
  await harness.cleanup()
})

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  return CronError.is(error) ? error.code : undefined
}

describe('CronService in the seed 000 scenarios (the operations behind cron_add … cron_history)', () => {
  it('add creates and registers a job and returns its name, schedule and next 3 runs', async () => {
    const result = await harness.service.add({
      name: 'morning-news',
      scheduleType: 'cron',
      schedule: '0 9 * * *',
      prompt: 'Summarise the headlines',
      timezone: 'Europe/Berlin',
      deliverTo: ['telegram:42'],
    })
    expect(result.status).toBe('created')
    expect(result.job).toMatchObject({
      name: 'morning-news',
      scheduleType: 'cron',
      schedule: '0 9 * * *',
      enabled: true,
    })
    // 08:00Z is 10:00 in Berlin: the next 09:00 is tomorrow
    expect(result.nextRuns.map((run) => run.local)).toEqual([
      '2026-05-05T09:00:00+02:00',
      '2026-05-06T09:00:00+02:00',
      '2026-05-07T09:00:00+02:00',
    ])
    expect(result.nextRuns[0]?.utc).toBe('2026-05-05T07:00:00.000Z')
    // registered: it fires at the next 09:00 Berlin without any further call
    await harness.clock.advanceTo(Date.parse('2026-05-05T07:00:00Z'))
    await harness.service.scheduler.whenIdle()
    expect(harness.agent.calls).toHaveLength(1)
    expect(harness.sender.sent[0]).toEqual({ target: 'telegram:42', text: '[Cron] morning-news\nresult 1' })
  })

  it('add with an existing name updates that job (upsert)', async () => {
    await harness.service.add({ name: 'digest', scheduleType: 'cron', schedule: '0 9 * * *', prompt: 'one' })
    const again = await harness.service.add({
      name: 'digest',
      scheduleType: 'every',
      schedule: '2h',
      prompt: 'two',
    })
    expect(again.status).toBe('updated')
    expect(again.job).toMatchObject({ scheduleType: 'every', schedule: '2h', prompt: 'two' })
    expect(again.nextRuns[0]?.at).toBe(Date.parse(START) + 7_200_000)
    expect(await harness.service.list()).toHaveLength(1)
  })

  it('list returns every job with id, name, schedule and enabled', async () => {
    await harness.service.add({ name: 'b-job', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    await harness.service.add({
      name: 'a-job',
      scheduleType: 'cron',
      schedule: '*/5 * * * *',
      prompt: 'y',
      enabled: false,
    })
    const jobs = await harness.service.list()
    expect(jobs.map((job) => [job.name, job.schedule, job.enabled])).toEqual([
      ['a-job', '*/5 * * * *', false],
      ['b-job', '1h', true],
    ])
    expect(jobs.every((job) => typeof job.id === 'string' && job.id.length > 0)).toBe(true)
  })

  it('pause disables and unregisters; resume re-registers with a fresh next run', async () => {
    const { job } = await harness.service.add({
      name: 'ticker',
      scheduleType: 'cron',
      schedule: '*/5 * * * *',
      prompt: 'tick',
    })
    const paused = await harness.service.pause(job.id)
    expect(paused).toMatchObject({ enabled: false, nextRunAt: null })
    await harness.clock.advance(3_600_000)
    expect(harness.agent.calls).toHaveLength(0)
    const resumed = await harness.service.resume('ticker')
    expect(resumed.job.enabled).toBe(true)
    expect(resumed.job.nextRunAt).toBe(Date.parse('2026-05-04T09:05:00Z'))
    await harness.clock.advance(5 * 60_000)
    await harness.service.scheduler.whenIdle()
    expect(harness.agent.calls).toHaveLength(1)
  })

  it('remove deletes the job and its history and unregisters it', async () => {
    const { job } = await harness.service.add({
      name: 'gone',
      scheduleType: 'cron',
      schedule: '*/5 * * * *',
      prompt: 'x',
    })
    await harness.clock.advance(5 * 60_000)
    await harness.service.scheduler.whenIdle()
    expect(await harness.service.history({ job: job.id })).toHaveLength(1)
    const removed = await harness.service.remove(job.id)
    expect(removed.name).toBe('gone')
    expect(await harness.service.list()).toEqual([])
    expect(await harness.store.listRuns({ jobId: job.id })).toEqual([])
    await harness.clock.advance(3_600_000)
    expect(harness.agent.calls).toHaveLength(1)
  })

  it('history returns runs, filtered by job id or name when given', async () => {
    const one = await harness.service.add({
      name: 'one',
      scheduleType: 'cron',
      schedule: '*/5 * * * *',
      prompt: 'x',
    })
    await harness.service.add({ name: 'two', scheduleType: 'cron', schedule: '*/10 * * * *', prompt: 'y' })
    await harness.clock.advance(10 * 60_000)
    await harness.service.scheduler.whenIdle()
    expect(await harness.service.history()).toHaveLength(3)
    const byId = await harness.service.history({ job: one.job.id })
    expect(byId.map((run) => run.jobName)).toEqual(['one', 'one'])
    expect(byId[0]).toMatchObject({
      status: 'completed',
      trigger: 'schedule',
      result: 'result 3',
      deliveryStatus: 'none',
    })
    expect(await harness.service.history({ job: 'two' })).toHaveLength(1)
    expect(await harness.service.history({ limit: 1 })).toHaveLength(1)
    expect(await codeOf(harness.service.history({ job: 'nope' }))).toBe('CRON_JOB_NOT_FOUND')
  })
})

describe('CronService in the seed 002 scenarios (the operations behind manage_cron_jobs)', () => {
  it('create: daily-backup shell job at 03:00 returns the job with its id and is registered', async () => {
    const { job } = await harness.service.create({
      name: 'daily-backup',
      kind: 'shell',
      scheduleType: 'cron',
      schedule: '0 3 * * *',
      command: 'tar -czf backup.tar.gz .',
    })
    expect(job.id).toMatch(/^id-/)
    expect(job).toMatchObject({
      kind: 'shell',
      command: 'tar -czf backup.tar.gz .',
      prompt: null,
      enabled: true,
    })
    expect(await harness.service.get(job.id)).toEqual(job)
    await harness.clock.advanceTo(Date.parse('2026-05-05T03:00:00Z'))
    await harness.service.scheduler.whenIdle()
    expect(harness.shell.calls.map((call) => call.command)).toEqual(['tar -czf backup.tar.gz .'])
  })

  it('create with the aliases interval and once', async () => {
    const interval = await harness.service.create({
      name: 'poll',
      scheduleType: 'interval',
      schedule: '30m',
      prompt: 'p',
    })
    expect(interval.job.scheduleType).toBe('every')
    const once = await harness.service.create({
      name: 'remind',
      scheduleType: 'once',
      schedule: '2026-05-04T10:00',
      prompt: 'r',
    })
    expect(once.job.scheduleType).toBe('at')
    await harness.clock.advance(2 * 3_600_000 + 1)
    await harness.service.scheduler.whenIdle()
    expect(harness.agent.calls.filter((call) => call.jobName === 'remind')).toHaveLength(1)
    expect(await harness.service.get('remind')).toMatchObject({ enabled: false, nextRunAt: null })
  })

  it('create without a name rejects with "name is required: …" and stores nothing', async () => {
    const error = await harness.service
      .create({ name: '', scheduleType: 'cron', schedule: '0 3 * * *', command: 'x', kind: 'shell' })
      .then(
        () => {
          throw new Error('expected a rejection')
        },
        (caught: unknown) => caught as CronError,
      )
    expect(error.message).toMatch(/^name is required/)
    expect(await harness.service.list()).toEqual([])
  })

  it('update(id, { enabled: false }) disables and unregisters', async () => {
    const { job } = await harness.service.create({
      name: 'ping',
      scheduleType: 'cron',
      schedule: '*/5 * * * *',
      prompt: 'x',
    })
    const updated = await harness.service.update(job.id, { enabled: false })
    expect(updated.job.enabled).toBe(false)
    expect(harness.service.scheduler.armedCount).toBe(0)
    await harness.clock.advance(3_600_000)
    expect(harness.agent.calls).toHaveLength(0)
  })

  it('update of a nonexistent job rejects with CRON_JOB_NOT_FOUND ("Job not found: …")', async () => {
    const error = await harness.service.update('nonexistent', { enabled: false }).then(
      () => {
        throw new Error('expected a rejection')
      },
      (caught: unknown) => caught as CronError,
    )
    expect(error.code).toBe('CRON_JOB_NOT_FOUND')
    expect(error.message).toMatch(/^Job not found/)
  })

  it('remove takes the job out of the store and the scheduler', async () => {
    const { job } = await harness.service.create({
      name: 'tmp',
      scheduleType: 'cron',
      schedule: '*/5 * * * *',
      prompt: 'x',
    })
    await harness.service.remove(job.id)
    expect(harness.service.scheduler.armedCount).toBe(0)
    expect(await codeOf(harness.service.get(job.id))).toBe('CRON_JOB_NOT_FOUND')
  })

  it('trigger runs the job asynchronously, as a manual ledger row', async () => {
    const { job } = await harness.service.create({
      name: 'now',
      scheduleType: 'cron',
      schedule: '0 3 * * *',
      prompt: 'x',
    })
    const triggered = await harness.service.trigger(job.id)
    expect(triggered.status).toBe('started')
    await harness.service.scheduler.whenIdle()
    const runs = await harness.service.history({ job: 'now' })
    expect(runs).toHaveLength(1)
    expect(runs[0]).toMatchObject({ trigger: 'manual', status: 'completed', scheduledFor: Date.parse(START) })
    // a second trigger in the same millisecond gets its own row
    await harness.service.trigger(job.id)
    await harness.service.scheduler.whenIdle()
    await harness.service.trigger(job.id)
    await harness.service.scheduler.whenIdle()
    const all = await harness.service.history({ job: 'now' })
    expect(all.map((run) => run.scheduledFor)).toEqual([
      Date.parse(START),
      Date.parse(START) - 1,
      Date.parse(START) - 2,
    ])
  })
})
