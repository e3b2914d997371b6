import { buildAgentPrompt, DEFAULT_AUTOMATION_PREFIX, RECENT_RESULT_CHARS } from './executor.js'
import type { NextRun, NotifyPolicy, ScheduleType } from './model.js'
import type { CompiledSchedule } from './next-fire-time.js'
import type { JobSchedule } from './ports.js'
import { atWallTime, compileJobSchedule, toNextRun } from './schedule.js'
import { type ZoneCalendar, zoneCalendar } from './time-zone.js'

/** Default number of fires a preview lists. */
export const DEFAULT_PREVIEW_COUNT = 5
/** Most fires a preview lists. */
export const MAX_PREVIEW_COUNT = 50
/** Most clashes a preview lists (the count says how many there were). */
const MAX_CLASHES = 50
/** Most wall times one DST note names before "and N more". */
const MAX_NAMED_WALL_TIMES = 4
/** Step of the scan for DST transitions; two transitions closer than this are seen as one or none. */
const TRANSITION_SCAN_STEP_MS = 7 * 86_400_000

/**
 * A local time that a DST change within the previewed range skips or repeats, and what the
 * scheduler does about it (the rules of `nextFireTime`): a skipped wall time fires at the first
 * valid instant after it (the moment the clocks jump); a repeated one fires once, at its first
 * occurrence. `shifted`: an `every` job runs on elapsed time, so its local times move by the change.
 */
export interface DstNote {
  readonly kind: 'skipped' | 'repeated' | 'shifted'
  /** The instant the clocks change (ISO 8601, UTC). */
  readonly changeAt: string
  /** The zone's UTC offset before and after the change, e.g. `+01:00` → `+02:00`. */
  readonly offsetBefore: string
  readonly offsetAfter: string
  /** The schedule's local times that the change skips or repeats (`2026-03-29 02:30`); empty for `shifted`. */
  readonly localTimes: readonly string[]
  /** The fire that replaces them (skipped) or the one that is kept (repeated); absent for `shifted`. */
  readonly firesAt?: NextRun
  /** The note in words, e.g. `2026-03-29 02:30 does not exist in Europe/Berlin: fires at 03:00 …`. */
  readonly message: string
}

/** Another job that fires within the same minute as a previewed fire. */
export interface PreviewClash {
  /** The previewed fire. */
  readonly at: NextRun
  readonly jobId: string
  readonly jobName: string
  /** When the other job fires (in its own zone). */
  readonly otherAt: NextRun
}

/** Where the job's results would go. */
export interface PreviewDelivery {
  /** The targets after defaults (`deliver_to`, else the session's chat, else the configured default). */
  readonly targets: readonly string[]
  /** The targets joined with `, `, or `history only` when there are none. */
  readonly route: string
  readonly notify: NotifyPolicy
}

/**
 * An estimate of the prompt an `ai` job sends, in tokens, as characters / 4 (a rough rule for
 * English text and common tokenizers, not a count by the model's tokenizer). It covers the prompt
 * the job sends, with the automation prefix and the job's name line; the agent's system prompt and
 * tool definitions come on top.
 */
export interface PromptEstimate {
  /** Characters of the first run's prompt (prefix + name + prompt). */
  readonly chars: number
  /** `ceil(chars / 4)`. */
  readonly tokens: number
  /** The same with the earlier results a later run shows (each up to 500 characters), at their longest. */
  readonly tokensWithHistory: number
  readonly method: 'chars/4'
}

