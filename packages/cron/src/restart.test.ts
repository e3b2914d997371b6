/**
 * Restart and multi-scheduler guarantees on real SQLite files: interrupted runs, catch-up of
 * missed occurrences (once, inside the window), nothing run twice, two schedulers at once.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import type { CronRun } from './model.js'
import { type LogFields, type Logger, systemClock } from './ports.js'
import { CronService } from './service.js'
import { SqliteCronStore } from './sqlite/sqlite-cron-store.js'
import { FakeClock } from './testing/fake-clock.js'
import { createDeferred, RecordingAgentRunner } from './testing/recording-runners.js'

const MINUTE = 60_000
const T0 = Date.parse('2026-01-01T00:00:00Z')
let harness: Harness | undefined

afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
})

const at = (minutes: number) => T0 + minutes * MINUTE
const hhmm = (time: number) => new Date(time).toISOString().slice(11, 16)

function expectEachOccurrenceOnce(runs: readonly CronRun[]): void {
  const keys = runs.map((run) => `${run.jobId}@${run.scheduledFor}`)
  expect(new Set(keys).size).toBe(keys.length)
}

describe('restart', () => {
  it('stop mid-run → the run is interrupted; a new scheduler on the file catches up the missed occurrence once; nothing runs twice', async () => {
    harness = await createHarness(T0)
    const gate = createDeferred<string>()
    harness.agent.respond((_request, index) => (index === 0 ? gate.promise : 'ok'))
    await harness.service.start()
    await harness.service.add({ name: 'five', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x' })
    await harness.clock.advanceTo(at(5))
    expect(harness.service.scheduler.runningCount).toBe(1)
    await harness.service.stop()
    gate.resolve('too late')
    expect((await harness.runs()).map((run) => [hhmm(run.scheduledFor), run.status])).toEqual([
      ['00:05', 'interrupted'],
    ])

    await harness.clock.advanceTo(at(12)) // down through 00:10
    const next = harness.another()
    await next.start()
    await harness.clock.advanceTo(at(30))
    await next.scheduler.whenIdle()
    const runs = await harness.runs()
    expect(runs.map((run) => [hhmm(run.scheduledFor), run.status, run.trigger])).toEqual([
      ['00:05', 'interrupted', 'schedule'],
      ['00:10', 'completed', 'catchup'],
      ['00:15', 'completed', 'schedule'],
      ['00:20', 'completed', 'schedule'],
      ['00:25', 'completed', 'schedule'],
      ['00:30', 'completed', 'schedule'],
    ])
    expect(runs[1]?.startedAt).toBe(at(12))
    expect(harness.agent.calls).toHaveLength(6)
    expectEachOccurrenceOnce(runs)
  })

  it('a scheduler that died mid-run (no stop, no heartbeat): its run becomes interrupted on the next start', async () => {
    const warned: [string, LogFields | undefined][] = []
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: (message, fields) => warned.push([message, fields]),
      error: () => {},
    }
    harness = await createHarness(T0, { leaseMs: 60_000, logger })
    const deadClock = new FakeClock(T0)
    const gate = createDeferred<string>()
    const deadRunner = new RecordingAgentRunner(() => gate.promise)
    const dead = new CronService({
      store: new SqliteCronStore(harness.database.connect()),
      clock: deadClock,
      agentRunner: deadRunner,
      defaultTimezone: 'UTC',
      ownerId: 'dead',
      leaseMs: 60_000,
    })
    await dead.start()
    await dead.add({ name: 'five', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x' })
    await deadClock.advanceTo(at(5))
    expect(deadRunner.calls).toHaveLength(1)
    // the process is gone: its clock never moves again, nothing of it runs

    await harness.clock.advanceTo(at(12))
    // Told once, with the runs marked (the host's alert names them and their dead owner).
    const told: (readonly CronRun[])[] = []
    harness.service.on('run:interrupted', ({ runs }) => told.push(runs))
    await harness.service.start()
    expect(told.map((runs) => runs.map((run) => [run.jobName, run.status, run.owner]))).toEqual([
      [['five', 'interrupted', 'dead']],
    ])
    await harness.clock.advanceTo(at(15))
    await harness.service.scheduler.whenIdle()
    let runs = await harness.runs()
    expect(runs.map((run) => [hhmm(run.scheduledFor), run.status, run.owner])).toEqual([
      ['00:05', 'interrupted', 'dead'],
      ['00:10', 'completed', 'owner-0'],
      ['00:15', 'completed', 'owner-0'],
    ])
    expect(runs[0]?.error).toMatch(/^interrupted: the scheduler that ran it stopped/)
    // Said in the log, not only in the history (an outside probe found it silent).
    expect(warned).toContainEqual([
      'cron runs of a scheduler taken for dead marked interrupted',
      { runs: 1, jobs: ['five'], owners: ['dead'] },
    ])
    // Its owner was only stalled after all: the run's late answer is what it did, and is recorded
    // (issue 21: a live owner taken for dead lost its results and deliveries).
    gate.resolve('ghost')
    await dead.scheduler.whenIdle()
    runs = await harness.runs()
    expect(runs[0]).toMatchObject({ status: 'completed', result: 'ghost', owner: 'dead' })
    expectEachOccurrenceOnce(runs)
  })

  // Issue 21 (5): under CPU pressure a live server's heartbeat came late, another took it for dead
  // and interrupted its runs, and the runs' results and deliveries were dropped when they ended.
  it('a heartbeat late by more than a lease is not a dead owner; a run it finishes after all is recorded and delivered', async () => {
    harness = await createHarness(T0, { leaseMs: 60_000 })
    const stalledClock = new FakeClock(T0)
    const gate = createDeferred<string>()
    const delivered: string[] = []
    const stalled = new CronService({
      store: new SqliteCronStore(harness.database.connect()),
      clock: stalledClock,
      agentRunner: new RecordingAgentRunner(() => gate.promise),
      channelSender: { send: async (_target, text) => void delivered.push(text) },
      defaultTimezone: 'UTC',
      ownerId: 'stalled',
      leaseMs: 60_000,
    })
    await stalled.start()
    await stalled.add({
      name: 'long',
      scheduleType: 'cron',
      schedule: '0 * * * *',
      prompt: 'x',
      deliverTo: ['log'],
    })
    await stalled.trigger('long')
    await harness.service.start()
    // Its event loop is busy: no heartbeat for a lease and a half while the other's clock runs.
    await harness.clock.advanceTo(T0 + 90_000)
    await harness.service.scheduler.whenIdle()
    expect((await harness.runs()).map((run) => run.status)).toEqual(['running'])
    // Past two leases it is taken for dead after all…
    await harness.clock.advanceTo(T0 + 150_000)
    await harness.service.scheduler.whenIdle()
    expect((await harness.runs()).map((run) => run.status)).toEqual(['interrupted'])
    // …but it was alive: the run ends, and what it did is recorded and delivered.
    gate.resolve('the report')
    await stalled.scheduler.whenIdle()
    expect(await harness.runs()).toMatchObject([
      { status: 'completed', result: 'the report', owner: 'stalled' },
    ])
    expect(delivered).toHaveLength(1)
    expect(delivered[0]).toContain('the report')
    await stalled.stop()
  })

  it('a live scheduler on the same file keeps its running rows (heartbeat lease)', async () => {
    harness = await createHarness(T0, { leaseMs: 60_000 })
    const gate = createDeferred<string>()
    harness.agent.respond(() => gate.promise)
    await harness.service.start()
    await harness.service.add({
      name: 'long',
      scheduleType: 'cron',
      schedule: '*/5 * * * *',
      prompt: 'x',
      timeout: '1h',
    })
    await harness.clock.advanceTo(at(5))
    const second = harness.another({ leaseMs: 60_000 })
    await harness.clock.advanceTo(at(9))
    await second.start()
    await harness.clock.advance(0)
    expect((await harness.runs())[0]?.status).toBe('running')
    gate.resolve('fine')
    await harness.service.scheduler.whenIdle()
    expect((await harness.runs())[0]?.status).toBe('completed')
  })

  it('catch-up window: the latest missed occurrence inside half the period runs; the others are skipped with a reason', async () => {
    harness = await createHarness(T0)
    await harness.service.start()
    await harness.service.add({ name: 'ten', scheduleType: 'cron', schedule: '*/10 * * * *', prompt: 'x' })
    await harness.service.stop()
    await harness.clock.advanceTo(at(63)) // missed 00:10 … 01:00; 01:00 is 3 min late (window 5 min)
    const next = harness.another()
    await next.start()
    await next.scheduler.whenIdle()
    const runs = await harness.runs()
    expect(runs.map((run) => [hhmm(run.scheduledFor), run.status, run.trigger])).toEqual([
      ['00:10', 'skipped', 'catchup'],
      ['00:20', 'skipped', 'catchup'],
      ['00:30', 'skipped', 'catchup'],
      ['00:40', 'skipped', 'catchup'],
      ['00:50', 'skipped', 'catchup'],
      ['01:00', 'completed', 'catchup'],
    ])
    expect(runs[0]?.skipReason).toBe(
      'missed while no scheduler was running; only the latest missed occurrence is caught up',
    )
    expect((await next.get('ten')).nextRunAt).toBe(at(70))
    expect(harness.agent.calls).toHaveLength(1)
  })

  it('catch-up window: a latest missed occurrence older than the window is skipped too (never a burst)', async () => {
    harness = await createHarness(T0)
    await harness.service.start()
    await harness.service.add({ name: 'ten', scheduleType: 'cron', schedule: '*/10 * * * *', prompt: 'x' })
    await harness.service.add({ name: 'hourly', scheduleType: 'cron', schedule: '0 * * * *', prompt: 'x' })
    await harness.service.stop()
    await harness.clock.advanceTo(at(68))
    const next = harness.another()
    await next.start()
    await next.scheduler.whenIdle()
    const runs = await harness.runs()
    const ten = runs.filter((run) => run.jobName === 'ten')
    expect(ten.every((run) => run.status === 'skipped')).toBe(true)
    expect(ten.at(-1)?.skipReason).toBe('missed by 8m, beyond the catch-up window of 5m')
    // hourly: window is half an hour, 01:00 is 8 min late → caught up
    expect(
      runs.filter((run) => run.jobName === 'hourly').map((run) => [hhmm(run.scheduledFor), run.status]),
    ).toEqual([['01:00', 'completed']])
  })

  it('catchup: none records every missed occurrence as skipped', async () => {
    harness = await createHarness(T0)
    await harness.service.start()
    await harness.service.add({
      name: 'strict',
      scheduleType: 'cron',
      schedule: '*/10 * * * *',
      prompt: 'x',
      catchup: 'none',
    })
    await harness.service.stop()
    await harness.clock.advanceTo(at(21))
    const next = harness.another()
    await next.start()
    await next.scheduler.whenIdle()
    expect((await harness.runs()).map((run) => [hhmm(run.scheduledFor), run.status, run.skipReason])).toEqual(
      [
        [
          '00:10',
          'skipped',
          'missed while no scheduler was running; only the latest missed occurrence is caught up',
        ],
        ['00:20', 'skipped', 'missed while no scheduler was running (catchup: none)'],
      ],
    )
  })

  it('every jobs survive restarts on their persisted grid; a long outage records bounded skip rows', async () => {
    harness = await createHarness(T0)
    await harness.service.start()
    await harness.service.add({ name: 'grid', scheduleType: 'every', schedule: '7m', prompt: 'x' })
    await harness.clock.advanceTo(at(15))
    await harness.service.stop()
    await harness.clock.advanceTo(at(3 * 24 * 60 + 1)) // three days later; 4319 min is on the grid, 2 min late
    const next = harness.another()
    await next.start()
    await next.scheduler.whenIdle()
    const runs = await harness.runs()
    expect(runs.slice(0, 2).map((run) => [hhmm(run.scheduledFor), run.status])).toEqual([
      ['00:07', 'completed'],
      ['00:14', 'completed'],
    ])
    const skipped = runs.filter((run) => run.status === 'skipped')
    expect(skipped.length).toBeLessThanOrEqual(52)
    expect(skipped.at(-1)?.skipReason).toMatch(/more missed occurrences were not recorded one by one/)
    const caughtUp = runs.filter((run) => run.trigger === 'catchup' && run.status === 'completed')
    expect(caughtUp).toHaveLength(1)
    // still on the 7-minute grid anchored at creation
    const caughtUpAt = caughtUp[0]?.scheduledFor ?? Number.NaN
    expect((caughtUpAt - T0) % (7 * MINUTE)).toBe(0)
    const job = await next.get('grid')
    expect((job.nextRunAt ?? Number.NaN) - caughtUpAt).toBe(7 * MINUTE)
  })

  it('an at job missed while down is caught up once within the window, then disabled', async () => {
    harness = await createHarness(T0)
    await harness.service.start()
    await harness.service.add({
      name: 'once',
      scheduleType: 'at',
      schedule: '2026-01-01T00:30:00Z',
      prompt: 'x',
    })
    await harness.service.stop()
    await harness.clock.advanceTo(at(60))
    const next = harness.another()
    await next.start()
    await next.scheduler.whenIdle()
    expect((await harness.runs()).map((run) => [hhmm(run.scheduledFor), run.status, run.trigger])).toEqual([
      ['00:30', 'completed', 'catchup'],
    ])
    expect(await next.get('once')).toMatchObject({ enabled: false, nextRunAt: null })
  })
})

