/**
 * Deliveries are bounded (issue 10 §3): each send gets a signal that a timeout, `stop()` and
 * removing the job abort, so a hung channel never holds a run slot or blocks `stop()`.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import type { ChannelSender } from './ports.js'
import type { CronJobInput } from './service.js'

const MINUTE = 60_000
let harness: Harness | undefined

afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
})

/** A channel that never answers and ignores its signal: the worst a chat platform can do. */
function hungChannel(): ChannelSender & { readonly signals: AbortSignal[] } {
  const signals: AbortSignal[] = []
  return {
    signals,
    send(_target, _text, options) {
      signals.push(options.signal)
      return new Promise<void>(() => {})
    },
  }
}

/** Starts the service and adds `news`: an `ai` job every hour on the hour, delivering to `job.deliverTo`. */
async function startWithNews(
  { service }: Harness,
  job: Partial<CronJobInput> & Pick<CronJobInput, 'deliverTo'>,
): Promise<void> {
  await service.start()
  await service.add({ name: 'news', scheduleType: 'cron', schedule: '0 * * * *', prompt: 'x', ...job })
}

/** Resolves with `label` when `promise` settles, or with 'still waiting' after two real seconds. */
function within<T>(promise: Promise<T>, label: string): Promise<string> {
  return Promise.race([
    promise.then(() => label),
    new Promise<string>((resolve) => setTimeout(resolve, 2000, 'still waiting')),
  ])
}

