/**
 * `@lango/cron`'s store on a real PostgreSQL (127.0.0.1:5432, database `test`, trust auth): the
 * store contract, and a database made before migration 0002 (token counts) migrating with its
 * rows. The package itself has no PostgreSQL driver, so this runs here, where `pg` is installed;
 * skipped (saying why) when the server is not reachable. Each database is a fresh schema.
 */
import {
  CRON_MIGRATION_TABLE,
  type CronDatabase,
  cronMigrations,
  migrateCron,
  SqliteCronStore,
} from '@lango/cron/sqlite'
import { createTestJob } from '@lango/cron/testing'
import { cronStoreContract } from '@lango/cron/testing/vitest'
import { type Kysely, Migrator, sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { type PostgresSchema, postgresSchemas } from './fixtures/postgres-schema.js'

type Schema = PostgresSchema<CronDatabase>

/** The schema a handle's `search_path` names. */
async function currentSchema(db: Kysely<CronDatabase>): Promise<string> {
  const { rows } = await sql<{ name: string }>`select current_schema() as name`.execute(db)
  return rows[0]?.name as string
}

const backend = await postgresSchemas<CronDatabase>('cron_test')
const open = backend.open
describe.skipIf(open === undefined)(
  `@lango/cron on PostgreSQL${backend.reason === undefined ? '' : ` — SKIPPED: ${backend.reason}`}`,
  () => {
    cronStoreContract('SqliteCronStore on PostgreSQL', async () => {
      const schema = await (open as () => Promise<Schema>)()
      await migrateCron(schema.db)
      return { store: new SqliteCronStore(schema.db), cleanup: () => schema.close() }
    })

    it('a database made before token counts migrates: old runs read null, new ones store bigint counts', async () => {
      const schema = await (open as () => Promise<Schema>)()
      const { db } = schema
      try {
        const first = Object.keys(cronMigrations)[0] as string
        const before = new Migrator({
          db,
          provider: {
            getMigrations: async () => ({
              [first]: cronMigrations[first] as (typeof cronMigrations)[string],
            }),
          },
          migrationTableName: CRON_MIGRATION_TABLE,
          migrationLockTableName: `${CRON_MIGRATION_TABLE}_lock`,
          // As migrateCron does: kysely otherwise takes a lock table in another test's schema for this one's.
          migrationTableSchema: await currentSchema(db),
        })
        expect((await before.migrateToLatest()).error).toBeUndefined()
        const job = createTestJob()
        await sql`insert into cron_runs (id, job_id, job_name, trigger, status, scheduled_for, started_at,
          completed_at, duration_ms, result, delivery_status) values ('old', ${job.id}, ${job.name},
          'schedule', 'completed', 1000, 1000, 2000, 1000, 'done', 'none')`.execute(db)
        await migrateCron(db)
        const columns = await sql<{ column_name: string; data_type: string; is_nullable: string }>`
          select column_name, data_type, is_nullable from information_schema.columns
          where table_schema = current_schema() and table_name = 'cron_runs'
            and column_name in ('input_tokens', 'output_tokens') order by column_name`.execute(db)
        expect(columns.rows).toEqual([
          { column_name: 'input_tokens', data_type: 'bigint', is_nullable: 'YES' },
          { column_name: 'output_tokens', data_type: 'bigint', is_nullable: 'YES' },
        ])
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
          inputTokens: 5_000_000_000,
          outputTokens: 5,
        })
        // pg returns int8 as text; the store decodes it.
        const raw = await db
          .selectFrom('cron_runs')
          .select('input_tokens')
          .where('id', '=', 'new')
          .executeTakeFirst()
        expect(raw?.input_tokens).toBe('5000000000')
        expect(await store.getRun('new')).toMatchObject({ inputTokens: 5_000_000_000, outputTokens: 5 })
        expect(await store.aiTokenTotals({ since: 0, bucketMs: 60_000 })).toEqual([
          { at: 0, tokens: 5_000_000_005 },
        ])
        // And back down: 0002 drops the columns again.
        const all = new Migrator({
          db,
          provider: { getMigrations: async () => ({ ...cronMigrations }) },
          migrationTableName: CRON_MIGRATION_TABLE,
          migrationLockTableName: `${CRON_MIGRATION_TABLE}_lock`,
          // As migrateCron does: kysely otherwise takes a lock table in another test's schema for this one's.
          migrationTableSchema: await currentSchema(db),
        })
        expect((await all.migrateTo(first)).error).toBeUndefined()
      } finally {
        await schema.close()
      }
    })

    it("a schema never migrated, or migrated by an older release, is CRON_STORE_NOT_MIGRATED (by PostgreSQL's error codes)", async () => {
      const schema = await (open as () => Promise<Schema>)()
      const { db } = schema
      try {
        const store = new SqliteCronStore(db)
        const failure = () =>
          store.listJobs().then(
            () => undefined,
            (reason: unknown) => reason,
          )
        // No table: undefined_table (42P01).
        expect(await failure()).toMatchObject({
          code: 'CRON_STORE_NOT_MIGRATED',
          data: { table: 'cron_jobs' },
        })
        // Every table, without the daily budgets' columns (0008): undefined_column (42703).
        const older = new Migrator({
          db,
          provider: {
            getMigrations: async () =>
              Object.fromEntries(Object.entries(cronMigrations).filter(([name]) => name < '0008')),
          },
          migrationTableName: CRON_MIGRATION_TABLE,
          migrationLockTableName: `${CRON_MIGRATION_TABLE}_lock`,
          // As migrateCron does: kysely otherwise takes a lock table in another test's schema for this one's.
          migrationTableSchema: await currentSchema(db),
        })
        expect((await older.migrateToLatest()).error).toBeUndefined()
        expect(await failure()).toMatchObject({
          code: 'CRON_STORE_NOT_MIGRATED',
          data: { table: 'cron_jobs' },
        })
        await migrateCron(db)
        expect(await store.listJobs()).toEqual([])
      } finally {
        await schema.close()
      }
    })
  },
)
