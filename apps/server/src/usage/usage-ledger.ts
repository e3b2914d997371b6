/**
 * Terminology
 * - usage row: one agent turn that called the model (or that its daily budget refused): when, for
 *   what (`source`), who it counts against (`creator`), the model that answered, tokens and cost.
 *   Rows of `agent_usage`, shared by every server on the database.
 * - source: what the turn ran for, `cron:<job>`, `workflow:<name>`, `background`, `chat` or
 *   `observe`; `lango cost --by job` sums by it.
 * - day: the turn's UTC calendar day (`YYYY-MM-DD`); daily budgets count what the day recorded.
 */
import { randomUUID } from 'node:crypto'
import { type ColumnType, type Kysely, type Migration, sql } from 'kysely'
import type { SpendLimit, TurnContext, UsageRecord } from '../agent/index.js'
import type { DatabaseFeature } from '../db/database.js'
import { runMigrations } from '../db/migrations.js'
import type { Logger } from '../logger.js'

/** A `bigint` column: pg returns BIGINT as a string, SQLite as a number. */
type Big = ColumnType<number | string, number, number>

/** `agent_usage`: one row per agent turn (see the terminology above). */
interface AgentUsageTable {
  id: string
  at: Big
  day: string
  purpose: string
  source: string
  run_id: string | null
  step_id: string | null
  creator: string | null
  session_key: string | null
  model: string
  input_tokens: Big
  output_tokens: Big
  /** US dollars in whole nano-dollars (every number column is an integer); null for an unpriced model. */
  cost_nano_usd: Big | null
  ok: number
  budget_exhausted: number
}

/** The tables the usage ledger owns. */
export interface UsageDatabase {
  agent_usage: AgentUsageTable
}

const USAGE_MIGRATION_TABLE = 'usage_migrations'
/** Nano-dollars in a dollar: costs are stored as whole nano-dollars. */
const NANO = 1e9

const usageMigrations: Readonly<Record<string, Migration>> = Object.freeze({
  '0001_create_agent_usage': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('agent_usage')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('at', 'bigint', (column) => column.notNull())
        .addColumn('day', 'text', (column) => column.notNull())
        .addColumn('purpose', 'text', (column) => column.notNull())
        .addColumn('source', 'text', (column) => column.notNull())
        .addColumn('run_id', 'text')
        .addColumn('step_id', 'text')
        .addColumn('creator', 'text')
        .addColumn('session_key', 'text')
        .addColumn('model', 'text', (column) => column.notNull())
        .addColumn('input_tokens', 'bigint', (column) => column.notNull())
        .addColumn('output_tokens', 'bigint', (column) => column.notNull())
        .addColumn('cost_nano_usd', 'bigint')
        .addColumn('ok', 'integer', (column) => column.notNull())
        .addColumn('budget_exhausted', 'integer', (column) => column.notNull())
        .execute()
      await db.schema
        .createIndex('agent_usage_day_idx')
        .on('agent_usage')
        .columns(['day', 'source'])
        .execute()
      await db.schema.createIndex('agent_usage_at_idx').on('agent_usage').column('at').execute()
      await db.schema.createIndex('agent_usage_run_idx').on('agent_usage').column('run_id').execute()
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await db.schema.dropTable('agent_usage').execute()
    },
  },
})

/** Creates or upgrades the usage ledger's table (SQLite and PostgreSQL); throws if a migration failed. */
async function migrateUsage<DB>(db: Kysely<DB>): Promise<void> {
  await runMigrations(db, 'usage ledger', USAGE_MIGRATION_TABLE, usageMigrations)
}

/** The usage ledger's share of the server's database. */
export const usageTables: DatabaseFeature<UsageDatabase> = {
  name: 'usage',
  migrationTable: USAGE_MIGRATION_TABLE,
  migrations: usageMigrations,
  migrate: migrateUsage,
}

