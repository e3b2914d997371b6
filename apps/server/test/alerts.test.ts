import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import type { ServerConfig } from '../src/config/types.js'
import { silentLogger } from '../src/logger.js'
import { type RunningServer, serve } from '../src/serve.js'
import { openEvents, testConfig, until } from './fixtures/http-server.js'
import { startLangoServe } from './fixtures/lango-serve.js'
import { postgresDatabase } from './fixtures/postgres-database.js'

// The watchdog and the operator's alerts (issue 23): a stalled scheduler — its event loop blocked,
// its clock jumped — is noticed when it runs again, every occurrence due meanwhile ends in a final
// state with a reason, and one alert reaches the operator's channel (`alerts.deliver_to`, here a
// webhook on loopback).

const LEASE_MS = 2_000
const cleanups: (() => Promise<void>)[] = []

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

/** What {@link operatorWebhook} refuses: with `status`, the bodies `when` matches (every one without it). */
interface Refusal {
  status?: number
  when?: (body: Json) => boolean
}

/** The operator's webhook: every POST's JSON body. `failWith` makes it answer that status instead. */
async function operatorWebhook(): Promise<{ url: string; bodies: Json[]; failWith: Refusal }> {
  const bodies: Json[] = []
  const failWith: Refusal = {}
  const server: Server = createServer((request, response) => {
    let text = ''
    request.on('data', (chunk) => {
      text += chunk
    })
    request.on('end', () => {
      const body = JSON.parse(text) as Json
      if (failWith.status !== undefined && (failWith.when?.(body) ?? true)) {
        response.writeHead(failWith.status).end('refused')
        return
      }
      bodies.push(body)
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`, bodies, failWith }
}

async function startServer(
  webhookUrl: string,
  options: { localNow?: () => number; env?: Record<string, string>; deliverTo?: readonly string[] } = {},
): Promise<RunningServer> {
  const made = await testConfig(
    (loaded): ServerConfig => ({
      ...loaded,
      cluster: { ...loaded.cluster, leaseMs: LEASE_MS },
      cron: { ...loaded.cron, minIntervalMs: 1000, maxConsecutiveFailures: 2 },
      channels: {
        ...loaded.channels,
        webhook: { ...loaded.channels.webhook, url: webhookUrl },
      },
      alerts: { deliverTo: options.deliverTo ?? ['webhook'] },
    }),
    options.env,
  )
  const server = await serve({
    config: made.config,
    logger: silentLogger,
    passphrase: '',
    closeGraceMs: 200,
    ...(options.localNow === undefined ? {} : { localNow: options.localNow }),
  })
  cleanups.push(async () => {
    await server.close()
    await rm(made.home, { recursive: true, force: true })
  })
  return server
}

async function health(server: RunningServer): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${server.url}/healthz`)
  return { status: response.status, body: (await response.json()) as Json }
}

/** The job's ledger rows due from `from` (exclusive) to `to` (inclusive). */
async function rowsBetween(server: RunningServer, name: string, from: number, to: number) {
  const runs = await server.app.cron.history({ job: name, limit: 200 })
  return runs.filter((run) => run.scheduledFor > from && run.scheduledFor <= to)
}

/** Blocks this process's event loop (the server runs in it) for `ms`. */
function blockEventLoop(ms: number): void {
  const end = performance.now() + ms
  while (performance.now() < end) {
    // busy: no timer, no socket, no promise runs meanwhile
  }
}

describe('the watchdog and alerts.deliver_to', () => {
  it('an event loop blocked for longer than a lease: every occurrence due meanwhile ends final with a reason, and one alert says so', async () => {
    const webhook = await operatorWebhook()
    const server = await startServer(webhook.url)
    await server.app.cron.add({
      name: 'every-second',
      scheduleType: 'every',
      schedule: '1s',
      command: 'true',
      deliverTo: [],
    })
    // Running on time first: a run completes.
    await until(async () =>
      (await server.app.cron.history({ job: 'every-second', limit: 5 })).some(
        (run) => run.status === 'completed',
      )
        ? true
        : undefined,
    )

    blockEventLoop(3 * LEASE_MS)

    // One message per batch: the stall and the runs it missed (in one, or two if the ledger was slow).
    const alerts = await until(async () => {
      const texts = webhook.bodies.map((body) => String(body.text))
      const all = texts.join('\n')
      return all.includes('Scheduler stalled') && all.includes('Missed runs:') ? texts : undefined
    }, 60_000)
    for (const text of alerts) expect(text).toMatch(/^\[Lango alert\]\n/)
    const all = alerts.join('\n')
    expect(all).toMatch(/the cron scheduler's timers were .* late .*event loop was blocked/)
    expect(all).toContain('job every-second: the occurrence due')

    const { body } = await health(server)
    const stall = body.scheduler_tick.last_stall
    expect(stall).toMatchObject({ cause: 'blocked', stalled_ms: expect.any(Number) })
    expect(stall.stalled_ms).toBeGreaterThan(LEASE_MS)

    // Every occurrence due during the stall has its row, none left running, each skipped one with its reason.
    const since = Date.parse(stall.since)
    const resumedAt = Date.parse(stall.resumed_at)
    await server.app.cron.scheduler.whenIdle()
    const rows = await rowsBetween(server, 'every-second', since, resumedAt)
    const dueInWindow = Math.floor((resumedAt - since) / 1000)
    expect(rows.length).toBeGreaterThanOrEqual(dueInWindow - 1)
    for (const row of rows) {
      expect(row.status).not.toBe('running')
      if (row.status === 'skipped') expect(row.skipReason).toMatch(/^missed/)
    }
    expect(rows.filter((row) => row.status === 'skipped').length).toBeGreaterThan(0)

    // /metrics counts the alerts; /api/alerts says they get through.
    const metrics = await (await fetch(`${server.url}/metrics`)).text()
    expect(metrics).toMatch(/lango_alerts_total\{kind="scheduler_stalled"\} [1-9]/)
    expect(metrics).toMatch(/lango_alert_batches_total\{status="sent"\} [1-9]/)
    const status = (await (await fetch(`${server.url}/api/alerts`)).json()) as Json
    expect(status).toMatchObject({ targets: ['webhook'], failing: false, last_error: null })
  })

  it('a database that does not answer for longer than a lease (PostgreSQL, a table locked): the stall is the store’s, and the alert says so', async () => {
    const database = postgresDatabase('lango_alerts_store')
    await database.create()
    cleanups.push(() => database.drop())
    const webhook = await operatorWebhook()
    const server = await startServer(webhook.url, { env: { LANGO_DATABASE_URL: database.url } })
    await until(async () => ((await health(server)).status === 200 ? true : undefined))
    // Another session holds the owners' table: every heartbeat and upkeep round waits on it, while
    // the server's event loop stays free.
    const locker = new pg.Client({ connectionString: database.url })
    await locker.connect()
    cleanups.push(() => locker.end())
    await locker.query('begin')
    await locker.query('lock table cron_owners in access exclusive mode')
    await new Promise((resolve) => setTimeout(resolve, 3 * LEASE_MS))
    await locker.query('commit')

    const alert = await until(
      async () => webhook.bodies.find((body) => String(body.text).includes('Scheduler stalled')),
      60_000,
    )
    expect(alert.text).toContain('the database did not answer')
    const after = await until(async () => {
      const answer = await health(server)
      return answer.body.scheduler_tick?.last_stall === null ? undefined : answer
    })
    expect(after.body.scheduler_tick.last_stall).toMatchObject({ cause: 'store' })
  })

  it('a clock that jumps forward: /healthz answers 503 stalled until the next tick, then the alert names the jump', async () => {
    const webhook = await operatorWebhook()
    let skewMs = 0
    const server = await startServer(webhook.url, { localNow: () => Date.now() + skewMs })
    await server.app.cron.add({
      name: 'minutely',
      scheduleType: 'cron',
      schedule: '* * * * *',
      command: 'true',
      deliverTo: [],
    })
    await until(async () => ((await health(server)).status === 200 ? true : undefined))

    // Ten minutes pass on the clock between two ticks (jump again if a tick landed in between).
    const stalled = await until(async () => {
      skewMs += 10 * 60_000
      const answer = await health(server)
      return answer.status === 503 ? answer : undefined
    })
    expect(stalled.body).toMatchObject({ status: 'stalled', scheduler_tick: { stale: true } })

    const alert = await until(
      async () => webhook.bodies.find((body) => String(body.text).includes('Scheduler stalled')),
      60_000,
    )
    expect(alert.text).toContain('the clock jumped forward')
    expect(alert.text).toContain('job minutely: the occurrence due')
    const after = await until(async () => {
      const answer = await health(server)
      return answer.status === 200 ? answer : undefined
    })
    expect(after.body.scheduler_tick.last_stall).toMatchObject({ cause: 'clock' })
    const stall = after.body.scheduler_tick.last_stall
    await server.app.cron.scheduler.whenIdle()
    const rows = await rowsBetween(server, 'minutely', Date.parse(stall.since), Date.parse(stall.resumed_at))
    expect(rows.length).toBeGreaterThanOrEqual(9)
    for (const row of rows) {
      expect(row.status).not.toBe('running')
      if (row.status === 'skipped') expect(row.skipReason).toMatch(/^missed/)
    }
  })

  it('an operator channel that refuses alerts shows as failing on /healthz and /api/alerts until one gets through', async () => {
    const webhook = await operatorWebhook()
    webhook.failWith.status = 400
    const server = await startServer(webhook.url)
    const job = await server.app.cron.add({
      name: 'breaks',
      scheduleType: 'every',
      schedule: '1s',
      command: 'exit 3',
      deliverTo: [],
    })
    expect(job.job.name).toBe('breaks')
    // Two failures in a row pause the job (cron.max_consecutive_failures): that is an alert, which the webhook refuses.
    const failing = await until(async () => {
      const answer = await health(server)
      return answer.body.alerts?.failing === true ? answer : undefined
    }, 60_000)
    expect(failing.body.alerts).toEqual({ configured: true, failing: true })
    const status = (await (await fetch(`${server.url}/api/alerts`)).json()) as Json
    expect(status.failing).toBe(true)
    expect(status.last_error).toMatch(/^webhook: /)
    expect(status.last_error).not.toContain(webhook.url)

    // The operator fixes the endpoint; the next alert gets through and clears it.
    webhook.failWith.status = undefined
    await server.app.cron.resume('breaks')
    const cleared = await until(async () => {
      const answer = await health(server)
      return answer.body.alerts?.failing === false ? answer : undefined
    }, 60_000)
    expect(cleared.body.alerts).toEqual({ configured: true, failing: false })
    expect(webhook.bodies.some((body) => String(body.text).includes('job breaks was paused'))).toBe(true)
  })

  it('an alert the operator channel refused (its API down) is sent again once it answers, saying it is late', async () => {
    const webhook = await operatorWebhook()
    webhook.failWith.status = 503
    const server = await startServer(webhook.url)
    await server.app.cron.add({
      name: 'pauses',
      scheduleType: 'every',
      schedule: '1s',
      command: 'exit 3',
      deliverTo: [],
    })
    const waiting = await until(async () => {
      const status = (await (await fetch(`${server.url}/api/alerts`)).json()) as Json
      return status.waiting > 0 && status.failing === true ? status : undefined
    }, 60_000)
    expect(waiting.last_error).toMatch(/^webhook: /)
    await server.app.cron.scheduler.whenIdle()
    // The channel answers again; no new alert is raised, yet the refused one arrives.
    webhook.failWith.status = undefined
    const late = await until(
      async () => webhook.bodies.find((body) => String(body.text).includes('job pauses was paused')),
      60_000,
    )
    expect(String(late.text)).toMatch(/^\[Lango alert\]\n\(sent late: refused at \S+: webhook: /)
    const status = (await (await fetch(`${server.url}/api/alerts`)).json()) as Json
    expect(status).toMatchObject({ failing: false, waiting: 0, last_error: null })
  })

  it('alerts.deliver_to naming a channel that is not configured is failing from the start, on /healthz and /api/alerts', async () => {
    const webhook = await operatorWebhook()
    const server = await startServer(webhook.url, { deliverTo: ['slack:C0123ABCD'] })
    expect((await health(server)).body.alerts).toEqual({ configured: true, failing: true })
    const status = (await (await fetch(`${server.url}/api/alerts`)).json()) as Json
    expect(status).toMatchObject({
      failing: true,
      last_error: 'slack:C0123ABCD: the slack channel is not configured',
    })
  })

  it('a `lango serve` process stopped (SIGSTOP) past its lease and resumed says so at once: an alert, the missed runs, /healthz last_stall', async () => {
    const webhook = await operatorWebhook()
    const home = await mkdtemp(join(tmpdir(), 'lango-alerts-'))
    await writeFile(
      join(home, 'lango.yaml'),
      [
        'cluster:',
        `  lease: ${LEASE_MS}ms`,
        'cron:',
        '  min_interval: 1s',
        'channels:',
        '  webhook:',
        `    url: ${webhook.url}`,
        'alerts:',
        '  deliver_to: [webhook]',
        '',
      ].join('\n'),
    )
    const server = await startLangoServe(home)
    cleanups.push(async () => {
      if (server.child.exitCode === null && server.child.signalCode === null) {
        const exited = new Promise((resolve) => server.child.once('exit', resolve))
        process.kill(server.pid, 'SIGCONT')
        server.child.kill('SIGTERM')
        await exited
      }
      await rm(home, { recursive: true, force: true })
    })
    const created = await fetch(`${server.url}/api/cron/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        kind: 'shell',
        name: 'ticker',
        schedule_type: 'every',
        schedule: '1s',
        command: 'true',
      }),
    })
    expect(created.status).toBeLessThan(300)
    await until(async () => {
      const runs = (await (await fetch(`${server.url}/api/cron/runs?job=ticker`)).json()) as Json
      return JSON.stringify(runs).includes('"completed"') ? true : undefined
    })

    process.kill(server.pid, 'SIGSTOP')
    await new Promise((resolve) => setTimeout(resolve, 3 * LEASE_MS))
    process.kill(server.pid, 'SIGCONT')

    const all = await until(async () => {
      const text = webhook.bodies.map((body) => String(body.text)).join('\n')
      return text.includes('Scheduler stalled') && text.includes('job ticker: the occurrence due')
        ? text
        : undefined
    })
    expect(all).toMatch(/event loop was blocked or the process was suspended/)
    const health = (await (await fetch(`${server.url}/healthz`)).json()) as Json
    expect(health.scheduler_tick.last_stall).toMatchObject({ cause: 'blocked' })
    expect(health.scheduler_tick.last_stall.stalled_ms).toBeGreaterThan(LEASE_MS)
  })

  // Noticed in an earlier session: a clean stop cut runs off and only logged it (the alerts and the
  // channels stop before cron).
  it('a clean stop that cuts off a cron run says so before it stops: Runs interrupted, not retried', async () => {
    const webhook = await operatorWebhook()
    const server = await startServer(webhook.url)
    await server.app.cron.add({
      name: 'long-backup',
      scheduleType: 'every',
      schedule: '1h',
      command: 'sleep 30',
      deliverTo: [],
    })
    const triggered = await server.app.cron.trigger('long-backup')
    await until(async () =>
      (await server.app.cron.getRun(triggered.runId as string)).status === 'running' ? true : undefined,
    )
    await server.close()
    const text = webhook.bodies.map((body) => String(body.text)).find((t) => t.includes('Runs interrupted:'))
    expect(text).toContain(`is stopping while running cron run job long-backup (run ${triggered.runId}`)
    expect(text).toContain('not retried')
  })

  it('a result that cannot be delivered for good is an alert naming the job, the target and the reason', async () => {
    const webhook = await operatorWebhook()
    const server = await startServer(webhook.url)
    // No Slack is configured: the channel refuses the target at once, for good.
    await server.app.cron.add({
      name: 'reports',
      scheduleType: 'every',
      schedule: '1h',
      command: 'echo report',
      deliverTo: ['slack:C0123ABCD'],
    })
    const triggered = await server.app.cron.trigger('reports')
    expect(triggered.status).toBe('started')
    const text = await until(
      async () =>
        webhook.bodies.map((body) => String(body.text)).find((t) => t.includes('Deliveries failed:')),
      60_000,
    )
    expect(text).toMatch(
      new RegExp(
        `job reports: the result of run ${triggered.runId} did not reach slack:C0123ABCD after 1 attempt \\(.+\\)`,
      ),
    )
    expect(text).not.toContain('echo report')
    const run = await server.app.cron.getRun(triggered.runId as string)
    expect(run.status).toBe('completed')
  })

  it("a workflow's result the receiver refuses (500) is a delivery_failed alert and a workflow.delivery.failed event", async () => {
    const webhook = await operatorWebhook()
    // The workflow's result and the alerts go to the same webhook: it refuses only the result.
    webhook.failWith.status = 500
    webhook.failWith.when = (body) => String(body.text).startsWith('[Workflow]')
    const server = await startServer(webhook.url)
    const events = await openEvents(server.url)
    cleanups.push(async () => events.close())
    const response = await fetch(`${server.url}/api/workflows/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        yaml_content:
          'name: nightly\ndeliver_to: [webhook]\nsteps:\n  - { id: a, run: "echo the-result-text" }\n',
        wait_seconds: 30,
      }),
    })
    expect(response.status).toBe(200)
    const run = (await response.json()) as Json
    expect(run.status).toBe('completed')

    const failed = await events.next('workflow.delivery.failed', undefined, 30_000)
    expect(failed.data).toEqual({
      run_id: run.run_id,
      workflow: 'nightly',
      step_id: null,
      target: 'webhook',
      error: expect.stringContaining('500'),
    })
    const text = await until(
      async () =>
        webhook.bodies.map((body) => String(body.text)).find((t) => t.includes('Deliveries failed:')),
      60_000,
    )
    expect(text).toMatch(
      new RegExp(`workflow nightly: the result of run ${run.run_id} did not reach webhook \\(.*500.*\\)`),
    )
    expect(text).not.toContain('the-result-text')
    const status = (await (await fetch(`${server.url}/api/alerts`)).json()) as Json
    expect(status.raised).toBe(1)
  })
})
