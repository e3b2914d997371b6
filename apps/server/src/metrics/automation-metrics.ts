import type { BackgroundManager } from '@lango/background'
import type { CronService } from '@lango/cron'
import type { WorkflowEngine } from '@lango/workflow'
import { Counter, Histogram, type Registry } from 'prom-client'
import { RecentLabels } from './recent-labels.js'
import { skipReasonKind } from './skip-reasons.js'

/**
 * Buckets of `lango_cron_fire_lateness_seconds`: a healthy scheduler fires within milliseconds
 * (ADR 0009: p99 ≤ 10 ms); the upper buckets catch a blocked event loop or a suspended host.
 */
const FIRE_LATENESS_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
]

/**
 * Job names with series at once: twice the default `cron.max_jobs`, so every job of a server at its
 * limit keeps its series, with room for jobs created on other servers of a cluster.
 */
const MAX_JOB_NAMES = 1000

/** The run statuses of a job whose series exist from when the job is first seen: what alerts watch. */
const SEEDED_RUN_STATUSES = ['completed', 'failed', 'timed_out', 'interrupted'] as const

/** Workflow names with series at once: an inline workflow's name is whatever its caller wrote. */
const MAX_WORKFLOW_NAMES = 200

/**
 * Counts what cron, background and workflow do, from their events: runs by job, kind and status,
 * each fire's lateness, skipped occurrences by the kind of their reason, and each cron run's
 * delivery outcome. Labels are names and statuses, never a prompt, a command or a result.
 */
