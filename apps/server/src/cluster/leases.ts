import type { Kysely } from 'kysely'
import * as v from 'valibot'
import type { Logger } from '../logger.js'

// biome-ignore lint/suspicious/noExplicitAny: the server's one handle, shared by every store
type HostDatabase = Kysely<any>

/** A lease row as `GET /healthz` and `lango doctor` show it. */
export interface LeaseView {
  /** The duty it guards: `retention`, `telegram:<token hash>`, … */
  readonly name: string
  /** The instance holding it. */
  readonly owner: string
  /** Raised by every acquisition: a fencing token that tells holders apart. */
  readonly version: number
  readonly expires_at: string
}

/** pg returns BIGINT as a string, SQLite as a number. */
const bigint = v.pipe(v.union([v.number(), v.string()]), v.transform(Number), v.number(), v.integer())
const leaseRow = v.object({
  name: v.string(),
  owner: v.string(),
  version: bigint,
  expires_at: bigint,
})

/**
 * The `leases` table: one row per singleton duty. A lease is taken by one statement (insert, or
 * take over a row whose expiry passed, raising its version), renewed only by the holder of that
 * version, and deleted by it at stop. Times are epoch milliseconds of the cluster's one clock.
 */
export class LeaseTable {
  readonly #db: HostDatabase
  readonly #now: () => number

  constructor(db: HostDatabase, now: () => number) {
    this.#db = db
    this.#now = now
  }

  /**
   * Takes the lease `name` for `owner` for `ttlMs` if it is free or expired. Returns the new
   * version, or undefined when another owner holds it. One upsert: of two callers racing for an
   * expired row, exactly one sees its version.
   */
  async acquire(name: string, owner: string, ttlMs: number): Promise<number | undefined> {
    const now = this.#now()
    const row = await this.#db
      .insertInto('leases')
      .values({ name, owner, version: 1, acquired_at: now, expires_at: now + ttlMs })
      .onConflict((conflict) =>
        conflict
          .column('name')
          .doUpdateSet((eb) => ({
            owner: eb.ref('excluded.owner'),
            version: eb('leases.version', '+', 1),
            acquired_at: eb.ref('excluded.acquired_at'),
            expires_at: eb.ref('excluded.expires_at'),
          }))
          .where('leases.expires_at', '<', now),
      )
      .returning(['version'])
      .executeTakeFirst()
    return row === undefined ? undefined : Number(row.version)
  }

  /** Extends a lease this owner holds at `version`; false when it was lost (taken over or deleted). */
  async renew(name: string, owner: string, version: number, ttlMs: number): Promise<boolean> {
    const result = await this.#db
      .updateTable('leases')
      .set({ expires_at: this.#now() + ttlMs })
      .where('name', '=', name)
      .where('owner', '=', owner)
      .where('version', '=', version)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) === 1
  }

  /** Gives a lease up at once (graceful stop), so another instance need not wait for its expiry. */
  async release(name: string, owner: string, version: number): Promise<void> {
    await this.#db
      .deleteFrom('leases')
      .where('name', '=', name)
      .where('owner', '=', owner)
      .where('version', '=', version)
      .execute()
  }

  /** Every lease row, by name (expired ones included: they are free for the next taker). */
  async list(): Promise<LeaseView[]> {
    const rows = await this.#db.selectFrom('leases').selectAll().orderBy('name').execute()
    return rows
      .map((raw) => v.parse(leaseRow, raw))
      .map((row) => ({ ...row, expires_at: new Date(row.expires_at).toISOString() }))
  }
}

/**
 * Work only one instance of the cluster may do at a time (long polling one Telegram bot token,
 * pruning history). `start` begins it; `stop` ends it and resolves once it has ended.
 */
export interface Duty {
  /** The lease that guards it; one duty per name. */
  readonly name: string
  start(): Promise<void>
  stop(): Promise<void>
}

/** A lease this instance holds, as `/healthz` reports it. */
export interface HeldLease {
  readonly name: string
  readonly version: number
  readonly expires_at: string
}

interface Holding {
  readonly version: number
  /** When the lease runs out unless renewed (the cluster clock). */
  expiresAt: number
  /** The duty's `start()`: not awaited by the round, so a slow start never delays renewals. */
  started: Promise<void>
}

/** Options of {@link SingletonDuties}. */
export interface SingletonDutiesOptions {
  readonly leases: LeaseTable
  /** This instance's id. */
  readonly owner: string
  /** How long a lease lasts unrenewed; renewals and attempts to take free ones come every third. */
  readonly ttlMs: number
  /** The cluster clock, epoch milliseconds. */
  readonly now: () => number
  readonly logger: Logger
}

/**
 * Runs each {@link Duty} on exactly one instance of the cluster at a time. Every third of the
 * lease, each instance renews the leases it holds and tries to take the free or expired ones; a
 * duty starts once its lease is taken and stops when a renewal finds it lost. When renewals fail
 * (the database cannot be reached) the duty stops a third of a lease before the lease could run out,
 * so its next holder never overlaps with it (self-fencing). A killed instance's duties move to
 * another within a lease and a third.
 */
export class SingletonDuties {
  readonly #options: SingletonDutiesOptions
  readonly #duties = new Map<string, Duty>()
  readonly #held = new Map<string, Holding>()
  /** Duties whose start failed: not tried again before this time, doubling per failure up to 5 min. */
  readonly #backoff = new Map<string, { failures: number; until: number }>()
  #timer: ReturnType<typeof setTimeout> | undefined
  #round: Promise<void> = Promise.resolve()
  #running = false

