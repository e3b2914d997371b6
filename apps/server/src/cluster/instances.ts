import { type Kysely, sql } from 'kysely'
import * as v from 'valibot'
import type { Logger } from '../logger.js'
import type { ClusterDatabase } from './schema.js'

/** One server on the database, as the registry reports it. */
export interface InstanceView {
  readonly id: string
  readonly host: string
  readonly pid: number
  readonly version: string
  readonly started_at: string
  readonly heartbeat_at: string
  /**
   * Its `cluster.lease` in milliseconds (it beats every third of it); null for a server older than
   * the column.
   */
  readonly lease_ms: number | null
  /** False once its heartbeat is older than its lease (three intervals): it stopped without saying so. */
  readonly alive: boolean
  /** This process. */
  readonly self: boolean
}

/** pg returns BIGINT as a string, SQLite as a number. */
const epoch = v.pipe(v.union([v.number(), v.string()]), v.transform(Number), v.number(), v.integer())
const row = v.object({
  id: v.string(),
  host: v.string(),
  pid: v.pipe(v.union([v.number(), v.string()]), v.transform(Number), v.number()),
  version: v.string(),
  started_at: epoch,
  heartbeat_at: epoch,
  lease_ms: v.nullish(epoch, null),
})

/** What one heartbeat found: written, or refused with the database's reason. */
export type HeartbeatOutcome =
  | { readonly written: true }
  | { readonly written: false; readonly error: string }

/** Options of {@link InstanceRegistry}. */
export interface InstanceRegistryOptions {
  readonly id: string
  readonly host: string
  readonly pid: number
  readonly version: string
  readonly logger: Logger
  /** How often the heartbeat is written, a third of `cluster.lease`. Default 5 s. */
  readonly heartbeatMs?: number
  /** Current time in epoch ms. Default `Date.now`. */
  readonly now?: () => number
}

/**
 * The servers sharing this database (ARCHITECTURE.md §10; issue 14): each registers a row
 * (id, host, pid, version, started, heartbeat) at start, beats every `heartbeatMs`, and deletes it
 * at stop. Each row records its instance's lease (three heartbeat intervals): one whose heartbeat
 * is older than its own lease is reported not alive, and its row is deleted by the next instance
 * that starts. Servers sharing a database must share `cluster.lease` (a scheduler takes another for
 * dead by its own lease): one that finds an instance alive with another lease logs a warning, once
 * per instance, at start and with its heartbeats.
 */
export class InstanceRegistry<DB = ClusterDatabase> {
  readonly #db: Kysely<ClusterDatabase>
  readonly #options: InstanceRegistryOptions
  readonly #heartbeatMs: number
  readonly #now: () => number
  #timer: ReturnType<typeof setInterval> | undefined
  /** Instances already warned about for a different lease. */
  readonly #warned = new Set<string>()
  /** Since when the heartbeat's write has failed, and the newest failure; undefined while it works. */
  #writeFailure: { since: number; error: string; failures: number; loggedAt: number } | undefined
  readonly #heartbeatListeners = new Set<(outcome: HeartbeatOutcome) => void>()

  /** Takes the host's handle as it is (any tables besides `instances`). */
  constructor(db: Kysely<DB>, options: InstanceRegistryOptions) {
    // Kysely's DB parameter is invariant: narrow the host's handle once; only `instances` is queried.
    this.#db = db as unknown as Kysely<ClusterDatabase>
    this.#options = options
    this.#heartbeatMs = options.heartbeatMs ?? 5_000
    this.#now = options.now ?? Date.now
  }

  /** This instance's id. */
  get id(): string {
    return this.#options.id
  }

  /** Registers this instance, removes instances long dead, and starts the heartbeat. Idempotent. */
  async start(): Promise<void> {
    if (this.#timer !== undefined) return
    const now = this.#now()
    const { id, host, pid, version } = this.#options
    const lease = this.#staleAfterMs()
    // Each row by its own lease (this server's for a row that has none).
    await this.#db
      .deleteFrom('instances')
      .where(sql<boolean>`heartbeat_at + coalesce(lease_ms, ${lease}) < ${now}`)
      .execute()
    await this.#db
      .insertInto('instances')
      .values({ id, host, pid, version, started_at: now, heartbeat_at: now, lease_ms: lease })
      .onConflict((conflict) => conflict.column('id').doUpdateSet({ heartbeat_at: now, lease_ms: lease }))
      .execute()
    await this.#warnOtherLeases(now)
    this.#timer = setInterval(() => {
      const beat = this.#now()
      this.#db
        .updateTable('instances')
        .set({ heartbeat_at: beat })
        .where('id', '=', id)
        .execute()
        .then(() => {
          this.#wrote()
          return this.#warnOtherLeases(beat)
        })
        .catch((error: unknown) => this.#failedWrite(beat, error))
    }, this.#heartbeatMs)
    this.#timer.unref()
  }

  /**
   * Whether this server's writes to the database fail, as its last heartbeat found (a full disk,
   * a read-only file, a database that refuses writes while it still answers reads): `/healthz`
   * answers 503 while they do. Undefined while the last heartbeat was written.
   */
  writeFailure(): { readonly since: number; readonly error: string } | undefined {
    const failure = this.#writeFailure
    return failure === undefined ? undefined : { since: failure.since, error: failure.error }
  }

  /**
   * Calls `listener` after each heartbeat, written or not (the operator's alerts tell an outage of
   * the database's writes, and its end). Returns the function that stops calling it.
   */
  onHeartbeat(listener: (outcome: HeartbeatOutcome) => void): () => void {
    this.#heartbeatListeners.add(listener)
    return () => this.#heartbeatListeners.delete(listener)
  }

  #heartbeat(outcome: HeartbeatOutcome): void {
    for (const listener of this.#heartbeatListeners) {
      try {
        listener(outcome)
      } catch (error) {
        this.#options.logger.warn('instance heartbeat listener failed', { error })
      }
    }
  }

