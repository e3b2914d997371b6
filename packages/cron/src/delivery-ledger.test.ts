/**
 * The delivery ledger (issue 23 item 2): one `cron_deliveries` row per (run, target), retried with
 * backoff or the channel's Retry-After on the injected clock, resumed after a restart, never sent
 * twice where the channel cannot tell; and the per-job notify policy (item 3).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import { DeliveryError } from './errors.js'
import type { NotifyPolicy } from './model.js'
import type { CronSchedulerEvents } from './scheduler-events.js'
import { CronService } from './service.js'
import { FakeClock } from './testing/fake-clock.js'
import { MemoryCronStore } from './testing/memory-cron-store.js'
import { RecordingChannelSender } from './testing/recording-runners.js'
import { createTestJob } from './testing/test-job.js'

const MINUTE = 60_000
const START = Date.parse('2026-01-01T00:00:00Z')
let harness: Harness | undefined

afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
})

/** Every `delivery:end` of `target`, in order. */
function recordDeliveryEnds(target: Harness): CronSchedulerEvents['delivery:end'][] {
  const ends: CronSchedulerEvents['delivery:end'][] = []
  target.service.on('delivery:end', (event) => ends.push(event))
  return ends
}

/** Adds `news`, an ai job at the top of every hour, and runs its first occurrence (01:00). */
async function runNewsOnce(target: Harness, deliverTo: readonly string[]): Promise<string> {
  await target.service.start()
  await target.service.add({
    name: 'news',
    scheduleType: 'cron',
    schedule: '0 * * * *',
    prompt: 'x',
    deliverTo: [...deliverTo],
  })
  const ended = target.service.scheduler.events.next('run:end')
  await target.clock.advance(60 * MINUTE)
  const { run } = await ended
  return run.id
}

describe('retries', () => {
  it('a channel that fails twice with Retry-After, then succeeds: one row delivered after 3 attempts, the waits honoured', async () => {
    harness = await createHarness(START)
    const sentAt: number[] = []
    harness.sender.respond(() => {
      sentAt.push(harness?.clock.now().getTime() ?? 0)
      if (sentAt.length <= 2)
        throw new DeliveryError('telegram: 429 Too Many Requests', { retryAfterMs: 7000 })
    })
    const ends = recordDeliveryEnds(harness)
    const runId = await runNewsOnce(harness, ['telegram:1'])
    const due = START + 60 * MINUTE
    expect((await harness.store.getRun(runId))?.deliveryStatus).toBe('pending')
    // Not a millisecond early: the channel asked for 7 s.
    await harness.clock.advance(6999)
    expect(sentAt).toEqual([due])
    await harness.clock.advance(1)
    await harness.clock.advance(7000)
    await harness.service.scheduler.whenIdle()
    expect(sentAt).toEqual([due, due + 7000, due + 14_000])
    const rows = await harness.store.listDeliveries([runId])
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({
      target: 'telegram:1',
      status: 'delivered',
      attempts: 3,
      nextAttemptAt: null,
      lastError: null,
      deliveredAt: due + 14_000,
    })
    expect(await harness.store.getRun(runId)).toMatchObject({
      status: 'completed',
      deliveryStatus: 'delivered',
      deliveryError: null,
    })
    expect(ends.map((end) => [end.target, end.status, end.attempt, end.final])).toEqual([
      ['telegram:1', 'retrying', 1, false],
      ['telegram:1', 'retrying', 2, false],
      ['telegram:1', 'delivered', 3, true],
    ])
    expect(ends[0]?.error).toBe('telegram: 429 Too Many Requests')
    // One idempotency key per (run, target), the same on every attempt.
    expect(new Set(harness.sender.idempotencyKeys)).toEqual(new Set([rows[0]?.id]))
  })

  it('a permanently failing channel: failed at once with its reason; the run status is unchanged', async () => {
    harness = await createHarness(START)
    harness.sender.respond(() => {
      throw new DeliveryError('telegram: chat not found (400)', { permanent: true })
    })
    const ends = recordDeliveryEnds(harness)
    const runId = await runNewsOnce(harness, ['telegram:1'])
    await harness.clock.advance(60 * MINUTE - 1)
    expect(harness.sender.signals).toHaveLength(1)
    expect(await harness.store.getRun(runId)).toMatchObject({
      status: 'completed',
      deliveryStatus: 'failed',
      deliveryError: 'telegram:1: telegram: chat not found (400)',
    })
    expect(ends.map((end) => [end.status, end.final])).toEqual([['failed', true]])
  })

  it('a channel that keeps failing: retried with exponential backoff until maxAttempts, then failed with the last reason', async () => {
    harness = await createHarness(START, {
      delivery: { maxAttempts: 4, baseDelayMs: 10_000, random: () => 0 },
    })
    const sentAt: number[] = []
    harness.sender.respond(() => {
      sentAt.push(harness?.clock.now().getTime() ?? 0)
      throw new Error(`HTTP 502 (${sentAt.length})`)
    })
    const runId = await runNewsOnce(harness, ['slack:C1'])
    await harness.clock.advance(2 * MINUTE)
    await harness.service.scheduler.whenIdle()
    const due = START + 60 * MINUTE
    // random 0: half of 10 s, 20 s and 40 s.
    expect(sentAt).toEqual([due, due + 5000, due + 15_000, due + 35_000])
    expect((await harness.store.listDeliveries([runId]))[0]).toMatchObject({
      status: 'failed',
      attempts: 4,
      lastError: 'HTTP 502 (4)',
    })
    expect(await harness.store.getRun(runId)).toMatchObject({
      status: 'completed',
      deliveryStatus: 'failed',
      deliveryError: 'slack:C1: HTTP 502 (4)',
    })
  })

  it('two targets, one failing: a row per target, the summary failed naming only the failing one', async () => {
    harness = await createHarness(START, { delivery: { maxAttempts: 2, random: () => 0 } })
    harness.sender.failingTargets.add('slack:down')
    const runId = await runNewsOnce(harness, ['telegram:1', 'slack:down'])
    await harness.clock.advance(MINUTE)
    await harness.service.scheduler.whenIdle()
    const rows = await harness.store.listDeliveries([runId])
    expect(rows.map((row) => [row.target, row.status, row.attempts])).toEqual([
      ['slack:down', 'failed', 2],
      ['telegram:1', 'delivered', 1],
    ])
    expect(await harness.store.getRun(runId)).toMatchObject({
      status: 'completed',
      deliveryStatus: 'failed',
      deliveryError: 'slack:down: channel slack:down is unavailable',
    })
    expect(harness.sender.sent.map((sent) => sent.target)).toEqual(['telegram:1'])
  })
})

