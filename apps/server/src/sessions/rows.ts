import type { ModelMessage } from 'ai'
import { type Kysely, sql, type Transaction } from 'kysely'
import { SessionError } from './errors.js'
import { decodeMessage } from './messages.js'
import type { SessionDatabase } from './schema.js'

/**
 * Reading and validating the session tables' rows, shared by the store, compaction and retention.
 * PostgreSQL returns bigint and count(*) as strings, SQLite as numbers: every number goes through
 * {@link toInteger}.
 */

/** What a session key looks like: `<kind>:<id>`, e.g. `telegram:-100123:42`, `http:abc`, `cron:backup`. */
const SESSION_KEY_PATTERN = /^[a-z][a-z0-9_-]{0,31}:[^\p{Cc}]{1,223}$/u

export type Executor = Kysely<SessionDatabase>

/** One unobserved message, decoded. */
export interface MessageRow {
  readonly seq: number
  readonly bytes: number
  readonly message: ModelMessage
}

export interface SessionHead {
  readonly id: string
  readonly observedThrough: number
}

/** One observation (generation 0) or reflection. */
export interface Entry {
  readonly fromSeq: number
  readonly throughSeq: number
  readonly generation: number
  readonly text: string
  readonly tokens: number
}

/** @throws SessionError `SESSION_INVALID_KEY` */
export function checkKey(sessionKey: unknown): asserts sessionKey is string {
  if (typeof sessionKey !== 'string' || !SESSION_KEY_PATTERN.test(sessionKey)) {
    throw new SessionError(
      'SESSION_INVALID_KEY',
      'a session key is <kind>:<id>: kind of a-z, 0-9, "_" or "-" (up to 32), id of 1 to 223 characters without control characters',
    )
  }
}

/** PostgreSQL returns bigint and count(*) as strings; SQLite as numbers. */
export function toInteger(value: unknown, sessionKey: string): number {
  const number =
    typeof value === 'number'
      ? value
      : typeof value === 'string' || typeof value === 'bigint'
        ? Number(value)
        : Number.NaN
  if (!Number.isSafeInteger(number)) {
    throw new SessionError('SESSION_STORE_CORRUPT', 'a stored number of a session is not an integer', {
      data: { sessionKey },
    })
  }
  return number
}

/** Reserves `count` sequence numbers and marks activity; undefined when the session has no row. */
export async function bumpSequence(
  transaction: Transaction<SessionDatabase>,
  sessionKey: string,
  count: number,
  now: number,
): Promise<{ lastSeq: number; observedThrough: number } | undefined> {
  const row = await transaction
    .updateTable('sessions')
    .set((eb) => ({ last_seq: eb('last_seq', '+', count), updated_at: now }))
    .where('key', '=', sessionKey)
    .returning(['last_seq', 'observed_through'])
    .executeTakeFirst()
  if (row === undefined) return undefined
  return {
    lastSeq: toInteger(row.last_seq, sessionKey),
    observedThrough: toInteger(row.observed_through, sessionKey),
  }
}

export async function readHead(db: Executor, sessionKey: string): Promise<SessionHead | undefined> {
  const row = await db
    .selectFrom('sessions')
    .select(['id', 'observed_through'])
    .where('key', '=', sessionKey)
    .executeTakeFirst()
  return row === undefined
    ? undefined
    : { id: row.id, observedThrough: toInteger(row.observed_through, sessionKey) }
}

export async function unobservedStats(
  db: Executor,
  sessionKey: string,
  observedThrough: number,
): Promise<{ count: number; bytes: number; tokens: number }> {
  const row = await db
    .selectFrom('session_messages')
    .select((eb) => [
      eb.fn.countAll().as('count'),
      eb.fn.sum<number | string | null>('bytes').as('bytes'),
      // Per message, as compaction counts: the sum of ceil(bytes / 4) (integer division on both databases).
      sql<number | string | null>`sum((${sql.ref('bytes')} + 3) / 4)`.as('tokens'),
    ])
    .where('session_key', '=', sessionKey)
    .where('seq', '>', observedThrough)
    .executeTakeFirstOrThrow()
  return {
    count: toInteger(row.count, sessionKey),
    bytes: toInteger(row.bytes ?? 0, sessionKey),
    tokens: toInteger(row.tokens ?? 0, sessionKey),
  }
}

export async function unobservedMessages(
  db: Executor,
  sessionKey: string,
  observedThrough: number,
): Promise<MessageRow[]> {
  const rows = await db
    .selectFrom('session_messages')
    .select(['seq', 'bytes', 'content'])
    .where('session_key', '=', sessionKey)
    .where('seq', '>', observedThrough)
    .orderBy('seq')
    .execute()
  return rows.map((row) => {
    const seq = toInteger(row.seq, sessionKey)
    return {
      seq,
      bytes: toInteger(row.bytes, sessionKey),
      message: decodeMessage(row.content, sessionKey, seq),
    }
  })
}

export async function readEntries(db: Executor, sessionKey: string): Promise<Entry[]> {
  const rows = await db
    .selectFrom('session_observations')
    .select(['from_seq', 'through_seq', 'generation', 'text', 'tokens'])
    .where('session_key', '=', sessionKey)
    .orderBy('through_seq')
    .execute()
  return rows.map((row) => ({
    fromSeq: toInteger(row.from_seq, sessionKey),
    throughSeq: toInteger(row.through_seq, sessionKey),
    generation: toInteger(row.generation, sessionKey),
    text: row.text,
    tokens: toInteger(row.tokens, sessionKey),
  }))
}
