import type { Kysely, Migration } from 'kysely'
import { Migrator, PostgresAdapter, sql } from 'kysely'

/**
 * The `cron_jobs` table. Times are epoch milliseconds (`bigint`; PostgreSQL drivers may return
 * them as strings, which the store coerces). `enabled` is 0/1 on every database.
 */
export interface CronJobsTable {
  id: string
  name: string
  kind: string
  schedule_type: string
  schedule: string
  timezone: string
  prompt: string | null
  command: string | null
  cwd: string | null
  model: string | null
  session_mode: string
  /** JSON array of targets, validated on read. */
  deliver_to: string
  enabled: number
  timeout_ms: number
  overlap: string
  catchup: string
  created_at: number
  updated_at: number
  last_run_at: number | null
  next_run_at: number | null
  last_status: string | null
  consecutive_failures: number
  pause_reason: string | null
  created_by: string | null
  /** Dead-man monitor URL (migration 0005); null for none. */
  ping_url: string | null
  /** The job's daily budgets (migration 0008): tokens, and US dollars in whole nano-dollars; null for none. */
  max_tokens_per_day: number | null
  max_cost_per_day_nano_usd: number | null
  /** Which runs are delivered (migration 0004): `always`, `failure`, `state_changes`, `never`. */
  notify: string
  /** An `ai` job's gate command (migration 0006); null for none. */
  when_command: string | null
}

/** The occurrence ledger `cron_runs`, unique on `(job_id, scheduled_for)`. */
export interface CronRunsTable {
  id: string
  job_id: string
  job_name: string
  trigger: string
  status: string
  scheduled_for: number
  started_at: number | null
  completed_at: number | null
  duration_ms: number | null
  result: string | null
  error: string | null
  skip_reason: string | null
  delivery_status: string
  delivery_error: string | null
  owner: string | null
  /** Tokens an `ai` run reported (migration 0002); null for shell runs and runs without a count. */
  input_tokens: number | null
  output_tokens: number | null
}

/** The delivery ledger `cron_deliveries` (migration 0004), unique on `(run_id, target)`. */
export interface CronDeliveriesTable {
  id: string
  run_id: string
  job_id: string
  target: string
  /** `pending`, `sending`, `delivered` or `failed`. */
  status: string
  attempts: number
  next_attempt_at: number | null
  last_error: string | null
  text: string
  owner: string | null
  created_at: number
  updated_at: number
  delivered_at: number | null
}

/** Live scheduler instances (`owner` of runs), with their last heartbeat. */
export interface CronOwnersTable {
  id: string
  started_at: number
  heartbeat_at: number
}

/** The tables `@lango/cron` owns. Narrow the app's Kysely to this at the composition root. */
export interface CronDatabase {
  cron_jobs: CronJobsTable
  cron_runs: CronRunsTable
  cron_owners: CronOwnersTable
  cron_deliveries: CronDeliveriesTable
}

/** The migration table name apps must always use for this package (kysely: "ALWAYS use the same value"). */
export const CRON_MIGRATION_TABLE = 'lango_cron_migration'