export function recordAutomation(
  registry: Registry,
  services: {
    readonly cron: CronService
    readonly engine: WorkflowEngine
    readonly background: BackgroundManager
  },
): void {
  const registers = [registry]
  const cronRuns = new Counter({
    name: 'lango_cron_runs_total',
    help: 'Cron runs that ended, by job, kind (ai, shell) and final status (completed, failed, timed_out, cancelled, interrupted).',
    labelNames: ['job', 'kind', 'status'] as const,
    registers,
  })
  const lateness = new Histogram({
    name: 'lango_cron_fire_lateness_seconds',
    help: 'Time from an occurrence being due to the scheduler starting or queueing it, by trigger (schedule, catchup).',
    labelNames: ['trigger'] as const,
    buckets: FIRE_LATENESS_BUCKETS,
    registers,
  })
  const skipped = new Counter({
    name: 'lango_cron_skipped_total',
    help: 'Cron occurrences recorded skipped, by job and reason (missed, overlap, queue_full, budget, paused, stopped, other).',
    labelNames: ['job', 'reason'] as const,
    registers,
  })
  const deliveries = new Counter({
    name: 'lango_cron_deliveries_total',
    help: 'Final outcomes of delivering cron results, one per run and target (the delivery ledger), by job and status (delivered, failed).',
    labelNames: ['job', 'status'] as const,
    registers,
  })
  const tasks = new Counter({
    name: 'lango_background_tasks_total',
    help: 'Background tasks that ended, by final status (done, failed, cancelled).',
    labelNames: ['status'] as const,
    registers,
  })
  const workflowRuns = new Counter({
    name: 'lango_workflow_runs_total',
    help: 'Workflow runs that ended on this server, by workflow and final status (completed, failed, cancelled).',
    labelNames: ['workflow', 'status'] as const,
    registers,
  })

  // Series without a per-name label exist from the first scrape, at 0 (see alert-metrics.ts).
  for (const status of ['done', 'failed', 'cancelled'] as const) tasks.inc({ status }, 0)
  const { cron, engine, background } = services
  // Names come and go (jobs removed or renamed here or on another server, a name per inline
  // workflow): the exposition keeps the most recently used ones, never every name a server saw (an
  // outside probe counted 120 series of 60 deleted jobs).
  const jobNames = new RecentLabels('job', MAX_JOB_NAMES, [cronRuns, skipped, deliveries])
  const workflowNames = new RecentLabels('workflow', MAX_WORKFLOW_NAMES, [workflowRuns])
  /** The name each job's series are under, to forget an old name once a job is renamed. */
  const nameOf = new Map<string, string>()
  /** Jobs whose series an operator alerts on exist at 0 under their current name (a subset of `nameOf`). */
  const seeded = new Set<string>()
  const job = (id: string, name: string): string => {
    const before = nameOf.get(id)
    if (before !== undefined && before !== name) {
      jobNames.forget(before)
      seeded.delete(id)
    }
    nameOf.delete(id)
    nameOf.set(id, name)
    if (nameOf.size > MAX_JOB_NAMES) {
      const oldest = nameOf.keys().next().value as string
      nameOf.delete(oldest)
      seeded.delete(oldest)
    }
    return jobNames.use(name)
  }
  /**
   * A job's series that alerts are written on, at 0 from when the job is first seen (created, loaded
   * at start, changed, a run started): a series that first appears at 1 is no increase to
   * `increase()` and `rate()`, so an alert on a job's first failure would never fire (an outside
   * probe found per-job counters did). Only these: every status and reason of every job would
   * multiply the series for nothing.
   */
  const seed = (known: { readonly id: string; readonly name: string; readonly kind: string }): void => {
    const label = job(known.id, known.name)
    if (seeded.has(known.id)) return
    seeded.add(known.id)
    for (const status of SEEDED_RUN_STATUSES) cronRuns.inc({ job: label, kind: known.kind, status }, 0)
    skipped.inc({ job: label, reason: 'missed' }, 0)
    for (const status of ['delivered', 'failed'] as const) deliveries.inc({ job: label, status }, 0)
  }
  // The jobs there are at start (those made on another server are seeded when first seen here).
  void cron.list({ limit: MAX_JOB_NAMES }).then(
    (jobs) => {
      for (const known of jobs) seed(known)
    },
    () => undefined,
  )
  cron.on('run:start', ({ job: started }) => seed(started))
  cron.on('run:end', ({ job: ended, run }) => {
    seed(ended)
    // A run that skipped itself (its day's budget spent, its `when` gate said no) is a skip, with the
    // occurrences skipped before they ran: where an alert on `reason="budget"` looks.
    if (run.status === 'skipped')
      skipped.inc({ job: job(ended.id, ended.name), reason: skipReasonKind(run.skipReason) })
    else cronRuns.inc({ job: job(ended.id, ended.name), kind: ended.kind, status: run.status })
  })
  // Each target's final outcome (a run's delivery may end after the run, once its retries are done).
  cron.on('delivery:end', ({ job: delivered, status, final }) => {
    if (final && status !== 'retrying') deliveries.inc({ job: job(delivered.id, delivered.name), status })
  })
  cron.on('schedule:fire', (fire) => {
    if (fire.outcome === 'skipped')
      skipped.inc({ job: job(fire.jobId, fire.jobName), reason: skipReasonKind(fire.reason) })
    // A manual trigger is due when asked for: its lateness says nothing about the scheduler.
    else if ((fire.outcome === 'started' || fire.outcome === 'queued') && fire.trigger !== 'manual')
      lateness.observe({ trigger: fire.trigger }, Math.max(0, fire.firedAt - fire.scheduledFor) / 1000)
  })
  cron.on('job:change', ({ job: changed, change }) => {
    if (change !== 'removed') {
      seed(changed)
      return
    }
    nameOf.delete(changed.id)
    seeded.delete(changed.id)
    jobNames.forget(changed.name)
  })
  background.on('task:end', (task) => tasks.inc({ status: task.status }))
  // A workflow's series at 0 from its first run's start, before that run can end (see `seed`).
  engine.on('run:start', (run) => {
    const workflow = workflowNames.use(run.workflowName)
    for (const status of ['completed', 'failed'] as const) workflowRuns.inc({ workflow, status }, 0)
  })
  engine.on('run:end', (run) =>
    workflowRuns.inc({ workflow: workflowNames.use(run.workflowName), status: run.status }),
  )
}
