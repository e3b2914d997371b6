import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

/**
 * A secret token the shell could never expand (inside single quotes) is refused when a cron job
 * or a workflow is written, with the words a run would have failed with at every fire.
 */
describe('secret references in single quotes are refused when written, not at every run', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer()
  })
  afterAll(async () => {
    await server?.dispose()
  })

  async function send(path: string, method: string, body: unknown): Promise<{ status: number; body: Json }> {
    const response = await server.request(path, { method, json: body })
    return { status: response.status, body: (await response.json()) as Json }
  }

  it('a cron job: create and update', async () => {
    const job = { kind: 'shell', schedule_type: 'cron', schedule: '0 3 * * *' }
    const quoted = await send('/api/cron/jobs', 'POST', {
      ...job,
      name: 'quoted',
      command: "curl -H 'Authorization: Bearer {{secret:api-token}}' https://example.com",
    })
    expect(quoted.status).toBe(422)
    expect(quoted.body.error.message).toContain(
      'secret reference {{secret:api-token}} is inside single-quoted text',
    )
    expect(quoted.body.error.message).toContain('move it outside single quotes')
    expect((await server.request('/api/cron/jobs/quoted')).status).toBe(404)

    const fine = await send('/api/cron/jobs', 'POST', {
      ...job,
      name: 'double',
      command: 'curl -H "Authorization: Bearer {{secret:api-token}}" https://example.com',
    })
    expect(fine.status).toBe(200)
    const reparsed = await send('/api/cron/jobs/double', 'PATCH', {
      command: 'sh -c "echo {{secret:api-token}}"',
    })
    expect(reparsed.status).toBe(422)
    expect(reparsed.body.error.message).toContain('parses again as code')
  })

  it('a workflow: validated, run and saved', async () => {
    const yaml = `name: quoted
steps:
  - { id: first, run: "echo first" }
  - id: call
    run: "curl -H 'Authorization: Bearer {{secret:api-token}}' https://example.com"
    depends_on: [first]
`
    const run = await send('/api/workflows/runs', 'POST', { yaml_content: yaml })
    expect(run.status).toBe(422)
    expect(JSON.stringify(run.body.error)).toContain('move it outside single quotes')
    const saved = await send('/api/workflows/saved/quoted', 'PUT', { yaml_content: yaml })
    expect(saved.status).toBe(422)
    expect(JSON.stringify(saved.body.error)).toContain(
      'steps[1].run: secret reference {{secret:api-token}} is inside single-quoted text',
    )
    expect((await server.request('/api/workflows/runs')).status).toBe(200)
    const runs = (await (await server.request('/api/workflows/runs')).json()) as Json
    expect(JSON.stringify(runs)).not.toContain('"quoted"')
  })
})
