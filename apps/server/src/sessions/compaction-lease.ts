import type { SessionContext } from './context.js'

/**
 * The compaction lease on a session row (`lease_owner`, `lease_until`): one instance compacts a
 * session at a time; another sees it `busy`. A lease left by a crashed instance expires after
 * `leaseMs`.
 */

/** Takes the lease of this incarnation of the session when it is free or expired. */
export async function claimLease(
  context: SessionContext,
  owner: string,
  sessionKey: string,
  sessionId: string,
): Promise<boolean> {
  const now = context.now()
  const result = await context.db
    .updateTable('sessions')
    .set({ lease_owner: owner, lease_until: now + context.limits.leaseMs })
    .where('key', '=', sessionKey)
    .where('id', '=', sessionId)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** Extends a lease `owner` holds; false when it was lost (expired and taken, or the session deleted). */
export async function renewLease(
  context: SessionContext,
  owner: string,
  sessionKey: string,
): Promise<boolean> {
  const result = await context.db
    .updateTable('sessions')
    .set({ lease_until: context.now() + context.limits.leaseMs })
    .where('key', '=', sessionKey)
    .where('lease_owner', '=', owner)
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** Gives a lease back; a failure is logged (the lease then simply expires after `leaseMs`). */
export async function releaseLease(
  context: SessionContext,
  owner: string,
  sessionKey: string,
): Promise<void> {
  try {
    await context.db
      .updateTable('sessions')
      .set({ lease_owner: null, lease_until: null })
      .where('key', '=', sessionKey)
      .where('lease_owner', '=', owner)
      .execute()
  } catch (error) {
    // The lease then simply expires after leaseMs.
    context.logger.warn('session lease release failed', { sessionKey, error })
  }
}
