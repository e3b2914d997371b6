/**
 * Dead-man pings (issue 23): a job with a `pingUrl` pings its monitor at each run's start and end,
 * healthchecks.io style, without the run ever waiting for the monitor or failing because of it.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { CronError } from './errors.js'
import { pingUrlFor } from './ping-url.js'
import { CronService, type CronServiceOptions } from './service.js'
import {
  createDeferred,
  FakeClock,
  MemoryCronStore,
  RecordingRunMonitor,
  RecordingShellRunner,
} from './testing/index.js'

const HOUR = 3_600_000
const URL_A = 'https://hc.example/ping/0b6a9c1e'
const services: CronService[] = []

afterEach(async () => {
  for (const service of services.splice(0)) await service.stop()
})

interface Setup {
  readonly clock: FakeClock
  readonly store: MemoryCronStore
  readonly shell: RecordingShellRunner
  readonly monitor: RecordingRunMonitor
  readonly service: CronService
  readonly warnings: { message: string; fields: Readonly<Record<string, unknown>> | undefined }[]
}

async function setup(options: Partial<CronServiceOptions> = {}): Promise<Setup> {
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'))
  const store = new MemoryCronStore()
  const shell = new RecordingShellRunner()
  const monitor = new RecordingRunMonitor()
  const warnings: Setup['warnings'] = []
  let ids = 0
  const service = new CronService({
    store,
    clock,
    shellRunner: shell,
    runMonitor: monitor,
    defaultTimezone: 'UTC',
    leaseMs: HOUR,
    syncIntervalMs: HOUR,
    idGenerator: () => `id-${++ids}`,
    logger: {
      debug: () => {},
      info: () => {},
      warn: (message, fields) => warnings.push({ message, fields }),
      error: () => {},
    },
    ...options,
  })
  services.push(service)
  await service.start()
  return { clock, store, shell, monitor, service, warnings }
}

/** Waits until `condition` holds, letting promises settle in between (no wall-clock window). */
async function until(condition: () => boolean): Promise<void> {
  for (let turn = 0; turn < 1000 && !condition(); turn++)
    await new Promise((resolve) => setImmediate(resolve))
  expect(condition()).toBe(true)
}

async function rejection(promise: Promise<unknown>): Promise<CronError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  if (!CronError.is(error)) throw new Error(`expected a CronError, got ${String(error)}`)
  return error
}

const hourly = { name: 'backup', scheduleType: 'cron', schedule: '0 * * * *', command: 'backup.sh' } as const

describe('pingUrlFor: healthchecks.io conventions', () => {
  it('start → <url>/start, success → <url>, failure → <url>/fail', () => {
    expect(pingUrlFor(URL_A, 'start')).toBe(`${URL_A}/start`)
    expect(pingUrlFor(URL_A, 'success')).toBe(URL_A)
    expect(pingUrlFor(URL_A, 'failure')).toBe(`${URL_A}/fail`)
  })

  it('puts the suffix before the query and does not double a trailing slash', () => {
    expect(pingUrlFor('https://hc.example/x/?rid=1', 'start')).toBe('https://hc.example/x/start?rid=1')
    expect(pingUrlFor('https://hc.example/x?rid=1', 'failure')).toBe('https://hc.example/x/fail?rid=1')
  })
})

