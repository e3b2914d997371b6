import { existsSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { invokeTool } from '@lango/tools'
import { sql } from 'kysely'
import * as v from 'valibot'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { ServerConfig } from '../src/config/types.js'
import { type Logger, silentLogger } from '../src/logger.js'
import { type RunningServer, serve } from '../src/serve.js'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { testConfig, until } from './fixtures/http-server.js'
import { CLI, runLango } from './fixtures/lango-serve.js'

// Issue 25, item 1: daily budgets per cron job, per creator and for the whole server, checked before
// each model call against what the usage ledger recorded today plus the turn so far; `lango cost`
// sums the ledger. The model is a fake OpenAI server on loopback that counts its requests and
// reports 1,000 prompt and 100 completion tokens per call.

const USAGE = { promptTokens: 1000, completionTokens: 100 }
const more = (index: number) =>
  reply.toolCalls([{ id: `call_${index}`, name: 'cron_list', arguments: {} }], { usage: USAGE })

let model: FakeOpenAI
const cleanups: (() => Promise<void>)[] = []

beforeEach(async () => {
  model = await startFakeOpenAI()
})

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  await model.close()
})

async function startServer(
  change: (config: ServerConfig) => ServerConfig = (config) => config,
  logger: Logger = silentLogger,
) {
  const made = await testConfig(
    (loaded): ServerConfig =>
      change({
        ...loaded,
        model: { ...loaded.model, baseUrl: model.baseUrl, name: 'test-model' },
        agent: { ...loaded.agent, maxRetries: 0 },
      }),
  )
  const server: RunningServer = await serve({
    config: made.config,
    logger,
    passphrase: '',
    closeGraceMs: 200,
  })
  cleanups.push(async () => {
    await server.close()
    await rm(made.home, { recursive: true, force: true })
  })
  return { server, home: made.home }
}

/** Calls a tool as the operator (no approval), failing the test on a tool error. */
async function call(server: RunningServer, name: string, params: unknown): Promise<Record<string, unknown>> {
  const tool = server.app.tools.find((candidate) => candidate.name === name)
  if (tool === undefined) throw new Error(`no tool ${name}`)
  const outcome = await invokeTool(tool, params, { sessionKey: 'test' }, { policy: 'none' })
  if (!outcome.ok) throw new Error(`${name} failed: ${outcome.error.message}`)
  return outcome.result as Record<string, unknown>
}

async function runJob(server: RunningServer, name: string) {
  const triggered = await server.app.cron.trigger(name)
  return until(async () => {
    const row = await server.app.cron.getRun(triggered.runId as string)
    return row.status === 'running' ? undefined : row
  }, 60_000)
}