/** A daily bound: tokens and dollars, either optional. */
interface DailyBounds {
  readonly maxTokens?: number
  readonly maxCostUsd?: number
}

/** What a cron job brings to its turns: its own daily budget and its creator. */
export interface JobBudget {
  readonly maxTokensPerDay: number | null
  readonly maxCostPerDay: number | null
  readonly createdBy: string | null
}

/** What one turn of a run spent ({@link UsageLedger.ofRuns}). */
interface RunSpend {
  readonly runId: string
  readonly stepId: string | null
  readonly model: string
  readonly inputTokens: number
  readonly outputTokens: number
  readonly costUsd: number | null
}

/** How {@link UsageLedger.summary} groups. */
export type CostGrouping = 'job' | 'model' | 'day'

/** One line of {@link UsageLedger.summary}. */
export interface CostLine {
  /** The source (`cron:<job>`, …), the model or the day, after `by`. */
  readonly key: string
  readonly turns: number
  readonly inputTokens: number
  readonly outputTokens: number
  /** US dollars, summed over the turns of priced models (0 when none had a price). */
  readonly costUsd: number
  /** Turns a budget stopped. */
  readonly budgetExhausted: number
}

/** Options of {@link UsageLedger}. */
export interface UsageLedgerOptions {
  /** The server-wide daily budget (`agent.budget.max_tokens_per_day`, `max_cost_per_day`). */
  readonly server?: DailyBounds
  /** The per-creator daily budget (`agent.budget.max_tokens_per_creator_per_day`, …). */
  readonly creator?: DailyBounds
  /** A cron job's budget and creator by name; undefined for a job that is gone. */
  readonly job?: (name: string) => Promise<JobBudget | undefined>
  readonly logger: Logger
  readonly now?: () => Date
}

/** The UTC day of `ms`: `2026-11-27`. */
function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10)
}

/** What a turn ran for (see the terminology above). */
function sourceOf(turn: {
  readonly purpose: string
  readonly sessionKey?: string
  readonly jobName?: string
  readonly workflowName?: string
}): string {
  if (turn.jobName !== undefined) return `cron:${turn.jobName}`
  if (turn.workflowName !== undefined) return `workflow:${turn.workflowName}`
  if (turn.purpose === 'chat') return 'chat'
  if (turn.purpose === 'observe') return 'observe'
  if (turn.sessionKey?.startsWith('bg:') === true) return 'background'
  return 'run'
}

const has = (bounds: DailyBounds | undefined): bounds is DailyBounds =>
  bounds !== undefined && (bounds.maxTokens !== undefined || bounds.maxCostUsd !== undefined)

/**
 * The usage ledger: every agent turn's tokens, answering model and cost, by source, creator and
 * day (`record`, the runner's `onUsage`); the daily budgets of a turn about to start
 * (`spendLimits`, the runner's option of that name); and the sums of `lango cost` (`summary`).
 * Rows are written in the background; a read first waits for this process's writes.
 */
export class UsageLedger {
  readonly #db: Kysely<UsageDatabase>
  readonly #options: UsageLedgerOptions
  readonly #now: () => Date
  readonly #pending = new Set<Promise<void>>()

  /** `db`: the host's handle, narrowed by the caller (Kysely's DB parameter is invariant); only `agent_usage` is queried. */
  constructor(db: Kysely<UsageDatabase>, options: UsageLedgerOptions) {
    this.#db = db
    this.#options = options
    this.#now = options.now ?? (() => new Date())
  }

  /** Writes one turn's row (in the background; its failure is logged). */
  record(record: UsageRecord): void {
    const write = this.#write(record).catch((error: unknown) =>
      this.#options.logger.warn('agent usage not recorded', { error, sessionKey: record.sessionKey }),
    )
    this.#pending.add(write)
    void write.finally(() => this.#pending.delete(write))
  }

