// @lango/cron benchmark: next-fire overhead vs cron-parser, start-up with 10,000 jobs, and firing
// lateness of 10,000 jobs due across one minute on the real clock (read from the ledger).
// Build first (`npx tsup`), then: node bench/cron.bench.mjs
// CRON_BENCH_INLINE_CHECKPOINTS=1 adds an informational lateness run with SQLite's default inline
// WAL auto-checkpoints (another minute).
import { mkdtemp, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { CronExpressionParser } from 'cron-parser'
import { Kysely, SqliteDialect } from 'kysely'
import { CronScheduler, compileSchedule } from '../dist/index.js'
import { migrateCron, SqliteCronStore } from '../dist/sqlite.js'
import { createTestJob } from '../dist/testing.js'

const JOBS = 10_000
const results = []

function report(label, details, pass) {
  results.push(pass)
  console.log(`cron  ${label.padEnd(40)}  ${details}  ${pass ? 'PASS' : 'FAIL'}`)
}

function rate(iterations, fn) {
  const start = process.hrtime.bigint()
  fn(iterations)
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  return iterations / seconds
}

function best(times, fn) {
  let top = 0
  for (let round = 0; round < times; round++) top = Math.max(top, fn())
  return top
}

// ------------------------------------------------------------------ next-fire overhead
const START = Date.parse('2026-01-05T00:00:00Z')
for (const [expression, timezone, iterations] of [
  ['*/5 * * * *', 'UTC', 20_000],
  ['0 9 * * 1-5', 'America/New_York', 5_000],
  ['0 0 29 2 *', 'UTC', 200],
]) {
  const compiled = compileSchedule({ type: 'cron', expression, timezone })
  const ours = () =>
    rate(iterations, (count) => {
      let cursor = START
      for (let index = 0; index < count; index++) cursor = compiled.next(cursor)
    })
  const library = () =>
    rate(iterations, (count) => {
      const iterator = CronExpressionParser.parse(expression, { tz: timezone, currentDate: new Date(START) })
      for (let index = 0; index < count; index++) iterator.next()
    })
  ours()
  library()
  const oursRate = best(3, ours)
  const libraryRate = best(3, library)
  const ratio = libraryRate / oursRate
  report(
    `next-fire ratio (${expression}${timezone === 'UTC' ? '' : ` ${timezone}`})`,
    `ours=${Math.round(oursRate)} /s  cron-parser=${Math.round(libraryRate)} /s  ratio=${ratio.toFixed(2)}  target<=1.5`,
    ratio <= 1.5,
  )
}

// ------------------------------------------------------------------ helpers for the database runs
// WAL checkpoints fsync the database file; run inline (SQLite's default auto-checkpoint) they
// block the event loop for milliseconds each time. The recommended setup moves them to a
// worker thread with its own connection (PASSIVE checkpoints never block writers).
const CHECKPOINT_WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const database = new Database(workerData.path)
database.pragma('busy_timeout = 5000')
const timer = setInterval(() => { try { database.pragma('wal_checkpoint(PASSIVE)') } catch {} }, workerData.intervalMs)
parentPort.on('message', () => { clearInterval(timer); database.close(); parentPort.close() })
`

async function openDatabase({ checkpointInWorker = false } = {}) {
  const directory = await mkdtemp(join(tmpdir(), 'lango-cron-bench-'))
  const path = join(directory, 'bench.db')
  const database = new Database(path)
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  database.pragma('busy_timeout = 5000')
  let worker
  if (checkpointInWorker) {
    database.pragma('wal_autocheckpoint = 0')
    const driver = createRequire(import.meta.url).resolve('better-sqlite3')
    worker = new Worker(CHECKPOINT_WORKER, { eval: true, workerData: { path, driver, intervalMs: 500 } })
  }
  const db = new Kysely({ dialect: new SqliteDialect({ database }) })
  await migrateCron(db)
  return {
    db,
    database,
    async close() {
      if (worker !== undefined) {
        worker.postMessage('stop')
        await new Promise((resolve) => worker.once('exit', resolve))
      }
      await db.destroy()
      await rm(directory, { recursive: true, force: true })
    },
  }
}

function job(index, overrides) {
  const now = Date.now()
  return createTestJob({
    id: `job-${index}`,
    name: `job-${index}`,
    prompt: 'noop',
    createdAt: now,
    updatedAt: now,
    nextRunAt: null,
    ...overrides,
  })
}

async function insertJobs(database, jobs) {
  const store = new SqliteCronStore(database.db)
  database.database.exec('BEGIN')
  for (const each of jobs) await store.insertJob(each)
  database.database.exec('COMMIT')
  return store
}

const noopRunner = { run: async () => ({ text: '' }) }

// ------------------------------------------------------------------ start-up with 10,000 jobs
{
  const database = await openDatabase()
  const now = Date.now()
  const shapes = [
    ['cron', '*/5 * * * *', 'UTC'],
    ['cron', '0 9 * * 1-5', 'America/New_York'],
    ['cron', '30 2 * * *', 'Europe/Berlin'],
    ['cron', '15 */2 * * *', 'Asia/Kolkata'],
    ['every', '1h', 'UTC'],
  ]
  const jobs = Array.from({ length: JOBS }, (_, index) => {
    const [scheduleType, schedule, timezone] = shapes[index % shapes.length]
    return job(index, { scheduleType, schedule, timezone, nextRunAt: now + 3_600_000 + index * 100 })
  })
  const store = await insertJobs(database, jobs)
  const scheduler = new CronScheduler({ store, agentRunner: noopRunner })
  const started = performance.now()
  await scheduler.start()
  const elapsed = performance.now() - started
  const armed = scheduler.armedCount
  await scheduler.stop()
  await database.close()
  report(
    `start-up (load and arm ${JOBS} jobs)`,
    `time=${elapsed.toFixed(0)} ms  armed=${armed}  target<=1000 ms`,
    elapsed <= 1000 && armed === JOBS,
  )
}

// ------------------------------------------------------------------ lateness on the real clock
async function lateness({ checkpointInWorker }) {
  const database = await openDatabase({ checkpointInWorker })
  const lead = 3000
  const spread = 60_000
  const jobs = Array.from({ length: JOBS }, (_, index) =>
    job(index, { scheduleType: 'every', schedule: '1h' }),
  )
  const store = await insertJobs(database, jobs)
  // Due times are set after the (slow) inserts, so every job is still in the future at start.
  const first = Date.now() + lead
  const setDue = database.database.prepare('UPDATE cron_jobs SET next_run_at = ? WHERE id = ?')
  database.database.transaction(() => {
    for (let index = 0; index < JOBS; index++)
      setDue.run(first + Math.floor((index * spread) / JOBS), `job-${index}`)
  })()
  // 10,000 ai runs in a minute measure the scheduler, not the daily AI run budget (CRON-3): lift it.
  const scheduler = new CronScheduler({
    store,
    agentRunner: noopRunner,
    maxAiRunsPerDay: Number.POSITIVE_INFINITY,
  })
  await scheduler.start()
  const last = first + spread
  await new Promise((resolve) => setTimeout(resolve, last - Date.now() + 1500))
  await scheduler.whenIdle()
  await scheduler.stop()
  const rows = await database.db
    .selectFrom('cron_runs')
    .select(['scheduled_for', 'started_at', 'status'])
    .where('trigger', '=', 'schedule')
    .execute()
  await database.close()
  const values = rows
    .filter((row) => row.started_at !== null)
    .map((row) => row.started_at - row.scheduled_for)
  values.sort((left, right) => left - right)
  const percentile = (fraction) =>
    values[Math.min(values.length - 1, Math.floor(fraction * values.length))] ?? Number.NaN
  return {
    fired: values.length,
    completed: rows.filter((row) => row.status === 'completed').length,
    p50: percentile(0.5),
    p99: percentile(0.99),
    max: values.at(-1) ?? Number.NaN,
    min: values[0] ?? Number.NaN,
    early: values.filter((value) => value < 0).length,
  }
}

{
  const measured = await lateness({ checkpointInWorker: true })
  console.log(
    `cron  lateness sample (checkpoints in a worker)  fired=${measured.fired}/${JOBS}  completed=${measured.completed}  p50=${measured.p50} ms  min=${measured.min} ms`,
  )
  report(
    'firing lateness p99 (10,000 jobs / 1 min)',
    `p99=${measured.p99} ms  target<=5 ms`,
    measured.p99 <= 5 && measured.fired === JOBS,
  )
  report('firing lateness max', `max=${measured.max} ms  target<=20 ms`, measured.max <= 20)
  report('fires before their due time', `early=${measured.early}  target=0`, measured.early === 0)
  if (process.env.CRON_BENCH_INLINE_CHECKPOINTS === '1') {
    const inline = await lateness({ checkpointInWorker: false })
    console.log(
      `cron  lateness with inline auto-checkpoints (info)  p50=${inline.p50} ms  p99=${inline.p99} ms  max=${inline.max} ms  early=${inline.early}`,
    )
  }
}

const failed = results.filter((pass) => !pass).length
console.log(`cron  summary: ${results.length - failed}/${results.length} targets met`)
if (failed > 0) process.exitCode = 1
