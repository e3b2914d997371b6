/**
 * `CronScheduler.health()`: the scheduler's last tick on its own clock, and whether it is stale (a
 * stalled event loop or timer shows as a last tick older than the tick interval plus a grace).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { CronScheduler } from './index.js'
import { FakeClock, MemoryCronStore } from './testing/index.js'

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
