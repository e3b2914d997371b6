import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { createTestDatabase } from '../__fixtures__/database.js'
import { CronError } from '../errors.js'
import { createTestJob } from '../testing/test-job.js'
import { cronStoreContract } from '../testing/vitest.js'
import { cronMigrations, migrateCron } from './schema.js'
import { SqliteCronStore } from './sqlite-cron-store.js'

cronStoreContract('SqliteCronStore', async () => {
  const database = await createTestDatabase()
  return { store: new SqliteCronStore(database.db), cleanup: database.cleanup }
})

describe('SqliteCronStore specifics', () => {
  it('migrates idempotently into lango_cron_migration', async () => {
    const database = await createTestDatabase()
    try {
      await migrateCron(database.db)
      const rows = await sql<{ name: string }>`select name from lango_cron_migration`.execute(database.db)
      expect(rows.rows.map((row) => row.name)).toEqual(Object.keys(cronMigrations))
    } finally {
      await database.cleanup()
    }
  })

  it('validates JSON columns on read and reports a corrupt row with CRON_STORE_CORRUPT', async () => {
    const database = await createTestDatabase()
    try {
      const store = new SqliteCronStore(database.db)
      const job = createTestJob()
      await store.insertJob(job)
      await database.db
        .updateTable('cron_jobs')
        .set({ deliver_to: '{"not":"a list"}' })
        .where('id', '=', job.id)
        .execute()
      const error = await store.getJob(job.id).catch((caught: unknown) => caught)
      expect(CronError.is(error) && error.code).toBe('CRON_STORE_CORRUPT')
      expect((error as Error).message).toMatch(/deliver_to/)
    } finally {
      await database.cleanup()
    }
  })

  it('two connections on one file: each occurrence is claimed exactly once', async () => {
    const database = await createTestDatabase()
    try {
      const one = new SqliteCronStore(database.db)
      const two = new SqliteCronStore(database.connect())
      const job = createTestJob()
      await one.insertJob(job)
      const claims = await Promise.all(
        Array.from({ length: 200 }, (_, index) => {
          const store = index % 2 === 0 ? one : two
          return store.insertRuns([
            {
              id: `claim-${index}`,
              jobId: job.id,
              jobName: job.name,
              trigger: 'schedule',
              status: 'running',
              scheduledFor: Math.floor(index / 2),
              startedAt: 0,
              completedAt: null,
              skipReason: null,
              owner: index % 2 === 0 ? 'one' : 'two',
            },
          ])
        }),
      )
      expect(claims.reduce((total, claimed) => total + claimed.size, 0)).toBe(100)
    } finally {
      await database.cleanup()
    }
  })
})
