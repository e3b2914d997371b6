import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { type CronDatabase, migrateCron } from '../sqlite/index.js'

/** A real SQLite file in a temp directory, opened the way apps/server opens it. */
export interface TestDatabase {
  readonly path: string
  readonly db: Kysely<CronDatabase>
  /** Opens another connection (its own Kysely) on the same file, as a second process would. */
  connect(): Kysely<CronDatabase>
  cleanup(): Promise<void>
}

function openConnection(path: string): Kysely<CronDatabase> {
  const database = new Database(path)
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  database.pragma('busy_timeout = 5000')
  return new Kysely<CronDatabase>({ dialect: new SqliteDialect({ database }) })
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const directory = await mkdtemp(join(tmpdir(), 'lango-cron-'))
  const path = join(directory, 'test.db')
  const connections: Kysely<CronDatabase>[] = []
  const connect = () => {
    const connection = openConnection(path)
    connections.push(connection)
    return connection
  }
  const db = connect()
  await migrateCron(db)
  return {
    path,
    db,
    connect,
    async cleanup() {
      for (const connection of connections) await connection.destroy().catch(() => {})
      await rm(directory, { recursive: true, force: true })
    },
  }
}
