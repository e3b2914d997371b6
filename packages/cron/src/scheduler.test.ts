import { afterEach, describe, expect, it, vi } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import type { NewCronRun } from './ports.js'
import { systemClock } from './ports.js'
import { CronService } from './service.js'
import { SqliteCronStore } from './sqlite/sqlite-cron-store.js'
import { FakeClock } from './testing/fake-clock.js'
import { MemoryCronStore } from './testing/memory-cron-store.js'
import { createDeferred, RecordingAgentRunner } from './testing/recording-runners.js'
import { createTestJob } from './testing/test-job.js'

const MINUTE = 60_000
let harness: Harness | undefined

afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
  vi.useRealTimers()
})

async function settle(target: Harness): Promise<void> {
  await target.service.scheduler.whenIdle()
}

describe('firing on time', () => {
  it('fires exactly at the due time and computes the next fire from the due time', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    await harness.service.start()
    await harness.service.add({ name: 'five', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x' })
    await harness.clock.advance(15 * MINUTE)
    await settle(harness)
    const runs = await harness.runs()
    expect(
      runs.map((run) => [
        new Date(run.scheduledFor).toISOString(),
        (run.startedAt ?? Number.NaN) - run.scheduledFor,
      ]),
    ).toEqual([
      ['2026-01-01T00:05:00.000Z', 0],
      ['2026-01-01T00:10:00.000Z', 0],
      ['2026-01-01T00:15:00.000Z', 0],
    ])
    expect(await harness.service.get('five')).toMatchObject({
      nextRunAt: Date.parse('2026-01-01T00:20:00Z'),
      lastRunAt: Date.parse('2026-01-01T00:15:00Z'),
      lastStatus: 'completed',
    })
  })

  it('a timer that fires 2 ms early re-arms and never fires before the due time', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', {
      clockFor: (clock) => ({
        now: () => clock.now(),
        // like Node: up to 2 ms early, but a timer never fires in the same instant it was set
        setTimeout: (callback, ms) => clock.setTimeout(callback, Math.max(1, ms - 2)),
        clearTimeout: (handle) => clock.clearTimeout(handle),
      }),
    })
    await harness.service.start()
    await harness.service.add({ name: 'early', scheduleType: 'every', schedule: '1m', prompt: 'x' })
    await harness.clock.advance(MINUTE - 2)
    await settle(harness)
    expect(await harness.runs()).toHaveLength(0)
    await harness.clock.advance(2)
    await settle(harness)
    const runs = await harness.runs()
    expect(runs).toHaveLength(1)
    const [first] = runs
    expect((first?.startedAt ?? Number.NaN) - (first?.scheduledFor ?? 0)).toBeGreaterThanOrEqual(0)
    expect(first?.scheduledFor).toBe(Date.parse('2026-01-01T00:01:00Z'))
  })

  it('uses one timer for all jobs (a heap), not one per job', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    await harness.service.start()
    for (let index = 0; index < 20; index++) {
      await harness.service.add({
        name: `job-${index}`,
        scheduleType: 'every',
        schedule: `${index + 1}m`,
        prompt: 'x',
      })
    }
    // one scheduling timer plus the maintenance, heartbeat and job sync timers
    expect(harness.clock.pendingTimers).toBe(4)
    await harness.clock.advance(20 * MINUTE)
    await settle(harness)
    await harness.service.scheduler.flushPendingWrites() // clears the batching timer
    expect(harness.clock.pendingTimers).toBe(4)
    const expected = Array.from({ length: 20 }, (_, index) => Math.floor(20 / (index + 1))).reduce(
      (a, b) => a + b,
    )
    expect(await harness.runs()).toHaveLength(expected)
  })

  it('works with vi.useFakeTimers and the system clock', async () => {
    vi.useFakeTimers({ now: Date.parse('2026-01-01T00:00:00Z') })
    harness = await createHarness('2026-01-01T00:00:00Z', { clock: systemClock })
    await harness.service.start()
    await harness.service.add({ name: 'vi', scheduleType: 'every', schedule: '1m', prompt: 'x' })
    await vi.advanceTimersByTimeAsync(3 * MINUTE)
    await settle(harness)
    expect(
      (await harness.runs()).map((run) => run.scheduledFor - Date.parse('2026-01-01T00:00:00Z')),
    ).toEqual([MINUTE, 2 * MINUTE, 3 * MINUTE])
  })

  it('clock set back: nothing fires until the due time comes again, and nothing twice', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    await harness.service.start()
    await harness.service.add({ name: 'skew', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x' })
    await harness.clock.advance(5 * MINUTE)
    harness.clock.jump(-60 * MINUTE)
    await harness.clock.advance(64 * MINUTE)
    await settle(harness)
    expect((await harness.runs()).map((run) => new Date(run.scheduledFor).toISOString())).toEqual([
      '2026-01-01T00:05:00.000Z',
    ])
    await harness.clock.advance(MINUTE)
    await settle(harness)
    expect(await harness.runs()).toHaveLength(2)
  })

  it('clock jumped forward (or a blocked loop): only the latest occurrence runs, the others are skipped with a reason', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    await harness.service.start()
    await harness.service.add({ name: 'jump', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x' })
    harness.clock.jump(21 * MINUTE) // 00:21: 00:05 … 00:20 are due
    await harness.clock.advance(0)
    await settle(harness)
    const runs = await harness.runs()
    expect(
      runs.map((run) => [new Date(run.scheduledFor).toISOString().slice(11, 16), run.status, run.trigger]),
    ).toEqual([
      ['00:05', 'skipped', 'schedule'],
      ['00:10', 'skipped', 'schedule'],
      ['00:15', 'skipped', 'schedule'],
      ['00:20', 'completed', 'catchup'],
    ])
    expect(runs[0]?.skipReason).toMatch(/late .*only the latest occurrence runs/)
    expect(harness.agent.calls).toHaveLength(1)
    expect((await harness.service.get('jump')).nextRunAt).toBe(Date.parse('2026-01-01T00:25:00Z'))
  })
})

