import type { Kysely, Migration } from 'kysely'
import { Migrator, PostgresAdapter, sql } from 'kysely'

/** `workflow_runs`: one row per run, keeping the YAML it was started from. Times are epoch ms. */
export interface WorkflowRunsTable {
  id: string
  workflow_name: string
  /** The YAML text; resume re-reads it. */
  definition: string
  status: string
  total_steps: number
  completed_steps: number
  error: string | null
  /** JSON array of targets, validated on read. */
  deliver_to: string
  origin_session: string | null
  owner: string | null
  started_at: number | null
  completed_at: number | null
  /** The fencing token (migration 0003): 1 at insert, +1 at each takeover; 0 for runs stored before. */
  lease_version: number
  /** Until when `owner` holds the run (migration 0003); null for runs stored before leases. */
  lease_expires_at: number | null
  /** The run this one reruns (migration 0004); null for runs started afresh. */
  rerun_of: string | null
  /** `{{trigger.payload}}` of the run (migration 0005); null for runs without one. */
  trigger_payload: string | null
  /** Who the run's spend counts against (migration 0006); null for none and for runs stored before. */
  creator: string | null
}

/** `workflow_step_runs`: one row per step of a run, primary key `(run_id, step_id)`. */
export interface WorkflowStepRunsTable {
  run_id: string
  step_id: string
  position: number
  status: string
  /** The rendered prompt or command (templates substituted). */
  input: string | null
  result: string | null
  error: string | null
  attempt: number
  started_at: number | null
  completed_at: number | null
  /** Tokens a completed `prompt` step reported (migration 0002); null for `run` steps and steps without a count. */
  input_tokens: number | null
  output_tokens: number | null
  /** For a step a rerun reused (status `completed`): the run that produced its result (migration 0004). */
  reused_from: string | null
}

/** `workflow_owners`: live engine instances and their last heartbeat (the lease). */
interface WorkflowOwnersTable {
  id: string
  started_at: number
  heartbeat_at: number
}

/** The tables `@lango/workflow` owns. A host's database type includes them (`Kysely<HostDatabase & WorkflowDatabase>`). */
export interface WorkflowDatabase {
  workflow_runs: WorkflowRunsTable
  workflow_step_runs: WorkflowStepRunsTable
  workflow_owners: WorkflowOwnersTable
}

/** The migration table apps must always use for this package (kysely: "ALWAYS use the same value"). */
export const WORKFLOW_MIGRATION_TABLE = 'lango_workflow_migration'