describe('delivery timeout and cancellation', () => {
  it('a delivery that hangs times out after deliveryTimeoutMs (default 30 s): recorded failed, slot freed', async () => {
    const channel = hungChannel()
    harness = await createHarness('2026-01-01T00:00:00Z', { channelSender: channel })
    await startWithNews(harness, { deliverTo: ['telegram:1'] })
    const ended = harness.service.scheduler.events.next('run:end')
    await harness.clock.advance(60 * MINUTE)
    expect(harness.service.scheduler.runningCount).toBe(1)
    expect(channel.signals).toHaveLength(1)
    expect(channel.signals[0]?.aborted).toBe(false)
    await harness.clock.advance(30_000)
    const { run } = await ended
    expect(run).toMatchObject({ status: 'completed', deliveryStatus: 'failed' })
    expect(run.deliveryError).toBe('telegram:1: delivery timed out after 30s')
    expect(channel.signals[0]?.aborted).toBe(true)
    expect(harness.service.scheduler.runningCount).toBe(0)
    const [stored] = await harness.runs()
    expect(stored).toMatchObject({
      deliveryStatus: 'failed',
      deliveryError: 'telegram:1: delivery timed out after 30s',
    })
  })

  it('deliveryTimeoutMs sets the bound', async () => {
    const channel = hungChannel()
    harness = await createHarness('2026-01-01T00:00:00Z', {
      channelSender: channel,
      deliveryTimeoutMs: 5000,
    })
    await startWithNews(harness, { deliverTo: ['telegram:1', 'slack:C1'] })
    const ended = harness.service.scheduler.events.next('run:end')
    await harness.clock.advance(60 * MINUTE + 10_000)
    const { run } = await ended
    expect(run.deliveryError).toBe(
      'telegram:1: delivery timed out after 5s; slack:C1: delivery timed out after 5s',
    )
  })

  it('stop() returns promptly while a delivery hangs, records it unknown (not resent), and leaves the next target pending', async () => {
    const channel = hungChannel()
    harness = await createHarness('2026-01-01T00:00:00Z', { channelSender: channel })
    await startWithNews(harness, { deliverTo: ['telegram:1', 'slack:C1'] })
    await harness.clock.advance(60 * MINUTE)
    expect(channel.signals).toHaveLength(1)
    expect(await within(harness.service.stop(), 'stopped')).toBe('stopped')
    expect(channel.signals[0]?.aborted).toBe(true)
    expect(channel.signals).toHaveLength(1)
    const [run] = await harness.runs()
    // The run is final as it was; the send in flight may have reached the chat, so it is not resent
    // (the channel cannot deduplicate), and the next target waits for the next start.
    expect(run).toMatchObject({ status: 'completed', deliveryStatus: 'pending' })
    expect(run?.deliveryError).toBe('telegram:1: unknown whether delivered: the server stopped mid-send')
    const rows = await harness.store.listDeliveries([run?.id ?? ''])
    expect(rows.map((row) => [row.target, row.status, row.attempts])).toEqual([
      ['slack:C1', 'pending', 0],
      ['telegram:1', 'failed', 1],
    ])
  })

  it('a run that completes with an empty result is delivered as "(empty result)", not as a bare header', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    harness.agent.respond(() => ({ text: ' \n' }))
    await startWithNews(harness, { deliverTo: ['telegram:1'] })
    const ended = harness.service.scheduler.events.next('run:end')
    await harness.clock.advance(60 * MINUTE)
    const { run } = await ended
    expect(run).toMatchObject({ status: 'completed', deliveryStatus: 'delivered' })
    expect(harness.sender.sent).toEqual([{ target: 'telegram:1', text: '[Cron] news\n(empty result)' }])
  })

  it('removing the job aborts its hung delivery at once', async () => {
    const channel = hungChannel()
    harness = await createHarness('2026-01-01T00:00:00Z', { channelSender: channel })
    await startWithNews(harness, { deliverTo: ['telegram:1'] })
    await harness.clock.advance(60 * MINUTE)
    expect(await within(harness.service.remove('news'), 'removed')).toBe('removed')
    expect(channel.signals[0]?.aborted).toBe(true)
    expect(harness.service.scheduler.runningCount).toBe(0)
  })

  it('a run that times out is still delivered, saying it timed out (the run timeout does not abort the delivery)', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z')
    harness.agent.respond(() => new Promise(() => {}))
    await startWithNews(harness, { timeout: '1m', deliverTo: ['telegram:1'] })
    const ended = harness.service.scheduler.events.next('run:end')
    await harness.clock.advance(61 * MINUTE)
    const { run } = await ended
    expect(run).toMatchObject({
      status: 'timed_out',
      error: 'timed out after 1m',
      deliveryStatus: 'delivered',
      deliveryError: null,
    })
    expect(harness.agent.signals[0]?.aborted).toBe(true)
    expect(harness.sender.sent).toEqual([
      { target: 'telegram:1', text: '[Cron] news timed out\ntimed out after 1m' },
    ])
    expect(harness.sender.signals[0]?.aborted).toBe(false)
    const [stored] = await harness.runs()
    expect(stored).toMatchObject({ status: 'timed_out', deliveryStatus: 'delivered' })
  })

  it('auto-pause after consecutive timeouts notifies every target', async () => {
    harness = await createHarness('2026-01-01T00:00:00Z', { maxConsecutiveFailures: 2 })
    harness.agent.respond(() => new Promise(() => {}))
    await startWithNews(harness, { timeout: '1m', deliverTo: ['telegram:1', 'slack:C1'] })
    const paused = harness.service.scheduler.events.next('job:pause')
    await harness.clock.advance(3 * 60 * MINUTE)
    await harness.service.scheduler.whenIdle()
    expect((await paused).reason).toBe('paused after 2 consecutive failures; last error: timed out after 1m')
    expect((await harness.runs()).map((run) => [run.status, run.deliveryStatus])).toEqual([
      ['timed_out', 'delivered'],
      ['timed_out', 'delivered'],
    ])
    expect(await harness.service.get('news')).toMatchObject({ enabled: false, consecutiveFailures: 2 })
    const notices = harness.sender.sent.filter((message) => message.text.includes('This job was paused'))
    expect(notices).toEqual(
      ['telegram:1', 'slack:C1'].map((target) => ({
        target,
        text:
          '[Cron] news\nThis job was paused after 2 consecutive failures. Last error: timed out after 1m\n' +
          'Fix the job, then resume it (cron_resume).',
      })),
    )
  })
})
