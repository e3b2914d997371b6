import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CronService } from '@lango/cron'
import { type CronDatabase, migrateCron, SqliteCronStore } from '@lango/cron/sqlite'
import { RecordingAgentRunner, RecordingChannelSender } from '@lango/cron/testing'
import { waitFor } from '@lango/vitest-config/wait-for'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { guardedShellRunner } from './__fixtures__/shell-runner.js'
import { createCronTools, createManageCronJobsTool } from './cron-tools.js'
import { invokeTool } from './invoke.js'
import { type AnyTool, callSafety } from './tool.js'

let dir: string
let db: Kysely<CronDatabase>
let cron: CronService
let tools: Map<string, AnyTool>
let agent: RecordingAgentRunner
let sender: RecordingChannelSender

/** The server's ShellRunner, in miniature: the guard first, then @lango/exec. */
const shellRunner = guardedShellRunner({ envSource: 'trusted' })

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lango-tools-cron-'))
  db = new Kysely<CronDatabase>({
    dialect: new SqliteDialect({ database: new Database(join(dir, 'lango.db')) }),
  })
  await migrateCron(db)
  agent = new RecordingAgentRunner()
  sender = new RecordingChannelSender()
  cron = new CronService({
    store: new SqliteCronStore(db),
    agentRunner: agent,
    shellRunner,
    channelSender: sender,
    defaultTimezone: 'Europe/Berlin',
  })
  await cron.start()
  const service = cron
  tools = new Map(
    [
      ...createCronTools({ service, defaultDeliverTo: ['webhook'] }),
      createManageCronJobsTool({ service }),
    ].map((tool) => [tool.name, tool]),
  )
})
afterEach(async () => {
  await cron.stop()
  await db.destroy()
  await rm(dir, { recursive: true, force: true })
})

const session = { sessionKey: 'telegram:555:9' }
const call = (name: string, params: unknown) =>
  invokeTool(tools.get(name) as AnyTool, params, session, { policy: 'none' })
const result = <T>(outcome: unknown) => (outcome as { ok: true; result: T }).result

