import type { ApiClient } from '../client.js'
import type { CommandContext } from '../context.js'
import { ApiError, CliError } from '../errors.js'
import { type CheckResult, safeMessage } from './check.js'
import { NETWORK_TIMEOUT_MS } from './http.js'

/** How many of the newest runs the check reads (the most `GET /api/cron/runs` returns). */
const RUNS_READ = 200
/** Jobs whose last delivery failed, read beyond the newest runs (a busy server's 200 runs are minutes). */
const FAILING_JOBS_READ = 20
/** Runs read per such job to find the failed delivery's target and reason. */
const RUNS_PER_FAILING_JOB = 20

/** What the check reads of a run's delivery row. */
interface DeliveryView {
  readonly target: string
  readonly status: string
  readonly attempts?: number
  readonly next_attempt_at?: string | null
  readonly last_error?: string | null
}

/** What the check reads of a run as `GET /api/cron/runs` lists it (cron_history's view). */
interface RunView {
  readonly id: string
  readonly job_name: string
  readonly delivery_status: string
  readonly deliveries?: readonly DeliveryView[]
}

/** What the check reads of `GET /api/cron/jobs?delivery_failed=true` (cron_list's view). */
interface FailingJobsView {
  readonly jobs: readonly { readonly id: string; readonly name: string }[]
  readonly total?: number
}

/** What the check reads of `GET /api/alerts`. */
interface AlertsView {
  readonly targets: readonly string[]
  readonly failing: boolean
  readonly last_error: string | null
}

/**
 * Deliveries and alerts, as the running server has them: of the newest {@link RUNS_READ} cron runs,
 * those whose result still waits for a retry (`pending`) and those that did not reach a target
 * (`failed`), each target with its reason; every job whose last delivery failed however long ago
 * (`delivery_failed`), with its newest failed row; and whether the operator's alerts
 * (`alerts.deliver_to`) get through. Warnings, never failures: the server runs.
 */
export async function checkDeliveries(context: CommandContext): Promise<CheckResult> {
  const name = 'deliveries'
  let client: ApiClient
  try {
    client = await context.client()
  } catch (error) {
    return {
      name,
      status: 'warn',
      message: `not checked: ${CliError.is(error) ? error.message : 'no server address (the configuration does not load)'}`,
    }
  }
  let runs: readonly RunView[]
  let alerts: AlertsView
  let failingJobs: FailingJobsView
  let olderRuns: readonly RunView[] = []
  try {
    const [history, alertStatus, failing] = await Promise.all([
      client.get<{ entries: RunView[] }>(`/api/cron/runs?limit=${RUNS_READ}`, {
        timeoutMs: NETWORK_TIMEOUT_MS,
      }),
      client.get<AlertsView>('/api/alerts', { timeoutMs: NETWORK_TIMEOUT_MS }),
      client.get<FailingJobsView>(`/api/cron/jobs?delivery_failed=true&limit=${FAILING_JOBS_READ}`, {
        timeoutMs: NETWORK_TIMEOUT_MS,
      }),
    ])
    runs = history.entries
    alerts = alertStatus
    failingJobs = failing
    // A job whose failed delivery is older than the newest runs: read its own runs for the reason.
    const seen = new Set(
      runs.filter((run) => run.deliveries?.some((row) => row.status === 'failed')).map((run) => run.job_name),
    )
    const unseen = failing.jobs.filter((job) => !seen.has(job.name))
    const read = new Set(runs.map((run) => run.id))
    olderRuns = (
      await Promise.all(
        unseen.map((job) =>
          client.get<{ entries: RunView[] }>(
            `/api/cron/runs?job=${encodeURIComponent(job.id)}&limit=${RUNS_PER_FAILING_JOB}`,
            { timeoutMs: NETWORK_TIMEOUT_MS },
          ),
        ),
      )
    ).flatMap((jobHistory) => {
      const newestFailed = jobHistory.entries.find(
        (run) => !read.has(run.id) && run.deliveries?.some((row) => row.status === 'failed'),
      )
      return newestFailed === undefined ? [] : [newestFailed]
    })
  } catch (error) {
    return {
      name,
      status: 'warn',
      message: `not checked: the server does not answer (${
        CliError.is(error) || ApiError.is(error) ? error.message : safeMessage(error)
      })`,
    }
  }
  const rows = (status: string) =>
    [...runs, ...(status === 'failed' ? olderRuns : [])].flatMap((run) =>
      (run.deliveries ?? [])
        .filter((row) => row.status === status)
        .map((row) => ({ run: run.id, job: run.job_name, ...row })),
    )
  const pending = rows('pending')
  const failed = rows('failed')
  const alertsLine =
    alerts.targets.length === 0
      ? 'alerts: logged only (set alerts.deliver_to to hear about missed runs, paused jobs and failed deliveries)'
      : alerts.failing
        ? `alerts: NOT getting through to ${alerts.targets.join(', ')} (${alerts.last_error ?? 'refused'})`
        : `alerts: go to ${alerts.targets.join(', ')}`
  const failingTotal = failingJobs.total ?? failingJobs.jobs.length
  const older =
    olderRuns.length === 0
      ? ''
      : ` and ${olderRuns.length} older, of the ${failingTotal} job${failingTotal === 1 ? '' : 's'} whose last delivery failed`
  const summary = `${pending.length} waiting for a retry, ${failed.length} failed (of the newest ${runs.length} runs${older}); ${alertsLine}`
  if (pending.length === 0 && failed.length === 0 && !alerts.failing)
    return { name, status: 'ok', message: summary }
  const lines = [summary]
  if (pending.length > 0)
    lines.push(
      `pending: ${pending
        .map(
          (row) =>
            `${row.job} → ${row.target} (attempt ${row.attempts ?? '?'}${row.next_attempt_at ? `, next ${row.next_attempt_at}` : ''}${row.last_error ? `: ${row.last_error}` : ''})`,
        )
        .join(', ')}`,
    )
  if (failed.length > 0)
    lines.push(
      `failed: ${failed.map((row) => `${row.job} → ${row.target} (${row.last_error ?? 'failed'})`).join(', ')}`,
    )
  const fixes: string[] = []
  if (failed.length > 0 || pending.length > 0)
    fixes.push(
      "fix the target or the channel's configuration (lango doctor's channels check), then `lango cron trigger <name>`",
    )
  if (alerts.failing)
    fixes.push('check the channel named in alerts.deliver_to (`GET /api/alerts` has the last error)')
  return {
    name,
    status: 'warn',
    message: lines.join('\n'),
    fix: fixes.join('; '),
    details: {
      pending: pending.map(({ run, job, target, attempts, next_attempt_at }) => ({
        run,
        job,
        target,
        attempts,
        next_attempt_at,
      })),
      failed: failed.map(({ run, job, target, last_error }) => ({ run, job, target, last_error })),
      alerts: { targets: alerts.targets, failing: alerts.failing },
    },
  }
}
