/**
 * Terminology
 * - approval: one tool call waiting for a person's yes or no; a row of `approvals`, shared by every
 *   process on the database (`lango serve`, `lango mcp`, later several servers).
 * - origin: the process that asked (its owner id). A call that waits for the answer waits there.
 * - decided: anything but `pending`. A pending row past `expires_at` reads as `expired` (at
 *   `expires_at`) before any process records it so.
 * - call key: for an approval answered by making the same call again (MCP), a SHA-256 of the tool,
 *   session and parameters. The retry claims the answer (`claimed_at`), so it is used once, whichever
 *   process the retry reaches.
 */
import type { ToolCallOutcome } from '@lango/tools'
import type { Kysely, Migration } from 'kysely'
import * as v from 'valibot'
import type { DatabaseFeature } from '../db/database.js'
import { runMigrations } from '../db/migrations.js'

/** Where an approval stands. `expired` and `cancelled` deny, as no answer does. */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'cancelled'

/** Every status, in the order the API names them. */
export const APPROVAL_STATUSES: readonly ApprovalStatus[] = Object.freeze([
  'pending',
  'approved',
  'denied',
  'expired',
  'cancelled',
])

/** The end states a process records (`pending` is only ever inserted). */
export type DecidedStatus = Exclude<ApprovalStatus, 'pending'>

/**
 * `approvals`: one row per approval. Times are epoch milliseconds (`bigint`; PostgreSQL returns
 * strings, which the store parses). Text columns are bounded when written.
 */
interface ApprovalsTable {
  id: string
  tool: string
  /** The whole request, every command in it; secrets stay unresolved tokens (`{{secret:NAME}}`), never values. */
  summary: string
  safety: string
  session_key: string | null
  /** Owner id of the process that asked. */
  origin: string
  /** Set for approvals acted on by the same call made again (MCP); see the terminology above. */
  call_key: string | null
  status: string
  created_at: number
  expires_at: number
  decided_at: number | null
  /** Who decided: the deciding process's origin, or the caller's label; null for an expiry. */
  decided_by: string | null
  /** When the same call made again used the answer (call-key approvals only). */
  claimed_at: number | null
  /** What became of the call, as bounded JSON (see {@link encodeOutcome}). */
  outcome: string | null
}

/** The tables the approval store owns. Hosts need not declare them: the store narrows any handle. */
export interface ApprovalDatabase {
  approvals: ApprovalsTable
}

/** The migration table approvals always use (kysely: "ALWAYS use the same value"). */
export const APPROVAL_MIGRATION_TABLE = 'approval_migrations'

/** Migrations of the approval store, runnable on SQLite and PostgreSQL. */
const approvalMigrations: Readonly<Record<string, Migration>> = Object.freeze({
  '0001_create_approvals': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('approvals')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('tool', 'text', (column) => column.notNull())
        .addColumn('summary', 'text', (column) => column.notNull())
        .addColumn('safety', 'text', (column) => column.notNull())
        .addColumn('session_key', 'text')
        .addColumn('origin', 'text', (column) => column.notNull())
        .addColumn('call_key', 'text')
        .addColumn('status', 'text', (column) => column.notNull())
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .addColumn('expires_at', 'bigint', (column) => column.notNull())
        .addColumn('decided_at', 'bigint')
        .addColumn('decided_by', 'text')
        .addColumn('claimed_at', 'bigint')
        .addColumn('outcome', 'text')
        .execute()
      await db.schema
        .createIndex('approvals_status_expires_idx')
        .on('approvals')
        .columns(['status', 'expires_at'])
        .execute()
      await db.schema
        .createIndex('approvals_call_key_idx')
        .on('approvals')
        .columns(['call_key', 'created_at'])
        .execute()
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await db.schema.dropTable('approvals').execute()
    },
  },
})

/**
 * Creates or upgrades the approvals table with kysely's Migrator and the fixed migration table
 * `approval_migrations`; throws if a migration failed. Takes the host's handle as it is.
 * @example await migrateApprovals(db)
 */
