import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { CLI, startLangoServe } from './fixtures/lango-serve.js'

// kill -9 of a real `lango serve` during a workflow run and during a cron run, then a restart on
// the same LANGO_HOME (issue 12, "Restart"). Runs the built CLI (`pnpm test` builds first).

let home: string
let servers: ChildProcess[] = []

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error('build @lango/server before running this test')
})
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'lango-restart-'))
})
afterEach(async () => {
  for (const server of servers)
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL')
  servers = []
  await rm(home, { recursive: true, force: true })
})

async function startServer() {
  const server = await startLangoServe(home)
  servers.push(server.child)
  return server
}

function killHard(child: ChildProcess): Promise<void> {
  return stopWith(child, 'SIGKILL')
}

function stopWith(child: ChildProcess, signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill(signal)
  return exited
}

async function api(url: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const json = (await response.json()) as Record<string, unknown>
  if (!response.ok) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(json)}`)
  return json
}

/** True while `pid` runs (a zombie waiting for a reaper counts as gone). */
async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined)
  return stat !== undefined && !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))
}

/** The orphan reapers `pid` started (`/bin/sh -c … lango-reaper …`, see @lango/exec). */
async function reapersOf(pid: number): Promise<number[]> {
  const found: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '')
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    const command = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')
    if (parent === pid && command.split('\0').includes('lango-reaper')) found.push(Number(entry))
  }
  return found
}

async function pidsIn(file: string): Promise<number[]> {
  return (await readFile(file, 'utf8').catch(() => '')).split(/\s+/).filter(Boolean).map(Number)
}

describe('kill -9 or stop, and restart (real lango serve processes)', () => {
  it('a workflow run resumes without re-running its completed step, and the killed step leaves no process', async () => {
    const first = await startServer()
    const count = join(home, 'count')
    const pids = join(home, 'pids')
    const gate = join(home, 'gate')
    // The second step waits for a gate opened only after the restart: the killed server's copy of
    // it is still running when the server dies, however slow the machine.
    const yaml = `name: survive
steps:
  - id: first
    run: echo ran >> ${count}
  - id: second
    depends_on: [first]
    run: echo $$ >> ${pids}; while [ ! -f ${gate} ]; do sleep 0.05; done; echo done
`
    const started = await api(first.url, '/api/workflows/runs', { yaml_content: yaml, wait_seconds: 0 })
    const runId = started.run_id as string
    await waitFor(async () => (await pidsIn(pids)).length > 0, {
      timeoutMs: 30_000,
      intervalMs: 50,
      what: 'the second step to start',
    })
    // The server's orphan reaper (issue 21.6) would kill the step as the server dies; kill the
    // reaper first, as a kill of the whole group could, so that only the next server can.
    const reapers = await reapersOf(first.pid)
    expect(reapers).toHaveLength(1)
    for (const reaper of reapers) process.kill(reaper, 'SIGKILL')
    await killHard(first.child)
    const [orphan] = await pidsIn(pids)
    expect(await alive(orphan as number)).toBe(true) // nothing could clean up yet

    const second = await startServer()
    // The new server killed what the dead one left running before it resumed the run.
    expect(await alive(orphan as number)).toBe(false)
    await writeFile(gate, '')
    const finished = await waitFor(
      async () => {
        const run = await api(second.url, `/api/workflows/runs/${runId}`)
        return run.status === 'completed' ? run : undefined
      },
      { timeoutMs: 30_000, intervalMs: 50, what: 'the resumed run to complete' },
    )
    expect(finished.status).toBe('completed')
    expect((await readFile(count, 'utf8')).trim().split('\n')).toEqual(['ran'])
    expect(await pidsIn(pids)).toHaveLength(2) // the second step ran again, once
  })

  it('a cron run killed mid-way shows interrupted after the restart, and its command is gone', async () => {
    const first = await startServer()
    const pids = join(home, 'cron-pids')
    await api(first.url, '/api/cron/jobs', {
      kind: 'shell',
      name: 'long',
      schedule_type: 'cron',
      schedule: '0 3 * * *',
      command: `echo $$ >> ${pids}; sleep 30`,
    })
    await api(first.url, '/api/cron/jobs/long/trigger', {})
    await waitFor(async () => (await pidsIn(pids)).length > 0, {
      timeoutMs: 30_000,
      intervalMs: 50,
      what: 'the cron command to start',
    })
    await killHard(first.child)
    const [orphan] = await pidsIn(pids)

    const second = await startServer()
    expect(await alive(orphan as number)).toBe(false)
    const history = await api(second.url, '/api/cron/runs?job=long')
    const entries = history.entries as Array<Record<string, unknown>>
    expect(entries).toHaveLength(1)
    expect(entries[0]).toMatchObject({ status: 'interrupted', trigger: 'manual' })
  })

  // An outside probe: the cron run that started a scheduled workflow was recorded interrupted while
  // the engine resumed its workflow run, so the job's overlap policy (skip) no longer saw it and the
  // next occurrence started a second run beside the resumed one.
  // SIGTERM too (outside probe): the cron run's stop cancelled the workflow run, so a clean stop lost it
  // (recorded cancelled, nothing resumed, nothing reported), where the README says it is resumed.
  it.each([
    ['killed (SIGKILL)', 'SIGKILL'],
    ['stopped (SIGTERM)', 'SIGTERM'],
  ] as const)(
    "a scheduled workflow's run its server %s mid-way is resumed and taken over by its cron job: no second run starts beside it",
    async (_how, stopSignal) => {
      const first = await startServer()
      const pids = join(home, 'wf-pids')
      const gate = join(home, 'wf-gate')
      const yaml = `name: slow
