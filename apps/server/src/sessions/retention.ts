import type { SessionContext } from './context.js'
import { toInteger } from './rows.js'

/** Keys per retention or eviction batch. */
const SWEEP_CHUNK = 200
/** Batches one sweep works through before yielding to the next interval. */
const SWEEP_MAX_BATCHES = 50

/** What one {@link SessionRetention.sweep} deleted. */
export interface SweepResult {
  /** Sessions idle longer than `retentionMs`. */
  readonly expired: number
  /** Least recently used sessions beyond `maxSessions`. */
  readonly evicted: number
}

/**
 * Keeps the number and age of sessions bounded: sessions idle longer than `retentionMs` expire, and
 * the least recently used beyond `maxSessions` are evicted, by a periodic sweep (`start()`) and
 * after an append creates a session. Every delete re-checks the session's activity, so a session
 * appended to meanwhile is kept.
 */
export class SessionRetention {
  readonly #context: SessionContext
  /** Told the keys of sessions deleted (inside the deleting transaction). */
  readonly #onDeleted: (sessionKey: string) => void
  #sweepTimer: ReturnType<typeof setInterval> | undefined
  #sweeping = false
  #started = false

  constructor(context: SessionContext, options: { readonly onDeleted: (sessionKey: string) => void }) {
    this.#context = context
    this.#onDeleted = options.onDeleted
  }

  /**
   * Deletes sessions idle for longer than `retentionMs`, then the least recently used beyond
   * `maxSessions`.
   */
  async sweep(options?: { readonly signal?: AbortSignal }): Promise<SweepResult> {
    options?.signal?.throwIfAborted()
    const context = this.#context
    const cutoff = context.now() - context.limits.retentionMs
    let expired = 0
    for (let batch = 0; batch < SWEEP_MAX_BATCHES; batch += 1) {
      options?.signal?.throwIfAborted()
      const rows = await context.db
        .selectFrom('sessions')
        .select('key')
        .where('updated_at', '<', cutoff)
        .orderBy('updated_at')
        .limit(SWEEP_CHUNK)
        .execute()
      if (rows.length === 0) break
      expired += await this.#deleteIdle(
        rows.map((row) => row.key),
        cutoff,
      )
    }
    const evicted = await this.evictOverflow(options?.signal)
    context.emit({ type: 'sweep:end', expired, evicted })
    if (expired + evicted > 0) context.logger.info('sessions swept', { expired, evicted })
    return { expired, evicted }
  }

  /** Starts the periodic sweep (one right away). Idempotent; does nothing once the store stopped. */
  start(): void {
    if (this.#started || this.#context.stopSignal.aborted) return
    this.#started = true
    this.#sweepInBackground()
    this.#sweepTimer = setInterval(() => this.#sweepInBackground(), this.#context.limits.sweepIntervalMs)
    this.#sweepTimer.unref()
  }

  /** Stops the periodic sweep (a sweep in flight is tracked by the store). */
  stop(): void {
    if (this.#sweepTimer !== undefined) clearInterval(this.#sweepTimer)
    this.#sweepTimer = undefined
  }

  /** Deletes the least recently used sessions beyond `maxSessions`; returns how many. */
  async evictOverflow(signal: AbortSignal | undefined): Promise<number> {
    const context = this.#context
    let evicted = 0
    for (let batch = 0; batch < SWEEP_MAX_BATCHES; batch += 1) {
      signal?.throwIfAborted()
      const row = await context.db
        .selectFrom('sessions')
        .select((eb) => eb.fn.countAll().as('count'))
        .executeTakeFirstOrThrow()
      const excess = toInteger(row.count, 'sessions') - context.limits.maxSessions
      if (excess <= 0) break
      const oldest = await context.db
        .selectFrom('sessions')
        .select(['key', 'updated_at'])
        .orderBy('updated_at')
        .orderBy('key')
        .limit(Math.min(excess, SWEEP_CHUNK))
        .execute()
      const last = oldest[oldest.length - 1]
      if (last === undefined) break
      const removed = await this.#deleteIdle(
        oldest.map((entry) => entry.key),
        toInteger(last.updated_at, last.key) + 1,
      )
      evicted += removed
      if (removed === 0) break
    }
    if (evicted > 0) context.logger.info('least recently used sessions evicted', { evicted })
    return evicted
  }

  #sweepInBackground(): void {
    const context = this.#context
    if (this.#sweeping || context.stopSignal.aborted) return
    this.#sweeping = true
    context
      .track(this.sweep({ signal: context.stopSignal }))
      .catch((error: unknown) => {
        if (!context.stopSignal.aborted) context.logger.error('session sweep failed', { error })
      })
      .finally(() => {
        this.#sweeping = false
      })
  }

  /** Deletes the given sessions if still idle since before `cutoff`; returns how many. */
  async #deleteIdle(keys: readonly string[], cutoff: number): Promise<number> {
    return this.#context.db.transaction().execute(async (transaction) => {
      const deleted = await transaction
        .deleteFrom('sessions')
        .where('key', 'in', keys)
        .where('updated_at', '<', cutoff)
        .returning('key')
        .execute()
      const gone = deleted.map((row) => row.key)
      if (gone.length > 0) {
        await transaction.deleteFrom('session_messages').where('session_key', 'in', gone).execute()
        await transaction.deleteFrom('session_observations').where('session_key', 'in', gone).execute()
      }
      for (const key of gone) this.#onDeleted(key)
      return gone.length
    })
  }
}
