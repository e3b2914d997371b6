import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { skipReasonKind } from '../src/metrics/skip-reasons.js'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

const TOKEN = 'metrics-token-0123456789abcdef'
const auth = { authorization: `Bearer ${TOKEN}` }

/** The families of one scrape, by name. */
type Scrape = ReadonlyMap<string, ReturnType<typeof parsePrometheusTextFormat>[number]>

async function scrape(server: TestServer): Promise<Scrape> {
  const response = await server.request('/metrics', { headers: auth })
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toContain('text/plain')
  return new Map(parsePrometheusTextFormat(await response.text()).map((family) => [family.name, family]))
}

/** The value of the sample of `name` whose labels include `labels`, summed; 0 when there is none. */
function value(metrics: Scrape, name: string, labels: Record<string, string> = {}): number {
  const family = metrics.get(name)
  if (family === undefined) return 0
  return family.metrics
    .filter((sample) => Object.entries(labels).every(([key, wanted]) => sample.labels?.[key] === wanted))
    .reduce((sum, sample) => sum + Number(sample.value ?? sample.count ?? 0), 0)
}

describe('GET /metrics after a known workload', () => {
  let model: FakeOpenAI
  let server: TestServer
  const history = async (job: string): Promise<Json[]> =>
    ((await (await server.request(`/api/cron/runs?job=${job}&limit=100`, { headers: auth })).json()) as Json)
      .entries

  beforeAll(async () => {
    model = await startFakeOpenAI()
    server = await startTestServer(
      (config) => ({ ...config, cron: { ...config.cron, minIntervalMs: 1000 } }),
      { LANGO_API_TOKEN: TOKEN, LANGO_MODEL_BASE_URL: model.baseUrl, LANGO_MODEL: 'test-model' },
    )
  })
  afterAll(async () => {
    await server?.dispose()
    await model?.close()
  })

  async function createJob(body: Json): Promise<string> {
    const created = await server.request('/api/cron/jobs', {
      headers: auth,
      json: { kind: 'shell', schedule_type: 'cron', schedule: '0 3 * * *', timezone: 'UTC', ...body },
    })
    expect(created.status).toBe(200)
    return ((await created.json()) as Json).job.id
  }

  /** Triggers `job` and waits for the run to end in the ledger. */
  async function runOnce(id: string, name: string): Promise<void> {
    const triggered = (await (
      await server.request(`/api/cron/jobs/${id}/trigger`, { method: 'POST', headers: auth })
    ).json()) as Json
    await until(async () =>
      (await history(name)).some((entry) => entry.id === triggered.run_id && entry.status !== 'running'),
    )
  }

  // An outside probe: these series first appeared at 1, which `increase()` reads as no increase.
  it('has every alert kind, alert batch status and background task status from the first scrape, at 0', async () => {
    const text = await (await server.request('/metrics', { headers: auth })).text()
    for (const kind of [
      'scheduler_stalled',
      'missed_runs',
      'job_paused',
      'delivery_failed',
      'lease_lost',
      'budget_exhausted',
      'database_failing',
      'database_recovered',
      'server_lost',
      'runs_interrupted',
    ])
      expect(text).toMatch(new RegExp(`^lango_alerts_total\\{kind="${kind}"\\} \\d+$`, 'm'))
    for (const status of ['sent', 'failed'])
      expect(text).toContain(`lango_alert_batches_total{status="${status}"} 0`)
    for (const status of ['done', 'failed', 'cancelled'])
      expect(text).toMatch(new RegExp(`^lango_background_tasks_total\\{status="${status}"\\} \\d+$`, 'm'))
  })

  // An outside probe: a job's series first appeared at 1, so an alert on `increase()` of its
  // failures never saw its first failure.
  it('has a job’s alerting series at 0 from its creation, and a workflow’s from its first run’s start', async () => {
    const at0 = (metrics: Scrape, name: string, labels: Record<string, string>) =>
      metrics
        .get(name)
        ?.metrics.find((sample) =>
          Object.entries(labels).every(([key, wanted]) => sample.labels?.[key] === wanted),
        )?.value
    await createJob({ name: 'metrics-fresh', command: 'true' })
    const metrics = await scrape(server)
    for (const status of ['completed', 'failed', 'timed_out', 'interrupted'])
      expect(
        at0(metrics, 'lango_cron_runs_total', { job: 'metrics-fresh', kind: 'shell', status }),
        status,
      ).toBe('0')
    expect(at0(metrics, 'lango_cron_skipped_total', { job: 'metrics-fresh', reason: 'missed' })).toBe('0')
    for (const status of ['delivered', 'failed'])
      expect(at0(metrics, 'lango_cron_deliveries_total', { job: 'metrics-fresh', status }), status).toBe('0')

    const started = await server.request('/api/workflows/runs', {
      headers: auth,
      json: { yaml_content: ['name: metrics-flow', 'steps:', '  - id: a', '    run: "echo one"'].join('\n') },
    })
    expect(started.status).toBe(200)
    await until(async () => {
      const now = await scrape(server)
      return at0(now, 'lango_workflow_runs_total', { workflow: 'metrics-flow', status: 'failed' }) === '0'
    })
  })

  it('counts what the ledger holds, by job, kind, status and delivery', async () => {
    const ok = await createJob({ name: 'metrics-ok', command: 'echo fine', deliver_to: ['log'] })
    const failing = await createJob({ name: 'metrics-failing', command: 'exit 3' })
    for (let index = 0; index < 3; index += 1) await runOnce(ok, 'metrics-ok')
    for (let index = 0; index < 2; index += 1) await runOnce(failing, 'metrics-failing')
    // A scheduled job (every second) fires on its own: its lateness is observed once per start.
    const ticking = await createJob({
      name: 'metrics-tick',
      schedule_type: 'every',
      schedule: '1s',
      command: 'true',
    })
    await until(
      async () => (await history('metrics-tick')).filter((entry) => entry.status === 'completed').length >= 2,
    )
    await server.request(`/api/cron/jobs/${ticking}/pause`, { method: 'POST', headers: auth })
    await until(async () => (await history('metrics-tick')).every((entry) => entry.status !== 'running'))

    // A background task the fake model answers (10 input and 5 output tokens).
    model.script(reply.text('summary written'))
    const task = (await (
      await server.request('/api/background/tasks', { headers: auth, json: { prompt: 'summarise' } })
    ).json()) as Json
    await until(async () => {
      const status = (await (
        await server.request(`/api/background/tasks/${task.task_id}`, { headers: auth })
      ).json()) as Json
      return status.status === 'done'
    })
    // A dangerous call waits for approval.
    expect(
      (await server.request('/api/tools/exec', { headers: auth, json: { command: 'echo later' } })).status,
    ).toBe(202)

    const metrics = await scrape(server)
    for (const job of ['metrics-ok', 'metrics-failing', 'metrics-tick']) {
      const entries = await history(job)
      for (const status of ['completed', 'failed', 'timed_out', 'cancelled', 'interrupted'])
        expect(
          value(metrics, 'lango_cron_runs_total', { job, kind: 'shell', status }),
          `${job} ${status}`,
        ).toBe(entries.filter((entry) => entry.status === status).length)
      expect(value(metrics, 'lango_cron_skipped_total', { job })).toBe(
        entries.filter((entry) => entry.status === 'skipped').length,
      )
      for (const status of ['delivered', 'failed'])
        expect(value(metrics, 'lango_cron_deliveries_total', { job, status })).toBe(
          entries.filter((entry) => entry.delivery_status === status).length,
        )
    }
    expect(value(metrics, 'lango_cron_runs_total', { job: 'metrics-ok', status: 'completed' })).toBe(3)
    expect(value(metrics, 'lango_cron_runs_total', { job: 'metrics-failing', status: 'failed' })).toBe(2)
    expect(
      value(metrics, 'lango_deliveries_total', { source: 'cron', channel: 'log', status: 'delivered' }),
    ).toBe(3)
    // The delivery ledger's per-target sends (delivery:end): one per run of metrics-ok, none retried.
    expect(
      value(metrics, 'lango_cron_target_deliveries_total', { channel: 'log', status: 'delivered' }),
    ).toBe(3)
    expect(value(metrics, 'lango_cron_target_deliveries_total', { status: 'retrying' })).toBe(0)
    const scheduled = (await history('metrics-tick')).filter(
      (entry) => entry.trigger === 'schedule' && entry.status !== 'skipped',
    ).length
    expect(scheduled).toBeGreaterThanOrEqual(2)
    // The parser folds a labelled histogram into one unlabelled sample (its buckets only): with only
    // `trigger="schedule"` observed here, the `+Inf` bucket is that series' count.
    const lateness = metrics.get('lango_cron_fire_lateness_seconds')
    expect(lateness?.type).toBe('HISTOGRAM')
    expect(Number(lateness?.metrics[0]?.buckets?.['+Inf'])).toBe(scheduled)

    expect(value(metrics, 'lango_background_tasks_total', { status: 'done' })).toBe(1)
    expect(
      value(metrics, 'lango_agent_turns_total', { model: 'test-model', purpose: 'run', outcome: 'ok' }),
    ).toBe(1)
    expect(value(metrics, 'lango_agent_steps_total', { model: 'test-model' })).toBe(1)
    expect(value(metrics, 'lango_agent_tokens_total', { model: 'test-model', direction: 'input' })).toBe(10)
    expect(value(metrics, 'lango_agent_tokens_total', { model: 'test-model', direction: 'output' })).toBe(5)

    // Gauges, read at the scrape: nothing queued or running, one approval pending, the retention lease held.
    for (const service of ['cron', 'background', 'workflow'])
      expect(value(metrics, 'lango_running', { service }), service).toBe(0)
    expect(value(metrics, 'lango_queue_depth')).toBe(0)
    expect(value(metrics, 'lango_approvals_pending')).toBe(
      (await server.app.approvals.list({ status: 'pending' })).length,
    )
    expect(value(metrics, 'lango_approvals_pending')).toBe(1)
    expect(value(metrics, 'lango_leases_held', { duty: 'retention' })).toBe(1)
    expect(metrics.has('process_cpu_seconds_total')).toBe(true)

    // Requests by route pattern, never by raw path.
    expect(
      value(metrics, 'lango_http_requests_total', {
        method: 'POST',
        route: '/api/cron/jobs/:id/trigger',
        status: '200',
      }),
    ).toBe(5)
    expect(
      value(metrics, 'lango_http_requests_total', { route: '/api/background/tasks/:id' }),
    ).toBeGreaterThan(0)
    const routes = new Set(
      metrics.get('lango_http_requests_total')?.metrics.map((sample) => sample.labels?.route),
    )
    for (const route of routes) expect(route).not.toContain(ok)

    // A removed job's series go with it; the others stay.
    expect(
      (await server.request(`/api/cron/jobs/${failing}`, { method: 'DELETE', headers: auth })).status,
    ).toBe(200)
    const after = await scrape(server)
    const jobs = (name: string) => new Set(after.get(name)?.metrics.map((sample) => sample.labels?.job))
    expect(jobs('lango_cron_runs_total').has('metrics-failing')).toBe(false)
    expect(jobs('lango_cron_runs_total').has('metrics-ok')).toBe(true)

    // A renamed job's series move to its new name at its next run; the old name's go.
    const renamed = await server.request(`/api/cron/jobs/${ok}`, {
      method: 'PATCH',
      headers: auth,
      json: { name: 'metrics-ok-renamed' },
    })
    expect(renamed.status).toBe(200)
    await runOnce(ok, 'metrics-ok-renamed')
    const later = await scrape(server)
    const jobsLater = new Set(later.get('lango_cron_runs_total')?.metrics.map((sample) => sample.labels?.job))
    expect(jobsLater.has('metrics-ok')).toBe(false)
    expect(value(later, 'lango_cron_runs_total', { job: 'metrics-ok-renamed', status: 'completed' })).toBe(1)
  })

  it('answers 401 without the token, and counts refusals and unmatched paths', async () => {
    const missing = await server.request('/metrics')
    expect(missing.status).toBe(401)
    expect(((await missing.json()) as Json).error.code).toBe('AUTH_REQUIRED')
    const wrong = await server.request('/metrics', { headers: { authorization: 'Bearer nope' } })
    expect(wrong.status).toBe(401)
    expect((await server.request('/no/such/path', { headers: auth })).status).toBe(404)

    const metrics = await scrape(server)
    expect(value(metrics, 'lango_http_requests_total', { route: '/metrics', status: '401' })).toBe(2)
    expect(value(metrics, 'lango_http_requests_total', { route: 'unmatched', status: '404' })).toBe(1)
  })
})