schedule: "0 3 * * *"
steps:
  - id: wait
    run: echo $$ >> ${pids}; while [ ! -f ${gate} ]; do sleep 0.05; done; echo waited
`
      const saved = await fetch(`${first.url}/api/workflows/saved/slow`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ yaml_content: yaml }),
      })
      expect(saved.status).toBe(200)
      const started = await api(first.url, '/api/cron/jobs/workflow.slow/trigger', {})
      const firstCronRun = started.run_id as string
      await waitFor(async () => (await pidsIn(pids)).length > 0, {
        timeoutMs: 30_000,
        intervalMs: 50,
        what: 'the workflow step to start',
      })
      await stopWith(first.child, stopSignal)

      const second = await startServer()
      // The engine resumed the run: its step runs again.
      await waitFor(async () => (await pidsIn(pids)).length > 1, {
        timeoutMs: 30_000,
        intervalMs: 50,
        what: 'the resumed step to start',
      })
      // The next occurrence (here triggered) must not start a second run beside the resumed one: the
      // job's run that took it over holds the overlap policy.
      const next = await fetch(`${second.url}/api/cron/jobs/workflow.slow/trigger`, { method: 'POST' })
      expect(((await next.json()) as { error?: { message?: string } }).error?.message).toContain(
        'overlap: the previous run of this job is still in progress',
      )
      const runsWhileWaiting = (await api(second.url, '/api/workflows/runs')).runs as Array<
        Record<string, unknown>
      >
      await writeFile(gate, '')
      const resumedId = runsWhileWaiting[runsWhileWaiting.length - 1]?.run_id as string
      const cronRuns = await waitFor(
        async () => {
          const history = (await api(second.url, '/api/cron/runs?job=workflow.slow')).entries as Array<
            Record<string, unknown>
          >
          return history.length > 1 && history.every((entry) => entry.status !== 'running')
            ? history
            : undefined
        },
        { timeoutMs: 30_000, intervalMs: 50, what: 'the cron runs to end' },
      )
      const runs = (await api(second.url, '/api/workflows/runs')).runs as Array<Record<string, unknown>>
      expect(runs).toHaveLength(1)
      expect(runs[0]).toMatchObject({ run_id: resumedId, status: 'completed' })
      expect(await pidsIn(pids)).toHaveLength(2)
      expect(cronRuns.find((entry) => entry.id === firstCronRun)).toMatchObject({ status: 'interrupted' })
      // A run of the job took the resumed run over and reports it.
      const reporting = cronRuns.filter((entry) => entry.status === 'completed')
      expect(reporting).toHaveLength(1)
      expect(reporting[0]?.result).toContain(`run ${resumedId}: completed`)
      expect(reporting[0]?.result).toContain('taken over')
    },
  )
})
