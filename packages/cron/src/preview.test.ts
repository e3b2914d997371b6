import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import { describeSchedule } from './describe-schedule.js'
import { CronError } from './errors.js'
import { MemoryCronStore } from './testing/memory-cron-store.js'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
})

async function at(start: string): Promise<Harness> {
  harness = await createHarness(start)
  return harness
}

async function rejection(promise: Promise<unknown>): Promise<CronError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  if (!CronError.is(error)) throw new Error(`expected a CronError, got ${String(error)}`)
  return error
}

/** `[local, utc]` of each fire. */
function times(fires: readonly { local: string; utc: string }[]): [string, string][] {
  return fires.map((fire) => [fire.local, fire.utc])
}

describe('preview across a DST change', () => {
  it('Europe/Berlin spring: 02:30 does not exist, fires at 03:00; stores nothing', async () => {
    const { service, store } = await at('2026-03-27T12:00:00Z')
    const preview = await service.preview(
      { scheduleType: 'cron', schedule: '30 2 * * *', timezone: 'Europe/Berlin' },
      { count: 4 },
    )
    expect(times(preview.fires)).toEqual([
      ['2026-03-28T02:30:00+01:00', '2026-03-28T01:30:00.000Z'],
      ['2026-03-29T03:00:00+02:00', '2026-03-29T01:00:00.000Z'],
      ['2026-03-30T02:30:00+02:00', '2026-03-30T00:30:00.000Z'],
      ['2026-03-31T02:30:00+02:00', '2026-03-31T00:30:00.000Z'],
    ])
    expect(preview.description).toBe('every day at 02:30')
    expect(preview.dstNotes).toHaveLength(1)
    expect(preview.dstNotes[0]).toMatchObject({
      kind: 'skipped',
      changeAt: '2026-03-29T01:00:00.000Z',
      offsetBefore: '+01:00',
      offsetAfter: '+02:00',
      localTimes: ['2026-03-29 02:30'],
      firesAt: { utc: '2026-03-29T01:00:00.000Z' },
    })
    expect(preview.dstNotes[0]?.message).toMatch(
      /^2026-03-29 02:30 does not exist in Europe\/Berlin \(clocks go from 02:00 to 03:00\): fires at 03:00/,
    )
    expect(await store.countJobs()).toBe(0)
    expect(await store.listRuns({ limit: 10 })).toEqual([])
  })

  it('Europe/Berlin autumn: 02:30 occurs twice, fires once at the first', async () => {
    const { service } = await at('2026-10-24T12:00:00Z')
    const preview = await service.preview(
      { scheduleType: 'cron', schedule: '30 2 * * *', timezone: 'Europe/Berlin' },
      { count: 2 },
    )
    expect(times(preview.fires)).toEqual([
      ['2026-10-25T02:30:00+02:00', '2026-10-25T00:30:00.000Z'],
      ['2026-10-26T02:30:00+01:00', '2026-10-26T01:30:00.000Z'],
    ])
    expect(preview.dstNotes).toMatchObject([
      { kind: 'repeated', localTimes: ['2026-10-25 02:30'], firesAt: { utc: '2026-10-25T00:30:00.000Z' } },
    ])
    expect(preview.dstNotes[0]?.message).toMatch(/occurs twice in Europe\/Berlin .* fires once, at the first/)
  })

  it('America/New_York: the spring gap and the autumn repeat', async () => {
    const { service, clock } = await at('2026-03-07T12:00:00Z')
    const spring = await service.preview(
      { scheduleType: 'cron', schedule: '30 2 * * *', timezone: 'America/New_York' },
      { count: 2 },
    )
    expect(times(spring.fires)).toEqual([
      ['2026-03-08T03:00:00-04:00', '2026-03-08T07:00:00.000Z'],
      ['2026-03-09T02:30:00-04:00', '2026-03-09T06:30:00.000Z'],
    ])
    expect(spring.dstNotes.map((note) => note.message)).toEqual([
      expect.stringMatching(/^2026-03-08 02:30 does not exist in America\/New_York/),
    ])

    await clock.advanceTo(Date.parse('2026-10-31T12:00:00Z'))
    const autumn = await service.preview(
      { scheduleType: 'cron', schedule: '30 1 * * *', timezone: 'America/New_York' },
      { count: 2 },
    )
    expect(times(autumn.fires)).toEqual([
      ['2026-11-01T01:30:00-04:00', '2026-11-01T05:30:00.000Z'],
      ['2026-11-02T01:30:00-05:00', '2026-11-02T06:30:00.000Z'],
    ])
    expect(autumn.dstNotes).toMatchObject([
      {
        kind: 'repeated',
        changeAt: '2026-11-01T06:00:00.000Z',
        offsetBefore: '-04:00',
        offsetAfter: '-05:00',
        localTimes: ['2026-11-01 01:30'],
      },
    ])
  })

  it('Australia/Lord_Howe: a 30-minute shift, both ways', async () => {
    const { service, clock } = await at('2026-04-03T12:00:00Z')
    const autumn = await service.preview(
      { scheduleType: 'cron', schedule: '45 1 * * *', timezone: 'Australia/Lord_Howe' },
      { count: 3 },
    )
    expect(times(autumn.fires)).toEqual([
      ['2026-04-04T01:45:00+11:00', '2026-04-03T14:45:00.000Z'],
      ['2026-04-05T01:45:00+11:00', '2026-04-04T14:45:00.000Z'],
      ['2026-04-06T01:45:00+10:30', '2026-04-05T15:15:00.000Z'],
    ])
    expect(autumn.dstNotes).toMatchObject([
      { kind: 'repeated', localTimes: ['2026-04-05 01:45'], firesAt: { utc: '2026-04-04T14:45:00.000Z' } },
    ])

    const every = await service.preview(
      { scheduleType: 'every', schedule: '12h', timezone: 'Australia/Lord_Howe' },
      { count: 4 },
    )
    expect(every.dstNotes).toMatchObject([{ kind: 'shifted', offsetBefore: '+11:00', offsetAfter: '+10:30' }])
    expect(every.dstNotes[0]?.message).toMatch(/move 30 min earlier/)

    await clock.advanceTo(Date.parse('2026-10-02T12:00:00Z'))
    const spring = await service.preview(
      { scheduleType: 'cron', schedule: '15 2 * * *', timezone: 'Australia/Lord_Howe' },
      { count: 3 },
    )
    expect(times(spring.fires)).toEqual([
      ['2026-10-03T02:15:00+10:30', '2026-10-02T15:45:00.000Z'],
      ['2026-10-04T02:30:00+11:00', '2026-10-03T15:30:00.000Z'],
      ['2026-10-05T02:15:00+11:00', '2026-10-04T15:15:00.000Z'],
    ])
    expect(spring.dstNotes).toMatchObject([
      { kind: 'skipped', offsetBefore: '+10:30', offsetAfter: '+11:00', localTimes: ['2026-10-04 02:15'] },
    ])
    expect(spring.dstNotes[0]?.message).toMatch(/\(clocks go from 02:00 to 02:30\): fires at 02:30/)
  })

  it('names several skipped times of one gap, which fire once', async () => {
    const { service } = await at('2026-03-29T00:00:00Z')
    const preview = await service.preview(
      { scheduleType: 'cron', schedule: '*/15 2 * * *', timezone: 'Europe/Berlin' },
      { count: 2 },
    )
    expect(preview.fires[0]?.utc).toBe('2026-03-29T01:00:00.000Z')
    expect(preview.dstNotes[0]?.localTimes).toEqual([
      '2026-03-29 02:00',
      '2026-03-29 02:15',
      '2026-03-29 02:30',
      '2026-03-29 02:45',
    ])
    expect(preview.dstNotes[0]?.message).toMatch(
      /^2026-03-29 02:00, 02:15, 02:30, 02:45 do not exist .* fires once, at 03:00/,
    )
  })

  it('an at time in the gap says where it fires', async () => {
    const { service } = await at('2026-03-01T00:00:00Z')
    const preview = await service.preview({
      scheduleType: 'at',
      schedule: '2026-03-29T02:30',
      timezone: 'Europe/Berlin',
    })
    expect(times(preview.fires)).toEqual([['2026-03-29T03:00:00+02:00', '2026-03-29T01:00:00.000Z']])
    expect(preview.dstNotes[0]?.message).toMatch(/^2026-03-29 02:30 does not exist in Europe\/Berlin/)
  })

  it('no DST change in the range, no notes', async () => {
    const { service } = await at('2026-06-01T00:00:00Z')
    const preview = await service.preview(
      { scheduleType: 'cron', schedule: '30 2 * * *', timezone: 'Europe/Berlin' },
      { count: 10 },
    )
    expect(preview.fires).toHaveLength(10)
    expect(preview.dstNotes).toEqual([])
  })
})

