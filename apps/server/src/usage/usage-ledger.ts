/**
 * Terminology
 * - usage row: one agent turn that called the model (or that its daily budget refused): when, for
 *   what (`source`, and `job_id` for a cron job's turn), who it counts against (`creator`), the
 *   model that answered, tokens and cost. Rows of `agent_usage`, shared by every server on the
 *   database.
 * - source: what the turn ran for, `cron:<job>`, `workflow:<name>`, `background`, `chat` or
 *   `observe`; `lango cost --by job` sums by it (the job's name then, for people).
 * - creator: who a turn counts against: a chat's session key; the creator of the cron job, or whoever
 *   submitted the background task or started the workflow run (the request's `creator`).
 * - day: the turn's UTC calendar day (`YYYY-MM-DD`); daily budgets count what the day recorded. A
 *   cron job's daily spend is counted by its id, so renaming the job does not reset it.
 */
import { randomUUID } from 'node:crypto'
import { type ColumnType, type Insertable, type Kysely, type Migration, sql } from 'kysely'
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
  /** The cron job's id (migration 0002); null for other turns and for rows written before it. */
  job_id: ColumnType<string | null, string | null | undefined, string | null>
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

/** A row of `agent_usage` as it is inserted. */
type AgentUsageRow = Insertable<AgentUsageTable> & {
  readonly id: string
  readonly day: string
  readonly source: string
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cost_nano_usd: number | null
  readonly job_id: string | null
  readonly creator: string | null
}

/** Rows inserted by one statement (bounded by PostgreSQL's and SQLite's parameter limits). */
const INSERT_CHUNK = 200

/** Most rows kept in memory while the ledger cannot be written (a turn's row is some 300 bytes). */
const MAX_UNWRITTEN = 10_000

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
  // A job's daily spend by its id, which a rename keeps; older rows have none and count by name.
  '0002_add_job_id': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('agent_usage').addColumn('job_id', 'text').execute()
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('agent_usage').dropColumn('job_id').execute()
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

/** What a cron job brings to its turns: its own daily budget. */
interface JobBudget {
  readonly maxTokensPerDay: number | null
  readonly maxCostPerDay: number | null
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
  /**
   * A cron job's budget by its id (by its name for a turn whose request named no id); undefined for
   * a job that is gone.
   */
  readonly job?: (idOrName: string) => Promise<JobBudget | undefined>
  readonly logger: Logger
  readonly now?: () => Date
}

/** The UTC day of `ms`: `2026-11-27`. */
function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10)
}

