import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { invokeTool } from '@lango/tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { ServerConfig } from '../src/config/types.js'
import { silentLogger } from '../src/logger.js'
import { type RunningServer, serve } from '../src/serve.js'
import { asks, type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'

import { testConfig, until } from './fixtures/http-server.js'

// Review of issue 25: the per-creator daily budget held for chats and cron jobs only. A background
// task or a workflow an agent started spent on no one's budget, so an agent past its creator's
// budget could spend on through them. The task and the run now carry their creator into the usage
// ledger and the budget check. The model is a fake OpenAI server on loopback reporting 1,000 prompt
// and 100 completion tokens per call; the creator's budget is 2,000 tokens a day.

const USAGE = { promptTokens: 1000, completionTokens: 100 }
const CREATOR = 'http:alice'

let model: FakeOpenAI
const cleanups: (() => Promise<void>)[] = []

beforeEach(async () => {
  model = await startFakeOpenAI()
})

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  await model.close()
})

async function startServer() {
  const made = await testConfig(
    (loaded): ServerConfig => ({
      ...loaded,
      model: { ...loaded.model, baseUrl: model.baseUrl, name: 'test-model' },
      agent: { ...loaded.agent, maxRetries: 0, creatorDailyBudget: { maxTokens: 2000 } },
      // One slot: a task queued behind another starts when the test lets it.
      background: { ...loaded.background, maxConcurrentTasks: 1 },
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
  return server
}

/** Calls a tool as the operator (no approval), failing the test on a tool error. */
async function call(server: RunningServer, name: string, params: unknown): Promise<Record<string, unknown>> {
  const tool = server.app.tools.find((candidate) => candidate.name === name)
  if (tool === undefined) throw new Error(`no tool ${name}`)
  const outcome = await invokeTool(tool, params, { sessionKey: 'cli' }, { policy: 'none' })
  if (!outcome.ok) throw new Error(`${name} failed: ${outcome.error.message}`)
  return outcome.result as Record<string, unknown>
}

/** Chats as alice over HTTP; her turn's usage is in the ledger once this answers. */
async function chat(server: RunningServer, message: string) {
  const response = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ session: 'alice', message }),
  })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

/** The chat-completions requests whose user message mentions `text`. */
function requestsMentioning(text: string): number {
  return model.chatBodies.filter((body) => asks(body, text)).length
}

describe("the per-creator daily budget covers the work a creator's agent starts", () => {
  it('a background task an agent submitted counts against its creator: past the budget, it makes no model call', async () => {
    const server = await startServer()
    // The one slot is held by the operator's task until the test cancels it.
    model.scriptWhen((body) => asks(body, 'HOLD THE SLOT'), reply.hang())
    const holder = (await call(server, 'bg_submit', { prompt: 'HOLD THE SLOT' })).task_id as string
    await until(async () => (requestsMentioning('HOLD THE SLOT') === 1 ? true : undefined))

    // Alice's turn submits a task (queued behind the holder), then answers: 2,200 tokens, past her 2,000.
    model.scriptWhen(
      (body) => asks(body, 'Start the report'),
      reply.toolCalls([{ id: 'call_1', name: 'bg_submit', arguments: { prompt: 'REPORT TASK' } }], {
        usage: USAGE,
      }),
      reply.text('Started.', { usage: USAGE }),
    )
    model.scriptWhen((body) => asks(body, 'REPORT TASK'), reply.text('Report written.', { usage: USAGE }))
    const turn = await chat(server, 'Start the report in the background.')
    expect(turn.status).toBe(200)
    const task = server.app.background.list().find((candidate) => candidate.prompt === 'REPORT TASK')
    expect(task?.status).toBe('pending')
    expect(task?.originSession).toBe(CREATOR)

    await call(server, 'bg_cancel', { task_id: holder })
    const ended = await until(async () => {
      const snapshot = server.app.background.snapshot(task?.id as string)
      return snapshot.status === 'pending' || snapshot.status === 'running' ? undefined : snapshot
    }, 60_000)
    expect(ended.status).toBe('failed')
    expect(ended.error).toMatch(
      /budget_exhausted: creator http:alice already used 2,200 tokens today, past its budget of 2,000 tokens a day \(agent\.budget\.max_\*_per_creator_per_day\); the turn was not started \(no model call\)/,
    )
    expect(requestsMentioning('REPORT TASK')).toBe(0)
  })

  it('a workflow an agent started counts against its creator: past the budget, its prompt step makes no model call', async () => {
    const server = await startServer()
    const gateDirectory = await mkdtemp(join(tmpdir(), 'lango-creator-gate-'))
    cleanups.push(() => rm(gateDirectory, { recursive: true, force: true }))
    const gate = join(gateDirectory, 'go')
    // Saved, so alice's agent may start it without approval; its prompt step waits for the gate file.
    await call(server, 'workflow_save', {
      name: 'nightly-report',
      yaml_content: `name: nightly-report
steps:
  - { id: wait, run: "while [ ! -e '${gate}' ]; do sleep 0.05; done" }
  - { id: write, prompt: "WORKFLOW STEP: write the report", depends_on: [wait] }
`,
    })
    model.scriptWhen(
      (body) => asks(body, 'Run the nightly report'),
      reply.toolCalls(
        [{ id: 'call_1', name: 'workflow_run', arguments: { file_path: 'nightly-report', wait_seconds: 0 } }],
        { usage: USAGE },
      ),
      reply.text('Running.', { usage: USAGE }),
    )
    model.scriptWhen((body) => asks(body, 'WORKFLOW STEP'), reply.text('Report written.', { usage: USAGE }))
    const turn = await chat(server, 'Run the nightly report workflow.')
    expect(turn.status).toBe(200)
    const [started] = await server.app.engine.listRuns({ limit: 1 })
    expect(started?.workflowName).toBe('nightly-report')

    await writeFile(gate, '')
    const run = await until(async () => {
      const snapshot = await server.app.engine.getRun(started?.runId as string)
      return snapshot?.status === 'running' ? undefined : snapshot
    }, 60_000)
    expect(run?.status).toBe('failed')
    expect(run?.steps.find((step) => step.stepId === 'write')?.error).toMatch(
      /budget_exhausted: creator http:alice already used 2,200 tokens today/,
    )
    expect(requestsMentioning('WORKFLOW STEP')).toBe(0)
  })
})
