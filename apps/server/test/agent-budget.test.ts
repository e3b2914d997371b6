import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CronService } from '@lango/cron'
import { type CronDatabase, migrateCron, SqliteCronStore } from '@lango/cron/sqlite'
import { type AnyTool, createCronTools } from '@lango/tools'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  AgentError,
  type AgentRunnerOptions,
  createAgentRunner,
  type UsageRecord,
} from '../src/agent/index.js'
import type { ServerConfig } from '../src/config/types.js'
import { silentLogger } from '../src/logger.js'
import { type RunningServer, serve } from '../src/serve.js'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { testConfig, until } from './fixtures/http-server.js'

// Issue 25, item 1 (part): a turn's budget in tokens or dollars (`agent.budget`, `models.<name>.price`)
// stops it before its next model call — at most one step over — with `AGENT_BUDGET_EXHAUSTED`
// (`budget_exhausted`), which the run records and the operator is alerted of. The model is a fake
// OpenAI server on loopback that reports 1,000 prompt and 100 completion tokens per call.

const USAGE = { promptTokens: 1000, completionTokens: 100 }
/** A reply that asks for another tool call: the model would go on for ever. */
const more = (index: number) =>
  reply.toolCalls([{ id: `call_${index}`, name: 'cron_list', arguments: {} }], { usage: USAGE })

let dir: string
let db: Kysely<CronDatabase>
let tools: AnyTool[]
let model: FakeOpenAI
const cleanups: (() => Promise<void>)[] = []

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lango-budget-'))
  db = new Kysely<CronDatabase>({
    dialect: new SqliteDialect({ database: new Database(join(dir, 'lango.db')) }),
  })
  await migrateCron(db)
  tools = createCronTools({
    service: new CronService({ store: new SqliteCronStore(db), defaultTimezone: 'UTC' }),
  })
  model = await startFakeOpenAI()
})

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  await model.close()
  await db.destroy()
  await rm(dir, { recursive: true, force: true })
})

function runner(options: Partial<AgentRunnerOptions> = {}) {
  return createAgentRunner({
    baseUrl: model.baseUrl,
    model: 'test-model',
    tools,
    maxRetries: 0,
    ...options,
  })
}

