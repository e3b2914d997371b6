/**
 * A database that refuses writes, told to the operator (an outside probe: a SQLite file that
 * refused writes while cron occurrences came due left no run row and raised no alert; the cron
 * scheduler's `run:error` went unheard, and nobody was told when writes worked again). Here the
 * real SQLite file of a real server refuses writes — a connection of the test's own adds triggers
 * that abort them, as a full disk does — and the alerts reach the operator's Telegram chat (the
 * fake Bot API on loopback): one `Database failing` per outage however many store calls fail,
 * `Database recovered` once writes work again, and a new outage after that is told again.
 */

import Database from 'better-sqlite3'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { type FakeTelegram, startFakeTelegram } from './fixtures/fake-telegram.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

const LEASE_MS = 3_000
const CHAT = '42'
/** What SQLite says on a full disk; the triggers refuse with it. */
const FULL = 'database or disk is full'

let telegram: FakeTelegram
let server: TestServer

beforeEach(async () => {
  telegram = await startFakeTelegram()
  server = await startTestServer(
    (config) => ({
      ...config,
      cluster: { ...config.cluster, leaseMs: LEASE_MS },
      cron: { ...config.cron, minIntervalMs: 1_000 },
      alerts: { deliverTo: [`telegram:${CHAT}`] },
    }),
    {
      LANGO_TELEGRAM_TOKEN: telegram.token,
      LANGO_TELEGRAM_API_URL: telegram.url,
      LANGO_TELEGRAM_ALLOWED_CHATS: CHAT,
    },
  )
})
afterEach(async () => {
  await server?.dispose()
  await telegram?.close()
})

/**
 * Runs `statements` in one transaction on a connection of the test's own to the server's file,
 * tried again while the server holds the write lock (never waiting inside SQLite: the server runs
 * on this event loop).
 */
async function alongside(statements: string): Promise<void> {
  const database = new Database(server.config.database.url, { timeout: 0 })
  try {
    await until(async () => {
      try {
        database.exec(`begin immediate; ${statements}; commit`)
        return true
      } catch (error) {
        if (database.inTransaction) database.exec('rollback')
        if ((error as { code?: string }).code === 'SQLITE_BUSY') return undefined
        throw error
      }
    })
  } finally {
    database.close()
  }
}

/** Makes every insert, update and delete on `tables` (every table: `all`) fail as a full disk does. */
async function refuseWrites(tables: readonly string[] | 'all'): Promise<void> {
  let names = tables
  if (names === 'all') {
    const database = new Database(server.config.database.url, { readonly: true })
    names = database
      .prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'")
      .pluck()
      .all() as string[]
    database.close()
  }
  await alongside(
    names
      .flatMap((table) =>
        ['insert', 'update', 'delete'].map(
          (operation) =>
            `create trigger "refuse_${operation}_${table}" before ${operation} on "${table}" begin select raise(abort, '${FULL}'); end`,
        ),
      )
      .join('; '),
  )
}

/** Writes work again. */
async function acceptWrites(): Promise<void> {
  const database = new Database(server.config.database.url, { readonly: true })
  const triggers = database
    .prepare("select name from sqlite_master where type = 'trigger' and name like 'refuse\\_%' escape '\\'")
    .pluck()
    .all() as string[]
  database.close()
  await alongside(triggers.map((name) => `drop trigger "${name}"`).join('; '))
}

/** The alert messages the operator's chat got so far. */
function alertsSent(): string[] {
  return telegram
    .callsOf('sendMessage')
    .filter((call) => String(call.payload.chat_id) === CHAT)
    .map((call) => String(call.payload.text))
}

/** The alert messages sent so far that list alerts under `heading`. */
function alertsUnder(heading: string): string[] {
  return alertsSent().filter((text) => text.includes(`\n${heading}:\n`))
}

/** Waits for the `count`th alert message that lists alerts under `heading`. */
async function alertWith(heading: string, count = 1): Promise<string> {
  return until(async () => alertsUnder(heading)[count - 1], 30_000, heading)
}

