import { closeSync, mkdirSync, openSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import { Worker } from 'node:worker_threads'
import Database from '@lango/better-sqlite3'
import { Kysely, type Migration, PostgresAdapter, PostgresDialect, SqliteDialect, sql } from 'kysely'
import type { ServerConfig } from '../config/types.js'
import { ServerError } from '../errors.js'
import type { Logger } from '../logger.js'
import { preparedStatements } from './prepared-statements.js'
import { cachedStatements } from './statement-cache.js'
import { wholeNumberParameters } from './whole-numbers.js'

/**
 * WAL checkpoints run in a worker thread with its own connection (ADR 0004 §4b): inline
 * auto-checkpoints fsync the database inside whichever statement crosses the threshold, on the event
 * loop, and are the largest source of firing lateness. PASSIVE checkpoints never block writers.
 */
const CHECKPOINT_WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const database = new Database(workerData.path)
database.pragma('busy_timeout = 5000')
const timer = setInterval(() => { try { database.pragma('wal_checkpoint(PASSIVE)') } catch {} }, workerData.intervalMs)
parentPort.on('message', () => {
  clearInterval(timer)
  try { database.pragma('wal_checkpoint(PASSIVE)') } catch {}
  database.close()
  parentPort.close()
})
`
const CHECKPOINT_INTERVAL_MS = 500

/**
 * One feature's share of the server's database: the tables it owns (`Tables`, a type only) and the
 * migrations that create or upgrade them, in the feature's own migration table. The composition
 * root hands {@link openDatabase} every feature, in order; the database knows none of them.
 */
export interface DatabaseFeature<Tables> {
  /** The feature, for readers of the composition root (`cron`, `vault`, …). */
  readonly name: string
  /** The feature's migration table (fixed forever: existing databases have it). */
  readonly migrationTable: string
  /**
   * Every migration this server knows for the feature, by name (names sort in the order they run):
   * a name in the migration table that is not here was written by a newer server.
   */
  readonly migrations: Readonly<Record<string, Migration>>
  /** Runs the feature's migrations on the shared handle, typed for its tables and any others; throws if one failed. */
  migrate<DB extends Tables>(db: Kysely<DB>): Promise<void>
  /**
   * Type only, never set or called: makes a `DatabaseFeature<Tables>` fit a database typed `DB`
   * only when `DB` has the feature's tables (a generic `migrate` alone does not check that).
   */
  readonly tables?: (database: Tables) => void
}

/** The server's one database: the Kysely every feature's store shares, and how to close it. */
export interface OpenDatabase<DB> {
  /** Typed for every feature's tables; each store narrows it to its own. */
  readonly db: Kysely<DB>
  /** The SQLite file path, or `postgres://host:port/database` (never a password). */
  readonly path: string
  /** Closes the checkpoint worker and the connection; idempotent. */
  close(): Promise<void>
}

/**
 * Opens the configured database and runs the `features`' migrations in order (one migration table
 * per feature). SQLite (default, `$LANGO_HOME/lango.db`): ONE better-sqlite3 connection for every
 * package (two connections in one process block each other), WAL with `synchronous=NORMAL`, a busy
 * timeout, checkpoints off the event loop. PostgreSQL (`LANGO_DATABASE_URL=postgres://…`): a `pg`
 * pool behind Kysely's PostgresDialect, its repeated statements prepared once per connection
 * (./prepared-statements.ts), the same stores and migrations (ADR 0004; issue 14). Either
 * way every number a query binds is rounded to a whole number first (./whole-numbers.ts).
 */
export async function openDatabase<DB>(
  config: ServerConfig,
  logger: Logger,
  features: readonly DatabaseFeature<DB>[],
): Promise<OpenDatabase<DB>> {
  const { db, path, close } =
    config.database.kind === 'postgres'
      ? await openPostgres<DB>(config.database.url, logger)
      : openSqlite<DB>(config, logger)
  await refuseNewerDatabase(db, path, features, close)
  await migrate(db, features, close)
  return { db, path, close }
}