describe('the turn budget of the agent runner', () => {
  it('a token budget stops a turn that keeps calling tools after the step that passes it (at most one step over)', async () => {
    model.script(...Array.from({ length: 10 }, (_, index) => more(index)))
    const usage: UsageRecord[] = []
    const failure = await runner({ turnBudget: { maxTokens: 2500 }, onUsage: (record) => usage.push(record) })
      .run({ prompt: 'Check the jobs until they are all fine.', sessionKey: 'cron:watch:r1' })
      .catch((error: unknown) => error)
    expect(AgentError.is(failure)).toBe(true)
    const error = failure as AgentError
    expect(error.code).toBe('AGENT_BUDGET_EXHAUSTED')
    // 1,100 tokens a step: 2,200 after two is within 2,500, 3,300 after three is past it — no fourth call.
    expect(model.chatBodies).toHaveLength(3)
    expect(error.message).toBe(
      'budget_exhausted: the turn used 3,300 tokens, past its budget of 2,500 tokens (agent.budget); it was stopped before the next model call (the tool calls of its last step ran: cron_list)',
    )
    expect(error.data).toMatchObject({ steps: 3, tokens: 3300, maxTokens: 2500 })
    // The packages' AgentRunFailure: what the turn spent, and that trying again cannot help.
    expect(error.usage).toEqual({ inputTokens: 3000, outputTokens: 300 })
    expect(error.retryable).toBe(false)
    expect(usage).toEqual([
      expect.objectContaining({ ok: false, steps: 3, budgetExhausted: true, model: 'test-model' }),
    ])
  })

  it('a model server that reports only total_tokens is counted all the same (as output tokens)', async () => {
    model.script(
      ...Array.from({ length: 10 }, (_, index) =>
        reply.toolCalls([{ id: `call_${index}`, name: 'cron_list', arguments: {} }], {
          usage: { totalTokens: 1100 },
        }),
      ),
    )
    const failure = await runner({ turnBudget: { maxTokens: 2500 } })
      .run({ prompt: 'Check the jobs until they are all fine.', sessionKey: 'cron:watch:r2' })
      .catch((error: unknown) => error)
    expect((failure as AgentError).code).toBe('AGENT_BUDGET_EXHAUSTED')
    expect(model.chatBodies).toHaveLength(3)
    expect((failure as AgentError).usage).toEqual({ inputTokens: 0, outputTokens: 3300 })
  })

  it('asks the model for no more output than the tightest token budget has left (max_tokens)', async () => {
    model.script(reply.text('a'), reply.text('b'), reply.text('c'))
    await runner({ turnBudget: { maxTokens: 2500 } }).run({ prompt: 'x', sessionKey: 'cron:a:1' })
    // A daily budget with 400 tokens left is tighter than the turn's 2,500.
    const daily = {
      scope: 'the server',
      setting: 'agent.budget.max_*_per_day',
      spentTokens: 9600,
      spentCostUsd: 0,
      maxTokens: 10_000,
    }
    await runner({ turnBudget: { maxTokens: 2500 }, spendLimits: async () => [daily] }).run({
      prompt: 'y',
      sessionKey: 'cron:a:2',
    })
    // Without a token budget the model's own default applies.
    await runner({}).run({ prompt: 'z', sessionKey: 'cron:a:3' })
    expect(model.chatBodies.map((body) => (body as { max_tokens?: number }).max_tokens)).toEqual([
      2500,
      400,
      undefined,
    ])
  })

  it('a chat turn stopped by its budget is remembered with the tool calls that ran, so the next turn knows', async () => {
    model.script(...Array.from({ length: 10 }, (_, index) => more(index)))
    const appended: { sessionKey: string; roles: string[] }[] = []
    const memory = {
      async load() {
        return { observations: [], messages: [] }
      },
      async append(sessionKey: string, messages: readonly { role: string }[]) {
        appended.push({ sessionKey, roles: messages.map((message) => message.role) })
      },
    }
    const failure = await runner({ turnBudget: { maxTokens: 2500 }, memory })
      .chat('telegram:42:7', 'Keep checking the jobs.')
      .catch((error: unknown) => error)
    expect((failure as AgentError).code).toBe('AGENT_BUDGET_EXHAUSTED')
    expect(appended).toHaveLength(1)
    expect(appended[0]?.sessionKey).toBe('telegram:42:7')
    // The user message, then each step's assistant tool call and its tool result.
    expect(appended[0]?.roles).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
    ])
  })

  it('a money budget with a price table does the same, and reports the cost', async () => {
    model.script(...Array.from({ length: 10 }, (_, index) => more(index)))
    // $1 per million input and $10 per million output: $0.001 + $0.001 = $0.002 a step.
    const prices = { 'test-model': { inputPerMillion: 1, outputPerMillion: 10 } }
    const usage: UsageRecord[] = []
    const failure = await runner({
      turnBudget: { maxCostUsd: 0.005 },
      prices,
      onUsage: (record) => usage.push(record),
    })
      .run({ prompt: 'Go on.', sessionKey: 'bg:task-1' })
      .catch((error: unknown) => error)
    expect((failure as AgentError).code).toBe('AGENT_BUDGET_EXHAUSTED')
    expect(model.chatBodies).toHaveLength(3)
    expect((failure as AgentError).message).toMatch(
      /^budget_exhausted: the turn used 3,300 tokens \(\$0\.0060\), past its budget of \$0\.005/,
    )
    expect(usage[0]?.costUsd).toBeCloseTo(0.006, 10)
  })

  it('a turn that ends within its budget answers and reports its cost; one that ends on the step past it still answers', async () => {
    const prices = { 'test-model': { inputPerMillion: 1, outputPerMillion: 10 } }
    model.script(more(1), reply.text('All fine.', { usage: USAGE }))
    const within = await runner({ turnBudget: { maxTokens: 10_000 }, prices }).run({
      prompt: 'Check.',
      sessionKey: 'cron:check:r1',
    })
    expect(within.text).toBe('All fine.')
    expect(within.costUsd).toBeCloseTo(0.004, 10)
    // The second step passes the budget but gives the answer: nothing was cut short.
    model.script(more(2), reply.text('Done.', { usage: USAGE }))
    const last = await runner({ turnBudget: { maxTokens: 1500 } }).run({
      prompt: 'Check.',
      sessionKey: 'cron:c:r2',
    })
    expect(last.text).toBe('Done.')
  })

  it('says once per model that a money budget cannot bound a model without a price', async () => {
    const warnings: { message: string; fields: unknown }[] = []
    const logger = {
      debug() {},
      info() {},
      warn(message: string, fields?: unknown) {
        warnings.push({ message, fields })
      },
      error() {},
    }
    model.script(reply.text('a', { usage: USAGE }), reply.text('b', { usage: USAGE }), reply.text('c'))
    // A daily money budget (the server's, a job's) is read before the turn: said too, once.
    const daily = {
      scope: 'the server',
      setting: 'agent.budget.max_*_per_day',
      spentTokens: 0,
      spentCostUsd: 0,
      maxCostUsd: 5,
    }
    const agent = runner({ turnBudget: { maxCostUsd: 0.001 }, logger, spendLimits: async () => [daily] })
    await agent.run({ prompt: 'x', sessionKey: 'cron:a:1' })
    await agent.run({ prompt: 'y', sessionKey: 'cron:a:2' })
    await agent.run({ prompt: 'z', sessionKey: 'cron:a:3' })
    const fix =
      'give the model a price in lango.yaml (models.test-model.price: { input, output }, US dollars per million tokens), or bound it with a token budget'
    expect(warnings.filter((warning) => warning.message.includes('has no price'))).toEqual([
      {
        message:
          'agent.budget.max_cost_per_turn does not bound this model: it has no price (models.<name>.price)',
        fields: { model: 'test-model', setting: 'agent.budget.max_cost_per_turn', fix },
      },
      {
        message:
          'agent.budget.max_*_per_day does not bound this model: it has no price (models.<name>.price)',
        fields: { model: 'test-model', setting: 'agent.budget.max_*_per_day', fix },
      },
    ])
  })

  it('refuses a budget or a price that is not a positive amount, with the field named', () => {
    for (const [options, field] of [
      [{ turnBudget: { maxTokens: 0 } }, 'turnBudget.maxTokens'],
      [{ turnBudget: { maxTokens: 1.5 } }, 'turnBudget.maxTokens'],
      [{ turnBudget: { maxCostUsd: -1 } }, 'turnBudget.maxCostUsd'],
      [{ prices: { m: { inputPerMillion: Number.NaN, outputPerMillion: 1 } } }, 'prices.m'],
    ] as const) {
      let thrown: unknown
      try {
        runner(options as Partial<AgentRunnerOptions>)
      } catch (error) {
        thrown = error
      }
      expect(thrown).toMatchObject({ code: 'AGENT_INVALID_OPTIONS', data: { field } })
    }
  })
})

