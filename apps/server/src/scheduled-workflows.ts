import type { CronJob, CronService, ShellRunner as CronShellRunner } from '@lango/cron'
import type { WorkflowDirectory, WorkflowEngine, ShellRunner as WorkflowShellRunner } from '@lango/workflow'
import type { Logger } from './logger.js'

/**
 * The `createdBy` of the cron jobs the server keeps for saved workflows with a `schedule`. No chat
 * produces it (session keys are `<channel>:<chat>:<user>`, `http`, `mcp`), so an agent cannot make
 * a shell job that the server would take for a workflow.
 */
const WORKFLOW_SCHEDULER = 'lango:workflow-schedule'
/** Cron job name of a saved workflow's schedule: `workflow.<name>` (cron names allow dots). */
const PREFIX = 'workflow.'
const MAX_CRON_NAME = 64

/** The cron job name for a saved workflow, or undefined when the name is too long to schedule. */
function cronJobNameFor(workflowName: string): string | undefined {
  const name = `${PREFIX}${workflowName}`
  return name.length <= MAX_CRON_NAME ? name : undefined
}

/** False for a cron job name that cannot belong to a saved workflow's schedule (no lookup needed). */
function mayBeScheduledWorkflow(jobName: string): boolean {
  return jobName.startsWith(PREFIX)
}

/** The workflow a cron job runs, when the server made it for a saved workflow's schedule. */
function scheduledWorkflowOf(job: Pick<CronJob, 'name' | 'createdBy'>): string | undefined {
  return job.createdBy === WORKFLOW_SCHEDULER && mayBeScheduledWorkflow(job.name)
    ? job.name.slice(PREFIX.length)
    : undefined
}

/**
 * What the shell job of a scheduled workflow shows as its command. The server runs the workflow
 * instead; should the command itself ever run, it fails saying why (it never passes for a run).
 */
function placeholderCommand(workflowName: string): string {
  return `echo 'lango: this job runs the saved workflow ${workflowName}, which the server did not resolve' >&2; exit 1`
}

/**
 * Keeps cron in step with the saved workflows: each `*.flow.yaml` with a `schedule` has one cron
 * job `workflow.<name>` (created, or updated when its schedule, zone or targets changed), and the
 * jobs of workflows that were removed or lost their schedule are removed. Runs of those jobs go to
 * the workflow engine ({@link runScheduledWorkflow}), so they show in cron history and workflow
 * runs both. A file that does not load is logged and left alone (its job, if any, stays).
 */
export async function syncScheduledWorkflows(
  cron: CronService,
  directory: WorkflowDirectory,
  logger: Logger,
): Promise<{ readonly registered: readonly string[]; readonly removed: readonly string[] }> {
  const wanted = new Map<string, { schedule: string; timezone?: string; deliverTo?: readonly string[] }>()
  const unreadable = new Set<string>()
  for (const name of await directory.list()) {
    try {
      const { workflow } = await directory.read(name)
      const { schedule, timezone, deliverTo } = workflow.definition
      if (schedule === undefined) continue
      if (cronJobNameFor(name) === undefined) {
        logger.warn('saved workflow not scheduled: its name is too long for a cron job', { workflow: name })
        continue
      }
      wanted.set(name, {
        schedule,
        ...(timezone === undefined ? {} : { timezone }),
        ...(deliverTo === undefined ? {} : { deliverTo }),
      })
    } catch (error) {
      unreadable.add(name)
      logger.warn('saved workflow could not be read; its schedule is left as it was', {
        workflow: name,
        error,
      })
    }
  }
  const existing = await scheduledWorkflowJobs(cron)
  const registered: string[] = []
  const removed: string[] = []
  for (const [name, want] of wanted) {
    const job = existing.get(name)
    const same =
      job !== undefined &&
      job.schedule === want.schedule &&
      job.command === placeholderCommand(name) &&
      (want.timezone === undefined || job.timezone === want.timezone) &&
      JSON.stringify(job.deliverTo) === JSON.stringify(want.deliverTo ?? [])
    if (same) continue
    try {
      await cron.add({
        name: cronJobNameFor(name) as string,
        kind: 'shell',
        scheduleType: 'cron',
        schedule: want.schedule,
        ...(want.timezone === undefined ? {} : { timezone: want.timezone }),
        command: placeholderCommand(name),
        deliverTo: [...(want.deliverTo ?? [])],
        createdBy: WORKFLOW_SCHEDULER,
        // A workflow bounds its own run (run timeout); the job's timeout is the cron maximum.
        timeout: '2h',
      })
      registered.push(name)
    } catch (error) {
      logger.warn('saved workflow schedule rejected by cron', { workflow: name, error })
    }
  }
  for (const [name, job] of existing) {
    if (wanted.has(name) || unreadable.has(name)) continue
    await cron.remove(job.id)
    removed.push(name)
  }
  return { registered, removed }
}

