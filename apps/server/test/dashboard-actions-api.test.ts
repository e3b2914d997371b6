import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './fixtures/http-server.js'

// The routes the dashboard's actions use (issue 26): PATCH /api/cron/jobs/:id, and the approval
// history (GET /api/approvals?status=decided, paged).
let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  await server?.dispose()
})

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

async function call(path: string, init?: { method?: string; json?: unknown }) {
  const response = await server.request(path, init)
  return { status: response.status, body: (await response.json()) as Json }
}

describe('PATCH /api/cron/jobs/:id', () => {
  it('changes the fields given and keeps the others; a dry run stores nothing', async () => {
    const created = await call('/api/cron/jobs', {
      json: {
        kind: 'shell',
        name: 'patch-me',
        schedule_type: 'cron',
        schedule: '0 3 * * *',
        command: 'echo one',
        timezone: 'UTC',
      },
    })
    expect(created.status).toBe(200)
    const id = created.body.job.id as string

    const dry = await call(`/api/cron/jobs/${id}`, {
      method: 'PATCH',
      json: { schedule: '30 4 * * *', dry_run: true, preview_count: 2 },
    })
    expect(dry.status).toBe(200)
    expect(dry.body).toMatchObject({ status: 'preview', dry_run: true, preview: { action: 'update' } })
    expect(dry.body.preview.fires).toHaveLength(2)
    expect(dry.body.preview.fires[0].utc).toMatch(/T04:30:00/)
    expect((await call(`/api/cron/jobs/${id}`)).body.job.schedule).toBe('0 3 * * *')

    const updated = await call(`/api/cron/jobs/${id}`, {
      method: 'PATCH',
      json: { name: 'patched', schedule: '30 4 * * *', timezone: 'Europe/Berlin', command: 'echo two' },
    })
    expect(updated.status).toBe(200)
    expect(updated.body).toMatchObject({
      status: 'updated',
      job: { id, name: 'patched', schedule: '30 4 * * *', timezone: 'Europe/Berlin', command: 'echo two' },
    })
    expect(updated.body.next_runs[0].timezone).toBe('Europe/Berlin')
    const read = (await call('/api/cron/jobs/patched')).body.job
    expect(read).toMatchObject({ id, kind: 'shell', schedule_type: 'cron', command: 'echo two' })
  })

  it('refuses a bad schedule, a taken name, a prompt for a shell job and an unknown job', async () => {
    const make = async (name: string) =>
      (
        await call('/api/cron/jobs', {
          json: { kind: 'shell', name, schedule_type: 'every', schedule: '1h', command: 'echo x' },
        })
      ).body.job.id as string
    const id = await make('patch-a')
    await make('patch-b')

    const badSchedule = await call(`/api/cron/jobs/${id}`, {
      method: 'PATCH',
      json: { schedule_type: 'cron', schedule: 'not a schedule' },
    })
    expect(badSchedule.status).toBe(422)
    expect(badSchedule.body.error).toMatchObject({
      code: 'TOOL_FAILED',
      reason: expect.stringMatching(/^CRON_/),
    })

    const taken = await call(`/api/cron/jobs/${id}`, { method: 'PATCH', json: { name: 'patch-b' } })
    expect(taken.status).toBe(422)
    expect(taken.body.error.reason).toBe('CRON_DUPLICATE_NAME')

    const prompt = await call(`/api/cron/jobs/${id}`, { method: 'PATCH', json: { prompt: 'hello' } })
    expect(prompt.status).toBe(422)
    expect(prompt.body.error).toMatchObject({ reason: 'CRON_INVALID_INPUT', data: { field: 'prompt' } })

    const badField = await call(`/api/cron/jobs/${id}`, { method: 'PATCH', json: { kind: 'ai' } })
    expect(badField.status).toBe(400)
    expect(badField.body.error.code).toBe('TOOL_INVALID_PARAMETERS')

    const unknown = await call('/api/cron/jobs/no-such-job', { method: 'PATCH', json: { schedule: '2h' } })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error.reason).toBe('CRON_JOB_NOT_FOUND')
    expect((await call(`/api/cron/jobs/${id}`)).body.job).toMatchObject({ name: 'patch-a', schedule: '1h' })
  })
})