describe('cron tools (seed 000)', () => {
  it('cron_add creates and registers a job and confirms name, schedule and next runs', async () => {
    const outcome = await call('cron_add', {
      name: 'morning-news',
      schedule_type: 'cron',
      schedule: '0 8 * * *',
      prompt: 'Collect the headlines',
      timezone: 'America/New_York',
    })
    expect(outcome).toMatchObject({
      ok: true,
      result: {
        status: 'created',
        job: { name: 'morning-news', schedule_type: 'cron', schedule: '0 8 * * *', enabled: true },
        message: expect.stringContaining('morning-news'),
      },
    })
    const added = result<{
      next_runs: Array<{ local: string }>
      job: { deliver_to: string[]; next_run_at: string }
    }>(outcome)
    expect(added.next_runs).toHaveLength(3)
    expect(added.next_runs[0]?.local).toMatch(/T08:00:00-0[45]:00$/)
    expect(added.job.deliver_to).toEqual(['telegram:555'])
    expect(added.job.next_run_at).toEqual(expect.any(String))
    const again = await call('cron_add', {
      name: 'morning-news',
      schedule_type: 'every',
      schedule: '2h',
      prompt: 'x',
    })
    expect(again).toMatchObject({ ok: true, result: { status: 'updated', job: { schedule_type: 'every' } } })
  })

  it('cron_list returns ids, names, schedules and enabled state', async () => {
    await call('cron_add', { name: 'a', schedule_type: 'every', schedule: '30m', prompt: 'A' })
    await call('cron_add', { name: 'b', schedule_type: 'cron', schedule: '*/5 * * * *', prompt: 'B' })
    const listed = result<{ jobs: Array<Record<string, unknown>>; count: number }>(
      await call('cron_list', {}),
    )
    expect(listed.count).toBe(2)
    for (const job of listed.jobs)
      expect(Object.keys(job)).toEqual(
        expect.arrayContaining([
          'id',
          'name',
          'kind',
          'schedule_type',
          'schedule',
          'timezone',
          'enabled',
          'next_run_at',
          'last_run_at',
          'last_status',
          'deliver_to',
        ]),
      )
  })

  it('cron_list counts failures in a row: each failed run adds one, a completed run resets it', async () => {
    const created = await cron.create({
      name: 'flaky',
      kind: 'shell',
      scheduleType: 'every',
      schedule: '1h',
      command: `test -f ${join(dir, 'ok')}`,
    })
    const listed = async () =>
      result<{ jobs: Array<{ name: string; consecutive_failures: number; last_status: string | null }> }>(
        await call('cron_list', {}),
      ).jobs.find((job) => job.name === 'flaky')
    expect(await listed()).toMatchObject({ consecutive_failures: 0, last_status: null })
    const runOnce = async (status: string, failures: number) => {
      await call('manage_cron_jobs', { action: 'trigger', id: created.job.id })
      await waitFor(async () => (await listed())?.consecutive_failures === failures)
      expect(await listed()).toMatchObject({ consecutive_failures: failures, last_status: status })
    }
    await runOnce('failed', 1)
    await runOnce('failed', 2)
    await writeFile(join(dir, 'ok'), '')
    await runOnce('completed', 0)
  })

  it('cron_pause disables and unregisters; cron_resume re-registers with a next run', async () => {
    await call('cron_add', { name: 'pausable', schedule_type: 'every', schedule: '1h', prompt: 'P' })
    expect(await call('cron_pause', { id: 'pausable' })).toMatchObject({
      ok: true,
      result: { status: 'paused', name: 'pausable' },
    })
    expect((await cron.get('pausable')).enabled).toBe(false)
    const resumed = await call('cron_resume', { id: 'pausable' })
    expect(resumed).toMatchObject({
      ok: true,
      result: { status: 'resumed', name: 'pausable', next_run_at: expect.any(String) },
    })
    expect((await cron.get('pausable')).enabled).toBe(true)
  })

  it('cron_remove deletes the job from the store', async () => {
    const added = result<{ job: { id: string } }>(
      await call('cron_add', { name: 'gone', schedule_type: 'every', schedule: '1h', prompt: 'G' }),
    )
    expect(await call('cron_remove', { id: added.job.id })).toEqual({
      ok: true,
      result: { status: 'removed', id: added.job.id, name: 'gone' },
    })
    expect(await call('cron_list', {})).toMatchObject({ ok: true, result: { count: 0 } })
    expect(await call('cron_pause', { id: 'gone' })).toMatchObject({
      ok: false,
      error: { reason: 'CRON_JOB_NOT_FOUND' },
    })
  })

  it('cron_history returns entries filtered by job', async () => {
    await call('manage_cron_jobs', {
      action: 'create',
      name: 'echo-a',
      type: 'shell',
      scheduleType: 'interval',
      scheduleValue: '1h',
      config: { command: 'echo from-a' },
    })
    await call('manage_cron_jobs', {
      action: 'create',
      name: 'echo-b',
      type: 'shell',
      scheduleType: 'interval',
      scheduleValue: '1h',
      config: { command: 'echo from-b' },
    })
    await call('manage_cron_jobs', { action: 'trigger', id: 'echo-a' })
    await call('manage_cron_jobs', { action: 'trigger', id: 'echo-b' })
    const done = async () => {
      const all = result<{ entries: Array<{ status: string }> }>(await call('cron_history', {}))
      return all.entries.length === 2 && all.entries.every((entry) => entry.status === 'completed')
    }
    await waitFor(done)
    const onlyA = result<{
      entries: Array<{ job_name: string; result: string; trigger: string }>
      count: number
    }>(await call('cron_history', { job_id: 'echo-a', limit: 5 }))
    expect(onlyA.count).toBe(1)
    expect(onlyA.entries[0]).toMatchObject({
      job_name: 'echo-a',
      trigger: 'manual',
      result: expect.stringContaining('from-a'),
    })
  })

  it('cron_history filters by status: only the failed runs, and a clear error for an unknown status', async () => {
    for (const [jobName, command] of [
      ['passes', 'true'],
      ['breaks', 'exit 3'],
    ] as const) {
      await call('manage_cron_jobs', {
        action: 'create',
        name: jobName,
        type: 'shell',
        scheduleType: 'interval',
        scheduleValue: '1h',
        config: { command },
      })
      await call('manage_cron_jobs', { action: 'trigger', id: jobName })
    }
    await waitFor(async () => {
      const all = result<{ entries: Array<{ status: string }> }>(await call('cron_history', {}))
      return all.entries.length === 2 && all.entries.every((entry) => entry.status !== 'running')
    })
    const failed = result<{ entries: Array<{ job_name: string; status: string }>; count: number }>(
      await call('cron_history', { status: 'failed' }),
    )
    expect(failed.entries).toEqual([expect.objectContaining({ job_name: 'breaks', status: 'failed' })])
    expect(
      result<{ count: number }>(await call('cron_history', { status: 'skipped', job_id: 'passes' })).count,
    ).toBe(0)
    const unknown = await call('cron_history', { status: 'broken' })
    expect(unknown).toMatchObject({ ok: false, error: { code: 'TOOL_INVALID_PARAMETERS' } })
    expect(JSON.stringify(unknown)).toContain('status must be one of running, completed, failed')
  })

  it('cron_history shows the tokens each ai run used; shell runs show null', async () => {
    agent.respond(() => ({ text: 'headlines', usage: { inputTokens: 120, outputTokens: 30 } }))
    await call('cron_add', { name: 'news', schedule_type: 'every', schedule: '1h', prompt: 'Headlines' })
    await call('manage_cron_jobs', {
      action: 'create',
      name: 'echo-c',
      type: 'shell',
      scheduleType: 'interval',
      scheduleValue: '1h',
      config: { command: 'echo from-c' },
    })
    await call('manage_cron_jobs', { action: 'trigger', id: 'news' })
    await call('manage_cron_jobs', { action: 'trigger', id: 'echo-c' })
    type Entry = {
      job_name: string
      status: string
      input_tokens: number | null
      output_tokens: number | null
    }
    const entries = async () => result<{ entries: Entry[] }>(await call('cron_history', {})).entries
    await waitFor(async () => {
      const all = await entries()
      return all.length === 2 && all.every((entry) => entry.status === 'completed')
    })
    const byName = Object.fromEntries((await entries()).map((entry) => [entry.job_name, entry]))
    expect(byName.news).toMatchObject({ status: 'completed', input_tokens: 120, output_tokens: 30 })
    expect(byName['echo-c']).toMatchObject({ status: 'completed', input_tokens: null, output_tokens: null })
  })

  it('cron_add sets the notify policy; cron_history shows the delivery of each run to every target', async () => {
    sender.failingTargets.add('slack:C9')
    const added = result<{ job: { notify: string } }>(
      await call('cron_add', {
        name: 'watch',
        schedule_type: 'every',
        schedule: '1h',
        prompt: 'Check',
        deliver_to: ['telegram:1', 'slack:C9'],
        notify: 'state_changes',
      }),
    )
    expect(added.job.notify).toBe('state_changes')
    expect(
      await call('cron_add', {
        name: 'w2',
        schedule_type: 'every',
        schedule: '1h',
        prompt: 'x',
        notify: 'often',
      }),
    ).toMatchObject({ ok: false, error: { code: 'TOOL_INVALID_PARAMETERS' } })
    // state_changes: a first run that fails is delivered (a change from the healthy start).
    agent.respond(() => {
      throw new Error('down')
    })
    await call('manage_cron_jobs', { action: 'trigger', id: 'watch' })
    type Entry = {
      status: string
      delivery_status: string
      deliveries: { target: string; status: string; attempts: number; last_error: string | null }[]
    }
    const entry = async () =>
      result<{ entries: Entry[] }>(await call('cron_history', { job_id: 'watch' })).entries[0]
    await waitFor(async () => (await entry())?.status === 'failed')
    expect(await entry()).toMatchObject({
      status: 'failed',
      delivery_status: 'pending',
      deliveries: [
        {
          target: 'slack:C9',
          status: 'pending',
          attempts: 1,
          last_error: 'channel slack:C9 is unavailable',
        },
        { target: 'telegram:1', status: 'delivered', attempts: 1, last_error: null },
      ],
    })
  })

  it('refuses schedules that fire too often or never, with the accepted forms', async () => {
    for (const schedule of ['* * * * * *', '0 0 31 2 *']) {
      const outcome = await call('cron_add', { name: 'bad', schedule_type: 'cron', schedule, prompt: 'x' })
      expect(outcome).toMatchObject({ ok: false, error: { code: 'TOOL_FAILED' } })
    }
    expect(await call('cron_list', {})).toMatchObject({ ok: true, result: { count: 0 } })
  })
})

