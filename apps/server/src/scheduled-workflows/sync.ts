import type { CronJobInput, CronService } from '@lango/cron'
import type { LoadedWorkflow, WorkflowDirectory } from '@lango/workflow'
import type { EventHub } from '../events.js'
import type { Logger } from '../logger.js'
import {
  cronJobNameFor,
  placeholderCommand,
  scheduledWorkflowJobs,
  scheduledWorkflowOf,
  WORKFLOW_SCHEDULER,
  workflowDigest,
} from './jobs.js'

/** A cron job the server keeps for a saved workflow: its schedule, or one of its webhook triggers. */
interface WantedJob {
  readonly workflow: string
  /** The digest of the file's text now: the job runs the workflow only while the file holds it. */
  readonly digest: string
  readonly scheduleType: 'cron' | 'webhook'
  /** The cron expression, or the hook name. */
  readonly schedule: string
  readonly timezone?: string
  readonly deliverTo?: readonly string[]
}

/** Options of {@link scheduleSync}. */
interface SyncOptions {
  /** The database is one several servers may share (PostgreSQL): a missing file removes nothing. */
  readonly shared: boolean
  /** Why results could not reach a target (the tools' `checkTarget`): such a workflow is logged. */
  readonly checkTarget?: (target: string) => string | undefined
}

/**
 * The cron jobs a saved workflow wants: one for its `schedule`, one per webhook trigger, each by
 * its job name (undefined when that name would be too long for cron).
 */
function wantedJobsOf(name: string, workflow: LoadedWorkflow): [string | undefined, WantedJob][] {
  const { schedule, triggers, timezone, deliverTo } = workflow.definition
  const common = {
    workflow: name,
    digest: workflowDigest(workflow.source),
    ...(timezone === undefined ? {} : { timezone }),
    ...(deliverTo === undefined ? {} : { deliverTo }),
  }
  return [
    ...(schedule === undefined
      ? []
      : [
          [cronJobNameFor(name), { ...common, scheduleType: 'cron', schedule }] as [
            string | undefined,
            WantedJob,
          ],
        ]),
    ...(triggers ?? []).map(
      (trigger) =>
        [
          cronJobNameFor(name, trigger.webhook),
          { ...common, scheduleType: 'webhook', schedule: trigger.webhook },
        ] as [string | undefined, WantedJob],
    ),
  ]
}

/** The cron job of a {@link WantedJob}, as the server creates it (or updates its own). */
function jobInputOf(jobName: string, want: WantedJob): CronJobInput {
  return {
    name: jobName,
    kind: 'shell',
    scheduleType: want.scheduleType,
    schedule: want.schedule,
    ...(want.timezone === undefined ? {} : { timezone: want.timezone }),
    command: placeholderCommand(want.workflow, want.digest),
    deliverTo: [...(want.deliverTo ?? [])],
    createdBy: WORKFLOW_SCHEDULER,
    // A workflow bounds its own run (run timeout); the job's timeout is the cron maximum.
    timeout: '2h',
  }
}

/** Why the job a cron job name stands for is another's: it was not made by the server for a workflow. */
function notOurs(jobName: string): string {
  return `a cron job named ${jobName} that the server did not create for this workflow exists (a user's or an agent's): it is left alone; rename or remove that job, or save the workflow under another name`
}

/**
 * Why the schedule and webhook triggers of the saved workflow `name` (as it would be saved) could
 * not all be registered with cron, one line each; empty when they can. Checked the way the sync
 * would register them, writing nothing: each job name fits cron's, is free or the server's own for
 * this workflow, and cron accepts the job (`CronService.preview`: the schedule, `cron.min_interval`,
 * the caps on jobs). `workflow_save` refuses a workflow with any (nothing is written, the old file
 * and its schedule stay).
 */
