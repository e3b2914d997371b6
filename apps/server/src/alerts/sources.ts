import type { CronRun, CronService } from '@lango/cron'
import type { WorkflowEngine } from '@lango/workflow'
import type { UsageRecord } from '../agent/index.js'
import type { InstanceRegistry, LostInstance } from '../cluster/instances.js'
import type { SingletonDuties } from '../cluster/leases.js'
import { formatDuration } from '../config/rules.js'
import { skipReasonKind } from '../metrics/skip-reasons.js'
import type { Alert, Alerts } from './alerts.js'
import { type DatabaseOutage, isCronStoreFailure, workflowStoreFailure } from './database-outage.js'

/** What raises alerts: the parts {@link watchForAlerts} listens to. */
interface AlertSources {
  readonly cron: CronService
  readonly engine: Pick<WorkflowEngine, 'on'>
  readonly duties: SingletonDuties
  readonly instances: Pick<InstanceRegistry, 'id' | 'onHeartbeat' | 'onLost'>
  /** Told of every failed store call and heartbeat: one alert per outage of the database, and its end. */
  readonly outage: DatabaseOutage
}

/**
 * Raises an alert for each thing an operator must hear about: the cron scheduler stalled (its
 * watchdog saw its timers more than a lease late), an occurrence missed (recorded `skipped` with a
 * `missed …` reason), a job paused by the scheduler (consecutive failures), a delivery that failed
 * for good (after its last retry, or at once when the channel refused it; a workflow's, run or step
 * result, at its one attempt), a lease this server held lost, the database failing (a store call
 * of the cron scheduler or the workflow engine, or the instance heartbeat, failed) and working
 * again, another server taken for dead (its heartbeat older than its lease; told by the one server
 * that removed its row), and runs a dead server left (its cron runs this server's scheduler marked
 * `interrupted`, one line per dead server; a workflow run this server's engine took over and
 * resumed, one line per workflow). Returns the function that stops listening.
 */
