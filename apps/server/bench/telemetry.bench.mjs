// What metrics and traces cost (issue 23), against the same server with both off, in the same run.
// Run after a build (`pnpm bench` builds first). Prints `telemetry  <metric>  …  PASS|FAIL|MISS`.
//
// 1. firing lateness of 200 shell jobs due 100 ms apart (`started_at − scheduled_for` from the
//    ledger): p99 with `metrics.enabled: true` and traces exported over OTLP/HTTP to a receiver on
//    loopback, minus p99 with metrics off and no endpoint (target: at most +1 ms);
// 2. a `cron_list` tool call over HTTP (`POST /api/tools/cron_list`), median latency on vs off
//    (target ratio ≤ 1.1; the route makes no span, so this is the metrics' cost there).

import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteCronStore } from '@lango/cron/sqlite'
import { createTestJob } from '@lango/cron/testing'
import { createApp, loadConfig, silentLogger } from '../dist/index.js'
import { CLI, latency, percentile, post, reporter, startProcess, stopProcess } from './report.mjs'

const { report, exit } = reporter('telemetry')

// An OTLP/HTTP receiver on loopback that takes every export and counts its spans.
let exports = 0
const receiver = createServer((req, res) => {
  const chunks = []
  req.on('data', (chunk) => chunks.push(chunk))
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/v1/traces') exports += 1
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  })
})
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve))
const endpoint = `http://127.0.0.1:${receiver.address().port}`

/** A LANGO_HOME with metrics on or off; `on` also exports traces to the receiver. */
async function home(on) {
  const dir = await mkdtemp(join(tmpdir(), `lango-telemetry-bench-${on ? 'on' : 'off'}-`))
  await writeFile(join(dir, 'lango.yaml'), `metrics:\n  enabled: ${on}\n`)
  const env = {
    LANGO_HOME: dir,
    LANGO_LOG_LEVEL: 'warn',
    ...(on ? { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint } : {}),
  }
  return { dir, env }
}

/** Seeds `count` shell jobs (`every 1h`, `command: true`), the i-th first due at `nextRunAt(i)`. */
async function seed(dir, count, nextRunAt) {
  const config = await loadConfig({ env: { LANGO_HOME: dir }, cwd: dir })
  const app = await createApp(config, silentLogger, { passphrase: '' })
  const store = new SqliteCronStore(app.database.db)
  const now = Date.now()
  for (let i = 0; i < count; i++) {
    const name = `job-${i}`
    await store.insertJob(
      createTestJob({
        id: name,
        name,
        kind: 'shell',
        prompt: null,
        command: 'true',
        scheduleType: 'every',
        schedule: '1h',
        timezone: 'UTC',
        createdAt: now,
        updatedAt: now,
        nextRunAt: nextRunAt(i),
      }),
    )
  }
  await app.stop()
}

const homes = []
try {
  // ── 1. Firing lateness, off then on (each its own home and server).
  const lateness = {}
  for (const on of [false, true]) {
    const { dir, env } = await home(on)
    homes.push(dir)
    // Room for seeding and start-up (the SDK loads at start with traces on) before the first fire.
    const first = Date.now() + 8_000
    await seed(dir, 200, (i) => first + i * 100)
    const server = await startProcess(CLI, ['serve', '--port', '0'], env)
    await new Promise((resolve) => setTimeout(resolve, first + 199 * 100 - Date.now() + 3_000))
    const { entries } = await (await fetch(`${server.url}/api/cron/runs?limit=200`)).json()
    await stopProcess(server.child)
    const late = entries
      .filter((entry) => entry.trigger === 'schedule' && entry.started_at !== null)
      .map((entry) => Date.parse(entry.started_at) - Date.parse(entry.scheduled_for))
    lateness[on ? 'on' : 'off'] = { fired: late.length, p50: percentile(late, 50), p99: percentile(late, 99) }
  }
  const { on, off } = lateness
  const delta = on.p99 - off.p99
  report(
    'firing lateness p99, metrics+traces on vs off',
    `off: fired=${off.fired}/200 p50=${off.p50}ms p99=${off.p99}ms  on: fired=${on.fired}/200 p50=${on.p50}ms p99=${on.p99}ms  delta=${delta >= 0 ? '+' : ''}${delta}ms  exports=${exports}  target delta<=+1ms`,
    on.fired === 200 && off.fired === 200 && exports > 0 && delta <= 1,
    { noisy: true },
  )

  // ── 2. cron_list over HTTP, on vs off: two servers on the same stored 20 jobs.
  const { dir, env } = await home(false)
  homes.push(dir)
  await seed(dir, 20, () => Date.now() + 86_400_000)
  const offServer = await startProcess(CLI, ['serve', '--port', '0'], env)
  const offMs = await latency(() => post(`${offServer.url}/api/tools/cron_list`, '{}'), 2000, 200)
  await stopProcess(offServer.child)
  await writeFile(join(dir, 'lango.yaml'), 'metrics:\n  enabled: true\n')
  const onServer = await startProcess(CLI, ['serve', '--port', '0'], {
    ...env,
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  })
  const onMs = await latency(() => post(`${onServer.url}/api/tools/cron_list`, '{}'), 2000, 200)
  await stopProcess(onServer.child)
  const ratio = onMs / offMs
  report(
    'cron_list over HTTP, metrics+traces on vs off',
    `off=${(offMs * 1000).toFixed(0)}µs  on=${(onMs * 1000).toFixed(0)}µs  delta=${((onMs - offMs) * 1000).toFixed(0)}µs  ratio=${ratio.toFixed(2)}  target<=1.1`,
    ratio <= 1.1,
    { noisy: true },
  )
} finally {
  receiver.close()
  for (const dir of homes) await rm(dir, { recursive: true, force: true })
}
exit()
