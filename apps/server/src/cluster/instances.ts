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

/**
 * A server this one took for dead: its heartbeat was older than its lease (it was killed, crashed,
 * or was cut off from the database without stopping), so this server removed its row. Each row is
 * removed by one server only (the first to find it), so each loss is reported once cluster-wide.
 */
export interface LostInstance {
  readonly id: string
  readonly host: string
  readonly pid: number
  readonly version: string
  /** When it started and when its last heartbeat was written (epoch ms). */
  readonly startedAt: number
  readonly heartbeatAt: number
  /** The lease it was judged by (its own, or this server's for a row without one), in ms. */
  readonly leaseMs: number
  /** When this server found it dead (epoch ms). */
  readonly foundAt: number
}

/** How many lost servers {@link InstanceRegistry.recentlyLost} keeps. */
const RECENTLY_LOST_KEPT = 20

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
 * is older than its own lease is reported not alive, and its row is deleted by the first instance
 * that finds it so (at its start or after one of its heartbeats), which tells its
 * {@link InstanceRegistry.onLost} listeners: one server per loss. A server taken for dead that
 * beats again (it was stalled) registers again. Servers sharing a database must share `cluster.lease` (a scheduler takes another for
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
  readonly #lostListeners = new Set<(lost: readonly LostInstance[]) => void>()
  /** When this instance started (its row's `started_at`, written again if it must register again). */
  #startedAt = 0
  /** The servers this one took for dead, newest last; at most {@link RECENTLY_LOST_KEPT}. */
  readonly #recentlyLost: LostInstance[] = []

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
    const lost = await this.#removeDead(now)
    this.#startedAt = now
    await this.#db
      .insertInto('instances')
      .values({ id, host, pid, version, started_at: now, heartbeat_at: now, lease_ms: lease })
      .onConflict((conflict) => conflict.column('id').doUpdateSet({ heartbeat_at: now, lease_ms: lease }))
      .execute()
    this.#lost(lost)
    await this.#warnOtherLeases(now)
    this.#timer = setInterval(() => {
      const beat = this.#now()
      this.#beat(beat)
        .then(async () => {
          this.#wrote()
          // Not a failed heartbeat: logged, and tried again at the next one.
          await this.#removeDead(beat).then(
            (lost) => this.#lost(lost),
            (error: unknown) => this.#options.logger.warn('dead servers not removed', { error }),
          )
          return this.#warnOtherLeases(beat)
        })
        .catch((error: unknown) => this.#failedWrite(beat, error))
    }, this.#heartbeatMs)
    this.#timer.unref()
  }

  /**
   * Writes this instance's heartbeat; registers it again when its row is gone (another server took
   * it for dead while it was stalled or cut off from the database).
   */
  async #beat(now: number): Promise<void> {
    const { id, host, pid, version } = this.#options
    const updated = await this.#db
      .updateTable('instances')
      .set({ heartbeat_at: now })
      .where('id', '=', id)
      .executeTakeFirst()
    if (Number(updated.numUpdatedRows) > 0) return
    const lease = this.#staleAfterMs()
    await this.#db
      .insertInto('instances')
      .values({ id, host, pid, version, started_at: this.#startedAt, heartbeat_at: now, lease_ms: lease })
      .onConflict((conflict) => conflict.column('id').doUpdateSet({ heartbeat_at: now, lease_ms: lease }))
      .execute()
    this.#options.logger.warn(
      'this server was taken for dead by another (its heartbeat was older than its lease): registered again',
      { instance: id },
    )
  }

  /**
   * Deletes the rows of instances whose heartbeat is older than their own lease (this server's for
   * a row that has none) and returns them: a row two servers find at once is returned to one.
   */
  async #removeDead(now: number): Promise<LostInstance[]> {
    const lease = this.#staleAfterMs()
    const rows = await this.#db
      .deleteFrom('instances')
      .where('id', '<>', this.#options.id)
      .where(sql<boolean>`heartbeat_at + coalesce(lease_ms, ${lease}) < ${now}`)
      .returningAll()
      .execute()
    return rows
      .map((raw) => v.parse(row, raw))
      .map((entry) => ({
        id: entry.id,
        host: entry.host,
        pid: entry.pid,
        version: entry.version,
        startedAt: entry.started_at,
        heartbeatAt: entry.heartbeat_at,
        leaseMs: entry.lease_ms ?? lease,
        foundAt: now,
      }))
  }

  /**
   * Calls `listener` with the servers this one took for dead and removed (see {@link LostInstance}),
   * at its start and after its heartbeats; nothing when none. Returns the function that stops calling it.
   */
  onLost(listener: (lost: readonly LostInstance[]) => void): () => void {
    this.#lostListeners.add(listener)
    return () => this.#lostListeners.delete(listener)
  }

  /**
   * The servers this one took for dead (and removed) within the last `withinMs` (default a day),
   * oldest first, at most the last 20: what `lango doctor` warns about once their rows are gone.
   */
  recentlyLost(withinMs = 24 * 60 * 60_000): readonly LostInstance[] {
    const since = this.#now() - withinMs
    return this.#recentlyLost.filter((instance) => instance.foundAt >= since)
  }

  #lost(lost: readonly LostInstance[]): void {
    if (lost.length === 0) return
    this.#recentlyLost.push(...lost)
    this.#recentlyLost.splice(0, Math.max(0, this.#recentlyLost.length - RECENTLY_LOST_KEPT))
    this.#options.logger.warn('servers on this database taken for dead (no heartbeat within their lease)', {
      instances: lost.map((instance) => ({ id: instance.id, host: instance.host, pid: instance.pid })),
    })
    for (const listener of this.#lostListeners) {
      try {
        listener(lost)
      } catch (error) {
        this.#options.logger.warn('lost instance listener failed', { error })
      }
    }
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
