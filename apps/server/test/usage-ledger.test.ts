/**
 * The usage ledger's reads against its own background writes, and a cron job's daily spend by the
 * job's id. Real SQLite in a temp dir; for the first test the ledger's Kysely goes through a dialect
 * that holds chosen inserts before they reach the database, as a slow database would.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  Kysely,
  type QueryResult,
  SqliteDialect,
  sql,
} from 'kysely'
import { describe, expect, it } from 'vitest'
import type { UsageRecord } from '../src/agent/index.js'
import { silentLogger } from '../src/logger.js'
import { type UsageDatabase, UsageLedger, usageTables } from '../src/usage/usage-ledger.js'
import { within } from './fixtures/http-server.js'

/** A promise and the function that settles it. */
function deferred(): { promise: Promise<void>; release: () => void } {
  let release = () => {}
  const promise = new Promise<void>((resolve) => {
    release = resolve
  })
  return { promise, release }
}

/**
 * `inner` with each plain query (no transactions) going through `around`, which runs it on SQLite's
 * one connection with `run()`, taken only when `run` is called (so other queries go on meanwhile).
 */
function aroundQueries(
  inner: Dialect,
  around: <R>(query: CompiledQuery, run: () => Promise<QueryResult<R>>) => Promise<QueryResult<R>>,
): Dialect {
  return {
    createAdapter: () => inner.createAdapter(),
    createQueryCompiler: () => inner.createQueryCompiler(),
    createIntrospector: (db) => inner.createIntrospector(db),
    createDriver() {
      const driver = inner.createDriver()
      const connection: DatabaseConnection = {
        executeQuery: <R>(query: CompiledQuery) =>
          around<R>(query, async () => {
            const taken = await driver.acquireConnection()
            try {
              return await taken.executeQuery<R>(query)
            } finally {
              await driver.releaseConnection(taken)
            }
          }),
        streamQuery() {
          throw new Error('not used by the ledger')
        },
      }
      return {
        init: () => driver.init(),
        destroy: () => driver.destroy(),
        acquireConnection: async () => connection,
        releaseConnection: async () => {},
        beginTransaction: () => Promise.reject(new Error('not used by the ledger')),
        commitTransaction: () => Promise.reject(new Error('not used by the ledger')),
        rollbackTransaction: () => Promise.reject(new Error('not used by the ledger')),
      }
    },
  }
}

/** Whether `query` binds a parameter that mentions `key`. */
const mentions = (query: CompiledQuery, key: string) => JSON.stringify(query.parameters).includes(key)

/** `inner` with every query that mentions a key of `gates` held until its gate opens. */
function holdingQueries(inner: Dialect, gates: ReadonlyMap<string, Promise<void>>): Dialect {
  return aroundQueries(inner, async (query, run) => {
    await [...gates].find(([key]) => mentions(query, key))?.[1]
    return run()
  })
}

/**
 * `inner` where the first query that mentions `key` is run and then answered with a lost connection,
 * as a PostgreSQL connection cut after COMMIT is: the row is stored, the caller is told it failed.
 */
function losingAnswers(inner: Dialect, key: string): Dialect {
  let lost = false
  return aroundQueries(inner, async (query, run) => {
    const result = await run()
    if (!lost && mentions(query, key)) {
      lost = true
      throw new Error('Connection terminated unexpectedly')
    }
    return result
  })
}

function chatTurn(sessionKey: string, tokens: number): UsageRecord {
  return {
    purpose: 'chat',
    sessionKey,
    model: 'test-model',
    usage: { inputTokens: tokens, outputTokens: 0, totalTokens: tokens },
    steps: 1,
    ok: true,
  }
}

/** A migrated usage table in a fresh SQLite file; `open(gates)` gives a handle on it. */
async function withDatabase(
  test: (open: (gates?: ReadonlyMap<string, Promise<void>>) => Kysely<UsageDatabase>) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'lango-usage-'))
  const file = join(dir, 'lango.db')
  const handles: Kysely<UsageDatabase>[] = []
  const open = (gates: ReadonlyMap<string, Promise<void>> = new Map()) => {
    const dialect = new SqliteDialect({ database: new Database(file) })
    const handle = new Kysely<UsageDatabase>({ dialect: holdingQueries(dialect, gates) })
    handles.push(handle)
    return handle
  }
  try {
    const plain = new Kysely<UsageDatabase>({ dialect: new SqliteDialect({ database: new Database(file) }) })
    await usageTables.migrate(plain)
    await plain.destroy()
    await test(open)
  } finally {
    for (const handle of handles) await handle.destroy()
    await rm(dir, { recursive: true, force: true })
  }
}

