import type { SessionContext } from './context.js'
import { type Entry, readEntries } from './rows.js'

/**
 * The writes of compaction: each commits one observation or reflection atomically, guarded so that
 * a second compaction of the same messages, or any compaction of a deleted or re-created session,
 * stores nothing.
 */

/** Thrown inside a transaction to roll it back when a guard finds another writer was first. */
class Conflict extends Error {}

/**
 * The first phase: moves `observed_through` from `expected` to the entry's end and stores the
 * entry (unless its text is empty), in one transaction with nothing else. The compare-and-set on `(key, id,
 * observed_through)` refuses a second compaction of the same messages, and any compaction of a
 * deleted or re-created session.
 */
export async function commitObservation(
  context: SessionContext,
  sessionKey: string,
  sessionId: string,
  expected: number,
  entry: Entry,
): Promise<boolean> {
  const now = context.now()
  return context.db.transaction().execute(async (transaction) => {
    const moved = await transaction
      .updateTable('sessions')
      .set({ observed_through: entry.throughSeq })
      .where('key', '=', sessionKey)
      .where('id', '=', sessionId)
      .where('observed_through', '=', expected)
      .executeTakeFirst()
    if (moved.numUpdatedRows === 0n) return false
    // Nothing worth keeping: the messages count as observed, with no text to show for them.
    if (entry.text === '') return true
    await transaction
      .insertInto('session_observations')
      .values({
        session_key: sessionKey,
        from_seq: entry.fromSeq,
        through_seq: entry.throughSeq,
        generation: entry.generation,
        text: entry.text,
        tokens: entry.tokens,
        created_at: now,
      })
      .execute()
    return true
  })
}

/** Replaces `taken` by `reflection` atomically; false when the session changed or another run reflected first. */
export async function commitReflection(
  context: SessionContext,
  sessionKey: string,
  sessionId: string,
  taken: readonly Entry[],
  reflection: Entry,
): Promise<boolean> {
  const now = context.now()
  try {
    await context.db.transaction().execute(async (transaction) => {
      // Locks the session row (PostgreSQL) and proves it is the same incarnation.
      const same = await transaction
        .updateTable('sessions')
        .set((eb) => ({ observed_through: eb.ref('observed_through') }))
        .where('key', '=', sessionKey)
        .where('id', '=', sessionId)
        .executeTakeFirst()
      if (same.numUpdatedRows === 0n) throw new Conflict()
      const removed = await transaction
        .deleteFrom('session_observations')
        .where('session_key', '=', sessionKey)
        .where(
          'through_seq',
          'in',
          taken.map((entry) => entry.throughSeq),
        )
        .executeTakeFirst()
      if (removed.numDeletedRows !== BigInt(taken.length)) throw new Conflict()
      await transaction
        .insertInto('session_observations')
        .values({
          session_key: sessionKey,
          from_seq: reflection.fromSeq,
          through_seq: reflection.throughSeq,
          generation: reflection.generation,
          text: reflection.text,
          tokens: reflection.tokens,
          created_at: now,
        })
        .execute()
    })
    return true
  } catch (error) {
    if (error instanceof Conflict) return false
    throw error
  }
}

/** Drops the oldest observations beyond `maxObservations` (only while reflection keeps failing). */
export async function capObservations(context: SessionContext, sessionKey: string): Promise<void> {
  const entries = await readEntries(context.db, sessionKey)
  const excess = entries.length - context.limits.maxObservations
  if (excess <= 0) return
  const through = (entries[excess - 1] as Entry).throughSeq
  await context.db
    .deleteFrom('session_observations')
    .where('session_key', '=', sessionKey)
    .where('through_seq', '<=', through)
    .execute()
  context.logger.warn('session observations dropped to stay within bounds', { sessionKey, count: excess })
  context.emit({ type: 'observations:dropped', sessionKey, count: excess })
}
