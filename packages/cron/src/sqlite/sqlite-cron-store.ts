import {
  type ExpressionBuilder,
  type Kysely,
  PostgresAdapter,
  type QueryCreator,
  type RawBuilder,
  sql,
} from 'kysely'
import { CronError } from '../errors.js'
import { checkExclusiveRuns } from '../exclusive-runs.js'
import { compareJobs, NO_NEXT_RUN_KEY } from '../job-order.js'
import type { CronDelivery, CronJob, CronRun, CronRunStatus, DeliveryStatus } from '../model.js'
import type {
  CompletionWithOutcome,
  CronJobPatch,
  CronStore,
  DeliveryUpdate,
  JobCountFilter,
  JobListFilter,
  JobSchedule,
  JobScheduleUpdate,
  JobSort,
  JobVersion,
  ListRunsOptions,
  NewCronDelivery,
  NewCronRun,
  OccurrenceKey,
  RunCompletion,
  RunInsertResult,
  RunOutcome,
  StoreCallOptions,
  TokenTotal,
} from '../ports.js'
import { checkBucketMs } from '../token-budget.js'
import { deliveryFromRow, jobFromRow, jobToRow, patchToRow, runFromRow, scheduleFromRow } from './rows.js'
import type { CronDatabase, CronRunsTable } from './schema.js'

/** Largest page any list query returns (SECURITY.md SQL-4). */
const MAX_LIST_LIMIT = 500
/** Rows per multi-row INSERT, well under SQLite's and PostgreSQL's parameter limits. */
const INSERT_CHUNK = 200
/** Exclusive rows per INSERT … SELECT (8 parameters each). */
const EXCLUSIVE_CHUNK = 200
/** Ids per `IN (…)` list. */
const IN_CHUNK = 500

/**
 * {@link CronStore} over kysely. Named for its default database; every query is plain kysely
 * (parameterised, `ON CONFLICT … DO NOTHING`, `RETURNING`) and also runs on PostgreSQL.
 * Takes a Kysely handle, never a path: the app owns the connection, its pragmas (WAL,
 * `busy_timeout`, `synchronous=NORMAL`) and runs {@link migrateCron} first. The handle may be
 * typed for more tables than cron's (`Kysely<CronDatabase & WorkflowDatabase>`): one database,
 * one connection, shared with other packages, with no cast.
 * Every method is one statement (or a sequence of independent ones), never an interactive
 * transaction, so two instances on one file in one process cannot deadlock on `busy_timeout`.
 * @example
 * const store = new SqliteCronStore(db) // db: Kysely<CronDatabase> or Kysely<CronDatabase & YourTables>
 */
export class SqliteCronStore<DB extends CronDatabase = CronDatabase> implements CronStore {
  readonly #db: Kysely<CronDatabase>
  /** The handle speaks PostgreSQL: {@link completeRunWithOutcome} can use data-modifying CTEs. */
  readonly #postgres: boolean
  /** Cron's tables were found (see {@link SqliteCronStore.#checkTables}); false until the first call. */
  #tablesFound = false
  #checkingTables: Promise<void> | undefined

  constructor(db: Kysely<DB>) {
    // Kysely's DB parameter is invariant: narrow the host's wider handle once, here. Only cron's
    // tables are queried through it.
    this.#db = db as unknown as Kysely<CronDatabase>
    this.#postgres = db.getExecutor().adapter instanceof PostgresAdapter
  }

