/**
 * Issue 23: a cron job's `ping_url` is a dead-man monitor. A real server runs real shell jobs; a
 * real HTTP server on 127.0.0.1 plays the healthchecks.io service and records what it is sent.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createDeferred } from '@lango/cron/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HttpRunMonitor } from '../src/app/http-run-monitor.js'
import { closedPort } from './fixtures/closed-port.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

interface Received {
  readonly method: string
  readonly path: string
  readonly body: string
}

/** A healthchecks-like service: records every request; paths under /slow/ answer only when told. */
class FakeMonitor {
  readonly received: Received[] = []
  readonly release = createDeferred<void>()
  readonly #server: Server
  #slowAnswered = 0

  constructor() {
    this.#server = createServer((request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        this.received.push({
          method: request.method ?? '',
          path: request.url ?? '',
          body: Buffer.concat(chunks).toString('utf8'),
        })
        const answer = () => {
          if (!response.destroyed) response.end('OK')
        }
        if (request.url?.startsWith('/slow/')) {
          void this.release.promise.then(() => {
            this.#slowAnswered += 1
            answer()
          })
        } else answer()
      })
    })
  }

  get slowAnswered(): number {
    return this.#slowAnswered
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
  }

  paths(prefix: string): string[] {
    return this.received.filter((entry) => entry.path.startsWith(prefix)).map((entry) => entry.path)
  }

  async close(): Promise<void> {
    this.release.resolve()
    this.#server.closeAllConnections()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }
}

let monitor: FakeMonitor
let base: string
let server: TestServer

beforeAll(async () => {
  monitor = new FakeMonitor()
  base = await monitor.listen()
  // The monitor is on loopback: allowed only by cron.ping_private_networks.
  server = await startTestServer((config) => ({
    ...config,
    cron: { ...config.cron, pingPrivateNetworks: true },
  }))
})
afterAll(async () => {
  await server?.dispose()
  await monitor?.close()
})

/** Creates a shell job over the operator API and triggers it; returns the ended run. */
async function runShellJob(name: string, command: string, pingUrl: string) {
  const created = await server.request('/api/cron/jobs', {
    json: {
      kind: 'shell',
      name,
      schedule_type: 'cron',
      schedule: '0 3 * * *',
      command,
      timezone: 'UTC',
      ping_url: pingUrl,
    },
  })
  expect(created.status).toBe(200)
  const body = (await created.json()) as { job: { id: string; ping_url: string | null } }
  expect(body.job.ping_url).toBe(pingUrl)
  const { cron } = server.app
  const triggered = await cron.trigger(body.job.id)
  expect(triggered.status).toBe('started')
  return until(async () => {
    const runs = await cron.history({ job: body.job.id })
    return runs.find((run) => run.id === triggered.runId && run.status !== 'running')
  })
}