/** What a create or update would do, computed without storing anything ({@link CronService.preview}). */
export interface CronPreview {
  /** `create` for a new job, `update` when an existing job would change. */
  readonly action: 'create' | 'update'
  /** The job that would change (update), else null. */
  readonly jobId: string | null
  readonly name: string | null
  readonly scheduleType: ScheduleType
  /** The schedule as it would be stored. */
  readonly schedule: string
  readonly timezone: string
  /** The schedule in words (see `describeSchedule`). */
  readonly description: string
  /** False when the job would be stored disabled; `fires` are then when it would fire once resumed. */
  readonly enabled: boolean
  /** The next fires, job zone and UTC. */
  readonly fires: readonly NextRun[]
  readonly dstNotes: readonly DstNote[]
  /** Other enabled jobs firing in the same minute as a previewed fire (at most 50 listed). */
  readonly clashes: readonly PreviewClash[]
  /** How many clashes there were in all (more than `clashes.length` when the list was cut). */
  readonly clashCount: number
  /** Null for a schedule-only preview (no job definition). */
  readonly delivery: PreviewDelivery | null
  /** `ai` jobs only. */
  readonly promptEstimate?: PromptEstimate
}

/** The next `count` fires of a compiled schedule after `now`; `anchor` is an `every` job's grid (its next fire). */
export function previewFires(
  compiled: CompiledSchedule,
  options: { readonly now: number; readonly count: number; readonly anchor?: number },
): number[] {
  const fires: number[] = []
  let cursor = options.now
  let anchor = options.anchor ?? options.now
  if (options.anchor !== undefined && options.anchor > options.now) {
    fires.push(options.anchor)
    cursor = options.anchor
  }
  while (fires.length < options.count) {
    const next = compiled.next(cursor, anchor)
    if (next === undefined) break
    fires.push(next)
    cursor = next
    anchor = next
  }
  return fires
}

/** `2026-03-29 02:30` for a wall time (naive epoch ms). */
function wallText(wall: number): string {
  return new Date(wall).toISOString().slice(0, 16).replace('T', ' ')
}

/** `02:30` for a wall time. */
function clockText(wall: number): string {
  return new Date(wall).toISOString().slice(11, 16)
}

function offsetText(offset: number): string {
  const sign = offset < 0 ? '-' : '+'
  const minutes = Math.round(Math.abs(offset) / 60_000)
  return `${sign}${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`
}

interface Transition {
  /** First instant with the new offset. */
  readonly at: number
  readonly before: number
  readonly after: number
}

/** The zone's offset changes in (from, to]. */
function transitions(calendar: ZoneCalendar, from: number, to: number): Transition[] {
  const found: Transition[] = []
  let low = from
  let lowOffset = calendar.offsetAt(low)
  while (low < to) {
    const high = Math.min(low + TRANSITION_SCAN_STEP_MS, to)
    const highOffset = calendar.offsetAt(high)
    if (highOffset !== lowOffset) {
      let left = Math.floor(low / 1000)
      let right = Math.ceil(high / 1000)
      while (left < right) {
        const middle = Math.floor((left + right) / 2)
        if (calendar.offsetAt(middle * 1000) === lowOffset) left = middle + 1
        else right = middle
      }
      const at = right * 1000
      found.push({ at, before: lowOffset, after: calendar.offsetAt(at) })
    }
    low = high
    lowOffset = highOffset
  }
  return found
}

/** The wall times in [start, end) the cron expression names, at most 61. */
function wallTimesIn(nextWall: (wall: number) => number | undefined, start: number, end: number): number[] {
  const walls: number[] = []
  let wall = nextWall(start - 1000)
  while (wall !== undefined && wall < end && walls.length <= 60) {
    walls.push(wall)
    wall = nextWall(wall)
  }
  return walls
}

function namedTimes(walls: readonly number[]): string {
  const first = walls[0] as number
  const clocks = walls.slice(0, MAX_NAMED_WALL_TIMES).map(clockText)
  const more = walls.length > MAX_NAMED_WALL_TIMES ? ` and ${walls.length - MAX_NAMED_WALL_TIMES} more` : ''
  return walls.length === 1 ? wallText(first) : `${wallText(first).slice(0, 10)} ${clocks.join(', ')}${more}`
}

/**
 * The DST notes for a schedule previewed from `from` to its last previewed fire `to`: the local
 * times a change skips or repeats, and what the scheduler does (see {@link DstNote}).
 */
