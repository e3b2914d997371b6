// Per-task overhead of BackgroundManager against a plain limited Promise.all over the same functions.
// Run after a build: `npx tsup && node bench/background.bench.mjs` (or `pnpm bench`).
// Prints one line per metric: `background  <metric>  manager=…µs  baseline=…µs  ratio=…  target<=3  PASS|FAIL`;
// exits 1 when the per-task overhead misses its target.

import { performance } from 'node:perf_hooks'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { BackgroundManager } from '../dist/index.js'

const TASKS = 10_000
const LIMIT = 3
const ROUNDS = 15
const WARMUP_ROUNDS = 3
const TARGET_RATIO = 3
const NODE_MAJOR = Number(process.versions.node.split('.')[0])

/** A plain limited Promise.all: LIMIT workers pull the next function until none are left. */
async function limitedAll(functions, limit) {
  const results = new Array(functions.length)
  let next = 0
  const worker = async () => {
    while (next < functions.length) {
      const index = next
      next += 1
      results[index] = await functions[index]()
    }
  }
  await Promise.all(Array.from({ length: limit }, worker))
  return results
}

/**
 * The platform floor: the limited Promise.all, but each task also pays what any cancellable,
 * identified, timestamped task pays, whoever runs it: a random UUID, an AbortSignal its runner reads,
 * and three wall-clock readings (created, started, ended). What the manager costs beyond this is
 * its own bookkeeping.
 */
function withPlatformCosts(functions) {
  const wrapped = functions.map((run) => {
    const id = crypto.randomUUID()
    const createdAt = new Date()
    return async () => {
      const startedAt = new Date()
      const { signal } = new AbortController()
      if (signal.aborted) throw signal.reason
      const result = await run()
      const completedAt = new Date()
      return { id, createdAt, startedAt, completedAt, result }
    }
  })
  Object.defineProperty(wrapped, 'completed', { get: () => functions.completed })
  return wrapped
}

/**
 * The same functions as background tasks: submit all, then `whenIdle()`. Returns the elapsed
 * milliseconds; the checks that every function ran and every task ended `done` run after the clock
 * stops. The runner calls the next function and returns its promise, as a host's adapter would;
 * with `readSignal` it also reads its abort signal as a real agent runner does.
 */
async function throughManager(functions, limit, { readSignal = false, ...extra } = {}) {
  let index = 0
  const runner = readSignal
    ? {
        run: (_request, options) =>
          options.signal.aborted ? Promise.reject(options.signal.reason) : functions[index++](),
      }
    : { run: () => functions[index++]() }
  const notifier = { send: async () => {} }
  const manager = new BackgroundManager({
    runner,
    notifier,
    maxConcurrentTasks: limit,
    maxQueuedTasks: functions.length,
    ...extra,
  })
  const start = performance.now()
  manager.start()
  for (let task = 0; task < functions.length; task += 1) manager.submit({ prompt: 'trivial task' })
  await manager.whenIdle()
  const elapsed = performance.now() - start
  const notDone = manager.list().filter((task) => task.status !== 'done').length
  await manager.stop()
  if (index !== functions.length || functions.completed !== functions.length || notDone > 0)
    throw new Error(`${functions.length - functions.completed} tasks did not complete`)
  return elapsed
}

/** Times the baseline and checks, after the clock stops, that every function completed. */
async function time(functions, action) {
  const start = performance.now()
  await action()
  const elapsed = performance.now() - start
  if (functions.completed !== functions.length) throw new Error('the baseline did not complete every task')
  return elapsed
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

/**
 * Alternates manager and baseline rounds, and which of them goes first, so drift and heap state hit
 * both alike; returns the median per-task µs of each, and the ratio of their fastest rounds (the
 * rounds other processes disturbed least: on a busy machine it stays near the quiet-machine median
 * while the medians drift apart; printed for reading a noisy run, never judged).
 */
async function measure(makeFunctions, extra, { floor = false } = {}) {
  const manager = []
  const baseline = []
  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round += 1) {
    const forManager = makeFunctions()
    const plain = makeFunctions()
    const forBaseline = floor ? withPlatformCosts(plain) : plain
    const runManager = () => throughManager(forManager, LIMIT, extra)
    const runBaseline = () => time(forBaseline, () => limitedAll(forBaseline, LIMIT))
    let managerMs
    let baselineMs
    if (round % 2 === 0) {
      managerMs = await runManager()
      baselineMs = await runBaseline()
    } else {
      baselineMs = await runBaseline()
      managerMs = await runManager()
    }
    if (round >= WARMUP_ROUNDS) {
      manager.push(managerMs)
      baseline.push(baselineMs)
    }
  }
  return {
    managerUs: (median(manager) * 1000) / TASKS,
    baselineUs: (median(baseline) * 1000) / TASKS,
    fastestRatio: Math.min(...manager) / Math.min(...baseline),
  }
}

function report(metric, { managerUs, baselineUs, fastestRatio }, target) {
  const ratio = managerUs / baselineUs
  const verdict = target === undefined ? 'INFO' : ratio <= target ? 'PASS' : 'FAIL'
  console.log(
    `background  ${metric.padEnd(40)}  manager=${managerUs.toFixed(2)}µs  baseline=${baselineUs.toFixed(2)}µs  ` +
      `ratio=${ratio.toFixed(2)}  target<=${target ?? '-'}  ${verdict}  (fastest rounds: ${fastestRatio.toFixed(2)})`,
  )
  return verdict !== 'FAIL'
}

/** TASKS functions made by `make(index, done)`, which call `done()` when they finish; `.completed` counts. */
function taskList(make) {
  const functions = []
  functions.completed = 0
  const done = () => {
    functions.completed += 1
  }
  for (let index = 0; index < TASKS; index += 1) functions.push(make(index, done))
  return functions
}
// A trivial async task: one turn of the event loop, then an answer.
const trivialTasks = () =>
  taskList((index, done) => async () => {
    await nextTurn()
    done()
    return { text: `result ${index}` }
  })
// The degenerate case: no I/O at all, the answer is ready in the same microtask.
const instantTasks = () =>
  taskList((index, done) => async () => {
    done()
    return { text: `result ${index}` }
  })

console.log(
  `background  ${TASKS} tasks, limit ${LIMIT}, median of ${ROUNDS} rounds after ${WARMUP_ROUNDS} warm-up`,
)
// The runner reads its signal, as every real agent runner does (it hands it to its HTTP client).
// On Node 20 (past end of life) an AbortSignal alone costs ~5.8 µs against ~1.1 µs on Node 24, more
// than twice the baseline's whole task: there the 3× line is reported, not judged (ADR 0003). The
// floor line shows what the manager's own code adds to what any such task pays.
const judged = NODE_MAJOR >= 22 ? TARGET_RATIO : undefined
const plainPassed = report(
  `per-task overhead${judged === undefined ? ' (Node 20: see ADR 0003)' : ''}`,
  await measure(trivialTasks, { readSignal: true }),
  judged,
)
report(
  'per-task overhead over the platform floor',
  await measure(trivialTasks, { readSignal: true }, { floor: true }),
)
report('per-task overhead (runner ignores signal)', await measure(trivialTasks, {}))
report(
  'per-task overhead (no timeout)',
  await measure(trivialTasks, { taskTimeoutMs: Number.POSITIVE_INFINITY, readSignal: true }),
)
report('per-task overhead (instant tasks)', await measure(instantTasks, { readSignal: true }))
if (!plainPassed) process.exitCode = 1