describe('DST and time zones through the scheduler', () => {
  it('30 2 * * * in America/New_York: 03:00 EDT on 2026-03-08, once on 2026-11-01', async () => {
    harness = await createHarness('2026-03-07T12:00:00Z')
    await harness.service.start()
    const { nextRuns } = await harness.service.add({
      name: 'ny',
      scheduleType: 'cron',
      schedule: '30 2 * * *',
      timezone: 'America/New_York',
      prompt: 'x',
    })
    expect(nextRuns.map((run) => run.local)).toEqual([
      '2026-03-08T03:00:00-04:00',
      '2026-03-09T02:30:00-04:00',
      '2026-03-10T02:30:00-04:00',
    ])
    await harness.clock.advanceTo(Date.parse('2026-03-09T12:00:00Z'))
    await settle(harness)
    expect((await harness.runs()).map((run) => new Date(run.scheduledFor).toISOString())).toEqual([
      '2026-03-08T07:00:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ])
  })

  it('fall back: 30 1 * * * and */30 * * * * fire once per wall time on 2026-11-01', async () => {
    harness = await createHarness('2026-11-01T03:00:00Z')
    await harness.service.start()
    await harness.service.add({
      name: 'daily',
      scheduleType: 'cron',
      schedule: '30 1 * * *',
      timezone: 'America/New_York',
      prompt: 'x',
    })
    await harness.service.add({
      name: 'half',
      scheduleType: 'cron',
      schedule: '*/30 * * * *',
      timezone: 'America/New_York',
      prompt: 'x',
    })
    await harness.clock.advanceTo(Date.parse('2026-11-01T08:00:00Z'))
    await settle(harness)
    const runs = await harness.runs()
    const times = (name: string) =>
      runs
        .filter((run) => run.jobName === name)
        .map((run) => new Date(run.scheduledFor).toISOString().slice(11, 16))
    expect(times('daily')).toEqual(['05:30'])
    // 23:30 EDT … 01:30 EDT, then 02:00 EST; 01:00/01:30 EST (06:00Z, 06:30Z) are repeats
    expect(times('half')).toEqual(['03:30', '04:00', '04:30', '05:00', '05:30', '07:00', '07:30', '08:00'])
  })

  it('Asia/Kolkata (half-hour offset) and a host zone different from the job zone', async () => {
    const original = process.env.TZ
    process.env.TZ = 'America/Los_Angeles'
    try {
      harness = await createHarness('2026-01-01T00:00:00Z')
      await harness.service.start()
      const { nextRuns } = await harness.service.add({
        name: 'india',
        scheduleType: 'cron',
        schedule: '0 9 * * *',
        timezone: 'Asia/Kolkata',
        prompt: 'x',
      })
      expect(nextRuns[0]).toMatchObject({
        utc: '2026-01-01T03:30:00.000Z',
        local: '2026-01-01T09:00:00+05:30',
      })
      await harness.clock.advanceTo(Date.parse('2026-01-02T04:00:00Z'))
      await settle(harness)
      expect((await harness.runs()).map((run) => new Date(run.scheduledFor).toISOString())).toEqual([
        '2026-01-01T03:30:00.000Z',
        '2026-01-02T03:30:00.000Z',
      ])
    } finally {
      if (original === undefined) delete process.env.TZ
      else process.env.TZ = original
    }
  })
})

describe('overlap, concurrency and timeouts', () => {
  it('overlap skip: an occurrence due while the previous run is going is recorded skipped', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    const gate = createDeferred<string>()
    harness.agent.respond(() => gate.promise)
    await harness.service.start()
    await harness.service.add({
      name: 'slow',
      scheduleType: 'every',
      schedule: '1m',
      prompt: 'x',
      timeout: '1h',
    })
    await harness.clock.advance(3 * MINUTE)
    gate.resolve('done')
    await settle(harness)
    const runs = await harness.runs()
    expect(runs.map((run) => run.status)).toEqual(['completed', 'skipped', 'skipped'])
    expect(runs[1]?.skipReason).toMatch(/still in progress \(overlap: skip\)/)
  })

  it('overlap queue_one: one occurrence waits behind the running one, further ones are skipped', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    const gate = createDeferred<string>()
    harness.agent.respond((_request, index) => (index === 0 ? gate.promise : 'quick'))
    await harness.service.start()
    await harness.service.add({
      name: 'q',
      scheduleType: 'every',
      schedule: '1m',
      prompt: 'x',
      overlap: 'queue_one',
      timeout: '1h',
    })
    await harness.clock.advance(3 * MINUTE)
    expect(harness.agent.calls).toHaveLength(1)
    gate.resolve('slow')
    await settle(harness)
    const runs = await harness.runs()
    expect(
      runs.map((run) => [(run.scheduledFor - Date.parse('2026-01-01T00:00:00Z')) / MINUTE, run.status]),
    ).toEqual([
      [1, 'completed'],
      [2, 'completed'],
      [3, 'skipped'],
    ])
    expect(harness.agent.calls).toHaveLength(2)
  })

  it('overlap allow: runs overlap', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    const gate = createDeferred<string>()
    harness.agent.respond(() => gate.promise)
    await harness.service.start()
    await harness.service.add({
      name: 'a',
      scheduleType: 'every',
      schedule: '1m',
      prompt: 'x',
      overlap: 'allow',
      timeout: '1h',
    })
    await harness.clock.advance(3 * MINUTE)
    expect(harness.service.scheduler.runningCount).toBe(3)
    gate.resolve('ok')
    await settle(harness)
    expect((await harness.runs()).map((run) => run.status)).toEqual(['completed', 'completed', 'completed'])
  })

  it('overlap allow: at most maxWaitingRuns (default 100) further occurrences wait for a slot; the excess is recorded skipped', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxConcurrentJobs: 1 })
    const gate = createDeferred<string>()
    harness.agent.respond(() => gate.promise)
    await harness.service.start()
    await harness.service.add({
      name: 'flood',
      scheduleType: 'cron',
      schedule: '0 * * * *',
      prompt: 'x',
      overlap: 'allow',
      timeout: '2h',
    })
    await harness.service.add({ name: 'other', scheduleType: 'cron', schedule: '0 3 * * *', prompt: 'y' })
    const reason =
      'queue full: 100 further occurrences of overlap: allow jobs already wait for a run slot (maxWaitingRuns)'
    const results = []
    for (let index = 0; index < 103; index++) {
      results.push(await harness.service.trigger('flood'))
      await harness.clock.advance(1)
    }
    // one runs, its first waiting occurrence and 100 further ones wait, the last is refused
    expect(results.map((result) => result.status)).toEqual([
      'started',
      ...Array.from({ length: 101 }, () => 'queued'),
      'skipped',
    ])
    expect(results.at(-1)).toMatchObject({ status: 'skipped', reason, runId: expect.any(String) })
    // a scheduled occurrence over the cap is skipped too
    await harness.clock.advance(60 * MINUTE)
    // another job still gets its place in the queue
    expect(await harness.service.trigger('other')).toMatchObject({ status: 'queued' })
    gate.resolve('done')
    await settle(harness)
    const runs = await harness.runs()
    const skipped = runs.filter((run) => run.status === 'skipped')
    expect(skipped.map((run) => [run.jobName, run.trigger, run.skipReason])).toEqual([
      ['flood', 'manual', reason],
      ['flood', 'schedule', reason],
    ])
    const completed = runs.filter((run) => run.status === 'completed')
    expect(completed.filter((run) => run.jobName === 'flood')).toHaveLength(102)
    expect(completed.filter((run) => run.jobName === 'other')).toHaveLength(1)
    expect(runs).toHaveLength(105)
  })

  it('rejects a maxWaitingRuns that is not a whole number, 0 or more', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    expect(() => harness?.another({ maxWaitingRuns: -1 })).toThrow(
      /maxWaitingRuns must be a whole number of occurrences, 0 or more/,
    )
    expect(() => harness?.another({ maxWaitingRuns: 1.5 })).toThrow(/maxWaitingRuns/)
    expect(() => harness?.another({ maxWaitingRuns: 0 })).not.toThrow()
  })

  it('caps concurrency; due runs wait for a slot and start when one frees', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxConcurrentJobs: 2 })
    const gates = [createDeferred<string>(), createDeferred<string>(), createDeferred<string>()]
    harness.agent.respond((_request, index) => (gates[index] ?? createDeferred<string>()).promise)
    await harness.service.start()
    for (const name of ['a', 'b', 'c']) {
      await harness.service.add({
        name,
        scheduleType: 'cron',
        schedule: '0 * * * *',
        prompt: 'x',
        timeout: '2h',
      })
    }
    await harness.clock.advance(60 * MINUTE)
    expect(harness.agent.calls).toHaveLength(2)
    expect(harness.service.scheduler.runningCount).toBe(2)
    await harness.clock.advance(5 * MINUTE)
    gates[0]?.resolve('first')
    await harness.clock.advance(0)
    expect(harness.agent.calls).toHaveLength(2 + 1)
    gates[1]?.resolve('second')
    gates[2]?.resolve('third')
    await settle(harness)
    const runs = await harness.runs()
    expect(runs.every((run) => run.status === 'completed')).toBe(true)
    const waited = runs.find((run) => run.startedAt !== run.scheduledFor)
    expect((waited?.startedAt ?? Number.NaN) - (waited?.scheduledFor ?? 0)).toBe(5 * MINUTE)
  })

  it('times a run out per job, records timed_out and frees the slot', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    harness.agent.respond(() => new Promise(() => {}))
    await harness.service.start()
    await harness.service.add({
      name: 'hang',
      scheduleType: 'cron',
      schedule: '0 * * * *',
      prompt: 'x',
      timeout: '30s',
    })
    await harness.clock.advance(60 * MINUTE + 30_000)
    await settle(harness)
    const [run] = await harness.runs()
    expect(run).toMatchObject({ status: 'timed_out', error: 'timed out after 30s', durationMs: 30_000 })
    expect(harness.service.scheduler.runningCount).toBe(0)
    expect(harness.agent.signals[0]?.aborted).toBe(true)
  })
})

