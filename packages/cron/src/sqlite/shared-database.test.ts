/** One SQLite file, one connection, one Kysely shared by cron and another package's tables (ADR 0006). */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { expect, it } from 'vitest'
import { CronService } from '../service.js'
import { FakeClock } from '../testing/fake-clock.js'
import { RecordingAgentRunner } from '../testing/recording-runners.js'
import { type CronDatabase, migrateCron } from './schema.js'
import { SqliteCronStore } from './sqlite-cron-store.js'

/** Stands for another package's tables (for instance @lango/workflow's). */
interface OtherDatabase {
  other_runs: { id: string; status: string }
}

it('a Kysely typed for cron and other tables serves the store and the host on one connection', async () => {
  const directory = await mkdtemp(join(tmpdir(), 'lango-cron-shared-'))
  const db = new Kysely<CronDatabase & OtherDatabase>({
    dialect: new SqliteDialect({ database: new Database(join(directory, 'app.db')) }),
  })
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'))
  const cron = new CronService({
    store: new SqliteCronStore(db),
    clock,
    agentRunner: new RecordingAgentRunner(),
    defaultTimezone: 'UTC',
  })
  try {
    await migrateCron(db)
    await db.schema.createTable('other_runs').addColumn('id', 'text').addColumn('status', 'text').execute()
    await cron.start()
    await cron.add({ name: 'hourly', scheduleType: 'cron', schedule: '0 * * * *', prompt: 'x' })
    await db.insertInto('other_runs').values({ id: 'w1', status: 'running' }).execute()
    await clock.advance(3_600_000)
    await cron.scheduler.whenIdle()
    expect((await cron.history({ job: 'hourly' })).map((run) => run.status)).toEqual(['completed'])
    expect(await db.selectFrom('other_runs').selectAll().execute()).toEqual([{ id: 'w1', status: 'running' }])
  } finally {
    await cron.stop()
    await db.destroy()
    await rm(directory, { recursive: true, force: true })
  }
})