export async function migrateApprovals<DB>(db: Kysely<DB>): Promise<void> {
  await runMigrations(db, 'approvals', APPROVAL_MIGRATION_TABLE, approvalMigrations)
}

/** The approval store's share of the server's database (its table and migrations). */
export const approvalTables: DatabaseFeature<ApprovalDatabase> = {
  name: 'approvals',
  migrationTable: APPROVAL_MIGRATION_TABLE,
  migrations: approvalMigrations,
  migrate: migrateApprovals,
}

/** Longest stored outcome JSON; a longer one keeps a preview (see {@link encodeOutcome}). */
export const MAX_OUTCOME_CHARS = 16_000
/** The preview of an outcome too long to keep whole. */
const OUTCOME_PREVIEW_CHARS = 4_000
const MAX_LABEL_CHARS = 200

/** A pending or decided approval as stored, with times as numbers. */
export interface StoredApproval {
  readonly id: string
  readonly tool: string
  readonly summary: string
  readonly safety: string
  readonly sessionKey: string | null
  readonly origin: string
  readonly callKey: string | null
  /** As recorded: a `pending` row may be past its `expiresAt` (see {@link effectiveStatus}). */
  readonly status: ApprovalStatus
  readonly createdAt: number
  readonly expiresAt: number
  readonly decidedAt: number | null
  readonly decidedBy: string | null
  readonly claimedAt: number | null
  readonly outcome: ToolCallOutcome | null
}

/** What a new approval is inserted with: a pending row before anyone decides it. */
export type NewApproval = Pick<
  StoredApproval,
  'id' | 'tool' | 'summary' | 'safety' | 'sessionKey' | 'origin' | 'callKey' | 'createdAt' | 'expiresAt'
>

/** The status as of `now`: a pending row past its expiry reads as `expired`. */
export function effectiveStatus(approval: StoredApproval, now: number): ApprovalStatus {
  return approval.status === 'pending' && approval.expiresAt <= now ? 'expired' : approval.status
}

/** When it was decided: a lazily expired row at its `expiresAt`. */
export function decidedAtOf(approval: StoredApproval, now: number): number | null {
  if (approval.decidedAt !== null) return approval.decidedAt
  return effectiveStatus(approval, now) === 'expired' ? approval.expiresAt : null
}

/** PostgreSQL returns bigint as string; SQLite as number. */
const integer = v.pipe(
  v.union([v.number(), v.string(), v.bigint()]),
  v.transform((value) => Number(value)),
  v.number(),
  v.integer(),
)
const nullableInteger = v.nullable(integer)

const rowSchema = v.object({
  id: v.string(),
  tool: v.string(),
  summary: v.string(),
  safety: v.string(),
  session_key: v.nullable(v.string()),
  origin: v.string(),
  call_key: v.nullable(v.string()),
  status: v.picklist(APPROVAL_STATUSES),
  created_at: integer,
  expires_at: integer,
  decided_at: nullableInteger,
  decided_by: v.nullable(v.string()),
  claimed_at: nullableInteger,
  outcome: v.nullable(v.string()),
})

const outcomeSchema = v.union([
  v.object({ ok: v.literal(true), result: v.unknown() }),
  v.looseObject({
    ok: v.literal(false),
    error: v.looseObject({ code: v.string(), message: v.string() }),
  }),
])

/**
 * The outcome as stored: its JSON when it fits {@link MAX_OUTCOME_CHARS}; else a success keeps
 * `{ truncated: true, preview }` (the JSON's first 4000 characters) as its result and a failure
 * its code and the start of its message. Results are redacted at their source (exec replaces
 * secret values by `[secret:NAME]`), so nothing here resolves or reveals a secret.
 */
function encodeOutcome(outcome: ToolCallOutcome): string {
  const json = JSON.stringify(outcome) ?? 'null'
  if (json.length <= MAX_OUTCOME_CHARS) return json
  if (outcome.ok) {
    const full = JSON.stringify(outcome.result) ?? 'null'
    return JSON.stringify({
      ok: true,
      result: { truncated: true, preview: full.slice(0, OUTCOME_PREVIEW_CHARS) },
    })
  }
  return JSON.stringify({
    ok: false,
    error: {
      code: outcome.error.code,
      message: outcome.error.message.slice(0, OUTCOME_PREVIEW_CHARS),
      ...(outcome.error.reason === undefined ? {} : { reason: outcome.error.reason.slice(0, 200) }),
    },
  })
}

