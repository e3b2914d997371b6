/**
 * Issue 23: OpenTelemetry traces. A real server exports to a real OTLP/HTTP receiver on 127.0.0.1;
 * only the model is fake, at the wire. One trace per cron run: the `cron.run` root, an `agent.step`
 * per model call, the `tool.call` under the step that asked for it, the `delivery`; a shell job's
 * run has its `shell.command`. No span carries a secret or the prompt. And a server without an
 * endpoint loads no OpenTelemetry module (a real `lango serve` child with an ESM resolve probe).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redactedConfig } from '../src/config/redact.js'
import { serve } from '../src/serve.js'
import { allowedAttributes } from '../src/telemetry/attributes.js'
import { recordingLogger } from './fixtures/fake-chat-apis.js'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { startTestServer, type TestServer, testConfig, until } from './fixtures/http-server.js'
import { startLangoServe } from './fixtures/lango-serve.js'
import { type ReceivedSpan, startOtlpReceiver } from './fixtures/otlp-receiver.js'

const CANARY_KEY = 'sk-canary-3f9a1c0d7e'
const CANARY_HEADER = 'otlp-canary-b81d44e2'
const PROMPT = 'Summarise the night shift handover notes, please'

describe('traces over OTLP/HTTP', () => {
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>
  let model: FakeOpenAI
  let server: TestServer | undefined
  let spans: readonly ReceivedSpan[] = []

  beforeAll(async () => {
    receiver = await startOtlpReceiver()
    model = await startFakeOpenAI()
    server = await startTestServer(
      (config) => ({
        ...config,
        model: { ...config.model, apiKey: CANARY_KEY },
        agent: { ...config.agent, maxRetries: 0, turnBudget: { maxTokens: 2500 } },
        telemetry: {
          ...config.telemetry,
          serviceName: 'lango-traces-test',
          tracesUrl: `${receiver.endpoint}/v1/traces`,
          headers: { authorization: `Bearer ${CANARY_HEADER}` },
        },
      }),
      { LANGO_MODEL_BASE_URL: model.baseUrl, LANGO_MODEL: 'test-model' },
    )
    const { cron } = server.app
    // One tool call, then the answer.
    model.script(
      reply.toolCalls([{ id: 'call_1', name: 'cron_history', arguments: { job_id: 'handover', limit: 5 } }]),
      reply.text('Handover summarised.'),
    )
    const ai = await cron.create({
      name: 'handover',
      scheduleType: 'every',
      schedule: '1h',
      prompt: PROMPT,
      deliverTo: ['log'],
    })
    const shell = await cron.create({
      name: 'disk-check',
      scheduleType: 'every',
      schedule: '1h',
      command: 'echo disk ok',
      deliverTo: ['log'],
    })
    const failing = await cron.create({
      name: 'disk-fail',
      scheduleType: 'every',
      schedule: '1h',
      command: 'exit 3',
      deliverTo: ['log'],
    })
    for (const job of [ai.job, shell.job, failing.job]) {
      const started = await cron.trigger(job.id)
      expect(started.status).toBe('started')
      await until(async () => {
        const runs = await cron.history({ job: job.id })
        return runs.find((run) => run.id === started.runId && run.status !== 'running')
      })
    }
    // A chat turn that keeps calling tools, stopped by its budget after the third call.
    const usage = { promptTokens: 1000, completionTokens: 100 }
    model.script(
      ...[1, 2, 3].map((index) =>
        reply.toolCalls([{ id: `loop_${index}`, name: 'cron_list', arguments: {} }], { usage }),
      ),
    )
    const stopped = await server.app.agent
      .chat('http:traced', 'Keep checking.')
      .catch((error: unknown) => error)
    expect((stopped as { code?: string }).code).toBe('AGENT_BUDGET_EXHAUSTED')
    // Stopping the server flushes the exporter (the lifecycle's `traces` part).
    await server.dispose()
    server = undefined
    spans = receiver.spans
  })

  afterAll(async () => {
    await server?.dispose()
    await model?.close()
    await receiver?.close()
  })

  const rootOf = (jobName: string) => {
    const root = spans.find(
      (span) => span.name === 'cron.run' && span.attributes['lango.cron.job_name'] === jobName,
    )
    if (root === undefined) throw new Error(`no cron.run span for ${jobName}: ${JSON.stringify(spans)}`)
    return root
  }
  const childrenOf = (parent: ReceivedSpan) =>
    spans.filter((span) => span.traceId === parent.traceId && span.parentSpanId === parent.spanId)

  it('an ai job run is one trace: cron.run → agent.step (2) → tool.call, and the delivery', () => {
    const root = rootOf('handover')
    expect(root.parentSpanId).toBeUndefined()
    expect(root.attributes).toMatchObject({
      'lango.source': 'cron',
      'lango.cron.job_kind': 'ai',
      'lango.cron.trigger': 'manual',
      'lango.run.status': 'completed',
      'lango.delivery.status': 'delivered',
      'gen_ai.usage.input_tokens': 20,
      'gen_ai.usage.output_tokens': 10,
    })
    const children = childrenOf(root)
    const steps = children.filter((span) => span.name === 'agent.step')
    expect(steps.map((step) => step.attributes['lango.agent.step']).sort()).toEqual([1, 2])
    for (const step of steps)
      expect(step.attributes).toMatchObject({
        'gen_ai.request.model': 'test-model',
        'gen_ai.usage.input_tokens': 10,
        'gen_ai.usage.output_tokens': 5,
      })
    const [first, second] = [...steps].sort(
      (a, b) => Number(a.attributes['lango.agent.step']) - Number(b.attributes['lango.agent.step']),
    )
    expect(first?.attributes['gen_ai.response.finish_reasons']).toBe('tool-calls')
    expect(second?.attributes['gen_ai.response.finish_reasons']).toBe('stop')
    const tools = spans.filter((span) => span.name === 'tool.call' && span.traceId === root.traceId)
    expect(tools).toHaveLength(1)
    expect(tools[0]).toMatchObject({
      parentSpanId: first?.spanId,
      attributes: { 'gen_ai.tool.name': 'cron_history', 'lango.tool.outcome': 'ok' },
    })
    const deliveries = children.filter((span) => span.name === 'delivery')
    expect(deliveries).toHaveLength(1)
    expect(deliveries[0]?.attributes).toEqual({ 'lango.delivery.channel': 'log' })
    // Every span of the trace is one of these.
    expect(
      spans
        .filter((span) => span.traceId === root.traceId)
        .map((span) => span.name)
        .sort(),
    ).toEqual(['agent.step', 'agent.step', 'cron.run', 'delivery', 'tool.call'])
  })

  it('a shell job run is one trace: cron.run → shell.command (exit code), and the delivery', () => {
    const root = rootOf('disk-check')
    expect(root.attributes).toMatchObject({ 'lango.cron.job_kind': 'shell', 'lango.run.status': 'completed' })
    const children = childrenOf(root)
    expect(children.map((span) => span.name).sort()).toEqual(['delivery', 'shell.command'])
    expect(children.find((span) => span.name === 'shell.command')?.attributes).toEqual({
      'lango.cron.job_name': 'disk-check',
      'process.exit_code': 0,
      'lango.shell.timed_out': false,
      'lango.shell.blocked': false,
    })
  })

  it('a chat turn its budget stopped still says what it spent (an outside probe: it said nothing)', () => {
    const turn = spans.find(
      (span) => span.name === 'chat.turn' && span.attributes['lango.session.key'] === 'http:traced',
    )
    expect(turn?.attributes).toMatchObject({
      'error.type': 'AGENT_BUDGET_EXHAUSTED',
      'gen_ai.usage.input_tokens': 3000,
      'gen_ai.usage.output_tokens': 300,
    })
  })

  it('a failed run and its command are spans with status ERROR and an error.type code', () => {
    const root = rootOf('disk-fail')
    expect(root.statusCode).toBe(2)
    expect(root.attributes).toMatchObject({ 'lango.run.status': 'failed', 'error.type': 'failed' })
    const command = childrenOf(root).find((span) => span.name === 'shell.command')
    expect(command?.statusCode).toBe(2)
    expect(command?.attributes).toMatchObject({ 'process.exit_code': 3, 'error.type': 'exit' })
  })

  it('no export carries a secret, the prompt, the command or a result', () => {
    expect(receiver.bodies.length).toBeGreaterThan(0)
    const exported = receiver.bodies.join('\n')
    for (const text of [
      CANARY_KEY,
      CANARY_HEADER,
      PROMPT,
      'Summarise',

      'echo disk ok',
      'Handover summarised',
    ])
      expect(exported).not.toContain(text)
    expect(exported).toContain('lango-traces-test')
  })

  it('the allow-list drops keys it does not know and values of another type, by construction and at run time', () => {
    const loose = {
      'gen_ai.prompt': PROMPT,
      'process.exit_code': '0',
      'lango.cron.job_name': 'x'.repeat(300),
    }
    // @ts-expect-error: not an allowed key, and not an allowed type
    const typed: Parameters<typeof allowedAttributes>[0] = loose
    expect(allowedAttributes(typed)).toEqual({ 'lango.cron.job_name': 'x'.repeat(256) })
  })

  it('the exporter headers are secrets of the configuration: redacted, their names kept', async () => {
    const { config } = await import('./fixtures/http-server.js').then(({ testConfig }) =>
      testConfig((loaded) => ({
        ...loaded,
        telemetry: { ...loaded.telemetry, headers: { authorization: `Bearer ${CANARY_HEADER}` } },
      })),
    )
    const shown = JSON.stringify(redactedConfig(config))
    expect(shown).not.toContain(CANARY_HEADER)
    expect(shown).toContain('"headers":{"authorization":"[set]"}')
    await rm(config.home, { recursive: true, force: true })
  })
})

describe('no endpoint: no OpenTelemetry module is loaded', () => {
  const PROBE = fileURLToPath(new URL('./fixtures/module-probe.mjs', import.meta.url))

  /** The @opentelemetry modules a real `lango serve` resolved from start to ready, with `env`: `url from importer`. */
  async function loadedBy(env: Record<string, string>): Promise<string[]> {
    const home = await mkdtemp(join(tmpdir(), 'lango-probe-'))
    const log = join(home, 'modules.log')
    await writeFile(log, '')
    const { child } = await startLangoServe(home, {
      NODE_OPTIONS: `--import=${PROBE}`,
      LANGO_MODULE_PROBE_LOG: log,
      ...env,
    })
    try {
      child.kill('SIGTERM')
      await new Promise((resolve) => child.once('exit', resolve))
      return (await readFile(log, 'utf8')).split('\n').filter((line) => line !== '')
    } finally {
      await rm(home, { recursive: true, force: true })
    }
  }
  const packages = (lines: readonly string[]) =>
    [...new Set(lines.map((line) => /\/(@opentelemetry\/[^/]+)\//.exec(line)?.[1] ?? line))].sort()
  /** The AI SDK (`ai`) imports @opentelemetry/api itself, whether or not traces are on. */
  const fromTheAiSdk = (line: string) =>
    /\/@opentelemetry\/api\/\S+ from \S+\/node_modules\/ai\/dist\//.test(line)

  it.each([
    ['without a model', {}],
    ['with a model', { LANGO_MODEL_BASE_URL: 'http://127.0.0.1:9/v1', LANGO_MODEL: 'test-model' }],
  ])(
    "%s: nothing but the AI SDK's own import of @opentelemetry/api; no SDK, exporter or context manager",
    async (_, env) => {
      const lines = await loadedBy(env)
      expect(lines.filter((line) => !fromTheAiSdk(line))).toEqual([])
    },
  )

  it('the probe sees them when an endpoint is set (the control)', async () => {
    const modules = packages(await loadedBy({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }))
    expect(modules).toEqual(
      expect.arrayContaining(['@opentelemetry/sdk-trace', '@opentelemetry/exporter-trace-otlp-http']),
    )
  })
})

describe('a collector that refuses the exports', () => {
  it('is said at once (spans are dropped), and again when traces reach it', async () => {
    const receiver = await startOtlpReceiver()
    receiver.failWith.status = 400
    const logger = recordingLogger()
    const made = await testConfig((config) => ({
      ...config,
      telemetry: {
        ...config.telemetry,
        serviceName: 'lango-refused-test',
        tracesUrl: `${receiver.endpoint}/v1/traces`,
        headers: {},
      },
    }))
    const running = await serve({ config: made.config, logger, passphrase: '', closeGraceMs: 200 })
    try {
      const job = await running.app.cron.create({
        name: 'traced',
        scheduleType: 'every',
        schedule: '1h',
        command: 'true',
        deliverTo: [],
      })
      const runOnce = async () => {
        const started = await running.app.cron.trigger(job.job.id)
        await until(async () =>
          (await running.app.cron.history({ job: job.job.id })).find(
            (run) => run.id === started.runId && run.status !== 'running',
          ),
        )
      }
      await runOnce()
      const said = (message: string) => logger.entries.find((entry) => entry.message.startsWith(message))
      const refused = await until(async () => said('traces not exported'), 30_000)
      expect(refused.level).toBe('warn')
      expect(receiver.spans).toEqual([])
      receiver.failWith.status = undefined
      await runOnce()
      await until(async () => said('traces reach the collector again'), 30_000)
      expect(receiver.spans.length).toBeGreaterThan(0)
    } finally {
      await running.close()
      await rm(made.home, { recursive: true, force: true })
      await receiver.close()
    }
  })
})

describe('a workflow run this server stops working on', () => {
  it('ends its workflow.run span (interrupted, with the error code) when its lease is taken', async () => {
    const receiver = await startOtlpReceiver()
    const server = await startTestServer((config) => ({
      ...config,
      // Renewals every 300 ms: the taken lease is noticed at the next one.
      cluster: { ...config.cluster, leaseMs: 900 },
      telemetry: { ...config.telemetry, tracesUrl: `${receiver.endpoint}/v1/traces` },
    }))
    try {
      const { engine } = server.app
      const { runId } = await engine.startRun('name: long-haul\nsteps:\n  - id: wait\n    run: "sleep 30"\n')
      await until(async () => (await engine.getRun(runId))?.steps.some((step) => step.status === 'running'))
      const lost = new Promise<void>((resolve) =>
        engine.on('run:error', (event) => {
          if (event.runId === runId) resolve()
        }),
      )
      // Another server took the run over: its lease version moved on.
      const database = new Database(server.app.config.database.url)
      try {
        database.pragma('busy_timeout = 5000')
        database.prepare('update workflow_runs set lease_version = lease_version + 1 where id = ?').run(runId)
      } finally {
        database.close()
      }
      await lost
      // Stopping the server flushes the exporter.
      await server.close()
      const span = receiver.spans.find(
        (candidate) =>
          candidate.name === 'workflow.run' && candidate.attributes['lango.workflow.run_id'] === runId,
      )
      expect(span?.statusCode).toBe(2)
      expect(span?.attributes).toMatchObject({
        'lango.run.status': 'interrupted',
        'error.type': 'WORKFLOW_OWNERSHIP_LOST',
      })
    } finally {
      await server.dispose()
      await receiver.close()
    }
  })
})
