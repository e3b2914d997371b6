// Several servers against the best peer (issue 21), measured as users meet them: real `lango serve`
// processes and real graphile-worker 0.17.3 processes on loopback, PostgreSQL at 127.0.0.1:5432
// (trust auth; a fresh database for every round, dropped after it). Run after a build (`pnpm bench`
// builds first). Prints one line per metric: `burst  <metric>  …  PASS|FAIL|MISS`.
//
// 1. a burst of 500 one-shot shell jobs on 3 processes, lango against graphile-worker side by side:
//    - lango: 3 `lango serve` (cron.max_concurrent_jobs 8, the exec cap's 8), 500 `at` jobs due at
//      one instant T, created beforehand through the HTTP API;
//    - graphile-worker: 3 worker processes × concurrency 8 (bench/fixtures/graphile-worker.mjs), the
//      same 500 jobs added at T in one `addJobs` call, each run by a task that spawns `/bin/sh -c`.
//    Every job runs `date +%s%N >> starts`: its start is read from the shell's own clock against T.
//    Reported: start latency p50/p99, throughput (jobs per second from the first completion to the
//    last: lango's ledger `completed_at`, graphile's `job:complete` event) and CPU per job (user +
//    system CPU of the three processes from /proc/<pid>/stat, from 1 s before T until the last
//    completion, divided by the jobs; the shells themselves are not counted, the database's CPU is
//    shown apart), each as a lango/graphile ratio, and, for information, where that CPU goes by
//    thread (the main thread's user and system time, the other threads'). Each side first runs an
//    unmeasured burst of 100 the same way (the JIT warm, as in a server that has been up a while).
//    Rounds alternate the two; medians are reported.
// 2. 1 server against 3 at the same load: 100 shell jobs every second for 10 s, default limits; the
//    share of the occurrences due in the window that completed (3 must complete at least as large a
//    share as 1; an occurrence with no row counts as due and not completed) and duplicates
//    (lines the jobs wrote beyond the ledger's completed runs: must be 0). Rounds alternate.
//
// The processes share this machine's two cores (and whatever else runs on it): every figure is a
// median of rounds, and the timing verdicts are noise-prone (MISS unless BENCH_STRICT=1); exactly-once
// is never noise. BENCH_BURST_ROUNDS (default 3), BENCH_BURST_JOBS (500), BENCH_BURST_WARMUP (100),
// BENCH_BURST_PROCESSES (3, each side's burst), BENCH_STEADY_JOBS (100), BENCH_BURST_PARTS
// (`burst,steady`: both parts). ADR 0014 has the figures.

import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { CLI, median, percentile, reporter, startProcess, stopProcess } from './report.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const GRAPHILE_WORKER = join(here, 'fixtures', 'graphile-worker.mjs')
const ADMIN = { host: '127.0.0.1', port: 5432, database: 'test', user: process.env.PGUSER ?? 'postgres' }
const ROUNDS = Number(process.env.BENCH_BURST_ROUNDS ?? 3)
const BURST = Number(process.env.BENCH_BURST_JOBS ?? 500)
/** Jobs of the burst each side runs first, unmeasured, to warm up. */
const WARMUP = Number(process.env.BENCH_BURST_WARMUP ?? 100)
const STEADY = Number(process.env.BENCH_STEADY_JOBS ?? 100)
const PARTS = (process.env.BENCH_BURST_PARTS ?? 'burst,steady').split(',')
/** Processes on each side (the issue's figure is 3; 1 shows what a single server costs per job). */
const PROCESSES = Number(process.env.BENCH_BURST_PROCESSES ?? 3)
const CONCURRENCY = 8
const STEADY_WINDOW_S = 10
const CLOCK_TICKS = 100 // USER_HZ: /proc/<pid>/stat counts CPU time in hundredths of a second
const { report, exit } = reporter('burst')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function admin(statement) {
  const client = new pg.Client(ADMIN)
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

/** A fresh PostgreSQL database: its name, URL and a one-connection pool; `drop()` removes it. */
async function freshDatabase() {
  const name = `lango_burst_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  await admin(`create database ${name}`)
  const pool = new pg.Pool({ ...ADMIN, database: name, max: 1 })
  return {
    name,
    url: `postgres://${ADMIN.user}@${ADMIN.host}:${ADMIN.port}/${name}`,
    query: async (text, values) => (await pool.query(text, values)).rows,
    async drop() {
      await pool.end()
      await admin(`drop database if exists ${name} with (force)`)
    },
  }
}