describe('manage_cron_jobs (seed 002)', () => {
  it('create registers a shell job and returns it with its generated id', async () => {
    const outcome = await call('manage_cron_jobs', {
      action: 'create',
      name: 'daily-backup',
      type: 'shell',
      scheduleType: 'cron',
      scheduleValue: '0 3 * * *',
      config: { command: 'tar -czf backup.tar.gz .' },
    })
    expect(outcome).toMatchObject({
      ok: true,
      result: {
        id: expect.any(String),
        name: 'daily-backup',
        type: 'shell',
        scheduleType: 'cron',
        scheduleValue: '0 3 * * *',
        config: { command: 'tar -czf backup.tar.gz .' },
        enabled: true,
        nextRunAt: expect.any(String),
      },
    })
    const listed = result<{
      jobs: Array<{ id: string; name: string; scheduleValue: string; enabled: boolean }>
    }>(await call('manage_cron_jobs', { action: 'list' }))
    expect(listed.jobs).toEqual([
      expect.objectContaining({ name: 'daily-backup', scheduleValue: '0 3 * * *', enabled: true }),
    ])
  })

  it('create without name answers { error: "name is required" }', async () => {
    expect(
      await call('manage_cron_jobs', {
        action: 'create',
        type: 'ai',
        scheduleType: 'cron',
        scheduleValue: '0 3 * * *',
      }),
    ).toEqual({ ok: true, result: { error: 'name is required' } })
  })

  it('update enabled: false disables and unregisters the job', async () => {
    const created = result<{ id: string }>(
      await call('manage_cron_jobs', {
        action: 'create',
        name: 'j',
        type: 'ai',
        scheduleType: 'interval',
        scheduleValue: '1h',
        config: { prompt: 'p' },
      }),
    )
    const updated = await call('manage_cron_jobs', { action: 'update', id: created.id, enabled: false })
    expect(updated).toMatchObject({ ok: true, result: { id: created.id, enabled: false, nextRunAt: null } })
  })

  it('update of a job that does not exist answers { error: "Job not found" }', async () => {
    expect(await call('manage_cron_jobs', { action: 'update', id: 'nonexistent' })).toEqual({
      ok: true,
      result: { error: 'Job not found' },
    })
  })

  it('delete removes the job and answers { ok: true }', async () => {
    const created = result<{ id: string }>(
      await call('manage_cron_jobs', {
        action: 'create',
        name: 'del',
        type: 'ai',
        scheduleType: 'once',
        scheduleValue: '2099-01-01T00:00:00Z',
        config: { prompt: 'p' },
      }),
    )
    expect(await call('manage_cron_jobs', { action: 'delete', id: created.id })).toEqual({
      ok: true,
      result: { ok: true },
    })
    expect(await call('manage_cron_jobs', { action: 'get', id: created.id })).toEqual({
      ok: true,
      result: { error: 'Job not found' },
    })
  })

  it('trigger answers at once and runs the job asynchronously', async () => {
    const marker = join(dir, 'triggered.txt')
    const gate = join(dir, 'trigger-gate')
    const created = result<{ id: string }>(
      await call('manage_cron_jobs', {
        action: 'create',
        name: 'touch',
        type: 'shell',
        scheduleType: 'interval',
        scheduleValue: '1h',
        // Runs until the test opens its gate: the trigger cannot have waited for it.
        config: { command: `while [ ! -f ${gate} ]; do sleep 0.02; done; echo yes > ${marker}` },
      }),
    )
    expect(await call('manage_cron_jobs', { action: 'trigger', id: created.id })).toEqual({
      ok: true,
      result: { ok: true, message: 'Job triggered', run_id: expect.any(String) },
    })
    await expect(readFile(marker, 'utf8')).rejects.toThrow()
    await writeFile(gate, '')
    await waitFor(async () => (await readFile(marker, 'utf8').catch(() => '')) !== '')
    expect(await readFile(marker, 'utf8')).toBe('yes\n')
  })

  it('trigger reports a run that was queued or skipped instead of claiming it was triggered', async () => {
    const created = result<{ id: string }>(
      await call('manage_cron_jobs', {
        action: 'create',
        name: 'busy',
        type: 'shell',
        scheduleType: 'interval',
        scheduleValue: '1h',
        config: { command: 'sleep 2' },
      }),
    )
    expect(await call('manage_cron_jobs', { action: 'trigger', id: created.id })).toEqual({
      ok: true,
      result: { ok: true, message: 'Job triggered', run_id: expect.any(String) },
    })
    // overlap skip (the default): the second trigger runs nothing, and says so as an error.
    expect(await call('manage_cron_jobs', { action: 'trigger', id: created.id })).toEqual({
      ok: true,
      result: {
        error:
          'Job not triggered: overlap: the previous run of this job is still in progress (overlap: skip)',
      },
    })
    const queued = await cron.create({
      name: 'queued',
      kind: 'shell',
      scheduleType: 'every',
      schedule: '1h',
      command: 'sleep 2',
      overlap: 'queue_one',
    })
    await call('manage_cron_jobs', { action: 'trigger', id: queued.job.id })
    expect(await call('manage_cron_jobs', { action: 'trigger', id: queued.job.id })).toEqual({
      ok: true,
      result: { ok: true, message: 'Job queued: queued behind the running occurrence (overlap queue_one)' },
    })
    const manage = tools.get('manage_cron_jobs') as AnyTool
    expect(manage.isFailure?.({ error: 'Job not triggered: …' })).toBe(true)
  })

  it('an ai job created in conversation delivers to that chat', async () => {
    const created = result<{ id: string; deliverTo: string[] }>(
      await call('manage_cron_jobs', {
        action: 'create',
        name: 'ask',
        type: 'ai',
        scheduleType: 'interval',
        scheduleValue: '1h',
        config: { prompt: 'Say hi' },
      }),
    )
    expect(created.deliverTo).toEqual(['telegram:555'])
    await call('manage_cron_jobs', { action: 'trigger', id: created.id })
    await waitFor(() => sender.sent.length > 0)
    expect(agent.calls[0]?.sessionKey).toMatch(/^cron:ask/)
    expect(sender.sent[0]).toMatchObject({
      target: 'telegram:555',
      text: expect.stringContaining('[Cron] ask'),
    })
  })

  it('safety depends on the action', () => {
    const tool = tools.get('manage_cron_jobs') as AnyTool
    expect(tool.safetyFor?.({ action: 'list' })).toBe('safe')
    expect(tool.safetyFor?.({ action: 'create' })).toBe('moderate')
    expect(tool.safetyFor?.({ action: 'delete' })).toBe('dangerous')
  })
})

