import { CronError } from './errors.js'
import type { NewCronRun } from './ports.js'

/** Throws `CRON_INVALID_INPUT` when two `exclusive` rows of one call belong to one job. */
export function checkExclusiveRuns(runs: readonly NewCronRun[]): void {
  const jobs = new Set<string>()
  for (const run of runs) {
    if (run.exclusive === undefined || run.status !== 'running') continue
    if (jobs.has(run.jobId)) {
      throw new CronError(
        'CRON_INVALID_INPUT',
        'insertRuns takes at most one exclusive running row per job in one call.',
        { data: { jobId: run.jobId } },
      )
    }
    jobs.add(run.jobId)
  }
}