describe('dead-man pings of shell jobs, healthchecks.io style', () => {
  it('a succeeding job pings <url>/start, then <url>; the body names the run, never its output', async () => {
    const run = await runShellJob('ping-ok', 'echo private-output-7', `${base}/ping/ok-check`)
    expect(run.status).toBe('completed')
    await until(async () => monitor.paths('/ping/ok-check').length === 2 || undefined)
    expect(monitor.paths('/ping/ok-check')).toEqual(['/ping/ok-check/start', '/ping/ok-check'])
    const [start, success] = monitor.received.filter((entry) => entry.path.startsWith('/ping/ok-check'))
    expect(start?.method).toBe('POST')
    expect(start?.body).toBe(`lango cron job ping-ok, run ${run.id}: started\n`)
    expect(success?.body).toMatch(
      new RegExp(`^lango cron job ping-ok, run ${run.id}: completed in \\d+ ms\\n$`),
    )
    expect(JSON.stringify(monitor.received)).not.toContain('private-output-7')
  })

  it('a failing job pings <url>/start, then <url>/fail with its exit code, never its stderr', async () => {
    const run = await runShellJob(
      'ping-fail',
      'echo oops-secret-9 >&2; exit 3',
      `${base}/ping/fail-check?rid=1`,
    )
    expect(run.status).toBe('failed')
    await until(async () => monitor.paths('/ping/fail-check').length === 2 || undefined)
    expect(monitor.paths('/ping/fail-check')).toEqual([
      '/ping/fail-check/start?rid=1',
      '/ping/fail-check/fail?rid=1',
    ])
    const failure = monitor.received.find((entry) => entry.path.startsWith('/ping/fail-check/fail'))
    expect(failure?.body).toMatch(/: failed \(exit code 3\) in \d+ ms\n$/)
    expect(JSON.stringify(monitor.received)).not.toContain('oops-secret-9')
  })

  it('a monitor that is down changes nothing: the run completes, the failed pings are counted', async () => {
    const before = server.app.cron.scheduler.pingStats().failed
    const run = await runShellJob(
      'ping-down',
      'echo fine',
      `http://127.0.0.1:${await closedPort()}/ping/down`,
    )
    expect(run.status).toBe('completed')
    expect(run.error).toBeNull()
    await until(async () => server.app.cron.scheduler.pingStats().failed >= before + 2 || undefined)
    // …where the operator looks (outside probe: counted, but shown nowhere).
    const metrics = await (await server.request('/metrics')).text()
    const failed = /^lango_cron_pings_total\{outcome="failed"\} (\d+)$/m.exec(metrics)
    expect(Number(failed?.[1])).toBe(server.app.cron.scheduler.pingStats().failed)
    expect(metrics).toMatch(/^lango_cron_pings_total\{outcome="sent"\} \d+$/m)
  })

  it('a monitor that does not answer neither delays nor holds the run', async () => {
    const run = await runShellJob('ping-slow', 'echo fine', `${base}/slow/check`)
    // The run ended while its start ping is still unanswered (the end ping waits behind it). On a
    // busy machine the start ping may reach the monitor only after the run ended: wait for it.
    expect(run.status).toBe('completed')
    expect(monitor.slowAnswered).toBe(0)
    await until(async () => monitor.paths('/slow/check').length > 0 || undefined)
    expect(monitor.paths('/slow/check')).toEqual(['/slow/check/start'])
    monitor.release.resolve()
    await until(async () => monitor.paths('/slow/check').length === 2 || undefined)
    expect(monitor.paths('/slow/check')).toEqual(['/slow/check/start', '/slow/check'])
  })

  it('a bad ping_url is a 4xx naming the field, and nothing is stored', async () => {
    const response = await server.request('/api/cron/jobs', {
      json: {
        kind: 'shell',
        name: 'ping-bad',
        schedule_type: 'cron',
        schedule: '0 3 * * *',
        command: 'true',
        ping_url: 'https://user:hunter2@hc.example/x',
      },
    })
    expect(response.status).toBeGreaterThanOrEqual(400)
    expect(response.status).toBeLessThan(500)
    const body = JSON.stringify(await response.json())
    expect(body).toContain('CRON_INVALID_INPUT')
    expect(body).toContain('ping_url must not carry a user name or password')
    expect(body).not.toContain('hunter2')
    await expect(server.app.cron.get('ping-bad')).rejects.toMatchObject({ code: 'CRON_JOB_NOT_FOUND' })
  })
})

describe('HttpRunMonitor address policy', () => {
  const details = { jobId: 'j', jobName: 'job', runId: 'r' }
  const signal = () => AbortSignal.timeout(10_000)

  it('refuses loopback by default, before any request is sent', async () => {
    const sent = monitor.received.length
    await expect(
      new HttpRunMonitor().ping(`${base}/ping/refused`, 'start', { signal: signal(), details }),
    ).rejects.toThrow(/^ping start failed after 1 attempt: 127\.0\.0\.1:\d+ is a loopback or private address/)
    // A name that resolves to loopback is refused too, at connect time.
    await expect(
      new HttpRunMonitor().ping(`${base.replace('127.0.0.1', 'localhost')}/ping/refused`, 'start', {
        signal: signal(),
        details,
      }),
    ).rejects.toThrow(/localhost resolves to a loopback or private address/)
    expect(monitor.received.length).toBe(sent)
  })

  it('refuses link-local (cloud metadata) even when private networks are allowed', async () => {
    await expect(
      new HttpRunMonitor({ allowPrivateNetworks: true }).ping('http://169.254.169.254/latest', 'start', {
        signal: signal(),
        details,
      }),
    ).rejects.toThrow(/169\.254\.169\.254 is a link-local/)
    await expect(
      new HttpRunMonitor({ allowPrivateNetworks: true }).ping(
        'http://[::ffff:169.254.169.254]/x',
        'failure',
        {
          signal: signal(),
          details,
        },
      ),
    ).rejects.toThrow(/is a link-local/)
  })

  it('retries a 5xx a bounded number of times, then fails naming the status only', async () => {
    let attempts = 0
    const flaky = createServer((_request, response) => {
      attempts += 1
      response.statusCode = 503
      response.end()
    })
    await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve))
    const { port } = flaky.address() as AddressInfo
    try {
      await expect(
        new HttpRunMonitor({ allowPrivateNetworks: true, retry: { baseDelayMs: 1 } }).ping(
          `http://127.0.0.1:${port}/check-key-123`,
          'success',
          { signal: signal(), details },
        ),
      ).rejects.toThrow(/^ping success failed after 3 attempts: HTTP 503$/)
      expect(attempts).toBe(3)
    } finally {
      await new Promise<void>((resolve) => flaky.close(() => resolve()))
    }
  })
})