describe('two schedulers on one SQLite file at once', () => {
  it('fake clock: both fire every occurrence at the same instant; each runs exactly once', async () => {
    harness = await createHarness(T0)
    const second = harness.another()
    await harness.service.start()
    await second.start()
    for (let index = 0; index < 8; index++) {
      const service = index % 2 === 0 ? harness.service : second
      await service.add({
        name: `every-${index}`,
        scheduleType: 'every',
        schedule: `${index + 1}m`,
        prompt: 'x',
        overlap: 'allow',
      })
    }
    await harness.service.add({ name: 'cron', scheduleType: 'cron', schedule: '*/2 * * * *', prompt: 'x' })
    await second.add({ name: 'at', scheduleType: 'at', schedule: '2026-01-01T00:07:30Z', prompt: 'x' })
    // both instances know every job (each loads the other's jobs on its next start)
    await harness.service.stop()
    await second.stop()
    const one = harness.another({ maxConcurrentJobs: 50 })
    const two = harness.another({ maxConcurrentJobs: 50 })
    await Promise.all([one.start(), two.start()])
    const lost: string[] = []
    for (const service of [one, two]) {
      service.on('schedule:fire', (event) => {
        if (event.outcome === 'claimed-elsewhere') lost.push(event.jobName)
      })
    }
    // A second past the last instant: the scheduler that does not rank first for an occurrence
    // looks at it a moment after it fell due (and finds it claimed).
    await harness.clock.advanceTo(at(30) + 1_000)
    await Promise.all([one.scheduler.whenIdle(), two.scheduler.whenIdle()])
    const runs = await harness.runs()
    expectEachOccurrenceOnce(runs)
    const expected =
      Array.from({ length: 8 }, (_, index) => Math.floor(30 / (index + 1))).reduce((a, b) => a + b) + 15 + 1
    expect(runs.filter((run) => run.status === 'completed')).toHaveLength(expected)
    expect(harness.agent.calls).toHaveLength(expected)
    // every occurrence was seen by both: the instance that did not claim it did nothing
    expect(lost).toHaveLength(expected)
  })

  it('real clock: two schedulers with their own connections, sub-second jobs, no duplicate and no gap', async () => {
    harness = await createHarness(Date.now(), { clock: systemClock, minIntervalMs: 100 })
    const one = harness.another({ clock: systemClock, minIntervalMs: 100, maxConcurrentJobs: 20 })
    const two = harness.another({ clock: systemClock, minIntervalMs: 100, maxConcurrentJobs: 20 })
    for (let index = 0; index < 6; index++) {
      await one.add({
        name: `fast-${index}`,
        scheduleType: 'every',
        schedule: 150 + index * 10,
        prompt: 'x',
        overlap: 'allow',
      })
    }
    await Promise.all([one.start(), two.start()])
    // Real time is the point here (real timers racing on real connections): let it run until every
    // job has fired six times and both schedulers have won occurrences, however long a loaded
    // machine takes.
    const enough = (runs: readonly CronRun[]) =>
      new Set(runs.map((run) => run.owner)).size === 2 &&
      Array.from({ length: 6 }, (_, index) => `fast-${index}`).every(
        (name) => runs.filter((run) => run.jobName === name).length >= 6,
      )
    const deadline = Date.now() + 30_000
    while (!enough(await harness.runs()) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50))
    await Promise.all([one.stop(), two.stop()])
    const runs = await harness.runs()
    expectEachOccurrenceOnce(runs)
    for (let index = 0; index < 6; index++) {
      const times = runs.filter((run) => run.jobName === `fast-${index}`).map((run) => run.scheduledFor)
      expect(times.length).toBeGreaterThanOrEqual(6)
      for (let position = 1; position < times.length; position++) {
        expect((times[position] ?? Number.NaN) - (times[position - 1] ?? Number.NaN)).toBe(150 + index * 10)
      }
    }
    for (const run of runs) {
      if (run.startedAt !== null) expect(run.startedAt).toBeGreaterThanOrEqual(run.scheduledFor)
    }
    expect(new Set(runs.map((run) => run.owner)).size).toBe(2)
    expect(harness.agent.calls).toHaveLength(runs.filter((run) => run.status === 'completed').length)
  })
})
