/**
 * Several schedulers on one database (one SQLite file, a connection each, one FakeClock): jobs
 * changed through one are picked up by the others, overlap is checked across instances in the
 * claim itself, start-up plans due jobs as late fires while another scheduler is alive, and every
 * occurrence has exactly one ledger row and runs exactly once.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import { CronError } from './errors.js'
import type { CronRun } from './model.js'
import type { Clock, LogFields, Logger, NewCronRun, StoreCallOptions } from './ports.js'
import type { CronSchedulerEvents } from './scheduler-events.js'
import { CronService } from './service.js'
import { SqliteCronStore } from './sqlite/sqlite-cron-store.js'
import { MemoryCronStore } from './testing/memory-cron-store.js'
import { createDeferred, RecordingAgentRunner, RecordingShellRunner } from './testing/recording-runners.js'
import { createTestJob } from './testing/test-job.js'

const SECOND = 1000
const MINUTE = 60_000
const T0 = Date.parse('2026-01-01T00:00:00Z')
const at = (minutes: number) => T0 + minutes * MINUTE
const hhmm = (time: number) => new Date(time).toISOString().slice(11, 16)

let harness: Harness | undefined

afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
})

/** A harness whose schedulers sync every 2 s (the default), as servers sharing a database do. */
async function cluster(options: Parameters<typeof createHarness>[1] = {}): Promise<Harness> {
  harness = await createHarness(T0, { syncIntervalMs: 2000, ...options })
  return harness
}

async function idle(...services: CronService[]): Promise<void> {
  for (const service of services) await service.scheduler.whenIdle()
}

function expectEachOccurrenceOnce(runs: readonly CronRun[]): void {
  const keys = runs.map((run) => `${run.jobId}@${run.scheduledFor}`)
  expect(new Set(keys).size).toBe(keys.length)
}

function recordFires(service: CronService): CronSchedulerEvents['schedule:fire'][] {
  const fires: CronSchedulerEvents['schedule:fire'][] = []
  service.on('schedule:fire', (fire) => fires.push(fire))
  return fires
}

describe('two schedulers, one SQLite file: 20 every-minute jobs for 30 minutes', () => {
  it('every occurrence has exactly one ledger row and ran exactly once; jobs created through either fire after sync', async () => {
    const { clock, store } = await cluster()
    const shellOne = new RecordingShellRunner()
    const shellTwo = new RecordingShellRunner()
    const a = harness?.another({ shellRunner: shellOne }) as CronService
    const b = harness?.another({ shellRunner: shellTwo }) as CronService
    await a.start()
    await b.start()
    // Ten jobs through each scheduler, while both run: the other knows them only through its sync.
    for (let index = 0; index < 20; index++) {
      await (index % 2 === 0 ? a : b).add({
        name: `job-${String(index).padStart(2, '0')}`,
        kind: 'shell',
        scheduleType: 'cron',
        schedule: '* * * * *',
        command: `echo ${index}`,
      })
    }
    expect(a.scheduler.armedCount).toBe(10)
    expect(b.scheduler.armedCount).toBe(10)
    await clock.advance(2 * SECOND)
    expect(a.scheduler.armedCount).toBe(20)
    expect(b.scheduler.armedCount).toBe(20)

    await clock.advanceTo(at(30))
    await idle(a, b)
    await a.scheduler.flushPendingWrites()
    await b.scheduler.flushPendingWrites()

    const runs: CronRun[] = []
    for (const job of await store.listJobs())
      runs.push(...(await store.listRuns({ jobId: job.id, limit: 500 })))
    expect(runs).toHaveLength(20 * 30)
    expectEachOccurrenceOnce(runs)
    expect(new Set(runs.map((run) => run.status))).toEqual(new Set(['completed']))
    expect(new Set(runs.map((run) => run.trigger))).toEqual(new Set(['schedule']))
    for (let minute = 1; minute <= 30; minute++)
      expect(runs.filter((run) => run.scheduledFor === at(minute))).toHaveLength(20)
    // Each ran exactly once: one shell call per row, on the instance that claimed it.
    const calls = [...shellOne.calls, ...shellTwo.calls]
    expect(calls).toHaveLength(20 * 30)
    expect(new Set(calls.map((call) => call.runId))).toEqual(new Set(runs.map((run) => run.id)))
    const owners = new Map(runs.map((run) => [run.id, run.owner]))
    for (const call of shellOne.calls) expect(owners.get(call.runId)).toBe(a.scheduler.ownerId)
    for (const call of shellTwo.calls) expect(owners.get(call.runId)).toBe(b.scheduler.ownerId)
    // Each job's run times, as the last write left them, point at 00:30 and 00:31 (never back).
    for (const job of await store.listJobs()) {
      expect([hhmm(job.lastRunAt ?? 0), hhmm(job.nextRunAt ?? 0)]).toEqual(['00:30', '00:31'])
    }
  })
})

