import { FakeClock } from '@lango/cron/testing'
import { describe, expect, it } from 'vitest'
import { Alerts } from '../src/alerts/alerts.js'
import { DatabaseOutage } from '../src/alerts/database-outage.js'
import { budgetAlert } from '../src/alerts/sources.js'
import type { Logger } from '../src/logger-port.js'

const START = Date.parse('2026-03-01T00:00:00Z')

/** An operator channel on the wire's terms: it refuses while `down`, and keeps what it took. */
function operatorChannel() {
  const channel = {
    down: false,
    received: [] as string[],
    async send(_target: string, text: string) {
      if (channel.down) throw new Error('HTTP 503')
      channel.received.push(text)
    },
  }
  return channel
}

/** Lets the sends the clock started settle. */
const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('Alerts: what the operator hears', () => {
  it('holds back repeats of a stall for ten minutes, then says how many there were', async () => {
    const clock = new FakeClock(START)
    const channel = operatorChannel()
    const alerts = new Alerts({ targets: ['webhook'], sender: channel, clock, batchMs: 1000 })
    const stall = (ms: number) =>
      alerts.raise({ kind: 'scheduler_stalled', key: 'scheduler', text: `timers ${ms}ms late` })
    stall(12_000)
    await clock.advance(1000)
    await settle()
    // A database outage: a stall every 12 s for five minutes is not 25 more messages.
    for (let at = 0; at < 25; at++) {
      await clock.advance(12_000)
      stall(12_000)
    }
    await clock.advance(1000)
    await settle()
    expect(channel.received).toHaveLength(1)
    await clock.advance(10 * 60_000)
    stall(13_000)
    await clock.advance(1000)
    await settle()
    expect(channel.received).toHaveLength(2)
    expect(channel.received[1]).toContain(
      `timers 13000ms late (25 more like it since ${new Date(START).toISOString()}, not sent)`,
    )
    expect(alerts.status().raised).toBe(27)
    await alerts.stop()
  })

  // An outside probe: a webhook refusing every run's result sent one alert a minute, all day.
  it("holds back a job's failed deliveries to one target for ten minutes; another target's are sent", async () => {
    const clock = new FakeClock(START)
    const channel = operatorChannel()
    const alerts = new Alerts({ targets: ['webhook'], sender: channel, clock, batchMs: 1000 })
    const failed = (target: string) =>
      alerts.raise({
        kind: 'delivery_failed',
        key: `job-1\u0000${target}`,
        text: `job backup: ${target} refused`,
      })
    failed('slack:C1')
    await clock.advance(1000)
    await settle()
    for (let minute = 0; minute < 9; minute++) {
      await clock.advance(60_000)
      failed('slack:C1')
    }
    failed('telegram:42')
    await clock.advance(1000)
    await settle()
    expect(channel.received).toHaveLength(2)
    expect(channel.received[1]).toContain('telegram:42 refused')
    expect(channel.received.join('\n')).not.toMatch(/slack:C1 refused[\s\S]*slack:C1 refused/)
    await alerts.stop()
  })

  // An outside probe: a job whose day was spent raised one alert per refused fire until midnight,
  // each saying "(agent.budget)" and "after 0 model calls" whichever budget it was.
  it("a job whose day's budget is spent is one alert naming the job and its budget, repeats held back", async () => {
    const clock = new FakeClock(START)
    const channel = operatorChannel()
    const alerts = new Alerts({ targets: ['webhook'], sender: channel, clock, batchMs: 1000 })
    const refused = (runId: string) =>
      budgetAlert({
        purpose: 'run',
        sessionKey: `cron:capped:${runId}`,
        model: 'test-model',
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        steps: 0,
        ok: false,
        budgetExhausted: true,
        budget: 'max_tokens_per_day / max_cost_per_day of the job, cron job capped',
        jobName: 'capped',
        jobId: 'job-7',
        runId,
      })
    alerts.raise(refused('r1'))
    await clock.advance(1000)
    await settle()
    for (let minute = 1; minute <= 5; minute++) {
      await clock.advance(60_000)
      alerts.raise(refused(`r${minute + 1}`))
    }
    await clock.advance(1000)
    await settle()
    expect(channel.received).toHaveLength(1)
    expect(channel.received[0]).toContain(
      'an agent turn of cron job capped (cron:capped:r1) was not started: its budget was already spent (max_tokens_per_day / max_cost_per_day of the job, cron job capped), so no model call was made',
    )
    // A turn its own agent.budget stopped is another alert: another budget.
    alerts.raise(
      budgetAlert({
        purpose: 'chat',
        sessionKey: 'http:ops',
        model: 'test-model',
        usage: { inputTokens: 3000, outputTokens: 300, totalTokens: 3300 },
        steps: 3,
        ok: false,
        budgetExhausted: true,
        budget: 'agent.budget',
      }),
    )
    await clock.advance(1000)
    await settle()
    expect(channel.received).toHaveLength(2)
    expect(channel.received[1]).toContain(
      'an agent turn of http:ops was stopped by its budget (agent.budget) after 3 model calls and 3,300 tokens on test-model',
    )
    await alerts.stop()
  })

  it('quiet alerts raised within one batch are one line with a count, not one line and held-back repeats', async () => {
    const clock = new FakeClock(START)
    const channel = operatorChannel()
    const alerts = new Alerts({ targets: ['webhook'], sender: channel, clock, batchMs: 1000 })
    for (let occurrence = 1; occurrence <= 7; occurrence++)
      alerts.raise({ kind: 'missed_runs', key: 'job-a', text: `job a missed ${occurrence} runs` })
    await clock.advance(1000)
    await settle()
    expect(channel.received).toHaveLength(1)
    expect(channel.received[0]).toContain('job a missed 7 runs (×7)')
    await alerts.stop()
  })

  it('a quiet alert dropped because the batch is full is not taken as sent: the next like it goes out', async () => {
    const clock = new FakeClock(START)
    const channel = operatorChannel()
    const alerts = new Alerts({ targets: ['webhook'], sender: channel, clock, batchMs: 1000, maxPending: 2 })
    alerts.raise({ kind: 'job_paused', key: 'a', text: 'job a was paused' })
    alerts.raise({ kind: 'job_paused', key: 'b', text: 'job b was paused' })
    alerts.raise({ kind: 'scheduler_stalled', key: 'scheduler', text: 'timers 12000ms late' })
    await clock.advance(1000)
    await settle()
    expect(alerts.status().dropped).toBe(1)
    expect(channel.received.join('\n')).not.toContain('timers 12000ms late')
    // Within the ten minutes that hold back a repeat: this one was never sent, so it is not a repeat.
    await clock.advance(12_000)
    alerts.raise({ kind: 'scheduler_stalled', key: 'scheduler', text: 'timers 13000ms late' })
    await clock.advance(1000)
    await settle()
    expect(channel.received.join('\n')).toContain('timers 13000ms late')
    await alerts.stop()
  })

  it('sends a refused message again with backoff, in order, until the channel takes it; failing meanwhile', async () => {
    const clock = new FakeClock(START)
    const channel = operatorChannel()
    channel.down = true
    const alerts = new Alerts({ targets: ['webhook'], sender: channel, clock, batchMs: 1000, retryMs: 5000 })
    alerts.raise({ kind: 'job_paused', key: 'a', text: 'job a was paused' })
    await clock.advance(1000)
    await settle()
    expect(alerts.status()).toMatchObject({ failing: true, waiting: 1, lastError: 'webhook: HTTP 503' })
    alerts.raise({ kind: 'job_paused', key: 'b', text: 'job b was paused' })
    await clock.advance(1000)
    await settle()
    expect(alerts.status()).toMatchObject({ failing: true, waiting: 2 })
    // Tried again after 5 s (still down), then 10 s later: the channel is back.
    await clock.advance(5000)
    await settle()
    expect(channel.received).toEqual([])
    channel.down = false
    await clock.advance(10_000)
    await settle()
    await settle()
    expect(channel.received).toHaveLength(2)
    expect(channel.received[0]).toMatch(
      /^\[Lango alert\]\n\(sent late: refused at \S+: webhook: HTTP 503\)\n[\s\S]*job a was paused/,
    )
    expect(channel.received[1]).toContain('job b was paused')
    expect(alerts.status()).toMatchObject({ failing: false, waiting: 0, lastError: undefined })
    await alerts.stop()
  })
})

