import type { Kysely, Transaction } from 'kysely'
import * as v from 'valibot'
import { WorkflowError } from '../errors.js'
import {
  RUN_STATUSES,
  type RunStatus,
  STEP_STATUSES,
  type StepRunRecord,
  type StepStatus,
  type WorkflowRunRecord,
} from '../model.js'
import type {
  ListRunsQuery,
  NewWorkflowRun,
  OwnedCallOptions,
  RunCompletion,
  StepPatch,
  StoreCallOptions,
  WorkflowStore,
} from '../ports.js'
import type { WorkflowDatabase, WorkflowRunsTable, WorkflowStepRunsTable } from './schema.js'

/** Largest page `listRuns` returns (SECURITY.md SQL-4). */
const MAX_LIST_LIMIT = 500
/** Rows per multi-row INSERT: 12 columns × 200 stays under SQLite's and PostgreSQL's parameter caps. */
const INSERT_CHUNK = 200
/** Ids per `IN (…)` list. */
const IN_CHUNK = 500
const ACTIVE: readonly RunStatus[] = ['pending', 'running']
const UNFINISHED_STEPS: readonly StepStatus[] = ['pending', 'running']
const ENDED: readonly RunStatus[] = ['completed', 'failed', 'cancelled']

const TargetsSchema = v.array(v.string())

/**
 * {@link WorkflowStore} over kysely. Named for its default database; every query is plain kysely
 * (parameterised, `ON CONFLICT`, `EXISTS`), so it also runs on PostgreSQL. Takes a Kysely handle,
 * never a path: the app owns the connection and its pragmas (WAL, `synchronous=NORMAL`,
 * `busy_timeout`) and runs {@link migrateWorkflow} first. Use one Kysely per database file in a
 * process, shared with the host's other stores: its single-connection mutex is what serialises
 * their transactions.
 */
export class SqliteWorkflowStore<DB extends WorkflowDatabase = WorkflowDatabase> implements WorkflowStore {
  readonly #db: Kysely<WorkflowDatabase>

  /**
   * @param db the host's Kysely, typed with `WorkflowDatabase` or any database that includes its
   * tables (e.g. `Kysely<CronDatabase & WorkflowDatabase>`, shared with `@lango/cron`), no cast needed.
   */
  constructor(db: Kysely<DB>) {
    // Kysely's DB parameter is invariant; this store only ever touches its own three tables.
    this.#db = db as unknown as Kysely<WorkflowDatabase>
  }