describe('GET /api/approvals?status=decided', () => {
  it('lists the decided approvals newest first, with who decided, page by page', async () => {
    const ids: string[] = []
    for (const [index, decision] of ['approve', 'deny', 'deny'].entries()) {
      const asked = await call('/api/tools/exec', { json: { command: `echo history-${index}` } })
      expect(asked.status).toBe(202)
      ids.push(asked.body.approval_id)
      await call(`/api/approvals/${asked.body.approval_id}`, { json: { decision } })
    }
    const waiting = await call('/api/tools/exec', { json: { command: 'echo still-waiting' } })

    const first = await call('/api/approvals?status=decided&limit=2')
    expect(first.status).toBe(200)
    expect(first.body.count).toBe(2)
    expect(first.body.next_cursor).toEqual(expect.any(String))
    const second = await call(
      `/api/approvals?status=decided&limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`,
    )
    expect(second.body.count).toBe(1)
    expect(second.body.next_cursor).toBeNull()
    const listed: Json[] = [...first.body.approvals, ...second.body.approvals]
    // Newest first (by creation, then id): every page after the one before it, none twice.
    expect(new Set(listed.map((approval) => approval.id))).toEqual(new Set(ids))
    for (const [index, approval] of listed.entries()) {
      const before = listed[index - 1]
      if (before !== undefined)
        expect(
          before.created_at > approval.created_at ||
            (before.created_at === approval.created_at && before.id > approval.id),
        ).toBe(true)
    }
    const byId = new Map(listed.map((approval) => [approval.id, approval]))
    expect(byId.get(ids[0] as string)).toMatchObject({
      status: 'approved',
      summary: 'Execute: ⟦echo history-0⟧',
      decided_by: server.app.approvals.origin,
      answered_at: expect.any(Number),
    })
    expect(byId.get(ids[2] as string)).toMatchObject({
      status: 'denied',
      summary: 'Execute: ⟦echo history-2⟧',
    })

    const everything = await call('/api/approvals')
    expect(everything.body.approvals[0].id).toBe(waiting.body.approval_id)
    expect(everything.body.next_cursor).toBeNull()

    for (const query of [
      'status=decided&limit=0',
      'status=decided&limit=x',
      'status=decided&cursor=nope',
      'cursor=1:a',
    ]) {
      const refused = await call(`/api/approvals?${query}`)
      expect(refused.status, query).toBe(400)
      expect(refused.body.error.code).toBe('INVALID_REQUEST')
    }
    await call(`/api/approvals/${waiting.body.approval_id}`, { json: { decision: 'deny' } })
  })

  it('a full page of 200 (the most a page holds) still has the cursor of the next', async () => {
    // Decided ones from the test before, plus enough to fill two pages of 200.
    for (let index = 0; index < 201; index += 1) {
      const asked = await call('/api/tools/exec', { json: { command: `echo page-${index}` } })
      expect(asked.status).toBe(202)
      await call(`/api/approvals/${asked.body.approval_id}`, { json: { decision: 'deny' } })
    }
    const first = await call('/api/approvals?status=decided')
    expect(first.body.count).toBe(200)
    expect(first.body.next_cursor).toEqual(expect.any(String))
    const second = await call(
      `/api/approvals?status=decided&limit=200&cursor=${encodeURIComponent(first.body.next_cursor)}`,
    )
    expect(second.body.count).toBeGreaterThan(0)
    const seen = new Set([...first.body.approvals, ...second.body.approvals].map((one: Json) => one.id))
    expect(seen.size).toBe(first.body.count + second.body.count)
  })
})
