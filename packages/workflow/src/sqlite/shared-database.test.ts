import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { expect, it } from 'vitest'
import { createTestRun } from '../testing/create-test-run.js'
import { migrateWorkflow, type WorkflowDatabase } from './schema.js'
import { SqliteWorkflowStore } from './sqlite-workflow-store.js'

/** Another package's tables in the same file (what `@lango/cron`'s `CronDatabase` is to a host). */
interface NotesDatabase {
  notes: { id: string; text: string }
}

// `tsc --noEmit` checks the types of this file: the store and the migration accept the
// intersection without a cast, and refuse a Kysely that lacks the workflow tables.
it('one Kysely typed for several packages’ tables serves migrateWorkflow and SqliteWorkflowStore without a cast', async () => {
  const directory = await mkdtemp(join(tmpdir(), 'lango-workflow-shared-'))
  const db = new Kysely<NotesDatabase & WorkflowDatabase>({
    dialect: new SqliteDialect({ database: new Database(join(directory, 'host.db')) }),
  })
  try {
    await db.schema
      .createTable('notes')
      .addColumn('id', 'text', (column) => column.primaryKey())
      .addColumn('text', 'text', (column) => column.notNull())
      .execute()
    await migrateWorkflow(db)
    const store = new SqliteWorkflowStore(db)
    const run = createTestRun()
    await store.insertRun(run)
    await db.insertInto('notes').values({ id: 'n1', text: 'kept beside the runs' }).execute()
    expect((await store.getRun(run.id))?.totalSteps).toBe(3)
    expect(await db.selectFrom('notes').select('text').execute()).toEqual([{ text: 'kept beside the runs' }])

    const notesOnly = db as unknown as Kysely<NotesDatabase>
    const refused = [
      // @ts-expect-error a Kysely without the workflow tables is refused
      () => new SqliteWorkflowStore(notesOnly),
      // @ts-expect-error a Kysely without the workflow tables is refused
      () => migrateWorkflow(notesOnly),
    ]
    expect(refused).toHaveLength(2)
  } finally {
    await db.destroy()
    await rm(directory, { recursive: true, force: true })
  }
})
