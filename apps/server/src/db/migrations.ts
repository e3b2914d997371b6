import { type Kysely, type Migration, Migrator, PostgresAdapter, sql } from 'kysely'

/**
 * Runs a module's migrations to the latest with kysely's Migrator and its own fixed migration table
 * (`<table>` and `<table>_lock`: kysely says "ALWAYS use the same value"), on SQLite and PostgreSQL.
 * Throws `<what> migration <name> failed` with the driver's error as the cause.
 */
export async function runMigrations<DB>(
  db: Kysely<DB>,
  what: string,
  table: string,
  migrations: Readonly<Record<string, Migration>>,
): Promise<void> {
  const schema = await migrationSchemaOf(db)
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => ({ ...migrations }) },
    migrationTableName: table,
    migrationLockTableName: `${table}_lock`,
    ...(schema === undefined ? {} : { migrationTableSchema: schema }),
  })
  let { error, results } = await migrator.migrateToLatest()
  // A schema dropped by another client while the Migrator read the database's tables: read again.
  for (let attempt = 1; attempt < 3 && droppedElsewhere(error, schema); attempt += 1)
    ({ error, results } = await migrator.migrateToLatest())
  if (error !== undefined) {
    const failed = results?.find((result) => result.status === 'Error')?.migrationName
    throw new Error(`${what} migration ${failed ?? ''} failed`.replace('  ', ' '), { cause: error })
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