describe('restarts', () => {
  it('a pending delivery is resumed by a new scheduler on the same database file', async () => {
    harness = await createHarness(START)
    let calls = 0
    harness.sender.respond(() => {
      calls += 1
      if (calls === 1) throw new DeliveryError('rate limited', { retryAfterMs: 30_000 })
    })
    const runId = await runNewsOnce(harness, ['telegram:1'])
    await harness.service.stop()
    const second = harness.another()
    await second.start()
    expect(calls).toBe(1)
    await harness.clock.advance(30_000)
    await second.scheduler.whenIdle()
    expect(calls).toBe(2)
    expect((await harness.store.listDeliveries([runId]))[0]).toMatchObject({
      status: 'delivered',
      attempts: 2,
      owner: second.scheduler.ownerId,
    })
    expect((await harness.store.getRun(runId))?.deliveryStatus).toBe('delivered')
  })

  it('a send a dead scheduler left mid-way is not sent again on a channel that cannot deduplicate', async () => {
    harness = await createHarness(START)
    harness.sender.respond(() => {
      throw new DeliveryError('busy', { retryAfterMs: 30_000 })
    })
    const runId = await runNewsOnce(harness, ['telegram:1'])
    await harness.service.stop()
    // A scheduler that claimed the retry and died before it finished (no heartbeat, ever).
    const [row] = await harness.store.listDeliveries([runId])
    await harness.clock.advance(30_000)
    expect(await harness.store.claimDelivery(row?.id ?? '', { owner: 'ghost', now: START })).toBeDefined()
    harness.sender.respond(() => {})
    const second = harness.another()
    const ended = second.scheduler.events.next('delivery:end')
    await second.start()
    expect(await ended).toMatchObject({
      target: 'telegram:1',
      status: 'failed',
      final: true,
      error: 'unknown whether delivered: the server stopped mid-send',
    })
    await second.scheduler.whenIdle()
    expect(harness.sender.sent).toEqual([])
    expect(await harness.store.getRun(runId)).toMatchObject({
      deliveryStatus: 'failed',
      deliveryError: 'telegram:1: unknown whether delivered: the server stopped mid-send',
    })
  })

  it('on a channel that deduplicates, it is sent again with the same idempotency key', async () => {
    harness = await createHarness(START)
    harness.sender.deduplicating.add('webhook')
    harness.sender.respond(() => {
      throw new DeliveryError('busy', { retryAfterMs: 30_000 })
    })
    const runId = await runNewsOnce(harness, ['webhook'])
    await harness.service.stop()
    const [row] = await harness.store.listDeliveries([runId])
    await harness.clock.advance(30_000)
    await harness.store.claimDelivery(row?.id ?? '', { owner: 'ghost', now: START })
    harness.sender.respond(() => {})
    const second = harness.another()
    await second.start()
    await harness.clock.advance(1)
    await second.scheduler.whenIdle()
    expect(harness.sender.sent.map((sent) => sent.target)).toEqual(['webhook'])
    expect(harness.sender.idempotencyKeys).toEqual([row?.id, row?.id])
    expect((await harness.store.listDeliveries([runId]))[0]).toMatchObject({
      status: 'delivered',
      attempts: 3,
    })
  })
})

