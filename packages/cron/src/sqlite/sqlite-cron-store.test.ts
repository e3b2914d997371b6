import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, type Migration, Migrator, SqliteDialect, sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { createTestDatabase } from '../__fixtures__/database.js'
import { CronError } from '../errors.js'
import * as entry from '../index.js'
import { createTestJob } from '../testing/test-job.js'
import { cronStoreContract } from '../testing/vitest.js'
import * as sqlite from './index.js'
import { CRON_MIGRATION_TABLE, type CronDatabase, cronMigrations, migrateCron } from './schema.js'
import { SqliteCronStore } from './sqlite-cron-store.js'

cronStoreContract('SqliteCronStore', async () => {
  const database = await createTestDatabase()
  return { store: new SqliteCronStore(database.db), cleanup: database.cleanup }
})

describe('SqliteCronStore specifics', () => {
  it('writes the next run times and the disables of a burst of jobs in one statement each, not one per job', async () => {
    const database = await createTestDatabase()
    const statements: string[] = []
    const db = new Kysely<CronDatabase>({
      dialect: new SqliteDialect({ database: new Database(database.path) }),
      log: (event) => {
        if (event.level === 'query') statements.push(event.query.sql)
      },
    })
    try {
      const store = new SqliteCronStore(db)
      const fired = Array.from({ length: 300 }, (_, index) =>
        createTestJob({ name: `at-${index}`, nextRunAt: 1_000, updatedAt: 5 }),
      )
      const every = Array.from({ length: 300 }, (_, index) =>
        createTestJob({ name: `every-${index}`, nextRunAt: 1_000 }),
      )
      for (const job of [...fired, ...every]) await store.insertJob(job)
      statements.length = 0
      await store.updateSchedules([
        ...fired.map((job) => ({
          id: job.id,
          version: 5,
          nextRunAt: null,
          lastRunAt: 1_000,
          disable: { reason: 'done: the one-time (at) schedule has fired' },
        })),
        ...every.map((job) => ({ id: job.id, nextRunAt: 61_000, lastRunAt: 1_000 })),
      ])
      expect(statements.filter((text) => text.startsWith('update'))).toHaveLength(2)
      const disabled = await store.listJobs({ ids: fired.map((job) => job.id) })
      expect(disabled.filter((job) => !job.enabled && job.pauseReason?.startsWith('done:'))).toHaveLength(300)
      const moved = await store.listJobs({ ids: every.map((job) => job.id) })
      expect(moved.filter((job) => job.enabled && job.nextRunAt === 61_000)).toHaveLength(300)
    } finally {
      await db.destroy()
      await database.cleanup()
    }
  })

  it("lists the jobs of one hook through the schedule index, not by reading every job (a webhook call's lookup)", async () => {
    const database = await createTestDatabase()
    const queries: { sql: string; parameters: readonly unknown[] }[] = []
    const db = new Kysely<CronDatabase>({
      dialect: new SqliteDialect({ database: new Database(database.path) }),
      log: (event) => {
        if (event.level === 'query') queries.push(event.query)
      },
    })
    const raw = new Database(database.path, { readonly: true })
    try {
      const store = new SqliteCronStore(db)
      for (let index = 0; index < 200; index++)
        await store.insertJob(createTestJob({ name: `nightly-${index}` }))
      await store.insertJob(
        createTestJob({ name: 'on-push', scheduleType: 'webhook', schedule: 'push', nextRunAt: null }),
      )
      queries.length = 0
      const jobs = await store.listJobs({ enabled: true, scheduleType: 'webhook', schedule: 'push' })
      expect(jobs.map((job) => job.name)).toEqual(['on-push'])
      const [query] = queries
      const plan = raw
        .prepare(`explain query plan ${query?.sql}`)
        .all(...(query?.parameters ?? []))
        .map((row) => (row as { detail: string }).detail)
        .join('\n')
      expect(plan).toMatch(
        /SEARCH cron_jobs USING INDEX cron_jobs_schedule \(schedule_type=\? AND schedule=\?\)/,
      )
    } finally {
      raw.close()
      await db.destroy()
      await database.cleanup()
    }
  })

  it('migrates idempotently into lango_cron_migration', async () => {
    const database = await createTestDatabase()
    try {
      await migrateCron(database.db)
      const rows = await sql<{ name: string }>`select name from lango_cron_migration`.execute(database.db)
      expect(rows.rows.map((row) => row.name)).toEqual(Object.keys(cronMigrations))
    } finally {
      await database.cleanup()
    }
  })

  it('migrates a database made before token counts: old runs read null tokens, new runs store them', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'lango-cron-0001-'))
    const db = new Kysely<CronDatabase>({
      dialect: new SqliteDialect({ database: new Database(join(directory, 'old.db')) }),
    })
    try {
      const first = Object.keys(cronMigrations)[0] as string
      const migrator = new Migrator({
        db,
        provider: {
          getMigrations: async () => ({ [first]: cronMigrations[first] as (typeof cronMigrations)[string] }),
        },
        migrationTableName: CRON_MIGRATION_TABLE,
        migrationLockTableName: `${CRON_MIGRATION_TABLE}_lock`,
      })
      expect((await migrator.migrateToLatest()).error).toBeUndefined()
      const job = createTestJob()
      // A run recorded by the previous version, through the columns it knew.
      await sql`insert into cron_runs (id, job_id, job_name, trigger, status, scheduled_for, started_at,
        completed_at, duration_ms, result, delivery_status) values ('old', ${job.id}, ${job.name},
        'schedule', 'completed', 1000, 1000, 2000, 1000, 'done', 'none')`.execute(db)
      await migrateCron(db)
      const store = new SqliteCronStore(db)
      await store.insertJob(job)
      expect(await store.getRun('old')).toMatchObject({
        status: 'completed',
        inputTokens: null,
        outputTokens: null,
      })
      await store.insertRuns([
        {
          id: 'new',
          jobId: job.id,
          jobName: job.name,
          trigger: 'schedule',
          status: 'running',
          scheduledFor: 3000,
          startedAt: 3000,
          completedAt: null,
          skipReason: null,
          owner: 'o',
        },
      ])
      await store.completeRun('new', {
        status: 'completed',
        completedAt: 4000,
        durationMs: 1000,
        result: 'ok',
        error: null,
        inputTokens: 10,
        outputTokens: 5,
      })
      expect(await store.getRun('new')).toMatchObject({ inputTokens: 10, outputTokens: 5 })
      expect(await store.aiTokenTotals({ since: 0, bucketMs: 60_000 })).toEqual([{ at: 0, tokens: 15 }])
      // And back: 0002's down drops the columns again.
      const full = new Migrator({
        db,
        provider: { getMigrations: async () => ({ ...cronMigrations }) },
        migrationTableName: CRON_MIGRATION_TABLE,
        migrationLockTableName: `${CRON_MIGRATION_TABLE}_lock`,
      })
      expect((await full.migrateTo(first)).error).toBeUndefined()
      const columns = await sql<{ name: string }>`select name from pragma_table_info('cron_runs')`.execute(db)
      expect(columns.rows.map((row) => row.name)).not.toContain('input_tokens')
    } finally {
      await db.destroy()
      await rm(directory, { recursive: true, force: true })
    }
  })

  it('validates JSON columns on read and reports a corrupt row with CRON_STORE_CORRUPT', async () => {
    const database = await createTestDatabase()
    try {
      const store = new SqliteCronStore(database.db)
      const job = createTestJob()
      await store.insertJob(job)
      await database.db
        .updateTable('cron_jobs')
        .set({ deliver_to: '{"not":"a list"}' })
        .where('id', '=', job.id)
        .execute()
      const error = await store.getJob(job.id).catch((caught: unknown) => caught)
      expect(CronError.is(error) && error.code).toBe('CRON_STORE_CORRUPT')
      expect((error as Error).message).toMatch(/deliver_to/)
    } finally {
      await database.cleanup()
    }
  })

  it('reports a corrupt schedule column read for a preview (enabledSchedules) with CRON_STORE_CORRUPT', async () => {
    const database = await createTestDatabase()
    try {
      const store = new SqliteCronStore(database.db)
      const job = createTestJob({ name: 'daily', scheduleType: 'cron', schedule: '0 9 * * *' })
      await store.insertJob(job)
      expect(await store.enabledSchedules()).toMatchObject([
        { id: job.id, scheduleType: 'cron', enabled: true },
      ])
      for (const [column, value, expected] of [
        ['schedule_type', 'weekly', /"schedule_type": expected cron, every, at, webhook, got "weekly"/],
        ['next_run_at', 'soon', /"next_run_at": expected an integer, got "soon"/],
      ] as const) {
        await sql`update cron_jobs set ${sql.ref(column)} = ${value} where id = ${job.id}`.execute(
          database.db,
        )
        const error = await store.enabledSchedules().catch((caught: unknown) => caught)
        expect(CronError.is(error) && error.code).toBe('CRON_STORE_CORRUPT')
        expect((error as Error).message).toMatch(expected)
        await store.updateJob(job.id, { scheduleType: 'cron', nextRunAt: 1000 })
      }
    } finally {
      await database.cleanup()
    }
  })

  it('two connections on one file: each occurrence is claimed exactly once', async () => {
    const database = await createTestDatabase()
    try {
      const one = new SqliteCronStore(database.db)
      const two = new SqliteCronStore(database.connect())
      const job = createTestJob()
      await one.insertJob(job)
      const claims = await Promise.all(
        Array.from({ length: 200 }, (_, index) => {
          const store = index % 2 === 0 ? one : two
          return store.insertRuns([
            {
              id: `claim-${index}`,
              jobId: job.id,
              jobName: job.name,
              trigger: 'schedule',
              status: 'running',
              scheduledFor: Math.floor(index / 2),
              startedAt: 0,
              completedAt: null,
              skipReason: null,
              owner: index % 2 === 0 ? 'one' : 'two',
            },
          ])
        }),
      )
      expect(claims.reduce((total, claimed) => total + claimed.inserted.size, 0)).toBe(100)
    } finally {
      await database.cleanup()
    }
  })
})

