import { type Kysely, PostgresAdapter, sql, type Transaction } from 'kysely'
import * as v from 'valibot'
import { WorkflowError } from '../errors.js'
import {
  FIRST_LEASE_VERSION,
  RUN_STATUSES,
  type RunStatus,
  STEP_STATUSES,
  type StepRunRecord,
  type StepStatus,
  type WorkflowRunRecord,
} from '../model.js'
import type {
  ClaimRunsRequest,
  LeasedRun,
  ListRunsQuery,
  NewWorkflowRun,
  OwnedCallOptions,
  RunCompletion,
  RunLease,
  StepPatch,
  StoreCallOptions,
  WorkflowStore,
} from '../ports.js'
import { reusedById } from '../reused-steps.js'
import {
  WORKFLOW_MIGRATION_TABLE,
  type WorkflowDatabase,
  type WorkflowRunsTable,
  type WorkflowStepRunsTable,
} from './schema.js'

/** Largest page `listRuns` returns (SECURITY.md SQL-4). */
const MAX_LIST_LIMIT = 500
/** Rows per multi-row INSERT: 13 columns × 200 stays under SQLite's and PostgreSQL's parameter caps. */
const INSERT_CHUNK = 200
/** Ids per `IN (…)` list. */
const IN_CHUNK = 500
/** Runs per lease renewal statement: two parameters each. */
const RENEW_CHUNK = 200
/** What `releaseOwner` sets a lease expiry to: long past, so any engine may take the run at once. */
const EXPIRED = 0
const ACTIVE: readonly RunStatus[] = ['pending', 'running']
const UNFINISHED_STEPS: readonly StepStatus[] = ['pending', 'running']
const ENDED: readonly RunStatus[] = ['completed', 'failed', 'cancelled']

const TargetsSchema = v.array(v.string())

/** Every column of each table at the latest migration (the compiler checks none is missing). */
const RUN_COLUMNS = Object.keys({
  id: true,
  workflow_name: true,
  definition: true,
  status: true,
  total_steps: true,
  completed_steps: true,
  error: true,
  deliver_to: true,
  origin_session: true,
  owner: true,
  started_at: true,
  completed_at: true,
  lease_version: true,
  lease_expires_at: true,
  rerun_of: true,
  trigger_payload: true,
  creator: true,
} satisfies Record<keyof WorkflowRunsTable, true>) as (keyof WorkflowRunsTable)[]
const STEP_COLUMNS = Object.keys({
  run_id: true,
  step_id: true,
  position: true,
  status: true,
  input: true,
  result: true,
  error: true,
  attempt: true,
  started_at: true,
  completed_at: true,
  input_tokens: true,
  output_tokens: true,
  reused_from: true,
} satisfies Record<keyof WorkflowStepRunsTable, true>) as (keyof WorkflowStepRunsTable)[]
const OWNER_COLUMNS = Object.keys({
  id: true,
  started_at: true,
  heartbeat_at: true,
} satisfies Record<
  keyof WorkflowDatabase['workflow_owners'],
  true
>) as (keyof WorkflowDatabase['workflow_owners'])[]

/** SQLite's "no such table/column", PostgreSQL's undefined_table (42P01) or undefined_column (42703). */
function isMissingSchema(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  if (code === '42P01' || code === '42703') return true
  return typeof message === 'string' && /\bno such (table|column)\b/.test(message)
}

/**
 * {@link WorkflowStore} over kysely. Named for its default database; every query is plain kysely
 * (parameterised, `ON CONFLICT`, `EXISTS`), so it also runs on PostgreSQL. Takes a Kysely handle,
 * never a path: the app owns the connection and its pragmas (WAL, `synchronous=NORMAL`,
 * `busy_timeout`) and runs {@link migrateWorkflow} first. Use one Kysely per database file in a
 * process, shared with the host's other stores: its single-connection mutex is what serialises
 * their transactions.
 *
 * Several processes may share one database (each with its own store and engine): `claimRuns`
 * never hands a run to two of them. On PostgreSQL (a Kysely whose adapter is kysely's
 * `PostgresAdapter`) it selects the expired runs `FOR UPDATE SKIP LOCKED` inside the claiming
 * transaction. On SQLite the claiming transaction's first statement is the claiming `UPDATE` itself
 * (the expired runs are chosen by its subquery), so the transaction holds the database's write lock
 * before it reads anything: what `BEGIN IMMEDIATE` gives, through kysely's plain `BEGIN`.
 */
