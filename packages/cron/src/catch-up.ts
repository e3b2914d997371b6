import { formatDuration } from './duration.js'
import type { CronJob, RunTrigger } from './model.js'
import type { CompiledSchedule } from './next-fire-time.js'

/** Smallest catch-up window unless `catchupWindow.minMs` says otherwise. */
export const DEFAULT_CATCHUP_MIN_MS = 120_000
/** Largest catch-up window unless `catchupWindow.maxMs` says otherwise. */
export const DEFAULT_CATCHUP_MAX_MS = 7_200_000
/** Missed occurrences recorded one row each before the rest are summarised in a reason. */
const MAX_SKIPPED_ROWS = 50

/** An occurrence that runs: when it was due, and why it runs. */
export interface Occurrence {
  readonly scheduledFor: number
  readonly trigger: RunTrigger
  /** The payload of a `webhook` run, held until the run starts (never stored). */
  readonly payload?: string
}

/** A run started on request (`manual` or `webhook`), not a clock occurrence: claimed on a free instant. */
export function isRequested(occurrence: Occurrence): boolean {
  return occurrence.trigger === 'manual' || occurrence.trigger === 'webhook'
}

/** Bounds of the catch-up window: half the job's period, clamped to `[minMs, maxMs]`. */
export interface CatchUpBounds {
  readonly minMs: number
  readonly maxMs: number
}

/** What happens to the occurrences of one job from its first due time up to now. */
export interface CatchUpPlan {
  /** The one occurrence that runs (the latest, inside the window), if any. */
  readonly run: Occurrence | undefined
  /** Occurrences recorded `skipped`, each with its reason. */
  readonly skipped: readonly { readonly scheduledFor: number; readonly reason: string }[]
  /** The job's next occurrence after now, or undefined when it has none (an `at` job that fired). */
  readonly next: number | undefined
}

/**
 * Which occurrences from `firstDue` up to `now` run, which are skipped (and why), and the next.
 * Only the latest runs, and only inside the catch-up window: `startup` after downtime (trigger
 * `catchup`, or skipped with `catchup: none`), `runtime` when a timer fired late (a blocked loop,
 * a suspended host or a clock jump). Far-behind schedules jump instead of walking every occurrence.
 */
export function planCatchUp(
  job: Pick<CronJob, 'catchup'>,
  compiled: CompiledSchedule,
  firstDue: number,
  now: number,
  mode: 'startup' | 'runtime',
  bounds: CatchUpBounds,
): CatchUpPlan {
  const recorded: number[] = []
  let unrecorded = 0
  let cursor: number | undefined = firstDue
  let latest = firstDue
  let windowMs = catchUpWindowMs(compiled, firstDue, undefined, bounds)
  while (cursor !== undefined && cursor <= now) {
    latest = cursor
    if (recorded.length < MAX_SKIPPED_ROWS) recorded.push(cursor)
    else unrecorded++
    let following = compiled.next(cursor, firstDue)
    windowMs = catchUpWindowMs(compiled, cursor, following, bounds)
    if (following !== undefined && recorded.length >= MAX_SKIPPED_ROWS && following < now - windowMs * 2) {
      // Far behind: jump to the recent past instead of walking every missed occurrence.
      const jumped = compiled.next(now - windowMs * 2, firstDue)
      if (jumped !== undefined && jumped > following) {
        unrecorded += 1
        following = jumped
      }
    }
    cursor = following
  }
  const next = cursor
  if (recorded[recorded.length - 1] !== latest) recorded.push(latest)
  const lateBy = now - latest
  const count = recorded.length + unrecorded
  let run: Occurrence | undefined
  let latestReason: string | undefined
  if (mode === 'startup' && job.catchup === 'none') {
    latestReason = 'missed while no scheduler was running (catchup: none)'
  } else if (lateBy <= windowMs) {
    run = { scheduledFor: latest, trigger: mode === 'startup' || count > 1 ? 'catchup' : 'schedule' }
  } else {
    latestReason = `missed by ${formatDuration(lateBy)}, beyond the catch-up window of ${formatDuration(windowMs)}`
  }
  const earlierReason =
    mode === 'startup'
      ? 'missed while no scheduler was running; only the latest missed occurrence is caught up'
      : `missed: the scheduler was ${formatDuration(now - firstDue)} late (blocked event loop, suspended host or clock jump); only the latest occurrence runs`
  const skipped: { scheduledFor: number; reason: string }[] = []
  for (const scheduledFor of recorded) {
    if (scheduledFor === latest) {
      if (latestReason !== undefined) skipped.push({ scheduledFor, reason: latestReason })
    } else {
      skipped.push({ scheduledFor, reason: earlierReason })
    }
  }
  if (unrecorded > 0 && skipped.length > 0) {
    const last = skipped[skipped.length - 1] as { scheduledFor: number; reason: string }
    last.reason = `${last.reason} (more missed occurrences were not recorded one by one)`
  }
  return { run, skipped, next }
}

/** The catch-up window after `occurrence`: half the gap to `following` (or the period), clamped. */
function catchUpWindowMs(
  compiled: CompiledSchedule,
  occurrence: number,
  following: number | undefined,
  bounds: CatchUpBounds,
): number {
  const period =
    compiled.type === 'at'
      ? Number.POSITIVE_INFINITY
      : following !== undefined
        ? following - occurrence
        : (compiled.periodMs ?? Number.POSITIVE_INFINITY)
  return Math.min(bounds.maxMs, Math.max(bounds.minMs, period / 2))
}
