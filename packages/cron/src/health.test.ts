/**
 * `CronScheduler.health()`: the scheduler's last tick on its own clock, and whether it is stale (a
 * stalled event loop or timer shows as a last tick older than the tick interval plus a grace).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { CronScheduler, CronService, type Stall } from './index.js'
import { FakeClock, MemoryCronStore, RecordingShellRunner } from './testing/index.js'

const START = Date.parse('2026-01-01T00:00:00Z')
const LEASE = 60_000
const TICK = LEASE / 3
let scheduler: CronScheduler | undefined

afterEach(async () => {
  await scheduler?.stop()
  scheduler = undefined
})

function makeScheduler(clock: FakeClock): CronScheduler {
  scheduler = new CronScheduler({ store: new MemoryCronStore(), clock, leaseMs: LEASE })
  return scheduler
}

describe('CronScheduler.health()', () => {
  it('has no tick and is not stale before start or after stop', async () => {
    const clock = new FakeClock(START)
    const cron = makeScheduler(clock)
    expect(cron.health()).toEqual({
      lastTickAt: undefined,
      tickIntervalMs: TICK,
      staleAfterMs: 3 * TICK,
      stale: false,
      lastStall: undefined,
    })
    await cron.start()
    expect(cron.health()).toMatchObject({ lastTickAt: new Date(START), stale: false })
    await cron.stop()
    clock.jump(10 * LEASE)
    expect(cron.health()).toMatchObject({ lastTickAt: undefined, stale: false })
  })

  it('a scheduler whose timers run ticks every third of the lease and never goes stale', async () => {
    const clock = new FakeClock(START)
    const cron = makeScheduler(clock)
    await cron.start()
    for (let round = 1; round <= 12; round++) {
      await clock.advance(TICK)
      const health = cron.health()
      expect(health.stale).toBe(false)
      // The newest tick is at most one interval behind the clock.
      expect(clock.now().getTime() - (health.lastTickAt?.getTime() ?? 0)).toBeLessThanOrEqual(TICK)
    }
  })

  it('a scheduler whose timers do not run (the clock moves, no timer fires) goes stale, and recovers at its next tick', async () => {
    const clock = new FakeClock(START)
    const cron = makeScheduler(clock)
    await cron.start()
    // The first round comes a second after start (at most), then every third of the lease.
    await clock.advance(1000)
    const lastTick = cron.health().lastTickAt
    expect(lastTick).toEqual(clock.now())

    // A blocked loop: time passes, no timer fires. Within the grace it is not stale yet…
    clock.jump(3 * TICK)
    expect(cron.health()).toMatchObject({ lastTickAt: lastTick, stale: false })
    // …one millisecond beyond it, it is.
    clock.jump(1)
    expect(cron.health()).toMatchObject({ lastTickAt: lastTick, stale: true })
    // A tighter grace asked for by the caller.
    clock.jump(-(2 * TICK))
    expect(cron.health({ staleAfterMs: TICK }).stale).toBe(true)
    expect(cron.health().stale).toBe(false)
    clock.jump(2 * TICK)

    // The loop runs again: the overdue timers fire, and the tick is fresh.
    await clock.advance(0)
    expect(cron.health()).toMatchObject({ lastTickAt: clock.now(), stale: false })
  })
})

describe('the watchdog', () => {
  it('a stall (timers a lease late) is reported once with its window, and every occurrence in it ends in a final state with a reason', async () => {
    const clock = new FakeClock(START)
    const store = new MemoryCronStore()
    const service = new CronService({ store, clock, leaseMs: LEASE, shellRunner: new RecordingShellRunner() })
    scheduler = service.scheduler
    const stalls: Stall[] = []
    service.on('scheduler:stall', (stall) => stalls.push(stall))
    await service.start()
    await service.add({ name: 'minutely', scheduleType: 'cron', schedule: '* * * * *', command: 'true' })
    await clock.advance(1000)
    const before = clock.now().getTime()
    expect(stalls).toEqual([])

    // Ten minutes pass with no timer firing (a blocked loop, a stopped process, a clock jump).
    clock.jump(10 * 60_000)
    expect(scheduler.health().stale).toBe(true)
    await clock.advance(0)
    await scheduler.whenIdle()

    expect(stalls).toEqual([
      { since: before, resumedAt: before + 10 * 60_000, stalledMs: 10 * 60_000, cause: 'clock' },
    ])
    expect(scheduler.health()).toMatchObject({ stale: false, lastStall: stalls[0] })
    const runs = await store.listRuns({ jobId: (await service.get('minutely')).id })
    // 00:01 … 00:10 were due in the gap: each has a final row, the nine earlier ones skipped as missed.
    const window = runs.filter(
      (run) => run.scheduledFor > before && run.scheduledFor <= clock.now().getTime(),
    )
    expect(window).toHaveLength(10)
    for (const run of window) {
      expect(run.status).not.toBe('running')
      if (run.status === 'skipped') expect(run.skipReason).toMatch(/^missed: the scheduler was .* late/)
    }
    expect(window.filter((run) => run.status === 'completed')).toHaveLength(1)

    // Ticks on time afterwards report nothing more.
    for (let round = 0; round < 6; round++) await clock.advance(TICK)
    expect(stalls).toHaveLength(1)
  })

  it('a stall spent waiting on the store (a database that did not answer) is reported with cause store', async () => {
    const clock = new FakeClock(START)
    let gate: Promise<void> | undefined
    /** The memory store, whose calls wait while `gate` is set: a locked or unreachable database. */
    class StalledStore extends MemoryCronStore {
      override async heartbeat(...args: Parameters<MemoryCronStore['heartbeat']>): Promise<void> {
        await gate
        return super.heartbeat(...args)
      }
      override async liveOwners(...args: Parameters<MemoryCronStore['liveOwners']>): Promise<string[]> {
        await gate
        return super.liveOwners(...args)
      }
    }
    scheduler = new CronScheduler({ store: new StalledStore(), clock, leaseMs: LEASE })
    const stalls: Stall[] = []
    scheduler.on('scheduler:stall', (stall) => stalls.push(stall))
    await scheduler.start()
    await clock.advance(TICK)
    let release = () => {}
    gate = new Promise((resolve) => {
      release = resolve
    })
    // The next round and heartbeat wait on the store for two leases, the event loop free meanwhile.
    await clock.advance(TICK)
    clock.jump(2 * LEASE)
    gate = undefined
    release()
    await clock.advance(TICK)
    expect(stalls).toEqual([expect.objectContaining({ cause: 'store' })])
    expect(stalls[0]?.stalledMs).toBeGreaterThan(LEASE)
  })

  it('ticks a little late (within a lease) are no stall', async () => {
    const clock = new FakeClock(START)
    const cron = makeScheduler(clock)
    const stalls: Stall[] = []
    cron.on('scheduler:stall', (stall) => stalls.push(stall))
    await cron.start()
    for (let round = 0; round < 5; round++) {
      clock.jump(LEASE - TICK)
      await clock.advance(0)
    }
    expect(stalls).toEqual([])
    expect(cron.health().lastStall).toBeUndefined()
  })
})
