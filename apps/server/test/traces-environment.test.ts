/**
 * OpenTelemetry's standard SDK variables (the "SDK environment variables" and OTLP exporter
 * specifications) drive the server's traces: a real server, loaded from the environment, exports
 * to a real OTLP/HTTP receiver on 127.0.0.1. Stopping a server flushes its exporter, so a run that
 * exported nothing by then never will; a control run with the same receiver shows it would have.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../src/config/errors.js'
import { startTestServer, until } from './fixtures/http-server.js'
import { runLango } from './fixtures/lango-serve.js'
import { type ReceivedSpan, startOtlpReceiver } from './fixtures/otlp-receiver.js'

/**
 * Starts a server with `env` (and the receiver's endpoint), runs one shell job to its end, stops
 * the server (flushing its exporter) and returns the spans received.
 */
async function spansOfOneRun(env: Readonly<Record<string, string>>): Promise<readonly ReceivedSpan[]> {
  const receiver = await startOtlpReceiver()
  try {
    const server = await startTestServer(undefined, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      ...env,
    })
    try {
      const { cron } = server.app
      const { job } = await cron.create({
        name: 'traced',
        scheduleType: 'every',
        schedule: '1h',
        command: 'true',
        deliverTo: [],
      })
      const started = await cron.trigger(job.id)
      await until(async () =>
        (await cron.history({ job: job.id })).find(
          (run) => run.id === started.runId && run.status !== 'running',
        ),
      )
    } finally {
      await server.dispose()
    }
    return [...receiver.spans]
  } finally {
    await receiver.close()
  }
}