describe('daily AI run budget (CRON-3)', () => {
  it('skips ai runs beyond maxAiRunsPerDay with the reason, runs shell jobs, and resumes a day later', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxAiRunsPerDay: 3 })
    await harness.service.start()
    await harness.service.add({ name: 'ask', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    await harness.service.add({ name: 'sh', scheduleType: 'every', schedule: '1h', command: 'echo hi' })
    await harness.clock.advance(5 * 60 * MINUTE)
    await settle(harness)
    const ai = (await harness.runs()).filter((run) => run.jobName === 'ask')
    expect(ai.map((run) => run.status)).toEqual(['completed', 'completed', 'completed', 'skipped', 'skipped'])
    expect(ai[3]?.skipReason).toBe(
      'budget: 3 AI runs already started in the last 24 hours (maxAiRunsPerDay); ' +
        'the next can start after 2026-01-02T01:00:00.000Z',
    )
    expect(
      (await harness.runs()).filter((run) => run.jobName === 'sh' && run.status === 'completed'),
    ).toHaveLength(5)
    // A manual trigger obeys the budget too.
    const job = await harness.service.get('ask')
    expect(await harness.service.trigger(job.id)).toMatchObject({ status: 'skipped' })
    // 24 hours after the first run, the window has room again.
    await harness.clock.advance(20 * 60 * MINUTE)
    await settle(harness)
    const later = (await harness.runs()).filter((run) => run.jobName === 'ask' && run.status === 'completed')
    expect(later.map((run) => new Date(run.startedAt ?? 0).toISOString()).slice(3)).toEqual([
      '2026-01-02T01:00:00.000Z',
    ])
  })

  it('an occurrence queued behind a running one (queue_one) that the budget then refuses is recorded skipped', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxAiRunsPerDay: 1 })
    const gate = createDeferred<string>()
    harness.agent.respond(() => gate.promise)
    await harness.service.start()
    await harness.service.add({
      name: 'q',
      scheduleType: 'every',
      schedule: '1h',
      prompt: 'x',
      overlap: 'queue_one',
      timeout: '2h',
    })
    await harness.clock.advance(2 * 60 * MINUTE) // 01:00 runs, 02:00 waits behind it
    gate.resolve('done')
    await settle(harness)
    const runs = await harness.runs()
    expect(runs.map((run) => [new Date(run.scheduledFor).toISOString().slice(11, 16), run.status])).toEqual([
      ['01:00', 'completed'],
      ['02:00', 'skipped'],
    ])
    expect(runs[1]?.skipReason).toMatch(/^budget: 1 AI runs already started in the last 24 hours/)
    expect(harness.agent.calls).toHaveLength(1)
  })

  it('counts the runs already in the store when a scheduler starts (a restart does not reset it)', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxAiRunsPerDay: 2 })
    await harness.service.start()
    await harness.service.add({ name: 'ask', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    await harness.clock.advance(2 * 60 * MINUTE)
    await settle(harness)
    await harness.service.stop()
    const restarted = harness.another({ maxAiRunsPerDay: 2 })
    await restarted.start()
    await harness.clock.advance(60 * MINUTE)
    await restarted.scheduler.whenIdle()
    const runs = (await harness.runs()).filter((run) => run.jobName === 'ask')
    expect(runs.map((run) => run.status)).toEqual(['completed', 'completed', 'skipped'])
  })

  it('rejects a negative or non-numeric budget, and Infinity means none', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    expect(() => harness?.another({ maxAiRunsPerDay: -1 })).toThrow(/maxAiRunsPerDay/)
    const open = harness.another({ maxAiRunsPerDay: Number.POSITIVE_INFINITY })
    await open.start()
    await open.add({ name: 'ask', scheduleType: 'every', schedule: '1m', prompt: 'x' })
    await harness.clock.advance(30 * MINUTE)
    await open.scheduler.whenIdle()
    expect((await harness.runs()).filter((run) => run.status === 'completed')).toHaveLength(30)
  })
})

