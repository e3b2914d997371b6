// The usage ledger on PostgreSQL (review of issue 25): `agent_usage` is the database's, so what one
// server's turns spent counts against the daily budgets another server of the same database checks.
// PostgreSQL at 127.0.0.1:5432 (trust auth), as CI provides it; a database created for this file and
// dropped after it. The model is a fake OpenAI server on loopback reporting 1,000 prompt and 100
// completion tokens per call, shared by both servers.
import { invokeTool } from '@lango/tools'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'
import { postgresDatabase } from './fixtures/postgres-database.js'

const DATABASE = postgresDatabase('lango_usage')
const USAGE = { promptTokens: 1000, completionTokens: 100 }

let model: FakeOpenAI
const servers: TestServer[] = []

beforeAll(async () => {
  await DATABASE.create()
  model = await startFakeOpenAI()
})
afterAll(async () => {
  for (const server of servers.splice(0)) await server.dispose()
  await model?.close()
  await DATABASE.drop()
})

/** A server on the shared database with a server-wide budget of 3,000 tokens a day. */
async function start(): Promise<TestServer> {
  const server = await startTestServer(
    (config) => ({ ...config, agent: { ...config.agent, maxRetries: 0, dailyBudget: { maxTokens: 3000 } } }),
    { LANGO_DATABASE_URL: DATABASE.url, LANGO_MODEL_BASE_URL: model.baseUrl, LANGO_MODEL: 'test-model' },
  )
  servers.push(server)
  return server
}

/** Calls a tool on `server` as the operator (no approval), failing the test on a tool error. */
async function call(server: TestServer, name: string, params: unknown): Promise<Record<string, unknown>> {
  const tool = server.app.tools.find((candidate) => candidate.name === name)
  if (tool === undefined) throw new Error(`no tool ${name}`)
  const outcome = await invokeTool(tool, params, { sessionKey: 'cli' }, { policy: 'none' })
  if (!outcome.ok) throw new Error(`${name} failed: ${outcome.error.message}`)
  return outcome.result as Record<string, unknown>
}

async function runJob(server: TestServer, name: string) {
  const triggered = await server.app.cron.trigger(name)
  return until(async () => {
    const run = await server.app.cron.getRun(triggered.runId as string)
    return run.status === 'running' ? undefined : run
  }, 60_000)
}

describe('the usage ledger on PostgreSQL', () => {
  it("one server's spend counts against the daily budgets another server checks: a job's (by its id) and the server-wide one", async () => {
    const first = await start()
    const second = await start()
    model.script(
      ...Array.from({ length: 10 }, (_, index) =>
        reply.toolCalls([{ id: `call_${index}`, name: 'cron_list', arguments: {} }], { usage: USAGE }),
      ),
    )
    await call(first, 'cron_add', {
      name: 'watcher',
      schedule_type: 'every',
      schedule: '1h',
      prompt: 'Check the jobs until they are all fine.',
      deliver_to: [],
      max_tokens_per_day: 2500,
    })
    // On the first server: 1,100 tokens a call, so the third passes the job's 2,500.
    const spent = await runJob(first, 'watcher')
    expect(spent.error).toMatch(
      /^budget_exhausted: the turn used 3,300 tokens; with the 0 tokens cron job watcher/,
    )
    expect(model.chatBodies).toHaveLength(3)

    // On the second server, renamed there: its day is the job's, by id, whoever ran it.
    await call(second, 'manage_cron_jobs', { action: 'update', id: 'watcher', name: 'watcher-2' })
    const refused = await runJob(second, 'watcher-2')
    expect(refused.status).toBe('skipped')
    expect(refused.skipReason).toMatch(
      /^budget_exhausted: cron job watcher-2 already used 3,300 tokens today, past its budget of 2,500 tokens a day .*no model call/,
    )
    // And the server-wide budget: a chat on the second server is refused on the first one's spend.
    const chat = await second.request('/api/chat', { json: { message: 'hello', session: 'pg' } })
    expect(chat.status).toBe(429)
    expect(((await chat.json()) as { error: { message: string } }).error.message).toMatch(
      /^budget_exhausted: the server already used 3,300 tokens today, past its budget of 3,000 tokens a day/,
    )
    expect(model.chatBodies).toHaveLength(3)

    // Both servers sum the same ledger (bigint columns read back as numbers).
    for (const server of [first, second]) {
      const cost = (await (await server.request('/api/cost?by=job')).json()) as {
        lines: unknown[]
        total: Record<string, number>
      }
      expect(cost.total).toEqual({
        turns: 3,
        input_tokens: 3000,
        output_tokens: 300,
        cost_usd: 0,
        budget_exhausted: 3,
      })
      // The most tokens first, then by name.
      expect(cost.lines).toEqual([
        {
          job: 'cron:watcher',
          turns: 1,
          input_tokens: 3000,
          output_tokens: 300,
          cost_usd: 0,
          budget_exhausted: 1,
        },
        { job: 'chat', turns: 1, input_tokens: 0, output_tokens: 0, cost_usd: 0, budget_exhausted: 1 },
        {
          job: 'cron:watcher-2',
          turns: 1,
          input_tokens: 0,
          output_tokens: 0,
          cost_usd: 0,
          budget_exhausted: 1,
        },
      ])
    }
  })
})