describe('OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES', () => {
  it('put the service name and the attributes (percent-decoded) on the resource of every span', async () => {
    const spans = await spansOfOneRun({
      OTEL_SERVICE_NAME: 'checkout-agent',
      OTEL_RESOURCE_ATTRIBUTES:
        'service.name=loses-to-otel-service-name,deployment.environment.name=prod,team=ops%20east%2C2',
    })
    expect(spans.map((span) => span.name)).toContain('cron.run')
    for (const span of spans) {
      expect(span.resource).toMatchObject({
        'service.name': 'checkout-agent',
        'deployment.environment.name': 'prod',
        team: 'ops east,2',
      })
      expect(span.resource['service.version']).toEqual(expect.any(String))
    }
  })

  it('service.name of OTEL_RESOURCE_ATTRIBUTES names the service when OTEL_SERVICE_NAME is unset', async () => {
    const spans = await spansOfOneRun({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=billing,region=eu-west-1' })
    expect(spans.length).toBeGreaterThan(0)
    for (const span of spans)
      expect(span.resource).toMatchObject({ 'service.name': 'billing', region: 'eu-west-1' })
  })
})

describe('variables that turn exporting off', () => {
  it('the control: the same run with an endpoint and none of them exports its spans', async () => {
    const spans = await spansOfOneRun({})
    expect(spans.map((span) => span.name)).toContain('cron.run')
    expect(spans[0]?.resource['service.name']).toBe('lango')
  })

  it.each([
    ['OTEL_SDK_DISABLED=true', { OTEL_SDK_DISABLED: 'true' }],
    ['OTEL_SDK_DISABLED=TRUE', { OTEL_SDK_DISABLED: 'TRUE' }],
    ['OTEL_TRACES_EXPORTER=none', { OTEL_TRACES_EXPORTER: 'none' }],
    ['OTEL_TRACES_SAMPLER=always_off', { OTEL_TRACES_SAMPLER: 'always_off' }],
    ['OTEL_TRACES_SAMPLER=parentbased_always_off', { OTEL_TRACES_SAMPLER: 'parentbased_always_off' }],
    [
      'OTEL_TRACES_SAMPLER=traceidratio with OTEL_TRACES_SAMPLER_ARG=0',
      { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' },
    ],
    [
      'OTEL_TRACES_SAMPLER=parentbased_traceidratio with OTEL_TRACES_SAMPLER_ARG=0',
      { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' },
    ],
  ])('%s: nothing is exported, though an endpoint is set', async (_, env) => {
    expect(await spansOfOneRun(env)).toEqual([])
  })

  it.each([
    ['OTEL_SDK_DISABLED=false', { OTEL_SDK_DISABLED: 'false' }],
    ['OTEL_TRACES_EXPORTER=otlp', { OTEL_TRACES_EXPORTER: 'otlp' }],
    ['OTEL_TRACES_SAMPLER=always_on', { OTEL_TRACES_SAMPLER: 'always_on' }],
    [
      'OTEL_TRACES_SAMPLER=traceidratio with OTEL_TRACES_SAMPLER_ARG=1',
      { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1' },
    ],
    ['OTEL_EXPORTER_OTLP_PROTOCOL=http/json', { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }],
  ])('%s: spans are exported', async (_, env) => {
    expect((await spansOfOneRun(env)).map((span) => span.name)).toContain('cron.run')
  })
})

describe('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT / OTEL_EXPORTER_OTLP_TIMEOUT', () => {
  it('bound each export: a collector that never answers is given up on after the traces-specific timeout', async () => {
    const receiver = await startOtlpReceiver()
    receiver.hold.on = true
    const server = await startTestServer(undefined, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '100',
      OTEL_EXPORTER_OTLP_TIMEOUT: '600000',
    })
    try {
      const { cron } = server.app
      const { job } = await cron.create({
        name: 'traced',
        scheduleType: 'every',
        schedule: '1h',
        command: 'true',
        deliverTo: [],
      })
      await cron.trigger(job.id)
      // The running server's exporter abandons the unanswered export (the receiver sees the
      // connection close): with 100 ms, soon after the batch is sent; the 10 s the exporter had
      // before would not be up within this wait.
      await until(async () => receiver.hold.abandoned > 0 || undefined, 8000, 'an abandoned export')
    } finally {
      await server.dispose()
      await receiver.close()
    }
  })
})

describe('a bad value of a standard variable is a config error naming it and what is accepted', () => {
  it.each([
    ['OTEL_SDK_DISABLED', 'yes', 'expected true or false'],
    ['OTEL_TRACES_EXPORTER', 'zipkin', 'expected otlp or none'],
    ['OTEL_TRACES_SAMPLER', 'jaeger_remote', 'parentbased_traceidratio'],
    ['OTEL_TRACES_SAMPLER_ARG', '1.5', 'expected a number from 0 to 1'],
    ['OTEL_EXPORTER_OTLP_TIMEOUT', '10s', 'expected a whole number of milliseconds'],
    ['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', '0', 'expected a whole number of milliseconds'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc', 'expected http/json'],
    ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'http/protobuf', 'grpc and http/protobuf are not supported'],
    ['OTEL_RESOURCE_ATTRIBUTES', 'team', 'expected key=value pairs'],
    ['OTEL_RESOURCE_ATTRIBUTES', 'team=%zz', 'percent-encoded'],
    ['OTEL_SERVICE_NAME', ' ', 'expected a non-empty name'],
  ])('%s=%s', async (variable, value, accepted) => {
    const error = await startTestServer(undefined, {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      [variable]: value,
    }).then(
      async (server) => {
        await server.dispose()
        return undefined
      },
      (reason: unknown) => reason,
    )
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).code).toBe('CONFIG_INVALID')
    expect((error as ConfigError).issues).toEqual([
      { key: variable, message: expect.stringContaining(accepted) },
    ])
  })

  it('`lango serve` says so, with the other issues, and exits', async () => {
    const home = await mkdtemp(join(tmpdir(), 'lango-otel-env-'))
    try {
      // LANGO_HOME a file: an issue of its own, so that a build that ignored the variable stops too.
      const notADirectory = join(home, 'file')
      await writeFile(notADirectory, '')
      const result = await runLango(['serve', '--port', '0'], {
        LANGO_HOME: notADirectory,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      })
      expect(result.code).not.toBe(0)
      expect(result.stderr).toContain('LANGO_HOME')
      expect(result.stderr).toContain('OTEL_EXPORTER_OTLP_PROTOCOL')
      expect(result.stderr).toContain('expected http/json')
    } finally {
      await rm(home, { recursive: true, force: true })
    }
  })
})
