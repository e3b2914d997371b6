import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CronService } from '@lango/cron'
import { type CronDatabase, migrateCron, SqliteCronStore } from '@lango/cron/sqlite'
import { FakeClock, RecordingAgentRunner, RecordingChannelSender } from '@lango/cron/testing'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createCronTools, createManageCronJobsTool } from './cron-tools.js'
import { invokeTool } from './invoke.js'
import type { AnyTool } from './tool.js'

let dir: string
let db: Kysely<CronDatabase>
let store: SqliteCronStore
let cron: CronService
let tools: Map<string, AnyTool>

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lango-tools-cron-preview-'))
  db = new Kysely<CronDatabase>({
    dialect: new SqliteDialect({ database: new Database(join(dir, 'lango.db')) }),
  })
  await migrateCron(db)
  store = new SqliteCronStore(db)
  cron = new CronService({
    store,
    agentRunner: new RecordingAgentRunner(),
    channelSender: new RecordingChannelSender(),
    clock: new FakeClock(Date.parse('2026-03-27T12:00:00Z')),
    defaultTimezone: 'Europe/Berlin',
  })
  await cron.start()
  tools = new Map(
    [...createCronTools({ service: cron }), createManageCronJobsTool({ service: cron })].map((tool) => [
      tool.name,
      tool,
    ]),
  )
})
afterEach(async () => {
  await cron.stop()
  await db.destroy()
  await rm(dir, { recursive: true, force: true })
})

const call = (name: string, params: unknown, sessionKey = 'telegram:555:9') =>
  invokeTool(tools.get(name) as AnyTool, params, { sessionKey }, { policy: 'none' })

interface PreviewResult {
  fires: Array<{ local: string; utc: string }>
  description: string
  dst_notes: Array<{ kind: string; message: string; fires_at: { utc: string } | null }>
  clashes: Array<{ job_name: string; at: { utc: string } }>
  clash_count: number
  delivery: { targets: string[]; route: string } | null
  prompt_estimate?: { tokens: number; method: string; note: string }
}

function ok<T>(outcome: unknown): T {
  expect(outcome).toMatchObject({ ok: true })
  return (outcome as { result: T }).result
}

const nightly = {
  name: 'nightly',
  schedule_type: 'cron',
  schedule: '30 2 * * *',
  prompt: 'Summarise the logs of the day',
}

describe('cron_add dry_run (issue 25)', () => {
  it('previews fires across the DST change, the delivery route and the tokens, and stores nothing', async () => {
    const result = ok<{ status: string; dry_run: boolean; preview: PreviewResult; message: string }>(
      await call('cron_add', { ...nightly, dry_run: true, preview_count: 3 }),
    )
    expect(result.status).toBe('preview')
    expect(result.dry_run).toBe(true)
    expect(result.preview.description).toBe('every day at 02:30')
    expect(result.preview.fires).toEqual([
      { local: '2026-03-28T02:30:00+01:00', utc: '2026-03-28T01:30:00.000Z' },
      { local: '2026-03-29T03:00:00+02:00', utc: '2026-03-29T01:00:00.000Z' },
      { local: '2026-03-30T02:30:00+02:00', utc: '2026-03-30T00:30:00.000Z' },
    ])
    expect(result.preview.dst_notes).toEqual([
      expect.objectContaining({
        kind: 'skipped',
        message: expect.stringMatching(/^2026-03-29 02:30 does not exist in Europe\/Berlin/),
        fires_at: { local: '2026-03-29T03:00:00+02:00', utc: '2026-03-29T01:00:00.000Z' },
      }),
    ])
    // deliver_to after defaults: the chat the call came from.
    expect(result.preview.delivery).toMatchObject({ targets: ['telegram:555'], route: 'telegram:555' })
    expect(result.preview.prompt_estimate).toMatchObject({ method: 'chars/4' })
    expect(result.preview.prompt_estimate?.tokens).toBeGreaterThan(nightly.prompt.length / 4)
    expect(result.message).toMatch(/^Preview only, nothing stored/)
    expect(result.message).toContain('does not exist in Europe/Berlin')
    expect(await store.countJobs()).toBe(0)
    expect(await store.listRuns({ limit: 10 })).toEqual([])
  })

  it('from a session that implies no target, the route is history only', async () => {
    const result = ok<{ preview: PreviewResult }>(
      await call('cron_add', { ...nightly, dry_run: true }, 'http:me'),
    )
    expect(result.preview.delivery).toMatchObject({ targets: [], route: 'history only' })
    expect(result.preview.fires).toHaveLength(5)
  })

  it('a real cron_add returns the same preview; a second job at the same minute shows the clash', async () => {
    const dry = ok<{ preview: PreviewResult }>(await call('cron_add', { ...nightly, dry_run: true }))
    const real = ok<{ preview: PreviewResult }>(await call('cron_add', nightly))
    expect(real.preview).toEqual(dry.preview)
    const other = ok<{ preview: PreviewResult; message: string }>(
      await call('cron_add', {
        name: 'backup',
        schedule_type: 'cron',
        schedule: '30 1 * * *',
        timezone: 'UTC',
        prompt: 'Back up',
        dry_run: true,
        preview_count: 3,
      }),
    )
    // 01:30 UTC is 02:30 in Berlin before the change (28 March) only.
    expect(other.preview.clash_count).toBe(1)
    expect(other.preview.clashes).toMatchObject([
      { job_name: 'nightly', at: { utc: '2026-03-28T01:30:00.000Z' } },
    ])
    expect(other.message).toContain('1 clash with nightly')
    expect(await store.countJobs()).toBe(1)
  })

  it('a dry run is safe: it needs no approval; bad input is the same error as a real call', async () => {
    const tool = tools.get('cron_add') as AnyTool
    expect(tool.safetyFor?.({ ...nightly, dry_run: true })).toBe('safe')
    expect(tool.safetyFor?.(nightly)).toBe('moderate')
    const bad = await call('cron_add', { ...nightly, schedule: '0 25 * * *', dry_run: true })
    const real = await call('cron_add', { ...nightly, schedule: '0 25 * * *' })
    expect(bad).toMatchObject({
      ok: false,
      error: { message: expect.stringMatching(/Invalid cron expression/) },
    })
    expect(bad).toEqual(real)
    const count = await call('cron_add', { ...nightly, dry_run: true, preview_count: 51 })
    expect(count).toMatchObject({ ok: false, error: { code: 'TOOL_INVALID_PARAMETERS' } })
  })
})