/** Who a turn counts against (see the terminology above); null for none. */
function creatorOf(turn: {
  readonly purpose: string
  readonly sessionKey?: string
  readonly creator?: string
}): string | null {
  if (turn.creator !== undefined) return turn.creator
  return turn.purpose === 'chat' ? (turn.sessionKey ?? null) : null
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
 * Rows are written in the background; a read first waits for the writes this process had pending
 * when it was called (not for those added while it waits, which under steady load never end).
 */
export class UsageLedger {
  readonly #db: Kysely<UsageDatabase>
  readonly #options: UsageLedgerOptions
  readonly #now: () => Date
  readonly #pending = new Set<Promise<void>>()
  /**
   * Rows whose write failed (a full disk, a database away), oldest first, at most
   * {@link MAX_UNWRITTEN}: written again before the next row, and counted by {@link spendLimits}
   * meanwhile, so a ledger that cannot be written does not lift the daily budgets.
   */
  #unwritten: AgentUsageRow[] = []
  /** Rows dropped from a full backlog since the last warning said so. */
  #dropped = 0

  /** `db`: the host's handle, narrowed by the caller (Kysely's DB parameter is invariant); only `agent_usage` is queried. */
  constructor(db: Kysely<UsageDatabase>, options: UsageLedgerOptions) {
    this.#db = db
    this.#options = options
    this.#now = options.now ?? (() => new Date())
  }

  /** Resolves once the rows this process was writing when it was called are written (not later ones). */
  async #written(): Promise<void> {
    await Promise.all([...this.#pending])
  }

  /**
   * Writes one turn's row in the background, with the rows an earlier failure left unwritten. A
   * row that cannot be written is logged and kept in memory (see {@link spendLimits}) until a write
   * gets through. Rows are inserted with `on conflict (id) do nothing`: one sent again after a write
   * whose answer was lost (a connection cut after COMMIT) is not a failure, nor a second row.
   */
  record(record: UsageRecord): void {
    const row = this.#row(record)
    // The backlog stays in #unwritten (counted by spendLimits) until this write has stored it.
    const backlog = [...this.#unwritten]
    const write = this.#insert([...backlog, row]).then(
      () => this.#forget(backlog),
      (error: unknown) => {
        this.#keep(row)
        this.#options.logger.warn(
          'agent usage not recorded: kept in memory, counted against the daily budgets, written again with the next turn',
          { error, sessionKey: record.sessionKey, unwritten: this.#unwritten.length },
        )
      },
    )
    this.#pending.add(write)
    void write.finally(() => this.#pending.delete(write))
  }

  /** Inserts `rows`, a chunk a statement; a row already stored is skipped. */
  async #insert(rows: readonly AgentUsageRow[]): Promise<void> {
    for (let start = 0; start < rows.length; start += INSERT_CHUNK)
      await this.#db
        .insertInto('agent_usage')
        .values(rows.slice(start, start + INSERT_CHUNK))
        .onConflict((conflict) => conflict.column('id').doNothing())
        .execute()
  }

  /** Takes the rows a write stored out of the backlog. */
  #forget(written: readonly AgentUsageRow[]): void {
    if (written.length === 0) return
    const stored = new Set(written)
    this.#unwritten = this.#unwritten.filter((row) => !stored.has(row))
    if (this.#unwritten.length === 0) this.#dropped = 0
  }

  /** Adds a row no write could store to the backlog, oldest first, dropping the oldest beyond the bound. */
  #keep(row: AgentUsageRow): void {
    this.#unwritten.push(row)
    const over = this.#unwritten.length - MAX_UNWRITTEN
    if (over <= 0) return
    this.#unwritten.splice(0, over)
    this.#dropped += over
    this.#options.logger.error('agent usage lost: the ledger could not be written and its backlog is full', {
      dropped: this.#dropped,
      kept: MAX_UNWRITTEN,
    })
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

  /**
   * Resolves once every row this process was writing is written, those added meanwhile included:
   * for shutdown. Reads wait only for the rows pending when they were called.
   */
  async flush(): Promise<void> {
    while (this.#pending.size > 0) await this.#written()
    if (this.#unwritten.length === 0) return
    // A last try for the rows an outage left in memory; what still fails is said, not dropped quietly.
    const backlog = [...this.#unwritten]
    await this.#insert(backlog).then(
      () => this.#forget(backlog),
      (error: unknown) =>
        this.#options.logger.error('agent usage lost at stop: the ledger could not be written', {
          error,
          rows: this.#unwritten.length,
        }),
    )
  }

  /** The `agent_usage` row of `record`, stamped now. */
  #row(record: UsageRecord): AgentUsageRow {
    const at = this.#now().getTime()
    return {
      id: randomUUID(),
      at,
      day: utcDay(at),
      purpose: record.purpose,
      source: sourceOf(record),
      run_id:
        record.runId ?? (record.sessionKey?.startsWith('bg:') === true ? record.sessionKey.slice(3) : null),
      step_id: record.stepId ?? null,
      job_id: record.jobId ?? null,
      creator: creatorOf(record),
      session_key: record.sessionKey ?? null,
      model: record.answeredBy ?? record.model,
      input_tokens: record.usage.inputTokens,
      output_tokens: record.usage.outputTokens,
      cost_nano_usd: record.costUsd === undefined ? null : Math.round(record.costUsd * NANO),
      ok: record.ok ? 1 : 0,
      budget_exhausted: record.budgetExhausted === true ? 1 : 0,
    }
  }

  /**
   * The daily budgets `turn` counts against, with what today already spent on each: its cron job's
   * own, its creator's, the server's. Empty when none is set (no read then).
   */
  async spendLimits(turn: TurnContext): Promise<readonly SpendLimit[]> {
    // Only this process's rows pending now: under steady load new ones never stop coming.
    const written = this.#written()
    const { server, creator: perCreator } = this.#options
    const jobKey = turn.jobId ?? turn.jobName
    const lookup = this.#options.job
    const needsJob = jobKey !== undefined && lookup !== undefined
    if (!has(server) && !has(perCreator) && !needsJob) return []
    const creator = creatorOf(turn)
    const job = needsJob ? await lookup(jobKey) : undefined
    const jobBounds: DailyBounds = {
      ...(job?.maxTokensPerDay == null ? {} : { maxTokens: job.maxTokensPerDay }),
      ...(job?.maxCostPerDay == null ? {} : { maxCostUsd: job.maxCostPerDay }),
    }
    const source = sourceOf(turn)
    const wantJob = has(jobBounds)
    const wantCreator = has(perCreator) && creator !== null
    if (!wantJob && !wantCreator && !has(server)) return []
    await written
    // Taken before the sum is read: a backlog row written meanwhile may count twice (a budget errs
    // toward stopping), never not at all.
    const unwritten = [...this.#unwritten]
    const tokens = sql<number>`${sql.ref('input_tokens')} + ${sql.ref('output_tokens')}`
    const cost = sql<number>`coalesce(${sql.ref('cost_nano_usd')}, 0)`
    // The job's rows by its id; rows written before ids were recorded (job_id null) by its name.
    const ofJob =
      turn.jobId === undefined
        ? sql<boolean>`${sql.ref('source')} = ${source}`
        : sql<boolean>`(${sql.ref('job_id')} = ${turn.jobId} or (${sql.ref('job_id')} is null and ${sql.ref('source')} = ${source}))`
    const row = await this.#db
      .selectFrom('agent_usage')
      .select([
        sql<number | string | null>`sum(case when ${ofJob} then ${tokens} end)`.as('job_tokens'),
        sql<number | string | null>`sum(case when ${ofJob} then ${cost} end)`.as('job_cost'),
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
    // What the database has not got yet counts all the same (a full disk must not lift a budget).
    const today = utcDay(this.#now().getTime())
    const backlog = {
      job_tokens: 0,
      job_cost: 0,
      creator_tokens: 0,
      creator_cost: 0,
      all_tokens: 0,
      all_cost: 0,
    }
    for (const kept of unwritten) {
      if (kept.day !== today) continue
      const spent = kept.input_tokens + kept.output_tokens
      const paid = kept.cost_nano_usd ?? 0
      const jobRow =
        turn.jobId === undefined
          ? kept.source === source
          : kept.job_id === turn.jobId || (kept.job_id === null && kept.source === source)
      if (jobRow) {
        backlog.job_tokens += spent
        backlog.job_cost += paid
      }
      if (creator !== null && kept.creator === creator) {
        backlog.creator_tokens += spent
        backlog.creator_cost += paid
      }
      backlog.all_tokens += spent
      backlog.all_cost += paid
    }
    const num = (value: number | string | null | undefined) => Number(value ?? 0)
    const sum = (key: keyof typeof backlog) => num(row?.[key]) + backlog[key]
    const limits: SpendLimit[] = []
    if (wantJob)
      limits.push({
        scope: `cron job ${turn.jobName}`,
        setting: 'max_tokens_per_day / max_cost_per_day of the job',
        ...jobBounds,
        spentTokens: sum('job_tokens'),
        spentCostUsd: sum('job_cost') / NANO,
      })
    if (wantCreator)
      limits.push({
        scope: `creator ${creator}`,
        setting: 'agent.budget.max_*_per_creator_per_day',
        ...perCreator,
        spentTokens: sum('creator_tokens'),
        spentCostUsd: sum('creator_cost') / NANO,
      })
    if (has(server))
      limits.push({
        scope: 'the server',
        setting: 'agent.budget.max_*_per_day',
        ...server,
        spentTokens: sum('all_tokens'),
        spentCostUsd: sum('all_cost') / NANO,
      })
    return limits
  }

  /**
   * What `runIds` spent (cron runs, background tasks, workflow runs): one entry per recorded turn,
   * oldest first, for the tools that show runs (`RunSpendLookup` of `@lango/tools`).
   */
  async ofRuns(runIds: readonly string[]): Promise<RunSpend[]> {
    if (runIds.length === 0) return []
    await this.#written()
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
    await this.#written()
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