  /**
   * At the store's first use, a `LIMIT 0` select of every column of each cron table: on a database
   * whose migrations never ran, or ran only up to an older release, the first call fails with a
   * `CronError` that says to run {@link migrateCron}, not with the driver's "no such table" or "no
   * such column" at some later call. Told by SQLite's message and PostgreSQL's error codes (42P01,
   * 42703), which do not depend on the server's language. After it succeeds, each call pays one
   * field read.
   */
  async #checkTables(): Promise<void> {
    this.#checkingTables ??= this.#findTables().finally(() => {
      this.#checkingTables = undefined
    })
    await this.#checkingTables
  }

  async #findTables(): Promise<void> {
    for (const [table, columns] of Object.entries(CRON_COLUMNS) as [keyof CronDatabase, string[]][]) {
      try {
        await this.#db
          .selectFrom(table)
          .select(columns as never[])
          .limit(0)
          .execute()
      } catch (error) {
        // Anything else (a busy or closed database) is the driver's to report; the next call checks again.
        if (!isMissingSchema(error)) throw error
        throw new CronError(
          'CRON_STORE_NOT_MIGRATED',
          `The database's table ${table} is missing or out of date: cron's migrations have not run on it. Run \`await migrateCron(db)\` (from @lango/cron/sqlite) on this database before the store is used.`,
          { cause: error, data: { table, problem: 'not-migrated' } },
        )
      }
    }
    this.#tablesFound = true
  }

  async insertJob(job: CronJob, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    try {
      await this.#db.insertInto('cron_jobs').values(jobToRow(job)).execute()
    } catch (error) {
      throw mapConstraintError(error, job.name)
    }
  }

  async updateJob(id: string, patch: CronJobPatch, options?: StoreCallOptions): Promise<CronJob | undefined> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const values = patchToRow(patch)
    if (Object.keys(values).length === 0) return this.getJob(id, options)
    try {
      const row = await this.#db
        .updateTable('cron_jobs')
        .set(values)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst()
      return row === undefined ? undefined : jobFromRow(row)
    } catch (error) {
      throw mapConstraintError(error, patch.name)
    }
  }

  async deleteJob(id: string, options?: StoreCallOptions): Promise<boolean> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    await this.#db.deleteFrom('cron_deliveries').where('job_id', '=', id).execute()
    await this.#db.deleteFrom('cron_runs').where('job_id', '=', id).execute()
    const result = await this.#db.deleteFrom('cron_jobs').where('id', '=', id).executeTakeFirst()
    return result.numDeletedRows > 0n
  }

  async getJob(id: string, options?: StoreCallOptions): Promise<CronJob | undefined> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const row = await this.#db.selectFrom('cron_jobs').selectAll().where('id', '=', id).executeTakeFirst()
    return row === undefined ? undefined : jobFromRow(row)
  }

  async getJobByName(name: string, options?: StoreCallOptions): Promise<CronJob | undefined> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const row = await this.#db.selectFrom('cron_jobs').selectAll().where('name', '=', name).executeTakeFirst()
    return row === undefined ? undefined : jobFromRow(row)
  }

  async listJobs(options?: StoreCallOptions & JobListFilter): Promise<CronJob[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const { ids, after, limit, changedSince, sort = 'name', afterKey } = options ?? {}
    const key = sortKeyExpression(sort)
    const select = (idChunk?: readonly string[]) =>
      this.#filtered(options ?? {})
        .selectAll()
        .$if(idChunk !== undefined, (q) => q.where('id', 'in', idChunk as readonly string[]))
        .$if(changedSince !== undefined, (q) => q.where('updated_at', '>=', changedSince as number))
        .$if(after !== undefined && (key === undefined || afterKey === undefined), (q) =>
          q.where('name', '>', after as string),
        )
        .$if(after !== undefined && key !== undefined && afterKey !== undefined, (q) =>
          q.where((eb) =>
            eb.or([
              eb(key as RawBuilder<number>, '>', afterKey as number),
              eb.and([
                eb(key as RawBuilder<number>, '=', afterKey as number),
                eb('name', '>', after as string),
              ]),
            ]),
          ),
        )
    if (ids !== undefined) {
      const jobs: CronJob[] = []
      for (let start = 0; start < ids.length; start += IN_CHUNK) {
        for (const row of await select(ids.slice(start, start + IN_CHUNK)).execute())
          jobs.push(jobFromRow(row))
      }
      jobs.sort(compareJobs(sort))
      return limit === undefined ? jobs : jobs.slice(0, limit)
    }
    const rows = await select()
      .$if(key !== undefined, (q) => q.orderBy(key as RawBuilder<number>))
      .orderBy('name')
      .$if(limit !== undefined, (q) => q.limit(limit as number))
      .execute()
    return rows.map(jobFromRow)
  }

  async enabledSchedules(options?: StoreCallOptions): Promise<JobSchedule[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const rows = await this.#db
      .selectFrom('cron_jobs')
      .select(['id', 'name', 'schedule_type', 'schedule', 'timezone', 'enabled', 'next_run_at'])
      .where('enabled', '=', 1)
      .orderBy('name')
      .execute()
    return rows.map(scheduleFromRow)
  }

  async countJobs(options?: StoreCallOptions & JobCountFilter): Promise<number> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const row = await this.#filtered(options ?? {})
      .$if(options?.changedSince !== undefined, (q) =>
        q.where('updated_at', '>=', options?.changedSince as number),
      )
      .select((eb) => eb.fn.countAll().as('count'))
      .executeTakeFirstOrThrow()
    return Number(row.count)
  }

  /** `cron_jobs` narrowed by the filters {@link listJobs} and {@link countJobs} share. */
  #filtered(filter: JobCountFilter) {
    const {
      enabled,
      createdBy,
      nameContains,
      kind,
      timezone,
      scheduleType,
      schedule,
      lastStatus,
      running,
      failing,
      lastDeliveryFailed,
    } = filter
    // The partial index of running runs (cron_runs_running_job) answers it.
    const runs = sql<boolean>`exists (select 1 from cron_runs r where r.job_id = cron_jobs.id and r.status = 'running')`
    const lastDelivery = sql<
      string | null
    >`(select r.delivery_status from cron_runs r where r.job_id = cron_jobs.id and r.delivery_status in ('delivered', 'failed') order by r.scheduled_for desc limit 1)`
    return this.#db
      .selectFrom('cron_jobs')
      .$if(enabled !== undefined, (q) => q.where('enabled', '=', enabled ? 1 : 0))
      .$if(createdBy !== undefined, (q) => q.where('created_by', '=', createdBy as string))
      .$if(nameContains !== undefined && nameContains !== '', (q) =>
        q.where(sql`lower(name)`, 'like', sql`${likePattern(nameContains as string)} escape '\\'`),
      )
      .$if(kind !== undefined, (q) => q.where('kind', '=', kind as string))
      .$if(timezone !== undefined, (q) => q.where('timezone', '=', timezone as string))
      .$if(scheduleType !== undefined, (q) => q.where('schedule_type', '=', scheduleType as string))
      .$if(schedule !== undefined, (q) => q.where('schedule', '=', schedule as string))
      .$if(lastStatus === null, (q) => q.where('last_status', 'is', null))
      .$if(lastStatus !== undefined && lastStatus !== null, (q) =>
        q.where('last_status', '=', lastStatus as string),
      )
      .$if(running === true, (q) => q.where(runs))
      .$if(running === false, (q) => q.where(sql<boolean>`not ${runs}`))
      .$if(failing !== undefined, (q) => q.where('consecutive_failures', failing ? '>' : '=', 0))
      .$if(lastDeliveryFailed === true, (q) => q.where(sql`coalesce(${lastDelivery}, '')`, '=', 'failed'))
      .$if(lastDeliveryFailed === false, (q) => q.where(sql`coalesce(${lastDelivery}, '')`, '<>', 'failed'))
  }

  async changedJobVersions(
    input: { readonly changedSince: number; readonly after?: string; readonly limit: number },
    options?: StoreCallOptions,
  ): Promise<JobVersion[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const rows = await this.#db
      .selectFrom('cron_jobs')
      .select(['id', 'name', 'enabled', 'updated_at'])
      .where('updated_at', '>=', input.changedSince)
      .$if(input.after !== undefined, (q) => q.where('name', '>', input.after as string))
      .orderBy('name')
      .limit(input.limit)
      .execute()
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      enabled: Number(row.enabled) !== 0,
      updatedAt: Number(row.updated_at),
    }))
  }

  async jobVersions(
    ids: readonly string[],
    options?: StoreCallOptions,
  ): Promise<ReadonlyMap<string, { readonly enabled: boolean; readonly updatedAt: number }>> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const versions = new Map<string, { enabled: boolean; updatedAt: number }>()
    for (let start = 0; start < ids.length; start += IN_CHUNK) {
      const rows = await this.#db
        .selectFrom('cron_jobs')
        .select(['id', 'enabled', 'updated_at'])
        .where('id', 'in', ids.slice(start, start + IN_CHUNK))
        .execute()
      for (const row of rows)
        versions.set(row.id, { enabled: Number(row.enabled) !== 0, updatedAt: Number(row.updated_at) })
    }
    return versions
  }

  async updateSchedules(updates: readonly JobScheduleUpdate[], options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const plain = updates.filter((update) => update.disable === undefined)
    // One statement per chunk (CASE over ids): one write transaction instead of one per job. Each
    // WHEN is a compare-and-set, so a late write never moves a job back or revives a paused one.
    for (let start = 0; start < plain.length; start += IN_CHUNK) {
      const batch = plain.slice(start, start + IN_CHUNK)
      const withNextRun = batch.filter((update) => update.nextRunAt !== null)
      const withLastRun = batch.filter((update) => update.lastRunAt !== undefined)
      if (withNextRun.length === 0 && withLastRun.length === 0) continue
      const nextRunAt =
        withNextRun.length === 0
          ? undefined
          : sql<number | null>`case ${sql.join(
              withNextRun.map(
                (update) =>
                  sql`when ${sameJob(update)} and ${sql.ref('enabled')} = 1 and (${sql.ref('next_run_at')} is null or ${sql.ref('next_run_at')} < ${update.nextRunAt}) then ${update.nextRunAt}`,
              ),
              sql` `,
            )} else ${sql.ref('next_run_at')} end`
      const lastRunAt =
        withLastRun.length === 0
          ? undefined
          : sql<number | null>`case ${sql.join(
              withLastRun.map(
                (update) =>
                  sql`when ${sameJob(update)} and (${sql.ref('last_run_at')} is null or ${sql.ref('last_run_at')} < ${update.lastRunAt}) then ${update.lastRunAt}`,
              ),
              sql` `,
            )} else ${sql.ref('last_run_at')} end`
      await this.#db
        .updateTable('cron_jobs')
        .set({
          ...(nextRunAt === undefined ? {} : { next_run_at: nextRunAt }),
          ...(lastRunAt === undefined ? {} : { last_run_at: lastRunAt }),
        })
        .where(
          'id',
          'in',
          batch.map((update) => update.id),
        )
        .execute()
    }
    // Disables (an `at` job that fired) likewise one statement per chunk: a burst of one-time jobs
    // due together writes one statement, not one per job. Each row is matched by its own
    // compare-and-set (enabled, and its version when given). A chunk never holds a job twice: two
    // writes of one job apply one after the other, as they are given.
    for (const batch of distinctChunks(updates.filter((update) => update.disable !== undefined))) {
      const nextRunAt = sql<number | null>`case ${sql.join(
        batch.map((update) => sql`when ${sameJob(update)} then ${update.nextRunAt}`),
        sql` `,
      )} else ${sql.ref('next_run_at')} end`
      const pauseReason = sql<string | null>`case ${sql.join(
        batch.map((update) => sql`when ${sameJob(update)} then ${update.disable?.reason ?? null}`),
        sql` `,
      )} else ${sql.ref('pause_reason')} end`
      const withLastRun = batch.filter((update) => update.lastRunAt !== undefined)
      const lastRunAt =
        withLastRun.length === 0
          ? undefined
          : sql<number | null>`case ${sql.join(
              withLastRun.map(
                (update) =>
                  sql`when ${sameJob(update)} and (${sql.ref('last_run_at')} is null or ${sql.ref('last_run_at')} < ${update.lastRunAt}) then ${update.lastRunAt}`,
              ),
              sql` `,
            )} else ${sql.ref('last_run_at')} end`
      await this.#db
        .updateTable('cron_jobs')
        .set({
          next_run_at: nextRunAt,
          ...(lastRunAt === undefined ? {} : { last_run_at: lastRunAt }),
          enabled: 0,
          pause_reason: pauseReason,
        })
        .where('enabled', '=', 1)
        .where(
          sql<boolean>`(${sql.join(
            batch.map((update) => sameJob(update)),
            sql` or `,
          )})`,
        )
        .execute()
    }
  }

  async insertRuns(runs: readonly NewCronRun[], options?: StoreCallOptions): Promise<RunInsertResult> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    checkExclusiveRuns(runs)
    const inserted = new Set<string>()
    const overlapSkipped = new Set<string>()
    const isExclusive = (run: NewCronRun) => run.exclusive !== undefined && run.status === 'running'
    // Exclusive rows first, so their overlap check sees the rows stored before this call only
    // (as the memory store's does), never the plain rows of the call itself.
    const exclusive = runs.filter(isExclusive)
    for (let start = 0; start < exclusive.length; start += EXCLUSIVE_CHUNK) {
      const rows = await this.#insertExclusive(exclusive.slice(start, start + EXCLUSIVE_CHUNK))
      for (const row of rows) {
        inserted.add(row.id)
        if (row.status === 'skipped') overlapSkipped.add(row.id)
      }
    }
    const plain = runs.filter((run) => !isExclusive(run))
    for (let start = 0; start < plain.length; start += INSERT_CHUNK) {
      const rows: CronRunsTable[] = plain.slice(start, start + INSERT_CHUNK).map((run) => ({
        id: run.id,
        job_id: run.jobId,
        job_name: run.jobName,
        trigger: run.trigger,
        status: run.status,
        scheduled_for: run.scheduledFor,
        started_at: run.startedAt,
        completed_at: run.completedAt,
        duration_ms: null,
        result: null,
        error: null,
        skip_reason: run.skipReason,
        delivery_status: 'none',
        delivery_error: null,
        owner: run.owner,
        input_tokens: null,
        output_tokens: null,
      }))
      // The claim: the unique (job_id, scheduled_for) index decides who owns an occurrence.
      const claimed = await this.#db
        .insertInto('cron_runs')
        .values(rows)
        .onConflict((conflict) => conflict.columns(['job_id', 'scheduled_for']).doNothing())
        .returning('id')
        .execute()
      for (const row of claimed) inserted.add(row.id)
    }
    return { inserted, overlapSkipped }
  }

  async claimedOccurrences(
    occurrences: readonly OccurrenceKey[],
    options?: StoreCallOptions,
  ): Promise<OccurrenceKey[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const claimed: OccurrenceKey[] = []
    // Job ids and instants as two plain IN lists, which PostgreSQL plans as one index scan (pairs of
    // row values it would test one by one); the pairs not asked for are dropped here. Occurrences
    // found due together share one or a few instants, so the answer is hardly larger.
    for (let start = 0; start < occurrences.length; start += IN_CHUNK) {
      const chunk = occurrences.slice(start, start + IN_CHUNK)
      const asked = new Set(chunk.map((occurrence) => `${occurrence.scheduledFor}:${occurrence.jobId}`))
      const rows = await this.#db
        .selectFrom('cron_runs')
        .select(['job_id', 'scheduled_for'])
        .where('job_id', 'in', [...new Set(chunk.map((occurrence) => occurrence.jobId))])
        .where('scheduled_for', 'in', [...new Set(chunk.map((occurrence) => occurrence.scheduledFor))])
        .execute()
      for (const row of rows) {
        const occurrence = { jobId: row.job_id, scheduledFor: Number(row.scheduled_for) }
        if (asked.has(`${occurrence.scheduledFor}:${occurrence.jobId}`)) claimed.push(occurrence)
      }
    }
    return claimed
  }

  /**
   * Claims exclusive rows in one statement: INSERT … SELECT, where each row is `running` unless its
   * job has a `running` row already (then `skipped` with its reason), and ON CONFLICT DO NOTHING
   * keeps the occurrence's one row. SQLite runs the statement under its write lock; on PostgreSQL
   * the check reads the rows committed when the statement starts.
   */
  async #insertExclusive(runs: readonly NewCronRun[]): Promise<{ id: string; status: string }[]> {
    const text = (value: string | null) => sql`cast(${value} as text)`
    const integer = (value: number | null) => sql`cast(${value} as bigint)`
    // A derived table of the rows (a UNION ALL of SELECTs: SQLite names no VALUES columns), each
    // cast so PostgreSQL knows its parameters' types.
    const candidates = sql.join(
      runs.map(
        (run) =>
          sql`select ${text(run.id)} as id, ${text(run.jobId)} as job_id, ${text(run.jobName)} as job_name, ${text(run.trigger)} as trigger_name, ${integer(run.scheduledFor)} as scheduled_for, ${integer(run.startedAt)} as started_at, ${text(run.exclusive?.skipReason ?? null)} as exclusive_reason, ${text(run.owner)} as owner_id`,
      ),
      sql` union all `,
    )
    const busy = sql`exists (select 1 from ${sql.table('cron_runs')} as ${sql.ref('other')} where ${sql.ref('other.job_id')} = ${sql.ref('row.job_id')} and ${sql.ref('other.status')} = 'running')`
    const columns = sql.join(
      [
        'id',
        'job_id',
        'job_name',
        'trigger',
        'status',
        'scheduled_for',
        'started_at',
        'completed_at',
        'duration_ms',
        'result',
        'error',
        'skip_reason',
        'delivery_status',
        'delivery_error',
        'owner',
        'input_tokens',
        'output_tokens',
      ].map((column) => sql.ref(column)),
    )
    // The check is made once per row (`busy`), then decides status, times and reason.
    // `where true` before ON CONFLICT: SQLite would otherwise parse ON as a join constraint.
    const result = await sql<{
      id: string
      status: string
    }>`insert into ${sql.table('cron_runs')} (${columns})
      select candidate.id, candidate.job_id, candidate.job_name, candidate.trigger_name,
        case when candidate.busy then 'skipped' else 'running' end,
        candidate.scheduled_for,
        case when candidate.busy then null else candidate.started_at end,
        case when candidate.busy then candidate.started_at else null end,
        null, null, null,
        case when candidate.busy then candidate.exclusive_reason else null end,
        'none', null, candidate.owner_id, null, null
      from (select ${sql.ref('row')}.*, ${busy} as busy from (${candidates}) as ${sql.ref('row')}) as candidate
      where true
      on conflict (job_id, scheduled_for) do nothing
      returning id, status`.execute(this.#db)
    return result.rows
  }

  async completeRun(id: string, completion: RunCompletion, options?: StoreCallOptions): Promise<boolean> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const result = await this.#completion(this.#db, id, completion).executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /**
   * On PostgreSQL one statement: the run's update and the job's in data-modifying CTEs, the job's
   * only if the run's row was finalised. SQLite has no such CTEs; there it is the two statements
   * (in-process, no round trip to save).
   */
  async completeRunWithOutcome(
    id: string,
    completion: RunCompletion,
    outcome: RunOutcome,
    options?: StoreCallOptions,
  ): Promise<CompletionWithOutcome> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    if (!this.#postgres) {
      const done = await this.#completion(this.#db, id, completion).executeTakeFirst()
      if (done.numUpdatedRows === 0n) return { updated: false, failures: undefined }
      const row = await this.#outcome(this.#db, outcome).returning('consecutive_failures').executeTakeFirst()
      return { updated: true, failures: row === undefined ? undefined : Number(row.consecutive_failures) }
    }
    // One statement (PostgreSQL's data-modifying CTEs): the run's update, then the job's only when
    // the run's row was finalised. A template, not the query builder: it runs once per run, and
    // building this CTE per call kept V8's optimising compiler busy re-compiling the builder; a
    // burst of shell runs cost about a tenth more CPU per run with it (ADR 0014, 2026-11-28).
    const ownerCheck =
      completion.owner === undefined
        ? sql`status = 'running'`
        : sql`(status = 'running' or (status = 'interrupted' and owner = ${completion.owner}))`
    const skip = completion.skipReason === undefined ? sql`` : sql`, skip_reason = ${completion.skipReason}`
    const failures = outcome.failed ? sql`consecutive_failures + 1` : sql`0`
    const { rows } = await sql<{ updated: number | string; failures: number | string | null }>`
      with done as (
        update cron_runs set status = ${completion.status}, completed_at = ${completion.completedAt},
          duration_ms = ${completion.durationMs}, result = ${completion.result}, error = ${completion.error},
          input_tokens = ${completion.inputTokens}, output_tokens = ${completion.outputTokens}${skip}
        where id = ${id} and ${ownerCheck}
        returning id
      ), outcome as (
        update cron_jobs set last_status = ${outcome.status}, consecutive_failures = ${failures}
        where id = ${outcome.jobId} and exists (select 1 from done)
        returning consecutive_failures
      )
      select (select count(*) from done) as updated, (select consecutive_failures from outcome) as failures`.execute(
      this.#db,
    )
    const row = rows[0] ?? { updated: 0, failures: null }
    const updated = Number(row.updated) > 0
    return {
      updated,
      failures: updated && row.failures !== null ? Number(row.failures) : undefined,
    }
  }

  /** The update that finalises a run (`completeRun`'s), from `db`: the handle, or a CTE's creator. */
  #completion(db: QueryCreator<CronDatabase>, id: string, completion: RunCompletion) {
    return db
      .updateTable('cron_runs')
      .set({
        status: completion.status,
        completed_at: completion.completedAt,
        duration_ms: completion.durationMs,
        result: completion.result,
        error: completion.error,
        input_tokens: completion.inputTokens,
        output_tokens: completion.outputTokens,
        ...(completion.skipReason === undefined ? {} : { skip_reason: completion.skipReason }),
      })
      .where('id', '=', id)
      .where((eb) =>
        completion.owner === undefined
          ? eb('status', '=', 'running')
          : eb.or([
              eb('status', '=', 'running'),
              eb.and([eb('status', '=', 'interrupted'), eb('owner', '=', completion.owner)]),
            ]),
      )
  }

  /** The update that records an outcome on its job (`recordOutcome`'s), from `db`. */
  #outcome(db: QueryCreator<CronDatabase>, outcome: RunOutcome) {
    return db
      .updateTable('cron_jobs')
      .set((eb) => ({
        last_status: outcome.status,
        consecutive_failures: outcome.failed ? eb('consecutive_failures', '+', 1) : 0,
      }))
      .where('id', '=', outcome.jobId)
  }

  async setDelivery(
    id: string,
    status: DeliveryStatus,
    error: string | null,
    options?: StoreCallOptions,
  ): Promise<void> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    await this.#db
      .updateTable('cron_runs')
      .set({ delivery_status: status, delivery_error: error })
      .where('id', '=', id)
      .execute()
  }

  async insertDeliveries(rows: readonly NewCronDelivery[], options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
      await this.#db
        .insertInto('cron_deliveries')
        .values(
          rows.slice(start, start + INSERT_CHUNK).map((row) => ({
            id: row.id,
            run_id: row.runId,
            job_id: row.jobId,
            target: row.target,
            status: 'pending',
            attempts: 0,
            next_attempt_at: row.nextAttemptAt,
            last_error: null,
            text: row.text,
            owner: null,
            created_at: row.createdAt,
            updated_at: row.createdAt,
            delivered_at: null,
          })),
        )
        .onConflict((conflict) => conflict.columns(['run_id', 'target']).doNothing())
        .execute()
    }
  }

  async claimDelivery(
    id: string,
    input: { readonly owner: string; readonly now: number },
    options?: StoreCallOptions,
  ): Promise<CronDelivery | undefined> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const row = await this.#db
      .updateTable('cron_deliveries')
      .set((eb) => ({
        status: 'sending',
        owner: input.owner,
        attempts: eb('attempts', '+', 1),
        updated_at: input.now,
      }))
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .returningAll()
      .executeTakeFirst()
    return row === undefined ? undefined : deliveryFromRow(row)
  }

  async finishDelivery(id: string, update: DeliveryUpdate, options?: StoreCallOptions): Promise<boolean> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const result = await this.#db
      .updateTable('cron_deliveries')
      .set({
        status: update.status,
        next_attempt_at: update.status === 'pending' ? update.nextAttemptAt : null,
        last_error: update.lastError,
        updated_at: update.now,
        ...(update.status === 'delivered' ? { delivered_at: update.now } : {}),
      })
      .where('id', '=', id)
      .where('status', '=', 'sending')
      .where('owner', '=', update.owner)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  async pendingDeliveries(
    input: { readonly limit: number },
    options?: StoreCallOptions,
  ): Promise<CronDelivery[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const rows = await this.#db
      .selectFrom('cron_deliveries')
      .selectAll()
      .where('status', '=', 'pending')
      .orderBy('next_attempt_at')
      .orderBy('id')
      .limit(clampLimit(input.limit))
      .execute()
    return rows.map(deliveryFromRow)
  }

  async orphanedDeliveries(
    input: { readonly aliveSince: number; readonly limit: number },
    options?: StoreCallOptions,
  ): Promise<CronDelivery[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const rows = await this.#db
      .selectFrom('cron_deliveries')
      .selectAll()
      .where('status', '=', 'sending')
      .where((eb) => ownerGone(eb, input.aliveSince))
      .orderBy('id')
      .limit(clampLimit(input.limit))
      .execute()
    return rows.map(deliveryFromRow)
  }

  async listDeliveries(runIds: readonly string[], options?: StoreCallOptions): Promise<CronDelivery[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const deliveries: CronDelivery[] = []
    for (let start = 0; start < runIds.length; start += IN_CHUNK) {
      const rows = await this.#db
        .selectFrom('cron_deliveries')
        .selectAll()
        .where('run_id', 'in', runIds.slice(start, start + IN_CHUNK))
        .orderBy('run_id')
        .orderBy('target')
        .execute()
      for (const row of rows) deliveries.push(deliveryFromRow(row))
    }
    return deliveries
  }

  async recordOutcome(
    jobId: string,
    status: CronRunStatus,
    failed: boolean,
    options?: StoreCallOptions,
  ): Promise<number | undefined> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const row = await this.#outcome(this.#db, { jobId, status, failed })
      .returning('consecutive_failures')
      .executeTakeFirst()
    return row === undefined ? undefined : Number(row.consecutive_failures)
  }

  async getRun(id: string, options?: StoreCallOptions): Promise<CronRun | undefined> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const row = await this.#db.selectFrom('cron_runs').selectAll().where('id', '=', id).executeTakeFirst()
    return row === undefined ? undefined : runFromRow(row)
  }

  async listRuns(options?: ListRunsOptions): Promise<CronRun[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const limit = clampLimit(options?.limit)
    let query = this.#db
      .selectFrom('cron_runs')
      .selectAll()
      .orderBy('scheduled_for', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
    if (options?.jobId !== undefined) query = query.where('job_id', '=', options.jobId)
    if (options?.status !== undefined) query = query.where('status', '=', options.status)
    const before = options?.before
    if (before !== undefined)
      query = query.where((eb) =>
        eb.or([
          eb('scheduled_for', '<', before.scheduledFor),
          eb.and([eb('scheduled_for', '=', before.scheduledFor), eb('id', '<', before.id)]),
        ]),
      )
    return (await query.execute()).map(runFromRow)
  }

  async aiRunStartTimes(
    input: { readonly since: number; readonly limit: number },
    options?: StoreCallOptions,
  ): Promise<number[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const rows = await this.#db
      .selectFrom('cron_runs')
      .innerJoin('cron_jobs', 'cron_jobs.id', 'cron_runs.job_id')
      .select('cron_runs.started_at')
      .where('cron_jobs.kind', '=', 'ai')
      .where('cron_runs.status', '!=', 'skipped')
      .where('cron_runs.started_at', '>=', input.since)
      .orderBy('cron_runs.started_at', 'desc')
      .limit(clampBudgetLimit(input.limit))
      .execute()
    return rows.map((row) => Number(row.started_at))
  }

  async aiTokenTotals(
    input: { readonly since: number; readonly bucketMs: number },
    options?: StoreCallOptions,
  ): Promise<TokenTotal[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    // Inlined, not a parameter, so both databases divide integers (a bound JS number may be a REAL
    // to SQLite); checkBucketMs makes it a safe integer first.
    const size = sql.lit(checkBucketMs(input.bucketMs))
    const bucket = sql<number | string>`(${sql.ref('completed_at')} / ${size}) * ${size}`
    const rows = await this.#db
      .selectFrom('cron_runs')
      .select([
        bucket.as('at'),
        sql<
          number | string
        >`sum(coalesce(${sql.ref('input_tokens')}, 0) + coalesce(${sql.ref('output_tokens')}, 0))`.as(
          'tokens',
        ),
      ])
      .where('completed_at', '>=', input.since)
      .where((eb) => eb.or([eb('input_tokens', 'is not', null), eb('output_tokens', 'is not', null)]))
      .groupBy(bucket)
      .orderBy('at')
      .execute()
    // PostgreSQL returns bigint and sum(bigint) as strings.
    return rows.map((row) => ({ at: Number(row.at), tokens: Number(row.tokens) }))
  }

  async recentResults(jobId: string, limit: number, options?: StoreCallOptions): Promise<string[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const rows = await this.#db
      .selectFrom('cron_runs')
      .select('result')
      .where('job_id', '=', jobId)
      .where('status', '=', 'completed')
      .where('result', 'is not', null)
      .orderBy('scheduled_for', 'desc')
      .limit(clampLimit(limit))
      .execute()
    return rows.map((row) => row.result as string)
  }

  async heartbeat(owner: string, now: number, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    await this.#db
      .insertInto('cron_owners')
      .values({ id: owner, started_at: now, heartbeat_at: now })
      .onConflict((conflict) => conflict.column('id').doUpdateSet({ heartbeat_at: now }))
      .execute()
  }

  async removeOwner(owner: string, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    await this.#db.deleteFrom('cron_owners').where('id', '=', owner).execute()
  }

  async liveOwners(input: { readonly aliveSince: number }, options?: StoreCallOptions): Promise<string[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const rows = await this.#db
      .selectFrom('cron_owners')
      .select('id')
      .where('heartbeat_at', '>=', input.aliveSince)
      .orderBy('id')
      .execute()
    return rows.map((row) => row.id)
  }

  async interruptOrphanedRuns(
    input: { readonly now: number; readonly aliveSince: number; readonly reason: string },
    options?: StoreCallOptions,
  ): Promise<CronRun[]> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    const rows = await this.#db
      .updateTable('cron_runs')
      .set((eb) => ({
        status: 'interrupted',
        completed_at: input.now,
        duration_ms: eb(eb.val(input.now), '-', eb.fn.coalesce('started_at', eb.val(input.now))),
        error: input.reason,
      }))
      .where('status', '=', 'running')
      .where((eb) => ownerGone(eb, input.aliveSince))
      .returningAll()
      .execute()
    await this.#db.deleteFrom('cron_owners').where('heartbeat_at', '<', input.aliveSince).execute()
    return rows.map(runFromRow)
  }

  async pruneRuns(
    input: { readonly olderThan: number; readonly keepPerJob: number },
    options?: StoreCallOptions,
  ): Promise<number> {
    options?.signal?.throwIfAborted()
    if (!this.#tablesFound) await this.#checkTables()
    let deleted = 0
    const byAge = await this.#db
      .deleteFrom('cron_runs')
      .where('status', '!=', 'running')
      .where('scheduled_for', '<', input.olderThan)
      .executeTakeFirst()
    deleted += Number(byAge.numDeletedRows)
    const keep = Math.max(1, Math.floor(input.keepPerJob))
    const crowded = await this.#db
      .selectFrom('cron_runs')
      .select('job_id')
      .groupBy('job_id')
      .having((eb) => eb.fn.countAll(), '>', keep)
      .execute()
    for (const { job_id: jobId } of crowded) {
      const boundary = await this.#db
        .selectFrom('cron_runs')
        .select('scheduled_for')
        .where('job_id', '=', jobId)
        .orderBy('scheduled_for', 'desc')
        .limit(1)
        .offset(keep - 1)
        .executeTakeFirst()
      if (boundary === undefined) continue
      const byCount = await this.#db
        .deleteFrom('cron_runs')
        .where('job_id', '=', jobId)
        .where('status', '!=', 'running')
        .where('scheduled_for', '<', Number(boundary.scheduled_for))
        .executeTakeFirst()
      deleted += Number(byCount.numDeletedRows)
    }
    // The deliveries of the runs just deleted (a delivery never outlives its run).
    if (deleted > 0) {
      await this.#db
        .deleteFrom('cron_deliveries')
        .where('run_id', 'not in', (eb) => eb.selectFrom('cron_runs').select('cron_runs.id'))
        .execute()
    }
    return deleted
  }
}