describe('metrics.enabled: false', () => {
  it('serves no /metrics', async () => {
    const server = await startTestServer((config) => ({ ...config, metrics: { enabled: false } }))
    try {
      expect(server.app.metrics).toBeUndefined()
      expect((await server.request('/metrics')).status).toBe(404)
      expect((await server.request('/healthz')).status).toBe(200)
    } finally {
      await server.dispose()
    }
  })
})

describe('skipReasonKind', () => {
  it.each([
    ['missed while no scheduler was running (catchup: none)', 'missed'],
    ['missed by 3h 2m, beyond the catch-up window of 1h', 'missed'],
    ['overlap: the previous run of this job is still in progress (overlap: skip)', 'overlap'],
    [
      'queue full: 100 further occurrences of overlap: allow jobs already wait for a run slot (maxWaitingRuns)',
      'queue_full',
    ],
    ['budget: 10 AI runs already started in the last 24 hours (maxAiRunsPerDay)', 'budget'],
    ['budget_exhausted: cron job watcher already used 3,300 tokens today, past its budget', 'budget'],
    ['when: nothing new since the last run', 'when'],
    ['skipped: the job was paused after consecutive failures', 'paused'],
    ['skipped: the scheduler stopped before a run slot was free', 'stopped'],
    [null, 'other'],
  ])('%s is %s', (reason, kind) => {
    expect(skipReasonKind(reason)).toBe(kind)
  })
})
