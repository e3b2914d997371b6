// An outside probe's defects in scheduled workflows (saved workflows with a `schedule:`), through
// the HTTP API of a real server: a run's report delivered twice (by the cron job and by the
// workflow run), and a deleted schedule job made again by the next sync.

import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { ServerConfig } from '../src/config/types.js'
import { type FakeService, startWebhookReceiver } from './fixtures/fake-chat-apis.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

const REPORT = `name: report
schedule: "0 3 * * *"
deliver_to: [webhook]
steps:
  - id: gather
    run: echo gathered
  - id: summary
    depends_on: [gather]
    run: echo summary of {{gather.result}}
`

let receiver: FakeService
let server: TestServer

beforeEach(async () => {
  receiver = await startWebhookReceiver()
  server = await startTestServer(
    (loaded): ServerConfig => ({
      ...loaded,
      channels: { ...loaded.channels, webhook: { ...loaded.channels.webhook, url: `${receiver.url}/hook` } },
    }),
  )
})
afterEach(async () => {
  await server.dispose()
  await receiver.close()
})

async function api(
  path: string,
  init: RequestInit & { json?: unknown } = {},
): Promise<{ status: number; body: Json }> {
  const response = await server.request(path, init)
  return { status: response.status, body: (await response.json()) as Json }
}

async function save(yaml: string, overwrite = false): Promise<void> {
  const saved = await api('/api/workflows/saved/report', {
    method: 'PUT',
    json: { yaml_content: yaml, overwrite },
  })
  expect(saved.status, JSON.stringify(saved.body)).toBe(200)
}

describe('scheduled workflows', () => {
  it("delivers one occurrence's report once to each target, with the workflow's results", async () => {
    await save(REPORT)
    const triggered = await api('/api/cron/jobs/workflow.report/trigger', { method: 'POST' })
    expect(triggered.status, JSON.stringify(triggered.body)).toBe(200)
    const runId = triggered.body.run_id as string
    const run = await until(async () => {
      const { body } = await api(`/api/cron/runs/${runId}`)
      return body.status !== 'running' && body.delivery_status !== 'pending' ? body : undefined
    })
    expect(run).toMatchObject({ status: 'completed', delivery_status: 'delivered' })
    // Once the cron run and its delivery ended, the workflow run (waited for by it) has ended too.
    const runs = (await api('/api/workflows/runs')).body
    expect(JSON.stringify(runs)).toContain('completed')
    expect(receiver.requests).toHaveLength(1)
    const text = receiver.requests[0]?.body.text as string
    expect(text).toContain('workflow report run')
    expect(text).toContain('- summary: completed')
    expect(text).toContain('summary of gathered')
  })

  it("refuses to remove a saved workflow's schedule job while the workflow declares it, saying how to unschedule it", async () => {
    await save(REPORT)
    const removed = await api('/api/cron/jobs/workflow.report', { method: 'DELETE' })
    expect(removed.status, JSON.stringify(removed.body)).toBe(422)
    expect(removed.body.error).toMatchObject({ code: 'TOOL_FAILED', reason: 'SERVER_SCHEDULED_WORKFLOW_JOB' })
    expect(removed.body.error.message).toContain('Remove the schedule from the workflow')
    // The job is still there, and stays after a sync.
    await server.app.syncSchedules()
    expect((await api('/api/cron/jobs/workflow.report')).status).toBe(200)

    // The schedule removed from the workflow: the job goes, and stays gone.
    await save(REPORT.replace('schedule: "0 3 * * *"\n', ''), true)
    expect((await api('/api/cron/jobs/workflow.report')).status).toBe(404)
    await server.app.syncSchedules()
    expect((await api('/api/cron/jobs/workflow.report')).status).toBe(404)
  })
})