/** The WHEN condition of one update: its job, and (with `version`) still that definition of it. */
/** `updates` in order, cut into chunks of at most {@link IN_CHUNK} in which no job appears twice. */
function distinctChunks(updates: readonly JobScheduleUpdate[]): JobScheduleUpdate[][] {
  const chunks: JobScheduleUpdate[][] = []
  let chunk: JobScheduleUpdate[] = []
  let ids = new Set<string>()
  for (const update of updates) {
    if (chunk.length === IN_CHUNK || ids.has(update.id)) {
      chunks.push(chunk)
      chunk = []
      ids = new Set()
    }
    chunk.push(update)
    ids.add(update.id)
  }
  if (chunk.length > 0) chunks.push(chunk)
  return chunks
}

function sameJob(update: JobScheduleUpdate) {
  return update.version === undefined
    ? sql`${sql.ref('id')} = ${update.id}`
    : sql`(${sql.ref('id')} = ${update.id} and ${sql.ref('updated_at')} = ${update.version})`
}

/** Largest `aiRunStartTimes` answer: a budget beyond it is not a budget. */
const MAX_BUDGET_LIMIT = 100_000

function clampBudgetLimit(limit: number): number {
  return Number.isFinite(limit)
    ? Math.min(MAX_BUDGET_LIMIT, Math.max(0, Math.floor(limit)))
    : MAX_BUDGET_LIMIT
}

