import { CronError, type CronJob, type CronService, type ShellRunner as CronShellRunner } from '@lango/cron'
import type {
  LoadedWorkflow,
  WorkflowDirectory,
  WorkflowEngine,
  WorkflowRunSnapshot,
  ShellRunner as WorkflowShellRunner,
} from '@lango/workflow'
import { mayBeScheduledWorkflow, pinnedDigest, scheduledWorkflowOf, workflowDigest } from './jobs.js'

/** What a cron run of a scheduled workflow is: its job (name, overlap policy) and its run. */
interface CronRunOfWorkflow {
  readonly jobName: string
  readonly overlap: CronJob['overlap']
  readonly runId: string
  readonly payload?: string
}

/** The `originSession` of the workflow runs a cron job's runs start: `cron:<job>:<cron run id>`. */
function originOf(jobName: string, cronRunId: string): string {
  return `cron:${jobName}:${cronRunId}`
}

/** Longest report a run delivers (what the engine's own report is cut to). */
const REPORT_LIMIT = 3500

/**
 * The run's report, as the cron job delivers it: the run's status, each step's outcome, then the
 * results of the completed steps nothing depends on (the workflow's outcome), as the engine's own
 * run report says it.
 */
function reportOf(
  workflowName: string,
  run: WorkflowRunSnapshot,
  definition: LoadedWorkflow['definition'] | undefined,
  adopted: string | undefined,
): string {
  const dependedOn = new Set(definition?.steps.flatMap((step) => step.dependsOn) ?? [])
  const sinks = run.steps.filter((step) => step.status === 'completed' && !dependedOn.has(step.stepId))
  const text = [
    `workflow ${workflowName} run ${run.runId}: ${run.status} (${run.completedSteps}/${run.totalSteps} steps completed)`,
    ...(adopted === undefined ? [] : [adopted]),
    ...run.steps.map(
      (step) => `- ${step.stepId}: ${step.status}${step.error === null ? '' : ` (${step.error})`}`,
    ),
    ...sinks.map((step) => `\n${step.stepId}:\n${(step.result ?? '').trimEnd()}`),
  ].join('\n')
  return text.length <= REPORT_LIMIT ? `${text}\n` : `${text.slice(0, REPORT_LIMIT)}\n… [truncated]\n`
}

/**
 * The run of this job's workflow that an earlier cron run started and that is still going without
 * it: that cron run was interrupted (its server was killed or stopped) while the engine resumed the
 * workflow run (here, or on another server). Only jobs that run one occurrence at a time (overlap
 * `skip`, `queue_one`) look for one: cron runs no two of their runs at once, so such a run has no
 * cron run of its own any more.
 */
async function orphanedRunOf(
  engine: WorkflowEngine,
  workflowName: string,
  cronRun: CronRunOfWorkflow,
  signal: AbortSignal,
): Promise<WorkflowRunSnapshot | undefined> {
  if (cronRun.overlap === 'allow') return undefined
  const prefix = originOf(cronRun.jobName, '')
  for (const status of ['running', 'pending'] as const) {
    for (const summary of await engine.listRuns({ status, workflowName, limit: 100 }, { signal })) {
      const run = await engine.getRun(summary.runId, { signal })
      if (
        run?.originSession?.startsWith(prefix) === true &&
        run.originSession !== originOf(cronRun.jobName, cronRun.runId)
      )
        return run
    }
  }
  return undefined
}

/**
 * Runs a scheduled workflow for its cron job: starts a run of the saved file, waits for it (the
 * cron run's signal cancels it) and reports it as a shell result would — exit 0 when it completed,
 * 1 otherwise — with the run's report (its id, each step's outcome, the final steps' results) as
 * output, which the cron job delivers (once per target, through cron's delivery ledger: the run
 * itself delivers no report of its own). A file whose text is no longer the one its schedule
 * pinned (`pinned`, when it was saved or the server started) is not run: its steps are nobody's
 * confirmed steps (a command or an editor changed them since), and the run fails saying how to
 * schedule what the file holds now. A run an interrupted cron run of this job left going (the
 * engine resumed it after a crash or a restart) is taken over instead of starting a second one
 * beside it ({@link orphanedRunOf}): the cron run waits for it and reports it, so the job's
 * overlap policy counts it.
 */
