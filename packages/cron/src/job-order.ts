import type { CronJob } from './model.js'
import type { JobSort } from './ports.js'

/** Past every epoch-ms time: the `next_run` key of a job with no next run. */
export const NO_NEXT_RUN_KEY = 8_640_000_000_000_000

/**
 * A job's place in a `sort` other than `name`, as one ascending number (ties broken by name):
 * `next_run` its next run time (or past every time), `last_run` its last run time negated (or 1,
 * after every real one), `failures` its consecutive failures negated. Keyset paging passes the
 * last job's key as `afterKey` (see `JobListFilter`).
 */
export function jobSortKey(
  job: Pick<CronJob, 'nextRunAt' | 'lastRunAt' | 'consecutiveFailures'>,
  sort: Exclude<JobSort, 'name'>,
): number {
  if (sort === 'next_run') return job.nextRunAt ?? NO_NEXT_RUN_KEY
  if (sort === 'last_run') return job.lastRunAt === null ? 1 : -job.lastRunAt
  return -job.consecutiveFailures
}

/** Compares two jobs in `sort` order (by {@link jobSortKey}, then by name). */
export function compareJobs(sort: JobSort): (left: CronJob, right: CronJob) => number {
  return (left, right) => {
    if (sort !== 'name') {
      const difference = jobSortKey(left, sort) - jobSortKey(right, sort)
      if (difference !== 0) return difference
    }
    return left.name < right.name ? -1 : left.name > right.name ? 1 : 0
  }
}

/** True when `job` sorts after the keyset position (`afterKey`, `after`) in `sort` order. */
export function isAfter(job: CronJob, sort: JobSort, after: string, afterKey: number | undefined): boolean {
  if (sort === 'name' || afterKey === undefined) return job.name > after
  const key = jobSortKey(job, sort)
  return key > afterKey || (key === afterKey && job.name > after)
}
