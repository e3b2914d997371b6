import { type Kysely, sql } from 'kysely'
import * as v from 'valibot'
import { withDeadline } from '../abort.js'
import type { Logger } from '../logger.js'
import type { ClusterDatabase } from './schema.js'

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

/** Options of {@link LeaseTable}. */
export interface LeaseTableOptions {
  /** On `postgres`, taking and renewing run with `statement_timeout` and `lock_timeout`. */
  readonly dialect?: 'sqlite' | 'postgres'
  /** That timeout: shorter than the interval between renewals. */
  readonly statementTimeoutMs?: number
}

/**
 * The `leases` table: one row per singleton duty. A lease is taken by one statement (insert, or
 * take over a row whose expiry passed, raising its version), renewed only by the holder of that
 * version, and deleted by it at stop. Times are epoch milliseconds of the cluster's one clock.
 */
export class LeaseTable<DB = ClusterDatabase> {
  readonly #db: Kysely<ClusterDatabase>
  readonly #now: () => number
  readonly #options: LeaseTableOptions

  /** Takes the host's handle as it is (any tables besides `leases`). */
  constructor(db: Kysely<DB>, now: () => number, options: LeaseTableOptions = {}) {
    // Kysely's DB parameter is invariant: narrow the host's handle once; only `leases` is queried.
    this.#db = db as unknown as Kysely<ClusterDatabase>
    this.#now = now
    this.#options = options
  }

  /**
   * Runs `work` with a statement and lock timeout on PostgreSQL, so a renewal stuck behind a lock
   * or a slow server gives up instead of holding a connection past the lease.
   */
  #bounded<T>(work: (db: Kysely<ClusterDatabase>) => Promise<T>): Promise<T> {
    const { statementTimeoutMs } = this.#options
    if (this.#options.dialect !== 'postgres' || statementTimeoutMs === undefined) return work(this.#db)
    const ms = sql.lit(Math.max(1, Math.round(statementTimeoutMs)))
    return this.#db.transaction().execute(async (trx) => {
      await sql`set local statement_timeout = ${ms}`.execute(trx)
      await sql`set local lock_timeout = ${ms}`.execute(trx)
      return work(trx)
    })
  }

  /**
   * Takes the lease `name` for `owner` for `ttlMs` if it is free or expired. Returns the new
   * version, or undefined when another owner holds it. One upsert: of two callers racing for an
   * expired row, exactly one sees its version.
   */
  async acquire(name: string, owner: string, ttlMs: number): Promise<number | undefined> {
    const now = this.#now()
    const row = await this.#bounded((db) =>
      db
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
        .executeTakeFirst(),
    )
    return row === undefined ? undefined : Number(row.version)
  }

  /** Extends a lease this owner holds at `version`; false when it was lost (taken over or deleted). */
  async renew(name: string, owner: string, version: number, ttlMs: number): Promise<boolean> {
    const expiresAt = this.#now() + ttlMs
    const result = await this.#bounded((db) =>
      db
        .updateTable('leases')
        .set({ expires_at: expiresAt })
        .where('name', '=', name)
        .where('owner', '=', owner)
        .where('version', '=', version)
        .executeTakeFirst(),
    )
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

/** What a {@link Duty} gets when it starts: how long it may go on, and how to end it itself. */
interface DutyContext {
  /** Aborted when the duty must end: its lease was lost or could not be renewed in time, or the server stops. */
  readonly signal: AbortSignal
  /**
   * Milliseconds until the lease could run out and another server take the duty (≤ 0: do nothing
   * more). Work that must not overlap with the next holder's, such as a long poll, ends before it.
   */
  validForMs(): number
  /**
   * The duty ended by itself (a receive failure, Telegram's 409): it is stopped, its lease given
   * up so that another server may take it, and this server competes again after a back-off.
   */
  fail(error: unknown): void
}

/**
 * Work only one instance of the cluster may do at a time (long polling one Telegram bot token,
 * pruning history). `start` begins it; `stop` ends it and resolves once it has ended.
 */
export interface Duty {
  /** The lease that guards it; one duty per name. */
  readonly name: string
  /**
   * What it is, for metrics (`lango_leases_held{duty}`): `telegram` for a bot's long poll. Default
   * the name up to its first `:`.
   */
  readonly kind?: string
  start(context: DutyContext): Promise<void>
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
  /** When the lease runs out unless renewed (the cluster clock; from before the renewal was sent). */
  expiresAt: number
  /** The duty's `start()` itself: not awaited by the round, so a slow start never delays renewals. */
  starting: Promise<void>
  /** …and what follows it (back-off reset, or the failure handled): what `start()` waits for. */
  started: Promise<void>
  /** Aborted when the duty ends. */
  readonly controller: AbortController
  /** Ends the duty at the fence (a third of a lease before expiry) unless a renewal moves it. */
  fence: ReturnType<typeof setTimeout> | undefined
}

