// Upgrades keep data (issue 24): the current server started on a database made by the first release
// (test/fixtures/upgrade/, made through v0.1's public APIs) migrates it and keeps every row, on
// SQLite and on PostgreSQL; a database a newer Lango migrated is refused, untouched.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cronMigrations } from '@lango/cron/sqlite'
import { workflowMigrations } from '@lango/workflow/sqlite'
import Database from 'better-sqlite3'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config/load.js'
import type { ServerConfig } from '../src/config/types.js'
import { silentLogger } from '../src/logger.js'
import { type RunningServer, serve } from '../src/serve.js'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { CLI } from './fixtures/lango-serve.js'
import { DATA_TABLES, FIXTURE, POSTGRES_FIXTURE, SQLITE_FIXTURE } from './fixtures/upgrade/fixture-data.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

const PG = { host: '127.0.0.1', port: 5432, user: process.env.PGUSER ?? 'postgres' }
const YEAR_MS = 365 * 24 * 60 * 60 * 1000

/** Every row of each data table, as its key columns joined (`a|b`), sorted. */
type Rows = Record<string, string[]>

/** The fixture restored on one kind of database, read and changed behind the server's back. */
interface Restored {
  /** The LANGO_HOME (its lango.db is the fixture's copy on SQLite). */
  readonly home: string
  /** LANGO_DATABASE_URL, on PostgreSQL. */
  readonly url?: string
  rows(): Promise<Rows>
  /** Each table's columns (`table.column type`), sorted: the schema, to compare with a fresh one's. */
  columns(): Promise<string[]>
  /** Runs one statement (the test's own writes). */
  execute(statement: string): Promise<void>
  close(): Promise<void>
}

interface Backend {
  readonly name: string
  readonly skip?: string
  /** The v0.1 fixture; `fresh`: an empty database instead. */
  restore(options?: { fresh?: boolean }): Promise<Restored>
}

function keyOf(row: Record<string, unknown>, columns: readonly string[]): string {
  return columns.map((column) => String(row[column])).join('|')
}

const sqlite: Backend = {
  name: 'SQLite',
  async restore(options = {}) {
    const home = await mkdtemp(join(tmpdir(), 'lango-upgrade-'))
    const file = join(home, 'lango.db')
    if (options.fresh !== true) await copyFile(SQLITE_FIXTURE, file)
    const open = <T>(read: (database: Database.Database) => T): T => {
      const database = new Database(file)
      database.pragma('busy_timeout = 5000')
      try {
        return read(database)
      } finally {
        database.close()
      }
    }
    return {
      home,
      async rows() {
        return open((database) =>
          Object.fromEntries(
            Object.entries(DATA_TABLES).map(([table, key]) => [
              table,
              (database.prepare(`select * from ${table}`).all() as Record<string, unknown>[])
                .map((row) => keyOf(row, key))
                .sort(),
            ]),
          ),
        )
      },
      async columns() {
        return open((database) => {
          const tables = database
            .prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'")
            .pluck()
            .all() as string[]
          return tables
            .flatMap((table) =>
              (database.pragma(`table_info(${table})`) as { name: string; type: string }[]).map(
                (column) => `${table}.${column.name} ${column.type}`,
              ),
            )
            .sort()
        })
      },
      async execute(statement) {
        open((database) => database.exec(statement))
      },
      async close() {
        await rm(home, { recursive: true, force: true })
      },
    }
  },
}

/** PostgreSQL at 127.0.0.1:5432 (trust auth): a fresh database per restore, the dump loaded into it. */
async function postgresBackend(): Promise<Backend> {
  const admin = async (statement: string): Promise<void> => {
    const client = new pg.Client({ ...PG, database: 'test', connectionTimeoutMillis: 2_000 })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }
  try {
    await admin('select 1')
  } catch (error) {
    return {
      name: 'PostgreSQL',
      skip: `PostgreSQL is not reachable at 127.0.0.1:5432 (${(error as Error).message})`,
      restore: () => Promise.reject(new Error('unreachable')),
    }
  }
  let counter = 0
  return {
    name: 'PostgreSQL',
    async restore(options = {}) {
      counter += 1
      const database = `lango_upgrade_${process.pid}_${Math.random().toString(36).slice(2, 8)}_${counter}`
      await admin(`create database ${database}`)
      const client = new pg.Client({ ...PG, database })
      await client.connect()
      // The dump sets search_path to '' (it names every table public.x); later queries want public.
      if (options.fresh !== true) await client.query(await readFile(POSTGRES_FIXTURE, 'utf8'))
      await client.query('set search_path = public')
      const home = await mkdtemp(join(tmpdir(), 'lango-upgrade-'))
      return {
        home,
        url: `postgres://${PG.user}@${PG.host}:${PG.port}/${database}`,
        async rows() {
          const rows: Rows = {}
          for (const [table, key] of Object.entries(DATA_TABLES)) {
            const result = await client.query<Record<string, unknown>>(`select * from ${table}`)
            rows[table] = result.rows.map((row) => keyOf(row, key)).sort()
          }
          return rows
        },
        async columns() {
          const result = await client.query<{ table_name: string; column_name: string; data_type: string }>(
            "select table_name, column_name, data_type from information_schema.columns where table_schema = 'public'",
          )
          return result.rows.map((row) => `${row.table_name}.${row.column_name} ${row.data_type}`).sort()
        },
        async execute(statement) {
          await client.query(statement)
        },
        async close() {
          await client.end()
          await admin(`drop database if exists ${database} with (force)`)
          await rm(home, { recursive: true, force: true })
        },
      }
    },
  }
}

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function restore(backend: Backend, options?: { fresh?: boolean }): Promise<Restored> {
  const restored = await backend.restore(options)
  cleanups.push(() => restored.close())
  return restored
}

