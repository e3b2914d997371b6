// The agent, measured against baselines taken in the same run (issue 13). Run after a build
// (`pnpm bench` builds first). Prints one line per metric: `agent  <metric>  …  target…  PASS|FAIL`,
// like server.bench.mjs; exits 1 on a miss unless the miss is noise-prone and BENCH_STRICT is unset
// (it says so). Both fakes run in this process on 127.0.0.1 (fixtures/*-agent.mjs), so every time
// below is read from one clock.
//
// 1. The agent loop's own overhead per tool-call step (target ≤ 2 ms): the real agent of
//    `createApp` (in this process, 20 cron jobs stored) runs chat turns against a fake model that
//    calls `cron_list` 10 times, then answers a text. Baseline: the same 11 request bodies the agent
//    sent (recorded on a first turn) posted with fetch — the client the AI SDK uses — to the same
//    fake, so the network and the fake are subtracted. Per turn: (agent − baseline) / 10, the
//    median over interleaved pairs. The tool's own work (`cron_list` through `invokeTool`, timed
//    in-process) is then subtracted too: the target is for the loop, excluding the tool. These
//    turns are stateless (no memory, see below); the fixed cost of a turn, with and without
//    memory, is printed for information from no-tool turns measured the same way.
// 2. Telegram, message in → reply out, minus model time (target p99 ≤ 20 ms): a real `lango serve`
//    with a fake Bot API and a fake model answering a text at once; for each of 200 messages, from
//    the fake answering getUpdates with it to the fake receiving the sendMessage that replies to it,
//    minus the time the fake model spent between reading and answering that turn's request.

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { invokeTool } from '@lango/tools'
import { createApp, loadConfig, silentLogger } from '../dist/index.js'
import { startFakeModel } from './fixtures/fake-model-agent.mjs'
import { startFakeTelegram } from './fixtures/fake-telegram-agent.mjs'
import { CLI, median, percentile, reporter, startProcess, stopProcess } from './report.mjs'

const MODEL = 'bench-model'
/** Tool-call steps of a measured turn (then one more model call for the final text). */
const STEPS = 10
const TURN_PAIRS = 30
const TELEGRAM_WARMUP = 20
const TELEGRAM_MESSAGES = 200
const { report, exit } = reporter('agent')
const ms = (value) => `${value.toFixed(2)}ms`

/**
 * The fake model's script, read from the request alone so any replay of a body gets the same
 * answer: a turn whose user message says `steps=N` calls `cron_list` until N tool results are in
 * the conversation, then answers a text. A request without tools (the session observer) gets an
 * observation line.
 */
function scripted(body) {
  if (body.tools === undefined) return { text: '- The user sent numbered bench messages.' }
  const messages = Array.isArray(body.messages) ? body.messages : []
  const user = messages.findLast((message) => message.role === 'user')
  const wanted = Number(/steps=(\d+)/.exec(typeof user?.content === 'string' ? user.content : '')?.[1] ?? 0)
  const done = messages.filter((message) => message.role === 'tool').length
  if (done < wanted) return { toolCalls: [{ id: `call_${done + 1}`, name: 'cron_list', arguments: {} }] }
  return { text: `Done after ${done} tool calls.` }
}

/** Posts recorded bodies one after another, as the agent did, reading each answer in full. */
async function replay(url, bodies) {
  for (const body of bodies) {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })
    await response.text()
  }
}