  constructor(options: SingletonDutiesOptions) {
    this.#options = options
  }

  /** Adds a duty; from the next round on, this instance competes for it. */
  add(duty: Duty): void {
    if (this.#duties.has(duty.name)) throw new Error(`a duty named ${duty.name} is already added`)
    this.#duties.set(duty.name, duty)
  }

  /** Every lease row of the cluster, whoever holds it (`GET /api/instances`, `lango doctor`). */
  all(): Promise<LeaseView[]> {
    return this.#options.leases.list()
  }

  /** The leases this instance holds now. */
  held(): HeldLease[] {
    return [...this.#held].map(([name, holding]) => ({
      name,
      version: holding.version,
      expires_at: new Date(holding.expiresAt).toISOString(),
    }))
  }

  /** Runs the first round (taking the free leases) and keeps going every third of the lease. */
  async start(): Promise<void> {
    if (this.#running) return
    this.#running = true
    await this.#tick()
    // The first round's duties have started (or failed) when start() resolves.
    await Promise.all([...this.#held.values()].map((holding) => holding.started))
  }

  /** Stops every duty this instance runs and releases its leases. Idempotent. */
  async stop(): Promise<void> {
    this.#running = false
    clearTimeout(this.#timer)
    await this.#round
    await Promise.all(
      [...this.#held.keys()].map(async (name) => {
        const holding = this.#held.get(name) as Holding
        await this.#end(name, 'stopping')
        await this.#options.leases
          .release(name, this.#options.owner, holding.version)
          .catch((error: unknown) => this.#options.logger.warn('lease not released', { lease: name, error }))
      }),
    )
  }

  #tick(): Promise<void> {
    this.#round = this.#renewAndTake().finally(() => {
      if (!this.#running) return
      this.#timer = setTimeout(() => void this.#tick(), Math.max(50, Math.floor(this.#options.ttlMs / 3)))
      this.#timer.unref()
    })
    return this.#round
  }

  async #renewAndTake(): Promise<void> {
    const { leases, owner, ttlMs, now, logger } = this.#options
    for (const [name, duty] of this.#duties) {
      if (!this.#running) return
      const holding = this.#held.get(name)
      if (holding !== undefined) {
        try {
          if (await leases.renew(name, owner, holding.version, ttlMs)) {
            holding.expiresAt = now() + ttlMs
            continue
          }
          logger.warn('lease lost: another instance took it over', { lease: name })
          await this.#end(name, 'lost')
        } catch (error) {
          // Unreachable database: keep the duty only while the lease surely still holds.
          if (now() >= holding.expiresAt - ttlMs / 3) {
            logger.error('lease could not be renewed in time; stopping its duty', { lease: name, error })
            await this.#end(name, 'unrenewable')
          } else {
            logger.warn('lease renewal failed; retrying', { lease: name, error })
          }
        }
        continue
      }
      const backoff = this.#backoff.get(name)
      if (backoff !== undefined && now() < backoff.until) continue
      let version: number | undefined
      try {
        version = await leases.acquire(name, owner, ttlMs)
      } catch (error) {
        logger.warn('lease could not be taken', { lease: name, error })
        continue
      }
      if (version === undefined) continue
      logger.info('lease taken: running its duty here', { lease: name, version })
      const taken: Holding = { version, expiresAt: now() + ttlMs, started: Promise.resolve() }
      this.#held.set(name, taken)
      taken.started = duty.start().then(
        () => void this.#backoff.delete(name),
        async (error: unknown) => {
          // Give it back: another instance may manage; this one tries again after a backoff.
          const failures = (this.#backoff.get(name)?.failures ?? 0) + 1
          const waitMs = Math.min(300_000, ttlMs * 2 ** (failures - 1))
          this.#backoff.set(name, { failures, until: now() + waitMs })
          logger.error('duty failed to start; lease released', { lease: name, retry_in_ms: waitMs, error })
          if (this.#held.get(name) !== taken) return
          this.#held.delete(name)
          await leases.release(name, owner, version).catch(() => {})
        },
      )
    }
  }

  async #end(name: string, why: 'lost' | 'unrenewable' | 'stopping'): Promise<void> {
    const holding = this.#held.get(name)
    this.#held.delete(name)
    await holding?.started
    await this.#duties
      .get(name)
      ?.stop()
      .catch((error: unknown) =>
        this.#options.logger.warn('duty did not stop cleanly', { lease: name, why, error }),
      )
  }
}
