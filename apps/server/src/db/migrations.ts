import { type Kysely, type Migration, Migrator } from 'kysely'

/**
 * Runs a module's migrations to the latest with kysely's Migrator and its own fixed migration table
 * (`<table>` and `<table>_lock`: kysely says "ALWAYS use the same value"), on SQLite and PostgreSQL.
 * Throws `<what> migration <name> failed` with the driver's error as the cause.
 */
export async function runMigrations(
  // biome-ignore lint/suspicious/noExplicitAny: the server's one handle, shared by every store
  db: Kysely<any>,
  what: string,
  table: string,
  migrations: Readonly<Record<string, Migration>>,
): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => ({ ...migrations }) },
    migrationTableName: table,
    migrationLockTableName: `${table}_lock`,
  })
  const { error, results } = await migrator.migrateToLatest()
  if (error !== undefined) {
    const failed = results?.find((result) => result.status === 'Error')?.migrationName
    throw new Error(`${what} migration ${failed ?? ''} failed`.replace('  ', ' '), { cause: error })
  }
}