const homes = []
const cleanup = []
try {
  // ── 1. The agent loop's overhead per tool-call step.
  {
    const home = await mkdtemp(join(tmpdir(), 'lango-agent-bench-'))
    homes.push(home)
    const model = await startFakeModel({ answer: scripted })
    cleanup.push(() => model.close())
    const config = await loadConfig({
      env: { LANGO_HOME: home, LANGO_MODEL_BASE_URL: model.baseUrl, LANGO_MODEL: MODEL },
      cwd: home,
    })
    const app = await createApp(config, silentLogger, { passphrase: '' })
    cleanup.push(() => app.stop())
    // The same 20 jobs as the server bench's cron_list, so each tool result is a realistic 7–8 KB.
    for (let i = 0; i < 20; i++) {
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
    const url = `${model.baseUrl}/chat/completions`
    let session = 0
    // Measured turns are stateless (the `history` of the OpenAI-compatible endpoint): a 10-step
    // turn's memory append passes the observe threshold (16,000 tokens), and the compaction it
    // starts in the background — an observer model call — would land in the next measurement.
    // The memory's per-turn cost is measured apart, on no-tool turns in fresh sessions.
    const chat = async (steps, { memory = false } = {}) => {
      session += 1
      const result = await app.agent.chat(
        `http:bench-${session}`,
        `steps=${steps} list my cron jobs`,
        memory ? {} : { history: [] },
      )
      if (result.toolCalls !== steps)
        throw new Error(`the turn made ${result.toolCalls} tool calls, not ${steps}`)
      return result
    }
    const record = async (steps, options) => {
      const recorded = []
      model.setRecorder((entry) => recorded.push(entry.raw))
      await chat(steps, options)
      model.setRecorder(undefined)
      return recorded
    }
    const kinds = [
      { steps: STEPS, memory: false },
      { steps: 0, memory: false },
      { steps: 0, memory: true },
    ]
    for (const kind of kinds) {
      for (let i = 0; i < 8; i++) await chat(kind.steps, kind)
      kind.bodies = await record(kind.steps, kind)
      if (kind.bodies.length !== kind.steps + 1)
        throw new Error(`a ${kind.steps}-step turn made ${kind.bodies.length} model requests`)
      for (let i = 0; i < 3; i++) await replay(url, kind.bodies)
      kind.pairs = []
    }

    const timed = async (work) => {
      const started = performance.now()
      await work()
      return performance.now() - started
    }
    for (let i = 0; i < TURN_PAIRS; i++) {
      for (const kind of kinds) {
        // Interleaved, the order alternated, so drift and GC fall on both sides alike.
        const agentFirst = i % 2 === 0
        const first = await timed(() => (agentFirst ? chat(kind.steps, kind) : replay(url, kind.bodies)))
        const second = await timed(() => (agentFirst ? replay(url, kind.bodies) : chat(kind.steps, kind)))
        kind.pairs.push(agentFirst ? { agent: first, baseline: second } : { agent: second, baseline: first })
      }
    }

    // The tool's own work in a step: the same call through invokeTool, in this process.
    const cronList = app.tools.find((tool) => tool.name === 'cron_list')
    const toolSamples = []
    for (let i = 0; i < 600; i++) {
      const started = performance.now()
      const outcome = await invokeTool(
        cronList,
        {},
        { sessionKey: 'http:bench-tool' },
        { policy: config.approvals.policy },
      )
      if (i >= 100) toolSamples.push(performance.now() - started)
      if (!outcome.ok) throw new Error(`cron_list failed: ${JSON.stringify(outcome.error)}`)
    }
    const tool = median(toolSamples)
    await app.stop()
    await model.close()

    const [tenSteps, noTool, withMemory] = kinds
    const overhead = (kind) => median(kind.pairs.map((pair) => pair.agent - pair.baseline))
    const perStep = overhead(tenSteps) / STEPS
    const excluding = perStep - tool
    const fixed = overhead(noTool)
    const slope = (overhead(tenSteps) - fixed) / STEPS - tool
    const bytes = tenSteps.bodies.reduce((total, body) => total + Buffer.byteLength(body), 0)
    console.log(
      `agent  (info) a ${STEPS}-step turn (cron_list ×${STEPS}, then text), median of ${TURN_PAIRS}  agent=${ms(median(tenSteps.pairs.map((pair) => pair.agent)))}  baseline (the same ${STEPS + 1} bodies, ${(bytes / 1024).toFixed(0)} KiB, by fetch)=${ms(median(tenSteps.pairs.map((pair) => pair.baseline)))}`,
    )
    console.log(`agent  (info) cron_list through invokeTool in-process (20 jobs), median  ${ms(tool)}`)
    console.log(
      `agent  (info) a turn with no tool call (1 model call) over its baseline  ${ms(fixed)}  with memory (fresh session: load + append)  ${ms(overhead(withMemory))}`,
    )
    console.log(
      `agent  (info) loop overhead per tool-call step including the tool's work  ${ms(perStep)}  ((turn − baseline) / ${STEPS})`,
    )
    console.log(
      `agent  (info) the same per step without the turn's fixed cost, excluding the tool  ${ms(slope)}  ((${STEPS}-step − no-tool overhead) / ${STEPS} − cron_list)`,
    )
    report(
      'loop overhead per tool-call step, excluding the tool',
      `${ms(excluding)}  (= ${ms(perStep)} − cron_list ${ms(tool)})  target<=2ms`,
      excluding <= 2,
      { noisy: true },
    )
  }

  // ── 2. Telegram: message in → reply out, minus model time.
  {
    const home = await mkdtemp(join(tmpdir(), 'lango-agent-bench-tg-'))
    homes.push(home)
    const chatId = 4242
    const userId = 7
    /** Model requests of chat turns (the observer's are its own work), bounded by the run's messages. */
    const turnRequests = []
    const model = await startFakeModel({
      answer: (body) => (body.tools === undefined ? scripted(body) : { text: 'Noted.' }),
      record: (entry) => {
        if (entry.body.tools !== undefined && turnRequests.length < 4 * (TELEGRAM_WARMUP + TELEGRAM_MESSAGES))
          turnRequests.push({ receivedAt: entry.receivedAt, answeredAt: entry.answeredAt })
      },
    })
    cleanup.push(() => model.close())
    const telegram = await startFakeTelegram()
    cleanup.push(() => telegram.close())
    const server = await startProcess(CLI, ['serve', '--port', '0'], {
      LANGO_HOME: home,
      LANGO_LOG_LEVEL: 'warn',
      LANGO_TELEGRAM_TOKEN: telegram.token,
      LANGO_TELEGRAM_API_URL: telegram.url,
      LANGO_TELEGRAM_ALLOWED_CHATS: String(chatId),
      LANGO_MODEL_BASE_URL: model.baseUrl,
      LANGO_MODEL: MODEL,
    })
    cleanup.push(() => stopProcess(server.child))
    await telegram.waitForOpenPoll()
    const samples = []
    let modelTotal = 0
    for (let i = 0; i < TELEGRAM_WARMUP + TELEGRAM_MESSAGES; i++) {
      const { deliveredAt, repliedAt, text } = await telegram.converse({
        chatId,
        userId,
        text: `bench message ${i}: what is scheduled tonight?`,
      })
      if (text !== 'Noted.') throw new Error(`unexpected reply: ${text.slice(0, 200)}`)
      const modelTime = turnRequests
        .filter((request) => request.receivedAt >= deliveredAt && request.answeredAt <= repliedAt)
        .reduce((total, request) => total + (request.answeredAt - request.receivedAt), 0)
      turnRequests.length = 0
      if (i < TELEGRAM_WARMUP) continue
      modelTotal += modelTime
      samples.push(repliedAt - deliveredAt - modelTime)
    }
    await stopProcess(server.child)
    await telegram.close()
    await model.close()
    const p99 = percentile(samples, 99)
    console.log(
      `agent  (info) model time subtracted per Telegram turn (fake answering at once), mean  ${ms(modelTotal / samples.length)}`,
    )
    report(
      `Telegram message in → reply out minus model time, ${TELEGRAM_MESSAGES} messages`,
      `p50=${ms(percentile(samples, 50))}  p99=${ms(p99)}  max=${ms(Math.max(...samples))}  target p99<=20ms`,
      samples.length === TELEGRAM_MESSAGES && p99 <= 20,
      { noisy: true },
    )
  }
} finally {
  for (const step of cleanup.reverse()) await Promise.resolve(step()).catch(() => undefined)
  for (const home of homes) await rm(home, { recursive: true, force: true })
}
exit()
