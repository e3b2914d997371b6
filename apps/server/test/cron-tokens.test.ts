/**
 * Issue 13: an `ai` cron run records the tokens the model reported (through the agent runner's
 * `usage`), they show in the run history, and `cron.max_ai_tokens_per_day` skips runs beyond it.
 * A real server over SQLite; only the model is fake, at the wire.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

let model: FakeOpenAI
let server: TestServer

beforeAll(async () => {
  model = await startFakeOpenAI()
  server = await startTestServer(
    (config) => ({
      ...config,
      agent: { ...config.agent, maxRetries: 0 },
      cron: { ...config.cron, maxAiTokensPerDay: 20 },
    }),
    { LANGO_MODEL_BASE_URL: model.baseUrl, LANGO_MODEL: 'test-model' },
  )
})
afterAll(async () => {
  await server?.dispose()
  await model?.close()
})

it('an ai cron run records the tokens the model reported, shown in history; the token budget then skips', async () => {
  const { cron } = server.app
  // The fake model reports 10 prompt / 5 completion tokens unless told otherwise.
  model.script(
    reply.text('All quiet.'),
    reply.text('Still quiet.', { usage: { promptTokens: 3, completionTokens: 2 } }),
  )
  const { job } = await cron.create({
    name: 'status-report',
    scheduleType: 'every',
    schedule: '1h',
    prompt: 'Report the status.',
  })
  const ended = async (runId: string | undefined) =>
    until(async () => {
      const runs = await cron.history({ job: job.id })
      return runs.find((run) => run.id === runId && run.status !== 'running')
    })

  const first = await cron.trigger(job.id)
  expect(first.status).toBe('started')
  expect(await ended(first.runId)).toMatchObject({
    status: 'completed',
    result: 'All quiet.',
    inputTokens: 10,
    outputTokens: 5,
  })
  // The operator API (cron_history's view) shows them too.
  const listed = (await (await server.request('/api/cron/runs?job=status-report')).json()) as Json
  expect(listed.entries[0]).toMatchObject({ id: first.runId, input_tokens: 10, output_tokens: 5 })

  const second = await cron.trigger(job.id)
  expect(await ended(second.runId)).toMatchObject({ status: 'completed', inputTokens: 3, outputTokens: 2 })

  // 15 + 5 = 20 tokens: cron.maxAiTokensPerDay (20) is reached, so the next run is recorded skipped.
  const third = await cron.trigger(job.id)
  expect(third).toMatchObject({
    status: 'skipped',
    reason: expect.stringMatching(
      /^budget: 20 AI tokens already used in the last 24 hours \(maxAiTokensPerDay 20\); the next can start after /,
    ),
  })
  const skipped = (await cron.history({ job: job.id })).find((run) => run.id === third.runId)
  expect(skipped).toMatchObject({ status: 'skipped', inputTokens: null, outputTokens: null })
  expect(model.chatBodies).toHaveLength(2)
})
