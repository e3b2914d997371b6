import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { migrateWorkflow, type WorkflowDatabase } from '../../src/sqlite/index.js'

/** A real SQLite file in a temp directory, opened the way apps/server opens it. */
export interface TestDatabase {
  readonly directory: string
  readonly path: string
  readonly db: Kysely<WorkflowDatabase>
  cleanup(): Promise<void>
}

/** Opens a file with WAL, `synchronous=NORMAL` and a busy timeout. */
function openDatabase(path: string): Kysely<WorkflowDatabase> {
  const database = new Database(path)
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  database.pragma('busy_timeout = 5000')
  return new Kysely<WorkflowDatabase>({ dialect: new SqliteDialect({ database }) })
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const directory = await mkdtemp(join(tmpdir(), 'lango-workflow-'))
  const path = join(directory, 'test.db')
  const db = openDatabase(path)
  await migrateWorkflow(db)
  return {
    directory,
    path,
    db,
    async cleanup() {
      await db.destroy().catch(() => {})
      await rm(directory, { recursive: true, force: true })
    },
  }
}
