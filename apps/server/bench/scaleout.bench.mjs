// Several servers on one database (issue 14), measured as users meet them: real `lango serve`
// processes on loopback, PostgreSQL at 127.0.0.1:5432 (trust auth; a fresh database per part,
// dropped after it). Run after a build (`pnpm bench` builds first). Prints one line per metric:
// `scaleout  <metric>  …  PASS|FAIL|MISS`.
//
// 1. the claim's cost per occurrence — `CronStore.insertRuns` of one `running` row, as the scheduler
//    claims it (with the overlap check, through kysely) — against a bare `INSERT … ON CONFLICT DO
//    NOTHING` of the same row on the same table and pool, alternated in rounds (≤ 2× median);
// 2. occurrences per second sustained by 1 and by 3 servers on PostgreSQL and by 1 on SQLite: 100
//    shell jobs every second for 10 s, each appending a line to its file; duplicates = lines beyond
//    the ledger's completed runs (must be 0);
// 3. failover after kill -9: a workflow run's owner killed mid-step, time until another server
//    owns the run, against the configured lease (≤ lease + 2 s).
//
// The servers share this machine's two cores, so three servers do not add CPU: the figure shows
// that claims across servers cost no throughput, not that more machines add it.

import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { migrateCron, SqliteCronStore } from '@lango/cron/sqlite'
import { createTestJob } from '@lango/cron/testing'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { CLI, median, reporter, startProcess, stopProcess } from './report.mjs'

const ADMIN = { host: '127.0.0.1', port: 5432, database: 'test', user: process.env.PGUSER ?? 'postgres' }
const LEASE_MS = 3_000
const JOBS = Number(process.env.BENCH_SCALEOUT_JOBS ?? 100)
const WINDOW_S = 10
const { report, exit } = reporter('scaleout')

async function admin(statement) {
  const client = new pg.Client(ADMIN)
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

/** A fresh PostgreSQL database: its name and URL; `drop()` removes it. */
async function freshDatabase() {
  const name = `lango_bench_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  await admin(`create database ${name}`)
  return {
    name,
    url: `postgres://${ADMIN.user}@${ADMIN.host}:${ADMIN.port}/${name}`,
    drop: () => admin(`drop database if exists ${name} with (force)`),
  }
}

/** Starts `lango serve --port 0` on a new home with `yaml`; resolves with the child, URL and home. */
async function startServer(yaml, env) {
  const home = await mkdtemp(join(tmpdir(), 'lango-scaleout-'))
  await writeFile(join(home, 'lango.yaml'), yaml)
  const { child, url } = await startProcess(CLI, ['serve', '--port', '0'], {
    LANGO_HOME: home,
    LANGO_LOG_LEVEL: 'warn',
    ...env,
  })
  return {
    child,
    url,
    home,
    async stop(signal = 'SIGTERM') {
      await stopProcess(child, signal)
      await rm(home, { recursive: true, force: true })
    },
  }
}