describe('notify policy', () => {
  /** Runs `notify` job `check` five times (ok, fail, fail, ok, ok); returns the texts delivered. */
  async function deliveredUnder(notify: NotifyPolicy): Promise<string[]> {
    harness = await createHarness(START)
    const outcomes = [true, false, false, true, true]
    harness.agent.respond((_request, index) => {
      if (outcomes[index] === false) throw new Error(`broken ${index + 1}`)
      return `fine ${index + 1}`
    })
    await harness.service.start()
    await harness.service.add({
      name: 'check',
      scheduleType: 'every',
      schedule: '1m',
      prompt: 'x',
      deliverTo: ['telegram:1'],
      notify,
    })
    for (let run = 0; run < outcomes.length; run++) {
      await harness.clock.advance(MINUTE)
      await harness.service.scheduler.whenIdle()
    }
    const runs = await harness.runs()
    expect(runs.map((run) => run.status)).toEqual(['completed', 'failed', 'failed', 'completed', 'completed'])
    const skipped = runs.filter((run) => run.deliveryStatus === 'none').length
    expect(skipped).toBe(outcomes.length - harness.sender.sent.length)
    await harness.cleanup()
    const texts = harness.sender.sent.map((sent) => sent.text.split('\n')[1] ?? '')
    harness = undefined
    return texts
  }

  it('always (the default) delivers every run', async () => {
    expect(await deliveredUnder('always')).toEqual(['fine 1', 'broken 2', 'broken 3', 'fine 4', 'fine 5'])
  })

  it('failure delivers failed runs only', async () => {
    expect(await deliveredUnder('failure')).toEqual(['broken 2', 'broken 3'])
  })

  it('state_changes delivers the first failure and the recovery', async () => {
    expect(await deliveredUnder('state_changes')).toEqual(['broken 2', 'fine 4'])
  })

  it('never delivers nothing', async () => {
    expect(await deliveredUnder('never')).toEqual([])
  })

  it('is stored, defaults to always, can be changed, and an unknown policy is refused', async () => {
    harness = await createHarness(START)
    await harness.service.start()
    const { job } = await harness.service.add({
      name: 'n',
      scheduleType: 'every',
      schedule: '1h',
      prompt: 'x',
    })
    expect(job.notify).toBe('always')
    await harness.service.update('n', { notify: 'failure' })
    expect((await harness.store.getJob(job.id))?.notify).toBe('failure')
    await expect(harness.service.update('n', { notify: 'sometimes' as NotifyPolicy })).rejects.toMatchObject({
      code: 'CRON_INVALID_INPUT',
    })
  })
})

describe('the sweep with many deliveries waiting', () => {
  it('a full page of rows due later is read once, not again and again (the sweep ends)', async () => {
    // Counts the store's reads of pending rows: a sweep that re-read the same page for ever would
    // pass any bound (and, on a store that answers at once, starve the event loop).
    class CountingStore extends MemoryCronStore {
      reads = 0
      override async pendingDeliveries(input: { readonly limit: number }) {
        this.reads++
        if (this.reads > 20) throw new Error('the sweep keeps reading the same rows')
        return super.pendingDeliveries(input)
      }
    }
    const store = new CountingStore()
    const clock = new FakeClock(START)
    const job = createTestJob({ name: 'many' })
    await store.insertJob(job)
    await store.insertDeliveries(
      Array.from({ length: 150 }, (_, index) => ({
        id: `d-${index}`,
        runId: `r-${index}`,
        jobId: job.id,
        target: 'telegram:1',
        text: 'x',
        createdAt: START,
        nextAttemptAt: START + 10 * MINUTE + index,
      })),
    )
    const service = new CronService({ store, clock, channelSender: new RecordingChannelSender() })
    await service.start()
    await service.scheduler.whenIdle()
    // A few maintenance rounds: each sweeps once.
    await clock.advance(MINUTE)
    await service.scheduler.whenIdle()
    expect(store.reads).toBeGreaterThan(0)
    expect(store.reads).toBeLessThanOrEqual(10)
    await service.stop()
  })
})
