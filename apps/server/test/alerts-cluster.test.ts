/**
 * A server that dies mid-run, told to the operator (an outside probe: a server killed while its
 * cron run ran left the run `interrupted` and a peer took its work over, and nobody heard of
 * either). Real `lango serve` processes on one LANGO_HOME (one SQLite file), killed with SIGKILL;
 * the alerts reach the operator's Telegram chat (the fake Bot API on loopback): **Runs interrupted**
 * names the job, the run and the dead server and says the run is not retried; **Servers lost**
 * names the dead server as its registry row said, and only one survivor tells it.
 */
import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest'
import { type FakeTelegram, startFakeTelegram } from './fixtures/fake-telegram.js'
import { until } from './fixtures/http-server.js'
import { CLI, startLangoServe } from './fixtures/lango-serve.js'

const LEASE_MS = 3_000
const CHAT = '42'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

interface Server {
  readonly child: ChildProcess
  readonly url: string
  /** The server process (with a secret in its environment, `lango serve` hands over to it). */
  readonly pid: number
  /** Its instance id (the cron and workflow owner id). */
  readonly instance: string
}

let home: string
let telegram: FakeTelegram
const servers: Server[] = []

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error('build @lango/server before running this test')
})
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'lango-alerts-cluster-'))
  await writeFile(
    join(home, 'lango.yaml'),
    `cluster: { lease: ${LEASE_MS / 1000}s }\nalerts: { deliver_to: [telegram:${CHAT}] }\n`,
  )
  telegram = await startFakeTelegram()
})
afterEach(async () => {
  for (const server of servers.splice(0)) await kill(server)
  await telegram?.close()
  await rm(home, { recursive: true, force: true })
})

async function startServer(): Promise<Server> {
  const started = await startLangoServe(home, {
    LANGO_TELEGRAM_TOKEN: telegram.token,
    LANGO_TELEGRAM_API_URL: telegram.url,
    LANGO_TELEGRAM_ALLOWED_CHATS: CHAT,
  })
  const health = await api(started.url, '/healthz')
  const server = { ...started, instance: String(health.instance) }
  servers.push(server)
  return server
}

/** SIGKILL of the server process (and its supervisor): no stop, no cleanup. */
async function kill(server: Server): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => server.child.once('exit', () => resolve()))
  for (const pid of new Set([server.pid, server.child.pid as number])) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // Gone already.
    }
  }
  await exited
}

async function api(url: string, path: string, body?: unknown): Promise<Json> {
  const response = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  })
  const json = (await response.json()) as Json
  if (!response.ok && path !== '/healthz')
    throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`)
  return json
}

/** The alert messages the operator's chat got so far that list alerts under `heading`. */
function alertsUnder(heading: string): string[] {
  return telegram
    .callsOf('sendMessage')
    .filter((call) => String(call.payload.chat_id) === CHAT)
    .map((call) => String(call.payload.text))
    .filter((text) => text.includes(`\n${heading}:\n`))
}

/** Waits for an alert message under `heading` that contains `text`. */
function alertWith(heading: string, text: string): Promise<string> {
  return until(async () => alertsUnder(heading).find((message) => message.includes(text)), 60_000, heading)
}

/** Creates a shell job `name` running `sleep 30` on `server`, triggers it there and waits until it runs. */
async function runLongJob(server: Server, name: string): Promise<string> {
  const started = join(home, `${name}.started`)
  await api(server.url, '/api/cron/jobs', {
    kind: 'shell',
    name,
    schedule_type: 'cron',
    schedule: '0 3 * * *',
    command: `echo $$ > ${started}; sleep 30`,
  })
  const triggered = await api(server.url, `/api/cron/jobs/${name}/trigger`, {})
  await until(
    async () => ((await readFile(started, 'utf8').catch(() => '')) === '' ? undefined : true),
    30_000,
  )
  return String(triggered.run_id)
}

async function alertCount(server: Server, kind: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  return Number(
    new RegExp(`^lango_alerts_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? Number.NaN,
  )
}

it('a server killed mid-run and started again: the chat hears which run of which job was interrupted, and that it is not retried', async () => {
  const first = await startServer()
  const runId = await runLongJob(first, 'nightly')
  await kill(first)

  const second = await startServer()
  const interrupted = await alertWith('Runs interrupted', `run ${runId}`)
  expect(interrupted).toMatch(/^\[Lango alert\]\n/)
  expect(interrupted).toContain(
    `server ${first.instance} stopped while running cron run job nightly (run ${runId}, started `,
  )
  expect(interrupted).toContain(`marked interrupted by this server (${second.instance})`)
  expect(interrupted).toContain('an interrupted cron run is not retried')
  // The command's text is not in it (names, times, reasons only).
  expect(interrupted).not.toContain('sleep 30')
  const history = await api(second.url, '/api/cron/runs?job=nightly')
  expect(history.entries).toMatchObject([{ id: runId, status: 'interrupted' }])

  // The killed server's instance row, once past its lease, is told as a lost server.
  const lost = await alertWith('Servers lost', first.instance)
  expect(lost).toContain(`server ${first.instance} (host `)
  expect(lost).toContain(`pid ${first.pid}`)
  expect(lost).toContain(`was taken for dead by this server (${second.instance})`)
}, 120_000)

it('one of three servers killed: one survivor tells the chat which server was lost, and a survivor tells which of its runs were interrupted', async () => {
  const doomed = await startServer()
  const survivors = [await startServer(), await startServer()]
  const runId = await runLongJob(doomed, 'report')
  await kill(doomed)

  const lost = await alertWith('Servers lost', doomed.instance)
  expect(lost).toMatch(
    new RegExp(
      `server ${doomed.instance} \\(host \\S+, pid ${doomed.pid}, version \\S+, started \\S+\\) has not written its heartbeat since \\S+ \\(\\d+s, past its 3s lease\\) and was taken for dead by this server \\((${survivors.map((server) => server.instance).join('|')})\\)`,
    ),
  )
  expect(lost).toContain('Its running cron runs are marked interrupted (not retried)')

  // Two leases without a heartbeat: a survivor's scheduler marks the dead server's run interrupted.
  const interrupted = await alertWith('Runs interrupted', `run ${runId}`)
  expect(interrupted).toContain(
    `server ${doomed.instance} stopped while running cron run job report (run ${runId}`,
  )
  const runs = await api(survivors[0]?.url as string, '/api/cron/runs?job=report')
  expect(runs.entries).toMatchObject([{ id: runId, status: 'interrupted' }])

  // By then both survivors have beaten many times since the dead server's lease ran out: only one
  // of them told it.
  const counts = await Promise.all(survivors.map((server) => alertCount(server, 'server_lost')))
  expect(counts.sort()).toEqual([0, 1])
  expect(alertsUnder('Servers lost').filter((message) => message.includes(doomed.instance))).toHaveLength(1)
}, 120_000)