export function watchForAlerts(alerts: Alerts, sources: AlertSources): () => void {
  const { cron, engine, duties, instances, outage } = sources
  const self = instances.id
  const stops = [
    instances.onLost((lost) => {
      for (const instance of lost) alerts.raise(serverLostAlert(instance, self))
    }),
    // One line per dead server: its runs this scheduler marked in one round.
    cron.on('run:interrupted', ({ runs }) => {
      const byOwner = new Map<string, CronRun[]>()
      for (const run of runs) {
        const owner = run.owner ?? 'unknown'
        byOwner.set(owner, [...(byOwner.get(owner) ?? []), run])
      }
      for (const [owner, owned] of byOwner)
        alerts.raise({
          kind: 'runs_interrupted',
          key: `cron\u0000${owner}`,
          text: `server ${owner} stopped while running ${describeRuns(owned)}: marked interrupted by this server (${self}); an interrupted cron run is not retried: a recurring job's next occurrence runs as scheduled, a one-time (at) job does not run again (lango cron trigger <name> runs one now)`,
        })
    }),
    // A workflow run another server (or this one, its lease lost) left: resumed here from its steps.
    engine.on('run:start', ({ runId, workflowName, resumed }) => {
      if (!resumed) return
      alerts.raise({
        kind: 'runs_interrupted',
        key: `workflow\u0000${workflowName}`,
        text: `workflow ${workflowName}: run ${runId} was left by the server running it (stopped, killed, or its lease expired) and is resumed by this server (${self}) from its recorded steps; steps that had not finished run again (workflow_status shows it)`,
      })
    }),
    // A store call the scheduler failed and survived (an occurrence due then may leave no run row);
    // a run that failed or timed out is the run's own record, not the database's.
    cron.on('run:error', ({ error }) => {
      if (isCronStoreFailure(error)) outage.failed('the cron scheduler', error.message)
    }),
    engine.on('run:error', ({ error }) => {
      const reason = workflowStoreFailure(error)
      if (reason !== undefined) outage.failed('the workflow engine', reason)
    }),
    instances.onHeartbeat((beat) => {
      if (beat.written) outage.written()
      else outage.failed('the instance heartbeat', beat.error)
    }),
    cron.on('scheduler:stall', (stall) => {
      const cause = {
        store: 'the database did not answer (its heartbeat and upkeep waited on it)',
        blocked: 'its event loop was blocked or the process was suspended',
        clock: 'the clock jumped forward or the host was suspended (its monotonic clock did not run)',
      }[stall.cause]
      alerts.raise({
        kind: 'scheduler_stalled',
        key: 'scheduler',
        text: `the cron scheduler's timers were ${formatDuration(stall.stalledMs)} late (from ${iso(stall.since)} to ${iso(stall.resumedAt)}): ${cause}; what came due meanwhile was run or recorded as missed`,
      })
    }),
    cron.on('schedule:fire', (fire) => {
      if (fire.outcome !== 'skipped' || skipReasonKind(fire.reason) !== 'missed') return
      alerts.raise({
        kind: 'missed_runs',
        key: fire.jobId,
        text: `job ${fire.jobName}: the occurrence due ${iso(fire.scheduledFor)} did not run (${fire.reason ?? 'missed'})`,
      })
    }),
    cron.on('delivery:end', (delivery) => {
      if (delivery.status !== 'failed' || !delivery.final) return
      alerts.raise({
        kind: 'delivery_failed',
        key: `${delivery.job.id}\u0000${delivery.target}`,
        text: `job ${delivery.job.name}: the result of run ${delivery.run.id} did not reach ${delivery.target} after ${delivery.attempt} ${delivery.attempt === 1 ? 'attempt' : 'attempts'} (${delivery.error ?? 'failed'}); it is in the run's history`,
      })
    }),
    // A workflow's delivery is not retried: each failure is final. Keyed like a job's, by workflow
    // and target, so one workflow failing every run is one line with a count.
    engine.on('delivery:error', (delivery) => {
      const what =
        delivery.stepId === undefined
          ? `the result of run ${delivery.runId}`
          : `the result of step ${delivery.stepId} of run ${delivery.runId}`
      alerts.raise({
        kind: 'delivery_failed',
        key: `workflow\u0000${delivery.workflowName}\u0000${delivery.target}`,
        text: `workflow ${delivery.workflowName}: ${what} did not reach ${delivery.target} (${workflowDeliveryReason(delivery.error)}); it is in the run's record (workflow_status)`,
      })
    }),
    cron.on('job:pause', ({ job, reason }) => {
      alerts.raise({
        kind: 'job_paused',
        key: job.id,
        text: `job ${job.name} was paused: ${reason}; resume it once fixed (lango cron resume ${job.name})`,
      })
    }),
    duties.onLoss(({ name, why }) => {
      const what =
        why === 'lost'
          ? 'another server took it over'
          : why === 'unrenewable'
            ? 'it could not be renewed in time (database slow or unreachable, or this process was stalled)'
            : 'its duty failed to start'
      alerts.raise({
        kind: 'lease_lost',
        key: name,
        text: `this server lost the ${name} lease: ${what}`,
      })
    }),
  ]
  return () => {
    for (const stop of stops) stop()
  }
}

/**
 * Why a workflow's delivery failed, in one line: the channel's reason (the engine wraps what the
 * channel threw as its cause), or the engine's own (a timeout). Never the text that was sent.
 */
export function workflowDeliveryReason(error: Error): string {
  return error.cause instanceof Error && error.cause.message !== '' ? error.cause.message : error.message
}

/**
 * The alert of a clean stop that cuts off this server's cron runs (said before the stop, while the
 * channels still send: cron stops after the alerts): which runs, and that they are not retried.
 */
