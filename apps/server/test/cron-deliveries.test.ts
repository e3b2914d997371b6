// Issue 23 item 2: cron's delivery ledger over the server's channels. A channel's failure reaches
// the ledger as cron's DeliveryError (Retry-After honoured on the injected clock, permanent failures
// not retried); the webhook carries the delivery id as Idempotency-Key, the same on every attempt;
// GET /api/cron/runs/:id shows the per-target rows.

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CronService, DeliveryError } from '@lango/cron'
import { type CronDatabase, migrateCron, SqliteCronStore } from '@lango/cron/sqlite'
import { FakeClock, RecordingAgentRunner } from '@lango/cron/testing'
import { waitFor } from '@lango/vitest-config/wait-for'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cronDeliverySender, toDeliveryError } from '../src/channels/delivery-error.js'
import { ChannelError, ChannelRouter, WebhookChannel } from '../src/channels/index.js'
import { type FakeService, startWebhookReceiver } from './fixtures/fake-chat-apis.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

describe('toDeliveryError', () => {
  it('marks wrong targets, tokens and 4xx answers permanent, and reads the Retry-After', () => {
    const auth = toDeliveryError(
      new ChannelError('CHANNEL_AUTH_FAILED', 'telegram: the Bot API rejected the bot token (401)'),
    )
    expect(auth).toMatchObject({
      permanent: true,
      message: 'telegram: the Bot API rejected the bot token (401)',
    })
    expect(
      toDeliveryError(new ChannelError('CHANNEL_SEND_FAILED', 'x', { data: { status: 400 } })).permanent,
    ).toBe(true)
    const limited = toDeliveryError(
      new ChannelError('CHANNEL_SEND_FAILED', 'sendMessage failed: 429', {
        data: { status: 429, retryAfterSeconds: 3 },
      }),
    )
    expect(limited).toMatchObject({ permanent: false, retryAfterMs: 3000 })
    expect(
      toDeliveryError(new ChannelError('CHANNEL_SEND_FAILED', 'y', { data: { status: 503 } })),
    ).toMatchObject({
      permanent: false,
      retryAfterMs: undefined,
    })
    expect(DeliveryError.is(toDeliveryError(new Error('socket hang up')))).toBe(true)
  })
})

describe('cron deliveries through a webhook', () => {
  let receiver: FakeService
  let dir: string
  let db: Kysely<CronDatabase>
  let cron: CronService
  let clock: FakeClock

  beforeEach(async () => {
    receiver = await startWebhookReceiver()
    dir = await mkdtemp(join(tmpdir(), 'lango-deliveries-'))
    db = new Kysely<CronDatabase>({
      dialect: new SqliteDialect({ database: new Database(join(dir, 'lango.db')) }),
    })
    await migrateCron(db)
    clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'))
    // One POST per ledger attempt: the ledger owns the retries here.
    const channels = new ChannelRouter({
      adapters: [new WebhookChannel({ url: `${receiver.url}/hook`, retry: { maxAttempts: 1 } })],
    })
    const agent = new RecordingAgentRunner()
    cron = new CronService({
      store: new SqliteCronStore(db),
      clock,
      agentRunner: agent,
      channelSender: cronDeliverySender(channels, channels),
      defaultTimezone: 'UTC',
      leaseMs: 3_600_000,
    })
    await cron.start()
  })
  afterEach(async () => {
    await cron.stop()
    await db.destroy()
    await receiver.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('a 429 with Retry-After is retried after that wait with the same Idempotency-Key, then delivered', async () => {
    receiver.answerNext({ status: 429, retryAfter: 120 })
    await cron.add({
      name: 'hook',
      scheduleType: 'every',
      schedule: '1h',
      prompt: 'x',
      deliverTo: ['webhook:ops'],
    })
    const { runId } = await cron.trigger('hook')
    await waitFor(async () => (await cron.deliveries([runId ?? '']))[0]?.status === 'pending')
    const [pending] = await cron.deliveries([runId ?? ''])
    expect(pending).toMatchObject({
      attempts: 1,
      lastError: 'webhook delivery failed: HTTP 429 after 1 attempt',
    })
    expect(pending?.nextAttemptAt).toBe(clock.now().getTime() + 120_000)
    await clock.advance(119_999)
    expect(receiver.requests).toHaveLength(1)
    await clock.advance(1)
    await waitFor(async () => (await cron.getRun(runId ?? '')).deliveryStatus === 'delivered')
    const keys = receiver.requests.map((request) => request.headers['idempotency-key'])
    expect(keys).toEqual([pending?.id, pending?.id])
    expect((await cron.deliveries([runId ?? '']))[0]).toMatchObject({ status: 'delivered', attempts: 2 })
  })

  it('a 400 is permanent: failed after one attempt, the run still completed', async () => {
    receiver.answerNext({ status: 400 })
    await cron.add({
      name: 'hook',
      scheduleType: 'every',
      schedule: '1h',
      prompt: 'x',
      deliverTo: ['webhook'],
    })
    const { runId } = await cron.trigger('hook')
    await waitFor(async () => (await cron.getRun(runId ?? '')).deliveryStatus === 'failed')
    expect(await cron.getRun(runId ?? '')).toMatchObject({
      status: 'completed',
      deliveryError: 'webhook: webhook delivery failed: HTTP 400 after 1 attempt',
    })
    await clock.advance(3_600_000 - 1)
    expect(receiver.requests).toHaveLength(1)
  })
})

describe('GET /api/cron/runs/:id', () => {
  const TOKEN = 'deliveries-token-0123456789abcdef'
  const auth = { authorization: `Bearer ${TOKEN}` }
  let server: TestServer

  beforeEach(async () => {
    server = await startTestServer(undefined, { LANGO_API_TOKEN: TOKEN })
  })
  afterEach(async () => {
    await server?.dispose()
  })

  it('shows the run with one delivery row per target; the notify policy is stored; an unknown run is 404', async () => {
    const created = await server.request('/api/cron/jobs', {
      headers: auth,
      json: {
        kind: 'shell',
        name: 'two-targets',
        schedule_type: 'cron',
        schedule: '0 3 * * *',
        command: 'echo hello',
        deliver_to: ['log', 'log:ops'],
        notify: 'always',
      },
    })
    expect(created.status).toBe(200)
    const job = ((await created.json()) as Json).job
    expect(job.notify).toBe('always')
    const triggered = (await (
      await server.request(`/api/cron/jobs/${job.id}/trigger`, { method: 'POST', headers: auth })
    ).json()) as Json
    const run = await until(async () => {
      const response = await server.request(`/api/cron/runs/${triggered.run_id}`, { headers: auth })
      const body = (await response.json()) as Json
      return body.delivery_status === 'delivered' ? body : undefined
    })
    expect(run).toMatchObject({ id: triggered.run_id, status: 'completed', job_name: 'two-targets' })
    expect(run.deliveries.map((row: Json) => [row.target, row.status, row.attempts, row.last_error])).toEqual(
      [
        ['log', 'delivered', 1, null],
        ['log:ops', 'delivered', 1, null],
      ],
    )
    const missing = await server.request('/api/cron/runs/no-such-run', { headers: auth })
    expect(missing.status).toBe(404)
    const refused = await server.request('/api/cron/jobs', {
      headers: auth,
      json: {
        kind: 'shell',
        name: 'bad',
        schedule_type: 'cron',
        schedule: '0 3 * * *',
        command: 'true',
        notify: 'often',
      },
    })
    expect(refused.status).toBe(400)
  })
})