/** Migrations of `@lango/workflow`, portable across SQLite and PostgreSQL (plain kysely schema builder). */
export const workflowMigrations: Readonly<Record<string, Migration>> = Object.freeze({
  '0001_create_workflow_tables': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('workflow_runs')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('workflow_name', 'text', (column) => column.notNull())
        .addColumn('definition', 'text', (column) => column.notNull())
        .addColumn('status', 'text', (column) => column.notNull())
        .addColumn('total_steps', 'integer', (column) => column.notNull())
        .addColumn('completed_steps', 'integer', (column) => column.notNull().defaultTo(0))
        .addColumn('error', 'text')
        .addColumn('deliver_to', 'text', (column) => column.notNull())
        .addColumn('origin_session', 'text')
        .addColumn('owner', 'text')
        .addColumn('started_at', 'bigint')
        .addColumn('completed_at', 'bigint')
        .execute()
      await db.schema
        .createIndex('workflow_runs_status_owner')
        .on('workflow_runs')
        .columns(['status', 'owner'])
        .execute()
      await db.schema
        .createIndex('workflow_runs_started_at')
        .on('workflow_runs')
        .column('started_at')
        .execute()
      await db.schema
        .createIndex('workflow_runs_completed_at')
        .on('workflow_runs')
        .column('completed_at')
        .execute()
      await db.schema
        .createTable('workflow_step_runs')
        .addColumn('run_id', 'text', (column) => column.notNull())
        .addColumn('step_id', 'text', (column) => column.notNull())
        .addColumn('position', 'integer', (column) => column.notNull())
        .addColumn('status', 'text', (column) => column.notNull())
        .addColumn('input', 'text')
        .addColumn('result', 'text')
        .addColumn('error', 'text')
        .addColumn('attempt', 'integer', (column) => column.notNull().defaultTo(0))
        .addColumn('started_at', 'bigint')
        .addColumn('completed_at', 'bigint')
        .addPrimaryKeyConstraint('workflow_step_runs_pk', ['run_id', 'step_id'])
        .execute()
      await db.schema
        .createTable('workflow_owners')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('started_at', 'bigint', (column) => column.notNull())
        .addColumn('heartbeat_at', 'bigint', (column) => column.notNull())
        .execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('workflow_owners').execute()
      await db.schema.dropTable('workflow_step_runs').execute()
      await db.schema.dropTable('workflow_runs').execute()
    },
  },
  '0002_add_step_token_counts': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      // One column per statement: SQLite's ALTER TABLE adds one column at a time. Existing rows
      // (steps recorded before tokens were counted) keep null.
      await db.schema.alterTable('workflow_step_runs').addColumn('input_tokens', 'bigint').execute()
      await db.schema.alterTable('workflow_step_runs').addColumn('output_tokens', 'bigint').execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('workflow_step_runs').dropColumn('output_tokens').execute()
      await db.schema.alterTable('workflow_step_runs').dropColumn('input_tokens').execute()
    },
  },
  '0003_add_run_leases': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      // Runs stored before keep version 0 and a null expiry: they are taken over by their owner's
      // heartbeat, as before, and get a lease when they are.
      await db.schema
        .alterTable('workflow_runs')
        .addColumn('lease_version', 'integer', (column) => column.notNull().defaultTo(0))
        .execute()
      await db.schema.alterTable('workflow_runs').addColumn('lease_expires_at', 'bigint').execute()
      await db.schema
        .createIndex('workflow_runs_status_lease')
        .on('workflow_runs')
        .columns(['status', 'lease_expires_at'])
        .execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropIndex('workflow_runs_status_lease').execute()
      await db.schema.alterTable('workflow_runs').dropColumn('lease_expires_at').execute()
      await db.schema.alterTable('workflow_runs').dropColumn('lease_version').execute()
    },
  },
  '0004_add_reruns': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      // Runs and steps stored before keep null: started afresh, and run where they are.
      await db.schema.alterTable('workflow_runs').addColumn('rerun_of', 'text').execute()
      await db.schema.alterTable('workflow_step_runs').addColumn('reused_from', 'text').execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('workflow_step_runs').dropColumn('reused_from').execute()
      await db.schema.alterTable('workflow_runs').dropColumn('rerun_of').execute()
    },
  },
  '0005_add_trigger_payload': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('workflow_runs').addColumn('trigger_payload', 'text').execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('workflow_runs').dropColumn('trigger_payload').execute()
    },
  },
  '0006_add_run_creator': {
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('workflow_runs').addColumn('creator', 'text').execute()
    },
    // biome-ignore lint/suspicious/noExplicitAny: migrations run against any schema version
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('workflow_runs').dropColumn('creator').execute()
    },
  },
})

/**
 * Runs {@link workflowMigrations} to the latest version with kysely's Migrator and the fixed
 * migration table `lango_workflow_migration`; throws if any migration failed. Takes the host's
 * Kysely typed with any database that includes `WorkflowDatabase`.
 * @example await migrateWorkflow(db) // db: Kysely<CronDatabase & WorkflowDatabase>
 */
export async function migrateWorkflow<DB extends WorkflowDatabase>(db: Kysely<DB>): Promise<void> {
  const schema = await migrationSchemaOf(db)
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => ({ ...workflowMigrations }) },
    migrationTableName: WORKFLOW_MIGRATION_TABLE,
    migrationLockTableName: `${WORKFLOW_MIGRATION_TABLE}_lock`,
    ...(schema === undefined ? {} : { migrationTableSchema: schema }),
  })
  let { error, results } = await migrator.migrateToLatest()
  // A schema dropped by another client while the Migrator read the database's tables: read again.
  for (let attempt = 1; attempt < 3 && droppedElsewhere(error, schema); attempt += 1)
    ({ error, results } = await migrator.migrateToLatest())
  if (error !== undefined) {
    const failed = results?.find((result) => result.status === 'Error')?.migrationName
    throw new Error(`@lango/workflow migration${failed === undefined ? '' : ` ${failed}`} failed`, {
      cause: error,
    })
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
