/**
 * A run another scheduler marked `interrupted` while this one was stalled (issue 21; an outside
 * probe SIGSTOPped a server past two leases): once this scheduler runs again it stops its copy,
 * which would otherwise go on beside the occurrence the other scheduler runs next, and the row
 * keeps `interrupted`. A stall alone, with nothing taken over, stops nothing.
 */
import { afterEach, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './__fixtures__/database.js'
import { CronService } from './service.js'
import { SqliteCronStore } from './sqlite/sqlite-cron-store.js'
import { FakeClock } from './testing/fake-clock.js'
import { RecordingAgentRunner } from './testing/recording-runners.js'

const LEASE = 30_000
const T0 = Date.parse('2026-01-01T00:00:00Z')

let database: TestDatabase | undefined
let service: CronService | undefined
afterEach(async () => {
  await service?.stop()
  await database?.cleanup()
  service = undefined
  database = undefined
})

/** A scheduler whose one job's run, due at 01:00, goes on until its signal aborts. */
async function runningJob(wrap: (store: SqliteCronStore) => SqliteCronStore = (store) => store) {
  database = await createTestDatabase()
  const store = wrap(new SqliteCronStore(database.db))
  const clock = new FakeClock(T0)
  const agent = new RecordingAgentRunner(
    (_request, _index, { signal }) =>
      new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
  )
  service = new CronService({ store, clock, agentRunner: agent, defaultTimezone: 'UTC', leaseMs: LEASE })
  await service.start()
  await service.add({ name: 'long', scheduleType: 'cron', schedule: '0 * * * *', prompt: 'x', timeout: '2h' })
  await clock.advanceTo(T0 + 3_600_000)
  expect(agent.calls).toHaveLength(1)
  return { store, clock, agent, service }
}

it('stops its copy of a run another scheduler took for dead while it was stalled; the row stays interrupted', async () => {
  const { store, clock, agent, service } = await runningJob()
  // Stalled for three leases (SIGSTOP, a suspended VM): no timer of this scheduler fires…
  clock.jump(3 * LEASE)
  // …and another scheduler, finding its heartbeat two leases old, interrupts its runs.
  const now = clock.now().getTime()
  const taken = await store.interruptOrphanedRuns({
    now,
    aliveSince: now - 2 * LEASE,
    reason:
      'interrupted: the scheduler that ran it stopped heartbeating for 2 leases (process exit or crash)',
  })
  expect(taken).toHaveLength(1)
  // Running again: the next round finds the run taken over and stops it.
  await clock.advance(LEASE)
  await service.scheduler.whenIdle()
  expect(agent.signals[0]?.aborted).toBe(true)
  expect(service.scheduler.runningCount).toBe(0)
  const [run] = await store.listRuns({ limit: 5 })
  expect(run).toMatchObject({
    status: 'interrupted',
    error: expect.stringContaining('its command was stopped here'),
  })
})

it('a stall alone, with nothing taken over, stops nothing', async () => {
  const { clock, agent, service } = await runningJob()
  clock.jump(3 * LEASE)
  await clock.advance(LEASE)
  expect(agent.signals[0]?.aborted).toBe(false)
  expect(service.scheduler.runningCount).toBe(1)
})

it('after a stall it never takes its own runs for dead, whichever of its timers fires first (outside probe)', async () => {
  // A SIGSTOPped server, once continued, marked its own running run interrupted ("server X stopped
  // while running … marked interrupted by this server (X)") when its upkeep round ran before its
  // heartbeat. Here every heartbeat write is held while the overdue timers fire, so the round
  // cannot count on the heartbeat timer's.
  let held: Promise<void> | undefined
  const { clock, agent, store } = await runningJob((inner) => {
    const heartbeat = inner.heartbeat.bind(inner)
    inner.heartbeat = async (...args) => {
      if (held !== undefined) await held
      return heartbeat(...args)
    }
    return inner
  })
  clock.jump(3 * LEASE)
  let release = () => {}
  held = new Promise((resolve) => {
    release = resolve
  })
  await clock.advance(LEASE)
  expect((await store.listRuns({ limit: 5 }))[0]?.status).toBe('running')
  held = undefined
  release()
  await clock.advance(LEASE)
  expect(agent.signals[0]?.aborted).toBe(false)
  expect((await store.listRuns({ limit: 5 }))[0]?.status).toBe('running')
})
