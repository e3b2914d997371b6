// The server, measured as users meet it: real `lango serve` and `lango mcp` processes on loopback,
// against baselines measured in the same run. Run after a build (`pnpm bench` builds first).
// Prints one line per metric: `server  <metric>  …  target…  PASS|FAIL`; exits 1 on a miss unless the
// miss is noise-prone and BENCH_STRICT is unset (it says so).
//
// 1. a `cron_list` tool call over HTTP vs a bare node:http handler returning the same JSON (≤ 1.3×
//    median latency, keep-alive, sequential requests);
// 2. the same call over MCP stdio vs a bare SDK server returning the same JSON (≤ 1.2×);
// 3. start-up to a ready `/healthz` with 10,000 jobs stored (≤ 1 s) and resident memory then (≤ 150 MiB);
// 4. firing lateness of shell jobs in the running server (p99 ≤ 10 ms, from the ledger's
//    `started_at − scheduled_for`), jobs due 100 ms apart; and, for information, the start delay
//    of 200 jobs due at one instant (they queue for the concurrency cap).

import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { SqliteCronStore } from '@lango/cron/sqlite'
import { createTestJob } from '@lango/cron/testing'
import { Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { createApp, loadConfig, silentLogger } from '../dist/index.js'
import {
  CLI,
  closePosts,
  latency,
  median,
  percentile,
  post,
  reporter,
  startProcess,
  stopProcess,
} from './report.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const BASELINE_HTTP = join(here, 'fixtures', 'bare-http.mjs')
const BASELINE_MCP = join(here, 'fixtures', 'bare-mcp.mjs')
const BASELINE_HONO = join(here, 'fixtures', 'bare-hono.mjs')
const { report, exit } = reporter('server')

/**
 * Seeds `count` shell jobs into a LANGO_HOME. Through the cron service (validation, next fire times);
 * past its job cap (500, SECURITY.md CRON-3) straight through the store, as a long-lived install that
 * raised the cap would hold them.
 */
async function seed(home, count, schedule, prefix = 'job', { nextRunAt, scheduleType = 'cron' } = {}) {
  const config = await loadConfig({ env: { LANGO_HOME: home }, cwd: home })
  const app = await createApp(config, silentLogger, { passphrase: '' })
  const store = new SqliteCronStore(app.database.db)
  for (let i = 0; i < count; i++) {
    const name = `${prefix}-${i}`
    if (nextRunAt === undefined && count <= 200) {
      await app.cron.create({
        name,
        kind: 'shell',
        scheduleType: 'cron',
        schedule,
        command: 'true',
        timezone: 'UTC',
      })
      continue
    }
    const now = Date.now()
    await store.insertJob(
      createTestJob({
        id: name,
        name,
        kind: 'shell',
        prompt: null,
        command: 'true',
        scheduleType,
        schedule,
        timezone: 'UTC',
        createdAt: now,
        updatedAt: now,
        nextRunAt: nextRunAt?.(i) ?? now + 86_400_000,
      }),
    )
  }
  await app.stop()
}

const home = await mkdtemp(join(tmpdir(), 'lango-server-bench-'))
const env = { LANGO_HOME: home, LANGO_LOG_LEVEL: 'warn' }
try {
  // ── 1. cron_list over HTTP: the same 20 stored jobs' JSON from both servers.
  await seed(home, 20, '0 3 * * *')
  {
    const server = await startProcess(CLI, ['serve', '--port', '0'], env)
    const toolUrl = `${server.url}/api/tools/cron_list`
    const sample = await post(toolUrl, '{}')
    if (sample.status !== 200) throw new Error(`cron_list answered ${sample.status}: ${sample.body}`)
    const baseline = await startProcess(BASELINE_HTTP, [], { BENCH_BODY: sample.body })
    const hono = await startProcess(BASELINE_HONO, [], { BENCH_BODY: sample.body })
    const ours = await latency(() => post(toolUrl, '{}'), 2000, 200)
    const bare = await latency(() => post(`${baseline.url}/`, '{}'), 2000, 200)
    const framework = await latency(() => post(`${hono.url}/`, '{}'), 2000, 200)
    const ratio = ours / bare
    report(
      'cron_list over HTTP vs bare node:http',
      `lango=${(ours * 1000).toFixed(0)}µs  bare=${(bare * 1000).toFixed(0)}µs  ratio=${ratio.toFixed(2)}  target<=1.3`,
      ratio <= 1.3,
      { noisy: true },
    )
    console.log(
      `server  (info) bare Hono on @hono/node-server, same body  ${(framework * 1000).toFixed(0)}µs  ratio to bare node:http=${(framework / bare).toFixed(2)}`,
    )
    await Promise.all([stopProcess(server.child), stopProcess(baseline.child), stopProcess(hono.child)])
    // What the call must do whatever serves it: the cron service's read of the 20 jobs (a SQLite
    // query and the rows' decoding), in this process on the same file, the server stopped.
    const config = await loadConfig({ env: { LANGO_HOME: home }, cwd: home })
    const app = await createApp(config, silentLogger, { passphrase: '' })
    const read = await latency(() => app.cron.list(), 2000, 200)
    await app.stop()
    console.log(
      `server  (info) the service read alone (app.cron.list(), 20 jobs, in-process)  ${(read * 1000).toFixed(0)}µs  = ${((read / bare) * 100).toFixed(0)}% of the bare round trip`,
    )
    closePosts()
  }

  // ── 2. cron_list over MCP stdio vs a bare SDK server with one tool returning the same JSON.
  {
    const connect = async (args) => {
      const client = new Client({ name: 'bench', version: '1.0.0' })
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args,
          env: { ...process.env, ...env },
          stderr: 'ignore',
        }),
      )
      return client
    }
    const lango = await connect([CLI, 'mcp'])
    const first = await lango.callTool({ name: 'cron_list', arguments: {} })
    const bare = await connect([BASELINE_MCP])
    await bare.callTool({ name: 'set_body', arguments: { body: first.content[0].text } })
    const ours = await latency(() => lango.callTool({ name: 'cron_list', arguments: {} }), 1000, 100)
    const theirs = await latency(() => bare.callTool({ name: 'cron_list', arguments: {} }), 1000, 100)
    const ratio = ours / theirs
    report(
      'cron_list over MCP stdio vs bare SDK server',
      `lango=${(ours * 1000).toFixed(0)}µs  bare=${(theirs * 1000).toFixed(0)}µs  ratio=${ratio.toFixed(2)}  target<=1.2`,
      ratio <= 1.2,
      { noisy: true },
    )
    await Promise.all([lango.close(), bare.close()])
  }

  // ── 3. Start-up with 10,000 jobs stored: spawn to a ready /healthz, and RSS then.
  await seed(home, 10_000 - 20, '0 3 * * *', 'more')
  {
    const times = []
    let rss = 0
    for (let round = 0; round < 3; round++) {
      const started = performance.now()
      const server = await startProcess(CLI, ['serve', '--port', '0'], env)
      for (;;) {
        const res = await fetch(`${server.url}/healthz`).catch(() => undefined)
        if (res?.status === 200) break
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      times.push(performance.now() - started)
      const status = readFileSync(`/proc/${server.child.pid}/status`, 'utf8')
      rss = Math.max(rss, Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024)
      await stopProcess(server.child)
    }
    const startup = median(times)
    report(
      'start-up to ready /healthz, 10,000 jobs',
      `median=${startup.toFixed(0)}ms  target<=1000`,
      startup <= 1000,
    )
    report('resident memory at ready, 10,000 jobs', `rss=${rss.toFixed(1)}MiB  target<=150`, rss <= 150)
  }

  // ── 4. Firing lateness in the running server, read from the ledger (`started_at − scheduled_for`).
  //    a. 200 shell jobs, each due at its own moment, 100 ms apart (target p99 ≤ 10 ms);
  //    b. (information) the same 200 due at one instant: they start `cron.max_concurrent_jobs`
  //       (default 5) at a time, so `started_at` then measures the queue, not the timer.
  for (const burst of [false, true]) {
    const fresh = await mkdtemp(join(tmpdir(), 'lango-server-bench-late-'))
    const freshEnv = { LANGO_HOME: fresh, LANGO_LOG_LEVEL: 'warn' }
    const first = Date.now() + 4_000
    const spacing = burst ? 0 : 100
    await seed(fresh, 200, '1h', 'late', { scheduleType: 'every', nextRunAt: (i) => first + i * spacing })
    const server = await startProcess(CLI, ['serve', '--port', '0'], freshEnv)
    const last = first + 199 * spacing
    await new Promise((resolve) => setTimeout(resolve, last - Date.now() + 3_000))
    const res = await fetch(`${server.url}/api/cron/runs?limit=200`)
    const { entries } = await res.json()
    // History times are ISO 8601 with milliseconds.
    const late = entries
      .filter((entry) => entry.trigger === 'schedule' && entry.started_at !== null)
      .map((entry) => Date.parse(entry.started_at) - Date.parse(entry.scheduled_for))
    await stopProcess(server.child)
    await rm(fresh, { recursive: true, force: true })
    const p99 = percentile(late, 99)
    const detail = `fired=${late.length}/200  p50=${percentile(late, 50)}ms  p99=${p99}ms  max=${Math.max(...late)}ms`
    if (burst) {
      console.log(
        `server  start delay of 200 shell jobs due at one instant (info: queued 5 at a time)  ${detail}`,
      )
    } else {
      report(
        'firing lateness of 200 shell jobs, 100 ms apart',
        `${detail}  target p99<=10`,
        late.length === 200 && p99 <= 10,
        { noisy: true },
      )
    }
  }
} finally {
  await rm(home, { recursive: true, force: true })
}
exit()
