import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './fixtures/http-server.js'

// An outside probe: saving a scheduled workflow took over a user's cron job of the same name
// (`workflow.<name>`: its command and schedule replaced, the workflow never run), and workflow_save
// answered `saved` for a schedule cron never registered (a name too long for a job, a schedule
// below cron.min_interval, an overwrite whose new schedule cron refused while the old kept firing).

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  await server?.dispose()
})

const flow = (name: string, schedule: string) =>
  `name: ${name}\nschedule: "${schedule}"\nsteps:\n  - { id: a, run: "echo ${name}" }\n`

async function json(response: Response): Promise<Json> {
  return (await response.json()) as Json
}

function save(name: string, yaml: string, overwrite = false): Promise<Response> {
  return server.request(`/api/workflows/saved/${name}`, {
    method: 'PUT',
    json: { yaml_content: yaml, ...(overwrite ? { overwrite: true } : {}) },
  })
}

async function job(name: string): Promise<Json> {
  const response = await server.request(`/api/cron/jobs/${name}`)
  expect(response.status).toBe(200)
  const body = await json(response)
  return body.job ?? body
}

async function saved(): Promise<Json> {
  return json(await server.request('/api/workflows/saved'))
}

describe('saving a scheduled workflow', () => {
  it("never takes over a user's cron job of the same name: the save is refused, saying why, and the job is left as it was", async () => {
    const created = await server.request('/api/cron/jobs', {
      json: {
        kind: 'shell',
        name: 'workflow.collide',
        schedule_type: 'cron',
        schedule: '0 5 * * *',
        command: 'echo mine',
      },
    })
    expect(created.status).toBe(200)
    const before = await job('workflow.collide')

    const response = await save('collide', flow('collide', '*/2 * * * *'))
    expect(response.status).toBe(422)
    const answer = await json(response)
    expect(answer.error).toMatchObject({ code: 'TOOL_FAILED', reason: 'SERVER_SCHEDULE_FAILED' })
    expect(answer.error.message).toContain('workflow.collide')
    expect(answer.error.message).toContain('not saved')

    const after = await job('workflow.collide')
    expect(after).toMatchObject({ id: before.id, schedule: '0 5 * * *', command: 'echo mine' })
    const listed = await saved()
    expect(listed.saved).not.toContain('collide')
    expect(listed.schedules.collide).toBeUndefined()
  })

  it("a file written by hand whose job name is a user's job: the sync leaves that job alone and schedules the others", async () => {
    const created = await server.request('/api/cron/jobs', {
      json: {
        kind: 'shell',
        name: 'workflow.handmade',
        schedule_type: 'cron',
        schedule: '0 6 * * *',
        command: 'echo theirs',
      },
    })
    expect(created.status).toBe(200)
    const directory = server.config.workflow.directory
    await writeFile(join(directory, 'handmade.flow.yaml'), flow('handmade', '*/2 * * * *'))
    await writeFile(join(directory, 'handwritten.flow.yaml'), flow('handwritten', '0 4 * * *'))
    await server.app.syncSchedules()

    expect(await job('workflow.handmade')).toMatchObject({ schedule: '0 6 * * *', command: 'echo theirs' })
    const listed = await saved()
    expect(listed.schedules.handmade).toBeUndefined()
    expect(listed.schedules.handwritten).toMatchObject({ schedule: '0 4 * * *', enabled: true })
  })

  it('a schedule cron refuses (below cron.min_interval) or a name too long for a cron job is refused, nothing written', async () => {
    const fast = await save('too-fast', flow('too-fast', '@every 500ms'))
    expect(fast.status).toBe(422)
    const fastError = (await json(fast)).error
    expect(fastError).toMatchObject({ code: 'TOOL_FAILED', reason: 'SERVER_SCHEDULE_FAILED' })
    expect(fastError.message).toMatch(/cron refuses it: .*below the minimum/)

    const long = 'l'.repeat(60)
    const tooLong = await save(long, flow(long, '0 3 * * *'))
    expect(tooLong.status).toBe(422)
    const longError = (await json(tooLong)).error
    expect(longError).toMatchObject({ code: 'TOOL_FAILED', reason: 'SERVER_SCHEDULE_FAILED' })
    expect(longError.message).toContain('longer than 64 characters')

    const listed = await saved()
    expect(listed.saved).not.toContain('too-fast')
    expect(listed.saved).not.toContain(long)
  })

  it('an overwrite whose new schedule cron refuses is refused: the old file and its schedule stay, and still run', async () => {
    expect((await save('flip', flow('flip', '0 3 * * *'))).status).toBe(200)
    const file = join(server.config.workflow.directory, 'flip.flow.yaml')
    const first = await readFile(file, 'utf8')

    const response = await save('flip', flow('flip', '@every 500ms'), true)
    expect(response.status).toBe(422)
    expect((await json(response)).error.reason).toBe('SERVER_SCHEDULE_FAILED')
    expect(await readFile(file, 'utf8')).toBe(first)
    expect((await saved()).schedules.flip).toMatchObject({ schedule: '0 3 * * *' })

    // The job still pins the file it has: a run of it is the workflow's, and completes.
    const end = server.app.cron.scheduler.events.next('run:end', ({ run }) => run.jobName === 'workflow.flip')
    const triggered = await server.request('/api/cron/jobs/workflow.flip/trigger', { method: 'POST' })
    expect(triggered.status).toBe(200)
    expect((await end).run.status).toBe('completed')

    // A valid overwrite still replaces the schedule.
    expect((await save('flip', flow('flip', '30 4 * * *'), true)).status).toBe(200)
    expect((await saved()).schedules.flip).toMatchObject({ schedule: '30 4 * * *' })
  })
})