describe('daily AI token budget (CRON-3)', () => {
  const usage = { inputTokens: 30, outputTokens: 10 }

  it("records each ai run's tokens, skips ai runs once maxAiTokensPerDay is reached, runs shell jobs, and resumes when tokens leave the window", async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxAiTokensPerDay: 100 })
    harness.agent.respond((_request, index) => ({ text: `result ${index + 1}`, usage }))
    await harness.service.start()
    await harness.service.add({ name: 'ask', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    await harness.service.add({ name: 'sh', scheduleType: 'every', schedule: '1h', command: 'echo hi' })
    await harness.clock.advance(5 * 60 * MINUTE)
    await settle(harness)
    const ai = (await harness.runs()).filter((run) => run.jobName === 'ask')
    // 40 tokens a run: 0, 40 and 80 are under 100, so three start; then 120 are counted.
    expect(ai.map((run) => [run.status, run.inputTokens, run.outputTokens])).toEqual([
      ['completed', 30, 10],
      ['completed', 30, 10],
      ['completed', 30, 10],
      ['skipped', null, null],
      ['skipped', null, null],
    ])
    // Below 100 again once the 01:00 run's 40 leave: a day after the end of its minute.
    expect(ai[3]?.skipReason).toBe(
      'budget: 120 AI tokens already used in the last 24 hours (maxAiTokensPerDay 100); ' +
        'the next can start after 2026-01-02T01:01:00.000Z',
    )
    const shell = (await harness.runs()).filter((run) => run.jobName === 'sh')
    expect(shell.map((run) => [run.status, run.inputTokens, run.outputTokens])).toEqual(
      Array.from({ length: 5 }, () => ['completed', null, null]),
    )
    const job = await harness.service.get('ask')
    expect(await harness.service.trigger(job.id)).toMatchObject({
      status: 'skipped',
      reason: expect.stringMatching(/^budget: 120 AI tokens/),
    })
    // 01:00 the next day is still before 01:01; 02:00 runs.
    await harness.clock.advance(21 * 60 * MINUTE)
    await settle(harness)
    const completed = (await harness.runs()).filter(
      (run) => run.jobName === 'ask' && run.status === 'completed',
    )
    expect(completed.map((run) => new Date(run.startedAt ?? 0).toISOString()).slice(3)).toEqual([
      '2026-01-02T02:00:00.000Z',
    ])
  })

  it('a failed ai run counts what its rejection says it spent (AgentRunFailure.usage), after a restart too', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxAiTokensPerDay: 100 })
    // A turn its own budget stopped: it failed, and it spent its tokens all the same.
    harness.agent.respond(() => {
      throw Object.assign(new Error('budget_exhausted: the turn used 70 tokens'), {
        usage: { inputTokens: 50, outputTokens: 20 },
        retryable: false,
      })
    })
    await harness.service.start()
    await harness.service.add({ name: 'ask', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    await harness.clock.advance(3 * 60 * MINUTE)
    await settle(harness)
    const runs = (await harness.runs()).filter((run) => run.jobName === 'ask')
    // 0 and 70 are under 100, so two start and fail; then 140 are counted.
    expect(runs.map((run) => [run.status, run.inputTokens, run.outputTokens])).toEqual([
      ['failed', 50, 20],
      ['failed', 50, 20],
      ['skipped', null, null],
    ])
    expect(runs[2]?.skipReason).toMatch(/^budget: 140 AI tokens already used in the last 24 hours/)
    // A restarted scheduler reads the failed runs' 140 tokens from the store.
    await harness.service.stop()
    const restarted = harness.another({ maxAiTokensPerDay: 140 })
    await restarted.start()
    await harness.clock.advance(60 * MINUTE)
    await restarted.scheduler.whenIdle()
    const after = (await harness.runs()).filter((run) => run.jobName === 'ask')
    expect(after.map((run) => run.status).slice(3)).toEqual(['skipped'])
    expect(after[3]?.skipReason).toMatch(/^budget: 140 AI tokens already used in the last 24 hours/)
  })

  it('an ai run cut off by its timeout or cancelled counts the last total its runner told (AgentRunOptions.onUsage)', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxAiTokensPerDay: 250 })
    const started: Array<() => void> = []
    // A turn that has spent 100 + 20 when its model call is cut off: the runner tells the call's
    // cost from its abort listener, and never settles (cron does not wait for it).
    harness.agent.respond((_request, index, options) => {
      options.onUsage?.({ inputTokens: 100, outputTokens: 20 })
      if (index === 0)
        options.signal.addEventListener('abort', () =>
          options.onUsage?.({ inputTokens: 150, outputTokens: 30 }),
        )
      started[index]?.()
      return new Promise(() => {})
    })
    await harness.service.start()
    await harness.service.add({
      name: 'slow',
      scheduleType: 'every',
      schedule: '1h',
      prompt: 'x',
      timeout: '30s',
    })
    await harness.clock.advance(60 * MINUTE + 30_000)
    await settle(harness)
    // The second run is cancelled by a pause while its model call is under way.
    const secondStarted = new Promise<void>((resolve) => {
      started[1] = resolve
    })
    await harness.clock.advance(60 * MINUTE - 30_000)
    await secondStarted
    await harness.service.pause('slow')
    await settle(harness)
    await harness.service.resume('slow')
    await harness.clock.advance(60 * MINUTE)
    await settle(harness)
    const runs = (await harness.runs()).filter((run) => run.jobName === 'slow')
    expect(runs.map((run) => [run.status, run.inputTokens, run.outputTokens])).toEqual([
      ['timed_out', 150, 30],
      ['cancelled', 100, 20],
      ['skipped', null, null],
    ])
    // 180 + 120 = 300 tokens: past the day's 250.
    expect(runs[2]?.skipReason).toMatch(/^budget: 300 AI tokens already used in the last 24 hours/)
  })

  it('a run its runner refused before starting (AgentRunFailure.started: false) is skipped, never a failure that pauses the job', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxConsecutiveFailures: 2 })
    let spent = true
    harness.agent.respond(() => {
      if (!spent) return { text: 'report', usage }
      throw Object.assign(new Error('budget_exhausted: cron job ask already used 2,600 tokens today'), {
        started: false,
        retryable: false,
        usage: { inputTokens: 0, outputTokens: 0 },
      })
    })
    await harness.service.start()
    await harness.service.add({ name: 'ask', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    await harness.clock.advance(3 * 60 * MINUTE)
    await settle(harness)
    // The job's budget resets: its next run goes ahead; it was never paused.
    spent = false
    await harness.clock.advance(60 * MINUTE)
    await settle(harness)
    const runs = (await harness.runs()).filter((run) => run.jobName === 'ask')
    expect(runs.map((run) => [run.status, run.error])).toEqual([
      ['skipped', null],
      ['skipped', null],
      ['skipped', null],
      ['completed', null],
    ])
    expect(runs[0]?.skipReason).toBe('budget_exhausted: cron job ask already used 2,600 tokens today')
    const job = await harness.service.get('ask')
    expect([job.enabled, job.consecutiveFailures]).toEqual([true, 0])
  })

  it('counts the tokens already in the store when a scheduler starts (a restart does not reset it)', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxAiTokensPerDay: 80 })
    harness.agent.respond(() => ({ text: 'ok', usage }))
    await harness.service.start()
    await harness.service.add({ name: 'ask', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    await harness.clock.advance(2 * 60 * MINUTE)
    await settle(harness)
    await harness.service.stop()
    const restarted = harness.another({ maxAiTokensPerDay: 80 })
    await restarted.start()
    await harness.clock.advance(60 * MINUTE)
    await restarted.scheduler.whenIdle()
    const runs = (await harness.runs()).filter((run) => run.jobName === 'ask')
    expect(runs.map((run) => run.status)).toEqual(['completed', 'completed', 'skipped'])
    expect(runs[2]?.skipReason).toMatch(/^budget: 80 AI tokens already used in the last 24 hours/)
  })

  it('names the budget that frees up later when both are spent', async () => {
    harness = await createHarness('2026-01-02T00:00:00Z')
    await harness.service.start()
    const { job } = await harness.service.add({
      name: 'ask',
      scheduleType: 'every',
      schedule: '1h',
      prompt: 'x',
    })
    await harness.service.stop()
    // Spent before the next scheduler starts: 100 tokens by a run at 01:00 yesterday, and a run at 23:00.
    const row = (id: string, at: string): NewCronRun => ({
      id,
      jobId: job.id,
      jobName: job.name,
      trigger: 'manual',
      status: 'running',
      scheduledFor: Date.parse(at),
      startedAt: Date.parse(at),
      completedAt: null,
      skipReason: null,
      owner: 'owner-0',
    })
    const early = row('early', '2026-01-01T01:00:00Z')
    const late = row('late', '2026-01-01T23:00:00Z')
    await harness.store.insertRuns([early, late])
    const end = (run: NewCronRun, inputTokens: number | null, outputTokens: number | null) =>
      harness?.store.completeRun(run.id, {
        status: 'completed',
        completedAt: run.scheduledFor,
        durationMs: 0,
        result: 'ok',
        error: null,
        inputTokens,
        outputTokens,
      })
    await end(early, 90, 10)
    await end(late, null, null)
    // Tokens free up at 01:01 today; one run a day frees up at 23:00: the run budget is named.
    const strictRuns = harness.another({ maxAiTokensPerDay: 100, maxAiRunsPerDay: 1 })
    await strictRuns.start()
    expect(await strictRuns.trigger('ask')).toMatchObject({
      status: 'skipped',
      reason:
        'budget: 1 AI runs already started in the last 24 hours (maxAiRunsPerDay); ' +
        'the next can start after 2026-01-02T23:00:00.000Z',
    })
    await strictRuns.stop()
    // Two runs a day free up at 01:00, before the tokens: the token budget is named.
    const twoRuns = harness.another({ maxAiTokensPerDay: 100, maxAiRunsPerDay: 2 })
    await twoRuns.start()
    expect(await twoRuns.trigger('ask')).toMatchObject({
      status: 'skipped',
      reason:
        'budget: 100 AI tokens already used in the last 24 hours (maxAiTokensPerDay 100); ' +
        'the next can start after 2026-01-02T01:01:00.000Z',
    })
    expect(harness.agent.calls).toHaveLength(0)
  })

  it('runs whose runner reports no usage record none and count nothing; a bad budget is refused', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxAiTokensPerDay: 1 })
    harness.agent.respond((_request, index) =>
      index === 0
        ? 'plain text'
        : // A runner's bad counts are not trusted: stored as null, not counted.
          { text: 'odd', usage: { inputTokens: -5, outputTokens: Number.NaN } },
    )
    await harness.service.start()
    await harness.service.add({ name: 'ask', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    await harness.clock.advance(3 * 60 * MINUTE)
    await settle(harness)
    const runs = (await harness.runs()).filter((run) => run.jobName === 'ask')
    expect(runs.map((run) => [run.status, run.inputTokens, run.outputTokens])).toEqual([
      ['completed', null, null],
      ['completed', null, null],
      ['completed', null, null],
    ])
    expect(() => harness?.another({ maxAiTokensPerDay: -1 })).toThrow(/maxAiTokensPerDay/)
    expect(() => harness?.another({ maxAiTokensPerDay: Number.NaN })).toThrow(/maxAiTokensPerDay/)
  })
})

