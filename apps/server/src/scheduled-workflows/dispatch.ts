import type { CronJob, CronService, ShellRunner as CronShellRunner } from '@lango/cron'
import type { WorkflowDirectory, WorkflowEngine, ShellRunner as WorkflowShellRunner } from '@lango/workflow'
import { mayBeScheduledWorkflow, pinnedDigest, scheduledWorkflowOf, workflowDigest } from './jobs.js'

/**
 * Runs a scheduled workflow for its cron job: starts a run of the saved file, waits for it (the
 * cron run's signal cancels it) and reports it as a shell result would — exit 0 when it completed,
 * 1 otherwise — with the run id and per-step outcome as output. A file whose text is no longer the
 * one its schedule pinned (`pinned`, when it was saved or the server started) is not run: its steps
 * are nobody's confirmed steps (a command or an editor changed them since), and the run fails
 * saying how to schedule what the file holds now.
 */
async function runScheduledWorkflow(
  engine: WorkflowEngine,
  directory: WorkflowDirectory,
  workflowName: string,
  pinned: string | undefined,
  cronRun: { readonly jobName: string; readonly runId: string; readonly payload?: string },
  signal: AbortSignal,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  let workflow: Awaited<ReturnType<WorkflowDirectory['read']>>['workflow']
  try {
    ;({ workflow } = await directory.read(workflowName, { signal }))
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'WORKFLOW_FILE_NOT_FOUND') throw error
    // The schedule is the cluster's; the file is this server's (issue 21: an outside probe).
    throw new Error(
      `the saved workflow ${workflowName} is not in this server's workflows directory (${directory.path}): servers that share a database must share the workflows directory (workflow.directory)`,
      { cause: error },
    )
  }
  if (pinned !== undefined && workflowDigest(workflow.source) !== pinned)
    throw new Error(
      `the saved workflow ${workflowName} changed since it was scheduled (saved, or read when the server started), so its steps were not run: save it again (lango workflow save <file> --name ${workflowName} --overwrite, or workflow_save with overwrite) or restart the server to schedule what ${directory.path}/${workflowName}.flow.yaml holds now`,
    )
  const { runId } = await engine.startRun(workflow, {
    originSession: `cron:${cronRun.jobName}:${cronRun.runId}`,
    deliverTo: workflow.definition.deliverTo ?? [],
    // A webhook trigger's call: its body is the run's `{{trigger.payload}}` (untrusted).
    ...(cronRun.payload === undefined ? {} : { triggerPayload: cronRun.payload }),
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
          runId: request.runId,
          ...('payload' in request && request.payload !== undefined ? { payload: request.payload } : {}),
        },
        signal,
      )
    },
  }
}
