import type { QueryExecutorProvider } from 'kysely'
import { sql } from 'kysely'
import type { Logger } from '../logger.js'

/** A database handle of any tables: the clock reads PostgreSQL's time with raw SQL only. */
type HostDatabase = QueryExecutorProvider

/** How the clock stands against the database's, as `/healthz` reports it. */
export interface ClockReading {
  /** `database`: corrected to PostgreSQL's clock; `local`: SQLite, one machine, this clock. */
  readonly source: 'database' | 'local'
  /** Added to this machine's time: the database's clock minus ours, in milliseconds. */
  readonly offset_ms: number
  /** How far the corrected time may still be off (half the best round trip of the last measurement). */
  readonly uncertainty_ms: number
}

/** Samples per measurement; the one with the shortest round trip wins (NTP's rule of thumb). */
const SAMPLES = 5

/**
 * The cluster's one clock (issue 14: "leases are compared against one clock"). On PostgreSQL it
 * reads the database's `clock_timestamp()` at start and every `resyncMs`, and adds the measured
 * offset to this machine's time, so every server compares leases, heartbeats and fire times on the
 * database's clock give or take half a round trip, whatever its own clock says. On SQLite every
 * server shares one machine, so this machine's clock is that one clock. Fits the `Clock` port of
 * `@lango/cron` and `@lango/workflow` (test/cluster-clock.test-d.ts).
 */
export class ClusterClock {
  readonly #db: HostDatabase | undefined
  readonly #logger: Logger
  readonly #warnAboveMs: number
  readonly #local: () => number
  /** Whole milliseconds, so every time this clock gives is one (PostgreSQL's BIGINT refuses fractions). */
  #offset = 0
  #uncertainty = 0
  #timer: ReturnType<typeof setInterval> | undefined

  /**
   * @param db the PostgreSQL database to follow, or undefined for this machine's clock
   * @param warnAboveMs an offset or uncertainty above this is logged as a warning (a tenth of the lease)
   * @param options.localNow this machine's time in epoch milliseconds, fractions allowed; default `Date.now`
   */
  constructor(
    db: HostDatabase | undefined,
    logger: Logger,
    warnAboveMs: number,
    options: { readonly localNow?: () => number } = {},
  ) {
    this.#db = db
    this.#logger = logger
    this.#warnAboveMs = warnAboveMs
    this.#local = options.localNow ?? Date.now
  }

  now(): Date {
    return new Date(this.nowMs())
  }

  /** Epoch milliseconds on the cluster clock: always a whole number. */
  nowMs(): number {
    return Math.floor(this.#local()) + this.#offset
  }

  setTimeout(callback: () => void, ms: number): unknown {
    return setTimeout(callback, ms)
  }

  clearTimeout(handle: unknown): void {
    clearTimeout(handle as ReturnType<typeof setTimeout>)
  }

  reading(): ClockReading {
    return {
      source: this.#db === undefined ? 'local' : 'database',
      offset_ms: this.#offset,
      uncertainty_ms: Math.round(this.#uncertainty),
    }
  }

  /** Measures the offset now and then every `resyncMs` (default a minute). */
  async start(resyncMs = 60_000): Promise<void> {
    if (this.#db === undefined || this.#timer !== undefined) return
    await this.measure()
    this.#timer = setInterval(() => {
      this.measure().catch((error: unknown) => this.#logger.warn('clock not measured', { error }))
    }, resyncMs)
    this.#timer.unref()
  }

  stop(): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  /** Reads the database's clock {@link SAMPLES} times and keeps the offset of the quickest answer. */
  async measure(): Promise<ClockReading> {
    const db = this.#db
    if (db === undefined) return this.reading()
    let best: { offset: number; rtt: number } | undefined
    for (let sample = 0; sample < SAMPLES; sample++) {
      const sent = this.#local()
      const { rows } = await sql<{
        now: string | number
      }>`select floor(extract(epoch from clock_timestamp()) * 1000)::bigint as now`.execute(db)
      const received = this.#local()
      const rtt = received - sent
      // Rounded here, once: half a round trip (or a fractional local clock) makes a fraction.
      const offset = Math.round(Number(rows[0]?.now) - (sent + rtt / 2))
      if (best === undefined || rtt < best.rtt) best = { offset, rtt }
    }
    const { offset, rtt } = best as { offset: number; rtt: number }
    this.#offset = offset
    this.#uncertainty = rtt / 2
    if (Math.abs(offset) > this.#warnAboveMs || this.#uncertainty > this.#warnAboveMs) {
      this.#logger.warn("this machine's clock is off the database's; leases use the database's time", {
        offset_ms: offset,
        uncertainty_ms: Math.round(this.#uncertainty),
      })
    }
    return this.reading()
  }
}
