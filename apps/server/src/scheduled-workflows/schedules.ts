import type { CronJob, CronService } from '@lango/cron'
import { scheduledWorkflowJobs } from './jobs.js'

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
  for (const { workflow, job } of (await scheduledWorkflowJobs(cron)).values()) {
    // A webhook trigger's job is not the workflow's schedule.
    if (job.scheduleType === 'webhook') continue
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
