/**
 * Several real `lango serve` processes on one PostgreSQL (issue 14): each cron occurrence runs once
 * cluster-wide, a killed server's workflow run is finished by another, a stalled owner cannot write
 * after a takeover, and only one server polls a Telegram bot token. PostgreSQL at 127.0.0.1:5432
 * (trust auth), as CI provides it; a fresh database per test, dropped after it.
 */
import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { type FakeTelegram, startFakeTelegram } from './fixtures/fake-telegram.js'
import { until } from './fixtures/http-server.js'
import { startLangoServe } from './fixtures/lango-serve.js'

const ADMIN = { host: '127.0.0.1', port: 5432, database: 'test', user: process.env.PGUSER ?? 'postgres' }
/** The lease every server of these tests uses: takeovers come within it and a third. */
const LEASE_MS = 3_000

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

interface Server {
  readonly child: ChildProcess
  readonly url: string
  readonly home: string
  /** The server process: `child` itself, or the server its supervisor started (secrets in its environment). */
  readonly pid: number
}

const reachable = await (async () => {
  const client = new pg.Client(ADMIN)
  try {
    await client.connect()
    return undefined
  } catch (error) {
    return (error as Error).message
  } finally {
    await client.end().catch(() => {})
  }
})()

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
})

async function admin(statement: string): Promise<void> {
  const client = new pg.Client(ADMIN)
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

/** A fresh database for one test, its URL, and a pool on it for the test's own queries. */
async function freshDatabase(): Promise<{ url: string; pool: pg.Pool }> {
  const name = `lango_cluster_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  await admin(`create database ${name}`)
  const pool = new pg.Pool({ ...ADMIN, database: name, max: 2 })
  // Dropping the database `with (force)` ends a client the pool is still closing: not a test failure.
  pool.on('error', () => {})
  cleanups.push(async () => {
    await pool.end()
    await admin(`drop database if exists ${name} with (force)`)
  })
  return { url: `postgres://${ADMIN.user}@${ADMIN.host}:${ADMIN.port}/${name}`, pool }
}

/** Starts `count` servers, each on its own home with `yaml` as its lango.yaml, all on `url`. */
async function startServers(
  count: number,
  url: string,
  yaml: string,
  env: Record<string, string> = {},
): Promise<Server[]> {
  const servers: Server[] = []
  for (let index = 0; index < count; index++) {
    const home = await mkdtemp(join(tmpdir(), 'lango-cluster-'))
    await writeFile(join(home, 'lango.yaml'), yaml)
    const started = await startLangoServe(home, { LANGO_DATABASE_URL: url, ...env })
    const server = { ...started, home }
    cleanups.push(async () => {
      if (server.child.exitCode === null && server.child.signalCode === null) {
        const exited = new Promise((resolve) => server.child.once('exit', resolve))
        for (const pid of new Set([server.pid, server.child.pid as number])) {
          signal(pid, 'SIGCONT')
          signal(pid, 'SIGKILL')
        }
        await exited
      }
      await rm(home, { recursive: true, force: true })
    })
    servers.push(server)
  }
  return servers
}

async function api(server: Server, path: string, body?: unknown): Promise<Json> {
  const response = await fetch(`${server.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  })
  const json = (await response.json()) as Json
  if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`)
  return json
}

/**
 * The server's /healthz body whatever its status: a server just resumed from SIGSTOP answers 503
 * `stalled` (its scheduler tick is stale) until its next tick, with the same body.
 */
async function health(server: Server): Promise<Json> {
  const response = await fetch(`${server.url}/healthz`)
  return (await response.json()) as Json
}

/** Signals the server process; SIGKILL resolves once its supervisor (or itself) has exited. */
function kill(server: Server, name: NodeJS.Signals): Promise<void> {
  const exited = new Promise<void>((resolve) => server.child.once('exit', () => resolve()))
  signal(server.pid, name)
  return name === 'SIGKILL' ? exited : Promise.resolve()
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name)
  } catch {
    // Gone already.
  }
}

