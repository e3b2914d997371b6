import { existsSync } from 'node:fs'
import type { ServerConfig } from '../../config/types.js'
import { type CheckResult, safeMessage, shortPath } from './check.js'
import { checkPostgres } from './postgres.js'
import { checkSecrets, countSecrets } from './secrets.js'

/**
 * The database opens and its migrations are current (SQLite; PostgreSQL only answers), and the
 * secrets stored in it can be opened (see {@link checkSecrets}).
 */
export async function checkDatabase(config: ServerConfig): Promise<CheckResult[]> {
  if (config.database.kind === 'postgres') return [await checkPostgres(config.database.url)]
  const path = config.database.url
  if (!existsSync(path))
    return [
      {
        name: 'database',
        status: 'warn',
        message: `no database yet at ${shortPath(path)}`,
        fix: '`lango serve` creates it (with every migration) at start',
      },
    ]
  const [{ default: Database }, { SERVER_DATABASE_FEATURES }] = await Promise.all([
    import('@lango/better-sqlite3'),
    import('../../app/database-features.js'),
  ])
  let database: import('@lango/better-sqlite3').Database
  try {
    // Read-write, though only read: the last connection to close tidies the WAL files away, where a
    // read-only one would leave them behind. Nothing is written (no migration runs here).
    database = new Database(path, { fileMustExist: true })
    database.pragma('busy_timeout = 2000')
    database.prepare('select 1').get()
  } catch (error) {
    return [
      {
        name: 'database',
        status: 'fail',
        message: `cannot open ${shortPath(path)}: ${safeMessage(error)}`,
        fix: 'check the file and its directory are readable and writable by you; if it is damaged, move it aside (the server starts a new one)',
      },
    ]
  }
  try {
    const packages = SERVER_DATABASE_FEATURES.map((feature) => ({
      name: feature.name,
      table: feature.migrationTable,
      known: Object.keys(feature.migrations),
    }))
    const pending: string[] = []
    const unknown: string[] = []
    for (const { name, table, known } of packages) {
      const applied = appliedMigrations(database, table)
      pending.push(
        ...known
          .filter((migration) => !applied.includes(migration))
          .map((migration) => `${name}/${migration}`),
      )
      unknown.push(
        ...applied
          .filter((migration) => !known.includes(migration))
          .map((migration) => `${name}/${migration}`),
      )
    }
    const secrets = countSecrets(database)
    const results: CheckResult[] = []
    if (unknown.length > 0)
      results.push({
        name: 'database',
        status: 'fail',
        message: `${shortPath(path)} was migrated by a newer lango (unknown migrations: ${unknown.join(', ')})`,
        fix: 'upgrade lango, or restore the backup made before the upgrade (`lango serve` refuses this database: SERVER_DATABASE_TOO_NEW)',
      })
    else if (pending.length > 0)
      results.push({
        name: 'database',
        status: 'warn',
        message: `${shortPath(path)} opens; ${pending.length} migration${pending.length === 1 ? '' : 's'} pending (${pending.join(', ')})`,
        fix: '`lango serve` applies them at start',
        details: { path, pending },
      })
    else
      results.push({
        name: 'database',
        status: 'ok',
        message: `${shortPath(path)} opens; migrations current`,
        details: { path },
      })
    results.push(checkSecrets(secrets, config))
    return results
  } finally {
    database.close()
  }
}

function appliedMigrations(database: import('@lango/better-sqlite3').Database, table: string): string[] {
  const exists = database.prepare("select 1 from sqlite_master where type = 'table' and name = ?").get(table)
  if (exists === undefined) return []
  // `table` is one of the packages' fixed migration-table constants, never input.
  return (database.prepare(`select name from "${table}"`).all() as { name: string }[]).map((row) => row.name)
}
