import { type Clock, CronError } from '@lango/cron'
import { WorkflowError } from '@lango/workflow'
import type { Logger } from '../logger-port.js'
import type { Alerts } from './alerts.js'

/** The parts whose store calls an outage is told from. */
export type DatabaseUser = 'the cron scheduler' | 'the workflow engine' | 'the instance heartbeat'

/** Options of {@link DatabaseOutage}. */
export interface DatabaseOutageOptions {
  readonly clock: Clock
  readonly logger: Logger
  /**
   * The outage ends at the first heartbeat written once nothing failed for this long
   * (`cluster.lease`): a part whose store calls keep failing while the heartbeat is written is one
   * outage, not an outage and a recovery each time it fails.
   */
  readonly quietMs: number
  /** While the outage lasts, its failures are logged once per this long, with their count. Default 1 minute. */
  readonly logEveryMs?: number
}

/**
 * One outage of the database (a full disk, a read-only file or replica, a lock held too long), as
 * the cron scheduler's and the workflow engine's failed store calls and the instance heartbeat
 * tell it: the first failure raises `database_failing` at once; the next ones, however many, are
 * counted and logged once a minute, never sent; the first heartbeat written after `quietMs` without
 * a failure raises `database_recovered`, once, saying from when to when it failed and how often.
 * A failure after that is a new outage, told again: unlike the quiet kinds, an outage is not held
 * back for ten minutes (its end was told, so a new one is news).
 */
export class DatabaseOutage {
  readonly #alerts: Alerts
  readonly #options: DatabaseOutageOptions
  #outage:
    | {
        readonly since: number
        failures: number
        lastFailureAt: number
        lastError: string
        loggedAt: number
        loggedFailures: number
      }
    | undefined

  constructor(alerts: Alerts, options: DatabaseOutageOptions) {
    this.#alerts = alerts
    this.#options = options
  }

  /** A store call of `who` failed with `reason` (the database's message). */
  failed(who: DatabaseUser, reason: string): void {
    // A driver's message can run long (a statement, a stack of causes): one line of it.
    const line = reason.replace(/\s+/g, ' ').trim()
    const error = line.length > 300 ? `${line.slice(0, 300)}…` : line
    const now = this.#now()
    const outage = this.#outage
    if (outage === undefined) {
      this.#outage = {
        since: now,
        failures: 1,
        lastFailureAt: now,
        lastError: error,
        loggedAt: now,
        loggedFailures: 1,
      }
      this.#alerts.raise({
        kind: 'database_failing',
        key: 'database',
        text: `a store call of ${who} failed at ${iso(now)}: ${error}; occurrences due while the database fails may not run or leave no run row, and /healthz answers 503 while the heartbeat cannot be written; another alert says when it takes writes again`,
      })
      return
    }
    outage.failures++
    outage.lastFailureAt = now
    outage.lastError = error
    if (now - outage.loggedAt < (this.#options.logEveryMs ?? 60_000)) return
    this.#options.logger.warn('the database is still failing', {
      failures: outage.failures - outage.loggedFailures,
      sinceMs: now - outage.since,
      error,
    })
    outage.loggedAt = now
    outage.loggedFailures = outage.failures
  }

  /** The instance heartbeat was written: the end of the outage, once nothing failed for `quietMs`. */
  written(): void {
    const outage = this.#outage
    if (outage === undefined) return
    const now = this.#now()
    if (now - outage.lastFailureAt < this.#options.quietMs) return
    this.#outage = undefined
    this.#alerts.raise({
      kind: 'database_recovered',
      key: 'database',
      text: `the database takes writes again: store calls failed from ${iso(outage.since)} to ${iso(outage.lastFailureAt)} (${outage.failures} ${outage.failures === 1 ? 'failure' : 'failures'}, the last: ${outage.lastError}); lango cron history <name> shows what ran meanwhile`,
    })
  }

  #now(): number {
    return this.#options.clock.now().getTime()
  }
}

/**
 * Whether a cron scheduler's `run:error` is a failed store call (the database's error, or a stored
 * row it cannot read), not a run that failed or timed out or an input it refused.
 */
export function isCronStoreFailure(error: Error): boolean {
  return !CronError.is(error) || error.code.startsWith('CRON_STORE_')
}

/**
 * Whether a workflow engine's `run:error` is a failed store call: the database's error, or the
 * engine's `WORKFLOW_OWNERSHIP_LOST` caused by one, not a lease another engine took over. The
 * reason told is the database's.
 */
export function workflowStoreFailure(error: Error): string | undefined {
  const cause = WorkflowError.is(error) && error.cause instanceof Error ? error.cause : error
  if (WorkflowError.is(cause) && !cause.code.startsWith('WORKFLOW_STORE_')) return undefined
  return cause.message
}

function iso(ms: number): string {
  return new Date(ms).toISOString()
}
