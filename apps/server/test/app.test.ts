import { mkdtemp, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { invokeTool } from '@lango/tools'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { App } from '../src/app/app.js'
import { createApp } from '../src/app/create-app.js'
import { loadConfig } from '../src/config/load.js'
import { silentLogger } from '../src/logger.js'
import { dispatchScheduledWorkflows } from '../src/scheduled-workflows/dispatch.js'
import { migrateVault, Vault } from '../src/vault/vault.js'
import { until } from './fixtures/http-server.js'

const PASSPHRASE = 'correct horse battery staple'
const SECRET = 'sk-live-4f9a8b7c6d5e4f3a2b1c'

let home: string
let app: App | undefined

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'lango-app-'))
})
afterEach(async () => {
  await app?.stop()
  app = undefined
  await rm(home, { recursive: true, force: true })
})

async function start(options: { passphrase?: string } = {}): Promise<App> {
  const config = await loadConfig({ env: { LANGO_HOME: home }, cwd: home })
  app = await createApp(config, silentLogger, { passphrase: options.passphrase ?? '' })
  await app.start()
  return app
}

/** Calls a tool as the operator (no approval), failing the test on a tool error. */
async function call(running: App, name: string, params: unknown): Promise<Record<string, unknown>> {
  const tool = running.tools.find((candidate) => candidate.name === name)
  if (tool === undefined) throw new Error(`no tool ${name}`)
  const outcome = await invokeTool(tool, params, { sessionKey: 'test' }, { policy: 'none' })
  if (!outcome.ok) throw new Error(`${name} failed: ${outcome.error.message}`)
  return outcome.result as Record<string, unknown>
}

/** Waits for the cron run `runId` to end and returns its history row. */
async function runEnd(running: App, runId: string) {
  const ended = await running.cron.scheduler.events.next('run:end', ({ run }) => run.id === runId)
  return ended.run
}

const SCHEDULED = (schedule: string) => `name: nightly
schedule: "${schedule}"
timezone: Europe/Berlin
steps:
  - id: a
    run: echo one
  - id: b
    depends_on: [a]
    run: echo got {{a.result}}
`

