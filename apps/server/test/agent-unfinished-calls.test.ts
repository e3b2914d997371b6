import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CronService } from '@lango/cron'
import { type CronDatabase, migrateCron, SqliteCronStore } from '@lango/cron/sqlite'
import { type AnyTool, createCronTools } from '@lango/tools'
import { waitFor } from '@lango/vitest-config/wait-for'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  AgentError,
  type AgentRunnerOptions,
  createAgentRunner,
  type SpendLimit,
  type UsageRecord,
} from '../src/agent/index.js'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'

// A probe found that a model call cut off before its step ended counted 0 tokens: a turn stopped
// by its timeout, cancelled, or whose stream broke mid-way, so no budget held a model that never
// finished. It also found the observer (condensing a session) went on past a spent daily budget.
// The model is a fake OpenAI server on loopback.

let dir: string
let db: Kysely<CronDatabase>
let tools: AnyTool[]
let model: FakeOpenAI

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lango-unfinished-'))
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
  await model.close()
  await db.destroy()
  await rm(dir, { recursive: true, force: true })
})

function runner(usage: UsageRecord[], options: Partial<AgentRunnerOptions> = {}) {
  return createAgentRunner({
    baseUrl: model.baseUrl,
    model: 'test-model',
    tools,
    maxRetries: 0,
    onUsage: (record) => usage.push(record),
    ...options,
  })
}

/** Characters of the request the fake model received: what the estimate is made from. */
function requestChars(index: number): number {
  return JSON.stringify(model.chatBodies[index]).length
}

describe('a model call cut off before its step ended still counts', () => {
  it('a turn its timeout stops while the model has not answered counts the request it sent (estimated)', async () => {
    model.script(reply.hang())
    const usage: UsageRecord[] = []
    // Long enough for the request to reach the fake on a loaded machine (its body is compared below).
    const failure = await runner(usage, { timeoutMs: 3000 })
      .run({ prompt: 'Summarise the logs of last night in detail.', sessionKey: 'cron:logs:r1' })
      .catch((error: unknown) => error)
    expect((failure as AgentError).code).toBe('AGENT_TIMEOUT')
    expect(usage).toHaveLength(1)
    const [record] = usage as [UsageRecord]
    expect(record.ok).toBe(false)
    // About four characters a token, from the request as sent (tools and system prompt included).
    expect(record.usage.inputTokens).toBeGreaterThan(requestChars(0) / 8)
    expect(record.usage.inputTokens).toBeLessThan(requestChars(0) / 2)
    expect(record.usage.outputTokens).toBe(0)
    // What the packages read (AgentRunFailure.usage): a cron run records it, its daily budget counts it.
    expect((failure as AgentError).usage).toEqual({
      inputTokens: record.usage.inputTokens,
      outputTokens: 0,
    })
  })

  it('a streamed turn cancelled mid-answer counts the request and what was streamed (estimated)', async () => {
    const text = `${'All quiet on the western front. '.repeat(40)}The end.`
    model.script(reply.text(text, { chunks: [text.slice(0, 800), text.slice(800)], stallAfterChunks: 1 }))
    const usage: UsageRecord[] = []
    const controller = new AbortController()
    const turn = runner(usage).chat('openai:alice', 'tell me a long story', {
      signal: controller.signal,
      onEvent: (event) => {
        if (event.type === 'text-delta') controller.abort(new Error('the client went away'))
      },
    })
    await expect(turn).rejects.toThrow('the client went away')
    expect(usage).toHaveLength(1)
    const [record] = usage as [UsageRecord]
    expect(record.usage.inputTokens).toBeGreaterThan(requestChars(0) / 8)
    // 800 characters streamed: about 200 tokens.
    expect(record.usage.outputTokens).toBe(200)
  })

  it('a turn cancelled while a tool call waits for approval counts what the model server reported, once', async () => {
    model.script(
      reply.toolCalls([{ id: 'call_1', name: 'cron_list', arguments: {} }], {
        usage: { promptTokens: 1234, completionTokens: 56 },
      }),
    )
    const usage: UsageRecord[] = []
    const controller = new AbortController()
    const reason = new Error('the person left')
    const turn = runner(usage, { approvalPolicy: 'all' }).chat('openai:bob', 'list the jobs', {
      signal: controller.signal,
      approvalGate: {
        request(_request, { signal }) {
          controller.abort(reason)
          return new Promise((_resolve, reject) => {
            if (signal.aborted) reject(signal.reason)
            signal.addEventListener('abort', () => reject(signal.reason), { once: true })
          })
        },
      },
    })
    await expect(turn).rejects.toBe(reason)
    expect(usage.map((record) => record.usage)).toEqual([
      { inputTokens: 1234, outputTokens: 56, totalTokens: 1290 },
    ])
  })

  it('a cron run its timeout cuts off records the tokens of the call under way (AgentRunOptions.onUsage), as the ledger counts them', async () => {
    model.script(reply.hang())
    const usage: UsageRecord[] = []
    // The agent's own timeout is longer than the job's: cron's timeout aborts the turn, and cron
    // does not wait for it to settle.
    const agent = runner(usage, { timeoutMs: 60_000 })
    const cron = new CronService({
      store: new SqliteCronStore(db),
      defaultTimezone: 'UTC',
      agentRunner: { run: (request, options) => agent.run(request, options) },
    })
    await cron.start()
    try {
      await cron.add({
        name: 'logs',
        scheduleType: 'every',
        schedule: '1h',
        prompt: 'Summarise the logs.',
        timeout: '5s',
      })
      const ended = new Promise<{ status: string; inputTokens: number | null; outputTokens: number | null }>(
        (resolve) => cron.on('run:end', ({ run }) => resolve(run)),
      )
      await cron.trigger('logs')
      const run = await ended
      expect(run.status).toBe('timed_out')
      await waitFor(() => usage.length === 1)
      const [record] = usage as [UsageRecord]
      // The request was sent and the model never answered: estimated, as the ledger counts it.
      expect(record.usage.inputTokens).toBeGreaterThan(0)
      expect([run.inputTokens, run.outputTokens]).toEqual([record.usage.inputTokens, 0])
    } finally {
      await cron.stop()
    }
  })

  it('a call the model server refused (an HTTP error) counts nothing', async () => {
    model.script(reply.error(500, 'overloaded'))
    const usage: UsageRecord[] = []
    const failure = await runner(usage)
      .run({ prompt: 'x', sessionKey: 'cron:a:r1' })
      .catch((error: unknown) => error)
    expect(AgentError.is(failure)).toBe(true)
    expect(usage.map((record) => record.usage)).toEqual([{ inputTokens: 0, outputTokens: 0, totalTokens: 0 }])
  })
})

