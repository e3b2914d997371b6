import type { CronJob } from './model.js'
import type { CompiledSchedule } from './next-fire-time.js'

/**
 * The job's delay after `occurrence` (SECURITY.md CRON-6): a hash of its id, 0 to `maxJitterMs`,
 * and below half the gap to the job's next occurrence, so a delayed fire never reaches the next
 * one (which would make catch-up planning skip this occurrence as missed). `at` jobs are never
 * delayed. `compiled` is called only when jitter is on.
 */
export function jitterDelay(
  job: Pick<CronJob, 'id' | 'scheduleType'>,
  compiled: () => CompiledSchedule,
  occurrence: number,
  maxJitterMs: number,
): number {
  if (maxJitterMs === 0 || job.scheduleType === 'at') return 0
  let cap = maxJitterMs
  try {
    const following = compiled().next(occurrence, occurrence)
    if (following !== undefined) cap = Math.min(cap, Math.floor((following - occurrence - 1) / 2))
  } catch {
    return 0 // a schedule that no longer compiles is reported when it fires
  }
  if (cap <= 0) return 0
  return stableHash(job.id) % (cap + 1)
}

/** FNV-1a of `text`: stable across processes, so every scheduler delays a job alike. */
function stableHash(text: string): number {
  let hash = 0x811c9dc5
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}