async function api(server, path, body) {
  const response = await fetch(`${server.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  })
  const json = await response.json()
  if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`)
  return json
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// ------------------------------------------------------------------ 1. the claim's cost

async function claimCost() {
  const database = await freshDatabase()
  const pool = new pg.Pool({ ...ADMIN, database: database.name, max: 1 })
  const db = new Kysely({ dialect: new PostgresDialect({ pool }) })
  try {
    await migrateCron(db)
    const store = new SqliteCronStore(db)
    // One job per claim: each claim's overlap check finds no running row and wins, as in steady state.
    const jobs = []
    for (let i = 0; i < 2_000; i++) {
      const job = createTestJob({ name: `claim-${i}`, overlap: 'skip' })
      await store.insertJob(job)
      jobs.push(job)
    }
    let at = 1_000_000
    const row = (id, job) => ({
      id,
      jobId: job.id,
      jobName: job.name,
      trigger: 'schedule',
      status: 'running',
      scheduledFor: at++,
      startedAt: at,
      completedAt: null,
      skipReason: null,
      owner: 'bench',
      exclusive: { skipReason: 'skipped: the previous occurrence is still running' },
    })
    const claim = async (i) => {
      const { inserted } = await store.insertRuns([row(`c${i}`, jobs[i % jobs.length])])
      if (!inserted.has(`c${i}`)) throw new Error('the claim did not win')
    }
    const bare = async (i) => {
      const r = row(`b${i}`, jobs[i % jobs.length])
      await pool.query(
        `insert into cron_runs (id, job_id, job_name, trigger, status, scheduled_for, started_at, owner)
         values ($1, $2, $3, $4, $5, $6, $7, $8) on conflict (job_id, scheduled_for) do nothing`,
        [r.id, r.jobId, r.jobName, r.trigger, r.status, r.scheduledFor, r.startedAt, r.owner],
      )
    }
    const claimTimes = []
    const bareTimes = []
    let n = 0
    for (let round = 0; round < 20; round++) {
      for (const [fn, times] of [
        [claim, claimTimes],
        [bare, bareTimes],
      ]) {
        const start = performance.now()
        for (let i = 0; i < 100; i++) await fn(n + i)
        times.push((performance.now() - start) / 100)
      }
      n += 100
    }
    const claimUs = median(claimTimes.slice(2)) * 1000
    const bareUs = median(bareTimes.slice(2)) * 1000
    const ratio = claimUs / bareUs
    report(
      'claim per occurrence (PostgreSQL)',
      `${claimUs.toFixed(0)} µs vs bare INSERT … ON CONFLICT ${bareUs.toFixed(0)} µs = ${ratio.toFixed(2)}×  target ≤ 2×`,
      ratio <= 2,
      { noisy: true },
    )
  } finally {
    await db.destroy()
    await database.drop()
  }
}

// ------------------------------------------------------------------ 2. occurrences per second

/** Runs `count` servers on `env`'s database, 100 jobs every second; returns occurrences/s and duplicates. */
async function throughput(label, count, env, query) {
  const yaml = `cluster: { lease: ${LEASE_MS / 1000}s }\ncron: { min_interval: 1s, max_concurrent_jobs: ${Math.min(JOBS, 100)} }\n`
  const servers = []
  const dir = await mkdtemp(join(tmpdir(), 'lango-scaleout-ticks-'))
  try {
    for (let i = 0; i < count; i++) servers.push(await startServer(yaml, env))
    for (let i = 0; i < JOBS; i++) {
      await api(servers[0], '/api/cron/jobs', {
        kind: 'shell',
        name: `tick-${i}`,
        schedule_type: 'every',
        schedule: '1s',
        command: `echo x >> ${join(dir, `tick-${i}.log`)}`,
      })
    }
    // Every server has armed every job (the job sync runs every 2 s), then the window opens.
    await sleep(3_000)
    const from = Date.now()
    await sleep(WINDOW_S * 1000)
    const to = Date.now()
    await query('update cron_jobs set enabled = 0')
    await sleep(2_000)
    const rows = await query('select job_name, scheduled_for, status, owner from cron_runs')
    const inWindow = rows.filter((row) => Number(row.scheduled_for) >= from && Number(row.scheduled_for) < to)
    const completed = inWindow.filter((row) => row.status === 'completed').length
    const allCompleted = rows.filter((row) => row.status === 'completed').length
    let lines = 0
    for (let i = 0; i < JOBS; i++) {
      const file = join(dir, `tick-${i}.log`)
      if (existsSync(file)) lines += readFileSync(file, 'utf8').split('\n').filter(Boolean).length
    }
    const duplicates = lines - allCompleted
    const owners = new Set(inWindow.map((row) => row.owner)).size
    const perSecond = completed / ((to - from) / 1000)
    const skipped = inWindow.filter((row) => row.status === 'skipped').length
    report(
      `occurrences/s, ${label}`,
      `${perSecond.toFixed(1)}/s of ${JOBS}/s due (${skipped} skipped, ${owners} server(s) claiming), duplicates ${duplicates}`,
      duplicates === 0 && perSecond >= JOBS * 0.95,
    )
    return perSecond
  } finally {
    await Promise.all(servers.map((server) => server.stop()))
    await rm(dir, { recursive: true, force: true })
  }
}

async function pgThroughput(count) {
  const database = await freshDatabase()
  const pool = new pg.Pool({ ...ADMIN, database: database.name, max: 1 })
  try {
    return await throughput(
      `${count} server${count === 1 ? '' : 's'} on PostgreSQL`,
      count,
      { LANGO_DATABASE_URL: database.url },
      async (text) => (await pool.query(text)).rows,
    )
  } finally {
    await pool.end()
    await database.drop()
  }
}

async function sqliteThroughput() {
  const Database = (await import('better-sqlite3')).default
  const home = await mkdtemp(join(tmpdir(), 'lango-scaleout-sqlite-'))
  const file = join(home, 'lango.db')
  let db
  try {
    return await throughput(
      '1 server on SQLite',
      1,
      { LANGO_DATABASE_URL: `sqlite:${file}` },
      async (text) => {
        db ??= new Database(file)
        const statement = db.prepare(text)
        if (statement.reader) return statement.all()
        statement.run()
        return []
      },
    )
  } finally {
    db?.close()
    await rm(home, { recursive: true, force: true })
  }
}

// ------------------------------------------------------------------ 3. failover

async function failover() {
  const database = await freshDatabase()
  const pool = new pg.Pool({ ...ADMIN, database: database.name, max: 1 })
  const yaml = `cluster: { lease: ${LEASE_MS / 1000}s }\n`
  const env = { LANGO_DATABASE_URL: database.url }
  const a = await startServer(yaml, env)
  const b = await startServer(yaml, env)
  try {
    const aId = (await api(a, '/healthz')).instance
    const yamlFlow = ['name: failover', 'steps:', '  - id: slow', '    run: "sleep 30"'].join('\n')
    const { run_id: runId } = await api(a, '/api/workflows/runs', { yaml_content: yamlFlow, wait_seconds: 0 })
    for (;;) {
      const { rows } = await pool.query(
        "select 1 from workflow_step_runs where run_id = $1 and status = 'running'",
        [runId],
      )
      if (rows.length === 1) break
      await sleep(20)
    }
    // Killed one heartbeat after it renewed, on average: half a third of a lease into it.
    await sleep(LEASE_MS / 6)
    const killedAt = performance.now()
    await a.stop('SIGKILL')
    let tookMs
    for (;;) {
      const { rows } = await pool.query('select owner from workflow_runs where id = $1', [runId])
      if (rows[0]?.owner !== aId) {
        tookMs = performance.now() - killedAt
        break
      }
      if (performance.now() - killedAt > LEASE_MS * 5) throw new Error('the run was never taken over')
      await sleep(20)
    }
    report(
      'failover after kill -9 (workflow run)',
      `${(tookMs / 1000).toFixed(2)} s with a ${LEASE_MS / 1000} s lease  target ≤ lease + 2 s`,
      tookMs <= LEASE_MS + 2_000,
    )
  } finally {
    await a.stop('SIGKILL')
    await b.stop()
    await pool.end()
    await database.drop()
  }
}

await claimCost()
const one = await pgThroughput(1)
const three = await pgThroughput(3)
await sqliteThroughput()
console.log(
  `scaleout  3 servers / 1 server on PostgreSQL: ${(three / one).toFixed(2)}× (one machine's two cores: no added CPU)`,
)
await failover()
exit()