describe('the observer and the daily budgets', () => {
  const spent: SpendLimit = {
    scope: 'the server',
    setting: 'agent.budget.max_*_per_day',
    spentTokens: 10_000,
    spentCostUsd: 0,
    maxTokens: 10_000,
  }
  const messages = [
    { role: 'user' as const, content: 'remember that backups go to /srv/backup' },
    { role: 'assistant' as const, content: 'Noted.' },
  ]

  it('does not condense a session once a daily budget it counts against is spent', async () => {
    model.script(reply.text('- backups go to /srv/backup'))
    const usage: UsageRecord[] = []
    const contexts: unknown[] = []
    const failure = await runner(usage, {
      spendLimits: async (turn) => {
        contexts.push(turn)
        return [spent]
      },
    })
      .observe(messages, { sessionKey: 'telegram:42' })
      .catch((error: unknown) => error)
    expect((failure as AgentError).code).toBe('AGENT_BUDGET_EXHAUSTED')
    expect((failure as AgentError).message).toContain('condensing the session (the observer) was not started')
    expect(model.chatBodies).toHaveLength(0)
    expect(contexts).toEqual([{ purpose: 'observe', model: 'test-model', sessionKey: 'telegram:42' }])
    expect(usage).toEqual([expect.objectContaining({ purpose: 'observe', ok: false, budgetExhausted: true })])
  })

  it('asks for no more output than the budget has left', async () => {
    model.script(reply.text('- backups go to /srv/backup'))
    const notes = await runner([], {
      spendLimits: async () => [{ ...spent, spentTokens: 9_700 }],
    }).observe(messages, { sessionKey: 'telegram:42' })
    expect(notes).toBe('- backups go to /srv/backup')
    expect((model.chatBodies[0] as { max_tokens?: number }).max_tokens).toBe(300)
  })
})