function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return 100
  return Math.min(MAX_LIST_LIMIT, Math.max(1, Math.floor(limit)))
}

/** SQLite's "no such table/column", PostgreSQL's undefined_table (42P01) or undefined_column (42703). */
function isMissingSchema(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  if (code === '42P01' || code === '42703') return true
  return typeof message === 'string' && /\bno such (?:table|column)\b/.test(message)
}

/** Every column of each table at the latest migration (the compiler checks none is missing). */
const CRON_COLUMNS: { readonly [T in keyof CronDatabase]: readonly (keyof CronDatabase[T])[] } = {
  cron_jobs: columns<CronDatabase['cron_jobs']>({
    id: true,
    name: true,
    kind: true,
    schedule_type: true,
    schedule: true,
    timezone: true,
    prompt: true,
    command: true,
    cwd: true,
    model: true,
    session_mode: true,
    deliver_to: true,
    enabled: true,
    timeout_ms: true,
    overlap: true,
    catchup: true,
    created_at: true,
    updated_at: true,
    last_run_at: true,
    next_run_at: true,
    last_status: true,
    consecutive_failures: true,
    pause_reason: true,
    created_by: true,
    ping_url: true,
    max_tokens_per_day: true,
    max_cost_per_day_nano_usd: true,
    notify: true,
    when_command: true,
  }),
  cron_runs: columns<CronDatabase['cron_runs']>({
    id: true,
    job_id: true,
    job_name: true,
    trigger: true,
    status: true,
    scheduled_for: true,
    started_at: true,
    completed_at: true,
    duration_ms: true,
    result: true,
    error: true,
    skip_reason: true,
    delivery_status: true,
    delivery_error: true,
    owner: true,
    input_tokens: true,
    output_tokens: true,
  }),
  cron_deliveries: columns<CronDatabase['cron_deliveries']>({
    id: true,
    run_id: true,
    job_id: true,
    target: true,
    status: true,
    attempts: true,
    next_attempt_at: true,
    last_error: true,
    text: true,
    owner: true,
    created_at: true,
    updated_at: true,
    delivered_at: true,
  }),
  cron_owners: columns<CronDatabase['cron_owners']>({ id: true, started_at: true, heartbeat_at: true }),
}

