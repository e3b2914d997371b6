/** The port shapes of ADR 0006, exercised through the service. */
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import {
  type AgentRunner,
  type AgentRunResult,
  type LogFields,
  type Logger,
  silentLogger,
  systemClock,
} from './ports.js'
import { FakeClock } from './testing/fake-clock.js'

const MINUTE = 60_000
let harness: Harness | undefined

afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
})

describe('ports (ADR 0006)', () => {
  it('clocks return a Date', () => {
    expect(systemClock.now()).toBeInstanceOf(Date)
    const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'))
    expect(clock.now()).toEqual(new Date('2026-01-01T00:00:00Z'))
    clock.jump(MINUTE)
    expect(clock.now().toISOString()).toBe('2026-01-01T00:01:00.000Z')
  })

  it('agent and shell runners get (request, { signal }); the request carries no signal; sends get a signal', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    await harness.service.start()
    await harness.service.add({
      name: 'ask',
      scheduleType: 'every',
      schedule: '1m',
      prompt: 'x',
      deliverTo: ['telegram:1'],
    })
    await harness.service.add({
      name: 'sh',
      scheduleType: 'every',
      schedule: '1m',
      command: 'ls',
      cwd: '/srv',
    })
    await harness.clock.advance(MINUTE)
    await harness.service.scheduler.whenIdle()
    expect(harness.agent.calls).toHaveLength(1)
    expect(Object.keys(harness.agent.calls[0] ?? {}).sort()).toEqual([
      'jobId',
      'jobName',
      'prompt',
      'runId',
      'sessionKey',
    ])
    expect(harness.agent.signals[0]).toBeInstanceOf(AbortSignal)
    expect(harness.shell.calls[0]).toEqual({
      command: 'ls',
      cwd: '/srv',
      timeoutMs: 600_000,
      jobName: 'sh',
      runId: expect.any(String),
    })
    expect(harness.shell.signals[0]?.aborted).toBe(false)
    expect(harness.sender.signals).toHaveLength(1)
    expect(harness.sender.signals[0]).toBeInstanceOf(AbortSignal)
  })

  it("an ai run's request names the job's id (the same after a rename) and its creator", async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    await harness.service.start()
    const { job } = await harness.service.create({
      name: 'watcher',
      scheduleType: 'every',
      schedule: '1m',
      prompt: 'x',
      createdBy: 'telegram:1:7',
    })
    await harness.service.create({ name: 'hosted', scheduleType: 'every', schedule: '1m', prompt: 'x' })
    await harness.clock.advance(MINUTE)
    await harness.service.scheduler.whenIdle()
    await harness.service.update(job.id, { name: 'renamed' })
    await harness.clock.advance(MINUTE)
    await harness.service.scheduler.whenIdle()
    const requests = harness.agent.calls.map(({ jobName, jobId, creator }) => ({ jobName, jobId, creator }))
    expect(requests).toHaveLength(4)
    expect(requests).toEqual(
      expect.arrayContaining([
        { jobName: 'watcher', jobId: job.id, creator: 'telegram:1:7' },
        { jobName: 'renamed', jobId: job.id, creator: 'telegram:1:7' },
        { jobName: 'hosted', jobId: expect.any(String), creator: undefined },
      ]),
    )
    // A job the host made has no creator: the key is left out, not sent empty.
    expect(harness.agent.calls.filter((call) => 'creator' in call).map((call) => call.jobName)).toEqual([
      'watcher',
      'renamed',
    ])
  })

  it('an agent result may carry usage { inputTokens, outputTokens }; the run stores it', async () => {
    expectTypeOf<AgentRunResult['usage']>().toEqualTypeOf<
      { readonly inputTokens: number; readonly outputTokens: number } | undefined
    >()
    // A runner that says more (the server's totalTokens) fits; one that counts nothing leaves it out.
    const counted = { text: 'counted', usage: { inputTokens: 12, outputTokens: 3, totalTokens: 15 } }
    const agentRunner: AgentRunner = {
      run: async (request) => (request.jobName === 'counted' ? counted : { text: 'uncounted' }),
    }
    harness = await createHarness('2026-01-01T00:00:00Z', { agentRunner })
    await harness.service.start()
    for (const name of ['counted', 'uncounted'])
      await harness.service.add({ name, scheduleType: 'every', schedule: '1m', prompt: 'x' })
    await harness.clock.advance(MINUTE)
    await harness.service.scheduler.whenIdle()
    const runs = await harness.service.history()
    expect(Object.fromEntries(runs.map((run) => [run.jobName, [run.inputTokens, run.outputTokens]]))).toEqual(
      {
        counted: [12, 3],
        uncounted: [null, null],
      },
    )
  })

  it('logs through the object logger with structured fields', async () => {
    const lines: [string, string, LogFields | undefined][] = []
    const logger: Logger = {
      debug: (message, fields) => lines.push(['debug', message, fields]),
      info: (message, fields) => lines.push(['info', message, fields]),
      warn: (message, fields) => lines.push(['warn', message, fields]),
      error: (message, fields) => lines.push(['error', message, fields]),
    }
    harness = await createHarness('2026-01-01T00:00:00Z', { logger })
    await harness.service.start()
    await harness.service.stop()
    expect(lines).toEqual([
      [
        'info',
        'cron scheduler started',
        { owner: 'owner-0', jobs: 0, missed: 0, interrupted: 0, otherSchedulers: 0 },
      ],
      ['info', 'cron scheduler stopped', { owner: 'owner-0' }],
    ])
    expect(() => silentLogger.error('dropped', { any: 1 })).not.toThrow()
  })
})