describe('ping_url validation', () => {
  it.each<[string, unknown, string]>([
    ['ftp scheme', 'ftp://hc.example/x', 'scheme'],
    ['javascript scheme', 'javascript:alert(1)', 'scheme'],
    ['file scheme', 'file:///etc/passwd', 'scheme'],
    ['not a URL', 'hc.example/x', 'not_a_url'],
    ['credentials', 'https://user:secret@hc.example/x', 'credentials'],
    ['user name only', 'https://user@hc.example/x', 'credentials'],
    ['fragment', 'https://hc.example/x#frag', 'fragment'],
    ['too long', `https://hc.example/${'a'.repeat(2100)}`, 'too_long'],
    ['control characters', 'https://hc.example/x\n/y', 'control_characters'],
    ['not text', 42, 'not_text'],
  ])(
    'refuses %s with CRON_INVALID_INPUT, field ping_url, and stores nothing',
    async (_label, pingUrl, reason) => {
      const { service, store } = await setup()
      const error = await rejection(service.create({ ...hourly, pingUrl: pingUrl as string }))
      expect(error.code).toBe('CRON_INVALID_INPUT')
      expect(error.data).toEqual({ field: 'ping_url', reason })
      expect(error.message).toMatch(/^ping_url /)
      // The message never echoes the URL (it may hold a credential in its path or user info).
      expect(error.message).not.toContain('secret')
      expect(await store.countJobs()).toBe(0)
    },
  )

  it('accepts http(s), normalises it, stores it, and update changes or clears it', async () => {
    const { service } = await setup()
    const { job } = await service.create({ ...hourly, pingUrl: ' HTTPS://HC.example/ping/abc?rid=1 ' })
    expect(job.pingUrl).toBe('https://hc.example/ping/abc?rid=1')
    expect((await service.get('backup')).pingUrl).toBe('https://hc.example/ping/abc?rid=1')
    // An update that does not mention it keeps it.
    expect((await service.update('backup', { schedule: '30 * * * *' })).job.pingUrl).toBe(
      'https://hc.example/ping/abc?rid=1',
    )
    expect((await service.update('backup', { pingUrl: 'http://10.0.0.5:8000/ping/x' })).job.pingUrl).toBe(
      'http://10.0.0.5:8000/ping/x',
    )
    expect((await service.update('backup', { pingUrl: null })).job.pingUrl).toBeNull()
    const refused = await rejection(service.update('backup', { pingUrl: 'gopher://x' }))
    expect(refused.data).toEqual({ field: 'ping_url', reason: 'scheme' })
    expect((await service.get('backup')).pingUrl).toBeNull()
  })

  it('jobs without one have pingUrl null', async () => {
    const { service } = await setup()
    expect((await service.create(hourly)).job.pingUrl).toBeNull()
  })
})

describe('pings around runs', () => {
  it('a completed run pings start, then success, with ids but no result text', async () => {
    const { service, clock, monitor } = await setup()
    await service.create({ ...hourly, pingUrl: URL_A })
    const ended = service.scheduler.events.next('run:end')
    await clock.advance(HOUR)
    const { run } = await ended
    await until(() => monitor.pings.length === 2)
    expect(monitor.pings.map((ping) => [ping.url, ping.phase])).toEqual([
      [URL_A, 'start'],
      [URL_A, 'success'],
    ])
    expect(monitor.pings[1]?.details).toEqual({
      jobId: run.jobId,
      jobName: 'backup',
      runId: run.id,
      status: 'completed',
      durationMs: 0,
    })
    expect(JSON.stringify(monitor.pings)).not.toContain('ok')
    expect(service.scheduler.pingStats()).toEqual({ sent: 2, failed: 0, pending: 0 })
  })

  it('a failed shell run pings start, then failure with its exit code (never its stderr)', async () => {
    const { service, clock, monitor, shell } = await setup()
    shell.respond(() => ({ exitCode: 3, stdout: '', stderr: 'token=hunter2 rejected' }))
    await service.create({ ...hourly, pingUrl: URL_A })
    const ended = service.scheduler.events.next('run:end')
    await clock.advance(HOUR)
    expect((await ended).run.status).toBe('failed')
    await until(() => monitor.pings.length === 2)
    expect(monitor.pings.map((ping) => ping.phase)).toEqual(['start', 'failure'])
    expect(monitor.pings[1]?.details).toMatchObject({ status: 'failed', exitCode: 3 })
    expect(JSON.stringify(monitor.pings.map((ping) => ping.details))).not.toContain('hunter2')
  })

  it('a timed-out run pings failure', async () => {
    const { service, clock, monitor, shell } = await setup()
    shell.respond(
      (_request, _index, options) =>
        new Promise((_resolve, reject) => {
          options.signal.addEventListener('abort', () => reject(options.signal.reason), { once: true })
        }),
    )
    await service.create({ ...hourly, timeout: '1m', pingUrl: URL_A })
    const ended = service.scheduler.events.next('run:end')
    await clock.advance(HOUR)
    await clock.advance(60_000)
    expect((await ended).run.status).toBe('timed_out')
    await until(() => monitor.pings.length === 2)
    expect(monitor.pings[1]).toMatchObject({ phase: 'failure', details: { status: 'timed_out' } })
  })

  it('jobs without a ping URL ping nothing', async () => {
    const { service, clock, monitor } = await setup()
    await service.create(hourly)
    const ended = service.scheduler.events.next('run:end')
    await clock.advance(HOUR)
    await ended
    await service.scheduler.whenIdle()
    expect(monitor.pings).toEqual([])
  })

  it('a manual trigger pings too', async () => {
    const { service, monitor } = await setup()
    await service.create({ ...hourly, pingUrl: URL_A })
    const ended = service.scheduler.events.next('run:end')
    await service.trigger('backup')
    expect((await ended).run.trigger).toBe('manual')
    await until(() => monitor.pings.length === 2)
    expect(monitor.pings.map((ping) => ping.phase)).toEqual(['start', 'success'])
  })
})