/** Runs of `ticker` that completed, as `GET /api/cron/runs` lists them. */
async function completedTicks(): Promise<number> {
  const runs = (await (await server.request('/api/cron/runs?job=ticker&limit=100')).json()) as {
    entries: { status: string }[]
  }
  return runs.entries.filter((run) => run.status === 'completed').length
}

/** Waits until more than `after` runs of `ticker` completed. */
async function tickerCompletes(after = 0): Promise<void> {
  await until(async () => ((await completedTicks()) > after ? true : undefined), 60_000, 'a completed run')
}

async function startTicker(): Promise<void> {
  const created = await server.request('/api/cron/jobs', {
    json: { kind: 'shell', name: 'ticker', schedule_type: 'every', schedule: '1s', command: 'true' },
  })
  expect(created.status).toBeLessThan(300)
  await tickerCompletes()
}

it('occurrences due while the database refuses their run rows: one alert at the chat however many fail, one when writes work again, and a new outage is told again', async () => {
  await startTicker()
  // The scheduler's store failures, counted where the scheduler reports them.
  let failures = 0
  server.app.cron.on('run:error', ({ error }) => {
    if (error.message === FULL) failures++
  })

  // Only the run ledger refuses: the instance heartbeat is still written, so the scheduler's
  // failures are what tells the outage.
  await refuseWrites(['cron_runs'])
  const failing = await alertWith('Database failing')
  expect(failing).toMatch(/^\[Lango alert\]\n/)
  expect(failing).toContain(`a store call of the cron scheduler failed at `)
  expect(failing).toContain(FULL)
  // A storm of failures (every occurrence due, once a second) is that one alert.
  await until(async () => (failures >= 4 ? true : undefined), 30_000)
  expect(alertsUnder('Database failing')).toHaveLength(1)

  const before = await completedTicks()
  await acceptWrites()
  const recovered = await alertWith('Database recovered')
  expect(recovered).toMatch(
    /the database takes writes again: store calls failed from \S+ to \S+ \((\d+) failures, the last: database or disk is full\)/,
  )
  expect(Number(/\((\d+) failures/.exec(recovered)?.[1])).toBeGreaterThanOrEqual(4)
  await tickerCompletes(before)
  expect(alertsUnder('Database failing')).toHaveLength(1)

  // A new outage after the recovery was told is news: told at once, not held back as a repeat.
  await refuseWrites(['cron_runs'])
  expect(await alertWith('Database failing', 2)).toContain('a store call of the cron scheduler failed')
  await acceptWrites()
  await alertWith('Database recovered', 2)

  const metrics = await (await server.request('/metrics')).text()
  expect(metrics).toMatch(/^lango_alerts_total\{kind="database_failing"\} 2$/m)
  expect(metrics).toMatch(/^lango_alerts_total\{kind="database_recovered"\} 2$/m)
}, 120_000)

it('a database that refuses every write: /healthz says unwritable, the chat hears of it once, and of its end once /healthz is ok again', async () => {
  await startTicker()
  await refuseWrites('all')
  const unwritable = await until(async () => {
    const answer = await server.request('/healthz')
    const body = (await answer.json()) as { database?: string }
    return answer.status === 503 && body.database === 'unwritable' ? true : undefined
  }, 30_000)
  expect(unwritable).toBe(true)
  const failing = await alertWith('Database failing')
  expect(failing).toContain(FULL)

  await acceptWrites()
  const recovered = await alertWith('Database recovered')
  expect(recovered).toContain('the database takes writes again')
  await until(async () => ((await server.request('/healthz')).status === 200 ? true : undefined))
  expect(alertsUnder('Database failing')).toHaveLength(1)
  const status = (await (await server.request('/api/alerts')).json()) as Record<string, unknown>
  expect(status).toMatchObject({ failing: false })
}, 120_000)
