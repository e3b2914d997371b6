/**
 * A store that throws while a run slot is held (issue 10 §3): the slot is released on every
 * failure path, so a transient `database is locked` never blocks the job (or the cap) for good.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './__fixtures__/database.js'
import type { NewCronRun, RunInsertResult, StoreCallOptions } from './ports.js'
import { CronService } from './service.js'
import { SqliteCronStore } from './sqlite/sqlite-cron-store.js'
import { FakeClock } from './testing/fake-clock.js'
import { createDeferred, RecordingAgentRunner } from './testing/recording-runners.js'

const MINUTE = 60_000
const T0 = Date.parse('2026-01-01T00:00:00Z')

/** The real SQLite store, whose next `failures` ledger inserts fail as a busy database does. */
class LockedSqliteCronStore extends SqliteCronStore {
  failures = 0
  /** The next `versionFailures` re-checks of due jobs fail the same way. */
  versionFailures = 0

  override async jobVersions(
    ids: readonly string[],
    options?: StoreCallOptions,
  ): Promise<ReadonlyMap<string, { readonly enabled: boolean; readonly updatedAt: number }>> {
    if (this.versionFailures > 0) {
      this.versionFailures--
      throw new Error('database is locked')
    }
    return super.jobVersions(ids, options)
  }

  override async insertRuns(
    runs: readonly NewCronRun[],
    options?: StoreCallOptions,
  ): Promise<RunInsertResult> {
    if (this.failures > 0) {
      this.failures--
      throw new Error('database is locked')
    }
    return super.insertRuns(runs, options)
  }
}

let database: TestDatabase | undefined
let service: CronService | undefined

afterEach(async () => {
  await service?.stop()
  await database?.cleanup()
  service = undefined
  database = undefined
})

async function setUp(agent: RecordingAgentRunner) {
  database = await createTestDatabase()
  const store = new LockedSqliteCronStore(database.db)
  const clock = new FakeClock(T0)
  const errors: string[] = []
  service = new CronService({
    store,
    clock,
    agentRunner: agent,
    defaultTimezone: 'UTC',
    maxConcurrentJobs: 1,
    leaseMs: 3_600_000,
  })
  service.on('run:error', (event) => errors.push(event.error.message))
  await service.start()
  return { store, clock, errors, service }
}

/** At 01:00 `a-slow` runs until `gate` resolves, and `b-waits`, due too, waits for the only slot. */
async function slowAndWaiting() {
  const gate = createDeferred<string>()
  const agent = new RecordingAgentRunner((_request, index) => (index === 0 ? gate.promise : 'ok'))
  const setup = await setUp(agent)
  await setup.service.add({
    name: 'a-slow',
    scheduleType: 'cron',
    schedule: '0 * * * *',
    prompt: 'x',
    timeout: '2h',
  })
  await setup.service.add({ name: 'b-waits', scheduleType: 'cron', schedule: '0 * * * *', prompt: 'x' })
  await setup.clock.advance(60 * MINUTE)
  return { gate, ...setup }
}

const statusesOf = async (store: SqliteCronStore, name: string) =>
  (await store.listRuns({ limit: 500 }))
    .filter((run) => run.jobName === name)
    .reverse()
    .map((run) => run.status)

describe('a run slot is released when the ledger insert throws', () => {
  it('waiting path: the insert for an occurrence that waited for a slot fails; later occurrences still run', async () => {
    const { gate, store, clock, errors, service } = await slowAndWaiting()
    expect(service.scheduler.runningCount).toBe(1)
    // The claim of the waiting occurrence fails however often it is tried.
    store.failures = 100
    gate.resolve('done')
    await clock.advance(MINUTE)
    await service.scheduler.whenIdle()
    expect(errors.filter((message) => message === 'database is locked').length).toBeGreaterThan(0)
    expect(service.scheduler.runningCount).toBe(0)
    store.failures = 0
    await clock.advance(3 * 60 * MINUTE) // 02:00, 03:00, 04:00
    await service.scheduler.whenIdle()
    expect(await statusesOf(store, 'a-slow')).toEqual(['completed', 'completed', 'completed', 'completed'])
    expect((await statusesOf(store, 'b-waits')).slice(-3)).toEqual(['completed', 'completed', 'completed'])
  })

  it('waiting path, one failure: the claim is retried and the waiting occurrence runs', async () => {
    const { gate, store, clock, service } = await slowAndWaiting()
    store.failures = 1
    gate.resolve('done')
    await clock.advance(MINUTE)
    await service.scheduler.whenIdle()
    expect(await statusesOf(store, 'b-waits')).toEqual(['completed'])
    expect(service.scheduler.runningCount).toBe(0)
    await clock.advance(60 * MINUTE)
    await service.scheduler.whenIdle()
    expect(await statusesOf(store, 'b-waits')).toEqual(['completed', 'completed'])
  })

  it('manual claim: a trigger whose insert fails rejects, and the slot is free for the schedule', async () => {
    const agent = new RecordingAgentRunner()
    const { store, clock, service } = await setUp(agent)
    const { job } = await service.add({
      name: 'hourly',
      scheduleType: 'cron',
      schedule: '0 * * * *',
      prompt: 'x',
    })
    store.failures = 1
    await expect(service.trigger(job.id)).rejects.toThrow('database is locked')
    expect(service.scheduler.runningCount).toBe(0)
    await clock.advance(3 * 60 * MINUTE)
    await service.scheduler.whenIdle()
    expect(await statusesOf(store, 'hourly')).toEqual(['completed', 'completed', 'completed'])
  })
})