export function dstNotes(
  schedule: {
    readonly scheduleType: ScheduleType
    readonly timezone: string
    readonly compiled: CompiledSchedule
    /** The `at` text as given, to see whether it named a wall time (no offset). */
    readonly atText?: string
  },
  from: number,
  to: number,
): DstNote[] {
  const { timezone } = schedule
  const calendar = zoneCalendar(timezone)
  if (schedule.scheduleType === 'at') return atNote(calendar, schedule.atText)
  const notes: DstNote[] = []
  for (const change of transitions(calendar, from, to)) {
    const base = {
      changeAt: new Date(change.at).toISOString(),
      offsetBefore: offsetText(change.before),
      offsetAfter: offsetText(change.after),
    }
    const shift = change.after - change.before
    const clocks = `clocks go from ${clockText(change.at + change.before)} to ${clockText(change.at + change.after)}`
    if (schedule.scheduleType === 'every') {
      const size =
        Math.abs(shift) % 3_600_000 === 0
          ? `${Math.abs(shift) / 3_600_000} h`
          : `${Math.abs(shift) / 60_000} min`
      notes.push({
        kind: 'shifted',
        ...base,
        localTimes: [],
        message: `At ${base.changeAt} ${timezone} changes from ${base.offsetBefore} to ${base.offsetAfter} (${clocks}): an every schedule runs on elapsed time, so its local fire times move ${size} ${shift > 0 ? 'later' : 'earlier'} on the clock.`,
      })
      continue
    }
    const nextWall = schedule.compiled.nextWall
    if (nextWall === undefined) continue
    if (shift > 0) {
      const walls = wallTimesIn(nextWall, change.at + change.before, change.at + change.after)
      if (walls.length === 0) continue
      const firesAt = toNextRun(change.at, timezone)
      const verb = walls.length === 1 ? 'does not exist' : 'do not exist'
      notes.push({
        kind: 'skipped',
        ...base,
        localTimes: walls.map(wallText),
        firesAt,
        message: `${namedTimes(walls)} ${verb} in ${timezone} (${clocks}): fires ${walls.length === 1 ? '' : 'once, '}at ${clockText(change.at + change.after)} (${firesAt.local}, ${firesAt.utc}).`,
      })
    } else {
      const walls = wallTimesIn(nextWall, change.at + change.after, change.at + change.before)
      if (walls.length === 0) continue
      const first = walls[0] as number
      const firesAt = toNextRun(first - change.before, timezone)
      const verb = walls.length === 1 ? 'occurs' : 'occur'
      notes.push({
        kind: 'repeated',
        ...base,
        localTimes: walls.map(wallText),
        firesAt,
        message: `${namedTimes(walls)} ${verb} twice in ${timezone} (${clocks}): fires once, at the first (${base.offsetBefore}; ${walls.length === 1 ? firesAt.local : `from ${firesAt.local}`}, ${firesAt.utc}); the repeat at ${base.offsetAfter} is skipped.`,
      })
    }
  }
  return notes
}

function atNote(calendar: ZoneCalendar, text: string | undefined): DstNote[] {
  const wall = text === undefined ? undefined : atWallTime(text)
  if (wall === undefined) return []
  const resolution = calendar.resolve(wall)
  if (resolution.kind === 'unique') return []
  const instant = resolution.kind === 'gap' ? resolution.firstValidInstant : resolution.earlier
  const change = transitions(calendar, wall - 2 * 86_400_000, wall + 2 * 86_400_000).find(
    (candidate) => Math.abs(candidate.at - instant) <= 86_400_000,
  )
  if (change === undefined) return []
  const firesAt = toNextRun(instant, calendar.timeZone)
  const clocks = `clocks go from ${clockText(change.at + change.before)} to ${clockText(change.at + change.after)}`
  return [
    {
      kind: resolution.kind === 'gap' ? 'skipped' : 'repeated',
      changeAt: new Date(change.at).toISOString(),
      offsetBefore: offsetText(change.before),
      offsetAfter: offsetText(change.after),
      localTimes: [wallText(wall)],
      firesAt,
      message:
        resolution.kind === 'gap'
          ? `${wallText(wall)} does not exist in ${calendar.timeZone} (${clocks}): fires at ${clockText(change.at + change.after)} (${firesAt.local}, ${firesAt.utc}).`
          : `${wallText(wall)} occurs twice in ${calendar.timeZone} (${clocks}): fires once, at the first (${firesAt.local}, ${firesAt.utc}).`,
    },
  ]
}