describe('jitter (CRON-6)', () => {
  it('spreads jobs due at the same minute by a fixed per-job delay within maxJitterMs', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxJitterMs: 30_000 })
    await harness.service.start()
    for (let index = 0; index < 20; index++) {
      await harness.service.add({
        name: `job-${index}`,
        scheduleType: 'cron',
        schedule: '*/5 * * * *',
        prompt: 'x',
      })
    }
    await harness.clock.advance(10 * MINUTE + 30_000)
    await settle(harness)
    const runs = await harness.runs()
    expect(runs).toHaveLength(40)
    const delays = new Map<string, number[]>()
    for (const run of runs) {
      expect([Date.parse('2026-01-01T00:05:00Z'), Date.parse('2026-01-01T00:10:00Z')]).toContain(
        run.scheduledFor,
      )
      expect(run.status).toBe('completed')
      const delay = (run.startedAt ?? Number.NaN) - run.scheduledFor
      expect(delay).toBeGreaterThanOrEqual(0)
      expect(delay).toBeLessThanOrEqual(30_000)
      delays.set(run.jobName, [...(delays.get(run.jobName) ?? []), delay])
    }
    // The same job is delayed alike each time; different jobs are spread out.
    for (const [, each] of delays) expect(new Set(each).size).toBe(1)
    expect(new Set([...delays.values()].map((each) => each[0])).size).toBeGreaterThan(10)
  })

  it('never delays one-time jobs or manual triggers, and is off by default', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxJitterMs: 60_000 })
    await harness.service.start()
    await harness.service.add({
      name: 'once',
      scheduleType: 'at',
      schedule: '2026-01-01T00:03:00Z',
      prompt: 'x',
    })
    const { job } = await harness.service.add({
      name: 'manual',
      scheduleType: 'every',
      schedule: '1h',
      prompt: 'x',
    })
    await harness.service.trigger(job.id)
    await harness.clock.advance(3 * MINUTE)
    await settle(harness)
    const runs = await harness.runs()
    expect(runs.map((run) => [run.jobName, (run.startedAt ?? Number.NaN) - run.scheduledFor])).toEqual([
      ['manual', 0],
      ['once', 0],
    ])
    const plain = await createHarness('2026-01-01T00:00:00Z')
    try {
      await plain.service.start()
      await plain.service.add({ name: 'five', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x' })
      await plain.clock.advance(5 * MINUTE)
      await plain.service.scheduler.whenIdle()
      expect((await plain.runs()).map((run) => (run.startedAt ?? Number.NaN) - run.scheduledFor)).toEqual([0])
    } finally {
      await plain.cleanup()
    }
  })

  it('keeps a delay below half the gap to the next due time, so no occurrence is skipped as missed', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxJitterMs: 60_000 })
    await harness.service.start()
    for (let index = 0; index < 10; index++) {
      await harness.service.add({
        name: `minute-${index}`,
        scheduleType: 'every',
        schedule: '1m',
        prompt: 'x',
      })
    }
    await harness.clock.advance(10 * MINUTE)
    await settle(harness)
    const runs = await harness.runs()
    expect(runs.filter((run) => run.status === 'skipped')).toEqual([])
    for (const run of runs) expect((run.startedAt ?? Number.NaN) - run.scheduledFor).toBeLessThan(30_000)
    expect(new Set(runs.map((run) => (run.startedAt ?? 0) - run.scheduledFor)).size).toBeGreaterThan(3)
  })

  it('rejects a jitter beyond half the smallest catch-up window', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    expect(() => harness?.another({ maxJitterMs: 60_001 })).toThrow(/maxJitterMs must be .* from 0 to 60000/)
    expect(() => harness?.another({ maxJitterMs: -1 })).toThrow(/maxJitterMs/)
    expect(() => harness?.another({ maxJitterMs: 1.5 })).toThrow(/maxJitterMs/)
    expect(() => harness?.another({ maxJitterMs: 90_000, catchupWindow: { minMs: 180_000 } })).not.toThrow()
  })
})