/**
 * The configuration of `restored`'s home, with retention that keeps the fixture's old rows (made
 * long before this test runs: the default 30 days would prune them, which is retention, not an
 * upgrade losing data).
 */
async function configOf(restored: Restored, model?: FakeOpenAI): Promise<ServerConfig> {
  const loaded = await loadConfig({
    env: {
      LANGO_HOME: restored.home,
      ...(restored.url === undefined ? {} : { LANGO_DATABASE_URL: restored.url }),
      ...(model === undefined ? {} : { LANGO_MODEL_BASE_URL: model.baseUrl, LANGO_MODEL: 'test-model' }),
    },
    cwd: restored.home,
    home: restored.home,
  })
  const keep = 100 * YEAR_MS
  return {
    ...loaded,
    server: { ...loaded.server, host: '127.0.0.1', port: 0 },
    agent: { ...loaded.agent, maxRetries: 0 },
    sessions: { ...loaded.sessions, retentionMs: keep },
    cron: { ...loaded.cron, historyMaxAgeMs: keep },
    workflow: { ...loaded.workflow, historyMaxAgeMs: keep },
  }
}

async function start(restored: Restored, model?: FakeOpenAI): Promise<RunningServer> {
  const running = await serve({
    config: await configOf(restored, model),
    logger: silentLogger,
    passphrase: FIXTURE.passphrase,
    closeGraceMs: 200,
  })
  cleanups.push(() => running.close())
  return running
}