describe('ping_url: a dead-man monitor per job (issue 23)', () => {
  const url = 'https://hc.example/ping/0b6a9c1e'

  it('cron_add stores it, cron_list shows it, and an approval is required under the default policy', async () => {
    const tool = tools.get('cron_add') as AnyTool
    const params = { name: 'news', schedule_type: 'every', schedule: '1h', prompt: 'x', ping_url: url }
    expect(tool.safetyFor?.(params)).toBe('dangerous')
    expect(tool.safetyFor?.({ ...params, ping_url: undefined })).toBe('moderate')
    const added = result<{ job: { ping_url: string | null } }>(await call('cron_add', params))
    expect(added.job.ping_url).toBe(url)
    const listed = result<{ jobs: { ping_url: string | null }[] }>(await call('cron_list', {}))
    expect(listed.jobs[0]?.ping_url).toBe(url)
    // '' removes it; omitted keeps it.
    await call('cron_add', { ...params, ping_url: undefined, prompt: 'y' })
    expect((await cron.get('news')).pingUrl).toBe(url)
    await call('cron_add', { ...params, ping_url: '' })
    expect((await cron.get('news')).pingUrl).toBeNull()
  })

  it('a bad URL is a clear validation error naming ping_url, and nothing is stored', async () => {
    const outcome = (await call('cron_add', {
      name: 'news',
      schedule_type: 'every',
      schedule: '1h',
      prompt: 'x',
      ping_url: 'https://user:pw@hc.example/x',
    })) as { ok: boolean; error?: { code: string; reason?: string; message: string; data?: unknown } }
    expect(outcome.ok).toBe(false)
    expect(outcome.error).toMatchObject({
      code: 'TOOL_FAILED',
      reason: 'CRON_INVALID_INPUT',
      data: { field: 'ping_url', reason: 'credentials' },
    })
    expect(outcome.error?.message).toMatch(/ping_url must not carry a user name or password/)
    expect(outcome.error?.message).not.toContain('pw@')
    expect(await cron.list()).toEqual([])
  })

  it('manage_cron_jobs create/update take pingUrl, shown in its seed view, and make the call dangerous', async () => {
    const tool = tools.get('manage_cron_jobs') as AnyTool
    expect(tool.safetyFor?.({ action: 'update', id: 'x', pingUrl: url })).toBe('dangerous')
    expect(tool.safetyFor?.({ action: 'update', id: 'x', pingUrl: '' })).toBe('moderate')
    const created = result<{ id: string; pingUrl: string | null }>(
      await call('manage_cron_jobs', {
        action: 'create',
        name: 'ask',
        type: 'ai',
        scheduleType: 'interval',
        scheduleValue: '1h',
        config: { prompt: 'Say hi' },
        pingUrl: url,
      }),
    )
    expect(created.pingUrl).toBe(url)
    const updated = result<{ pingUrl: string | null }>(
      await call('manage_cron_jobs', { action: 'update', id: created.id, pingUrl: 'ftp://x' }),
    )
    expect(updated).toEqual({ error: expect.stringMatching(/^ping_url must use http or https/) })
    expect((await cron.get('ask')).pingUrl).toBe(url)
  })
})

describe('when: a gate that decides whether to wake the model (issue 25)', () => {
  it('cron_add stores it, cron_list shows it, the approval line shows it whole, and it makes the call dangerous', async () => {
    const tool = tools.get('cron_add') as AnyTool
    const gate = 'test -s inbox.json && cat inbox.json'
    const params = { name: 'inbox', schedule_type: 'every', schedule: '1h', prompt: 'x', when: gate }
    expect(tool.safetyFor?.(params)).toBe('dangerous')
    expect(tool.safetyFor?.({ ...params, when: '' })).toBe('moderate')
    const added = result<{ job: { when: string | null } }>(await call('cron_add', params))
    expect(added.job.when).toBe(gate)
    const listed = result<{ jobs: { when: string | null }[] }>(await call('cron_list', {}))
    expect(listed.jobs[0]?.when).toBe(gate)
    await call('cron_add', { ...params, when: '' })
    expect((await cron.get('inbox')).when).toBeNull()
  })

  it('manage_cron_jobs takes config.when for ai jobs; a shell job with one is a clear error', async () => {
    const tool = tools.get('manage_cron_jobs') as AnyTool
    expect(tool.safetyFor?.({ action: 'update', id: 'x', config: { when: 'true' } })).toBe('dangerous')
    const created = result<{ id: string; when: string | null }>(
      await call('manage_cron_jobs', {
        action: 'create',
        name: 'ask',
        type: 'ai',
        scheduleType: 'interval',
        scheduleValue: '1h',
        config: { prompt: 'Say hi', when: 'exit 1' },
      }),
    )
    expect(created.when).toBe('exit 1')
    const refused = result<{ error?: string }>(
      await call('manage_cron_jobs', {
        action: 'create',
        name: 'sh',
        type: 'shell',
        scheduleType: 'interval',
        scheduleValue: '1h',
        config: { command: 'true', when: 'true' },
      }),
    )
    expect(refused.error).toMatch(/^when is for ai jobs/)
  })
})

// Issue 24, item 7: a job nobody will be sent the results of says so, so the model does not
// promise to report back.
describe('a cron job with no delivery target', () => {
  const as = (sessionKey: string, name: string, params: unknown, toolSet = tools) =>
    invokeTool(toolSet.get(name) as AnyTool, params, { sessionKey }, { policy: 'none' })
  const daily = { schedule_type: 'cron', schedule: '0 3 * * *', prompt: 'Back up the project' }

  it('cron_add from an HTTP or OpenAI-endpoint session, with no default, says results are only in the history', async () => {
    const bare = new Map(
      [...createCronTools({ service: cron }), createManageCronJobsTool({ service: cron })].map((tool) => [
        tool.name,
        tool,
      ]),
    )
    for (const sessionKey of ['http:me', 'openai:alice']) {
      const name = `backup-${sessionKey.split(':')[0]}`
      const added = result<{ job: { deliver_to: string[] }; message: string; delivery_note: string }>(
        await as(sessionKey, 'cron_add', { name, ...daily }, bare),
      )
      expect(added.job.deliver_to).toEqual([])
      expect(added.delivery_note).toContain('no delivery target')
      expect(added.delivery_note).toContain(`lango cron history "${name}"`)
      expect(added.delivery_note).toContain('Do not promise to tell the user how it went')
      expect(added.message).toContain(added.delivery_note)
    }
    const created = result<{ deliverTo: string[]; deliveryNote: string }>(
      await as(
        'openai:alice',
        'manage_cron_jobs',
        {
          action: 'create',
          name: 'seed-style',
          type: 'ai',
          scheduleType: 'cron',
          scheduleValue: '0 4 * * *',
          config: { prompt: 'Back up' },
        },
        bare,
      ),
    )
    expect(created.deliverTo).toEqual([])
    expect(created.deliveryNote).toContain('kept only in the run history')
  })

  it('says nothing of the kind when the job delivers: to the chat, to deliver_to, or to the default', async () => {
    const fromChat = await as('telegram:555:9', 'cron_add', { name: 'from-chat', ...daily })
    const explicit = await as('http:me', 'cron_add', { name: 'explicit', ...daily, deliver_to: ['slack:C1'] })
    // `tools` has defaultDeliverTo ['webhook'].
    const byDefault = await as('http:me', 'cron_add', { name: 'by-default', ...daily })
    for (const outcome of [fromChat, explicit, byDefault]) {
      const added = result<{ job: { deliver_to: string[] }; message: string }>(outcome)
      expect(added.job.deliver_to).not.toEqual([])
      expect(added).not.toHaveProperty('delivery_note')
      expect(added.message).not.toContain('no delivery target')
    }
  })
})