describe('usage ledger', () => {
  it('spendLimits waits for the writes pending when it was called, not for those recorded while it waits', () =>
    withDatabase(async (open) => {
      const first = deferred()
      const later = deferred()
      const gates = new Map([
        ['held:first', first.promise],
        ['held:later', later.promise],
      ])
      const db = open(gates)
      const ledger = new UsageLedger(db, {
        server: { maxTokens: 1_000_000 },
        logger: silentLogger,
      })
      try {
        ledger.record(chatTurn('held:first', 100))
        const limits = ledger.spendLimits({ purpose: 'chat', sessionKey: 'http:reader', model: 'test-model' })
        // Steady load: another turn's row is being written while the read waits, and stays so.
        ledger.record(chatTurn('held:later', 7))
        first.release()
        const [server] = await within(limits, 30_000, 'spendLimits while a later write is pending')
        expect(server).toMatchObject({ scope: 'the server', spentTokens: 100 })
      } finally {
        later.release()
        await ledger.flush()
      }
      const rows = await db.selectFrom('agent_usage').select('session_key').orderBy('session_key').execute()
      expect(rows.map((row) => row.session_key)).toEqual(['held:first', 'held:later'])
    }))

  it('a ledger that cannot be written still counts what it could not write, and writes it once it can', () =>
    withDatabase(async (open) => {
      const db = open()
      const warnings: string[] = []
      const logger = { ...silentLogger, warn: (message: string) => warnings.push(message) }
      const ledger = new UsageLedger(db, { server: { maxTokens: 5_000 }, logger })
      const spent = async () =>
        (await ledger.spendLimits({ purpose: 'chat', sessionKey: 'http:reader', model: 'test-model' }))[0]
      // The database refuses every new row, as a full disk does; reads go on.
      await sql`create trigger full_disk before insert on agent_usage begin select raise(fail, 'database or disk is full'); end`.execute(
        db,
      )
      ledger.record(chatTurn('http:one', 2_000))
      ledger.record(chatTurn('http:two', 2_500))
      expect(await spent()).toMatchObject({ scope: 'the server', spentTokens: 4_500 })
      ledger.record(chatTurn('http:three', 1_000))
      expect((await spent())?.spentTokens).toBe(5_500)
      expect(warnings.filter((message) => message.startsWith('agent usage not recorded'))).toHaveLength(3)
      expect(await db.selectFrom('agent_usage').select('id').execute()).toEqual([])

      // Space again: the next turn's write brings the rows the outage kept, each once.
      await sql`drop trigger full_disk`.execute(db)
      ledger.record(chatTurn('http:four', 10))
      expect((await spent())?.spentTokens).toBe(5_510)
      await ledger.flush()
      const rows = await db.selectFrom('agent_usage').select('session_key').orderBy('session_key').execute()
      expect(rows.map((row) => row.session_key)).toEqual(['http:four', 'http:one', 'http:three', 'http:two'])
    }))

  it('a row stored by a write whose answer was lost is sent again harmlessly: no second row, nothing blocked', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lango-usage-'))
    const file = join(dir, 'lango.db')
    const plain = new Kysely<UsageDatabase>({ dialect: new SqliteDialect({ database: new Database(file) }) })
    await usageTables.migrate(plain)
    const db = new Kysely<UsageDatabase>({
      dialect: losingAnswers(new SqliteDialect({ database: new Database(file) }), 'http:lost'),
    })
    const ledger = new UsageLedger(db, { server: { maxTokens: 10_000 }, logger: silentLogger })
    try {
      ledger.record(chatTurn('http:lost', 700))
      await ledger.flush()
      ledger.record(chatTurn('http:next', 300))
      ledger.record(chatTurn('http:last', 5))
      await ledger.flush()
      const rows = await plain
        .selectFrom('agent_usage')
        .select('session_key')
        .orderBy('session_key')
        .execute()
      expect(rows.map((row) => row.session_key)).toEqual(['http:last', 'http:lost', 'http:next'])
      const [server] = await ledger.spendLimits({
        purpose: 'chat',
        sessionKey: 'http:reader',
        model: 'test-model',
      })
      expect(server).toMatchObject({ spentTokens: 1_005 })
    } finally {
      await db.destroy()
      await plain.destroy()
      await rm(dir, { recursive: true, force: true })
    }
  })

  it("a job's daily spend is counted by its id, whatever its name was; rows from before ids by its name", () =>
    withDatabase(async (open) => {
      const db = open()
      const ledger = new UsageLedger(db, {
        job: async () => ({ maxTokensPerDay: 10_000, maxCostPerDay: null }),
        logger: silentLogger,
      })
      const day = new Date().toISOString().slice(0, 10)
      const row = (id: string, source: string, jobId: string | null, tokens: number) => ({
        id,
        at: Date.now(),
        day,
        purpose: 'run',
        source,
        run_id: null,
        step_id: null,
        job_id: jobId,
        creator: null,
        session_key: null,
        model: 'test-model',
        input_tokens: tokens,
        output_tokens: 0,
        cost_nano_usd: null,
        ok: 1,
        budget_exhausted: 0,
      })
      await db
        .insertInto('agent_usage')
        .values([
          row('before-the-rename', 'cron:nightly', 'job-1', 100),
          row('before-ids', 'cron:nightly-2', null, 20),
          row('another-job-of-that-name-before', 'cron:nightly-2', 'job-0', 3),
          row('another-job', 'cron:other', 'job-2', 4000),
        ])
        .execute()
      const [job] = await ledger.spendLimits({
        purpose: 'run',
        sessionKey: 'cron:nightly-2:r1',
        model: 'test-model',
        jobName: 'nightly-2',
        jobId: 'job-1',
      })
      expect(job).toMatchObject({ scope: 'cron job nightly-2', maxTokens: 10_000, spentTokens: 120 })
    }))
})