export async function scheduleProblems(
  cron: CronService,
  name: string,
  workflow: LoadedWorkflow,
): Promise<string[]> {
  const problems: string[] = []
  for (const [jobName, want] of wantedJobsOf(name, workflow)) {
    const what = want.scheduleType === 'webhook' ? `webhook trigger ${want.schedule}` : 'schedule'
    if (jobName === undefined) {
      problems.push(
        `${what}: its cron job name (workflow.${name}${want.scheduleType === 'webhook' ? `.${want.schedule}` : ''}) would be longer than 64 characters; use a shorter workflow name`,
      )
      continue
    }
    const holder = await cron.get(jobName).catch((error: unknown) => {
      if ((error as { code?: unknown }).code === 'CRON_JOB_NOT_FOUND') return undefined
      throw error
    })
    if (holder?.name === jobName && scheduledWorkflowOf(holder) !== name) {
      problems.push(`${what}: ${notOurs(jobName)}`)
      continue
    }
    try {
      await cron.preview(jobInputOf(jobName, want), { count: 1 })
    } catch (error) {
      problems.push(`${what}: cron refuses it: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
  return problems
}

/**
 * Keeps cron in step with the saved workflows: each `*.flow.yaml` with a `schedule` has one cron
 * job `workflow.<name>`, and each of its `triggers: [{ webhook: <hook> }]` one `webhook` job
 * `workflow.<name>.<hook>` (created, or updated when its schedule, zone or targets changed); the
 * jobs of workflows that were removed or lost their schedule or trigger are removed. Runs of those
 * jobs go to the workflow engine (./dispatch.ts), so they show in cron history and workflow runs
 * both. Each job pins the digest of its file's text as this sync read it: a run of a file that has
 * changed since fails (the file is scheduled again by a save or the next start). A file that does
 * not load is logged and left alone (its jobs, if any, stay). Only jobs the server made for
 * workflows are updated or removed: a job of the same name made by anyone else (a user's shell job
 * `workflow.<name>`) is never overwritten; the workflow is then not scheduled, and the clash logged.
 */
async function syncScheduledWorkflows(
  cron: CronService,
  directory: WorkflowDirectory,
  logger: Logger,
  options: SyncOptions,
): Promise<{ readonly registered: readonly string[]; readonly removed: readonly string[] }> {
  const wanted = new Map<string, WantedJob>()
  const unreadable = new Set<string>()
  const present = new Set(await directory.list())
  for (const name of present) {
    try {
      const { workflow } = await directory.read(name)
      for (const [jobName, job] of wantedJobsOf(name, workflow)) {
        if (jobName === undefined) {
          logger.warn('saved workflow not scheduled: its name is too long for a cron job', {
            workflow: name,
            ...(job.scheduleType === 'webhook' ? { hook: job.schedule } : {}),
          })
          continue
        }
        wanted.set(jobName, job)
      }
    } catch (error) {
      unreadable.add(name)
      logger.warn('saved workflow could not be read; its schedule is left as it was', {
        workflow: name,
        error,
      })
    }
  }
  const existing = await scheduledWorkflowJobs(cron)
  const registered = new Set<string>()
  const removed = new Set<string>()
  const undeliverable = new Map<string, Record<string, string>>()
  for (const want of wanted.values()) {
    for (const target of want.deliverTo ?? []) {
      const why = options.checkTarget?.(target)
      if (why !== undefined)
        undeliverable.set(want.workflow, { ...undeliverable.get(want.workflow), [target]: why })
    }
  }
  // A file written by hand is not checked when it is made, as workflow_save checks it: say so here.
  for (const [workflow, targets] of undeliverable)
    logger.warn('saved workflow delivers where nothing can be delivered: its results there fail', {
      workflow,
      targets,
    })
  for (const [jobName, want] of wanted) {
    const job = existing.get(jobName)?.job
    const same =
      job !== undefined &&
      job.scheduleType === want.scheduleType &&
      job.schedule === want.schedule &&
      job.command === placeholderCommand(want.workflow, want.digest) &&
      (want.timezone === undefined || job.timezone === want.timezone) &&
      JSON.stringify(job.deliverTo) === JSON.stringify(want.deliverTo ?? [])
    if (same) continue
    try {
      // Only the server's own job is updated; any other is created, never taken over by name.
      const input = jobInputOf(jobName, want)
      if (job === undefined) await cron.create(input)
      else await cron.update(job.id, input)
      registered.add(want.workflow)
    } catch (error) {
      if (job === undefined && (error as { code?: unknown }).code === 'CRON_DUPLICATE_NAME')
        logger.warn('saved workflow not scheduled: its cron job name is taken by a job it did not make', {
          workflow: want.workflow,
          job: jobName,
          hint: notOurs(jobName),
        })
      else logger.warn('saved workflow schedule rejected by cron', { workflow: want.workflow, error })
    }
  }
  const missingHere = new Set<string>()
  for (const [jobName, { workflow, job }] of existing) {
    if (wanted.has(jobName) || unreadable.has(workflow)) continue
    // On a database several servers share, a file missing from this server's directory may be
    // another server's (their workflows directories differ): only a file this server holds
    // removes its schedule, so one server's start never unschedules the cluster's workflows.
    if (options.shared && !present.has(workflow)) {
      missingHere.add(workflow)
      continue
    }
    await cron.remove(job.id)
    removed.add(workflow)
  }
  if (missingHere.size > 0)
    logger.warn("saved workflow schedules kept: their files are not in this server's workflows directory", {
      workflows: [...missingHere],
      directory: directory.path,
      hint: 'servers that share a database must share the workflows directory (workflow.directory): a run claimed by a server without the file fails',
    })
  return { registered: [...registered], removed: [...removed] }
}

/**
 * {@link syncScheduledWorkflows}, logging and publishing (`cron.jobs.changed`) what it changed:
 * the server's `syncSchedules()`, run at start and after `workflow_save`.
 */
export function scheduleSync(
  cron: CronService,
  directory: WorkflowDirectory,
  events: EventHub,
  logger: Logger,
  options: SyncOptions,
): () => Promise<void> {
  return async () => {
    const { registered, removed } = await syncScheduledWorkflows(cron, directory, logger, options)
    if (registered.length + removed.length > 0) {
      logger.info('workflow schedules updated', { registered, removed })
      events.emit('cron.jobs.changed', { registered, removed })
    }
  }
}

/**
 * Why the cron job `idOrName` may not be removed, or undefined when it may: a job the server keeps
 * for a saved workflow whose file here still declares it (its `schedule`, or the webhook trigger
 * it stands for). The file is what schedules the workflow: the next sync (a start, a save) would
 * make the job again, so removing it would come undone. A job whose file is not in this server's
 * directory (a cluster's, or a file removed by hand) or no longer declares it may go, as before.
 */
export async function scheduledJobRemovalProblem(
  cron: Pick<CronService, 'get'>,
  directory: WorkflowDirectory,
  idOrName: string,
): Promise<{ readonly job: string; readonly workflow: string; readonly message: string } | undefined> {
  const job = await cron.get(idOrName).catch((error: unknown) => {
    // The removal itself says the job does not exist.
    if ((error as { code?: unknown }).code === 'CRON_JOB_NOT_FOUND') return undefined
    throw error
  })
  const name = job === undefined ? undefined : scheduledWorkflowOf(job)
  if (job === undefined || name === undefined) return undefined
  const workflow = await directory.read(name).then(
    (read) => read.workflow,
    () => undefined,
  )
  const want =
    workflow === undefined
      ? undefined
      : wantedJobsOf(name, workflow).find(([jobName]) => jobName === job.name)?.[1]
  if (want === undefined) return undefined
  const what =
    want.scheduleType === 'webhook'
      ? `the webhook trigger ${want.schedule} of the saved workflow ${name} (triggers: [{ webhook: ${want.schedule} }])`
      : `the schedule of the saved workflow ${name} (schedule: "${want.schedule}")`
  return {
    job: job.name,
    workflow: name,
    message: `The cron job ${job.name} was not removed: it runs ${what}, which ${directory.path}/${name}.flow.yaml declares, and the server would make it again. Remove the ${want.scheduleType === 'webhook' ? 'trigger' : 'schedule'} from the workflow and save it again (lango workflow save <file> --name ${name} --overwrite, or workflow_save with overwrite), or delete the workflow's file; to stop its runs for now, pause the job (lango cron pause ${job.name}).`,
  }
}