  /**
   * Deletes the rows of turns older than `maxAgeMs` (the `agent.usage_max_age` window): the
   * retention duty calls it hourly, so the table is bounded by time. Returns how many went.
   */
  async prune(maxAgeMs: number): Promise<number> {
    const before = this.#now().getTime() - maxAgeMs
    const result = await this.#db.deleteFrom('agent_usage').where('at', '<', before).executeTakeFirst()
    return Number(result.numDeletedRows)
  }

  /** Resolves once every row this process was writing is written. */
  async flush(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending])
  }

  async #creatorOf(turn: {
    readonly purpose: string
    readonly sessionKey?: string
    readonly jobName?: string
  }): Promise<{ readonly creator: string | null; readonly job: JobBudget | undefined }> {
    if (turn.purpose === 'chat') return { creator: turn.sessionKey ?? null, job: undefined }
    if (turn.jobName === undefined || this.#options.job === undefined)
      return { creator: null, job: undefined }
    const job = await this.#options.job(turn.jobName)
    return { creator: job?.createdBy ?? null, job }
  }

  async #write(record: UsageRecord): Promise<void> {
    const at = this.#now().getTime()
    const { creator } = await this.#creatorOf(record)
    await this.#db
      .insertInto('agent_usage')
      .values({
        id: randomUUID(),
        at,
        day: utcDay(at),
        purpose: record.purpose,
        source: sourceOf(record),
        run_id:
          record.runId ?? (record.sessionKey?.startsWith('bg:') === true ? record.sessionKey.slice(3) : null),
        step_id: record.stepId ?? null,
        creator,
        session_key: record.sessionKey ?? null,
        model: record.answeredBy ?? record.model,
        input_tokens: record.usage.inputTokens,
        output_tokens: record.usage.outputTokens,
        cost_nano_usd: record.costUsd === undefined ? null : Math.round(record.costUsd * NANO),
        ok: record.ok ? 1 : 0,
        budget_exhausted: record.budgetExhausted === true ? 1 : 0,
      })
      .execute()
  }

  /**
   * The daily budgets `turn` counts against, with what today already spent on each: its cron job's
   * own, its creator's, the server's. Empty when none is set (no read then).
   */
  async spendLimits(turn: TurnContext): Promise<readonly SpendLimit[]> {
    const { server, creator: perCreator } = this.#options
    const needsJob = turn.jobName !== undefined && this.#options.job !== undefined
    if (!has(server) && !has(perCreator) && !needsJob) return []
    const { creator, job } = await this.#creatorOf(turn)
    const jobBounds: DailyBounds = {
      ...(job?.maxTokensPerDay == null ? {} : { maxTokens: job.maxTokensPerDay }),
      ...(job?.maxCostPerDay == null ? {} : { maxCostUsd: job.maxCostPerDay }),
    }
    const source = sourceOf(turn)
    const wantJob = has(jobBounds)
    const wantCreator = has(perCreator) && creator !== null
    if (!wantJob && !wantCreator && !has(server)) return []
    await this.flush()
    const tokens = sql<number>`${sql.ref('input_tokens')} + ${sql.ref('output_tokens')}`
    const cost = sql<number>`coalesce(${sql.ref('cost_nano_usd')}, 0)`
    const row = await this.#db
      .selectFrom('agent_usage')
      .select([
        sql<number | string | null>`sum(case when ${sql.ref('source')} = ${source} then ${tokens} end)`.as(
          'job_tokens',
        ),
        sql<number | string | null>`sum(case when ${sql.ref('source')} = ${source} then ${cost} end)`.as(
          'job_cost',
        ),
        sql<
          number | string | null
        >`sum(case when ${sql.ref('creator')} = ${creator ?? ''} then ${tokens} end)`.as('creator_tokens'),
        sql<
          number | string | null
        >`sum(case when ${sql.ref('creator')} = ${creator ?? ''} then ${cost} end)`.as('creator_cost'),
        sql<number | string | null>`sum(${tokens})`.as('all_tokens'),
        sql<number | string | null>`sum(${cost})`.as('all_cost'),
      ])
      .where('day', '=', utcDay(this.#now().getTime()))
      .executeTakeFirst()
    const num = (value: number | string | null | undefined) => Number(value ?? 0)
    const limits: SpendLimit[] = []
    if (wantJob)
      limits.push({
        scope: `cron job ${turn.jobName}`,
        setting: 'max_tokens_per_day / max_cost_per_day of the job',
        ...jobBounds,
        spentTokens: num(row?.job_tokens),
        spentCostUsd: num(row?.job_cost) / NANO,
      })
    if (wantCreator)
      limits.push({
        scope: `creator ${creator}`,
        setting: 'agent.budget.max_*_per_creator_per_day',
        ...perCreator,
        spentTokens: num(row?.creator_tokens),
        spentCostUsd: num(row?.creator_cost) / NANO,
      })
    if (has(server))
      limits.push({
        scope: 'the server',
        setting: 'agent.budget.max_*_per_day',
        ...server,
        spentTokens: num(row?.all_tokens),
        spentCostUsd: num(row?.all_cost) / NANO,
      })
    return limits
  }

  /**
   * What `runIds` spent (cron runs, background tasks, workflow runs): one entry per recorded turn,
   * oldest first, for the tools that show runs (`RunSpendLookup` of `@lango/tools`).
   */
  async ofRuns(runIds: readonly string[]): Promise<RunSpend[]> {
    if (runIds.length === 0) return []
    await this.flush()
    const rows = await this.#db
      .selectFrom('agent_usage')
      .select(['run_id', 'step_id', 'model', 'input_tokens', 'output_tokens', 'cost_nano_usd'])
      .where('run_id', 'in', [...new Set(runIds)].slice(0, 500))
      .orderBy('at')
      .execute()
    return rows.map((row) => ({
      runId: row.run_id as string,
      stepId: row.step_id,
      model: row.model,
      inputTokens: Number(row.input_tokens),
      outputTokens: Number(row.output_tokens),
      costUsd: row.cost_nano_usd === null ? null : Number(row.cost_nano_usd) / NANO,
    }))
  }

  /** Tokens and cost summed by source, model or day, for turns at or after `sinceMs`, largest cost first. */
  async summary(options: { readonly by: CostGrouping; readonly sinceMs?: number }): Promise<CostLine[]> {
    await this.flush()
    const column = options.by === 'job' ? 'source' : options.by
    const rows = await this.#db
      .selectFrom('agent_usage')
      .select([
        sql<string>`${sql.ref(column)}`.as('key'),
        sql<number | string>`count(*)`.as('turns'),
        sql<number | string>`sum(${sql.ref('input_tokens')})`.as('input_tokens'),
        sql<number | string>`sum(${sql.ref('output_tokens')})`.as('output_tokens'),
        sql<number | string | null>`sum(${sql.ref('cost_nano_usd')})`.as('cost_nano_usd'),
        sql<number | string>`sum(${sql.ref('budget_exhausted')})`.as('budget_exhausted'),
      ])
      .$if(options.sinceMs !== undefined, (query) => query.where('at', '>=', options.sinceMs as number))
      .groupBy(column)
      .execute()
    return rows
      .map((row) => ({
        key: row.key,
        turns: Number(row.turns),
        inputTokens: Number(row.input_tokens),
        outputTokens: Number(row.output_tokens),
        costUsd: Number(row.cost_nano_usd ?? 0) / NANO,
        budgetExhausted: Number(row.budget_exhausted),
      }))
      .sort(
        (a, b) =>
          (options.by === 'day' ? a.key.localeCompare(b.key) : 0) ||
          b.costUsd - a.costUsd ||
          b.inputTokens + b.outputTokens - (a.inputTokens + a.outputTokens) ||
          a.key.localeCompare(b.key),
      )
  }
}