/** User and system CPU in milliseconds from a `/proc/…/stat` file (a process's or a thread's own). */
function statCpu(path) {
  const stat = readFileSync(path, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return {
    user: (Number(fields[11]) * 1000) / CLOCK_TICKS,
    system: (Number(fields[12]) * 1000) / CLOCK_TICKS,
  }
}

/** User + system CPU of `pid` in milliseconds (its own, not its children's); 0 once it is gone. */
function cpuMs(pid) {
  try {
    const { user, system } = statCpu(`/proc/${pid}/stat`)
    return user + system
  } catch {
    return 0
  }
}

/**
 * User and system CPU of every thread of `pids` (`/proc/<pid>/task/<tid>/stat`), in milliseconds, by
 * `pid/tid`: where a process's CPU goes, its main (JavaScript) thread against the rest (V8's compiler
 * and GC helpers, libuv's pool).
 */
function threadCpu(pids) {
  const threads = new Map()
  for (const pid of pids) {
    let tids = []
    try {
      tids = readdirSync(`/proc/${pid}/task`)
    } catch {
      continue
    }
    for (const tid of tids) {
      try {
        threads.set(`${pid}/${tid}`, {
          main: tid === String(pid),
          ...statCpu(`/proc/${pid}/task/${tid}/stat`),
        })
      } catch {
        // The thread ended.
      }
    }
  }
  return threads
}

/** CPU per job between two `threadCpu` readings: main thread user/system, other threads (threads that ended in between are not counted). */
function threadCpuPerJob(before, after, jobs) {
  const split = { mainUser: 0, mainSystem: 0, other: 0 }
  for (const [key, now] of after) {
    const then = before.get(key) ?? { user: 0, system: 0 }
    if (now.main) {
      split.mainUser += (now.user - then.user) / jobs
      split.mainSystem += (now.system - then.system) / jobs
    } else split.other += (now.user + now.system - then.user - then.system) / jobs
  }
  return split
}

/** CPU of the database's backends (by pid, at the time of the call). */
async function databaseCpu(database) {
  const rows = await database.query('select pid from pg_stat_activity where datname = $1', [database.name])
  const byPid = new Map()
  for (const { pid } of rows) byPid.set(pid, cpuMs(pid))
  return byPid
}

/** Database CPU spent between two `databaseCpu` readings (backends started in between count whole). */
function databaseCpuSpent(before, after) {
  let total = 0
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0)
  return total
}

/** The start times the jobs' shells appended to `file`, epoch milliseconds. */
function shellStarts(file) {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => Number(BigInt(line) / 1000n) / 1000)
}

/** Polls `done()` every 20 ms until it is true; throws after `limitMs`. */
async function until(done, limitMs, what) {
  const deadline = Date.now() + limitMs
  for (;;) {
    if (await done()) return
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

/** Starts `lango serve --port 0` on a new home with `yaml`; resolves with the child, URL and `stop()`. */
async function startServer(yaml, env, nodeArgs = []) {
  const home = await mkdtemp(join(tmpdir(), 'lango-burst-'))
  await writeFile(join(home, 'lango.yaml'), yaml)
  const { child, url } = await startProcess(
    CLI,
    ['serve', '--port', '0'],
    {
      LANGO_HOME: home,
      LANGO_LOG_LEVEL: 'warn',
      ...env,
    },
    { nodeArgs },
  )
  return {
    child,
    url,
    async stop() {
      await stopProcess(child)
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

/** Runs `items` through `fn`, `parallel` at a time. */
async function inParallel(items, parallel, fn) {
  let next = 0
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < items.length) await fn(items[next++])
    }),
  )
}

/** Starts a graphile-worker process on `url`; resolves with the child and `stop()` → completion times. */
function startGraphileWorker(url) {
  const child = spawn(process.execPath, [GRAPHILE_WORKER], {
    env: { ...process.env, DATABASE_URL: url, BENCH_CONCURRENCY: String(CONCURRENCY) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr = (stderr + chunk).slice(-20_000)
      if (stderr.includes('listening on graphile:'))
        resolve({
          child,
          async stop() {
            await stopProcess(child)
            return JSON.parse(stdout.trim() || '[]')
          },
        })
    })
    child.once('exit', (code) => reject(new Error(`graphile worker exited ${code}: ${stderr.slice(-2000)}`)))
  })
}

