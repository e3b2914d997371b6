/**
 * Every query and migration compiles for PostgreSQL (kysely's Postgres compiler over a dummy
 * driver, no server needed): parameters are `$n`, the claim is ON CONFLICT … DO NOTHING
 * RETURNING, the partial index inlines its literal. Running them on a real PostgreSQL is the
 * scale-out issue's job.
 */
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely'
import { describe, expect, it } from 'vitest'
import { createTestJob } from '../testing/test-job.js'
import { type CronDatabase, cronMigrations } from './schema.js'
import { SqliteCronStore } from './sqlite-cron-store.js'

function postgresCompileOnly(): { db: Kysely<CronDatabase>; statements: string[] } {
  const statements: string[] = []
  const db = new Kysely<CronDatabase>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (inner) => new PostgresIntrospector(inner),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
    log: (event) => {
      statements.push(event.query.sql)
    },
  })
  return { db, statements }
}

describe('PostgreSQL portability (compile only)', () => {
  it('migrations compile to PostgreSQL DDL', async () => {
    const { db, statements } = postgresCompileOnly()
    for (const migration of Object.values(cronMigrations))
      await migration.up(db as Parameters<typeof migration.up>[0])
    expect(statements.join('\n')).toContain(
      `create index "cron_runs_running_owner" on "cron_runs" ("owner") where "status" = 'running'`,
    )
    expect(statements.join('\n')).toContain(
      `create unique index "cron_runs_job_occurrence" on "cron_runs" ("job_id", "scheduled_for")`,
    )
    expect(statements.join('\n')).toMatch(/"scheduled_for" bigint not null/)
    expect(statements).toContain('alter table "cron_runs" add column "input_tokens" bigint')
    expect(statements).toContain('alter table "cron_runs" add column "output_tokens" bigint')
    expect(statements).toContain('create index "cron_jobs_updated_at" on "cron_jobs" ("updated_at")')
    expect(statements).toContain(
      `create index "cron_runs_running_job" on "cron_runs" ("job_id") where "status" = 'running'`,
    )
  })

  it('every store query compiles with $n parameters and no SQLite-only syntax', async () => {
    const { db, statements } = postgresCompileOnly()
    const store = new SqliteCronStore(db)
    const job = createTestJob()
    const run = {
      id: 'r',
      jobId: job.id,
      jobName: job.name,
      trigger: 'schedule',
      status: 'running',
      scheduledFor: 1,
      startedAt: 1,
      completedAt: null,
      skipReason: null,
      owner: 'o',
    } as const
    const calls: (() => Promise<unknown>)[] = [
      () => store.insertJob(job),
      () => store.updateJob(job.id, { enabled: false, deliverTo: ['a'] }),
      () => store.deleteJob(job.id),
      () => store.getJob(job.id),
      () => store.getJobByName(job.name),
      () => store.listJobs({ enabled: true }),
      () => store.enabledSchedules(),
      () => store.listJobs({ ids: [job.id] }),
      () => store.listJobs({ changedSince: 5, after: 'a', limit: 10 }),
      () => store.countJobs(),
      () => store.countJobs({ createdBy: 'telegram:1:2' }),
      () => store.countJobs({ running: true, lastDeliveryFailed: true }),
      () => store.listJobs({ running: false, lastStatus: null, sort: 'failures', limit: 5 }),
      () => store.aiRunStartTimes({ since: 5, limit: 10 }),
      () => store.aiTokenTotals({ since: 5, bucketMs: 60_000 }),
      () => store.jobVersions([job.id]),
      () =>
        store.updateSchedules([
          { id: job.id, nextRunAt: 5, lastRunAt: 3 },
          { id: 'x', nextRunAt: null, lastRunAt: 4, disable: { reason: 'r' }, version: 7 },
        ]),
      () => store.insertRuns([run]),
      () => store.insertRuns([{ ...run, id: 'e', exclusive: { skipReason: 'busy' } }]),
      () => store.claimedOccurrences([{ jobId: job.id, scheduledFor: 1 }]),
      () => store.liveOwners({ aliveSince: 1 }),
      () =>
        store.completeRun('r', {
          status: 'completed',
          completedAt: 2,
          durationMs: 1,
          result: 'ok',
          error: null,
          inputTokens: 10,
          outputTokens: 5,
        }),
      () => store.setDelivery('r', 'delivered', null),
      () =>
        store.insertDeliveries([
          { id: 'd', runId: 'r', jobId: job.id, target: 't', text: 'x', createdAt: 1, nextAttemptAt: 2 },
        ]),
      () => store.claimDelivery('d', { owner: 'o', now: 3 }),
      () =>
        store.finishDelivery('d', {
          owner: 'o',
          status: 'pending',
          nextAttemptAt: 9,
          lastError: 'e',
          now: 4,
        }),
      () => store.pendingDeliveries({ limit: 10 }),
      () => store.orphanedDeliveries({ aliveSince: 1, limit: 10 }),
      () => store.listDeliveries(['r']),
      () => store.recordOutcome(job.id, 'failed', true),
      () => store.getRun('r'),
      () => store.listRuns({ jobId: job.id, status: 'completed', limit: 5 }),
      () => store.recentResults(job.id, 3),
      () => store.heartbeat('o', 1),
      () => store.removeOwner('o'),
      () => store.interruptOrphanedRuns({ now: 2, aliveSince: 1, reason: 'x' }),
      () => store.pruneRuns({ olderThan: 1, keepPerJob: 10 }),
    ]
    for (const call of calls) await call().catch(() => {})
    const text = statements.join('\n')
    expect(statements.length).toBeGreaterThanOrEqual(calls.length)
    expect(text).not.toMatch(/\?/)
    expect(text).not.toMatch(/\blimit -1\b|\bifnull\b|\binsert or\b|\bpragma\b/i)
    expect(text).toContain('on conflict ("job_id", "scheduled_for") do nothing returning "id"')
    // Which waiting occurrences are taken: two IN lists, answered by the unique index.
    expect(text).toContain('where "job_id" in ($1) and "scheduled_for" in ($2)')
    expect(text).toContain('on conflict ("id") do update set "heartbeat_at" = $4')
    // Compare-and-set: forward only, enabled jobs only, and (with a version) unchanged jobs only.
    expect(text).toContain(
      'set "next_run_at" = case when "id" = $1 and "enabled" = 1 and ("next_run_at" is null or "next_run_at" < $2) then $3 else "next_run_at" end',
    )
    // Disables: one statement per chunk, each job matched by its own compare-and-set.
    expect(text).toMatch(/where "enabled" = \$\d+ and \(\("id" = \$\d+ and "updated_at" = \$\d+\)\)/)
    // The exclusive claim: one INSERT … SELECT whose parameters are typed, checked on running rows.
    expect(text).toMatch(
      /insert into "cron_runs" \("id".*\)\s+select .* from \(select "row"\.\*, exists \(select 1 from "cron_runs" as "other" where "other"\."job_id" = "row"\."job_id" and "other"\."status" = 'running'\) as busy from \(select cast\(\$1 as text\) as id.*\) as "row"\) as candidate\s+where true\s+on conflict \(job_id, scheduled_for\) do nothing\s+returning id, status/s,
    )
    expect(text).toContain('select "id" from "cron_owners" where "heartbeat_at" >= $1 order by "id"')
    // The delivery ledger: one row per (run, target), each send claimed by compare-and-set.
    expect(text).toContain('on conflict ("run_id", "target") do nothing')
    expect(text).toMatch(
      /update "cron_deliveries" set .* where "id" = \$\d+ and "status" = \$\d+ returning \*/,
    )
    // Integer division in both databases: the bucket size is an inlined integer, never a parameter.
    expect(text).toContain(
      'select ("completed_at" / 60000) * 60000 as "at", sum(coalesce("input_tokens", 0) + coalesce("output_tokens", 0)) as "tokens" from "cron_runs"',
    )
    expect(text).toMatch(/group by \("completed_at" \/ 60000\) \* 60000 order by "at"/)
  })
})