  async insertRun(run: NewWorkflowRun, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    await this.#db.transaction().execute(async (transaction) => {
      await transaction
        .insertInto('workflow_runs')
        .values({
          id: run.id,
          workflow_name: run.workflowName,
          definition: run.definition,
          status: run.status,
          total_steps: run.stepIds.length,
          completed_steps: 0,
          error: null,
          deliver_to: JSON.stringify(run.deliverTo),
          origin_session: run.originSession,
          owner: run.owner,
          started_at: run.startedAt,
          completed_at: null,
        })
        .execute()
      for (let start = 0; start < run.stepIds.length; start += INSERT_CHUNK) {
        const rows = run.stepIds.slice(start, start + INSERT_CHUNK).map((stepId, offset) => ({
          run_id: run.id,
          step_id: stepId,
          position: start + offset,
          status: 'pending',
          input: null,
          result: null,
          error: null,
          attempt: 0,
          started_at: null,
          completed_at: null,
          input_tokens: null,
          output_tokens: null,
        }))
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
    if (patch.status !== 'completed') {
      // One statement is atomic on its own: no interactive transaction needed.
      const result = await this.#ownedStepUpdate(
        this.#db,
        runId,
        [stepId],
        patch,
        options.owner,
      ).executeTakeFirst()
      return result.numUpdatedRows > 0n
    }
    return this.#db.transaction().execute(async (transaction) => {
      const result = await this.#ownedStepUpdate(
        transaction,
        runId,
        [stepId],
        patch,
        options.owner,
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
          options.owner,
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
    owner: string,
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
            .where('workflow_runs.owner', '=', owner)
            .where('workflow_runs.status', 'in', ACTIVE),
        ),
      )
    if (patch.status === 'completed') query = query.where('status', '<>', 'completed')
    return query
  }

  async finishRun(
    runId: string,
    completion: RunCompletion,
    options?: StoreCallOptions & { readonly owner?: string },
  ): Promise<boolean> {
    options?.signal?.throwIfAborted()
    return this.#db.transaction().execute(async (transaction) => {
      let query = transaction
        .updateTable('workflow_runs')
        .set({ status: completion.status, error: completion.error, completed_at: completion.completedAt })
        .where('id', '=', runId)
        .where('status', 'in', ACTIVE)
      if (options?.owner !== undefined) query = query.where('owner', '=', options.owner)
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
    const row = await this.#db
      .selectFrom('workflow_runs')
      .selectAll()
      .where('id', '=', runId)
      .executeTakeFirst()
    return row === undefined ? undefined : runFromRow(row)
  }

  async listSteps(runId: string, options?: StoreCallOptions): Promise<StepRunRecord[]> {
    options?.signal?.throwIfAborted()
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
    const limit = clampLimit(query?.limit)
    let select = this.#db.selectFrom('workflow_runs').selectAll()
    if (query?.status !== undefined) select = select.where('status', '=', query.status)
    if (query?.workflowName !== undefined) select = select.where('workflow_name', '=', query.workflowName)
    const rows = await select.orderBy('started_at', 'desc').orderBy('id', 'desc').limit(limit).execute()
    return rows.map(runFromRow)
  }

  async heartbeat(owner: string, now: number, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    await this.#db
      .insertInto('workflow_owners')
      .values({ id: owner, started_at: now, heartbeat_at: now })
      .onConflict((conflict) => conflict.column('id').doUpdateSet({ heartbeat_at: now }))
      .execute()
  }

  async releaseOwner(owner: string, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    await this.#db.deleteFrom('workflow_owners').where('id', '=', owner).execute()
  }

  async claimRuns(owner: string, staleBefore: number, options?: StoreCallOptions): Promise<string[]> {
    options?.signal?.throwIfAborted()
    const candidates = await this.#db
      .selectFrom('workflow_runs')
      .select(['id', 'owner'])
      .where('status', 'in', ACTIVE)
      .where((eb) => eb.or([eb('owner', 'is', null), eb('owner', '<>', owner)]))
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('workflow_owners')
              .select('workflow_owners.id')
              .whereRef('workflow_owners.id', '=', 'workflow_runs.owner')
              .where('workflow_owners.heartbeat_at', '>=', staleBefore),
          ),
        ),
      )
      .orderBy('started_at')
      .execute()
    const claimed: string[] = []
    for (const candidate of candidates) {
      const taken = await this.#db.transaction().execute(async (transaction) => {
        // Compare-and-set on the old owner: of two engines claiming at once, one wins.
        const result = await transaction
          .updateTable('workflow_runs')
          .set({ owner, status: 'running' })
          .where('id', '=', candidate.id)
          .where('status', 'in', ACTIVE)
          .where('owner', candidate.owner === null ? 'is' : '=', candidate.owner)
          .executeTakeFirst()
        if (result.numUpdatedRows === 0n) return false
        await transaction
          .updateTable('workflow_step_runs')
          .set({ status: 'pending' })
          .where('run_id', '=', candidate.id)
          .where('status', '=', 'running')
          .execute()
        return true
      })
      if (taken) claimed.push(candidate.id)
    }
    await this.#db
      .deleteFrom('workflow_owners')
      .where('heartbeat_at', '<', staleBefore)
      .where('id', '<>', owner)
      .execute()
    return claimed
  }

  async pruneRuns(
    policy: { readonly completedBefore: number; readonly keep: number },
    options?: StoreCallOptions,
  ): Promise<number> {
    options?.signal?.throwIfAborted()
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
    startedAt: toNumber(row.started_at),
    completedAt: toNumber(row.completed_at),
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
  }
}