/**
 * Runs a scheduled workflow for its cron job: starts a run of the saved file, waits for it (the
 * cron run's signal cancels it) and reports it as a shell result would — exit 0 when it completed,
 * 1 otherwise — with the run id and per-step outcome as output.
 */
async function runScheduledWorkflow(
  engine: WorkflowEngine,
  directory: WorkflowDirectory,
  workflowName: string,
  cronRun: { readonly jobName: string; readonly runId: string },
  signal: AbortSignal,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const { workflow } = await directory.read(workflowName, { signal })
  const { runId } = await engine.startRun(workflow, {
    originSession: `cron:${cronRun.jobName}:${cronRun.runId}`,
    deliverTo: workflow.definition.deliverTo ?? [],
  })
  const onAbort = (): void => {
    engine.cancelRun(runId).catch(() => {})
  }
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    const run = await engine.waitForRun(runId)
    const lines = [
      `workflow ${workflowName} run ${runId}: ${run.status}`,
      ...run.steps.map(
        (step) => `- ${step.stepId}: ${step.status}${step.error === null ? '' : ` (${step.error})`}`,
      ),
    ]
    return run.status === 'completed'
      ? { exitCode: 0, stdout: `${lines.join('\n')}\n`, stderr: '' }
      : { exitCode: 1, stdout: `${lines.join('\n')}\n`, stderr: run.error ?? run.status }
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

/** A saved workflow's schedule as `GET /api/workflows/saved` shows it: the cron job that runs it. */
interface SavedWorkflowSchedule {
  readonly job_id: string
  readonly schedule_type: CronJob['scheduleType']
  readonly schedule: string
  readonly timezone: string
  readonly enabled: boolean
  readonly next_run_at: string | null
  readonly last_status: CronJob['lastStatus']
}

/** The schedules of the saved workflows that have one, by workflow name (from their cron jobs). */
export async function savedWorkflowSchedules(
  cron: CronService,
): Promise<Record<string, SavedWorkflowSchedule>> {
  const schedules: Record<string, SavedWorkflowSchedule> = {}
  for (const [workflow, job] of await scheduledWorkflowJobs(cron)) {
    schedules[workflow] = {
      job_id: job.id,
      schedule_type: job.scheduleType,
      schedule: job.schedule,
      timezone: job.timezone,
      enabled: job.enabled,
      next_run_at: job.nextRunAt === null ? null : new Date(job.nextRunAt).toISOString(),
      last_status: job.lastStatus,
    }
  }
  return schedules
}

/**
 * The cron jobs this module keeps for saved workflows, by workflow name. Only the jobs it created
 * are read: a list of every job would decode thousands of rows.
 */
async function scheduledWorkflowJobs(cron: CronService): Promise<Map<string, CronJob>> {
  const jobs = new Map<string, CronJob>()
  for (const job of await cron.list({ createdBy: WORKFLOW_SCHEDULER })) {
    const workflow = scheduledWorkflowOf(job)
    if (workflow !== undefined) jobs.set(workflow, job)
  }
  return jobs
}

/** One shell runner for cron jobs and workflow steps (ADR 0006): the request is either's. */
export interface HostShellRunner {
  run(
    request: Parameters<CronShellRunner['run']>[0] | Parameters<WorkflowShellRunner['run']>[0],
    options: { readonly signal: AbortSignal },
  ): ReturnType<CronShellRunner['run']>
}

/**
 * `next`, except for the cron jobs of saved workflows' schedules, which run their workflow
 * ({@link runScheduledWorkflow}). Whether a job named `workflow.<name>` is one is read from the
 * store; an error there fails the run with its reason (issue 21: it was taken for "not a scheduled
 * workflow", and the placeholder command passed).
 */
export function dispatchScheduledWorkflows(options: {
  readonly jobs: Pick<CronService, 'get'>
  readonly engine: () => WorkflowEngine | undefined
  readonly directory: WorkflowDirectory
  readonly next: HostShellRunner
}): HostShellRunner {
  const { jobs, engine, directory, next } = options
  return {
    async run(request, { signal }) {
      const running = engine()
      if (!('jobName' in request) || !mayBeScheduledWorkflow(request.jobName) || running === undefined)
        return next.run(request, { signal })
      let job: CronJob
      try {
        job = await jobs.get(request.jobName, { signal })
      } catch (error) {
        throw new Error(
          `the cron job ${request.jobName} could not be read to find its saved workflow: ${(error as Error).message}`,
          { cause: error },
        )
      }
      const workflow = scheduledWorkflowOf(job)
      if (workflow === undefined) return next.run(request, { signal })
      return runScheduledWorkflow(
        running,
        directory,
        workflow,
        { jobName: request.jobName, runId: request.runId },
        signal,
      )
    },
  }
}