describe('pause, remove and failures', () => {
  it('pause cancels the run in flight (status cancelled) and unregisters at once', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    harness.agent.respond(() => new Promise(() => {}))
    await harness.service.start()
    await harness.service.add({ name: 'p', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x' })
    await harness.clock.advance(5 * MINUTE)
    expect(harness.service.scheduler.runningCount).toBe(1)
    await harness.service.pause('p')
    const [run] = await harness.runs()
    expect(run).toMatchObject({
      status: 'cancelled',
      error: 'cancelled: the job was paused while the run was in progress',
    })
    expect(harness.agent.signals[0]?.aborted).toBe(true)
    await harness.clock.advance(60 * MINUTE)
    expect(await harness.runs()).toHaveLength(1)
  })

  it('remove cancels the run in flight and deletes the history', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    harness.agent.respond(() => new Promise(() => {}))
    await harness.service.start()
    await harness.service.add({ name: 'r', scheduleType: 'cron', schedule: '*/5 * * * *', prompt: 'x' })
    await harness.clock.advance(5 * MINUTE)
    await harness.service.remove('r')
    expect(harness.agent.signals[0]?.aborted).toBe(true)
    expect(harness.service.scheduler.runningCount).toBe(0)
    expect(await harness.runs()).toEqual([])
  })

  it('auto-pauses after 5 consecutive failures and tells the delivery target why', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    harness.agent.respond(() => {
      throw new Error('model unavailable')
    })
    await harness.service.start()
    await harness.service.add({
      name: 'flaky',
      scheduleType: 'every',
      schedule: '1m',
      prompt: 'x',
      deliverTo: ['telegram:7'],
    })
    const paused = harness.service.scheduler.events.next('job:pause')
    await harness.clock.advance(10 * MINUTE)
    await settle(harness)
    expect((await paused).reason).toMatch(
      /paused after 5 consecutive failures; last error: model unavailable/,
    )
    const runs = await harness.runs()
    expect(runs.map((run) => run.status)).toEqual(['failed', 'failed', 'failed', 'failed', 'failed'])
    expect(await harness.service.get('flaky')).toMatchObject({
      enabled: false,
      consecutiveFailures: 5,
      lastStatus: 'failed',
    })
    expect(harness.sender.sent.at(-1)?.text).toMatch(
      /^\[Cron\] flaky\nThis job was paused after 5 consecutive failures/,
    )
    // resuming resets the count
    const resumed = await harness.service.resume('flaky')
    expect(resumed.job).toMatchObject({ enabled: true, consecutiveFailures: 0, pauseReason: null })
  })

  it('says in the log when the auto-pause notice could not be delivered (outside probe: dropped silently)', async () => {
    const { logger, warnings } = warningLogger()
    harness = await createHarness('2026-01-01T00:00:00Z', { logger, maxConsecutiveFailures: 2 })
    harness.agent.respond(() => {
      throw new Error('model unavailable')
    })
    harness.sender.failingTargets.add('telegram:7')
    await harness.service.start()
    await harness.service.add({
      name: 'flaky',
      scheduleType: 'every',
      schedule: '1m',
      prompt: 'x',
      deliverTo: ['telegram:7'],
    })
    const paused = harness.service.scheduler.events.next('job:pause')
    await harness.clock.advance(5 * MINUTE)
    await settle(harness)
    await paused
    expect(warnings).toContainEqual({
      message: 'cron job auto-pause notice not delivered',
      fields: expect.objectContaining({ jobName: 'flaky', error: expect.stringContaining('telegram:7') }),
    })
  })

  it('names the runs a stop cut off in one warning: they are recorded interrupted and not retried', async () => {
    const { logger, warnings } = warningLogger()
    harness = await createHarness('2026-01-01T00:00:00Z', { logger })
    harness.agent.respond(
      (_request, _index, { signal }) =>
        new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
    )
    await harness.service.start()
    await harness.service.add({ name: 'once', scheduleType: 'every', schedule: '1h', prompt: 'x' })
    await harness.clock.advance(60 * MINUTE)
    const [running] = await harness.runs()
    expect(running?.status).toBe('running')
    await harness.service.stop()
    expect((await harness.runs())[0]?.status).toBe('interrupted')
    expect(warnings).toContainEqual({
      message: 'cron runs interrupted by the stop: not retried',
      fields: { runs: [running?.id] },
    })
  })

  it('a success resets the consecutive failure count', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    harness.agent.respond((_request, index) => {
      if (index % 4 !== 3) throw new Error('no')
      return 'yes'
    })
    await harness.service.start()
    await harness.service.add({ name: 'mixed', scheduleType: 'every', schedule: '1m', prompt: 'x' })
    await harness.clock.advance(12 * MINUTE)
    await settle(harness)
    expect(await harness.service.get('mixed')).toMatchObject({ enabled: true, consecutiveFailures: 0 })
    expect(await harness.runs()).toHaveLength(12)
  })
})