describe('approval lines of calls that name a job (issue 26)', () => {
  /** Asks approval of every call (policy all), answers no, and gives back the line the approver saw. */
  const approvalLine = async (name: string, params: unknown): Promise<string> => {
    const asked: string[] = []
    await invokeTool(tools.get(name) as AnyTool, params, session, {
      policy: 'all',
      gate: {
        async request(request) {
          asked.push(request.summary)
          return false
        },
      },
    })
    expect(asked).toHaveLength(1)
    return asked[0] as string
  }

  it('show the job by name, with its whole command, whether the call gave its id or its name', async () => {
    const command = `tar czf /backups/nightly.tgz /srv/data ${'--exclude=cache '.repeat(20)}&& echo done`
    const created = result<{ id: string }>(
      await call('manage_cron_jobs', {
        action: 'create',
        name: 'nightly-backup',
        type: 'shell',
        scheduleType: 'cron',
        scheduleValue: '0 3 * * *',
        config: { command },
      }),
    )
    const job = `⟦nightly-backup⟧ (id ${created.id}; cron ⟦0 3 * * *⟧ ⟦Europe/Berlin⟧; command: ⟦${command}⟧)`
    expect(await approvalLine('cron_remove', { id: created.id })).toBe(
      `Remove cron job and its history: ${job}`,
    )
    expect(await approvalLine('cron_remove', { id: 'nightly-backup' })).toBe(
      `Remove cron job and its history: ${job}`,
    )
    expect(await approvalLine('cron_pause', { id: created.id })).toBe(`Pause cron job: ${job}`)
    // A call that starts runs says who made the job and where its results go.
    const starts = " — a job created by ⟦telegram:555:9⟧; its runs' results go to: ⟦telegram:555⟧"
    expect(await approvalLine('cron_resume', { id: created.id })).toBe(`Resume cron job: ${job}${starts}`)
    expect(await approvalLine('manage_cron_jobs', { action: 'delete', id: created.id })).toBe(
      `Delete cron job: ${job}`,
    )
    expect(await approvalLine('manage_cron_jobs', { action: 'trigger', id: created.id })).toBe(
      `Trigger cron job now: ${job}${starts}`,
    )
    expect(
      await approvalLine('manage_cron_jobs', {
        action: 'update',
        id: created.id,
        scheduleValue: '0 4 * * *',
      }),
    ).toBe(`Update cron job: ${job} — scheduleValue: ⟦0 4 * * *⟧`)
  })

  it('an ai job shows its whole prompt; an id that names no job keeps the generic line', async () => {
    const prompt = `Summarise the inbox.\nThen ${'list every sender; '.repeat(30)}`
    await call('cron_add', { name: 'inbox', schedule_type: 'every', schedule: '1h', prompt })
    const line = await approvalLine('cron_remove', { id: 'inbox' })
    expect(line).toMatch(
      /^Remove cron job and its history: ⟦inbox⟧ \(id [^;]+; every ⟦1h⟧ ⟦Europe\/Berlin⟧; prompt: ⟦/,
    )
    // Whole: its line break shown as ↵, every one of its 30 clauses, up to the closing mark (its
    // last space too, escaped, so that it shows).
    expect(line).toContain('Summarise the inbox. ↵ Then ')
    expect(line.match(/list every sender;/g)).toHaveLength(30)
    expect(line.endsWith('list every sender;\\u{20}⟧)')).toBe(true)
    expect(await approvalLine('cron_remove', { id: 'no-such-job' })).toBe(
      'Remove cron job and its history: ⟦no-such-job⟧',
    )
  })
})

describe("a job's creator is the call's (who its runs' spend counts against)", () => {
  it('cron_add and manage_cron_jobs create record the creator, else the session key', async () => {
    await call('cron_add', { name: 'from-chat', schedule_type: 'every', schedule: '1h', prompt: 'p' })
    const inRun = await invokeTool(
      tools.get('cron_add') as AnyTool,
      { name: 'from-a-task', schedule_type: 'every', schedule: '1h', prompt: 'p' },
      { sessionKey: 'bg:task-1', creator: 'telegram:555:9' },
      { policy: 'none' },
    )
    expect(inRun.ok).toBe(true)
    await invokeTool(
      tools.get('manage_cron_jobs') as AnyTool,
      {
        action: 'create',
        name: 'managed',
        type: 'ai',
        scheduleType: 'interval',
        scheduleValue: '1h',
        config: { prompt: 'p' },
      },
      { sessionKey: 'workflow:w:r:s', creator: 'slack:C1:U2' },
      { policy: 'none' },
    )
    expect((await cron.get('from-chat')).createdBy).toBe('telegram:555:9')
    expect((await cron.get('from-a-task')).createdBy).toBe('telegram:555:9')
    expect((await cron.get('managed')).createdBy).toBe('slack:C1:U2')
  })
})

describe('a deliver_to target results could not reach (the host’s checkTarget)', () => {
  it('is refused as invalid parameters before anything is stored or asked; a served one is accepted', async () => {
    const checked = new Map(
      createCronTools({
        service: cron,
        checkTarget: (target) =>
          target.startsWith('telegram') ? undefined : `the ${target.split(':')[0]} channel is not configured`,
      }).map((tool) => [tool.name, tool]),
    )
    const asked: string[] = []
    const add = (deliver_to: string[]) =>
      invokeTool(
        checked.get('cron_add') as AnyTool,
        { name: 'digest', schedule_type: 'every', schedule: '1h', prompt: 'x', deliver_to },
        session,
        {
          gate: {
            async request(request) {
              asked.push(request.summary)
              return true
            },
          },
        },
      )
    expect(await add(['telegram:555', 'slakc:C1'])).toMatchObject({
      ok: false,
      error: {
        code: 'TOOL_INVALID_PARAMETERS',
        message:
          'invalid parameters: deliver_to: "slakc:C1" cannot be delivered to: the slakc channel is not configured',
      },
    })
    expect(asked).toEqual([])
    await expect(cron.get('digest')).rejects.toMatchObject({ code: 'CRON_JOB_NOT_FOUND' })
    expect(await add(['telegram:555'])).toMatchObject({ ok: true })
  })
})

describe('raising or removing a budget, renaming a job and webhook schedules need approval (review of issue 25)', () => {
  /**
   * Calls under the default policy (dangerous calls need approval) with a gate that answers
   * `answer`; gives back the lines the approver was shown (none: the call needed no approval).
   */
  const asking = async (name: string, params: unknown, answer = true) => {
    const asked: string[] = []
    const outcome = await invokeTool(tools.get(name) as AnyTool, params, session, {
      policy: 'dangerous',
      gate: {
        async request(request) {
          asked.push(request.summary)
          return answer
        },
      },
    })
    return { asked, outcome }
  }
  const watcher = { name: 'watcher', schedule_type: 'every', schedule: '1h', prompt: 'Check the disks' }
  const budgetOf = async (name: string) => {
    const job = await cron.get(name)
    return [job.maxTokensPerDay, job.maxCostPerDay]
  }

  it('cron_add: a new job with a budget and a lower budget need none; a higher or removed one does, showing old → new', async () => {
    expect((await asking('cron_add', { ...watcher, max_tokens_per_day: 1000 })).asked).toEqual([])
    expect(
      (await asking('cron_add', { ...watcher, max_tokens_per_day: 800, max_cost_per_day: 1 })).asked,
    ).toEqual([])
    expect(await budgetOf('watcher')).toEqual([800, 1])

    const raised = await asking('cron_add', { ...watcher, max_tokens_per_day: 5000 }, false)
    expect(raised.asked).toEqual([
      'Update cron job: ⟦watcher⟧ (every=⟦1h⟧) — prompt: ⟦Check the disks⟧; results go to: ⟦telegram:555⟧; max_tokens_per_day: 800 → 5000',
    ])
    expect(raised.outcome).toMatchObject({ ok: false, error: { code: 'TOOL_DENIED' } })
    expect(await budgetOf('watcher')).toEqual([800, 1])

    const removed = await asking('cron_add', { ...watcher, max_cost_per_day: null })
    expect(removed.asked).toEqual([
      'Update cron job: ⟦watcher⟧ (every=⟦1h⟧) — prompt: ⟦Check the disks⟧; results go to: ⟦telegram:555⟧; max_cost_per_day: 1 → none (removed)',
    ])
    expect(await budgetOf('watcher')).toEqual([800, null])
    // Setting a budget where there was none bounds the job: no approval.
    expect((await asking('cron_add', { ...watcher, max_cost_per_day: 0.5 })).asked).toEqual([])
  })

  it('cron_add from a chat: delivering to another chat needs approval, showing where; its own chat and the default do not', async () => {
    // The session is telegram:555:9: its own chat is telegram:555; the configured default is webhook.
    expect((await asking('cron_add', { ...watcher, deliver_to: ['telegram:555'] })).asked).toEqual([])
    expect((await asking('cron_add', { ...watcher, deliver_to: ['webhook'] })).asked).toEqual([])
    const elsewhere = await asking('cron_add', { ...watcher, deliver_to: ['telegram:777', 'webhook'] }, false)
    expect(elsewhere.asked).toEqual([
      'Update cron job: ⟦watcher⟧ (every=⟦1h⟧) — prompt: ⟦Check the disks⟧; results go to: ⟦telegram:777⟧, ⟦webhook⟧',
    ])
    expect(elsewhere.outcome).toMatchObject({ ok: false, error: { code: 'TOOL_DENIED' } })
    expect((await cron.get('watcher')).deliverTo).toEqual(['webhook'])
    // From outside a chat (the operator's API or MCP client) the caller names its targets.
    const operator = await invokeTool(
      tools.get('cron_add') as AnyTool,
      { ...watcher, name: 'ops-digest', deliver_to: ['telegram:777'] },
      { sessionKey: 'mcp:desktop' },
      { policy: 'dangerous', gate: { request: async () => false } },
    )
    expect(operator).toMatchObject({ ok: true })
    expect((await cron.get('ops-digest')).deliverTo).toEqual(['telegram:777'])
  })

  it('manage_cron_jobs update: raising or removing a budget, or a new name, needs approval; lowering does not', async () => {
    const created = result<{ id: string }>(
      await call('manage_cron_jobs', {
        action: 'create',
        name: 'spender',
        type: 'ai',
        scheduleType: 'interval',
        scheduleValue: '1h',
        config: { prompt: 'p', maxTokensPerDay: 2000, maxCostPerDay: 1 },
      }),
    )
    const job = `⟦spender⟧ (id ${created.id}; every ⟦1h⟧ ⟦Europe/Berlin⟧; prompt: ⟦p⟧)`
    const lowered = await asking('manage_cron_jobs', {
      action: 'update',
      id: 'spender',
      config: { maxTokensPerDay: 1500 },
    })
    expect(lowered.asked).toEqual([])
    expect(await budgetOf('spender')).toEqual([1500, 1])

    const raised = await asking(
      'manage_cron_jobs',
      { action: 'update', id: created.id, config: { maxTokensPerDay: 3000, maxCostPerDay: null } },
      false,
    )
    expect(raised.asked).toEqual([
      `Update cron job: ${job} — maxTokensPerDay: 1500 → 3000; maxCostPerDay: 1 → none (removed)`,
    ])
    expect(await budgetOf('spender')).toEqual([1500, 1])

    const renamed = await asking('manage_cron_jobs', { action: 'update', id: 'spender', name: 'saver' })
    expect(renamed.asked).toEqual([`Update cron job: ${job} — name: ⟦saver⟧`])
    expect((await cron.get(created.id)).name).toBe('saver')
    // The same name again is no rename.
    expect(
      (await asking('manage_cron_jobs', { action: 'update', id: 'saver', name: 'saver' })).asked,
    ).toEqual([])
  })

  it('manage_cron_jobs update of a shell job: a new cwd or schedule needs approval; pausing or a new ai schedule does not', async () => {
    // An outside probe moved an approved `./job.sh` to a directory holding another job.sh, and made
    // it run every minute, both without anyone asked (issue 21).
    const created = await asking('manage_cron_jobs', {
      action: 'create',
      name: 'relative',
      type: 'shell',
      scheduleType: 'interval',
      scheduleValue: '1h',
      config: { command: './job.sh', cwd: '/srv/good' },
    })
    expect(created.asked).toHaveLength(1)
    const moved = await asking(
      'manage_cron_jobs',
      { action: 'update', id: 'relative', config: { cwd: '/srv/evil' } },
      false,
    )
    expect(moved.asked).toHaveLength(1)
    expect(moved.asked[0]).toContain('cwd: ⟦/srv/evil⟧')
    expect(moved.asked[0]).toContain('command: ⟦./job.sh⟧')
    expect(moved.outcome).toMatchObject({ ok: false, error: { code: 'TOOL_DENIED' } })
    expect((await cron.get('relative')).cwd).toBe('/srv/good')

    const faster = await asking(
      'manage_cron_jobs',
      { action: 'update', id: 'relative', scheduleType: 'interval', scheduleValue: '1m' },
      false,
    )
    expect(faster.asked).toHaveLength(1)
    expect(faster.asked[0]).toContain('scheduleValue: ⟦1m⟧')
    expect((await cron.get('relative')).schedule).toBe('1h')
    // Pausing runs nothing new.
    expect(
      (await asking('manage_cron_jobs', { action: 'update', id: 'relative', enabled: false })).asked,
    ).toEqual([])

    await call('manage_cron_jobs', {
      action: 'create',
      name: 'thinker',
      type: 'ai',
      scheduleType: 'interval',
      scheduleValue: '1h',
      config: { prompt: 'p' },
    })
    expect(
      (await asking('manage_cron_jobs', { action: 'update', id: 'thinker', scheduleValue: '2h' })).asked,
    ).toEqual([])
  })

  // An outside probe: from one chat, an agent resumed and ran an operator's job that reports to
  // another chat, asking nobody; that chat got the report.
  it("resuming or running another creator's job, or one reporting to another chat, is asked about; one's own is not", async () => {
    await cron.add({
      name: 'ops-report',
      scheduleType: 'every',
      schedule: '1h',
      prompt: 'Report the disks',
      deliverTo: ['telegram:111'],
      createdBy: 'cli',
    })
    await cron.pause('ops-report')
    const resumed = await asking('cron_resume', { id: 'ops-report' }, false)
    expect(resumed.asked).toHaveLength(1)
    expect(resumed.asked[0]).toContain(" — a job created by ⟦cli⟧; its runs' results go to: ⟦telegram:111⟧")
    expect(resumed.outcome).toMatchObject({ ok: false, error: { code: 'TOOL_DENIED' } })
    expect((await cron.get('ops-report')).enabled).toBe(false)
    const triggered = await asking('manage_cron_jobs', { action: 'trigger', id: 'ops-report' }, false)
    expect(triggered.asked).toHaveLength(1)
    expect(triggered.outcome).toMatchObject({ ok: false, error: { code: 'TOOL_DENIED' } })
    expect(await cron.history({ job: 'ops-report' })).toEqual([])
    const viaUpdate = await asking(
      'manage_cron_jobs',
      { action: 'update', id: 'ops-report', enabled: true },
      false,
    )
    expect(viaUpdate.asked).toHaveLength(1)
    // The caller's own job, reporting to its own chat: nobody is asked.
    await call('cron_add', { name: 'my-report', schedule_type: 'every', schedule: '1h', prompt: 'Mine' })
    await cron.pause('my-report')
    expect((await asking('cron_resume', { id: 'my-report' })).asked).toEqual([])
    expect((await asking('manage_cron_jobs', { action: 'trigger', id: 'my-report' })).asked).toEqual([])
  })

  it("cron_add over another creator's job (an operator's, another chat's) needs approval and says whose it is", async () => {
    await cron.add({
      name: 'nightly-report',
      scheduleType: 'cron',
      schedule: '0 6 * * *',
      prompt: 'Summarise the night',
      deliverTo: [],
      createdBy: 'cli',
    })
    const rewrite = { name: 'nightly-report', schedule_type: 'cron', schedule: '* * * * *', prompt: 'Spend' }
    const denied = await asking('cron_add', rewrite, false)
    expect(denied.asked).toEqual([
      'Update cron job: ⟦nightly-report⟧ (cron=⟦* * * * *⟧) — a job created by ⟦cli⟧, whose budget its runs spend; prompt: ⟦Spend⟧; results go to: ⟦telegram:555⟧',
    ])
    expect(denied.outcome).toMatchObject({ ok: false, error: { code: 'TOOL_DENIED' } })
    expect((await cron.get('nightly-report')).prompt).toBe('Summarise the night')
    // A job the host made without a creator (`POST /api/cron/jobs`) is the operator's too.
    await cron.add({ name: 'host-job', scheduleType: 'every', schedule: '1h', prompt: 'Tidy', deliverTo: [] })
    expect((await asking('cron_add', { ...rewrite, name: 'host-job' }, false)).asked).toEqual([
      'Update cron job: ⟦host-job⟧ (cron=⟦* * * * *⟧) — a job created by the host, whose budget its runs spend; prompt: ⟦Spend⟧; results go to: ⟦telegram:555⟧',
    ])
    // The caller's own job: an update asks nobody.
    expect((await asking('cron_add', { ...rewrite, name: 'mine' })).asked).toEqual([])
    expect((await asking('cron_add', { ...rewrite, name: 'mine', prompt: 'Spend less' })).asked).toEqual([])
  })

  it('cron_add of a webhook job, new or an update to one, needs approval and names the hook', async () => {
    const hooked = {
      name: 'on-deploy',
      schedule_type: 'webhook',
      schedule: 'deploy',
      prompt: 'Check the deploy',
    }
    const created = await asking('cron_add', hooked)
    expect(created.asked).toEqual([
      'Create cron job: ⟦on-deploy⟧ (webhook=⟦deploy⟧) — prompt: ⟦Check the deploy⟧; webhook hook: ⟦deploy⟧ (each signed POST /hooks/⟦deploy⟧ starts a run); results go to: ⟦telegram:555⟧',
    ])
    expect((await cron.get('on-deploy')).scheduleType).toBe('webhook')
    await call('cron_add', watcher)
    const changed = await asking(
      'cron_add',
      { ...watcher, schedule_type: 'webhook', schedule: 'disks' },
      false,
    )
    expect(changed.asked).toEqual([
      'Update cron job: ⟦watcher⟧ (webhook=⟦disks⟧) — prompt: ⟦Check the disks⟧; webhook hook: ⟦disks⟧ (each signed POST /hooks/⟦disks⟧ starts a run); results go to: ⟦telegram:555⟧',
    ])
    expect((await cron.get('watcher')).scheduleType).toBe('every')
    // Outside invokeTool, a call whose job was not read is judged by its worst case.
    const tool = tools.get('cron_add') as AnyTool
    expect(callSafety(tool, { ...watcher, max_tokens_per_day: 10 })).toBe('dangerous')
    expect(callSafety(tool, watcher)).toBe('moderate')
  })

  it('manage_cron_jobs creates a webhook job (scheduleType webhook) only after approval', async () => {
    const params = {
      action: 'create',
      name: 'on-release',
      type: 'ai',
      scheduleType: 'webhook',
      scheduleValue: 'release',
      config: { prompt: 'Write the release notes' },
    }
    const denied = await asking('manage_cron_jobs', params, false)
    expect(denied.asked).toHaveLength(1)
    expect(denied.outcome).toMatchObject({ ok: false, error: { code: 'TOOL_DENIED' } })
    await expect(cron.get('on-release')).rejects.toMatchObject({ code: 'CRON_JOB_NOT_FOUND' })
    const approved = await asking('manage_cron_jobs', params)
    expect(approved.outcome).toMatchObject({
      ok: true,
      result: { name: 'on-release', scheduleType: 'webhook', scheduleValue: 'release' },
    })
    expect((await cron.get('on-release')).scheduleType).toBe('webhook')
  })
})

describe('cron approval lines show what runs, when and where its results go (an outside probe; SECURITY.md CRON-5)', () => {
  /** Asks for every call (policy all) with a gate that answers `answer`; gives back what it was shown. */
  const shown = async (name: string, params: unknown, sessionKey = session.sessionKey, answer = true) => {
    const asked: string[] = []
    const outcome = await invokeTool(
      tools.get(name) as AnyTool,
      params,
      { sessionKey },
      {
        policy: 'all',
        gate: {
          async request(request) {
            asked.push(request.summary)
            return answer
          },
        },
      },
    )
    return { asked, outcome }
  }
  const digest = { name: 'digest', schedule_type: 'cron', schedule: '0 7 * * 1-5', prompt: 'Sum up the news' }

  it('cron_add shows the time zone, session mode, timeout, overlap and notify policies it sets, as stored', async () => {
    const created = await shown('cron_add', {
      ...digest,
      timezone: 'America/New_York',
      session_mode: 'main',
      timeout: '2h',
      overlap: 'allow',
      notify: 'failure',
    })
    expect(created.asked).toEqual([
      'Create cron job: ⟦digest⟧ (cron=⟦0 7 * * 1-5⟧; timezone=⟦America/New_York⟧) — prompt: ⟦Sum up the news⟧; session_mode: main; timeout: 2h; overlap: allow; notify: failure; results go to: ⟦telegram:555⟧',
    ])
    const job = await cron.get('digest')
    expect(job).toMatchObject({
      timezone: 'America/New_York',
      sessionMode: 'main',
      timeoutMs: 2 * 60 * 60 * 1000,
      overlap: 'allow',
      notify: 'failure',
      deliverTo: ['telegram:555'],
    })
    // An update that moves the job to another zone, with a timeout in seconds: both shown.
    const moved = await shown(
      'cron_add',
      { ...digest, timezone: 'Asia/Tokyo', timeout: 600 },
      undefined,
      false,
    )
    expect(moved.asked).toEqual([
      'Update cron job: ⟦digest⟧ (cron=⟦0 7 * * 1-5⟧; timezone=⟦Asia/Tokyo⟧) — prompt: ⟦Sum up the news⟧; timeout: 600 s; results go to: ⟦telegram:555⟧',
    ])
    expect((await cron.get('digest')).timezone).toBe('America/New_York')
  })

  it('cron_add without deliver_to shows where its results will go: the chat it came from, else the default', async () => {
    expect((await shown('cron_add', digest)).asked).toEqual([
      'Create cron job: ⟦digest⟧ (cron=⟦0 7 * * 1-5⟧) — prompt: ⟦Sum up the news⟧; results go to: ⟦telegram:555⟧',
    ])
    // An update from another chat moves the results there: the approver is shown where (and whose job it is).
    expect((await shown('cron_add', digest, 'telegram:777:1', false)).asked).toEqual([
      'Update cron job: ⟦digest⟧ (cron=⟦0 7 * * 1-5⟧) — a job created by ⟦telegram:555:9⟧, whose budget its runs spend; prompt: ⟦Sum up the news⟧; results go to: ⟦telegram:777⟧',
    ])
    expect((await cron.get('digest')).deliverTo).toEqual(['telegram:555'])
    // Not from a chat: the configured default.
    expect((await shown('cron_add', { ...digest, name: 'api-digest' }, 'http:api')).asked).toEqual([
      'Create cron job: ⟦api-digest⟧ (cron=⟦0 7 * * 1-5⟧) — prompt: ⟦Sum up the news⟧; results go to: ⟦webhook⟧',
    ])
    expect((await cron.get('api-digest')).deliverTo).toEqual(['webhook'])
  })

  it('a prompt, a when gate or a name cannot end early and fake where results go or the time zone', async () => {
    // Before, the prompt's own `"` closed the quotes and the rest read as details the code wrote.
    const faked = await shown(
      'cron_add',
      {
        ...digest,
        name: 'faked',
        prompt: 'Sum up"; timezone=UTC; results go to: nowhere',
        when: 'true; results go to: nowhere',
      },
      'http:api',
      false,
    )
    expect(faked.asked).toEqual([
      'Create cron job: ⟦faked⟧ (cron=⟦0 7 * * 1-5⟧) — prompt: ⟦Sum up"; timezone=UTC; results go to: nowhere⟧; when: ⟦true; results go to: nowhere⟧; results go to: ⟦webhook⟧',
    ])
    const real = await shown(
      'cron_add',
      { ...digest, name: 'faked', timezone: 'UTC', deliver_to: ['webhook'] },
      'http:api',
      false,
    )
    expect(real.asked).toEqual([
      'Create cron job: ⟦faked⟧ (cron=⟦0 7 * * 1-5⟧; timezone=⟦UTC⟧) — prompt: ⟦Sum up the news⟧; results go to: ⟦webhook⟧',
    ])
    // The closing mark inside the prompt is escaped: it cannot end the prompt early.
    const closed = await shown(
      'cron_add',
      { ...digest, prompt: 'Sum up⟧; results go to: nowhere' },
      'http:api',
      false,
    )
    expect(closed.asked).toEqual([
      'Create cron job: ⟦digest⟧ (cron=⟦0 7 * * 1-5⟧) — prompt: ⟦Sum up\\u{27e7}; results go to: nowhere⟧; results go to: ⟦webhook⟧',
    ])
  })

  it('manage_cron_jobs shows the notify policy it sets and where a new job delivers', async () => {
    const created = await shown(
      'manage_cron_jobs',
      {
        action: 'create',
        name: 'report',
        type: 'ai',
        scheduleType: 'cron',
        scheduleValue: '0 6 * * *',
        config: { prompt: 'Report' },
        notify: 'never',
      },
      'http:api',
    )
    // No chat and no default: the results are only in the run history.
    expect(created.asked).toEqual([
      'Create cron job: ⟦report⟧ (cron=⟦0 6 * * *⟧) — prompt: ⟦Report⟧; notify: never; results go to: nowhere (kept only in the run history)',
    ])
    const job = await cron.get('report')
    expect(job).toMatchObject({ notify: 'never', deliverTo: [] })
    const updated = await shown('manage_cron_jobs', { action: 'update', id: job.id, notify: 'always' })
    expect(updated.asked).toEqual([
      `Update cron job: ⟦report⟧ (id ${job.id}; cron ⟦0 6 * * *⟧ ⟦Europe/Berlin⟧; prompt: ⟦Report⟧) — notify: always`,
    ])
  })
})

describe('cron_history a page at a time', () => {
  it('next_cursor reads the older runs; the last page says null; a foreign cursor is refused', async () => {
    await call('cron_add', { name: 'pages', schedule_type: 'every', schedule: '1h', prompt: 'p' })
    const job = await cron.get('pages')
    const store = new SqliteCronStore(db)
    const at = Date.parse('2026-03-01T00:00:00Z')
    await store.insertRuns(
      [0, 1, 2, 3, 4].map((index) => ({
        id: `page-run-${index}`,
        jobId: job.id,
        jobName: job.name,
        trigger: 'schedule',
        status: 'skipped',
        scheduledFor: at + index * 60_000,
        startedAt: null,
        completedAt: at + index * 60_000,
        skipReason: 'missed',
        owner: 'o',
      })),
    )
    const seen: string[] = []
    let cursor: string | null = null
    for (let page = 0; page < 5; page++) {
      const answer: { entries: { id: string }[]; next_cursor: string | null } = result(
        await call('cron_history', { job_id: 'pages', limit: 2, ...(cursor === null ? {} : { cursor }) }),
      )
      seen.push(...answer.entries.map((entry) => entry.id))
      cursor = answer.next_cursor
      if (cursor === null) break
    }
    expect(seen).toEqual(['page-run-4', 'page-run-3', 'page-run-2', 'page-run-1', 'page-run-0'])
    const foreign = await call('cron_history', { cursor: 'not-a-cursor' })
    expect(foreign).toMatchObject({ ok: false, error: { code: 'TOOL_INVALID_PARAMETERS' } })
    expect(JSON.stringify(foreign)).toContain('cursor must be a next_cursor of an earlier page')
  })
})