/** True while `pid` runs (a zombie waiting for its parent to reap it counts as gone). */
async function running(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined)
  return stat !== undefined && !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))
}

async function linesOf(file: string): Promise<string[]> {
  if (!existsSync(file)) return []
  return (await readFile(file, 'utf8')).split('\n').filter((line) => line !== '')
}

const CLUSTER_YAML = `cluster: { lease: ${LEASE_MS / 1000}s }\n`

describe.skipIf(reachable !== undefined)(
  `several lango serve processes on one PostgreSQL${reachable === undefined ? '' : ` — SKIPPED: ${reachable}`}`,
  () => {
    it('three servers, 50 jobs firing every second for 30 s: every occurrence is in the ledger once and ran once', async () => {
      const { url, pool } = await freshDatabase()
      const servers = await startServers(
        3,
        url,
        `${CLUSTER_YAML}cron: { min_interval: 1s, max_concurrent_jobs: 50 }\n`,
      )
      const dir = await mkdtemp(join(tmpdir(), 'lango-cluster-ticks-'))
      cleanups.push(() => rm(dir, { recursive: true, force: true }))
      // Created through the first server only: the others learn of the jobs from the database and
      // race it for every occurrence.
      for (let index = 0; index < 50; index++) {
        await api(servers[0] as Server, '/api/cron/jobs', {
          kind: 'shell',
          name: `tick-${index}`,
          schedule_type: 'every',
          schedule: '1s',
          command: `echo x >> ${join(dir, `tick-${index}.log`)}`,
        })
      }
      await new Promise((resolve) => setTimeout(resolve, 30_000))
      // Stop firing: each scheduler drops a disabled job when it next comes due.
      const disabledAt = Date.now()
      await pool.query('update cron_jobs set enabled = 0')
      // Then wait until the ledger is settled: no run left running, and no new row for three seconds
      // (every scheduler has seen the jobs disabled).
      let settled = { rows: -1, since: Date.now() }
      await until(
        async () => {
          const { rows } = await pool.query<{ total: string; open: string }>(
            "select count(*) as total, count(*) filter (where status = 'running') as open from cron_runs",
          )
          const total = Number(rows[0]?.total)
          if (total !== settled.rows) settled = { rows: total, since: Date.now() }
          return Number(rows[0]?.open) === 0 && Date.now() - settled.since >= 3_000 ? true : undefined
        },
        60_000,
        'the ledger to settle after the jobs were disabled',
      )

      const { rows } = await pool.query<{
        job_name: string
        scheduled_for: string
        status: string
        owner: string
        skip_reason: string | null
      }>(
        'select job_name, scheduled_for, status, owner, skip_reason from cron_runs order by job_name, scheduled_for',
      )
      const created = new Map(
        (
          await pool.query<{ name: string; created_at: string }>('select name, created_at from cron_jobs')
        ).rows.map((row) => [row.name, Number(row.created_at)]),
      )
      const owners = new Set(rows.map((row) => row.owner))
      for (let index = 0; index < 50; index++) {
        const name = `tick-${index}`
        const mine = rows.filter((row) => row.job_name === name)
        const times = mine.map((row) => Number(row.scheduled_for))
        // The window this job's schedule covered, from what the servers recorded: it starts at the
        // job's first occurrence, a second after it was created, and every occurrence from there to
        // the last has its row (none missed, none twice). On a loaded machine a late scheduler
        // records what it missed as skipped, with its reason; only the count of runs varies.
        expect(times[0], name).toBe((created.get(name) as number) + 1_000)
        for (let i = 1; i < times.length; i++)
          expect((times[i] as number) - (times[i - 1] as number), name).toBe(1_000)
        // …and it reaches the end of the 30 s: the schedulers kept firing until the jobs were
        // disabled (a few seconds of slack for a scheduler that was late then).
        expect(times.at(-1) as number, name).toBeGreaterThan(disabledAt - 10_000)
        for (const row of mine) {
          expect(['completed', 'skipped']).toContain(row.status)
          if (row.status === 'skipped') expect(row.skip_reason).toBeTruthy()
        }
        // Each completed occurrence ran its command once.
        const completed = mine.filter((row) => row.status === 'completed').length
        expect(completed, name).toBeGreaterThan(0)
        expect(await linesOf(join(dir, `${name}.log`))).toHaveLength(completed)
      }
      // The other servers won some of the races (about 1,500 of them): they did take part.
      expect(owners.size).toBeGreaterThanOrEqual(2)
      for (const server of servers) expect((await api(server, '/healthz')).status).toBe('ok')
    }, 180_000)

    it('kill -9 of the server running a workflow: another finishes the run within the lease and a few seconds, completed steps not run again', async () => {
      const { url, pool } = await freshDatabase()
      const [a, b] = (await startServers(2, url, CLUSTER_YAML)) as [Server, Server]
      const dir = await mkdtemp(join(tmpdir(), 'lango-cluster-flow-'))
      cleanups.push(() => rm(dir, { recursive: true, force: true }))
      const marks = join(dir, 'marks')
      const pids = join(dir, 'pids')
      const yaml = [
        'name: failover',
        'steps:',
        '  - id: first',
        `    run: "echo first >> ${marks}"`,
        '  - id: slow',
        '    depends_on: [first]',
        // The first attempt (on the server to be killed) would sleep a minute; the re-run, 2 s.
        `    run: "if [ -s ${pids} ]; then echo $$ >> ${pids}; exec sleep 2; fi; echo $$ >> ${pids}; exec sleep 60"`,
        '  - id: last',
        '    depends_on: [slow]',
        `    run: "echo last >> ${marks}"`,
      ].join('\n')
      const started = await api(a, '/api/workflows/runs', { yaml_content: yaml, wait_seconds: 0 })
      const runId = started.run_id as string
      await until(
        async () => {
          const { rows } = await pool.query(
            "select 1 from workflow_step_runs where run_id = $1 and step_id = 'slow' and status = 'running'",
            [runId],
          )
          return rows.length === 1 || undefined
        },
        15_000,
        'the slow step to run on the first server',
      )
      await until(
        async () => ((await linesOf(pids)).length > 0 ? true : undefined),
        15_000,
        'the step to start',
      )
      await kill(a, 'SIGKILL')
      // Issue 21 (6): the killed server's copy of the step does not go on beside the re-run.
      const [firstAttempt] = await linesOf(pids)
      await until(
        async () => ((await running(Number(firstAttempt))) ? undefined : true),
        15_000,
        "the killed server's step to end with it",
      )
      const finished = await until(
        async () => {
          const status = await api(b, `/api/workflows/runs/${runId}`)
          return status.status === 'completed' ? status : undefined
        },
        LEASE_MS + 15_000,
        'the run to complete on the second server',
      )
      expect(finished.status).toBe('completed')
      expect(await linesOf(marks)).toEqual(['first', 'last'])
      const { rows } = await pool.query<{ owner: string }>('select owner from workflow_runs where id = $1', [
        runId,
      ])
      expect(rows[0]?.owner).toBe((await api(b, '/healthz')).instance)
    }, 60_000)

    it('SIGSTOP of a workflow owner past its lease: another takes over; after SIGCONT the stalled one writes nothing and nothing runs twice', async () => {
      const { url, pool } = await freshDatabase()
      const [a, b] = (await startServers(2, url, CLUSTER_YAML)) as [Server, Server]
      const bId = (await api(b, '/healthz')).instance as string
      const dir = await mkdtemp(join(tmpdir(), 'lango-cluster-fence-'))
      cleanups.push(() => rm(dir, { recursive: true, force: true }))
      const marks = join(dir, 'marks')
      const gate = join(dir, 'gate')
      const pids = join(dir, 'pids')
      const yaml = [
        'name: fenced',
        'steps:',
        '  - id: first',
        `    run: "echo first >> ${marks}"`,
        '  - id: gated',
        '    depends_on: [first]',
        `    run: "echo $$ >> ${pids}; while [ ! -f ${gate} ]; do sleep 0.1; done; echo gated >> ${marks}"`,
        '  - id: last',
        '    depends_on: [gated]',
        `    run: "echo last >> ${marks}"`,
      ].join('\n')
      const runId = (await api(a, '/api/workflows/runs', { yaml_content: yaml, wait_seconds: 0 }))
        .run_id as string
      const stepRunning = (owner?: string) => async () => {
        const { rows } = await pool.query<{ owner: string }>(
          `select r.owner from workflow_step_runs s join workflow_runs r on r.id = s.run_id
           where s.run_id = $1 and s.step_id = 'gated' and s.status = 'running'`,
          [runId],
        )
        return (rows.length === 1 && (owner === undefined || rows[0]?.owner === owner)) || undefined
      }
      await until(stepRunning(), 15_000, 'the gated step to run on the first server')
      await until(
        async () => ((await linesOf(pids)).length > 0 ? true : undefined),
        15_000,
        "the first server's copy of the step to start",
      )
      const [stalledCopy] = await linesOf(pids)
      await kill(a, 'SIGSTOP')
      await until(stepRunning(bId), LEASE_MS * 5, 'the second server to take the run over')
      await kill(a, 'SIGCONT')
      // The resumed server finds its lease lost at its next heartbeat and stops its copy of the step;
      // only then does the gate open, so that copy can never write.
      await until(
        async () => ((await running(Number(stalledCopy))) ? undefined : true),
        LEASE_MS * 5,
        'the resumed server to stop its copy of the step',
      )
      await writeFile(gate, '')
      const finished = await until(
        async () => {
          const status = await api(b, `/api/workflows/runs/${runId}`)
          return status.status === 'completed' ? status : undefined
        },
        15_000,
        'the run to complete',
      )
      expect(finished.status).toBe('completed')
      await new Promise((resolve) => setTimeout(resolve, 500))
      expect(await linesOf(marks)).toEqual(['first', 'gated', 'last'])
      const { rows } = await pool.query<{ owner: string; status: string }>(
        'select owner, status from workflow_runs where id = $1',
        [runId],
      )
      expect(rows[0]).toEqual({ owner: bId, status: 'completed' })
      // The stalled server lives on, serving (once its next scheduler tick has run).
      await until(
        async () => ((await health(a)).status === 'ok' ? true : undefined),
        15_000,
        'a healthy again',
      )
    }, 60_000)

    // Issue 21 (4): on SIGCONT the stalled holder polled again before its renewal round noticed the
    // loss; Telegram ended the new holder's poll with 409 and the cluster never polled again.
    it('Telegram: a holder stalled past its lease polls no more when it resumes; the new holder keeps receiving', async () => {
      const { url } = await freshDatabase()
      const telegram: FakeTelegram = await startFakeTelegram({ conflicts: true })
      cleanups.push(() => telegram.close())
      const servers = await startServers(2, url, CLUSTER_YAML, {
        LANGO_TELEGRAM_TOKEN: telegram.token,
        LANGO_TELEGRAM_API_URL: telegram.url,
        LANGO_TELEGRAM_ALLOWED_CHATS: '42',
      })
      const holds = async (server: Server): Promise<boolean> =>
        ((await health(server)).leases as Json[]).some((lease) =>
          String(lease.name).startsWith('receive:telegram-bot:'),
        )
      const [first, second] = servers as [Server, Server]
      const holder = await until(
        async () => ((await holds(first)) ? first : (await holds(second)) ? second : undefined),
        15_000,
        'a server to hold the poll lease',
      )
      const other = holder === first ? second : first
      await until(async () => telegram.openPolls === 1 || undefined, 15_000, 'one open long poll')

      await kill(holder, 'SIGSTOP')
      // A deadline, not a window: beside two busy loops the takeover took longer than six leases.
      await until(
        async () => ((await holds(other)) ? true : undefined),
        45_000,
        'the other to take the lease',
      )
      const pollsBefore = telegram.callsOf('getUpdates').length
      await until(
        async () => (telegram.callsOf('getUpdates').length > pollsBefore + 1 ? true : undefined),
        15_000,
        'the new holder to poll',
      )
      await kill(holder, 'SIGCONT')
      // The resumed server's next renewal round finds the lease lost (a third of a lease at most).
      await until(
        async () => ((await holds(holder)) ? undefined : true),
        LEASE_MS * 5,
        'the resumed one to let go',
      )
      telegram.pushMessage({ chatId: 42, userId: 7, text: 'still there?' })
      await telegram.waitFor('sendMessage', (call) => String(call.payload.chat_id) === '42', 15_000)
      expect(await holds(other)).toBe(true)
      expect(telegram.conflicts).toBe(0)
    }, 120_000)

    it('Telegram: only the holder of the bot token lease polls; when it is killed another takes the lease once it runs out and polls, never two at once', async () => {
      const { url, pool } = await freshDatabase()
      const telegram: FakeTelegram = await startFakeTelegram()
      cleanups.push(() => telegram.close())
      const servers = await startServers(2, url, CLUSTER_YAML, {
        LANGO_TELEGRAM_TOKEN: telegram.token,
        LANGO_TELEGRAM_API_URL: telegram.url,
      })
      const holderOf = async (): Promise<Server | undefined> => {
        const holders: Server[] = []
        for (const server of servers) {
          if (server.child.exitCode !== null || server.child.signalCode !== null) continue
          const body = await health(server)
          if ((body.leases as Json[]).some((lease) => String(lease.name).startsWith('receive:telegram-bot:')))
            holders.push(server)
        }
        expect(holders.length).toBeLessThanOrEqual(1)
        return holders[0]
      }
      /** The poll lease's row as the database holds it. */
      const leaseRow = async () => {
        const { rows } = await pool.query<{
          owner: string
          version: string
          acquired_at: string
          expires_at: string
        }>(
          "select owner, version, acquired_at, expires_at from leases where name like 'receive:telegram-bot:%'",
        )
        const row = rows[0]
        return row === undefined
          ? undefined
          : {
              owner: row.owner,
              version: Number(row.version),
              acquiredAt: Number(row.acquired_at),
              expiresAt: Number(row.expires_at),
            }
      }
      const holder = await until(holderOf, 15_000, 'a server to hold the poll lease')
      await until(async () => telegram.openPolls === 1 || undefined, 15_000, 'one open long poll')
      // Three renewals later the same server still holds it, and still alone polls.
      const renewals = new Set<number>()
      await until(
        async () => {
          const row = await leaseRow()
          if (row !== undefined) renewals.add(row.expiresAt)
          return renewals.size > 3 ? true : undefined
        },
        LEASE_MS * 5,
        'three renewals of the poll lease',
      )
      expect(telegram.maxOpenPolls).toBe(1)
      expect(await holderOf()).toBe(holder)

      await kill(holder, 'SIGKILL')
      const lost = await leaseRow()
      // The other server takes the lease once it runs out (within a lease and a third); the deadline
      // leaves a loaded machine ample room.
      const next = await until(holderOf, LEASE_MS * 6, 'the other server to take the poll lease')
      await until(async () => telegram.openPolls === 1 || undefined, 15_000, 'the other server to poll')
      expect(next).not.toBe(holder)
      expect(telegram.maxOpenPolls).toBe(1)
      // As the database recorded it: taken over with the next version, only after the killed
      // holder's lease had run out.
      const taken = await leaseRow()
      expect(taken?.owner).toBe((await api(next as Server, '/healthz')).instance)
      expect(taken?.version).toBe((lost?.version as number) + 1)
      expect(taken?.acquiredAt).toBeGreaterThan(lost?.expiresAt as number)
    }, 60_000)
  },
)