describe('manage_cron_jobs dry_run (issue 25)', () => {
  const create = {
    action: 'create',
    name: 'disk',
    type: 'shell',
    scheduleType: 'cron',
    scheduleValue: '0 3 * * *',
    config: { command: 'df -h' },
  }

  it('create and update previews store nothing; the real ones return the same preview', async () => {
    const dry = ok<{ dryRun: boolean; preview: PreviewResult }>(
      await call('manage_cron_jobs', { ...create, dry_run: true, preview_count: 2 }),
    )
    expect(dry.dryRun).toBe(true)
    expect(dry.preview.fires.map((fire) => fire.local)).toEqual([
      '2026-03-28T03:00:00+01:00',
      '2026-03-29T03:00:00+02:00',
    ])
    expect(dry.preview.prompt_estimate).toBeUndefined()
    expect(await store.countJobs()).toBe(0)

    const created = ok<{ id: string; preview: PreviewResult }>(await call('manage_cron_jobs', create))
    expect(created.preview.description).toBe('every day at 03:00')
    const again = ok<{ error?: string }>(await call('manage_cron_jobs', { ...create, dry_run: true }))
    expect(again.error).toMatch(/already exists/)

    const dryUpdate = ok<{ preview: PreviewResult }>(
      await call('manage_cron_jobs', {
        action: 'update',
        id: 'disk',
        scheduleValue: '0 4 * * 1-5',
        dry_run: true,
      }),
    )
    expect(dryUpdate.preview).toMatchObject({ action: 'update', description: 'weekdays at 04:00' })
    expect((await cron.get('disk')).schedule).toBe('0 3 * * *')
    const updated = ok<{ preview: PreviewResult }>(
      await call('manage_cron_jobs', { action: 'update', id: 'disk', scheduleValue: '0 4 * * 1-5' }),
    )
    expect(updated.preview).toEqual(dryUpdate.preview)
    expect((await cron.get('disk')).schedule).toBe('0 4 * * 1-5')
  })

  it('a dry run of create or update is safe; a real shell create stays dangerous', () => {
    const tool = tools.get('manage_cron_jobs') as AnyTool
    expect(tool.safetyFor?.({ ...create, dry_run: true })).toBe('safe')
    expect(tool.safetyFor?.(create)).toBe('dangerous')
    expect(tool.safetyFor?.({ action: 'delete', id: 'x', dry_run: true })).toBe('dangerous')
  })
})
