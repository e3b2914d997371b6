import { createHash } from 'node:crypto'
import type { CronJob, CronService } from '@lango/cron'

/**
 * The `createdBy` of the cron jobs the server keeps for saved workflows with a `schedule`. No chat
 * produces it (session keys are `<channel>:<chat>:<user>`, `http`, `mcp`), so an agent cannot make
 * a shell job that the server would take for a workflow.
 */
export const WORKFLOW_SCHEDULER = 'lango:workflow-schedule'
/** Cron job name of a saved workflow's schedule: `workflow.<name>` (cron names allow dots). */
const PREFIX = 'workflow.'
const MAX_CRON_NAME = 64

/**
 * The cron job name for a saved workflow's schedule (`workflow.<name>`) or for one of its webhook
 * triggers (`workflow.<name>.<hook>`: neither name has a dot), or undefined when it is too long.
 */
export function cronJobNameFor(workflowName: string, hook?: string): string | undefined {
  const name = hook === undefined ? `${PREFIX}${workflowName}` : `${PREFIX}${workflowName}.${hook}`
  return name.length <= MAX_CRON_NAME ? name : undefined
}

/** False for a cron job name that cannot belong to a saved workflow's schedule (no lookup needed). */
export function mayBeScheduledWorkflow(jobName: string): boolean {
  return jobName.startsWith(PREFIX)
}

/** The workflow a cron job runs, when the server made it for a saved workflow's schedule. */
export function scheduledWorkflowOf(job: Pick<CronJob, 'name' | 'createdBy'>): string | undefined {
  return job.createdBy === WORKFLOW_SCHEDULER && mayBeScheduledWorkflow(job.name)
    ? (job.name.slice(PREFIX.length).split('.')[0] as string)
    : undefined
}

/**
 * What the shell job of a scheduled workflow shows as its command: the workflow's name and the
 * digest of the file's text when it was scheduled ({@link workflowDigest}), which a run checks
 * (./dispatch.ts). The server runs the workflow instead; should the command itself ever run, it
 * fails saying why (it never passes for a run).
 */
export function placeholderCommand(workflowName: string, digest: string): string {
  return `echo 'lango: this job runs the saved workflow ${workflowName} (sha256 ${digest}), which the server did not resolve' >&2; exit 1`
}

/** The digest of a workflow file's text that its schedule pins: 128 bits of its SHA-256, in hex. */
export function workflowDigest(source: string): string {
  return createHash('sha256').update(source).digest('hex').slice(0, 32)
}

/** The digest a scheduled workflow's job pinned ({@link placeholderCommand}); undefined for an older server's job. */
export function pinnedDigest(command: string | null | undefined): string | undefined {
  return /\(sha256 ([0-9a-f]{32})\)/.exec(command ?? '')?.[1]
}

/**
 * The cron jobs the server keeps for saved workflows (schedules and webhook triggers), by job name,
 * each with its workflow. Only the jobs it created are read: a list of every job would decode
 * thousands of rows.
 */
export async function scheduledWorkflowJobs(
  cron: CronService,
): Promise<Map<string, { readonly workflow: string; readonly job: CronJob }>> {
  const jobs = new Map<string, { readonly workflow: string; readonly job: CronJob }>()
  for (const job of await cron.list({ createdBy: WORKFLOW_SCHEDULER })) {
    const workflow = scheduledWorkflowOf(job)
    if (workflow !== undefined) jobs.set(job.name, { workflow, job })
  }
  return jobs
}
