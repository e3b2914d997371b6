/**
 * Every occurrence recorded `skipped` is reported as a `schedule:fire` with outcome `skipped` and its
 * reason — also those reported `queued` first and skipped later (paused, stopped): a host counting
 * the events (apps/server's `lango_cron_skipped_total`) agrees with the ledger.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { type CronRun, type CronSchedulerEvents, CronService } from './index.js'
import { createDeferred, FakeClock, MemoryCronStore, RecordingShellRunner } from './testing/index.js'

const START = Date.parse('2026-01-01T00:00:00Z')
let service: CronService | undefined

afterEach(async () => {
  await service?.stop()
  service = undefined
})

type Fire = CronSchedulerEvents['schedule:fire']

async function twoJobsOneSlot() {
  const clock = new FakeClock(START)
  const store = new MemoryCronStore()
  const release = createDeferred<void>()
  const shell = new RecordingShellRunner(async (request, _index, options) => {
    if (request.jobName === 'long')
      await Promise.race([
        release.promise,
        new Promise((resolve) => options.signal.addEventListener('abort', resolve, { once: true })),
      ])
    return { exitCode: 0, stdout: 'ok', stderr: '' }
  })
  service = new CronService({ store, clock, shellRunner: shell, maxConcurrentJobs: 1 })
  const fires: Fire[] = []
  service.on('schedule:fire', (fire) => fires.push(fire))
  await service.start()
  await service.add({ name: 'long', scheduleType: 'cron', schedule: '* * * * *', command: 'sleep' })
  await service.add({ name: 'waits', scheduleType: 'cron', schedule: '* * * * *', command: 'true' })
  await clock.advance(60_000)
  // `long` holds the one slot; `waits` is queued for it.
  expect(fires.map((fire) => [fire.jobName, fire.outcome])).toEqual(
    expect.arrayContaining([
      ['long', 'started'],
      ['waits', 'queued'],
    ]),
  )
  return { store, release, fires, service }
}

describe('skipped occurrences are reported', () => {
  it('an occurrence queued for a slot and dropped when its job is paused: skipped, with the reason, once', async () => {
    const { store, release, fires, service: cron } = await twoJobsOneSlot()
    await cron.pause('waits')
    const skipped = fires.filter((fire) => fire.outcome === 'skipped')
    expect(skipped).toEqual([
      expect.objectContaining({
        jobName: 'waits',
        outcome: 'skipped',
        reason: 'skipped: the job was paused before the run could start',
      }),
    ])
    const rows = await store.listRuns({ status: 'skipped' })
    expect(rows.map((row) => row.id)).toEqual(skipped.map((fire) => fire.runId))
    release.resolve()
  })

  it('an occurrence still waiting when the scheduler stops: skipped, with the reason', async () => {
    const { store, fires, service: cron } = await twoJobsOneSlot()
    await cron.stop()
    service = undefined
    const rows = await store.listRuns({ status: 'skipped' })
    const skipped = fires.filter((fire) => fire.outcome === 'skipped')
    expect(skipped.map((fire) => fire.runId).sort()).toEqual(rows.map((row) => row.id).sort())
    expect(skipped).toEqual([
      expect.objectContaining({
        jobName: 'waits',
        reason: 'skipped: the scheduler stopped before a run slot was free',
      }),
    ])
  })
})

describe('runs of a dead scheduler', () => {
  it('are marked interrupted by the scheduler that finds them, and reported as run:end once', async () => {
    const store = new MemoryCronStore()
    const leaseMs = 3_000
    // A scheduler that freezes mid-run: its clock (and so every timer of it) stops, its row stays
    // `running` and its heartbeat ages.
    const frozenClock = new FakeClock(START)
    const release = createDeferred<void>()
    const dying = new CronService({
      store,
      clock: frozenClock,
      leaseMs,
      ownerId: 'dying',
      shellRunner: new RecordingShellRunner(async () => {
        await release.promise
        return { exitCode: 0, stdout: '', stderr: '' }
      }),
    })
    await dying.start()
    await dying.add({ name: 'slow', scheduleType: 'cron', schedule: '* * * * *', command: 'sleep' })
    await frozenClock.advance(60_000)
    expect((await store.listRuns({ status: 'running' })).map((run) => run.owner)).toEqual(['dying'])
    const reportedByDying: CronRun[] = []
    dying.on('run:end', ({ run }) => reportedByDying.push(run))

    const clock = new FakeClock(START + 60_000)
    const ended: CronRun[] = []
    service = new CronService({ store, clock, leaseMs, ownerId: 'survivor' })
    service.on('run:end', ({ run }) => ended.push(run))
    await service.start()
    expect(ended).toEqual([])
    // Two leases without a heartbeat from `dying`: a maintenance round of the survivor marks its run.
    for (let step = 0; step < 4; step++) await clock.advance(leaseMs)
    await service.scheduler.whenIdle()
    expect(ended).toEqual([
      expect.objectContaining({ jobName: 'slow', status: 'interrupted', owner: 'dying' }),
    ])
    expect(ended[0]?.error).toMatch(/^interrupted: /)
    await clock.advance(3 * leaseMs)
    expect(ended).toHaveLength(1)
    expect(reportedByDying).toEqual([])
    release.resolve()
    await dying.stop()
  })
})