describe('createApp: the composition root', () => {
  it('registers a saved workflow with a schedule as a cron job; its runs show in cron history and workflow runs', async () => {
    const running = await start()
    await call(running, 'workflow_save', { name: 'nightly', yaml_content: SCHEDULED('0 3 * * *') })
    const job = await running.cron.get('workflow.nightly')
    expect(job).toMatchObject({
      kind: 'shell',
      schedule: '0 3 * * *',
      timezone: 'Europe/Berlin',
      enabled: true,
    })

    const triggered = await running.cron.trigger('workflow.nightly')
    const ended = await runEnd(running, triggered.runId as string)
    expect(ended.status).toBe('completed')
    const runs = await running.engine.listRuns({ limit: 10 })
    expect(runs).toHaveLength(1)
    expect(runs[0]).toMatchObject({ workflowName: 'nightly', status: 'completed' })
    expect(ended.result).toContain(`run ${runs[0]?.runId}: completed`)
    const snapshot = await running.engine.getRun(runs[0]?.runId as string)
    expect(snapshot?.steps.map((step) => step.result?.trim())).toEqual(['one', 'got one'])

    // Saved again with another schedule: the same job, updated.
    await call(running, 'workflow_save', {
      name: 'nightly',
      yaml_content: SCHEDULED('30 4 * * *'),
      overwrite: true,
    })
    expect(await running.cron.get('workflow.nightly')).toMatchObject({ id: job.id, schedule: '30 4 * * *' })

    // The file removed: the next sync removes the job (its history with it).
    await unlink(join(home, 'workflows', 'nightly.flow.yaml'))
    await running.syncSchedules()
    await expect(running.cron.get('workflow.nightly')).rejects.toMatchObject({ code: 'CRON_JOB_NOT_FOUND' })
  })

  // An outside probe: a saved file rewritten by hand after it was confirmed ran its new steps when an
  // agent triggered its job (a moderate action, asked of nobody), though workflow_run would ask.
  it("a scheduled workflow's file changed since it was scheduled is not run, by trigger or schedule, until it is scheduled again", async () => {
    const running = await start()
    await call(running, 'workflow_save', { name: 'nightly', yaml_content: SCHEDULED('0 3 * * *') })
    const file = join(home, 'workflows', 'nightly.flow.yaml')
    const marker = join(home, 'unconfirmed.txt')
    await writeFile(file, SCHEDULED('0 3 * * *').replace('echo one', `echo unconfirmed > ${marker}`))

    const end = running.cron.scheduler.events.next('run:end', ({ run }) => run.jobName === 'workflow.nightly')
    const triggered = await call(running, 'manage_cron_jobs', { action: 'trigger', id: 'workflow.nightly' })
    expect(triggered).toMatchObject({ message: 'Job triggered' })
    const ended = (await end).run
    expect(ended).toMatchObject({ status: 'failed' })
    expect(ended.error).toContain('the saved workflow nightly changed since it was scheduled')
    expect(ended.error).toContain('--overwrite')
    expect(await running.engine.listRuns({ limit: 10 })).toHaveLength(0)
    await expect(readFile(marker, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' })

    // Scheduled again (a save, or the sync a start runs): what the file holds now runs.
    await running.syncSchedules()
    const again = await running.cron.trigger('workflow.nightly')
    expect((await runEnd(running, again.runId as string)).status).toBe('completed')
    expect((await readFile(marker, 'utf8')).trim()).toBe('unconfirmed')
  })

  it('a shell job named like a scheduled workflow but made by an agent runs its own command', async () => {
    const running = await start()
    await call(running, 'workflow_save', {
      name: 'other',
      yaml_content: SCHEDULED('0 3 * * *').replace('nightly', 'other'),
    })
    await call(running, 'manage_cron_jobs', {
      action: 'create',
      name: 'workflow.nightly',
      type: 'shell',
      scheduleType: 'cron',
      scheduleValue: '0 5 * * *',
      config: { command: 'echo mine' },
    })
    const triggered = await running.cron.trigger('workflow.nightly')
    const ended = await runEnd(running, triggered.runId as string)
    expect(ended).toMatchObject({ status: 'completed', result: 'mine\n' })
    expect(await running.engine.listRuns({ limit: 10 })).toHaveLength(0)
  })

  // Issue 21 (10): a store error while resolving the workflow was swallowed and the placeholder ran.
  it("a saved workflow's schedule whose job cannot be read fails with the reason; its placeholder never passes", async () => {
    const running = await start()
    await call(running, 'workflow_save', { name: 'nightly', yaml_content: SCHEDULED('0 3 * * *') })
    const job = await running.cron.get('workflow.nightly')
    const reached: string[] = []
    const runner = dispatchScheduledWorkflows({
      jobs: { get: () => Promise.reject(new Error('database is locked')) },
      engine: () => running.engine,
      directory: running.directory,
      next: {
        async run(request) {
          reached.push(request.command)
          return { exitCode: 0, stdout: '', stderr: '' }
        },
      },
    })
    const request = { command: job.command ?? '', timeoutMs: 1_000, jobName: job.name, runId: 'r1' }
    await expect(runner.run(request, { signal: new AbortController().signal })).rejects.toThrow(
      'the cron job workflow.nightly could not be read to find its saved workflow: database is locked',
    )
    expect(reached).toEqual([])

    // The placeholder itself, run as a plain shell job, fails and says what it stands for.
    await call(running, 'manage_cron_jobs', {
      action: 'create',
      name: 'placeholder',
      type: 'shell',
      scheduleType: 'cron',
      scheduleValue: '0 5 * * *',
      config: { command: job.command },
    })
    const triggered = await running.cron.trigger('placeholder')
    const ended = await runEnd(running, triggered.runId as string)
    expect(ended.status).toBe('failed')
    expect(ended.error).toContain('this job runs the saved workflow nightly')
  })

  // Issue 21 (12): one failed step of stop() skipped the rest (database and host-run lock left open).
  it('stop() with a broken table still cancels the waiting call, stops the scheduler, closes the database and the host-run lock', async () => {
    const running = await start()
    const runFile = join(home, 'run', `${process.pid}.exec`)
    expect(await readdir(join(home, 'run'))).toContain(`${process.pid}.exec`)
    // A call waits for a person; recording its cancellation, the first part to stop, will fail.
    const waiting = running.approvals
      .gate()
      .request(
        { toolName: 'exec', summary: 'Execute: true', safety: 'dangerous', params: { command: 'true' } },
        { signal: new AbortController().signal },
      )
    await until(async () =>
      (await running.approvals.list({ status: 'pending' })).length === 1 ? true : undefined,
    )
    await running.database.db.schema.dropTable('approvals').execute()
    const stopped = running.stop()
    app = undefined
    await stopped
    expect(running.ready).toBe(false)
    expect(running.cron.scheduler.isRunning).toBe(false)
    await expect(running.database.db.selectFrom('cron_jobs').selectAll().execute()).rejects.toThrow()
    expect(await readdir(join(home, 'run'))).not.toContain(runFile.split('/').at(-1))
    // A second stop() is the same outcome, not a second attempt.
    expect(running.stop()).toBe(stopped)
    expect(await waiting).toBe(false)
  })

  it('with no model configured, an agent job fails with "no model configured" in its history', async () => {
    const running = await start()
    await call(running, 'cron_add', {
      name: 'news',
      schedule_type: 'cron',
      schedule: '0 8 * * *',
      prompt: 'Headlines',
    })
    const triggered = await running.cron.trigger('news')
    const ended = await runEnd(running, triggered.runId as string)
    expect(ended.status).toBe('failed')
    expect(ended.error).toMatch(/no model configured/)
    const history = await call(running, 'cron_history', { job_id: 'news' })
    expect(JSON.stringify(history)).toMatch(/no model configured/)
  })

  it('exec resolves a vault secret for the command, masks it in the result and never writes it under LANGO_HOME', async () => {
    // `lango secrets set` before the server starts: a cheap KDF for the test (stored with the vault).
    const database = new Database(join(home, 'lango.db'))
    const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) })
    await migrateVault(db)
    const vault = await Vault.open(db, { passphrase: PASSPHRASE, kdf: { N: 2 ** 10, r: 8, p: 1 } })
    await vault.set('API_KEY', SECRET)
    await db.destroy()

    const running = await start({ passphrase: PASSPHRASE })
    const result = await call(running, 'exec', { command: 'echo "key={{secret:API_KEY}}"' })
    expect(result.stdout).toBe('key=[secret:API_KEY]\n')
    const listed = await call(running, 'secrets_list', {})
    expect(listed).toEqual({ secrets: [{ name: 'API_KEY', token: '{{secret:API_KEY}}' }], count: 1 })
    await running.stop()
    app = undefined
    for (const file of await readdir(home, { recursive: true, withFileTypes: true })) {
      if (!file.isFile()) continue
      const bytes = await readFile(join(file.parentPath, file.name))
      expect(bytes.includes(SECRET), file.name).toBe(false)
    }
  })

  it('a misspelt secret name is refused before anything runs (EXEC_SECRET_UNKNOWN), in exec and exec_bg (shell jobs share their defaults)', async () => {
    const running = await start({ passphrase: 'correct horse battery staple' })
    await (await running.vault()).set('GITHUB_TOKEN', 'ghp_0123456789abcdef')
    const marker = join(home, 'sent')
    for (const name of ['exec', 'exec_bg']) {
      const tool = running.tools.find((candidate) => candidate.name === name) as never
      const refused = await invokeTool(
        tool,
        { command: `echo {{secret:GITHUB_TOKN}} > ${marker}` },
        {},
        { policy: 'none' },
      )
      expect(refused, name).toMatchObject({
        ok: false,
        error: {
          reason: 'EXEC_SECRET_UNKNOWN',
          message: expect.stringContaining('{{secret:GITHUB_TOKN}} names nothing'),
        },
      })
    }
    await expect(readFile(marker)).rejects.toThrow()
    // The right name runs, masked.
    expect(await call(running, 'exec', { command: 'echo {{secret:GITHUB_TOKEN}}' })).toMatchObject({
      stdout: '[secret:GITHUB_TOKEN]\n',
    })
  })

  it('a secret token with no vault configured is refused, never passed on as its text', async () => {
    const running = await start()
    const exec = running.tools.find((tool) => tool.name === 'exec') as never
    const refused = await invokeTool(exec, { command: 'echo {{secret:API_KEY}}' }, {}, { policy: 'none' })
    expect(refused).toMatchObject({
      ok: false,
      error: {
        message: expect.stringMatching(
          /\{\{secret:API_KEY\}\} needs the secrets vault: set LANGO_PASSPHRASE/,
        ),
      },
    })
    const listed = await invokeTool(running.tools.find((tool) => tool.name === 'secrets_list') as never, {})
    expect(listed).toMatchObject({ ok: false, error: { message: expect.stringMatching(/LANGO_PASSPHRASE/) } })
  })

  it('stop() leaves a running workflow resumable: a new app finishes it without re-running completed steps', async () => {
    const running = await start()
    const marker = join(home, 'count')
    const gate = join(home, 'gate')
    // The second step waits for a gate the test opens only after the stop: it is running when the
    // app stops, however slow the machine.
    const yaml = `name: slow
steps:
  - id: first
    run: echo x >> ${marker}
  - id: second
    depends_on: [first]
    run: while [ ! -f ${gate} ]; do sleep 0.05; done; echo done
`
    const started = await call(running, 'workflow_run', { yaml_content: yaml, wait_seconds: 0 })
    const runId = started.run_id as string
    const deadline = Date.now() + 15_000
    for (;;) {
      const snapshot = await running.engine.getRun(runId)
      if (snapshot?.steps.find((step) => step.stepId === 'second')?.status === 'running') break
      if (Date.now() > deadline) throw new Error('the second step did not start')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    await running.stop()
    app = undefined
    await writeFile(gate, '')
    const again = await start()
    const finished = await again.engine.waitForRun(runId, { timeoutMs: 20_000 })
    expect(finished.status).toBe('completed')
    expect((await readFile(marker, 'utf8')).trim().split('\n')).toEqual(['x'])
  })
})