describe('execution and delivery', () => {
  it('ai jobs: automation prefix, prompt, recent results, session keys per mode', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    await harness.service.start()
    await harness.service.add({
      name: 'iso',
      scheduleType: 'every',
      schedule: '1m',
      prompt: 'What is new?',
      model: 'small',
    })
    await harness.service.add({
      name: 'main',
      scheduleType: 'every',
      schedule: '1m',
      prompt: 'Go',
      sessionMode: 'main',
    })
    await harness.clock.advance(3 * MINUTE)
    await settle(harness)
    const iso = harness.agent.calls.filter((call) => call.jobName === 'iso')
    expect(iso[0]?.prompt).toMatch(/^\[Automated run\][\s\S]*Job: iso\n\nWhat is new\?$/)
    expect(iso[2]?.prompt).toMatch(/Do not repeat them[\s\S]*\n1\. result \d\n2\. result \d$/)
    expect(iso[0]?.sessionKey).toBe(`cron:iso:${iso[0]?.runId}`)
    expect(iso[0]?.model).toBe('small')
    const main = harness.agent.calls.filter((call) => call.jobName === 'main')
    expect(main.map((call) => call.sessionKey)).toEqual(['cron:main', 'cron:main', 'cron:main'])
  })

  it('shell jobs: non-zero exit and guard blocks fail the run; stdout is the result', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    harness.shell.respond((request) => {
      if (request.command === 'false') return { exitCode: 1, stdout: '', stderr: 'boom' }
      if (request.command.startsWith('lango'))
        return { exitCode: null, stdout: '', stderr: '', blocked: true, message: 'use the cron tools' }
      return { exitCode: 0, stdout: 'hello\n', stderr: '' }
    })
    await harness.service.start()
    for (const [name, command] of [
      ['ok', 'echo hello {{secret:token}}'],
      ['bad', 'false'],
      ['blocked', 'lango cron list'],
    ] as const) {
      await harness.service.add({
        name,
        kind: 'shell',
        scheduleType: 'every',
        schedule: '1m',
        command,
        cwd: '/tmp',
      })
    }
    await harness.clock.advance(MINUTE)
    await settle(harness)
    const byName = Object.fromEntries((await harness.runs()).map((run) => [run.jobName, run]))
    expect(byName.ok).toMatchObject({ status: 'completed', result: 'hello\n' })
    expect(byName.bad).toMatchObject({ status: 'failed', error: 'exit code 1: boom' })
    expect(byName.blocked).toMatchObject({ status: 'failed', error: 'blocked: use the cron tools' })
    // the unresolved command reaches the ShellRunner (it resolves secrets at fire time)
    expect(harness.shell.calls.find((call) => call.jobName === 'ok')).toMatchObject({
      command: 'echo hello {{secret:token}}',
      cwd: '/tmp',
    })
  })

  it('records delivery status separately from run status', async () => {
    // One send per target: retries are the delivery ledger's (delivery-ledger.test.ts).
    harness = await createHarness('2026-01-01T00:00:00Z', { delivery: { maxAttempts: 1 } })
    harness.sender.failingTargets.add('slack:down')
    await harness.service.start()
    await harness.service.add({
      name: 'good',
      scheduleType: 'every',
      schedule: '1m',
      prompt: 'x',
      deliverTo: ['telegram:1'],
    })
    await harness.service.add({
      name: 'half',
      scheduleType: 'every',
      schedule: '1m',
      prompt: 'x',
      deliverTo: ['telegram:1', 'slack:down'],
    })
    await harness.service.add({ name: 'quiet', scheduleType: 'every', schedule: '1m', prompt: 'x' })
    await harness.clock.advance(MINUTE)
    await settle(harness)
    const byName = Object.fromEntries((await harness.runs()).map((run) => [run.jobName, run]))
    expect(byName.good).toMatchObject({
      status: 'completed',
      deliveryStatus: 'delivered',
      deliveryError: null,
    })
    expect(byName.half).toMatchObject({ status: 'completed', deliveryStatus: 'failed' })
    expect(byName.half?.deliveryError).toMatch(/slack:down: channel slack:down is unavailable/)
    expect(byName.quiet).toMatchObject({ status: 'completed', deliveryStatus: 'none' })
    expect(
      harness.sender.sent.filter((message) => message.target === 'telegram:1').map((message) => message.text),
    ).toEqual([
      expect.stringMatching(/^\[Cron\] good\nresult \d$/),
      expect.stringMatching(/^\[Cron\] half\nresult \d$/),
    ])
  })

  it('an ai job without an AgentRunner fails with a clear error', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { agentRunner: undefined })
    await harness.service.start()
    await harness.service.add({ name: 'nobody', scheduleType: 'every', schedule: '1m', prompt: 'x' })
    await harness.clock.advance(MINUTE)
    await settle(harness)
    expect((await harness.runs())[0]).toMatchObject({
      status: 'failed',
      error: 'no agent runner configured: ai jobs cannot run',
    })
  })

  it('emits schedule:fire, run:start, run:end and run:error', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    harness.agent.respond((_request, index) => {
      if (index === 1) throw new Error('second fails')
      return 'fine'
    })
    await harness.service.start()
    const seen: string[] = []
    const cron = harness.service
    cron.on('schedule:fire', (event) => seen.push(`fire:${event.outcome}`))
    cron.on('run:start', () => seen.push('start'))
    cron.on('run:end', (event) => seen.push(`end:${event.run.status}`))
    cron.on('run:error', (event) => seen.push(`error:${event.error.message}`))
    await harness.service.add({ name: 'ev', scheduleType: 'every', schedule: '1m', prompt: 'x' })
    await harness.clock.advance(2 * MINUTE)
    await settle(harness)
    expect(seen).toEqual([
      'fire:started',
      'start',
      'end:completed',
      'fire:started',
      'start',
      'end:failed',
      'error:second fails',
    ])
  })
})

