import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { startTestServer, type TestServer } from './fixtures/http-server.js'

// A model server that never answers: the turn ends at `agent.timeout`, and the answer names the
// model server without its address (outside probe: it read "model server the model server").

let model: FakeOpenAI
let server: TestServer

beforeAll(async () => {
  model = await startFakeOpenAI()
  server = await startTestServer(
    (config) => ({ ...config, agent: { ...config.agent, maxRetries: 0, timeoutMs: 1500 } }),
    { LANGO_MODEL_BASE_URL: model.baseUrl, LANGO_MODEL: 'test-model' },
  )
})
afterAll(async () => {
  await server?.dispose()
  await model?.close()
})

describe('/v1 when the model server never answers', () => {
  it('answers 504 saying the turn timed out, naming the model server once and never its address', async () => {
    model.script(reply.hang())
    const response = await server.request('/v1/chat/completions', {
      method: 'POST',
      json: { model: 'lango', user: 'timeout', messages: [{ role: 'user', content: 'Hi' }] },
    })
    expect(response.status).toBe(504)
    const body = (await response.json()) as { error: { message: string } }
    expect(body.error.message).toBe('the agent turn did not finish within 1.5 s (the model server)')
    expect(JSON.stringify(body)).not.toContain(new URL(model.baseUrl).host)
  })
})