/**
 * Refuses (SERVER_DATABASE_TOO_NEW, the database closed) a database a newer Lango migrated: a
 * migration table listing a migration this server does not know means tables it would misread, and
 * its own migrations could not be undone by the newer one. Reads only, and before any migration
 * runs: a refused database is left as it was (ADR 0018).
 */
async function refuseNewerDatabase<DB>(
  db: Kysely<DB>,
  path: string,
  features: readonly DatabaseFeature<DB>[],
  close: () => Promise<void>,
): Promise<void> {
  for (const feature of features) {
    let applied: string[]
    try {
      applied = await appliedMigrations(db, feature.migrationTable)
    } catch (error) {
      await close()
      throw new ServerError(
        'SERVER_MIGRATION_FAILED',
        `cannot read the ${feature.name} migration table ${feature.migrationTable} of the database at ${path}: ${(error as Error).message}`,
        { cause: error },
      )
    }
    const unknown = applied.filter((name) => !Object.hasOwn(feature.migrations, name)).sort()
    const newest = unknown.at(-1)
    if (newest === undefined) continue
    await close()
    const known = Object.keys(feature.migrations).sort().at(-1) ?? '(none)'
    throw new ServerError(
      'SERVER_DATABASE_TOO_NEW',
      `the database at ${path} was migrated by a newer Lango (migration ${newest} of ${feature.name}); this server knows ${feature.name} migrations up to ${known}; upgrade the server or restore a backup (nothing was changed)`,
      { data: { database: path, feature: feature.name, migration: newest, known, unknown } },
    )
  }
}

/** The names recorded in migration table `table`; none when it does not exist (a new database). */
async function appliedMigrations<DB>(db: Kysely<DB>, table: string): Promise<string[]> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter
  // In the handle's own schema on PostgreSQL (`to_regclass` follows search_path), as the Migrator looks.
  const exists = postgres
    ? (await sql<{ found: string | null }>`select to_regclass(${table})::text as found`.execute(db)).rows[0]
        ?.found != null
    : (
        await sql<{
          name: string
        }>`select name from sqlite_master where type = 'table' and name = ${table}`.execute(db)
      ).rows.length > 0
  if (!exists) return []
  const { rows } = await sql<{ name: string }>`select name from ${sql.table(table)}`.execute(db)
  return rows.map((row) => row.name)
}

/** Every feature's migrations, in order; a failure closes the database and says what failed. */
async function migrate<DB>(
  db: Kysely<DB>,
  features: readonly DatabaseFeature<DB>[],
  close: () => Promise<void>,
): Promise<void> {
  try {
    for (const feature of features) await feature.migrate(db)
  } catch (error) {
    await close()
    throw new ServerError(
      'SERVER_MIGRATION_FAILED',
      `database migrations failed: ${(error as Error).message}`,
      {
        cause: error,
      },
    )
  }
}

/** Connections of one server to PostgreSQL at most. */
const POSTGRES_POOL_SIZE = 10

/**
 * A `pg` pool on `url`, checked with one query so a wrong host, database or password is one clear
 * error at start. Logs and errors name the server and database, never the password.
 */
async function openPostgres<DB>(url: string, logger: Logger): Promise<OpenDatabase<DB>> {
  const { default: pg } = await import('pg')
  const where = describePostgres(url)
  const pool = new pg.Pool({
    connectionString: url,
    max: POSTGRES_POOL_SIZE,
    connectionTimeoutMillis: 10_000,
  })
  // An idle client's error (the server restarted) must not crash the process; the pool replaces it.
  pool.on('error', (error) =>
    logger.warn('postgres connection lost', { database: where, error: error.message }),
  )
  // Nor one of a client in use: `pg` fails its query and also emits `error` on the client, which
  // the pool listens to only while the client is idle (a connection cut mid-query was an uncaught
  // exception). The query's own rejection reaches its caller.
  pool.on('connect', (client) => {
    client.on('error', (error) =>
      logger.debug('postgres connection failed while in use', { database: where, error: error.message }),
    )
  })
  try {
    await pool.query('select 1')
  } catch (error) {
    await pool.end().catch(() => {})
    throw new ServerError(
      'SERVER_DATABASE_UNAVAILABLE',
      `cannot connect to PostgreSQL at ${where}: ${scrubPassword((error as Error).message, url)}`,
      { data: { database: where } },
    )
  }
  const db = new Kysely<DB>({
    dialect: wholeNumberParameters(new PostgresDialect({ pool: preparedStatements(pool) })),
  })
  let closed: Promise<void> | undefined
  const close = (): Promise<void> => {
    closed ??= db.destroy()
    return closed
  }
  return { db, path: where, close }
}

