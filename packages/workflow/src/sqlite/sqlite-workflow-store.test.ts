import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, Migrator, SqliteDialect, sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { createTestDatabase } from '../../test/__fixtures__/database.js'
import { WorkflowError } from '../errors.js'
import { createTestRun } from '../testing/create-test-run.js'
import { workflowStoreContract } from '../testing/vitest/store-contract.js'
import {
  migrateWorkflow,
  WORKFLOW_MIGRATION_TABLE,
  type WorkflowDatabase,
  workflowMigrations,
} from './schema.js'
import { SqliteWorkflowStore } from './sqlite-workflow-store.js'

workflowStoreContract('SqliteWorkflowStore', async () => {
  const database = await createTestDatabase()
  return {
    store: new SqliteWorkflowStore(database.db),
    // A second store in this process shares the Kysely (and its connection), as apps/server does;
    // test/concurrent-claims.test.ts runs claims from separate processes on one file.
    another: () => new SqliteWorkflowStore(database.db),
    cleanup: database.cleanup,
  }
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

  it('migrates a database made before token counts: old steps read null tokens, new steps store them', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'lango-workflow-0001-'))
    const db = new Kysely<WorkflowDatabase>({
      dialect: new SqliteDialect({ database: new Database(join(directory, 'old.db')) }),
    })
    const migrator = (migrations: Readonly<Record<string, (typeof workflowMigrations)[string]>>) =>
      new Migrator({
        db,
        provider: { getMigrations: async () => ({ ...migrations }) },
        migrationTableName: WORKFLOW_MIGRATION_TABLE,
        migrationLockTableName: `${WORKFLOW_MIGRATION_TABLE}_lock`,
      })
    try {
      const first = Object.keys(workflowMigrations)[0] as string
      const only = { [first]: workflowMigrations[first] as (typeof workflowMigrations)[string] }
      expect((await migrator(only).migrateToLatest()).error).toBeUndefined()
      // A run and a completed step recorded by the previous version, through the columns it knew.
      await sql`insert into workflow_runs (id, workflow_name, definition, status, total_steps,
        completed_steps, deliver_to, owner, started_at) values ('old', 'before', 'name: before',
        'running', 2, 1, '[]', 'owner-a', 1000)`.execute(db)
      await sql`insert into workflow_step_runs (run_id, step_id, position, status, result, attempt,
        started_at, completed_at) values ('old', 'a', 0, 'completed', 'done', 1, 1000, 2000),
        ('old', 'b', 1, 'pending', null, 0, null, null)`.execute(db)
      await migrateWorkflow(db)
      const store = new SqliteWorkflowStore(db)
      expect(await store.listSteps('old')).toMatchObject([
        { stepId: 'a', status: 'completed', result: 'done', inputTokens: null, outputTokens: null },
        { stepId: 'b', status: 'pending', inputTokens: null, outputTokens: null },
      ])
      expect(
        await store.updateStep(
          'old',
          'b',
          { status: 'completed', result: 'ok', completedAt: 3000, inputTokens: 10, outputTokens: 5 },
          // Stored before leases: version 0.
          { lease: { owner: 'owner-a', version: 0 } },
        ),
      ).toBe(true)
      expect((await store.listSteps('old'))[1]).toMatchObject({ inputTokens: 10, outputTokens: 5 })
      // And back: 0002's down drops the columns again.
      expect((await migrator(workflowMigrations).migrateTo(first)).error).toBeUndefined()
      const columns = await sql<{
        name: string
      }>`select name from pragma_table_info('workflow_step_runs')`.execute(db)
      expect(columns.rows.map((row) => row.name)).not.toContain('input_tokens')
      expect(columns.rows.map((row) => row.name)).not.toContain('output_tokens')
    } finally {
      await db.destroy()
      await rm(directory, { recursive: true, force: true })
    }
  })

  it('migrates a database made before leases: its runs have version 0 and no expiry, and are taken over by their owner’s heartbeat', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'lango-workflow-0002-'))
    const db = new Kysely<WorkflowDatabase>({
      dialect: new SqliteDialect({ database: new Database(join(directory, 'old.db')) }),
    })
    const migrator = (migrations: Readonly<Record<string, (typeof workflowMigrations)[string]>>) =>
      new Migrator({
        db,
        provider: { getMigrations: async () => ({ ...migrations }) },
        migrationTableName: WORKFLOW_MIGRATION_TABLE,
        migrationLockTableName: `${WORKFLOW_MIGRATION_TABLE}_lock`,
      })
    try {
      const [first, second] = Object.keys(workflowMigrations) as [string, string]
      const beforeLeases = Object.fromEntries(
        [first, second].map((name) => [
          name,
          workflowMigrations[name] as (typeof workflowMigrations)[string],
        ]),
      )
      expect((await migrator(beforeLeases).migrateToLatest()).error).toBeUndefined()
      // Two runs recorded by the previous version: one whose owner is still heartbeating, one whose owner went silent.
      await sql`insert into workflow_owners (id, started_at, heartbeat_at) values ('alive', 0, 9000), ('silent', 0, 1000)`.execute(
        db,
      )
      await sql`insert into workflow_runs (id, workflow_name, definition, status, total_steps,
        completed_steps, deliver_to, owner, started_at) values
        ('held', 'before', 'name: before', 'running', 1, 0, '[]', 'alive', 100),
        ('orphan', 'before', 'name: before', 'running', 1, 0, '[]', 'silent', 200)`.execute(db)
      await sql`insert into workflow_step_runs (run_id, step_id, position, status, attempt) values
        ('held', 'a', 0, 'running', 1), ('orphan', 'a', 0, 'running', 1)`.execute(db)
      await migrateWorkflow(db)
      const store = new SqliteWorkflowStore(db)
      expect(await store.getRun('orphan')).toMatchObject({
        owner: 'silent',
        leaseVersion: 0,
        leaseExpiresAt: null,
      })

      // Only the silent owner's run is stale at 5000; it gets a lease like any claimed run.
      expect(
        await store.claimRuns('new', { now: 10_000, leaseExpiresAt: 40_000, staleBefore: 5_000 }),
      ).toEqual([{ runId: 'orphan', version: 1 }])
      expect(await store.getRun('orphan')).toMatchObject({
        owner: 'new',
        leaseVersion: 1,
        leaseExpiresAt: 40_000,
      })
      expect((await store.listSteps('orphan'))[0]?.status).toBe('pending')
      expect(await store.getRun('held')).toMatchObject({
        owner: 'alive',
        leaseVersion: 0,
        leaseExpiresAt: null,
      })
      expect(
        await store.updateStep(
          'orphan',
          'a',
          { status: 'running' },
          { lease: { owner: 'silent', version: 0 } },
        ),
      ).toBe(false)
      // Once its owner stops heartbeating too, the other one follows.
      expect(
        await store.claimRuns('new', { now: 20_000, leaseExpiresAt: 50_000, staleBefore: 9_500 }),
      ).toEqual([{ runId: 'held', version: 1 }])

      // And back: 0003's down drops the columns again.
      expect((await migrator(workflowMigrations).migrateTo(second)).error).toBeUndefined()
      const columns = await sql<{
        name: string
      }>`select name from pragma_table_info('workflow_runs')`.execute(db)
      expect(columns.rows.map((row) => row.name)).not.toContain('lease_version')
      expect(columns.rows.map((row) => row.name)).not.toContain('lease_expires_at')
    } finally {
      await db.destroy()
      await rm(directory, { recursive: true, force: true })
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