describe('a monitor that is down or slow changes nothing about the run', () => {
  it('a failing monitor: the run still completes; failures are logged (host only) and counted', async () => {
    const { service, clock, monitor, warnings } = await setup()
    monitor.respond(() => {
      throw new Error('connect ECONNREFUSED')
    })
    await service.create({ ...hourly, pingUrl: URL_A })
    const ended = service.scheduler.events.next('run:end')
    await clock.advance(HOUR)
    expect((await ended).run.status).toBe('completed')
    await until(() => monitor.pings.length === 2)
    await service.scheduler.whenIdle()
    expect(service.scheduler.pingStats()).toEqual({ sent: 0, failed: 2, pending: 0 })
    expect(warnings.map((warning) => warning.message)).toEqual(['cron ping failed', 'cron ping failed'])
    expect(warnings[0]?.fields).toMatchObject({
      phase: 'start',
      host: 'hc.example',
      error: 'connect ECONNREFUSED',
    })
    // The URL's path (the monitor's check id) is never logged.
    expect(JSON.stringify(warnings)).not.toContain('0b6a9c1e')
  })

  it('a hung monitor does not delay the run start; each ping is abandoned after pingTimeoutMs', async () => {
    const { service, clock, monitor, shell } = await setup({ pingTimeoutMs: 5000 })
    const signals: AbortSignal[] = []
    // Worst case: never answers and ignores its signal.
    monitor.respond((_url, _phase, options) => {
      signals.push(options.signal)
      return new Promise<void>(() => {})
    })
    const release = createDeferred<void>()
    shell.respond(async () => {
      await release.promise
      return { exitCode: 0, stdout: 'done', stderr: '' }
    })
    await service.create({ ...hourly, pingUrl: URL_A })
    const ended = service.scheduler.events.next('run:end')
    await clock.advance(HOUR)
    // The run started at its time, while the start ping hangs.
    expect(shell.calls).toHaveLength(1)
    expect(monitor.pings.map((ping) => ping.phase)).toEqual(['start'])
    release.resolve()
    const { run } = await ended
    expect(run).toMatchObject({ status: 'completed', startedAt: Date.parse('2026-01-01T01:00:00Z') })
    // The end ping waits for the start ping to settle: in order at the monitor.
    expect(monitor.pings).toHaveLength(1)
    await clock.advance(5000)
    await until(() => monitor.pings.length === 2)
    expect(signals[0]?.aborted).toBe(true)
    expect(CronError.is(signals[0]?.reason) && signals[0].reason.code).toBe('CRON_PING_TIMEOUT')
    await clock.advance(5000)
    await service.scheduler.whenIdle()
    expect(service.scheduler.pingStats()).toEqual({ sent: 0, failed: 2, pending: 0 })
  })

  it('stop() waits for pings in flight, at most pingTimeoutMs', async () => {
    const { service, clock, monitor } = await setup({ pingTimeoutMs: 2000 })
    const hang = createDeferred<void>()
    monitor.respond(() => hang.promise)
    await service.create({ ...hourly, pingUrl: URL_A })
    const ended = service.scheduler.events.next('run:end')
    await clock.advance(HOUR)
    await ended
    let stopped = false
    const stopping = service.stop().then(() => {
      stopped = true
    })
    await new Promise((resolve) => setImmediate(resolve))
    expect(stopped).toBe(false)
    expect(service.scheduler.pingStats().pending).toBe(1)
    await clock.advance(2000)
    await until(() => monitor.pings.length === 2)
    await clock.advance(2000)
    await stopping
    expect(stopped).toBe(true)
    expect(service.scheduler.pingStats()).toEqual({ sent: 0, failed: 2, pending: 0 })
  })

  it('a run interrupted by stop() ends with a failure ping', async () => {
    const { service, clock, monitor, shell } = await setup()
    shell.respond(
      (_request, _index, options) =>
        new Promise((_resolve, reject) => {
          options.signal.addEventListener('abort', () => reject(options.signal.reason), { once: true })
        }),
    )
    await service.create({ ...hourly, pingUrl: URL_A })
    await clock.advance(HOUR)
    await until(() => monitor.pings.length === 1)
    await service.stop()
    expect(monitor.pings.map((ping) => ping.phase)).toEqual(['start', 'failure'])
    expect(monitor.pings[1]?.details.status).toBe('interrupted')
  })

  it('pingTimeoutMs is checked', () => {
    expect(() => new CronService({ store: new MemoryCronStore(), pingTimeoutMs: 0 })).toThrow(/pingTimeoutMs/)
  })
})
