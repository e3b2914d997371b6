import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { createTestDatabase } from '../../test/__fixtures__/database.js'
import { WorkflowError } from '../errors.js'
import { createTestRun } from '../testing/create-test-run.js'
import { workflowStoreContract } from '../testing/vitest/store-contract.js'
import { migrateWorkflow, workflowMigrations } from './schema.js'
import { SqliteWorkflowStore } from './sqlite-workflow-store.js'

workflowStoreContract('SqliteWorkflowStore', async () => {
  const database = await createTestDatabase()
  return { store: new SqliteWorkflowStore(database.db), cleanup: database.cleanup }
})

describe('SqliteWorkflowStore specifics', () => {
  it('migrates idempotently into lango_workflow_migration', async () => {
    const database = await createTestDatabase()
    try {
      await migrateWorkflow(database.db)
      const rows = await sql<{ name: string }>`select name from lango_workflow_migration`.execute(database.db)
      expect(rows.rows.map((row) => row.name)).toEqual(Object.keys(workflowMigrations))
    } finally {
      await database.cleanup()
    }
  })

  it('enforces (run_id, step_id) uniqueness in the database itself', async () => {
    const database = await createTestDatabase()
    try {
      const store = new SqliteWorkflowStore(database.db)
      const run = createTestRun()
      await store.insertRun(run)
      const duplicate = database.db
        .insertInto('workflow_step_runs')
        .values({
          run_id: run.id,
          step_id: 'a',
          position: 9,
          status: 'pending',
          input: null,
          result: null,
          error: null,
          attempt: 0,
          started_at: null,
          completed_at: null,
        })
        .execute()
      await expect(duplicate).rejects.toThrow(/UNIQUE|PRIMARY/i)
    } finally {
      await database.cleanup()
    }
  })

  it('validates stored JSON and statuses on read (WORKFLOW_STORE_CORRUPT)', async () => {
    const database = await createTestDatabase()
    try {
      const store = new SqliteWorkflowStore(database.db)
      const run = createTestRun()
      await store.insertRun(run)
      await database.db
        .updateTable('workflow_runs')
        .set({ deliver_to: '{"not":"a list"}' })
        .where('id', '=', run.id)
        .execute()
      const error = await store.getRun(run.id).catch((caught: unknown) => caught)
      expect(WorkflowError.is(error) && error.code).toBe('WORKFLOW_STORE_CORRUPT')
      await database.db
        .updateTable('workflow_runs')
        .set({ deliver_to: '[]' })
        .where('id', '=', run.id)
        .execute()
      await database.db
        .updateTable('workflow_step_runs')
        .set({ status: 'exploded' })
        .where('run_id', '=', run.id)
        .execute()
      await expect(store.listSteps(run.id)).rejects.toMatchObject({ code: 'WORKFLOW_STORE_CORRUPT' })
    } finally {
      await database.cleanup()
    }
  })

  it('checks the abort signal before touching the database', async () => {
    const database = await createTestDatabase()
    try {
      const store = new SqliteWorkflowStore(database.db)
      const controller = new AbortController()
      const reason = new Error('stop')
      controller.abort(reason)
      await expect(store.insertRun(createTestRun(), { signal: controller.signal })).rejects.toBe(reason)
      expect(await store.listRuns()).toEqual([])
    } finally {
      await database.cleanup()
    }
  })
})