/** Migrations of `@lango/cron`, runnable on SQLite and PostgreSQL. */
export const cronMigrations: Readonly<Record<string, Migration>> = Object.freeze({
  '0001_create_cron_tables': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('cron_jobs')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('name', 'text', (column) => column.notNull().unique())
        .addColumn('kind', 'text', (column) => column.notNull())
        .addColumn('schedule_type', 'text', (column) => column.notNull())
        .addColumn('schedule', 'text', (column) => column.notNull())
        .addColumn('timezone', 'text', (column) => column.notNull())
        .addColumn('prompt', 'text')
        .addColumn('command', 'text')
        .addColumn('cwd', 'text')
        .addColumn('model', 'text')
        .addColumn('session_mode', 'text', (column) => column.notNull())
        .addColumn('deliver_to', 'text', (column) => column.notNull())
        .addColumn('enabled', 'integer', (column) => column.notNull())
        .addColumn('timeout_ms', 'bigint', (column) => column.notNull())
        .addColumn('overlap', 'text', (column) => column.notNull())
        .addColumn('catchup', 'text', (column) => column.notNull())
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .addColumn('updated_at', 'bigint', (column) => column.notNull())
        .addColumn('last_run_at', 'bigint')
        .addColumn('next_run_at', 'bigint')
        .addColumn('last_status', 'text')
        .addColumn('consecutive_failures', 'integer', (column) => column.notNull().defaultTo(0))
        .addColumn('pause_reason', 'text')
        .addColumn('created_by', 'text')
        .execute()
      await db.schema
        .createIndex('cron_jobs_enabled_next_run')
        .on('cron_jobs')
        .columns(['enabled', 'next_run_at'])
        .execute()
      await db.schema
        .createTable('cron_runs')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('job_id', 'text', (column) => column.notNull())
        .addColumn('job_name', 'text', (column) => column.notNull())
        .addColumn('trigger', 'text', (column) => column.notNull())
        .addColumn('status', 'text', (column) => column.notNull())
        .addColumn('scheduled_for', 'bigint', (column) => column.notNull())
        .addColumn('started_at', 'bigint')
        .addColumn('completed_at', 'bigint')
        .addColumn('duration_ms', 'bigint')
        .addColumn('result', 'text')
        .addColumn('error', 'text')
        .addColumn('skip_reason', 'text')
        .addColumn('delivery_status', 'text', (column) => column.notNull().defaultTo('none'))
        .addColumn('delivery_error', 'text')
        .addColumn('owner', 'text')
        .execute()
      // The occurrence ledger's key: one row per (job, scheduled instant), claimed by INSERT.
      await db.schema
        .createIndex('cron_runs_job_occurrence')
        .on('cron_runs')
        .columns(['job_id', 'scheduled_for'])
        .unique()
        .execute()
      // Partial: only running rows, so finishing a run frees its entry instead of moving it.
      await db.schema
        .createIndex('cron_runs_running_owner')
        .on('cron_runs')
        .column('owner')
        .where(sql.ref('status'), '=', 'running')
        .execute()
      await db.schema.createIndex('cron_runs_scheduled_for').on('cron_runs').column('scheduled_for').execute()
      await db.schema
        .createTable('cron_owners')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('started_at', 'bigint', (column) => column.notNull())
        .addColumn('heartbeat_at', 'bigint', (column) => column.notNull())
        .execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('cron_owners').execute()
      await db.schema.dropTable('cron_runs').execute()
      await db.schema.dropTable('cron_jobs').execute()
    },
  },
  '0002_add_run_token_counts': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      // One column per statement: SQLite's ALTER TABLE adds one column at a time. Existing rows
      // (runs recorded before tokens were counted) keep null.
      await db.schema.alterTable('cron_runs').addColumn('input_tokens', 'bigint').execute()
      await db.schema.alterTable('cron_runs').addColumn('output_tokens', 'bigint').execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('cron_runs').dropColumn('output_tokens').execute()
      await db.schema.alterTable('cron_runs').dropColumn('input_tokens').execute()
    },
  },
  '0003_index_job_changes_and_running_runs': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      // What each scheduler's periodic sync reads: jobs changed since its last look.
      await db.schema.createIndex('cron_jobs_updated_at').on('cron_jobs').column('updated_at').execute()
      // The overlap check of an exclusive claim: is a run of this job running (on any instance)?
      await db.schema
        .createIndex('cron_runs_running_job')
        .on('cron_runs')
        .column('job_id')
        .where(sql.ref('status'), '=', 'running')
        .execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropIndex('cron_runs_running_job').execute()
      await db.schema.dropIndex('cron_jobs_updated_at').execute()
    },
  },
  '0004_create_cron_deliveries': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      // Jobs made before notify policies deliver every run, as they did.
      await db.schema
        .alterTable('cron_jobs')
        .addColumn('notify', 'text', (column) => column.notNull().defaultTo('always'))
        .execute()
      await db.schema
        .createTable('cron_deliveries')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('run_id', 'text', (column) => column.notNull())
        .addColumn('job_id', 'text', (column) => column.notNull())
        .addColumn('target', 'text', (column) => column.notNull())
        .addColumn('status', 'text', (column) => column.notNull())
        .addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'bigint')
        .addColumn('last_error', 'text')
        .addColumn('text', 'text', (column) => column.notNull())
        .addColumn('owner', 'text')
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .addColumn('updated_at', 'bigint', (column) => column.notNull())
        .addColumn('delivered_at', 'bigint')
        .execute()
      // One row per (run, target): a run's result is delivered to a target once.
      await db.schema
        .createIndex('cron_deliveries_run_target')
        .on('cron_deliveries')
        .columns(['run_id', 'target'])
        .unique()
        .execute()
      await db.schema.createIndex('cron_deliveries_job').on('cron_deliveries').column('job_id').execute()
      // Partial: what the retry sweep reads, the rows not final yet.
      await db.schema
        .createIndex('cron_deliveries_open')
        .on('cron_deliveries')
        .columns(['status', 'next_attempt_at'])
        .where(sql.ref('status'), 'in', ['pending', 'sending'])
        .execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('cron_deliveries').execute()
      await db.schema.alterTable('cron_jobs').dropColumn('notify').execute()
    },
  },
  '0005_add_job_ping_url': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      // Jobs created before dead-man pings existed keep null: they ping nothing.
      await db.schema.alterTable('cron_jobs').addColumn('ping_url', 'text').execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('cron_jobs').dropColumn('ping_url').execute()
    },
  },
  '0006_add_job_when_command': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      // Jobs created before gates existed keep null: every run wakes the model, as it did.
      await db.schema.alterTable('cron_jobs').addColumn('when_command', 'text').execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('cron_jobs').dropColumn('when_command').execute()
    },
  },
  '0008_add_job_daily_budgets': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      // Jobs created before daily budgets existed keep null: no budget of their own.
      await db.schema.alterTable('cron_jobs').addColumn('max_tokens_per_day', 'bigint').execute()
      // Dollars in whole nano-dollars: every number column is an integer (PostgreSQL BIGINT).
      await db.schema.alterTable('cron_jobs').addColumn('max_cost_per_day_nano_usd', 'bigint').execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('cron_jobs').dropColumn('max_cost_per_day_nano_usd').execute()
      await db.schema.alterTable('cron_jobs').dropColumn('max_tokens_per_day').execute()
    },
  },
  '0009_index_jobs_by_schedule': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      // What a webhook call reads: the jobs of one hook (schedule type `webhook`, schedule the hook's
      // name), found by the index instead of a scan of every job.
      await db.schema
        .createIndex('cron_jobs_schedule')
        .on('cron_jobs')
        .columns(['schedule_type', 'schedule'])
        .execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropIndex('cron_jobs_schedule').execute()
    },
  },
})