describe('a database whose migrations never ran', () => {
  it('start() and add() reject with a CronError that says to run migrateCron, and work once it ran', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'lango-cron-'))
    const db = new Kysely<CronDatabase>({
      dialect: new SqliteDialect({ database: new Database(join(directory, 'test.db')) }),
    })
    try {
      const service = new entry.CronService({ store: new sqlite.SqliteCronStore(db), defaultTimezone: 'UTC' })
      const job = { name: 'news', scheduleType: 'cron', schedule: '0 8 * * *', prompt: 'Headlines' }
      for (const call of [() => service.start(), () => service.add(job)]) {
        const error = await call().then(
          () => undefined,
          (reason: unknown) => reason,
        )
        expect(entry.CronError.is(error)).toBe(true)
        expect(error).toMatchObject({ code: 'CRON_STORE_NOT_MIGRATED', data: { problem: 'not-migrated' } })
        expect((error as Error).message).toMatch(
          /^The database's table cron_\w+ is missing or out of date: cron's migrations have not run on it\. Run `await migrateCron\(db\)`/,
        )
      }
      await service.stop()
      await sqlite.migrateCron(db)
      expect((await service.add(job)).status).toBe('created')
    } finally {
      await db.destroy()
      await rm(directory, { recursive: true, force: true })
    }
  })

  it('a database migrated only by an older release (a column missing) is CRON_STORE_NOT_MIGRATED too, before any write', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'lango-cron-'))
    const db = new Kysely<CronDatabase>({
      dialect: new SqliteDialect({ database: new Database(join(directory, 'test.db')) }),
    })
    try {
      // Every table there, the daily budgets' columns (0008) not yet.
      const before = Object.fromEntries(
        Object.entries(sqlite.cronMigrations).filter(([name]) => name < '0008'),
      ) as Record<string, Migration>
      const older = new Migrator({
        db,
        provider: { getMigrations: async () => before },
        migrationTableName: sqlite.CRON_MIGRATION_TABLE,
        migrationLockTableName: `${sqlite.CRON_MIGRATION_TABLE}_lock`,
      })
      expect((await older.migrateToLatest()).error).toBeUndefined()
      const store = new sqlite.SqliteCronStore(db)
      const error = await store.listJobs().then(
        () => undefined,
        (reason: unknown) => reason,
      )
      expect(error).toMatchObject({ code: 'CRON_STORE_NOT_MIGRATED', data: { problem: 'not-migrated' } })
      await sqlite.migrateCron(db)
      expect(await store.listJobs()).toEqual([])
    } finally {
      await db.destroy()
      await rm(directory, { recursive: true, force: true })
    }
  })
})