export function stoppingAlert(runs: readonly CronRun[], self: string): Alert {
  return {
    kind: 'runs_interrupted',
    key: `stop\u0000${self}`,
    text: `this server (${self}) is stopping while running ${describeRuns(runs)}: marked interrupted by the stop; an interrupted cron run is not retried: a recurring job's next occurrence runs as scheduled, a one-time (at) job does not run again (lango cron trigger <name> runs one now)`,
  }
}

/** At most this many runs are named in one `runs_interrupted` line; the rest are counted. */
const RUNS_NAMED = 10

/** `job backup (run r1, started …)`, … for a dead server's interrupted cron runs. */
function describeRuns(runs: readonly CronRun[]): string {
  const named = runs
    .slice(0, RUNS_NAMED)
    .map(
      (run) =>
        `job ${run.jobName} (run ${run.id}${run.startedAt === null ? '' : `, started ${iso(run.startedAt)}`})`,
    )
  const more = runs.length > RUNS_NAMED ? ` and ${runs.length - RUNS_NAMED} more` : ''
  return `${runs.length === 1 ? 'cron run' : `${runs.length} cron runs`} ${named.join(', ')}${more}`
}

/**
 * The alert of a server taken for dead: which one, as its registry row said, since when it was
 * silent, and what the survivors take over.
 */
function serverLostAlert(instance: LostInstance, self: string): Alert {
  const silentMs = Math.max(0, Math.round((instance.foundAt - instance.heartbeatAt) / 1000) * 1000)
  return {
    kind: 'server_lost',
    key: instance.id,
    text: `server ${instance.id} (host ${instance.host}, pid ${instance.pid}, version ${instance.version}, started ${iso(instance.startedAt)}) has not written its heartbeat since ${iso(instance.heartbeatAt)} (${formatDuration(silentMs)}, past its ${formatDuration(instance.leaseMs)} lease) and was taken for dead by this server (${self}): it was killed, crashed or lost the database without stopping. Its running cron runs are marked interrupted (not retried), its workflow runs are resumed by a surviving server, and the duties it held (Telegram polling, retention) pass to another server when their leases expire`,
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString()
}

/**
 * The alert of an agent turn its budget stopped or refused: what ran it (the cron job, workflow
 * step, session), which budget (`agent.budget`, a job's, a creator's or the server's day), what it
 * spent. Keyed by the budget and what ran, so a job whose day is spent (refused at every fire until
 * midnight) is one alert and then `×N` repeats held back, not one alert per run. The turn's own
 * error (`AGENT_BUDGET_EXHAUSTED`) is recorded where it ran (the cron run, the background task, the
 * workflow step, the chat's answer).
 */
export function budgetAlert(record: UsageRecord): Alert {
  const tokens = record.usage.inputTokens + record.usage.outputTokens
  const cost = record.costUsd === undefined ? '' : ` ($${record.costUsd.toFixed(4)})`
  const budget = record.budget ?? 'agent.budget'
  const ran =
    record.jobName !== undefined
      ? `cron job ${record.jobName}`
      : record.workflowName !== undefined
        ? `workflow ${record.workflowName}${record.stepId === undefined ? '' : ` step ${record.stepId}`}`
        : record.sessionKey !== undefined
          ? record.sessionKey
          : undefined
  const turn = `an agent turn${ran === undefined ? '' : ` of ${ran}`}${
    record.jobName !== undefined && record.sessionKey !== undefined ? ` (${record.sessionKey})` : ''
  }${record.creator === undefined ? '' : ` for ${record.creator}`}`
  const what =
    record.steps === 0
      ? `was not started: its budget was already spent (${budget}), so no model call was made`
      : `was stopped by its budget (${budget}) after ${record.steps} model calls and ${tokens.toLocaleString('en-US')} tokens${cost} on ${record.model}`
  return {
    kind: 'budget_exhausted',
    key: `${budget}\u0000${record.jobId ?? record.jobName ?? record.workflowName ?? record.sessionKey ?? record.model}`,
    text: `${turn} ${what}`,
  }
}