describe('job sync', () => {
  it('arms a job created through another scheduler within syncIntervalMs, and fires it', async () => {
    const { service: a, clock, agent } = await cluster()
    const b = harness?.another() as CronService
    await a.start()
    await b.start()
    await b.add({ name: 'made-on-b', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x' })
    expect(a.scheduler.armedCount).toBe(0)
    await clock.advance(2 * SECOND)
    expect(a.scheduler.armedCount).toBe(1)
    // B stops: A alone fires the job.
    await b.stop()
    await clock.advanceTo(at(5))
    await idle(a)
    const runs = await harness?.runs()
    expect(runs?.map((run) => [hhmm(run.scheduledFor), run.status, run.owner])).toEqual([
      ['00:05', 'completed', a.scheduler.ownerId],
    ])
    expect(agent.calls).toHaveLength(1)
  })

  it('reads many changed jobs page by page, yielding between pages, and stops cleanly', async () => {
    const { service: a, clock } = await cluster()
    const b = harness?.another() as CronService
    await a.start()
    await b.start()
    for (let index = 0; index < 250; index++) {
      await b.add({ name: `bulk-${index}`, scheduleType: 'cron', schedule: '0 * * * *', prompt: 'x' })
    }
    await clock.advance(2 * SECOND)
    expect(a.scheduler.armedCount).toBe(250)
    // The next reads find the same 250 jobs (inside the look-back), armed in their version: no change.
    await clock.advance(2 * SECOND)
    expect(a.scheduler.armedCount).toBe(250)
    await a.stop()
    expect(clock.pendingTimers).toBeGreaterThan(0) // b's timers; a left none behind
    await b.stop()
    expect(clock.pendingTimers).toBe(0)
  })

  it('drops a job paused through another scheduler, cancelling its run here, and arms it again on resume', async () => {
    const { clock } = await cluster()
    const gate = createDeferred<string>()
    const slow = new RecordingAgentRunner(() => gate.promise)
    const b = harness?.another({ agentRunner: new RecordingAgentRunner() }) as CronService
    const runner = harness?.another({ agentRunner: slow }) as CronService
    await runner.start()
    const { job } = await runner.add({
      name: 'paused-elsewhere',
      scheduleType: 'cron',
      schedule: '*/5 * * * *',
      prompt: 'x',
    })
    await clock.advanceTo(at(5))
    expect(runner.scheduler.runningCount).toBe(1)
    await b.start()
    await b.pause(job.id)
    await clock.advance(2 * SECOND)
    await idle(runner)
    expect(runner.scheduler.armedCount).toBe(0)
    expect(slow.signals[0]?.aborted).toBe(true)
    const runs = await harness?.runs()
    expect(runs?.map((run) => [hhmm(run.scheduledFor), run.status])).toEqual([['00:05', 'cancelled']])
    expect(runs?.[0]?.error).toMatch(/paused/)

    await b.resume(job.id)
    await clock.advance(2 * SECOND)
    expect(runner.scheduler.armedCount).toBe(1)
    gate.resolve('done')
  })

  it('re-arms a job whose schedule another scheduler changed, and never fires its old schedule', async () => {
    const { service: a, clock, agent } = await cluster()
    const b = harness?.another() as CronService
    await a.start()
    await b.start()
    await a.add({ name: 'moved', scheduleType: 'cron', schedule: '0 * * * *', prompt: 'x' })
    await clock.advance(2 * SECOND)
    await b.update('moved', { schedule: '*/10 * * * *' })
    await b.stop()
    await clock.advance(2 * SECOND)
    await clock.advanceTo(at(60))
    await idle(a)
    const runs = await harness?.runs()
    expect(runs?.map((run) => hhmm(run.scheduledFor))).toEqual([
      '00:10',
      '00:20',
      '00:30',
      '00:40',
      '00:50',
      '01:00',
    ])
    expect(new Set(runs?.map((run) => run.owner))).toEqual(new Set([a.scheduler.ownerId]))
    expect(agent.calls).toHaveLength(6)
  })

  it('leaves a job armed in the same version alone, and looks back a few seconds for a clock behind', async () => {
    const debug: { message: string; fields: LogFields | undefined }[] = []
    const logger: Logger = {
      debug: (message, fields) => debug.push({ message, fields }),
      info: () => {},
      warn: () => {},
      error: () => {},
    }
    const { service: a, clock } = await cluster({ logger })
    // B's clock is 4 s behind A's: its updatedAt stamps fall before A's last read.
    const behind: Clock = {
      now: () => new Date(clock.now().getTime() - 4 * SECOND),
      setTimeout: (callback, ms) => clock.setTimeout(callback, ms),
      clearTimeout: (handle) => clock.clearTimeout(handle),
    }
    const b = harness?.another({ clock: behind }) as CronService
    await a.start()
    await b.start()
    const synced = () => debug.filter((line) => line.message === 'cron job synced from the store').length
    await a.add({ name: 'mine', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x' })
    await clock.advance(10 * SECOND)
    // A made it (armed in that version); B synced it once, and not again while its updatedAt stands.
    expect(synced()).toBe(1)
    await clock.advance(SECOND)
    await b.add({ name: 'theirs', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x' })
    await clock.advance(2 * SECOND)
    expect(a.scheduler.armedCount).toBe(2)
    expect(b.scheduler.armedCount).toBe(2)
    expect(synced()).toBe(2)
    await clock.advance(30 * SECOND)
    expect(synced()).toBe(2)
  })

  it('does not arm again a one-time job that fired here while its disable waits to be written', async () => {
    const { service, clock } = await cluster({ scheduleWriteDelayMs: 10_000 })
    await service.start()
    await clock.advanceTo(at(1) - 2 * SECOND)
    await service.add({
      name: 'once',
      scheduleType: 'at',
      schedule: new Date(at(1)).toISOString(),
      prompt: 'x',
    })
    const fires = recordFires(service)
    await clock.advanceTo(at(1))
    await idle(service)
    expect(service.scheduler.armedCount).toBe(0)
    // Syncs that still read the job (created 2 s before it fired), enabled until the write lands.
    await clock.advance(6 * SECOND)
    expect(service.scheduler.armedCount).toBe(0)
    await clock.advance(10 * SECOND)
    await idle(service)
    expect(fires.map((fire) => fire.outcome)).toEqual(['started'])
    expect((await service.get('once')).enabled).toBe(false)
  })

  it('checks syncIntervalMs and autoPrune, naming the option', () => {
    for (const syncIntervalMs of [0, -1, 1.5, Number.NaN, 2 ** 31]) {
      const error = (() => {
        try {
          return new CronService({ store: new MemoryCronStore(), syncIntervalMs })
        } catch (caught) {
          return caught
        }
      })()
      expect(CronError.is(error) && [error.code, error.data?.field]).toEqual([
        'CRON_INVALID_INPUT',
        'syncIntervalMs',
      ])
    }
    const error = (() => {
      try {
        return new CronService({ store: new MemoryCronStore(), autoPrune: 'no' as unknown as boolean })
      } catch (caught) {
        return caught
      }
    })()
    expect(CronError.is(error) && [error.code, error.data?.field]).toEqual([
      'CRON_INVALID_INPUT',
      'autoPrune',
    ])
  })
})

describe('overlap across instances', () => {
  /** A scheduler alone on the file, beside a `running` row of `owner-elsewhere`, alive. */
  async function besideRunningElsewhere(overlap: 'skip' | 'queue_one' | 'allow') {
    const { service, clock, store, agent } = await cluster()
    await store.heartbeat('owner-elsewhere', T0)
    await service.start()
    const { job } = await service.add({
      name: 'busy',
      scheduleType: 'cron',
      schedule: '*/5 * * * *',
      prompt: 'x',
      overlap,
    })
    await store.insertRuns([
      {
        id: 'elsewhere',
        jobId: job.id,
        jobName: job.name,
        trigger: 'manual',
        status: 'running',
        scheduledFor: T0,
        startedAt: T0,
        completedAt: null,
        skipReason: null,
        owner: 'owner-elsewhere',
      },
    ])
    const fires = recordFires(service)
    return { service, clock, store, agent, job, fires }
  }

  it('skip: the occurrence is claimed but recorded skipped, saying the job runs on another instance', async () => {
    const { service, clock, agent, fires, store, job } = await besideRunningElsewhere('skip')
    await clock.advanceTo(at(5))
    await idle(service)
    await service.scheduler.flushPendingWrites()
    expect(agent.calls).toHaveLength(0)
    const row = (await harness?.runs())?.find((run) => run.scheduledFor === at(5))
    expect(row).toMatchObject({
      status: 'skipped',
      owner: 'owner-0',
      startedAt: null,
      completedAt: at(5),
      skipReason: 'overlap: the previous occurrence is still running on another instance (overlap: skip)',
    })
    expect(fires).toEqual([
      expect.objectContaining({
        outcome: 'skipped',
        runId: row?.id,
        reason: row?.skipReason,
        scheduledFor: at(5),
      }),
    ])
    expect(service.scheduler.runningCount).toBe(0)
    // The instance that recorded the skip moves the job on.
    expect(await store.getJob(job.id)).toMatchObject({ lastRunAt: at(5), nextRunAt: at(10) })
    // Once the other run ended, the next occurrence runs here.
    await store.completeRun('elsewhere', {
      status: 'completed',
      completedAt: at(6),
      durationMs: 1,
      result: 'ok',
      error: null,
      inputTokens: null,
      outputTokens: null,
    })
    await clock.advanceTo(at(10))
    await idle(service)
    expect(agent.calls).toHaveLength(1)
  })

  it('queue_one degrades to skip across instances, with a reason that says so', async () => {
    const { service, clock, agent } = await besideRunningElsewhere('queue_one')
    await clock.advanceTo(at(5))
    await idle(service)
    expect(agent.calls).toHaveLength(0)
    const row = (await harness?.runs())?.find((run) => run.scheduledFor === at(5))
    expect(row?.status).toBe('skipped')
    expect(row?.skipReason).toMatch(/still running on another instance.*queue_one/)
  })

  it('allow: runs beside the other instance', async () => {
    const { service, clock, agent } = await besideRunningElsewhere('allow')
    await clock.advanceTo(at(5))
    await idle(service)
    expect(agent.calls).toHaveLength(1)
  })

  it('a manual trigger while the job runs on another instance is recorded skipped and says so', async () => {
    const { service, agent } = await besideRunningElsewhere('skip')
    const result = await service.trigger('busy')
    expect(result).toMatchObject({
      status: 'skipped',
      reason: 'overlap: the previous occurrence is still running on another instance (overlap: skip)',
    })
    expect((await harness?.runs())?.find((run) => run.id === result.runId)).toMatchObject({
      status: 'skipped',
      trigger: 'manual',
    })
    expect(service.scheduler.runningCount).toBe(0)
    expect(agent.calls).toHaveLength(0)
  })

  it('a job running on one scheduler makes the other record its occurrence skipped, and start the next', async () => {
    const { clock } = await cluster()
    const gate = createDeferred<string>()
    const slow = new RecordingAgentRunner(() => gate.promise)
    const quick = new RecordingAgentRunner()
    // `one` never syncs: only `two` has the job armed, so the claim's own check is all that stops it.
    const one = harness?.another({ agentRunner: slow, syncIntervalMs: 3_600_000 }) as CronService
    const two = harness?.another({ agentRunner: quick }) as CronService
    await one.start()
    await two.start()
    await two.add({ name: 'shared', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x' })
    const fires = recordFires(two)
    await clock.advanceTo(at(1))
    expect((await one.trigger('shared')).status).toBe('started')
    await clock.advanceTo(at(5))
    await idle(two)
    expect(quick.calls).toHaveLength(0)
    expect(fires.map((fire) => [hhmm(fire.scheduledFor), fire.outcome, fire.reason])).toEqual([
      [
        '00:05',
        'skipped',
        'overlap: the previous occurrence is still running on another instance (overlap: skip)',
      ],
    ])
    gate.resolve('done')
    await idle(one)
    // A second past 00:10: `two` leaves the occurrence a moment to `one` if `one` ranks first for it.
    await clock.advanceTo(at(10) + SECOND)
    await idle(two)
    expect(quick.calls).toHaveLength(1)
    const runs = (await harness?.runs()) ?? []
    expect(runs.map((run) => [hhmm(run.scheduledFor), run.trigger, run.status, run.owner])).toEqual([
      ['00:01', 'manual', 'completed', one.scheduler.ownerId],
      ['00:05', 'schedule', 'skipped', two.scheduler.ownerId],
      ['00:10', 'schedule', 'completed', two.scheduler.ownerId],
    ])
  })

  it('two schedulers, a run that outlasts its period: one running row at a time, one row per occurrence', async () => {
    const { clock } = await cluster()
    const gate = createDeferred<string>()
    const first = new RecordingAgentRunner((_request, index) => (index === 0 ? gate.promise : 'ok'))
    const second = new RecordingAgentRunner((_request, index) => (index === 0 ? gate.promise : 'ok'))
    const one = harness?.another({ agentRunner: first }) as CronService
    const two = harness?.another({ agentRunner: second }) as CronService
    await one.start()
    await two.start()
    await one.add({ name: 'slow', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x', timeout: '1h' })
    await clock.advance(2 * SECOND)
    let mostRunning = 0
    for (let minute = 1; minute <= 20; minute++) {
      await clock.advanceTo(at(minute))
      const running = (await harness?.runs())?.filter((run) => run.status === 'running').length ?? 0
      mostRunning = Math.max(mostRunning, running)
    }
    expect(mostRunning).toBe(1)
    expect(first.calls.length + second.calls.length).toBe(1)
    gate.resolve('done')
    await clock.advanceTo(at(25))
    await idle(one, two)
    const runs = (await harness?.runs()) ?? []
    expectEachOccurrenceOnce(runs)
    expect(runs.map((run) => [hhmm(run.scheduledFor), run.status])).toEqual([
      ['00:05', 'completed'],
      ['00:10', 'skipped'],
      ['00:15', 'skipped'],
      ['00:20', 'skipped'],
      ['00:25', 'completed'],
    ])
    expect(first.calls.length + second.calls.length).toBe(2)
  })
})

describe('start-up while another scheduler is alive', () => {
  /** A job due 30 s ago that no running scheduler knows (written straight into the store). */
  async function dueJob(target: Harness) {
    const job = createTestJob({
      name: 'due',
      schedule: '*/5 * * * *',
      catchup: 'none',
      nextRunAt: at(5),
      createdAt: T0,
      updatedAt: T0,
    })
    await target.store.insertJob(job)
    await target.clock.advanceTo(at(5) + 30 * SECOND)
    return job
  }

  it('plans due jobs as a late fire (trigger schedule), not as catch-up after downtime', async () => {
    const target = await cluster({ syncIntervalMs: 3_600_000 })
    await target.service.start() // alive, heartbeating; it read no jobs at its start
    await dueJob(target)
    const next = target.another()
    await next.start()
    await idle(next)
    expect(
      (await target.runs()).map((run) => [hhmm(run.scheduledFor), run.status, run.trigger, run.owner]),
    ).toEqual([['00:05', 'completed', 'schedule', 'owner-1']])
  })

  it('alone (the other stopped, or its lease expired), it is catch-up: catchup none skips the missed occurrence', async () => {
    const target = await cluster({ syncIntervalMs: 3_600_000, leaseMs: 60_000 })
    await target.store.heartbeat('owner-dead', T0)
    await target.service.start()
    await target.service.stop()
    await dueJob(target) // owner-dead last heartbeated 5.5 minutes ago, beyond its 60 s lease
    const next = target.another()
    await next.start()
    await idle(next)
    expect((await target.runs()).map((run) => [hhmm(run.scheduledFor), run.status, run.skipReason])).toEqual([
      ['00:05', 'skipped', 'missed while no scheduler was running (catchup: none)'],
    ])
  })
})

describe('autoPrune', () => {
  it('off: maintenance never prunes; pruneHistory() does, when the host calls it', async () => {
    const target = await cluster({ leaseMs: 6 * 3_600_000, syncIntervalMs: 3_600_000, autoPrune: false })
    await target.service.start()
    await target.service.add({ name: 'daily', scheduleType: 'cron', schedule: '0 0 * * *', prompt: 'x' })
    await target.clock.advance(40 * 24 * 60 * MINUTE)
    await idle(target.service)
    expect(await target.service.history({ job: 'daily', limit: 200 })).toHaveLength(40)
    // Runs of days 1 to 9 are older than 30 days.
    expect(await target.service.scheduler.pruneHistory()).toBe(9)
    expect(await target.service.history({ job: 'daily', limit: 200 })).toHaveLength(31)
  })
})

describe('a burst due at one instant on three schedulers (issue 21)', () => {
  /** A scheduler's store that counts the `running` rows it is asked to insert: its claims. */
  class CountingStore extends SqliteCronStore {
    claims = 0
    override async insertRuns(runs: readonly NewCronRun[], options?: StoreCallOptions) {
      this.claims += runs.filter((run) => run.status === 'running').length
      return super.insertRuns(runs, options)
    }
  }

  async function threeSchedulers(extra: Parameters<Harness['another']>[0][] = [{}, {}, {}]) {
    const { clock, database } = await cluster()
    const stores = extra.map(() => new CountingStore(database.connect()))
    const services = stores.map((store, index) =>
      harness?.another({ store, maxConcurrentJobs: 4, ...extra[index] }),
    ) as CronService[]
    for (const service of services) await service.start()
    // A maintenance round: the first started learns of the two others.
    await clock.advance(2 * SECOND)
    return { clock, stores, services }
  }

  const burst = async (through: CronService, count: number) => {
    for (let index = 0; index < count; index++) {
      await through.add({
        name: `burst-${String(index).padStart(2, '0')}`,
        kind: 'shell',
        scheduleType: 'at',
        schedule: '2026-01-01T00:10:00Z',
        command: `echo ${index}`,
      })
    }
  }

  it('each occurrence runs once, the runs spread over the three, and it is claimed about once, not once per scheduler', async () => {
    const { clock, stores, services } = await threeSchedulers()
    const [one, two, three] = services as [CronService, CronService, CronService]
    await burst(one, 60)
    await clock.advance(2 * SECOND) // every scheduler has synced the jobs
    await clock.advanceTo(at(10) + SECOND)
    await idle(one, two, three)
    const runs = (await harness?.runs()) ?? []
    expectEachOccurrenceOnce(runs)
    expect(runs.filter((run) => run.status === 'completed')).toHaveLength(60)
    const owners = new Map<string, number>()
    for (const run of runs) owners.set(run.owner ?? '', (owners.get(run.owner ?? '') ?? 0) + 1)
    expect(owners.size).toBe(3)
    // Each scheduler tried the ones it ranks first for, and the others only when still unclaimed:
    // not every scheduler every occurrence (180 claims).
    const claims = stores.reduce((sum, store) => sum + store.claims, 0)
    expect(claims).toBeLessThanOrEqual(75)
    // Whoever took each occurrence wrote its job's end: every one-time job is done.
    for (const service of services) await service.scheduler.flushPendingWrites()
    const jobs = await (stores[0] as CountingStore).listJobs({ limit: 500 })
    expect(jobs.filter((job) => !job.enabled && job.pauseReason?.startsWith('done:'))).toHaveLength(60)
  })

  it('an occurrence whose first taker does not run it is run by another a moment later', async () => {
    // `one` never syncs: it does not know the jobs added through `two`, yet ranks first for some.
    const { clock, services } = await threeSchedulers([{ syncIntervalMs: 3_600_000 }, {}, {}])
    const [one, two, three] = services as [CronService, CronService, CronService]
    await burst(two, 30)
    await clock.advance(2 * SECOND)
    const fires = recordFires(two)
    await clock.advanceTo(at(10))
    await idle(one, two, three)
    // At the instant, only the occurrences `two` ranks first for have started on `two`.
    const firstTaken = fires.filter((fire) => fire.outcome === 'started').length
    expect(firstTaken).toBeLessThan(30)
    await clock.advanceTo(at(10) + SECOND)
    await idle(one, two, three)
    const runs = (await harness?.runs()) ?? []
    expectEachOccurrenceOnce(runs)
    expect(runs.filter((run) => run.status === 'completed')).toHaveLength(30)
    expect(runs.some((run) => run.owner === one.scheduler.ownerId)).toBe(false)
  })

  it('a deferred occurrence whose job was paused meanwhile is not run when it is looked at again', async () => {
    const { clock, services, stores } = await threeSchedulers([{ syncIntervalMs: 3_600_000 }, {}, {}])
    const [one, two, three] = services as [CronService, CronService, CronService]
    await three.stop()
    await clock.advance(2 * SECOND)
    await burst(two, 30)
    await clock.advance(2 * SECOND)
    await clock.advanceTo(at(10))
    await idle(one, two)
    const startedAtOnce = (await harness?.runs())?.length ?? 0
    expect(startedAtOnce).toBeLessThan(30)
    // Paused through another connection before `two` looks at the occurrences it left to `one`.
    for (const job of await (stores[0] as CountingStore).listJobs({ limit: 500 }))
      await (stores[0] as CountingStore).updateJob(job.id, { enabled: false, pauseReason: 'paused' })
    await clock.advanceTo(at(10) + SECOND)
    await idle(one, two)
    expect((await harness?.runs())?.length).toBe(startedAtOnce)
  })
})