/** The figures of one burst: start latencies (ms after T), completion times and the CPU spent. */
function burstFigures(starts, due, completions, cpu, dbCpu, threads) {
  const latencies = starts.map((start) => start - due)
  const sorted = [...completions].sort((a, b) => a - b)
  const span = (sorted[sorted.length - 1] - sorted[0]) / 1000
  return {
    jobs: starts.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    throughput: (sorted.length - 1) / span,
    cpuPerJob: cpu / starts.length,
    dbCpuPerJob: dbCpu / starts.length,
    threads,
  }
}

// ------------------------------------------------------------------ 1. lango's burst

/** Runs of `prefix-*` jobs that ended. */
async function ended(database, prefix) {
  const [row] = await database.query(
    `select count(*) as n from cron_runs where job_name like '${prefix}-%' and status <> 'running'`,
  )
  return Number(row.n)
}

/**
 * Creates `count` `at` jobs `prefix-<i>` through `server`, all due at one instant T (time to create
 * them, then for every server to arm them: the job sync reads changed jobs every 2 s), each running
 * `date +%s%N >> file`. Resolves with T, a second before it when `early` (the caller measures from
 * there), else once every run has ended.
 */
async function atBurst(server, database, prefix, count, file, early = false) {
  const createMs = count * 12 + 1_000
  const due = Math.ceil((Date.now() + createMs + 4_000) / 1000) * 1000
  const at = new Date(due).toISOString()
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${i}`)
  await inParallel(names, 4, (name) =>
    api(server, '/api/cron/jobs', {
      kind: 'shell',
      name,
      schedule_type: 'at',
      schedule: at,
      command: `date +%s%N >> ${file}`,
    }),
  )
  if (Date.now() > due - 3_000) throw new Error('creating the jobs took longer than planned')
  await sleep(due - 1_000 - Date.now())
  if (!early)
    await until(async () => (await ended(database, prefix)) >= count, 120_000, `the ${prefix} burst`)
  return due
}

/**
 * One lango burst. For a profiling script: the servers get `nodeArgs`, `prepare(database)` runs before
 * they start, `observe(pids)` a second before the burst (awaited once it completed).
 */
async function langoBurst({ nodeArgs = [], prepare, observe } = {}) {
  const database = await freshDatabase()
  const dir = await mkdtemp(join(tmpdir(), 'lango-burst-starts-'))
  const file = join(dir, 'starts')
  const yaml = `cron: { max_concurrent_jobs: ${CONCURRENCY} }\n`
  const servers = []
  try {
    await prepare?.(database)
    for (let i = 0; i < PROCESSES; i++)
      servers.push(await startServer(yaml, { LANGO_DATABASE_URL: database.url }, nodeArgs))
    // A smaller burst first, so what is measured runs warm (the JIT done), as in a server that has
    // been up for a while; its jobs and runs are removed after it.
    await atBurst(servers[0], database, 'warm', WARMUP, join(dir, 'warm'))
    await database.query("delete from cron_runs where job_name like 'warm-%'")
    await database.query("delete from cron_jobs where name like 'warm-%'")
    const due = await atBurst(servers[0], database, 'burst', BURST, file, true)
    const pids = servers.map((server) => server.child.pid)
    const cpuBefore = pids.map(cpuMs)
    const threadsBefore = threadCpu(pids)
    const dbBefore = await databaseCpu(database)
    const observed = observe?.(pids)
    await until(async () => (await ended(database, 'burst')) >= BURST, 120_000, 'the burst to complete')
    const cpu = pids.map(cpuMs).reduce((sum, after, i) => sum + after - cpuBefore[i], 0)
    const threads = threadCpuPerJob(threadsBefore, threadCpu(pids), BURST)
    const dbCpu = databaseCpuSpent(dbBefore, await databaseCpu(database))
    await observed
    const rows = await database.query(
      "select status, completed_at from cron_runs where job_name like 'burst-%'",
    )
    const completed = rows.filter((row) => row.status === 'completed')
    if (completed.length !== BURST)
      throw new Error(`${BURST - completed.length} of the burst did not complete`)
    const starts = shellStarts(file)
    if (starts.length !== BURST) throw new Error(`${starts.length} shells ran for ${BURST} jobs`)
    return burstFigures(
      starts,
      due,
      completed.map((row) => Number(row.completed_at)),
      cpu,
      dbCpu,
      threads,
    )
  } finally {
    await Promise.all(servers.map((server) => server.stop()))
    await rm(dir, { recursive: true, force: true })
    await database.drop()
  }
}

// ------------------------------------------------------------------ 1. graphile-worker's burst

/** One graphile-worker burst; `observe(pids)` as in {@link langoBurst}. */
async function graphileBurst({ observe } = {}) {
  const database = await freshDatabase()
  const dir = await mkdtemp(join(tmpdir(), 'graphile-burst-starts-'))
  const file = join(dir, 'starts')
  const { makeWorkerUtils } = await import('graphile-worker')
  const utils = await makeWorkerUtils({ connectionString: database.url })
  const workers = []
  try {
    await utils.migrate()
    for (let i = 0; i < PROCESSES; i++) workers.push(await startGraphileWorker(database.url))
    const specs = (count, to) =>
      Array.from({ length: count }, () => ({
        identifier: 'shell',
        payload: { command: `date +%s%N >> ${to}` },
      }))
    const drained = async () =>
      Number((await database.query('select count(*) as n from graphile_worker._private_jobs'))[0].n) === 0
    // The same warm-up as lango's.
    await utils.addJobs(specs(WARMUP, join(dir, 'warm')))
    await until(drained, 120_000, 'the warm-up burst')
    await sleep(2_000)
    const pids = workers.map((worker) => worker.child.pid)
    const cpuBefore = pids.map(cpuMs)
    const threadsBefore = threadCpu(pids)
    const dbBefore = await databaseCpu(database)
    const observed = observe?.(pids)
    await sleep(1_000)
    // The jobs are built before T: what is timed is adding them.
    const burst = specs(BURST, file)
    const due = Date.now()
    await utils.addJobs(burst)
    await until(async () => shellStarts(file).length >= BURST, 120_000, 'every job to start')
    await until(drained, 120_000, 'the burst to complete')
    const cpu = pids.map(cpuMs).reduce((sum, after, i) => sum + after - cpuBefore[i], 0)
    const threads = threadCpuPerJob(threadsBefore, threadCpu(pids), BURST)
    const dbCpu = databaseCpuSpent(dbBefore, await databaseCpu(database))
    await observed
    const completions = []
    for (const worker of workers.splice(0)) completions.push(...(await worker.stop()))
    // The warm-up's completions came first.
    completions.sort((a, b) => a - b).splice(0, WARMUP)
    const starts = shellStarts(file)
    if (starts.length !== BURST) throw new Error(`${starts.length} shells ran for ${BURST} jobs`)
    return burstFigures(starts, due, completions, cpu, dbCpu, threads)
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()))
    await utils.release()
    await rm(dir, { recursive: true, force: true })
    await database.drop()
  }
}

// ------------------------------------------------------------------ 2. 1 server against 3

/** `count` servers, STEADY shell jobs every second for the window; occurrences completed in it and duplicates. */
async function steady(count, { prepare } = {}) {
  const database = await freshDatabase()
  const dir = await mkdtemp(join(tmpdir(), 'lango-steady-'))
  const servers = []
  try {
    await prepare?.(database)
    for (let i = 0; i < count; i++)
      servers.push(await startServer('cron: { min_interval: 1s }\n', { LANGO_DATABASE_URL: database.url }))
    const names = Array.from({ length: STEADY }, (_, i) => `tick-${i}`)
    await inParallel(names, 4, (name) =>
      api(servers[0], '/api/cron/jobs', {
        kind: 'shell',
        name,
        schedule_type: 'every',
        schedule: '1s',
        command: `echo x >> ${join(dir, `${name}.log`)}`,
      }),
    )
    // Every server has armed every job (the job sync runs every 2 s), then the window opens.
    await sleep(3_000)
    const pids = servers.map((server) => server.child.pid)
    const cpuBefore = pids.map(cpuMs)
    const dbBefore = await databaseCpu(database)
    const from = Date.now()
    await sleep(STEADY_WINDOW_S * 1000)
    const to = Date.now()
    const cpu = pids.map(cpuMs).reduce((sum, after, i) => sum + after - cpuBefore[i], 0)
    const dbCpu = databaseCpuSpent(dbBefore, await databaseCpu(database))
    await database.query('update cron_jobs set enabled = 0')
    await sleep(3_000)
    const rows = await database.query(
      'select job_id, scheduled_for, started_at, status, skip_reason from cron_runs',
    )
    const inWindow = rows.filter((row) => Number(row.scheduled_for) >= from && Number(row.scheduled_for) < to)
    const completed = inWindow.filter((row) => row.status === 'completed').length
    // Occurrences with no row: a job's rows fire a second apart, so a longer step is one missed.
    const byJob = new Map()
    for (const row of inWindow)
      byJob.set(row.job_id, [...(byJob.get(row.job_id) ?? []), Number(row.scheduled_for)])
    let missing = 0
    for (const times of byJob.values()) {
      times.sort((a, b) => a - b)
      for (let i = 1; i < times.length; i++) missing += Math.round((times[i] - times[i - 1]) / 1000) - 1
    }
    const allCompleted = rows.filter((row) => row.status === 'completed').length
    let lines = 0
    for (const name of names) {
      const file = join(dir, `${name}.log`)
      if (existsSync(file)) lines += readFileSync(file, 'utf8').split('\n').filter(Boolean).length
    }
    return {
      perSecond: completed / ((to - from) / 1000),
      // CPU of the servers and of the database's backends per occurrence completed in the window.
      cpuPerRun: cpu / completed,
      dbCpuPerRun: dbCpu / completed,
      // Of the occurrences due in the window (a row each, or missing), the share completed.
      share: completed / (inWindow.length + missing),
      // How late the runs started, from the ledger.
      lateP99: percentile(
        inWindow
          .filter((row) => row.status === 'completed')
          .map((row) => Number(row.started_at) - Number(row.scheduled_for)),
        99,
      ),
      skipped: inWindow.filter((row) => row.status === 'skipped').length,
      other: inWindow.filter((row) => row.status !== 'skipped' && row.status !== 'completed').length,
      skipReasons: [...new Set(inWindow.map((row) => row.skip_reason).filter(Boolean))],
      missing,
      duplicates: lines - allCompleted,
    }
  } finally {
    await Promise.all(servers.map((server) => server.stop()))
    await rm(dir, { recursive: true, force: true })
    await database.drop()
  }
}

// ------------------------------------------------------------------ the runs

const fixed = (value, digits = 1) => value.toFixed(digits)
const of = (runs, key) => median(runs.map((figures) => figures[key]))

/** Part 1: lango's and graphile-worker's bursts, alternated, and their ratios. */
async function burstPart() {
  const lango = []
  const graphile = []
  for (let round = 0; round < ROUNDS; round++) {
    // Alternated, so a neighbour's load falls on both alike.
    const order = round % 2 === 0 ? ['lango', 'graphile'] : ['graphile', 'lango']
    for (const side of order) {
      const figures = side === 'lango' ? await langoBurst() : await graphileBurst()
      ;(side === 'lango' ? lango : graphile).push(figures)
      console.log(
        `burst  round ${round + 1} ${side}: p50 ${fixed(figures.p50)} ms, p99 ${fixed(figures.p99)} ms, ` +
          `${fixed(figures.throughput)} jobs/s, CPU ${fixed(figures.cpuPerJob, 2)} ms/job ` +
          `(database ${fixed(figures.dbCpuPerJob, 2)} ms/job)`,
      )
    }
  }
  for (const [key, label, unit, higherIsBetter] of [
    ['p50', 'start latency p50', 'ms', false],
    ['p99', 'start latency p99', 'ms', false],
    ['throughput', 'throughput', 'jobs/s', true],
    ['cpuPerJob', `CPU per job (the ${PROCESSES === 1 ? 'process' : `${PROCESSES} processes`})`, 'ms', false],
  ]) {
    const ours = of(lango, key)
    const theirs = of(graphile, key)
    const ratio = ours / theirs
    report(
      `${label}, ${BURST}-job burst on ${PROCESSES}×${CONCURRENCY}, lango / graphile-worker`,
      `${fixed(ours, 2)} / ${fixed(theirs, 2)} ${unit} = ${fixed(ratio, 2)}×  target ${higherIsBetter ? '≥' : '≤'} 1.0×`,
      higherIsBetter ? ratio >= 1 : ratio <= 1,
      { noisy: true },
    )
  }
  const split = (runs) => {
    const part = (key) => fixed(median(runs.map((figures) => figures.threads[key])), 2)
    return `main thread ${part('mainUser')} user + ${part('mainSystem')} system, other threads ${part('other')}`
  }
  console.log(
    `burst  CPU per job by thread (information): lango ${split(lango)}; graphile-worker ${split(graphile)} (ms)`,
  )
  console.log(
    `burst  database CPU per job (information): lango ${fixed(of(lango, 'dbCpuPerJob'), 2)} ms, graphile-worker ${fixed(of(graphile, 'dbCpuPerJob'), 2)} ms`,
  )
}

/** Part 2: 1 server against 3 at the same load, alternated. */
async function steadyPart() {
  const one = []
  const three = []
  for (let round = 0; round < ROUNDS; round++) {
    for (const count of round % 2 === 0 ? [1, 3] : [3, 1]) {
      const figures = await steady(count)
      ;(count === 1 ? one : three).push(figures)
      console.log(
        `burst  round ${round + 1}, ${count} server(s): ${fixed(figures.perSecond)}/s of ${STEADY}/s due, ` +
          `started late p99 ${figures.lateP99} ms, CPU ${fixed(figures.cpuPerRun, 2)} ms/run (database ` +
          `${fixed(figures.dbCpuPerRun, 2)}), ${figures.skipped} skipped, ${figures.other} not completed, ` +
          `${figures.missing} missing, ` +
          `duplicates ${figures.duplicates}` +
          (figures.skipReasons.length === 0 ? '' : ` (skipped: ${figures.skipReasons.join('; ')})`),
      )
    }
  }
  const duplicates = [...one, ...three].reduce((sum, figures) => sum + figures.duplicates, 0)
  report('duplicates across every steady round', `${duplicates}  target 0`, duplicates === 0)
  const onePerSecond = of(one, 'perSecond')
  const threePerSecond = of(three, 'perSecond')
  const oneShare = of(one, 'share')
  const threeShare = of(three, 'share')
  report(
    `occurrences completed, ${STEADY} jobs/s for ${STEADY_WINDOW_S} s, 3 servers / 1`,
    `${fixed(threePerSecond)} / ${fixed(onePerSecond)} per s (${fixed(threeShare * 100, 2)} % / ${fixed(oneShare * 100, 2)} % of those due) = ${fixed(threeShare / oneShare, 3)}×  target ≥ 1.0×`,
    threeShare >= oneShare,
    { noisy: true },
  )
}

async function main() {
  if (PARTS.includes('burst')) await burstPart()
  if (PARTS.includes('steady')) await steadyPart()
  exit()
}

// Imported (a profiling script reuses the parts): nothing runs.
if (process.argv[1] === fileURLToPath(import.meta.url)) await main()

export { graphileBurst, langoBurst, steady }
