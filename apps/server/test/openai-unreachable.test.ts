import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { closedPort } from './fixtures/closed-port.js'
import { startTestServer, type TestServer } from './fixtures/http-server.js'

// An outside probe: with the model server down, `/v1` errors quoted the network's own words, which
// name its address (`connect ECONNREFUSED 127.0.0.1:7994`), though the README says they never do.

let port: number
const servers: TestServer[] = []
beforeAll(async () => {
  port = await closedPort()
  for (const base of [`http://127.0.0.1:${port}/v1`, `http://localhost:${port}/v1`])
    servers.push(
      await startTestServer((config) => ({ ...config, agent: { ...config.agent, maxRetries: 0 } }), {
        LANGO_MODEL_BASE_URL: base,
        LANGO_MODEL: 'test-model',
      }),
    )
})
afterAll(async () => {
  for (const server of servers) await server.dispose()
})

describe('/v1 with the model server unreachable', () => {
  it('says it cannot reach the model server without naming its address, by IP or by name', async () => {
    for (const server of servers) {
      for (const stream of [false, true]) {
        const answer = await server.request('/v1/chat/completions', {
          json: { model: 'lango', stream, messages: [{ role: 'user', content: 'Hi' }] },
        })
        expect(answer.status).toBe(502)
        const body = (await answer.json()) as { error: { message: string; code: string } }
        expect(body.error.code).toBe('agent_model_unreachable')
        expect(body.error.message).toMatch(/^cannot reach the model server/)
        expect(body.error.message).not.toContain(String(port))
        expect(body.error.message).not.toMatch(/127\.0\.0\.1|localhost|::1/)
      }
    }
  })
})