function columns<Table>(all: { readonly [C in keyof Table]-?: true }): (keyof Table)[] {
  return Object.keys(all) as (keyof Table)[]
}

function mapConstraintError(error: unknown, name: string | undefined): unknown {
  const message = error instanceof Error ? error.message : ''
  const code = (error as { code?: unknown } | null)?.code
  const isUnique = /unique/i.test(message) || code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE'
  if (isUnique && /name/i.test(`${message} ${(error as { constraint?: string }).constraint ?? ''}`)) {
    return new CronError(
      'CRON_DUPLICATE_NAME',
      `A job named "${name ?? ''}" already exists; choose another name or update that job.`,
      {
        cause: error,
        data: { name },
      },
    )
  }
  return error
}

/** The SQL of {@link jobSortKey} for `sort`; undefined for `name`. */
function sortKeyExpression(sort: JobSort): RawBuilder<number> | undefined {
  if (sort === 'next_run') return sql<number>`coalesce(next_run_at, ${NO_NEXT_RUN_KEY})`
  if (sort === 'last_run') return sql<number>`coalesce(0 - last_run_at, 1)`
  if (sort === 'failures') return sql<number>`(0 - consecutive_failures)`
  return undefined
}

/** A LIKE pattern for "contains `text`", lower-cased, with `\`, `%` and `_` escaped by `\`. */
function likePattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (char) => `\\${char}`)}%`
}

/**
 * The row's owner (a scheduler) is gone: none recorded, or no heartbeat since `aliveSince`. What
 * `interruptOrphanedRuns` (runs) and `orphanedDeliveries` (sends) look for.
 */
function ownerGone(
  eb: ExpressionBuilder<CronDatabase, 'cron_runs'> | ExpressionBuilder<CronDatabase, 'cron_deliveries'>,
  aliveSince: number,
) {
  // Both tables have `owner`; one builder type serves them.
  const builder = eb as ExpressionBuilder<CronDatabase, 'cron_runs'>
  return builder.or([
    builder('owner', 'is', null),
    builder(
      'owner',
      'not in',
      builder
        .selectFrom('cron_owners')
        .select('cron_owners.id')
        .where('cron_owners.heartbeat_at', '>=', aliveSince),
    ),
  ])
}
