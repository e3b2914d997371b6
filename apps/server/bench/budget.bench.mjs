// The budget check, measured against a baseline taken in the same run (issue 25 item 1). Run after a
// build (`pnpm bench` builds first). Prints one line per metric, like agent.bench.mjs.
//
// What the check adds per agent step (target ≤ 0.1 ms): two real apps of `createApp` in this
// process, on one fake model (fixtures/fake-model-agent.mjs) that calls `cron_list` 10 times and
// then answers a text. One app has every budget set (agent.budget: per turn, per day for the
// server and per creator, in tokens and dollars, with a price for the model), so each turn reads
// the usage ledger once before its first model call and checks its spend after every step; the
// other has none (the baseline: no ledger read, no check). Per pair of interleaved turns, the order
// alternated: (budgeted − plain) / 11 model calls; the median over the pairs is the figure. Both
// apps record every turn in the ledger, so the write is on both sides.

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { createApp, loadConfig, silentLogger } from '../dist/index.js'
import { startFakeModel } from './fixtures/fake-model-agent.mjs'
import { median, reporter } from './report.mjs'

const MODEL = 'bench-model'
const STEPS = 10
const PAIRS = 30
const WARMUP = 10
const { report, exit } = reporter('budget')

/** A turn whose user message says `steps=N` calls `cron_list` until N tool results are in, then answers. */
function scripted(body) {
  const messages = Array.isArray(body.messages) ? body.messages : []
  const user = messages.findLast((message) => message.role === 'user')
  const wanted = Number(/steps=(\d+)/.exec(typeof user?.content === 'string' ? user.content : '')?.[1] ?? 0)
  const done = messages.filter((message) => message.role === 'tool').length
  if (done < wanted) return { toolCalls: [{ id: `call_${done + 1}`, name: 'cron_list', arguments: {} }] }
  return { text: `Done after ${done} tool calls.` }
}

const homes = []
const cleanup = []
const apps = []
try {
  const model = await startFakeModel({ answer: scripted })
  cleanup.push(() => model.close())
  const start = async (budgeted) => {
    const home = await mkdtemp(join(tmpdir(), 'lango-budget-bench-'))
    homes.push(home)
    const loaded = await loadConfig({
      env: { LANGO_HOME: home, LANGO_MODEL_BASE_URL: model.baseUrl, LANGO_MODEL: MODEL },
      cwd: home,
    })
    // Budgets far above what the bench spends: every check runs, none stops a turn.
    const config = budgeted
      ? {
          ...loaded,
          agent: {
            ...loaded.agent,
            turnBudget: { maxTokens: 1e9, maxCostUsd: 1e6 },
            dailyBudget: { maxTokens: 1e12, maxCostUsd: 1e6 },
            creatorDailyBudget: { maxTokens: 1e12, maxCostUsd: 1e6 },
          },
          models: { [MODEL]: { price: { inputPerMillion: 1, outputPerMillion: 10 } } },
        }
      : loaded
    const app = await createApp(config, silentLogger, { passphrase: '' })
    cleanup.push(() => app.stop())
    for (let i = 0; i < 5; i++) {
      await app.cron.create({
        name: `job-${i}`,
        kind: 'shell',
        scheduleType: 'cron',
        schedule: '0 3 * * *',
        command: 'true',
        timezone: 'UTC',
      })
    }
    await app.start()
    let session = 0
    apps.push(app)
    return async () => {
      session += 1
      // Stateless turns (no memory), one creator per app: the creator budget applies to each.
      const result = await app.agent.chat('http:bench', `steps=${STEPS} list my cron jobs ${session}`, {
        history: [],
      })
      if (result.toolCalls !== STEPS)
        throw new Error(`the turn made ${result.toolCalls} tool calls, not ${STEPS}`)
    }
  }
  const plain = await start(false)
  const budgeted = await start(true)
  for (let i = 0; i < WARMUP; i++) {
    await plain()
    await budgeted()
  }
  const timed = async (work) => {
    const started = performance.now()
    await work()
    return performance.now() - started
  }
  const perStep = []
  const plainTurns = []
  for (let i = 0; i < PAIRS; i++) {
    let a
    let b
    if (i % 2 === 0) {
      a = await timed(plain)
      b = await timed(budgeted)
    } else {
      b = await timed(budgeted)
      a = await timed(plain)
    }
    plainTurns.push(a)
    perStep.push((b - a) / (STEPS + 1))
  }
  const figure = median(perStep)
  // The part of the check that is not arithmetic, timed alone: the one ledger read a turn makes
  // before its first model call (every budget set, the day's rows of the bench above in it).
  const ledger = apps[1].usage
  const turn = { purpose: 'chat', sessionKey: 'http:bench', model: MODEL }
  for (let i = 0; i < 50; i++) await ledger.spendLimits(turn)
  const reads = []
  for (let i = 0; i < 500; i++) reads.push(await timed(() => ledger.spendLimits(turn)))
  const read = median(reads)
  report(
    'check per agent step, end to end',
    `${figure.toFixed(3)}ms (median of ${PAIRS} interleaved pairs of ${STEPS + 1}-call turns, budgeted − plain; plain turn ${median(plainTurns).toFixed(1)}ms)  target ≤0.100ms`,
    figure <= 0.1,
    { noisy: true },
  )
  report(
    'ledger read per agent step',
    `${(read / (STEPS + 1)).toFixed(4)}ms (one read per turn: median ${read.toFixed(3)}ms over 500, spread over ${STEPS + 1} model calls; the per-step check itself is arithmetic on the turn's sums)  target ≤0.100ms`,
    read / (STEPS + 1) <= 0.1,
  )
} finally {
  for (const stop of cleanup.reverse()) await stop().catch(() => {})
  for (const home of homes) await rm(home, { recursive: true, force: true })
}
exit()