/** A duty that ended on this instance without being stopped: {@link SingletonDuties.onLoss}. */
export interface LeaseLoss {
  readonly name: string
  readonly why: 'lost' | 'unrenewable' | 'failed'
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
 * duty starts once its lease is taken and stops when a renewal finds it lost. Every lease operation
 * has a deadline of a third of the lease, and each held lease has a fence a third of a lease before
 * it could run out: if no renewal has moved it by then (the database is unreachable, a renewal
 * hangs behind a lock, the process was stopped), the duty stops there, so its next holder never
 * overlaps with it (self-fencing). A killed instance's duties move to another within a lease and
 * a third.
 */
export class SingletonDuties {
  readonly #options: SingletonDutiesOptions
  readonly #duties = new Map<string, Duty>()
  readonly #held = new Map<string, Holding>()
  /** Duties whose start failed: not tried again before this time, doubling per failure up to 5 min. */
  readonly #backoff = new Map<string, { failures: number; until: number }>()
  /**
   * Leases whose taking failed in a row (the database away): logged at once, then once a minute
   * with how many failed since, not every round for as long as the outage lasts.
   */
  readonly #takeFailures = new Map<string, { readonly since: number; failures: number; loggedAt: number }>()
  readonly #lossListeners = new Set<(loss: LeaseLoss) => void>()
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

  /**
   * Calls `listener` whenever a duty this instance ran ends for another reason than its stop: its
   * lease was taken over (`lost`), could not be renewed in time (`unrenewable`), or its start failed
   * (`failed`). Returns the unsubscribe function.
   */
  onLoss(listener: (loss: LeaseLoss) => void): () => void {
    this.#lossListeners.add(listener)
    return () => this.#lossListeners.delete(listener)
  }