/** The stored outcome, or null when the column is empty or not an outcome. */
function decodeOutcome(text: string | null): ToolCallOutcome | null {
  if (text === null) return null
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return null
  }
  const parsed = v.safeParse(outcomeSchema, value)
  return parsed.success ? (parsed.output as ToolCallOutcome) : null
}

function toStored(row: unknown): StoredApproval {
  const parsed = v.parse(rowSchema, row)
  return {
    id: parsed.id,
    tool: parsed.tool,
    summary: parsed.summary,
    safety: parsed.safety,
    sessionKey: parsed.session_key,
    origin: parsed.origin,
    callKey: parsed.call_key,
    status: parsed.status,
    createdAt: parsed.created_at,
    expiresAt: parsed.expires_at,
    decidedAt: parsed.decided_at,
    decidedBy: parsed.decided_by,
    claimedAt: parsed.claimed_at,
    outcome: decodeOutcome(parsed.outcome),
  }
}

function bounded(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`
}

/** Where a page of a list starts: after the approval created at `createdAt` with this `id`. */
export interface ApprovalCursor {
  readonly createdAt: number
  readonly id: string
}

/** Options every store call takes. */
export interface StoreCallOptions {
  readonly signal?: AbortSignal
}

/**
 * The `approvals` table over the server's one Kysely handle, in portable Kysely (SQLite and
 * PostgreSQL). Every change of state is one conditional `UPDATE`, so two processes answering the
 * same approval, or two retries claiming the same answer, cannot both win.
 */
export class ApprovalStore<DB = ApprovalDatabase> {
  readonly #db: Kysely<ApprovalDatabase>

  /** Takes the host's handle as it is (any tables besides `approvals`). */
  constructor(db: Kysely<DB>) {
    // Kysely's DB parameter is invariant: narrow the host's handle once; only `approvals` is queried.
    this.#db = db as unknown as Kysely<ApprovalDatabase>
  }

  async insert(approval: NewApproval, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    await this.#db
      .insertInto('approvals')
      .values({
        id: approval.id,
        tool: bounded(approval.tool, MAX_LABEL_CHARS),
        // Never cut: the approver must see every command (SECURITY.md SEC-9); Approvals bounds it.
        summary: approval.summary,
        safety: bounded(approval.safety, MAX_LABEL_CHARS),
        session_key: approval.sessionKey === null ? null : bounded(approval.sessionKey, MAX_LABEL_CHARS),
        origin: bounded(approval.origin, MAX_LABEL_CHARS),
        call_key: approval.callKey,
        status: 'pending',
        created_at: approval.createdAt,
        expires_at: approval.expiresAt,
        decided_at: null,
        decided_by: null,
        claimed_at: null,
        outcome: null,
      })
      .execute()
  }

  async get(id: string, options?: StoreCallOptions): Promise<StoredApproval | undefined> {
    options?.signal?.throwIfAborted()
    const row = await this.#db.selectFrom('approvals').selectAll().where('id', '=', id).executeTakeFirst()
    return row === undefined ? undefined : toStored(row)
  }

  /** The rows of these ids (missing ones are absent from the map); for waiters' polls. */
  async getMany(ids: readonly string[], options?: StoreCallOptions): Promise<Map<string, StoredApproval>> {
    options?.signal?.throwIfAborted()
    if (ids.length === 0) return new Map()
    const rows = await this.#db.selectFrom('approvals').selectAll().where('id', 'in', ids).execute()
    return new Map(rows.map((row) => [row.id, toStored(row)]))
  }

  /**
   * Pending approvals (not past expiry) first, newest first, then decided ones newest first, at most
   * `limit` in all; `status` filters by the status as of `now` (`decided`: anything but pending).
   * `before` (with a `status` only, where one order holds) keeps the rows older than that one, by
   * creation then id: the next page of a list.
   */
  async list(
    input: {
      readonly now: number
      readonly status?: ApprovalStatus | 'decided'
      readonly limit: number
      readonly before?: ApprovalCursor
    },
    options?: StoreCallOptions,
  ): Promise<StoredApproval[]> {
    options?.signal?.throwIfAborted()
    const { now, status, before } = input
    const limit = Math.max(1, Math.floor(input.limit))
    const pending =
      status === undefined || status === 'pending'
        ? await this.#db
            .selectFrom('approvals')
            .selectAll()
            .where('status', '=', 'pending')
            .where('expires_at', '>', now)
            .where((eb) =>
              before === undefined
                ? eb.lit(true)
                : eb.or([
                    eb('created_at', '<', before.createdAt),
                    eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)]),
                  ]),
            )
            .orderBy('created_at', 'desc')
            .orderBy('id', 'desc')
            .limit(limit)
            .execute()
        : []
    const room = limit - pending.length
    const decided =
      status === 'pending' || room <= 0
        ? []
        : await this.#db
            .selectFrom('approvals')
            .selectAll()
            .where((eb) => {
              const lapsed = eb.and([eb('status', '=', 'pending'), eb('expires_at', '<=', now)])
              if (status === undefined || status === 'decided')
                return eb.or([eb('status', '!=', 'pending'), lapsed])
              if (status === 'expired') return eb.or([eb('status', '=', 'expired'), lapsed])
              return eb('status', '=', status)
            })
            .where((eb) =>
              before === undefined
                ? eb.lit(true)
                : eb.or([
                    eb('created_at', '<', before.createdAt),
                    eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)]),
                  ]),
            )
            .orderBy('created_at', 'desc')
            .orderBy('id', 'desc')
            .limit(room)
            .execute()
    return [...pending, ...decided].map(toStored)
  }

  /** Pending approvals not past their expiry, from every process. */
  /** Approvals pending at `now`; with `sessionKey`, only those asked from that session (`null`: none). */
  async countPending(
    now: number,
    options?: StoreCallOptions & {
      /** Only those of this session (null: without one). */
      readonly sessionKey?: string | null
      /** Only those of sessions of this channel: its key is the channel, or starts `<channel>:`. */
      readonly channel?: string
    },
  ): Promise<number> {
    options?.signal?.throwIfAborted()
    let query = this.#db
      .selectFrom('approvals')
      .select((eb) => eb.fn.countAll().as('count'))
      .where('status', '=', 'pending')
      .where('expires_at', '>', now)
    if (options?.sessionKey !== undefined)
      query =
        options.sessionKey === null
          ? query.where('session_key', 'is', null)
          : query.where('session_key', '=', options.sessionKey)
    const channel = options?.channel
    if (channel !== undefined) {
      // substr, not LIKE: a channel name may hold `_`, which LIKE reads as a wildcard.
      const prefix = `${channel}:`
      query = query.where((eb) =>
        eb.or([
          eb('session_key', '=', channel),
          eb(eb.fn('substr', ['session_key', eb.lit(1), eb.lit(prefix.length)]), '=', prefix),
        ]),
      )
    }
    const row = await query.executeTakeFirstOrThrow()
    return Number(row.count)
  }

  /**
   * Records an end state of a pending approval; false when it is no longer pending (decided by
   * someone else first). `approved` and `denied` also need it not past expiry: a late answer does
   * not revive an expired approval.
   */
  async decide(
    id: string,
    input: {
      readonly status: DecidedStatus
      readonly now: number
      readonly decidedBy: string | null
      /** For `expired`: when it expired (default `now`). */
      readonly decidedAt?: number
    },
    options?: StoreCallOptions,
  ): Promise<boolean> {
    options?.signal?.throwIfAborted()
    let update = this.#db
      .updateTable('approvals')
      .set({
        status: input.status,
        decided_at: input.decidedAt ?? input.now,
        decided_by: input.decidedBy === null ? null : bounded(input.decidedBy, MAX_LABEL_CHARS),
      })
      .where('id', '=', id)
      .where('status', '=', 'pending')
    if (input.status === 'approved' || input.status === 'denied')
      update = update.where('expires_at', '>', input.now)
    const result = await update.executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /** Records the outcome of the call (bounded; see {@link encodeOutcome}); false for an unknown id. */
  async recordOutcome(id: string, outcome: ToolCallOutcome, options?: StoreCallOptions): Promise<boolean> {
    options?.signal?.throwIfAborted()
    const result = await this.#db
      .updateTable('approvals')
      .set({ outcome: encodeOutcome(outcome) })
      .where('id', '=', id)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /** The newest approval for this call whose answer nobody has used yet. */
  async newestUnclaimed(callKey: string, options?: StoreCallOptions): Promise<StoredApproval | undefined> {
    options?.signal?.throwIfAborted()
    const row = await this.#db
      .selectFrom('approvals')
      .selectAll()
      .where('call_key', '=', callKey)
      .where('claimed_at', 'is', null)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst()
    return row === undefined ? undefined : toStored(row)
  }

  /**
   * Uses a decided approval's answer once: true for the one claim that wins. A lapsed pending row
   * is recorded as expired (at its expiry) in the same statement.
   */
  async claim(id: string, now: number, options?: StoreCallOptions): Promise<boolean> {
    options?.signal?.throwIfAborted()
    const result = await this.#db
      .updateTable('approvals')
      .set((eb) => ({
        claimed_at: now,
        status: eb.case().when('status', '=', 'pending').then('expired').else(eb.ref('status')).end(),
        decided_at: eb
          .case()
          .when('status', '=', 'pending')
          .then(eb.ref('expires_at'))
          .else(eb.ref('decided_at'))
          .end(),
      }))
      .where('id', '=', id)
      .where('claimed_at', 'is', null)
      .where((eb) => eb.or([eb('status', '!=', 'pending'), eb('expires_at', '<=', now)]))
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /**
   * Cancels the pending approvals these processes were waiting on (they died: nobody would run the
   * call). Call-key approvals stay: the same call made again, in any process, uses their answer.
   */
  async cancelWaiting(
    origins: readonly string[],
    input: { readonly now: number; readonly decidedBy: string },
    options?: StoreCallOptions,
  ): Promise<number> {
    options?.signal?.throwIfAborted()
    if (origins.length === 0) return 0
    const result = await this.#db
      .updateTable('approvals')
      .set({
        status: 'cancelled',
        decided_at: input.now,
        decided_by: bounded(input.decidedBy, MAX_LABEL_CHARS),
      })
      .where('origin', 'in', origins)
      .where('call_key', 'is', null)
      .where('status', '=', 'pending')
      .executeTakeFirst()
    return Number(result.numUpdatedRows)
  }

  /**
   * Records lapsed pending approvals as expired, then deletes decided ones decided before
   * `olderThan`, and beyond the newest `keepDecided`. Pending approvals are never deleted.
   * Returns how many rows were deleted.
   */
  async prune(
    input: { readonly now: number; readonly olderThan: number; readonly keepDecided: number },
    options?: StoreCallOptions,
  ): Promise<number> {
    options?.signal?.throwIfAborted()
    await this.#db
      .updateTable('approvals')
      .set((eb) => ({ status: 'expired', decided_at: eb.ref('expires_at') }))
      .where('status', '=', 'pending')
      .where('expires_at', '<=', input.now)
      .execute()
    const byAge = await this.#db
      .deleteFrom('approvals')
      .where('status', '!=', 'pending')
      .where('decided_at', '<', input.olderThan)
      .executeTakeFirst()
    const keep = Math.max(0, Math.floor(input.keepDecided))
    const byCount = await this.#db
      .deleteFrom('approvals')
      .where('status', '!=', 'pending')
      .where('id', 'not in', (eb) =>
        eb
          .selectFrom('approvals')
          .select('id')
          .where('status', '!=', 'pending')
          .orderBy('decided_at', 'desc')
          .orderBy('id', 'desc')
          .limit(keep),
      )
      .executeTakeFirst()
    return Number(byAge.numDeletedRows) + Number(byCount.numDeletedRows)
  }
}