describe('Alerts: a full queue while a message is in flight', () => {
  it('drops the oldest waiting one, never the one being sent, and the next sent says how many were dropped', async () => {
    const clock = new FakeClock(START)
    const received: string[] = []
    let release = () => {}
    let first = true
    const channel = {
      async send(_target: string, text: string) {
        if (first) {
          first = false
          await new Promise<void>((resolve) => {
            release = resolve
          })
        }
        received.push(text)
      },
    }
    const alerts = new Alerts({ targets: ['webhook'], sender: channel, clock, batchMs: 1000, maxWaiting: 2 })
    for (const name of ['a', 'b', 'c', 'd']) {
      alerts.raise({ kind: 'job_paused', key: name, text: `job ${name} was paused` })
      await clock.advance(1000)
      await settle()
    }
    release()
    await settle()
    await settle()
    await settle()
    expect(received.map((text) => /job (\w) was paused/.exec(text)?.[1])).toEqual(['a', 'd'])
    expect(received[1]).toContain('(2 earlier alert messages could not be sent and were dropped)')
    expect(alerts.status()).toMatchObject({ waiting: 0, failing: false })
    await alerts.stop()
  })
})

describe('DatabaseOutage: one alert per outage of the database, and one when it ends', () => {
  it('a storm of failed store calls is one alert and a log line a minute; the end is told once; a new outage is told again', async () => {
    const clock = new FakeClock(START)
    const channel = operatorChannel()
    const lines: string[] = []
    const logger: Logger = {
      debug() {},
      info() {},
      warn: (message) => lines.push(message),
      error: (message) => lines.push(message),
    }
    const alerts = new Alerts({ targets: ['telegram:42'], sender: channel, clock, logger, batchMs: 1000 })
    const outage = new DatabaseOutage(alerts, { clock, logger, quietMs: 15_000 })
    const beat = async () => {
      await clock.advance(5_000)
      outage.written()
    }
    // Every due occurrence's claim fails, twice a second, for five minutes; the heartbeat is written.
    for (let at = 0; at < 600; at++) {
      outage.failed('the cron scheduler', 'database or disk is full')
      await clock.advance(500)
      if (at % 10 === 9) outage.written()
    }
    await clock.advance(1000)
    await settle()
    expect(channel.received).toHaveLength(1)
    expect(channel.received[0]).toMatch(
      /^\[Lango alert\]\n\nDatabase failing:\n- a store call of the cron scheduler failed at 2026-03-01T00:00:00.000Z: database or disk is full;/,
    )
    // One alert line, then the failures counted once a minute, not 600 lines.
    expect(lines.filter((line) => line.startsWith('alert: '))).toHaveLength(1)
    expect(lines.filter((line) => line === 'the database is still failing')).toHaveLength(4)

    // Writes work: the first heartbeat a lease after the last failure ends it, once.
    await beat()
    await beat()
    await settle()
    expect(channel.received).toHaveLength(1)
    await beat()
    await beat()
    await clock.advance(1000)
    await settle()
    expect(channel.received).toHaveLength(2)
    expect(channel.received[1]).toMatch(
      /^\[Lango alert\]\n\nDatabase recovered:\n- the database takes writes again: store calls failed from 2026-03-01T00:00:00.000Z to \S+ \(600 failures, the last: database or disk is full\)/,
    )

    // A new outage two minutes later is news: sent, not held back as a repeat of the first.
    await clock.advance(2 * 60_000)
    outage.failed('the instance heartbeat', 'attempt to write a readonly database')
    await clock.advance(1000)
    await settle()
    expect(channel.received).toHaveLength(3)
    expect(channel.received[2]).toContain(
      'Database failing:\n- a store call of the instance heartbeat failed at',
    )
    await alerts.stop()
  })
})
