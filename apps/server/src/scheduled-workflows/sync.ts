import type { CronService } from '@lango/cron'
import type { WorkflowDirectory } from '@lango/workflow'
import type { EventHub } from '../events.js'
import type { Logger } from '../logger.js'
import { cronJobNameFor, placeholderCommand, scheduledWorkflowJobs, WORKFLOW_SCHEDULER } from './jobs.js'

/**
 * Keeps cron in step with the saved workflows: each `*.flow.yaml` with a `schedule` has one cron
 * job `workflow.<name>` (created, or updated when its schedule, zone or targets changed), and the
 * jobs of workflows that were removed or lost their schedule are removed. Runs of those jobs go to
 * the workflow engine (./dispatch.ts), so they show in cron history and workflow
 * runs both. A file that does not load is logged and left alone (its job, if any, stays).
 */
async function syncScheduledWorkflows(
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
 * {@link syncScheduledWorkflows}, logging and publishing (`cron.jobs.changed`) what it changed:
 * the server's `syncSchedules()`, run at start and after `workflow_save`.
 */
export function scheduleSync(
  cron: CronService,
  directory: WorkflowDirectory,
  events: EventHub,
  logger: Logger,
): () => Promise<void> {
  return async () => {
    const { registered, removed } = await syncScheduledWorkflows(cron, directory, logger)
    if (registered.length + removed.length > 0) {
      logger.info('workflow schedules updated', { registered, removed })
      events.emit('cron.jobs.changed', { registered, removed })
    }
  }
}