describe('agent.budget on the server', () => {
  it('a cron ai job stopped by its budget: the run records budget_exhausted, the operator is alerted, /metrics counts the cost', async () => {
    const alerts: string[] = []
    const hook: Server = createServer((request, response) => {
      let text = ''
      request.on('data', (chunk) => {
        text += chunk
      })
      request.on('end', () => {
        alerts.push(String((JSON.parse(text) as { text: string }).text))
        response.writeHead(204).end()
      })
    })
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise((resolve) => hook.close(() => resolve())))
    const made = await testConfig(
      (loaded): ServerConfig => ({
        ...loaded,
        model: { ...loaded.model, baseUrl: model.baseUrl, name: 'test-model' },
        agent: { ...loaded.agent, maxRetries: 0, turnBudget: { maxTokens: 2500 } },
        models: { 'test-model': { price: { inputPerMillion: 1, outputPerMillion: 10 } } },
        channels: {
          ...loaded.channels,
          webhook: {
            ...loaded.channels.webhook,
            url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/`,
          },
        },
        alerts: { deliverTo: ['webhook'] },
      }),
    )
    const server: RunningServer = await serve({
      config: made.config,
      logger: silentLogger,
      passphrase: '',
      closeGraceMs: 200,
    })
    cleanups.push(async () => {
      await server.close()
      await rm(made.home, { recursive: true, force: true })
    })
    model.script(...Array.from({ length: 10 }, (_, index) => more(index)))
    await server.app.cron.add({
      name: 'watcher',
      scheduleType: 'every',
      schedule: '1h',
      prompt: 'Check the jobs until they are all fine.',
      deliverTo: [],
    })
    const triggered = await server.app.cron.trigger('watcher')
    const run = await until(async () => {
      const row = await server.app.cron.getRun(triggered.runId as string)
      return row.status === 'running' ? undefined : row
    }, 60_000)
    expect(run.status).toBe('failed')
    expect(run.error).toMatch(
      /budget_exhausted: the turn used 3,300 tokens \(\$0\.0060\), past its budget of 2,500 tokens/,
    )
    expect(model.chatBodies).toHaveLength(3)
    // Its spend is on the run and counts against cron.max_ai_tokens_per_day like a completed run's.
    expect([run.inputTokens, run.outputTokens]).toEqual([3000, 300])

    const alert = await until(async () => alerts.find((text) => text.includes('Budgets exhausted:')), 60_000)
    expect(alert).toMatch(
      /an agent turn of cron job watcher \(cron:watcher:\S+\) was stopped by its budget \(agent\.budget\) after 3 model calls and 3,300 tokens \(\$0\.0060\) on test-model/,
    )
    expect(alert).not.toContain('Check the jobs')

    const metrics = await (await fetch(`${server.url}/metrics`)).text()
    expect(metrics).toMatch(/lango_agent_cost_usd_total\{model="test-model",purpose="run"\} 0\.006/)
  })
})