/** `postgres://host:port/database` without user or password, for logs and errors. */
export function describePostgres(url: string): string {
  const parsed = URL.parse(url)
  if (parsed === null) return 'postgres://(unparsable URL)'
  return `postgres://${parsed.host}${parsed.pathname}`
}

/** `message` without the URL's password, should the driver quote it. */
function scrubPassword(message: string, url: string): string {
  const password = URL.parse(url)?.password
  return password === undefined || password === ''
    ? message
    : message.replaceAll(decodeURIComponent(password), '[hidden]')
}

/** The embedded SQLite database (see {@link openDatabase}). */
function openSqlite<DB>(config: ServerConfig, logger: Logger): OpenDatabase<DB> {
  const path = config.database.url
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  // SQLite takes a missing or empty file for a new database: say so, for a file that held the jobs
  // and went missing or was truncated (a failed copy, a full disk) would otherwise go unnoticed.
  const file = fileStat(path)
  const size = file === null ? null : file?.size
  if (file === null) {
    logger.info('no database file yet: a new one is created', { database: path })
    // Readable by the server's user only, whatever the umask or the directory's mode (a LANGO_HOME
    // made 0755 beforehand): it holds commands, results, approvals and the vault's ciphertext.
    // SQLite gives its -wal and -shm files the database file's mode.
    try {
      closeSync(openSync(path, 'wx', 0o600))
    } catch {
      // Made meanwhile by another process, or not makeable: opening it says so.
    }
  } else if (file !== undefined && (file.mode & 0o044) !== 0)
    logger.warn('the database file is readable by other users: make it readable by the server’s user only', {
      database: path,
      hint: `chmod 600 ${path}`,
    })
  if (size === 0)
    logger.warn(
      'the database file is empty (0 bytes): starting with a new database. If it held your jobs, stop the server and put a backup back in its place (see lango backup)',
      { database: path },
    )
  let database: Database.Database
  try {
    database = new Database(path)
    database.pragma('journal_mode = WAL')
    database.pragma('synchronous = NORMAL')
    database.pragma('busy_timeout = 5000')
    database.pragma('foreign_keys = ON')
    database.pragma('wal_autocheckpoint = 0')
  } catch (error) {
    throw new ServerError(
      'SERVER_DATABASE_UNAVAILABLE',
      `cannot open the database at ${path}: ${(error as Error).message}`,
      {
        cause: error,
      },
    )
  }
  const driver = createRequire(import.meta.url).resolve('@lango/better-sqlite3')
  const worker = new Worker(CHECKPOINT_WORKER, {
    eval: true,
    workerData: { path, driver, intervalMs: CHECKPOINT_INTERVAL_MS },
  })
  worker.on('error', (error) => logger.warn('checkpoint worker failed', { error }))
  worker.unref()
  const db = new Kysely<DB>({
    dialect: wholeNumberParameters(new SqliteDialect({ database: cachedStatements(database) })),
  })
  let closed: Promise<void> | undefined
  const close = (): Promise<void> => {
    closed ??= (async () => {
      // Held while closing: with nothing else on the event loop, Node would otherwise exit mid-close.
      worker.ref()
      worker.postMessage('stop')
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 2_000)
        worker.once('exit', () => {
          clearTimeout(timer)
          resolve()
        })
      })
      await db.destroy()
    })()
    return closed
  }
  return { db, path, close }
}

/** The file's size and mode; null when it does not exist, undefined when it cannot be read. */
function fileStat(path: string): { readonly size: number; readonly mode: number } | null | undefined {
  try {
    const { size, mode } = statSync(path)
    return { size, mode }
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined
  }
}
