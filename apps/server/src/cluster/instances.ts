import type { Kysely } from 'kysely'
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
  /** False once its heartbeat is older than three intervals: it stopped without saying so. */
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
})

/** Options of {@link InstanceRegistry}. */
export interface InstanceRegistryOptions {
  readonly id: string
  readonly host: string
  readonly pid: number
  readonly version: string
  readonly logger: Logger
  /** How often the heartbeat is written. Default 5 s. */
  readonly heartbeatMs?: number
  /** Current time in epoch ms. Default `Date.now`. */
  readonly now?: () => number
}

/**
 * The servers sharing this database (ARCHITECTURE.md §10; issue 14): each registers a row
 * (id, host, pid, version, started, heartbeat) at start, beats every `heartbeatMs`, and deletes it
 * at stop. An instance whose heartbeat is older than three intervals is reported not alive, and
 * its row is deleted by the next instance that starts.
 */
export class InstanceRegistry<DB = ClusterDatabase> {
  readonly #db: Kysely<ClusterDatabase>
  readonly #options: InstanceRegistryOptions
  readonly #heartbeatMs: number
  readonly #now: () => number
  #timer: ReturnType<typeof setInterval> | undefined

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
    await this.#db
      .deleteFrom('instances')
      .where('heartbeat_at', '<', now - this.#staleAfterMs())
      .execute()
    await this.#db
      .insertInto('instances')
      .values({ id, host, pid, version, started_at: now, heartbeat_at: now })
      .onConflict((conflict) => conflict.column('id').doUpdateSet({ heartbeat_at: now }))
      .execute()
    this.#timer = setInterval(() => {
      this.#db
        .updateTable('instances')
        .set({ heartbeat_at: this.#now() })
        .where('id', '=', id)
        .execute()
        .catch((error: unknown) => this.#options.logger.warn('instance heartbeat failed', { error }))
    }, this.#heartbeatMs)
    this.#timer.unref()
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
        alive: now - entry.heartbeat_at <= this.#staleAfterMs(),
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

  #staleAfterMs(): number {
    return this.#heartbeatMs * 3
  }
}