/**
 * Runs {@link cronMigrations} to the latest version with kysely's Migrator and the fixed
 * migration table `lango_cron_migration`; throws if any migration failed. Takes the host's
 * handle as it is, typed for cron's tables and any others (`Kysely<CronDatabase & YourTables>`).
 * @example await migrateCron(db)
 */
export async function migrateCron<DB extends CronDatabase>(db: Kysely<DB>): Promise<void> {
  const schema = await migrationSchemaOf(db)
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => ({ ...cronMigrations }) },
    migrationTableName: CRON_MIGRATION_TABLE,
    migrationLockTableName: `${CRON_MIGRATION_TABLE}_lock`,
    ...(schema === undefined ? {} : { migrationTableSchema: schema }),
  })
  let { error, results } = await migrator.migrateToLatest()
  // A schema dropped by another client while the Migrator read the database's tables: read again.
  for (let attempt = 1; attempt < 3 && droppedElsewhere(error, schema); attempt += 1)
    ({ error, results } = await migrator.migrateToLatest())
  if (error !== undefined) {
    const failed = results?.find((result) => result.status === 'Error')?.migrationName
    throw new Error(`@lango/cron migration ${failed ?? ''} failed`.replace('  ', ' '), { cause: error })
  }
}

/**
 * On PostgreSQL the schema the handle works in (`current_schema()`), so the Migrator looks for its
 * table there only: without it, kysely takes a table of the same name in any other schema of the
 * database for this one's and then fails to find it (another app, or another lango, in a schema of
 * its own). Undefined elsewhere.
 */
async function migrationSchemaOf<DB>(db: Kysely<DB>): Promise<string | undefined> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return undefined
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db)
  return rows[0]?.schema ?? undefined
}

/**
 * Whether `error` is PostgreSQL's "schema … does not exist" (3F000) for a schema other than
 * `schema`: kysely's Migrator reads the tables of every schema of the database to find its own, and
 * a schema another client drops meanwhile fails that read (`has_schema_privilege` by name). Nothing
 * was migrated yet, and the next read does not see that schema: trying again is safe.
 */
function droppedElsewhere(error: unknown, schema: string | undefined): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  if (code !== '3F000' || typeof message !== 'string') return false
  return schema === undefined || !message.includes(`"${schema}"`)
}