export class SqliteWorkflowStore<DB extends WorkflowDatabase = WorkflowDatabase> implements WorkflowStore {
  readonly #db: Kysely<WorkflowDatabase>
  /** PostgreSQL: claim with row locks (`FOR UPDATE SKIP LOCKED`). */
  readonly #rowLocks: boolean

  /** Set once the first call found every table and column of the latest migration. */
  #migrated = false
  #migrationCheck: Promise<void> | undefined

  /**
   * @param db the host's Kysely, typed with `WorkflowDatabase` or any database that includes its
   * tables (e.g. `Kysely<CronDatabase & WorkflowDatabase>`, shared with `@lango/cron`), no cast needed.
   */
  constructor(db: Kysely<DB>) {
    // Kysely's DB parameter is invariant; this store only ever touches its own three tables.
    this.#db = db as unknown as Kysely<WorkflowDatabase>
    this.#rowLocks = db.getExecutor().adapter instanceof PostgresAdapter
  }

  /**
   * Checks once, at first use, that the database has this package's tables and columns (one
   * `LIMIT 0` select per table); a database whose migrations were not run gets
   * `WORKFLOW_STORE_NOT_MIGRATED` instead of the driver's "no such table". Checked again on the
   * next call after a failure, so running the migrations later is enough.
   */
  #checkMigrated(): Promise<void> {
    this.#migrationCheck ??= this.#probeSchema().then(
      () => {
        this.#migrated = true
      },
      (error: unknown) => {
        this.#migrationCheck = undefined
        throw error
      },
    )
    return this.#migrationCheck
  }

  async #probeSchema(): Promise<void> {
    try {
      await this.#db.selectFrom('workflow_runs').select(RUN_COLUMNS).limit(0).execute()
      await this.#db.selectFrom('workflow_step_runs').select(STEP_COLUMNS).limit(0).execute()
      await this.#db.selectFrom('workflow_owners').select(OWNER_COLUMNS).limit(0).execute()
    } catch (error) {
      if (!isMissingSchema(error)) throw error
      throw new WorkflowError(
        'WORKFLOW_STORE_NOT_MIGRATED',
        'The workflow tables are missing or out of date: run migrateWorkflow(db) from @lango/workflow/sqlite on this database before using the store',
        { cause: error, data: { migrationTable: WORKFLOW_MIGRATION_TABLE } },
      )
    }
  }

  async insertRun(run: NewWorkflowRun, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    if (!this.#migrated) await this.#checkMigrated()
    const reused = reusedById(run)
    await this.#db.transaction().execute(async (transaction) => {
      await transaction
        .insertInto('workflow_runs')
        .values({
          id: run.id,
          workflow_name: run.workflowName,
          definition: run.definition,
          status: run.status,
          total_steps: run.stepIds.length,
          completed_steps: reused.size,
          error: null,
          deliver_to: JSON.stringify(run.deliverTo),
          origin_session: run.originSession,
          owner: run.owner,
          started_at: run.startedAt,
          completed_at: null,
          lease_version: FIRST_LEASE_VERSION,
          lease_expires_at: run.leaseExpiresAt,
          rerun_of: run.rerunOf ?? null,
          trigger_payload: run.triggerPayload ?? null,
          creator: run.creator ?? null,
        })
        .execute()
      for (let start = 0; start < run.stepIds.length; start += INSERT_CHUNK) {
        const rows = run.stepIds.slice(start, start + INSERT_CHUNK).map((stepId, offset) => {
          const taken = reused.get(stepId)
          return {
            run_id: run.id,
            step_id: stepId,
            position: start + offset,
            status: taken === undefined ? 'pending' : 'completed',
            input: taken?.input ?? null,
            result: taken?.result ?? null,
            error: null,
            attempt: 0,
            started_at: null,
            completed_at: taken?.completedAt ?? null,
            input_tokens: null,
            output_tokens: null,
            reused_from: taken?.reusedFrom ?? null,
          }
        })
        await transaction.insertInto('workflow_step_runs').values(rows).execute()
      }
    })
  }

  async updateStep(
    runId: string,
    stepId: string,
    patch: StepPatch,
    options: OwnedCallOptions,
  ): Promise<boolean> {
    options.signal?.throwIfAborted()
    if (!this.#migrated) await this.#checkMigrated()
    if (patch.status !== 'completed') {
      // One statement is atomic on its own: no interactive transaction needed.
      const result = await this.#ownedStepUpdate(
        this.#db,
        runId,
        [stepId],
        patch,
        options.lease,
      ).executeTakeFirst()
      return result.numUpdatedRows > 0n
    }
    return this.#db.transaction().execute(async (transaction) => {
      const result = await this.#ownedStepUpdate(
        transaction,
        runId,
        [stepId],
        patch,
        options.lease,
      ).executeTakeFirst()
      if (result.numUpdatedRows === 0n) return false
      await transaction
        .updateTable('workflow_runs')
        .set((eb) => ({ completed_steps: eb('completed_steps', '+', 1) }))
        .where('id', '=', runId)
        .execute()
      return true
    })
  }

  async updateSteps(
    runId: string,
    stepIds: readonly string[],
    patch: StepPatch,
    options: OwnedCallOptions,
  ): Promise<boolean> {
    options.signal?.throwIfAborted()
    if (!this.#migrated) await this.#checkMigrated()
    if (stepIds.length === 0) return true
    return this.#db.transaction().execute(async (transaction) => {
      let updated = 0n
      for (let start = 0; start < stepIds.length; start += IN_CHUNK) {
        const chunk = stepIds.slice(start, start + IN_CHUNK)
        const result = await this.#ownedStepUpdate(
          transaction,
          runId,
          chunk,
          patch,
          options.lease,
        ).executeTakeFirst()
        updated += result.numUpdatedRows
      }
      if (patch.status === 'completed' && updated > 0n) {
        const count = Number(updated)
        await transaction
          .updateTable('workflow_runs')
          .set((eb) => ({ completed_steps: eb('completed_steps', '+', count) }))
          .where('id', '=', runId)
          .execute()
      }
      return updated > 0n
    })
  }

  #ownedStepUpdate(
    db: Kysely<WorkflowDatabase> | Transaction<WorkflowDatabase>,
    runId: string,
    stepIds: readonly string[],
    patch: StepPatch,
    lease: RunLease,
  ) {
    let query = db
      .updateTable('workflow_step_runs')
      .set(stepPatchToRow(patch))
      .where('run_id', '=', runId)
      .where(
        'step_id',
        stepIds.length === 1 ? '=' : 'in',
        stepIds.length === 1 ? (stepIds[0] as string) : (stepIds as string[]),
      )
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom('workflow_runs')
            .select('workflow_runs.id')
            .where('workflow_runs.id', '=', runId)
            .where('workflow_runs.owner', '=', lease.owner)
            .where('workflow_runs.lease_version', '=', lease.version)
            .where('workflow_runs.status', 'in', ACTIVE),
        ),
      )
    if (patch.status === 'completed') query = query.where('status', '<>', 'completed')
    return query
  }

  async finishRun(
    runId: string,
    completion: RunCompletion,
    options?: StoreCallOptions & { readonly lease?: RunLease },
  ): Promise<boolean> {
    options?.signal?.throwIfAborted()
    if (!this.#migrated) await this.#checkMigrated()
    const lease = options?.lease
    return this.#db.transaction().execute(async (transaction) => {
      let query = transaction
        .updateTable('workflow_runs')
        .set({ status: completion.status, error: completion.error, completed_at: completion.completedAt })
        .where('id', '=', runId)
        .where('status', 'in', ACTIVE)
      if (lease !== undefined)
        query = query.where('owner', '=', lease.owner).where('lease_version', '=', lease.version)
      const result = await query.executeTakeFirst()
      if (result.numUpdatedRows === 0n) return false
      if (completion.remainingSteps !== undefined) {
        await transaction
          .updateTable('workflow_step_runs')
          .set({ status: completion.remainingSteps, completed_at: completion.completedAt })
          .where('run_id', '=', runId)
          .where('status', 'in', UNFINISHED_STEPS)
          .execute()
      }
      return true
    })
  }

  async getRun(runId: string, options?: StoreCallOptions): Promise<WorkflowRunRecord | undefined> {
    options?.signal?.throwIfAborted()
    if (!this.#migrated) await this.#checkMigrated()
    const row = await this.#db
      .selectFrom('workflow_runs')
      .selectAll()
      .where('id', '=', runId)
      .executeTakeFirst()
    return row === undefined ? undefined : runFromRow(row)
  }

  async listSteps(runId: string, options?: StoreCallOptions): Promise<StepRunRecord[]> {
    options?.signal?.throwIfAborted()
    if (!this.#migrated) await this.#checkMigrated()
    const rows = await this.#db
      .selectFrom('workflow_step_runs')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('position')
      .execute()
    return rows.map(stepFromRow)
  }

  async listRuns(query?: ListRunsQuery, options?: StoreCallOptions): Promise<WorkflowRunRecord[]> {
    options?.signal?.throwIfAborted()
    if (!this.#migrated) await this.#checkMigrated()
    const limit = clampLimit(query?.limit)
    let select = this.#db.selectFrom('workflow_runs').selectAll()
    if (query?.status !== undefined) select = select.where('status', '=', query.status)
    if (query?.workflowName !== undefined) select = select.where('workflow_name', '=', query.workflowName)
    // A run not started yet sorts as 0 (last) on SQLite and PostgreSQL alike.
    const started = sql<number>`coalesce(${sql.ref('started_at')}, 0)`
    const before = query?.before
    if (before !== undefined)
      select = select.where((eb) =>
        eb.or([
          eb(started, '<', before.startedAt),
          eb.and([eb(started, '=', before.startedAt), eb('id', '<', before.id)]),
        ]),
      )
    const rows = await select.orderBy(started, 'desc').orderBy('id', 'desc').limit(limit).execute()
    return rows.map(runFromRow)
  }

  async heartbeat(owner: string, now: number, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    if (!this.#migrated) await this.#checkMigrated()
    await this.#db
      .insertInto('workflow_owners')
      .values({ id: owner, started_at: now, heartbeat_at: now })
      .onConflict((conflict) => conflict.column('id').doUpdateSet({ heartbeat_at: now }))
      .execute()
  }

  async renewLeases(
    owner: string,
    runs: readonly LeasedRun[],
    leaseExpiresAt: number,
    options?: StoreCallOptions,
  ): Promise<string[]> {
    options?.signal?.throwIfAborted()
    if (!this.#migrated) await this.#checkMigrated()
    const renewed: string[] = []
    for (let start = 0; start < runs.length; start += RENEW_CHUNK) {
      const chunk = runs.slice(start, start + RENEW_CHUNK)
      const rows = await this.#db
        .updateTable('workflow_runs')
        .set({ lease_expires_at: leaseExpiresAt })
        .where('owner', '=', owner)
        .where('status', 'in', ACTIVE)
        .where((eb) =>
          eb.or(
            chunk.map((run) => eb.and([eb('id', '=', run.runId), eb('lease_version', '=', run.version)])),
          ),
        )
        .returning('id')
        .execute()
      for (const row of rows) renewed.push(row.id)
    }
    return renewed
  }

  async releaseOwner(owner: string, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    if (!this.#migrated) await this.#checkMigrated()
    await this.#db.transaction().execute(async (transaction) => {
      await transaction
        .updateTable('workflow_runs')
        .set({ lease_expires_at: EXPIRED })
        .where('owner', '=', owner)
        .where('status', 'in', ACTIVE)
        .execute()
      await transaction.deleteFrom('workflow_owners').where('id', '=', owner).execute()
    })
  }

  async claimRuns(
    owner: string,
    request: ClaimRunsRequest,
    options?: StoreCallOptions,
  ): Promise<LeasedRun[]> {
    options?.signal?.throwIfAborted()
    if (!this.#migrated) await this.#checkMigrated()
    const limit = request.limit === undefined ? undefined : Math.max(0, Math.trunc(request.limit))
    const claimed =
      limit === 0
        ? []
        : await this.#db.transaction().execute(async (transaction) => {
            let expired = transaction
              .selectFrom('workflow_runs as candidate')
              .select('candidate.id')
              .where('candidate.status', 'in', ACTIVE)
              .where((eb) =>
                eb.or([
                  eb('candidate.lease_expires_at', '<', request.now),
                  eb.and([
                    eb('candidate.lease_expires_at', 'is', null),
                    eb.not(
                      eb.exists(
                        eb
                          .selectFrom('workflow_owners')
                          .select('workflow_owners.id')
                          .whereRef('workflow_owners.id', '=', 'candidate.owner')
                          .where('workflow_owners.heartbeat_at', '>=', request.staleBefore),
                      ),
                    ),
                  ]),
                ]),
              )
              .orderBy('candidate.started_at')
              .orderBy('candidate.id')
            if (limit !== undefined) expired = expired.limit(limit)
            const take = transaction
              .updateTable('workflow_runs')
              .set((eb) => ({
                owner,
                status: 'running',
                lease_version: eb('lease_version', '+', 1),
                lease_expires_at: request.leaseExpiresAt,
              }))
              .returning(['id', 'lease_version', 'started_at'])
            let rows: { id: string; lease_version: number; started_at: number | null }[]
            if (this.#rowLocks) {
              // PostgreSQL: lock the expired rows; rows another claimer holds are skipped, not waited for.
              const ids = (await expired.forUpdate().skipLocked().execute()).map((row) => row.id)
              rows = ids.length === 0 ? [] : await take.where('id', 'in', ids).execute()
            } else {
              // SQLite: one statement chooses and takes, and is the transaction's first, so the
              // write lock is held before anything is read (BEGIN IMMEDIATE).
              rows = await take.where('id', 'in', expired).execute()
            }
            const ids = rows.map((row) => row.id)
            for (let start = 0; start < ids.length; start += IN_CHUNK) {
              await transaction
                .updateTable('workflow_step_runs')
                .set({ status: 'pending' })
                .where('run_id', 'in', ids.slice(start, start + IN_CHUNK))
                .where('status', '=', 'running')
                .execute()
            }
            return rows
              .map((row) => ({
                runId: row.id,
                version: Number(row.lease_version),
                startedAt: toNumber(row.started_at) ?? 0,
              }))
              .sort((left, right) => left.startedAt - right.startedAt || compare(left.runId, right.runId))
              .map(({ runId, version }) => ({ runId, version }))
          })
    await this.#db
      .deleteFrom('workflow_owners')
      .where('heartbeat_at', '<', request.staleBefore)
      .where('id', '<>', owner)
      .execute()
    return claimed
  }

  async pruneRuns(
    policy: { readonly completedBefore: number; readonly keep: number },
    options?: StoreCallOptions,
  ): Promise<number> {
    options?.signal?.throwIfAborted()
    if (!this.#migrated) await this.#checkMigrated()
    const old = await this.#db
      .selectFrom('workflow_runs')
      .select('id')
      .where('status', 'in', ENDED)
      .where('completed_at', '<', policy.completedBefore)
      .execute()
    const surplus = await this.#db
      .selectFrom('workflow_runs')
      .select('id')
      .where('status', 'in', ENDED)
      .orderBy('completed_at', 'desc')
      .orderBy('id', 'desc')
      .offset(Math.max(0, Math.trunc(policy.keep)))
      .limit(1_000_000)
      .execute()
    const ids = [...new Set([...old, ...surplus].map((row) => row.id))]
    for (let start = 0; start < ids.length; start += IN_CHUNK) {
      const chunk = ids.slice(start, start + IN_CHUNK)
      await this.#db.transaction().execute(async (transaction) => {
        await transaction.deleteFrom('workflow_step_runs').where('run_id', 'in', chunk).execute()
        await transaction.deleteFrom('workflow_runs').where('id', 'in', chunk).execute()
      })
    }
    return ids.length
  }
}

function compare(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0
}

function clampLimit(limit: number | undefined): number {
  if (limit === undefined) return 20
  if (!Number.isFinite(limit)) return MAX_LIST_LIMIT
  return Math.min(MAX_LIST_LIMIT, Math.max(1, Math.trunc(limit)))
}

function stepPatchToRow(patch: StepPatch): Partial<WorkflowStepRunsTable> {
  const row: Partial<WorkflowStepRunsTable> = { status: patch.status }
  if (patch.input !== undefined) row.input = patch.input
  if (patch.result !== undefined) row.result = patch.result
  if (patch.error !== undefined) row.error = patch.error
  if (patch.attempt !== undefined) row.attempt = patch.attempt
  if (patch.startedAt !== undefined) row.started_at = patch.startedAt
  if (patch.completedAt !== undefined) row.completed_at = patch.completedAt
  if (patch.inputTokens !== undefined) row.input_tokens = patch.inputTokens
  if (patch.outputTokens !== undefined) row.output_tokens = patch.outputTokens
  return row
}

function corrupt(table: string, column: string, id: string): WorkflowError {
  return new WorkflowError('WORKFLOW_STORE_CORRUPT', `Stored ${table}.${column} is invalid`, {
    data: { table, column, id },
  })
}

/** PostgreSQL drivers return `bigint` columns as strings; SQLite returns numbers. */
function toNumber(value: number | string | bigint | null): number | null {
  return value === null ? null : Number(value)
}

function runFromRow(row: WorkflowRunsTable): WorkflowRunRecord {
  if (!(RUN_STATUSES as readonly string[]).includes(row.status))
    throw corrupt('workflow_runs', 'status', row.id)
  let targets: unknown
  try {
    targets = JSON.parse(row.deliver_to)
  } catch {
    throw corrupt('workflow_runs', 'deliver_to', row.id)
  }
  if (!v.is(TargetsSchema, targets)) throw corrupt('workflow_runs', 'deliver_to', row.id)
  return {
    id: row.id,
    workflowName: row.workflow_name,
    definition: row.definition,
    status: row.status as RunStatus,
    totalSteps: Number(row.total_steps),
    completedSteps: Number(row.completed_steps),
    error: row.error,
    deliverTo: targets,
    originSession: row.origin_session,
    owner: row.owner,
    leaseVersion: Number(row.lease_version),
    leaseExpiresAt: toNumber(row.lease_expires_at),
    startedAt: toNumber(row.started_at),
    completedAt: toNumber(row.completed_at),
    rerunOf: row.rerun_of,
    triggerPayload: row.trigger_payload ?? null,
    creator: row.creator ?? null,
  }
}

function stepFromRow(row: WorkflowStepRunsTable): StepRunRecord {
  if (!(STEP_STATUSES as readonly string[]).includes(row.status))
    throw corrupt('workflow_step_runs', 'status', row.run_id)
  return {
    runId: row.run_id,
    stepId: row.step_id,
    position: Number(row.position),
    status: row.status as StepStatus,
    input: row.input,
    result: row.result,
    error: row.error,
    attempt: Number(row.attempt),
    startedAt: toNumber(row.started_at),
    completedAt: toNumber(row.completed_at),
    inputTokens: toNumber(row.input_tokens),
    outputTokens: toNumber(row.output_tokens),
    reusedFrom: row.reused_from,
  }
}