async function runScheduledWorkflow(
  engine: WorkflowEngine,
  directory: WorkflowDirectory,
  workflowName: string,
  pinned: string | undefined,
  cronRun: CronRunOfWorkflow,
  signal: AbortSignal,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const orphan = await orphanedRunOf(engine, workflowName, cronRun, signal)
  let workflow: LoadedWorkflow | undefined
  try {
    ;({ workflow } = await directory.read(workflowName, { signal }))
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'WORKFLOW_FILE_NOT_FOUND') throw error
    // The schedule is the cluster's; the file is this server's (issue 21: an outside probe).
    if (orphan === undefined)
      throw new Error(
        `the saved workflow ${workflowName} is not in this server's workflows directory (${directory.path}): servers that share a database must share the workflows directory (workflow.directory)`,
        { cause: error },
      )
  }
  let runId: string
  let adopted: string | undefined
  if (orphan !== undefined) {
    // Confirmed when it started: it goes on as it began, whatever the file holds now.
    runId = orphan.runId
    adopted = `(taken over: started by the cron run ${orphan.originSession?.slice(originOf(cronRun.jobName, '').length)}, interrupted before the workflow run ended)`
  } else {
    if (workflow === undefined) throw new Error(`the saved workflow ${workflowName} could not be read`)
    if (pinned !== undefined && workflowDigest(workflow.source) !== pinned)
      throw new Error(
        `the saved workflow ${workflowName} changed since it was scheduled (saved, or read when the server started), so its steps were not run: save it again (lango workflow save <file> --name ${workflowName} --overwrite, or workflow_save with overwrite) or restart the server to schedule what ${directory.path}/${workflowName}.flow.yaml holds now`,
      )
    ;({ runId } = await engine.startRun(workflow, {
      originSession: originOf(cronRun.jobName, cronRun.runId),
      // The cron job delivers the run's report (its ledger retries it and survives a restart):
      // the run delivers none of its own, or each target would get two.
      reportTo: [],
      // A webhook trigger's call: its body is the run's `{{trigger.payload}}` (untrusted).
      ...(cronRun.payload === undefined ? {} : { triggerPayload: cronRun.payload }),
    }))
  }
  const onAbort = (): void => {
    // Interrupted (the scheduler stopped, or took this run for dead elsewhere): the workflow run is
    // the engine's, which leaves it resumable at stop and resumes it after; this cron run is
    // recorded `interrupted` and the job's next run takes the workflow run over (orphanedRunOf).
    // Only a timeout, a pause or a remove cancels it.
    if (interrupted(signal.reason)) return
    engine.cancelRun(runId).catch(() => {})
  }
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    const run = await engine.waitForRun(runId)
    const report = reportOf(workflowName, run, workflow?.definition, adopted)
    return run.status === 'completed'
      ? { exitCode: 0, stdout: report, stderr: '' }
      : // A failed run is delivered with its error: the report is that error's detail.
        { exitCode: 1, stdout: report, stderr: `${run.error ?? run.status}\n${report}` }
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

/** True when cron aborted its run as `interrupted` (stop, or a takeover), not cancelled or timed out. */
function interrupted(reason: unknown): boolean {
  return CronError.is(reason) && reason.code === 'CRON_RUN_CANCELLED' && reason.data?.status === 'interrupted'
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
      // An ai job's `when` gate is a command to run as it is, whatever the job's name.
      if (
        !('jobName' in request) ||
        ('gate' in request && request.gate === true) ||
        !mayBeScheduledWorkflow(request.jobName) ||
        running === undefined
      )
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
        pinnedDigest(job.command),
        {
          jobName: request.jobName,
          overlap: job.overlap,
          runId: request.runId,
          ...('payload' in request && request.payload !== undefined ? { payload: request.payload } : {}),
        },
        signal,
      )
    },
  }
}