describe('retention', () => {
  it('prunes history by age and by count per job', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', {
      retention: { maxAgeMs: 30 * MINUTE, maxRunsPerJob: 10 },
    })
    await harness.service.start()
    await harness.service.add({ name: 'busy', scheduleType: 'every', schedule: '1m', prompt: 'x' })
    await harness.service.add({ name: 'rare', scheduleType: 'every', schedule: '20m', prompt: 'x' })
    await harness.clock.advance(60 * MINUTE)
    await settle(harness)
    await harness.service.scheduler.pruneHistory()
    const busy = await harness.service.history({ job: 'busy', limit: 200 })
    expect(busy).toHaveLength(10)
    expect(busy[0]?.scheduledFor).toBe(Date.parse('2026-01-01T01:00:00Z'))
    const rare = await harness.service.history({ job: 'rare', limit: 200 })
    expect(rare.map((run) => new Date(run.scheduledFor).toISOString().slice(11, 16))).toEqual([
      '01:00',
      '00:40',
    ])
  })

  it('maintenance prunes on its own with the defaults (30 days / 1000 per job)', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { leaseMs: 6 * 3_600_000 })
    await harness.service.start()
    await harness.service.add({ name: 'daily', scheduleType: 'cron', schedule: '0 0 * * *', prompt: 'x' })
    await harness.clock.advance(40 * 24 * 60 * MINUTE)
    await settle(harness)
    const history = await harness.service.history({ job: 'daily', limit: 200 })
    expect(history.length).toBeGreaterThanOrEqual(30)
    expect(history.length).toBeLessThanOrEqual(31)
  })
})

describe('a job changed by another process', () => {
  it('re-reads the job at fire time: paused elsewhere means not fired', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    await harness.service.start()
    const { job } = await harness.service.add({
      name: 'shared',
      scheduleType: 'cron',
      schedule: '*/5 * * * *',
      prompt: 'x',
    })
    // another process pauses it directly in the database
    const other = new SqliteCronStore(harness.database.connect())
    await other.updateJob(job.id, { enabled: false, updatedAt: job.updatedAt + 1 })
    await harness.clock.advance(10 * MINUTE)
    await settle(harness)
    expect(await harness.runs()).toEqual([])
    expect(harness.service.scheduler.armedCount).toBe(0)
  })

  it('a separate service with its own clock still validates against its own now', async () => {
    const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'))
    harness = await createHarness('2026-01-01T00:00:00Z')
    const lone = new CronService({
      store: harness.store,
      clock,
      agentRunner: new RecordingAgentRunner(),
      defaultTimezone: 'UTC',
    })
    const error = await lone
      .create({ name: 'past', scheduleType: 'at', schedule: '2025-12-31T23:59:00Z', prompt: 'x' })
      .then(
        () => {
          throw new Error('expected a rejection')
        },
        (caught: unknown) => caught as Error,
      )
    expect(error.message).toMatch(/in the past/)
  })
})

describe('life cycle', () => {
  it('await using stops the service (timers cleared, owner removed, runs interrupted)', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    harness.agent.respond(() => new Promise(() => {}))
    {
      await using service = harness.another()
      await service.start()
      await service.start() // idempotent
      await service.add({ name: 'scoped', scheduleType: 'every', schedule: '1m', prompt: 'x' })
      await harness.clock.advance(MINUTE)
      expect(service.scheduler.runningCount).toBe(1)
    }
    expect(harness.clock.pendingTimers).toBe(0)
    expect((await harness.runs()).map((run) => run.status)).toEqual(['interrupted'])
    const owners = await harness.database.db.selectFrom('cron_owners').selectAll().execute()
    expect(owners).toEqual([])
  })

  it('arms every stored job at start when there are more than one page of them', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    const now = harness.clock.now().getTime()
    // 1,201 jobs: more than two of start-up's 500-job pages, and one paused job among them.
    for (let index = 0; index < 1201; index++) {
      const name = `job-${String(index).padStart(4, '0')}`
      await harness.store.insertJob(
        createTestJob({ id: name, name, enabled: index !== 700, nextRunAt: now + MINUTE + index }),
      )
    }
    await harness.service.start()
    expect(harness.service.scheduler.armedCount).toBe(1200)
    await harness.clock.advance(MINUTE + 1200)
    await settle(harness)
    // Every armed job fired once.
    const counted = await harness.database.db
      .selectFrom('cron_runs')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow()
    expect(Number(counted.count)).toBe(1200)
  })

  it('start and stop reject an already aborted signal with its reason', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    const controller = new AbortController()
    const reason = new Error('no')
    controller.abort(reason)
    await expect(harness.service.start({ signal: controller.signal })).rejects.toBe(reason)
    expect(harness.service.scheduler.isRunning).toBe(false)
    await expect(harness.service.stop({ signal: controller.signal })).rejects.toBe(reason)
  })
})

describe('a failing database', () => {
  it('a claim that fails is reported and retried, not dropped', async () => {
    const memory = new MemoryCronStore()
    let failures = 1
    const store = new Proxy(memory, {
      get(target, key) {
        if (key === 'insertRuns' && failures > 0) {
          return async () => {
            failures--
            throw new Error('database is locked')
          }
        }
        const value = Reflect.get(target, key)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'))
    const agent = new RecordingAgentRunner()
    const service = new CronService({ store, clock, agentRunner: agent, defaultTimezone: 'UTC' })
    const errors: string[] = []
    service.on('run:error', (event) => errors.push(event.error.message))
    await service.start()
    await service.add({ name: 'retry', scheduleType: 'every', schedule: '1m', prompt: 'x' })
    await clock.advance(MINUTE + 250)
    await service.scheduler.whenIdle()
    expect(errors).toEqual(['database is locked'])
    const runs = await memory.listRuns()
    expect(runs).toHaveLength(1)
    expect(runs[0]).toMatchObject({ status: 'completed', scheduledFor: Date.parse('2026-01-01T00:01:00Z') })
    expect((runs[0]?.startedAt ?? 0) - (runs[0]?.scheduledFor ?? 0)).toBe(250)
    await service.stop()
  })
})

/** A logger that keeps its warnings (message and fields) and drops the rest. */
function warningLogger() {
  const warnings: { message: string; fields?: Record<string, unknown> }[] = []
  const logger = {
    debug() {},
    info() {},
    warn(message: string, fields?: Record<string, unknown>) {
      warnings.push({ message, ...(fields === undefined ? {} : { fields }) })
    },
    error() {},
  }
  return { logger, warnings }
}