describe('preview of a job', () => {
  it('finds other jobs firing in the same minute, in any zone', async () => {
    const { service } = await at('2026-01-10T12:00:00Z')
    await service.create({ name: 'utc-nine', scheduleType: 'cron', schedule: '0 9 * * *', prompt: 'a' })
    await service.create({ name: 'hourly', scheduleType: 'cron', schedule: '0 * * * *', command: 'true' })
    await service.create({ name: 'other', scheduleType: 'cron', schedule: '5 9 * * *', prompt: 'b' })
    const preview = await service.preview(
      {
        name: 'berlin',
        scheduleType: 'cron',
        schedule: '0 10 * * *',
        timezone: 'Europe/Berlin',
        prompt: 'c',
      },
      { count: 2 },
    )
    expect(preview.clashCount).toBe(4)
    expect(preview.clashes.map((clash) => [clash.at.utc, clash.jobName, clash.otherAt.utc])).toEqual([
      ['2026-01-11T09:00:00.000Z', 'hourly', '2026-01-11T09:00:00.000Z'],
      ['2026-01-11T09:00:00.000Z', 'utc-nine', '2026-01-11T09:00:00.000Z'],
      ['2026-01-12T09:00:00.000Z', 'hourly', '2026-01-12T09:00:00.000Z'],
      ['2026-01-12T09:00:00.000Z', 'utc-nine', '2026-01-12T09:00:00.000Z'],
    ])
    // An update leaves the job itself out.
    const update = await service.previewUpdate('utc-nine', { prompt: 'changed' }, { count: 1 })
    expect(update).toMatchObject({ action: 'update', clashCount: 1 })
    expect(update.clashes[0]?.jobName).toBe('hourly')
    const none = await service.preview({ scheduleType: 'cron', schedule: '30 9 * * *' }, { count: 3 })
    expect(none.clashes).toEqual([])
  })

  it('a store without enabledSchedules (an optional capability) gives the same clashes, read with listJobs', async () => {
    const memory = new MemoryCronStore()
    // A store written before the capability: every other method, bound to the real one.
    const listOnly = new Proxy(memory, {
      get: (target, key) => {
        if (key === 'enabledSchedules') return undefined
        const value = Reflect.get(target, key, target) as unknown
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    for (const store of [memory, listOnly]) {
      const harness = await createHarness('2026-01-10T12:00:00Z', { store })
      try {
        await harness.service.create({
          name: 'hourly',
          scheduleType: 'cron',
          schedule: '0 * * * *',
          command: 'true',
        })
        await harness.service.create({
          name: 'half',
          scheduleType: 'cron',
          schedule: '30 * * * *',
          command: 'true',
        })
        const preview = await harness.service.preview(
          { scheduleType: 'cron', schedule: '0 9 * * *' },
          { count: 1 },
        )
        expect(preview.clashes.map((clash) => clash.jobName)).toEqual(['hourly'])
        await harness.service.remove('hourly')
        await harness.service.remove('half')
      } finally {
        await harness.cleanup()
      }
    }
  })

  it('estimates the prompt tokens of ai jobs (chars / 4, with the automation prefix), not of shell jobs', async () => {
    const { service } = await at('2026-01-10T12:00:00Z')
    const prompt = 'Summarise the news.'
    const ai = await service.preview({ name: 'news', scheduleType: 'every', schedule: '1h', prompt })
    expect(ai.promptEstimate?.method).toBe('chars/4')
    expect(ai.promptEstimate?.chars).toBeGreaterThan(prompt.length + 100)
    expect(ai.promptEstimate?.tokens).toBe(Math.ceil((ai.promptEstimate?.chars ?? 0) / 4))
    expect(ai.promptEstimate?.tokensWithHistory).toBeGreaterThan((ai.promptEstimate?.tokens ?? 0) + 3 * 100)
    const custom = await harness?.another({ automationPrefix: '' })
    const bare = await custom?.preview({ name: 'news', scheduleType: 'every', schedule: '1h', prompt })
    expect(bare?.promptEstimate?.chars).toBe(`\nJob: news\n\n${prompt}`.length)
    const shell = await service.preview({
      name: 'disk',
      scheduleType: 'every',
      schedule: '1h',
      command: 'df',
    })
    expect(shell.promptEstimate).toBeUndefined()
  })

  it('says the delivery route: the targets, or history only', async () => {
    const { service } = await at('2026-01-10T12:00:00Z')
    const none = await service.preview({ name: 'a', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    expect(none.delivery).toEqual({ targets: [], route: 'history only', notify: 'always' })
    const some = await service.preview({
      name: 'a',
      scheduleType: 'every',
      schedule: '1h',
      prompt: 'x',
      deliverTo: ['telegram:1', 'slack:C1'],
      notify: 'failure',
    })
    expect(some.delivery).toEqual({
      targets: ['telegram:1', 'slack:C1'],
      route: 'telegram:1, slack:C1',
      notify: 'failure',
    })
    const scheduleOnly = await service.preview({ scheduleType: 'every', schedule: '1h' })
    expect(scheduleOnly.delivery).toBeNull()
  })

  it('validates like create: same errors, and stores nothing', async () => {
    const { service, store } = await at('2026-01-10T12:00:00Z')
    await service.create({ name: 'taken', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    expect((await rejection(service.preview({ scheduleType: 'cron', schedule: '0 25 * * *' }))).code).toBe(
      'CRON_INVALID_SCHEDULE',
    )
    expect((await rejection(service.preview({ scheduleType: 'every', schedule: '10s' }))).code).toBe(
      'CRON_INTERVAL_TOO_SHORT',
    )
    expect(
      (
        await rejection(
          service.preview({ scheduleType: 'cron', schedule: '0 9 * * *', timezone: 'Mars/Base' }),
        )
      ).code,
    ).toBe('CRON_INVALID_TIMEZONE')
    expect(
      (await rejection(service.preview({ name: 'n', scheduleType: 'every', schedule: '1h' }))).message,
    ).toMatch(/prompt is required/)
    expect(
      (await rejection(service.preview({ scheduleType: 'every', schedule: '1h' }, { count: 51 }))).code,
    ).toBe('CRON_INVALID_INPUT')
    const duplicate = service.preview(
      { name: 'taken', scheduleType: 'every', schedule: '2h', prompt: 'x' },
      { existing: 'error' },
    )
    expect((await rejection(duplicate)).code).toBe('CRON_DUPLICATE_NAME')
    // cron_add's semantics: a taken name previews the update of that job.
    const upsert = await service.preview({
      name: 'taken',
      scheduleType: 'every',
      schedule: '2h',
      prompt: 'y',
    })
    expect(upsert).toMatchObject({ action: 'update', description: 'every 2 hours' })
    expect(await store.countJobs()).toBe(1)
    expect((await service.get('taken')).schedule).toBe('1h')
    expect(await store.listRuns({ limit: 10 })).toEqual([])
  })

  it('every real create and update returns the same preview', async () => {
    const { service } = await at('2026-03-27T12:00:00Z')
    const input = {
      name: 'night',
      scheduleType: 'cron',
      schedule: '30 2 * * *',
      timezone: 'Europe/Berlin',
      prompt: 'x',
    }
    const dry = await service.preview(input)
    const created = await service.create(input)
    expect(created.preview).toEqual(dry)
    expect(created.preview?.fires.slice(0, 3)).toEqual(created.nextRuns)
    const dryUpdate = await service.previewUpdate('night', { schedule: '0 3 * * *' })
    const updated = await service.update('night', { schedule: '0 3 * * *' })
    expect(updated.preview).toEqual(dryUpdate)
    expect(updated.preview).toMatchObject({
      action: 'update',
      jobId: created.job.id,
      description: 'every day at 03:00',
    })
    const added = await service.add({ ...input, prompt: 'y' })
    expect(added.preview?.fires[0]?.at).toBe(added.job.nextRunAt)
  })
})

describe('describeSchedule', () => {
  it.each<[string, string, string]>([
    ['cron', '0 8 * * *', 'every day at 08:00'],
    ['cron', '@daily', 'every day at 00:00'],
    ['cron', '@hourly', 'every hour'],
    ['cron', '0 9 * * 1-5', 'weekdays at 09:00'],
    ['cron', '0 9 * * mon,wed', 'every Monday, Wednesday at 09:00'],
    ['cron', '*/5 * * * *', 'every 5 minutes'],
    ['cron', '15 */2 * * *', 'every 2 hours at minute 15'],
    ['cron', '0 7,19 * * *', 'every day at 07:00 and 19:00'],
    ['cron', '0 6 1 * *', 'on day 1 of every month at 06:00'],
    ['cron', '0 6 1 1 *', 'on day 1 in January at 06:00'],
    ['cron', '30 0 9 * * *', 'every day at 09:00, at second 30'],
    ['cron', '0 9 1-7 * 1', 'cron "0 9 1-7 * 1"'],
    ['every', '1h30m', 'every 1 hour 30 minutes'],
    ['every', '300000', 'every 5 minutes'],
    ['every', '1d', 'every day'],
    ['at', '2026-12-01T09:00:00+01:00', 'once at 2026-12-01T09:00:00+01:00'],
  ])('%s %s → %s', (scheduleType, schedule, words) => {
    expect(describeSchedule({ scheduleType: scheduleType as 'cron', schedule })).toBe(words)
  })
})
