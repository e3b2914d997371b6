/**
 * Issue 25 item 3, preview before commit: `POST /api/cron/preview`, `dry_run` on `POST
 * /api/cron/jobs` (ai and shell) and `lango cron preview` against a real server over SQLite. Fire
 * times depend on today, so the DST case uses an `at` time in 2030 (Europe/Berlin springs forward
 * on Sunday 31 March 2030, 02:00 → 03:00); the pure DST cases are in @lango/cron's preview.test.ts.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './fixtures/http-server.js'
import { CLI, runLango, startLangoServe } from './fixtures/lango-serve.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

describe('HTTP: POST /api/cron/preview and dry_run on POST /api/cron/jobs', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer()
  })
  afterAll(async () => {
    await server?.dispose()
  })
  const post = async (path: string, body: unknown) => {
    const response = await server.request(path, { method: 'POST', json: body })
    return { status: response.status, body: (await response.json()) as Json }
  }
  const jobCount = async () => ((await (await server.request('/api/cron/jobs')).json()) as Json).count

  it('previews a schedule: fires in the zone and UTC, in words, with the DST note', async () => {
    const { status, body } = await post('/api/cron/preview', {
      schedule_type: 'at',
      schedule: '2030-03-31T02:30',
      timezone: 'Europe/Berlin',
    })
    expect(status).toBe(200)
    expect(body.preview).toMatchObject({
      schedule_type: 'at',
      timezone: 'Europe/Berlin',
      description: 'once at 2030-03-31T03:00:00+02:00',
      fires: [{ local: '2030-03-31T03:00:00+02:00', utc: '2030-03-31T01:00:00.000Z' }],
      dst_notes: [
        {
          kind: 'skipped',
          message: expect.stringMatching(/^2030-03-31 02:30 does not exist in Europe\/Berlin/),
        },
      ],
      delivery: null,
    })
    const daily = await post('/api/cron/preview', { schedule: '0 9 * * *', timezone: 'UTC', count: 7 })
    expect(daily.body.preview.description).toBe('every day at 09:00')
    expect(daily.body.preview.fires).toHaveLength(7)
    for (const fire of daily.body.preview.fires) expect(fire.utc).toMatch(/T09:00:00\.000Z$/)
  })

  it('a deliver_to whose channel this server does not have is refused at once, naming it; nothing is stored', async () => {
    const before = await jobCount()
    const refused = await post('/api/cron/jobs', {
      name: 'http-typo-target',
      schedule_type: 'every',
      schedule: '1h',
      prompt: 'Say hello',
      deliver_to: ['log', 'slakc:C0123'],
    })
    expect(refused.status).toBe(400)
    expect(refused.body.error).toMatchObject({
      code: 'TOOL_INVALID_PARAMETERS',
      message:
        'invalid parameters: deliver_to: "slakc:C0123" cannot be delivered to: the slakc channel is not configured',
    })
    expect(await jobCount()).toBe(before)
  })

  it('dry_run stores nothing (ai and shell); a real create returns the same preview; clashes are found', async () => {
    const before = await jobCount()
    const ai = {
      name: 'http-preview-ai',
      schedule_type: 'cron',
      schedule: '0 9 * * *',
      timezone: 'UTC',
      prompt: 'Say hello',
      deliver_to: ['log'],
    }
    const dry = await post('/api/cron/jobs', { ...ai, dry_run: true })
    expect(dry.status).toBe(200)
    expect(dry.body).toMatchObject({ status: 'preview', dry_run: true })
    expect(dry.body.preview).toMatchObject({
      action: 'create',
      delivery: { targets: ['log'], route: 'log' },
      prompt_estimate: { method: 'chars/4' },
    })
    const shell = {
      kind: 'shell',
      name: 'http-preview-shell',
      schedule_type: 'every',
      schedule: '90m',
      command: 'true',
    }
    const dryShell = await post('/api/cron/jobs', { ...shell, dry_run: true, preview_count: 2 })
    expect(dryShell.body.preview).toMatchObject({ description: 'every 1 hour 30 minutes' })
    expect(dryShell.body.preview.fires).toHaveLength(2)
    expect(dryShell.body.preview.prompt_estimate).toBeUndefined()
    expect(await jobCount()).toBe(before)

    const real = await post('/api/cron/jobs', ai)
    expect(real.body.status).toBe('created')
    expect(real.body.preview.fires).toEqual(dry.body.preview.fires)
    expect(await jobCount()).toBe(before + 1)

    const clash = await post('/api/cron/preview', {
      schedule: '0 10 * * *',
      timezone: 'Europe/London',
      count: 50,
    })
    // 10:00 in London is 09:00 UTC in summer (BST): those fires clash with the 09:00 UTC job.
    const summer = clash.body.preview.fires.filter((fire: Json) => fire.utc.endsWith('T09:00:00.000Z'))
    expect(clash.body.preview.clash_count).toBe(summer.length)
    for (const entry of clash.body.preview.clashes) expect(entry.job_name).toBe('http-preview-ai')
    const same = await post('/api/cron/preview', { schedule: '0 9 * * *', timezone: 'UTC', count: 3 })
    expect(same.body.preview.clash_count).toBe(3)
  })

  it('bad input is an error naming the problem (422 from the service, 400 from the schema); nothing is stored', async () => {
    const before = await jobCount()
    const bad = await post('/api/cron/preview', { schedule: '0 25 * * *' })
    expect(bad.status).toBe(422)
    expect(bad.body.error).toMatchObject({
      code: 'TOOL_FAILED',
      message: expect.stringMatching(/Invalid cron expression/),
    })
    const count = await post('/api/cron/preview', { schedule: '0 9 * * *', count: 51 })
    expect(count.status).toBe(400)
    expect(count.body.error.code).toBe('TOOL_INVALID_PARAMETERS')
    const past = await post('/api/cron/jobs', {
      name: 'past',
      schedule_type: 'at',
      schedule: '2001-01-01T00:00:00Z',
      prompt: 'x',
      dry_run: true,
    })
    expect(past.status).toBe(422)
    expect(past.body.error.message).toMatch(/in the past/)
    expect(await jobCount()).toBe(before)
  })
})

describe('CLI: lango cron preview', () => {
  let home: string
  let url: string
  let stop: (() => Promise<void>) | undefined
  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error('build @lango/server before running this test')
    home = await mkdtemp(join(tmpdir(), 'lango-cli-preview-'))
    const started = await startLangoServe(home)
    url = started.url
    stop = async () => {
      if (started.child.exitCode !== null) return
      const exited = new Promise((resolve) => started.child.once('exit', resolve))
      started.child.kill('SIGTERM')
      await exited
    }
  })
  afterAll(async () => {
    await stop?.()
    if (home !== undefined) await rm(home, { recursive: true, force: true })
  })

  const lango = (args: readonly string[]) => runLango(args, { LANGO_HOME: home, LANGO_URL: url })

  it('prints the fires in words, zone and UTC, and the DST note; --json gives the preview', async () => {
    const human = await lango([
      'cron',
      'preview',
      '2030-03-31T02:30',
      '--type',
      'at',
      '--tz',
      'Europe/Berlin',
    ])
    expect(human.code).toBe(0)
    expect(human.stdout).toContain('once at 2030-03-31T03:00:00+02:00 (Europe/Berlin)')
    expect(human.stdout).toContain('2030-03-31T03:00:00+02:00  2030-03-31T01:00:00.000Z')
    expect(human.stdout).toMatch(/DST 2030-03-31 02:30 does not exist in Europe\/Berlin/)

    const json = await lango([
      'cron',
      'preview',
      '0 9 * * 1-5',
      '--tz',
      'America/New_York',
      '--count',
      '10',
      '--json',
    ])
    expect(json.code).toBe(0)
    const data = JSON.parse(json.stdout) as Json
    expect(data.preview.description).toBe('weekdays at 09:00')
    expect(data.preview.fires).toHaveLength(10)
    for (const fire of data.preview.fires) expect(fire.local).toMatch(/T09:00:00-0[45]:00$/)

    const bad = await lango(['cron', 'preview', '0 9 * * *', '--count', '51'])
    expect(bad.code).not.toBe(0)
    const listed = JSON.parse((await lango(['cron', 'list', '--json'])).stdout) as Json
    expect(listed.count).toBe(0)
  })
})

describe('HTTP: an ai job has a floor of its own (cron.min_agent_interval)', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer((config) => ({
      ...config,
      cron: { ...config.cron, minIntervalMs: 60_000, minAgentIntervalMs: 300_000 },
    }))
  })
  afterAll(async () => {
    await server?.dispose()
  })
  const post = async (path: string, body: unknown) => {
    const response = await server.request(path, { method: 'POST', json: body })
    return { status: response.status, body: (await response.json()) as Json }
  }

  it('refuses an ai job under it, naming it, and takes a shell job at the shell floor', async () => {
    const ai = await post('/api/cron/jobs', {
      name: 'ask-often',
      kind: 'ai',
      prompt: 'What changed?',
      schedule_type: 'cron',
      schedule: '*/2 * * * *',
    })
    expect(ai.status).toBe(422)
    expect(ai.body.error).toMatchObject({
      code: 'TOOL_FAILED',
      reason: 'CRON_INTERVAL_TOO_SHORT',
      message: expect.stringContaining('the minimum interval for an ai job is 5m'),
    })
    const dry = await post('/api/cron/jobs', {
      name: 'ask-often',
      kind: 'ai',
      prompt: 'What changed?',
      schedule_type: 'every',
      schedule: '2m',
      dry_run: true,
    })
    expect(dry.body.error?.reason).toBe('CRON_INTERVAL_TOO_SHORT')
    const shell = await post('/api/cron/jobs', {
      name: 'tick',
      kind: 'shell',
      command: 'true',
      schedule_type: 'cron',
      schedule: '* * * * *',
    })
    expect(shell.status).toBe(200)
    const slower = await post('/api/cron/jobs', {
      name: 'ask',
      kind: 'ai',
      prompt: 'What changed?',
      schedule_type: 'every',
      schedule: '5m',
    })
    expect(slower.status).toBe(200)
    const listed = ((await (await server.request('/api/cron/jobs')).json()) as Json).jobs as Json[]
    expect(listed.map((job) => job.name).sort()).toEqual(['ask', 'tick'])
  })
})