  /** A heartbeat written: the database takes writes again (said once, after a failure). */
  #wrote(): void {
    this.#heartbeat({ written: true })
    const failure = this.#writeFailure
    if (failure === undefined) return
    this.#writeFailure = undefined
    this.#options.logger.info('instance heartbeat written again: the database takes writes', {
      failedForMs: this.#now() - failure.since,
      failures: failure.failures,
    })
  }

  /** A heartbeat not written: logged at once, then once a minute with how many failed since. */
  #failedWrite(now: number, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error)
    this.#heartbeat({ written: false, error: message })
    const failure = this.#writeFailure
    if (failure === undefined) {
      this.#writeFailure = { since: now, error: message, failures: 1, loggedAt: now }
      this.#options.logger.warn('instance heartbeat failed', { error })
      return
    }
    failure.error = message
    failure.failures++
    if (now - failure.loggedAt < 60_000) return
    failure.loggedAt = now
    this.#options.logger.warn('instance heartbeat still failing', {
      error,
      failures: failure.failures,
      sinceMs: now - failure.since,
    })
  }

  /**
   * Warns, once per instance, about each live one whose lease differs from this one's: with mixed
   * leases, a server takes another for dead while it still beats (its runs marked interrupted, its
   * workflow steps run again elsewhere).
   */
  async #warnOtherLeases(now: number): Promise<void> {
    const lease = this.#staleAfterMs()
    const others = await this.#db
      .selectFrom('instances')
      .select(['id', 'host', 'pid', 'lease_ms'])
      .where('id', '<>', this.#options.id)
      .where('lease_ms', 'is not', null)
      .where('lease_ms', '<>', lease)
      .where(sql<boolean>`heartbeat_at + lease_ms >= ${now}`)
      .execute()
    for (const other of others) {
      if (this.#warned.has(other.id)) continue
      // Bounded: a crash-looping peer registers a new id each start.
      if (this.#warned.size >= 1000) this.#warned.clear()
      this.#warned.add(other.id)
      this.#options.logger.warn('servers on this database have different cluster.lease values', {
        lease_ms: lease,
        other: { id: other.id, host: other.host, pid: Number(other.pid), lease_ms: Number(other.lease_ms) },
        fix: 'set the same cluster.lease on every server sharing the database: a server takes another for dead after its own lease without a heartbeat, and a server with a longer lease beats less often',
      })
    }
  }

  /** Every registered instance, this one first, then by start time. */
  async list(): Promise<InstanceView[]> {
    const now = this.#now()
    const rows = await this.#db.selectFrom('instances').selectAll().orderBy('started_at').execute()
    return rows
      .map((raw) => v.parse(row, raw))
      .map((entry) => ({
        id: entry.id,
        host: entry.host,
        pid: entry.pid,
        version: entry.version,
        started_at: new Date(entry.started_at).toISOString(),
        heartbeat_at: new Date(entry.heartbeat_at).toISOString(),
        lease_ms: entry.lease_ms,
        alive: now - entry.heartbeat_at <= (entry.lease_ms ?? this.#staleAfterMs()),
        self: entry.id === this.#options.id,
      }))
      .sort((a, b) => Number(b.self) - Number(a.self))
  }

  /** Stops the heartbeat and deletes this instance's row. Idempotent. */
  async stop(): Promise<void> {
    if (this.#timer === undefined) return
    clearInterval(this.#timer)
    this.#timer = undefined
    await this.#db
      .deleteFrom('instances')
      .where('id', '=', this.#options.id)
      .execute()
      .catch((error: unknown) => this.#options.logger.warn('instance not deregistered', { error }))
  }

  /** This instance's lease, in whole milliseconds: three heartbeat intervals. */
  #staleAfterMs(): number {
    return Math.round(this.#heartbeatMs * 3)
  }
}
