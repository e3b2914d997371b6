import type { ApiClient } from '../client.js'
import type { CommandContext } from '../context.js'
import { ApiError, CliError } from '../errors.js'
import { type CheckResult, safeMessage } from './check.js'
import { NETWORK_TIMEOUT_MS } from './http.js'

/**
 * An enabled job whose next run is further in the past than this did not fire: the scheduler fires
 * a due job within milliseconds (or its jitter, at most a minute) and writes its next run at once.
 */
const OVERDUE_AFTER_MS = 5 * 60_000

/** A job whose last this many runs failed (or timed out) in a row is listed. */
const FAILING_RUNS = 3

/** What the check reads of a job as `GET /api/cron/jobs` lists it (cron_list's view). */
interface JobView {
  readonly name: string
  readonly enabled: boolean
  readonly next_run_at: string | null
  readonly last_status: string | null
  readonly consecutive_failures?: number
  readonly pause_reason: string | null
}

/**
 * The cron jobs, as the server lists them: enabled jobs whose next run is more than
 * {@link OVERDUE_AFTER_MS} in the past (the scheduler stalled or is not running), and jobs whose
 * last {@link FAILING_RUNS} runs or more failed in a row. Both are warnings naming the jobs.
 */
export async function checkCronJobs(context: CommandContext): Promise<CheckResult> {
  let client: ApiClient
  try {
    client = await context.client()
  } catch (error) {
    return {
      name: 'cron jobs',
      status: 'warn',
      message: `not checked: ${CliError.is(error) ? error.message : 'no server address (the configuration does not load)'}`,
    }
  }
  let jobs: readonly JobView[]
  try {
    jobs = (await client.get<{ jobs: JobView[] }>('/api/cron/jobs', { timeoutMs: NETWORK_TIMEOUT_MS })).jobs
  } catch (error) {
    return {
      name: 'cron jobs',
      status: 'warn',
      message: `not checked: the server does not list them (${
        CliError.is(error) || ApiError.is(error) ? error.message : safeMessage(error)
      })`,
    }
  }
  const now = Date.now()
  const overdue = jobs.filter((job) => {
    if (!job.enabled || job.next_run_at === null) return false
    return now - Date.parse(job.next_run_at) > OVERDUE_AFTER_MS
  })
  // Also a job the scheduler paused for failing (`cron.max_consecutive_failures` may be below
  // FAILING_RUNS): paused jobs run no more, so they are the ones an operator must hear about.
  const failing = jobs.filter(
    (job) => (job.consecutive_failures ?? 0) >= FAILING_RUNS || (pausedForFailing(job) && !job.enabled),
  )
  const count = `${jobs.length} job${jobs.length === 1 ? '' : 's'}`
  if (overdue.length === 0 && failing.length === 0)
    return {
      name: 'cron jobs',
      status: 'ok',
      message: `${count}; none overdue, none failing ${FAILING_RUNS} times in a row`,
    }
  const lines = [`${count}; ${overdue.length} overdue, ${failing.length} failing in a row`]
  const fixes: string[] = []
  if (overdue.length > 0) {
    lines.push(
      `next run in the past: ${overdue
        .map(
          (job) =>
            `${job.name} (due ${job.next_run_at}, ${lateBy(now - Date.parse(job.next_run_at ?? ''))} ago)`,
        )
        .join(', ')}`,
    )
    fixes.push(
      'overdue jobs did not fire: check the server runs with cron enabled and `/healthz` shows `scheduler_tick.stale: false`; its log says why',
    )
  }
  if (failing.length > 0) {
    lines.push(
      `failing in a row: ${failing
        .map(
          (job) =>
            `${job.name} (${job.consecutive_failures} runs, last ${job.last_status ?? '?'}${job.pause_reason === null ? '' : ', paused'})`,
        )
        .join(', ')}`,
    )
    fixes.push(
      'read the errors with `lango cron history <name>`, fix the job, then `lango cron resume <name>`',
    )
  }
  return {
    name: 'cron jobs',
    status: 'warn',
    message: lines.join('\n'),
    fix: fixes.join('; '),
    details: {
      overdue: overdue.map((job) => ({ name: job.name, next_run_at: job.next_run_at })),
      failing: failing.map((job) => ({
        name: job.name,
        consecutive_failures: job.consecutive_failures,
        last_status: job.last_status,
        paused: job.pause_reason !== null,
      })),
    },
  }
}

/** Paused by the scheduler, not by a person: the reason is its own (`… failed N times in a row`). */
function pausedForFailing(job: JobView): boolean {
  return (
    job.pause_reason !== null &&
    job.pause_reason !== 'paused by request' &&
    job.pause_reason !== 'created disabled' &&
    (job.consecutive_failures ?? 0) > 0
  )
}

/** `3m`, `2h`, `4d`: how late, roughly. */
function lateBy(ms: number): string {
  const minutes = Math.floor(ms / 60_000)
  if (minutes < 120) return `${minutes}m`
  const hours = Math.floor(minutes / 60)
  return hours < 48 ? `${hours}h` : `${Math.floor(hours / 24)}d`
}