async function api(server: RunningServer, path: string, body?: unknown): Promise<Json> {
  const response = await fetch(`${server.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  })
  const json = (await response.json()) as Json
  expect(response.status, `${path}: ${JSON.stringify(json)}`).toBeLessThan(300)
  return json
}

const backends = [sqlite, await postgresBackend()]

describe.each(backends)('upgrading a v0.1 database on $name', (backend) => {
  it.skipIf(backend.skip !== undefined)(
    'migrates it to the schema of a fresh database and keeps every row, which the API reads back',
    async () => {
      const restored = await restore(backend)
      const before = await restored.rows()
      expect(before.cron_jobs).toHaveLength(3)
      expect(before.cron_runs).toHaveLength(4)
      expect(before.approvals).toHaveLength(2)

      const model = await startFakeOpenAI([reply.text('It was 4217.')])
      cleanups.push(() => model.close())
      const server = await start(restored, model)

      // Cron: the jobs, as paused by v0.1, and each job's history.
      const { jobs } = await api(server, '/api/cron/jobs')
      const byName = new Map<string, Json>(jobs.map((job: Json) => [job.name, job]))
      expect([...byName.keys()].sort()).toEqual([FIXTURE.aiJob, FIXTURE.failingJob, FIXTURE.shellJob])
      expect(byName.get(FIXTURE.shellJob)).toMatchObject({ enabled: false })
      const history = async (job: string): Promise<Json[]> =>
        (await api(server, `/api/cron/runs?job=${job}`)).entries
      const ai = await history(FIXTURE.aiJob)
      expect(ai).toHaveLength(1)
      expect(ai[0]).toMatchObject({ status: 'completed' })
      expect(JSON.stringify(ai[0])).toContain('Weekly report: all systems nominal.')
      expect((await history(FIXTURE.shellJob)).map((run) => run.status).sort()).toEqual([
        'completed',
        'skipped',
      ])
      const failed = await history(FIXTURE.failingJob)
      expect(failed[0]).toMatchObject({ status: 'failed' })

      // The workflow run, with its steps' results.
      const { runs } = await api(server, '/api/workflows/runs')
      const run = runs.find((candidate: Json) => candidate.workflow_name === FIXTURE.workflow)
      expect(run).toMatchObject({ status: 'completed' })
      const detail = await api(server, `/api/workflows/runs/${run.run_id}`)
      expect(JSON.stringify(detail)).toContain('report of fetched')

      // The vault: the secret's name, and its value still decrypts (the command sees it, masked).
      expect((await api(server, '/api/tools/secrets_list', {})).result.secrets).toEqual([
        { name: FIXTURE.secretName, token: `{{secret:${FIXTURE.secretName}}}` },
      ])

      // Approvals: the decided one as it was, with its outcome; the pending one is still listed.
      const { approvals } = await api(server, '/api/approvals')
      const approved = approvals.find((approval: Json) => approval.summary.includes('fixture-approved'))
      expect(approved).toMatchObject({ status: 'approved', tool: 'exec' })
      expect(JSON.stringify(approved.outcome)).toContain('fixture-approved')
      expect(
        approvals.find((approval: Json) => approval.summary.includes('fixture-pending-approval')),
      ).toBeDefined()

      // The chat session: the next turn sends the model the conversation of v0.1.
      const chat = await api(server, '/api/chat', { session: FIXTURE.chatSession, message: 'Which number?' })
      expect(chat.reply).toBe('It was 4217.')
      const sent = JSON.stringify(model.chatBodies.at(-1)?.messages)
      expect(sent).toContain(FIXTURE.firstMessage)
      expect(sent).toContain('Noted: 4217.')
      await server.close()

      // Every row is still there; the only new ones are the chat turn's two messages.
      const after = await restored.rows()
      for (const [table, keys] of Object.entries(before)) {
        expect(after[table], table).toEqual(expect.arrayContaining(keys))
        expect(after[table]?.length, table).toBe(keys.length + (table === 'session_messages' ? 2 : 0))
      }

      // Migrated to the latest: the same tables and columns as a database this server created.
      const fresh = await restore(backend, { fresh: true })
      await (await start(fresh)).close()
      expect(await restored.columns()).toEqual(await fresh.columns())
    },
  )

  it.skipIf(backend.skip !== undefined)(
    'refuses a database a newer Lango migrated, naming the migration, and changes nothing',
    async () => {
      const restored = await restore(backend)
      // As every lango.db is (the server sets WAL on its first open; the fixture is stored without).
      if (restored.url === undefined) await restored.execute('pragma journal_mode = WAL')
      await restored.execute(
        `insert into lango_workflow_migration (name, timestamp) values ('0009_from_the_future', '2031-01-01T00:00:00.000Z')`,
      )
      const columns = await restored.columns()
      const rows = await restored.rows()
      const file = join(restored.home, 'lango.db')
      const bytes = restored.url === undefined ? await readFile(file) : undefined

      const known = Object.keys(workflowMigrations).sort().at(-1)
      await expect(start(restored)).rejects.toMatchObject({
        code: 'SERVER_DATABASE_TOO_NEW',
        message: expect.stringContaining(
          `was migrated by a newer Lango (migration 0009_from_the_future of workflow); this server knows workflow migrations up to ${known}; upgrade the server or restore a backup`,
        ),
        data: { feature: 'workflow', migration: '0009_from_the_future', known },
      })
      // Nothing written: not cron's migrations (checked before any runs), not a byte of the file.
      expect(await restored.columns()).toEqual(columns)
      expect(await restored.rows()).toEqual(rows)
      if (bytes !== undefined) expect(hash(await readFile(file))).toBe(hash(bytes))
    },
  )
})

function hash(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex')
}

describe('lango serve on a database a newer Lango migrated', () => {
  it('exits non-zero with the message, before listening', async () => {
    const restored = await restore(sqlite)
    await restored.execute(
      `insert into lango_cron_migration (name, timestamp) values ('0042_from_the_future', '2031-01-01T00:00:00.000Z')`,
    )
    const child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], {
      env: { ...process.env, LANGO_HOME: restored.home, LANGO_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk) => {
      output += chunk
    })
    child.stderr.on('data', (chunk) => {
      output += chunk
    })
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
    expect(code).not.toBe(0)
    const latest = Object.keys(cronMigrations).sort().at(-1)
    expect(output).toContain(
      `the database at ${join(restored.home, 'lango.db')} was migrated by a newer Lango (migration 0042_from_the_future of cron); this server knows cron migrations up to ${latest}`,
    )
    expect(output).not.toContain('lango listening on')
  })
})

describe('lango doctor on a database a newer Lango migrated', () => {
  it('fails its database check naming the unknown migration, of any feature (approvals here)', async () => {
    const restored = await restore(sqlite)
    await restored.execute(
      `insert into approval_migrations (name, timestamp) values ('0007_from_the_future', '2031-01-01T00:00:00.000Z')`,
    )
    const child = spawn(process.execPath, [CLI, 'doctor', '--json'], {
      env: {
        ...process.env,
        LANGO_HOME: restored.home,
        LANGO_URL: 'http://127.0.0.1:9',
        LANGO_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    let stdout = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    await new Promise((resolve) => child.once('close', resolve))
    const report = JSON.parse(stdout) as { checks: { name: string; status: string; message: string }[] }
    expect(report.checks.find((check) => check.name === 'database')).toMatchObject({
      status: 'fail',
      message: expect.stringContaining(
        'was migrated by a newer lango (unknown migrations: approvals/0007_from_the_future)',
      ),
    })
  })
})