describe('a failing ledger insert and a job changed by another process', () => {
  it('the changed job is re-armed from its stored definition even when the batch insert fails', async () => {
    const agent = new RecordingAgentRunner()
    const { store, clock, errors, service } = await setUp(agent)
    await service.add({ name: 'a-fires', scheduleType: 'cron', schedule: '0 * * * *', prompt: 'x' })
    await service.add({ name: 'b-changed', scheduleType: 'cron', schedule: '0 * * * *', prompt: 'x' })
    await clock.advance(50 * MINUTE)
    // Another process, on its own connection, moves b-changed to every 20 minutes (next fire 01:00).
    const other = new CronService({
      store: new SqliteCronStore((database as TestDatabase).connect()),
      clock,
      defaultTimezone: 'UTC',
    })
    await other.update('b-changed', { schedule: '*/20 * * * *' })
    // 01:00: both fall due; b-changed is re-read, a-fires' claim fails on every try.
    store.failures = 3
    await clock.advance(10 * MINUTE + 1000)
    await service.scheduler.whenIdle()
    expect(errors.filter((message) => message === 'database is locked')).toHaveLength(3)
    await clock.advance(60 * MINUTE) // to 02:00:01
    await service.scheduler.whenIdle()
    const runsOf = async (name: string) =>
      (await store.listRuns({ limit: 500 }))
        .filter((run) => run.jobName === name)
        .reverse()
        .map((run) => [new Date(run.scheduledFor).toISOString().slice(11, 16), run.status])
    expect(await runsOf('b-changed')).toEqual([
      ['01:00', 'completed'],
      ['01:20', 'completed'],
      ['01:40', 'completed'],
      ['02:00', 'completed'],
    ])
    expect(await runsOf('a-fires')).toEqual([['02:00', 'completed']])
  })
})

describe("a failed look at a due job keeps the schedule's grid (issue 21, an outside probe)", () => {
  it('an interval job whose re-check failed runs on its grid after the retry, not a second later ever after', async () => {
    // After a database stall each server re-armed the job `now + 1s` as a new occurrence: every
    // server that saw the failure got a grid of its own, and the job ran once per grid.
    const agent = new RecordingAgentRunner()
    const { store, clock, service } = await setUp(agent)
    const { job } = await service.add({ name: 'tick', scheduleType: 'every', schedule: '10m', prompt: 'x' })
    const first = job.nextRunAt as number
    store.versionFailures = 2
    await clock.advance(60 * MINUTE)
    await service.scheduler.whenIdle()
    const occurrences = (await store.listRuns({ limit: 50 }))
      .filter((run) => run.jobName === 'tick')
      .map((run) => run.scheduledFor)
      .sort((a, b) => a - b)
    expect(occurrences.length).toBeGreaterThanOrEqual(5)
    for (const scheduledFor of occurrences) expect((scheduledFor - first) % (10 * MINUTE)).toBe(0)
    expect((await service.get('tick')).nextRunAt).toBe(first + 60 * MINUTE)
  })
})

describe('a store that keeps failing', () => {
  it('logs one cron scheduler error line a minute, counting the rest; every failure is still run:error', async () => {
    database = await createTestDatabase()
    const store = new LockedSqliteCronStore(database.db)
    const clock = new FakeClock(T0)
    const lines: Record<string, unknown>[] = []
    const errors: string[] = []
    service = new CronService({
      store,
      clock,
      agentRunner: new RecordingAgentRunner(),
      defaultTimezone: 'UTC',
      logger: {
        debug() {},
        info() {},
        warn() {},
        error(message, fields) {
          if (message === 'cron scheduler error') lines.push({ ...fields })
        },
      },
    })
    service.on('run:error', (event) => errors.push(event.error.message))
    await service.start()
    for (let index = 0; index < 20; index++)
      await service.add({ name: `job-${index}`, scheduleType: 'every', schedule: '1m', prompt: 'x' })
    // Every claim fails for five minutes: 20 jobs a minute.
    store.failures = 10_000
    for (let second = 0; second < 5 * 60; second++) await clock.advance(1000)
    // The store works again: whatever was retrying settles.
    store.failures = 0
    await clock.advance(MINUTE)
    await service.scheduler.whenIdle()
    expect(errors.length).toBeGreaterThanOrEqual(100)
    expect(lines.length).toBeGreaterThan(0)
    expect(lines.length).toBeLessThanOrEqual(5)
    expect(lines[0]).toMatchObject({ error: 'database is locked' })
    // The later lines say how many errors were not logged since the one before; none is lost.
    const counted = lines.reduce((sum, line) => sum + 1 + ((line.moreSinceLastLine as number) ?? 0), 0)
    expect(counted).toBeLessThanOrEqual(errors.length)
    expect(counted).toBeGreaterThan(errors.length - 40)
  })
})