/**
 * Other jobs that fire within the same minute as one of `fires`: for each fire, each enabled job
 * (but `excludeId`) whose next fire at or after that minute's start falls inside it.
 */
export function findClashes(
  fires: readonly number[],
  timezone: string,
  jobs: readonly JobSchedule[],
  excludeId: string | undefined,
): { readonly clashes: PreviewClash[]; readonly count: number } {
  const clashes: PreviewClash[] = []
  let count = 0
  const others: { job: JobSchedule; compiled: CompiledSchedule; nextRunAt: number }[] = []
  for (const job of jobs) {
    if (job.id === excludeId || !job.enabled || job.nextRunAt === null) continue
    try {
      others.push({ job, compiled: compileJobSchedule(job), nextRunAt: job.nextRunAt })
    } catch {
      // A stored schedule that no longer compiles cannot clash; the scheduler reports it itself.
    }
  }
  // A cron schedule's next fire depends on nothing but `after` (no anchor), and jobs share
  // schedules (compiled once, `compileJobSchedule`): one computation serves every job with the same
  // schedule and zone, so 10,000 jobs on a few dozen schedules cost a few dozen, not 10,000 each.
  const cronNext = new Map<CompiledSchedule, Map<number, number | undefined>>()
  const nextOf = (compiled: CompiledSchedule, after: number, anchor: number): number | undefined => {
    if (compiled.type !== 'cron') return compiled.next(after, anchor)
    let byAfter = cronNext.get(compiled)
    if (byAfter === undefined) {
      byAfter = new Map()
      cronNext.set(compiled, byAfter)
    }
    if (byAfter.has(after)) return byAfter.get(after)
    const next = compiled.next(after)
    byAfter.set(after, next)
    return next
  }
  for (const fire of fires) {
    const minute = Math.floor(fire / 60_000) * 60_000
    for (const other of others) {
      const after = Math.max(minute, other.nextRunAt) - 1
      const next = nextOf(other.compiled, after, other.nextRunAt)
      if (next === undefined || next >= minute + 60_000) continue
      count++
      if (clashes.length < MAX_CLASHES) {
        clashes.push({
          at: toNextRun(fire, timezone),
          jobId: other.job.id,
          jobName: other.job.name,
          otherAt: toNextRun(next, other.job.timezone),
        })
      }
    }
  }
  return { clashes, count }
}

/** The prompt estimate of an `ai` job (see {@link PromptEstimate}). */
export function estimatePrompt(
  job: { readonly name: string; readonly prompt: string },
  options: { readonly automationPrefix?: string; readonly recentResults: number },
): PromptEstimate {
  const prefix = options.automationPrefix ?? DEFAULT_AUTOMATION_PREFIX
  const chars = buildAgentPrompt(job, [], prefix).length
  const history = Array.from({ length: options.recentResults }, () => 'x'.repeat(RECENT_RESULT_CHARS))
  const withHistory = buildAgentPrompt(job, history, prefix).length
  return {
    chars,
    tokens: Math.ceil(chars / 4),
    tokensWithHistory: Math.ceil(withHistory / 4),
    method: 'chars/4',
  }
}

/** The delivery route of a job's targets. */
export function deliveryRoute(targets: readonly string[], notify: NotifyPolicy): PreviewDelivery {
  return { targets: [...targets], route: targets.length === 0 ? 'history only' : targets.join(', '), notify }
}