  /** The names of the duties added, in order. */
  get names(): readonly string[] {
    return [...this.#duties.keys()]
  }

  /** A duty's kind (see {@link Duty.kind}): `telegram`, `retention`. */
  kindOf(name: string): string {
    const kind = this.#duties.get(name)?.kind
    if (kind !== undefined) return kind
    const colon = name.indexOf(':')
    return colon === -1 ? name : name.slice(0, colon)
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
        await this.#release(name, holding.version)
      }),
    )
  }

  get #third(): number {
    return Math.max(50, Math.floor(this.#options.ttlMs / 3))
  }

  #tick(): Promise<void> {
    this.#round = this.#renewAndTake().finally(() => {
      if (!this.#running) return
      this.#timer = setTimeout(() => void this.#tick(), this.#third)
      this.#timer.unref()
    })
    return this.#round
  }

  /** A failed try to take `name`: said once, then once a minute with how many failed since. */
  #takeFailed(name: string, error: unknown): void {
    const { now, logger } = this.#options
    const at = now()
    const failure = this.#takeFailures.get(name)
    if (failure === undefined) {
      this.#takeFailures.set(name, { since: at, failures: 1, loggedAt: at })
      logger.warn('lease could not be taken', { lease: name, error })
      return
    }
    failure.failures += 1
    if (at - failure.loggedAt < 60_000) return
    failure.loggedAt = at
    logger.warn('lease still cannot be taken', {
      lease: name,
      error,
      failures: failure.failures,
      sinceMs: at - failure.since,
    })
  }

  /** The database answered a try to take `name` (taken or held elsewhere): an outage's end, said once. */
  #takeAnswered(name: string): void {
    const failure = this.#takeFailures.get(name)
    if (failure === undefined) return
    this.#takeFailures.delete(name)
    this.#options.logger.info('lease can be taken again: the database answers', {
      lease: name,
      failures: failure.failures,
      failedForMs: this.#options.now() - failure.since,
    })
  }

  async #renewAndTake(): Promise<void> {
    const { leases, owner, ttlMs, now, logger } = this.#options
    for (const [name, duty] of this.#duties) {
      if (!this.#running) return
      const holding = this.#held.get(name)
      if (holding !== undefined) {
        // The lease's new expiry counts from before the renewal was sent: a slow answer never
        // makes this server believe it holds the lease longer than the database does.
        const sent = now()
        try {
          const renewed = await withDeadline(leases.renew(name, owner, holding.version, ttlMs), this.#third)
          if (this.#held.get(name) !== holding) continue
          if (renewed) {
            holding.expiresAt = sent + ttlMs
            this.#arm(name, holding)
            continue
          }
          logger.warn('lease lost: another instance took it over', { lease: name })
          await this.#end(name, 'lost')
        } catch (error) {
          // Unreachable, or too slow: the fence ends the duty if no renewal comes in time.
          logger.warn('lease renewal failed; retrying', { lease: name, error })
        }
        continue
      }
      const backoff = this.#backoff.get(name)
      if (backoff !== undefined && now() < backoff.until) continue
      const sent = now()
      const acquiring = leases.acquire(name, owner, ttlMs)
      let version: number | undefined
      try {
        version = await withDeadline(acquiring, this.#third)
      } catch (error) {
        // Taken after all, too late to count on: give it back for whoever comes next.
        acquiring.then((late) => (late === undefined ? undefined : this.#release(name, late))).catch(() => {})
        this.#takeFailed(name, error)
        continue
      }
      this.#takeAnswered(name)
      if (version === undefined) continue
      logger.info('lease taken: running its duty here', { lease: name, version })
      const taken: Holding = {
        version,
        expiresAt: sent + ttlMs,
        starting: Promise.resolve(),
        started: Promise.resolve(),
        controller: new AbortController(),
        fence: undefined,
      }
      this.#held.set(name, taken)
      this.#arm(name, taken)
      const context: DutyContext = {
        signal: taken.controller.signal,
        validForMs: () => (this.#held.get(name) === taken ? taken.expiresAt - now() : 0),
        fail: (error) => void this.#failed(name, taken, 'ended by itself', error),
      }
      taken.starting = duty.start(context)
      taken.started = taken.starting.then(
        () => void this.#backoff.delete(name),
        (error: unknown) => this.#failed(name, taken, 'failed to start', error),
      )
    }
  }

  /** Sets the fence: the duty ends a third of a lease before the lease could run out. */
  #arm(name: string, holding: Holding): void {
    clearTimeout(holding.fence)
    const { ttlMs, now, logger } = this.#options
    holding.fence = setTimeout(
      () => {
        if (this.#held.get(name) !== holding) return
        logger.error('lease could not be renewed in time; stopping its duty', { lease: name })
        void this.#end(name, 'unrenewable')
      },
      Math.max(0, holding.expiresAt - ttlMs / 3 - now()),
    )
    holding.fence.unref()
  }

  /** The duty ended or could not start: stop it, give the lease back, try again after a back-off. */
  async #failed(name: string, holding: Holding, what: string, error: unknown): Promise<void> {
    const { ttlMs, now, logger } = this.#options
    const failures = (this.#backoff.get(name)?.failures ?? 0) + 1
    const waitMs = Math.min(300_000, ttlMs * 2 ** (failures - 1))
    this.#backoff.set(name, { failures, until: now() + waitMs })
    logger.error(`duty ${what}; lease released`, { lease: name, retry_in_ms: waitMs, error })
    if (this.#held.get(name) !== holding) return
    await this.#end(name, 'failed')
    await this.#release(name, holding.version)
  }

  async #release(name: string, version: number): Promise<void> {
    await withDeadline(this.#options.leases.release(name, this.#options.owner, version), this.#third).catch(
      (error: unknown) => this.#options.logger.warn('lease not released', { lease: name, error }),
    )
  }

  async #end(name: string, why: 'lost' | 'unrenewable' | 'stopping' | 'failed'): Promise<void> {
    const holding = this.#held.get(name)
    if (holding === undefined) return
    this.#held.delete(name)
    if (why !== 'stopping')
      for (const listener of this.#lossListeners) {
        try {
          listener({ name, why })
        } catch (error) {
          this.#options.logger.warn('lease loss listener threw', { lease: name, error })
        }
      }
    clearTimeout(holding.fence)
    holding.controller.abort(new Error(`the ${name} lease ended (${why})`))
    // A duty that is still starting is stopped once its start settles; one that failed is stopped too.
    await holding.starting.catch(() => {})
    await this.#duties
      .get(name)
      ?.stop()
      .catch((error: unknown) =>
        this.#options.logger.warn('duty did not stop cleanly', { lease: name, why, error }),
      )
  }
}