describe('daily budgets', () => {
  it("a job whose turn keeps calling tools stops at its daily token budget (one step over at most); the day's next run makes no model call; lango cost sums it", async () => {
    const { server, home } = await startServer()
    model.script(...Array.from({ length: 20 }, (_, index) => more(index)))
    // Through the HTTP API, as cron_add's parameters.
    const created = await fetch(`${server.url}/api/cron/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'watcher',
        schedule_type: 'every',
        schedule: '1h',
        prompt: 'Check the jobs until they are all fine.',
        deliver_to: [],
        max_tokens_per_day: 2500,
      }),
    })
    expect(created.status).toBe(200)
    expect((await server.app.cron.get('watcher')).maxTokensPerDay).toBe(2500)

    const first = await runJob(server, 'watcher')
    expect(first.status).toBe('failed')
    // 1,100 tokens a call: 2,200 after two is within 2,500, 3,300 after three passes it — no fourth.
    expect(model.chatBodies).toHaveLength(3)
    expect(first.error).toMatch(
      /^budget_exhausted: the turn used 3,300 tokens; with the 0 tokens cron job watcher used before it today, that passes its budget of 2,500 tokens a day \(max_tokens_per_day \/ max_cost_per_day of the job\); it was stopped before the next model call/,
    )

    // A turn its spent budget refused before any model call is a skipped run, not a failure: the
    // job is not paused for a budget that resets tomorrow.
    const second = await runJob(server, 'watcher')
    expect(second.status).toBe('skipped')
    expect(second.skipReason).toMatch(
      /^budget_exhausted: cron job watcher already used 3,300 tokens today, past its budget of 2,500 tokens a day .*no model call/,
    )
    expect((await server.app.cron.get('watcher')).consecutiveFailures).toBe(1)
    expect(model.chatBodies).toHaveLength(3)
    // On /metrics it is a skip for its budget, where an alert on reason="budget" looks; not a run.
    const metrics = await until(async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text()
      return text.includes('lango_cron_skipped_total{job="watcher",reason="budget"} 1') ? text : undefined
    })
    expect(metrics).not.toMatch(/lango_cron_runs_total\{[^}]*status="skipped"/)
    expect(metrics).toContain('lango_cron_runs_total{job="watcher",kind="ai",status="failed"} 1')

    // cron_history shows each run's tokens (from the ledger: a stopped run recorded none of its own) and model.
    const history = await call(server, 'cron_history', { job_id: 'watcher' })
    expect(history.entries).toEqual([
      expect.objectContaining({
        id: second.id,
        input_tokens: 0,
        output_tokens: 0,
        model: 'test-model',
        cost_usd: null,
      }),
      expect.objectContaining({
        id: first.id,
        input_tokens: 3000,
        output_tokens: 300,
        model: 'test-model',
        cost_usd: null,
      }),
    ])

    // The ledger has both turns; lango cost sums them by job, the CLI over the HTTP API.
    if (!existsSync(CLI)) throw new Error('build @lango/server before running this test')
    const json = await runLango(['cost', '--by', 'job', '--json'], {
      LANGO_HOME: home,
      LANGO_URL: server.url,
    })
    expect(json.code).toBe(0)
    const view = JSON.parse(json.stdout) as { lines: unknown[]; total: unknown }
    expect(view.lines).toEqual([
      {
        job: 'cron:watcher',
        turns: 2,
        input_tokens: 3000,
        output_tokens: 300,
        cost_usd: 0,
        budget_exhausted: 2,
      },
    ])
    const table = await runLango(['cost', '--by', 'model'], { LANGO_HOME: home, LANGO_URL: server.url })
    expect(table.code).toBe(0)
    expect(table.stdout).toMatch(/MODEL\s+TURNS\s+INPUT\s+OUTPUT\s+COST\s+STOPPED/)
    expect(table.stdout).toMatch(/test-model\s+2\s+3,000\s+300\s+\$0\.0000\s+2/)
    const bad = await runLango(['cost', '--since', 'yesterday'], { LANGO_HOME: home, LANGO_URL: server.url })
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toMatch(/since must be a span such as 24h/)
  })

  it("renaming a job keeps its day's spend (keyed by the job's id); lango cost still shows each name", async () => {
    const { server } = await startServer()
    model.script(...Array.from({ length: 20 }, (_, index) => more(index)))
    await call(server, 'cron_add', {
      name: 'watcher',
      schedule_type: 'every',
      schedule: '1h',
      prompt: 'Check the jobs until they are all fine.',
      deliver_to: [],
      max_tokens_per_day: 2500,
    })
    const first = await runJob(server, 'watcher')
    expect(first.error).toMatch(/^budget_exhausted: the turn used 3,300 tokens/)
    expect(model.chatBodies).toHaveLength(3)

    // A new name is not a new day: the renamed job's next run makes no model call.
    const renamed = await call(server, 'manage_cron_jobs', {
      action: 'update',
      id: 'watcher',
      name: 'watcher-2',
    })
    expect(renamed.name).toBe('watcher-2')
    const second = await runJob(server, 'watcher-2')
    expect(second.status).toBe('skipped')
    expect(second.skipReason).toMatch(
      /^budget_exhausted: cron job watcher-2 already used 3,300 tokens today, past its budget of 2,500 tokens a day .*no model call/,
    )
    expect(model.chatBodies).toHaveLength(3)

    const cost = (await (await fetch(`${server.url}/api/cost?by=job`)).json()) as {
      lines: { job: string; turns: number; input_tokens: number; budget_exhausted: number }[]
    }
    expect(cost.lines).toEqual([
      expect.objectContaining({ job: 'cron:watcher', turns: 1, input_tokens: 3000, budget_exhausted: 1 }),
      expect.objectContaining({ job: 'cron:watcher-2', turns: 1, input_tokens: 0, budget_exhausted: 1 }),
    ])
  })

  it('a money budget with a price table does the same, server-wide per day', async () => {
    const { server } = await startServer((config) => ({
      ...config,
      agent: { ...config.agent, dailyBudget: { maxCostUsd: 0.005 } },
      // $1 per million input and $10 per million output: $0.002 a call.
      models: { 'test-model': { price: { inputPerMillion: 1, outputPerMillion: 10 } } },
    }))
    model.script(...Array.from({ length: 20 }, (_, index) => more(index)))
    await server.app.cron.add({
      name: 'spender',
      scheduleType: 'every',
      schedule: '1h',
      prompt: 'Go on.',
      deliverTo: [],
    })
    const first = await runJob(server, 'spender')
    expect(model.chatBodies).toHaveLength(3)
    expect(first.error).toMatch(
      /^budget_exhausted: the turn used 3,300 tokens \(\$0\.0060\); with the 0 tokens the server used before it today, that passes its budget of \$0\.005 a day \(agent\.budget\.max_\*_per_day\)/,
    )
    // A chat turn the same day: the server's money is spent, so no model call.
    const chat = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hello', session: 'budget-test' }),
    })
    expect(chat.status).toBe(429)
    expect(((await chat.json()) as { error: { code: string } }).error.code).toBe('AGENT_BUDGET_EXHAUSTED')
    expect(model.chatBodies).toHaveLength(3)
    const cost = (await (await fetch(`${server.url}/api/cost?by=day`)).json()) as {
      lines: { day: string; cost_usd: number }[]
    }
    expect(cost.lines).toHaveLength(1)
    expect(cost.lines[0]?.day).toBe(new Date().toISOString().slice(0, 10))
    expect(cost.lines[0]?.cost_usd).toBeCloseTo(0.006, 10)
  })

  it('a model server that reports negative, huge or no usage neither cancels a budget nor passes silently', async () => {
    const warnings: { message: string; fields?: Record<string, unknown> }[] = []
    const logger: Logger = {
      ...silentLogger,
      warn: (message, fields) => warnings.push({ message, ...(fields === undefined ? {} : { fields }) }),
    }
    const { server } = await startServer(
      (config) => ({ ...config, agent: { ...config.agent, dailyBudget: { maxTokens: 5_000 } } }),
      logger,
    )
    const chat = (session: string) =>
      fetch(`${server.url}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hello', session }),
      })
    // A lie of minus a million counts as 0: the day's total is not pushed below what was used.
    model.script(reply.text('one', { usage: { promptTokens: -1_000_000, completionTokens: 0 } }))
    expect((await chat('lying')).status).toBe(200)
    // Then honest turns of 3,000 tokens: the second passes the 5,000 budget, the third is refused.
    model.script(
      reply.text('two', { usage: { promptTokens: 3_000, completionTokens: 0 } }),
      reply.text('three', { usage: { promptTokens: 3_000, completionTokens: 0 } }),
    )
    expect((await chat('honest-1')).status).toBe(200)
    expect((await chat('honest-2')).status).toBe(200)
    const refused = await chat('honest-3')
    expect(refused.status).toBe(429)
    const cost = (await (await fetch(`${server.url}/api/cost?by=day`)).json()) as {
      lines: { input_tokens: number }[]
    }
    expect(cost.lines[0]?.input_tokens).toBe(6_000)
    expect(warnings.filter((warning) => warning.message.includes('cannot be right'))).toEqual([
      expect.objectContaining({
        fields: expect.objectContaining({ model: 'test-model', input_tokens: -1_000_000 }),
      }),
    ])

    // No usage at all: said once for the model, however many turns.
    const { server: second } = await startServer((config) => config, logger)
    model.script(reply.text('a', { usage: null }), reply.text('b', { usage: null }))
    for (const session of ['none-1', 'none-2'])
      expect(
        (
          await fetch(`${second.url}/api/chat`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ message: 'hello', session }),
          })
        ).status,
      ).toBe(200)
    expect(warnings.filter((warning) => warning.message.includes('reported no token usage'))).toHaveLength(1)
    // A count past any model's context is counted as the bound (a budget errs toward stopping), never as infinity.
    model.script(reply.text('c', { usage: { promptTokens: 1e308, completionTokens: 0 } }))
    const huge = await fetch(`${second.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hello', session: 'huge' }),
    })
    expect(((await huge.json()) as { usage?: unknown }).usage).toMatchObject({ totalTokens: 100_000_000 })
    const secondCost = (await (await fetch(`${second.url}/api/cost?by=day`)).json()) as {
      lines: { input_tokens: number }[]
    }
    expect(secondCost.lines[0]?.input_tokens).toBe(100_000_000)
  })

  it('bg_result and workflow_status show the tokens, the model that answered and the cost', async () => {
    const { server } = await startServer((config) => ({
      ...config,
      models: { 'test-model': { price: { inputPerMillion: 1, outputPerMillion: 10 } } },
    }))
    model.script(
      reply.text('Background done.', { usage: USAGE, model: 'test-model-2026' }),
      reply.text('Step done.', { usage: USAGE }),
    )
    const submitted = await call(server, 'bg_submit', { prompt: 'Summarise the jobs.' })
    const taskId = submitted.task_id as string
    await until(
      async () =>
        (await call(server, 'bg_status', { task_id: taskId })).status === 'done' ? true : undefined,
      60_000,
    )
    const result = await call(server, 'bg_result', { task_id: taskId })
    expect(result).toMatchObject({
      result: 'Background done.',
      input_tokens: 1000,
      output_tokens: 100,
      model: 'test-model-2026',
    })
    expect(result.cost_usd).toBeCloseTo(0.002, 10)

    const run = await call(server, 'workflow_run', {
      yaml_content: 'name: costed\nsteps:\n  - id: a\n    prompt: hi\n',
      wait_seconds: 30,
    })
    expect(run.status).toBe('completed')
    const status = await call(server, 'workflow_status', { run_id: run.run_id })
    expect(status).toMatchObject({ input_tokens: 1000, output_tokens: 100 })
    expect(status.cost_usd).toBeCloseTo(0.002, 10)
    expect(status.steps).toEqual([
      expect.objectContaining({
        step_id: 'a',
        input_tokens: 1000,
        model: 'test-model',
        cost_usd: expect.closeTo(0.002, 10),
      }),
    ])
  })

  it('a ledger that cannot be read: bg_result, workflow_status and cron_history still answer, marked usage_unavailable, and the server warns', async () => {
    const warnings: { message: string; fields: unknown }[] = []
    const { server } = await startServer((config) => config, {
      ...silentLogger,
      warn: (message, fields) => void warnings.push({ message, fields }),
    })
    model.script(reply.text('Background done.', { usage: USAGE }), reply.text('Step done.', { usage: USAGE }))
    const taskId = (await call(server, 'bg_submit', { prompt: 'Summarise the jobs.' })).task_id as string
    await until(
      async () =>
        (await call(server, 'bg_status', { task_id: taskId })).status === 'done' ? true : undefined,
      60_000,
    )
    const run = await call(server, 'workflow_run', {
      yaml_content: 'name: costed\nsteps:\n  - id: a\n    prompt: hi\n',
      wait_seconds: 30,
    })
    expect(run.status).toBe('completed')
    await server.app.cron.add({
      name: 'shelly',
      kind: 'shell',
      scheduleType: 'every',
      schedule: '1h',
      command: 'echo hi',
    })
    await runJob(server, 'shelly')
    // The usage table goes away under the server (a broken or half-restored database).
    await sql`alter table agent_usage rename to agent_usage_gone`.execute(server.app.database.db)

    const shown = {
      bg_result: await call(server, 'bg_result', { task_id: taskId }),
      workflow_status: await call(server, 'workflow_status', { run_id: run.run_id }),
      cron_history: await call(server, 'cron_history', { job_id: 'shelly' }),
    }
    expect(shown.bg_result).toMatchObject({
      result: 'Background done.',
      input_tokens: 1000,
      output_tokens: 100,
      model: null,
      cost_usd: null,
      usage_unavailable: true,
    })
    expect(shown.workflow_status).toMatchObject({ status: 'completed', usage_unavailable: true })
    expect(shown.workflow_status.steps).toEqual([
      expect.objectContaining({ step_id: 'a', result: 'Step done.', input_tokens: 1000 }),
    ])
    expect(shown.cron_history).toMatchObject({ count: 1, usage_unavailable: true })
    // Each answer fits the tool's published output schema (what MCP clients check).
    for (const [name, result] of Object.entries(shown)) {
      const tool = server.app.tools.find((candidate) => candidate.name === name)
      expect(v.safeParse(tool?.output as v.GenericSchema, result).success, name).toBe(true)
    }
    expect(warnings.filter((warning) => warning.message.startsWith('usage ledger not read'))).toHaveLength(3)
  })

  it('refuses a job budget that is not a positive amount, naming the field', async () => {
    const { server } = await startServer()
    const response = await fetch(`${server.url}/api/cron/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'bad',
        schedule_type: 'every',
        schedule: '1h',
        prompt: 'x',
        max_cost_per_day: -1,
      }),
    })
    expect(response.status).toBe(400)
    expect(await response.text()).toMatch(/max_cost_per_day must be above 0/)
  })
})
