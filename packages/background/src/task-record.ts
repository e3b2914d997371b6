import type { DeadlineItem } from './deadlines.js'
import type { BackgroundErrorCode } from './errors.js'
import type { AgentRunOptions } from './ports.js'
import type { TaskId, TaskSnapshot, TaskStatus } from './task.js'

/** Mutable state of one task; never handed out (see `TaskSnapshot`). */
export class TaskRecord implements DeadlineItem {
  status: TaskStatus = 'pending'
  startedAt: number | undefined = undefined
  completedAt: number | undefined = undefined
  result: string | undefined = undefined
  resultTruncated = false
  usage: TaskSnapshot['usage'] = undefined
  /** The runner's last running total (`AgentRunOptions.onUsage`): the usage of a task that ends without its own. */
  told: TaskSnapshot['usage'] = undefined
  error: string | undefined = undefined
  errorCode: BackgroundErrorCode | undefined = undefined
  timedOut = false
  retryable: boolean | undefined = undefined
  /** Aborts the runner's signal on cancel, timeout or stop. */
  readonly controller = new AbortController()
  /** Callers of `wait()`, released with the final snapshot; most tasks have none. */
  waiters: Array<(snapshot: TaskSnapshot) => void> | undefined = undefined
  /** The task's latest notice delivery, so the next one is sent after it. */
  notices: Promise<void> | undefined = undefined
  deadlineAt = Number.POSITIVE_INFINITY
  watchIndex = -1

  constructor(
    readonly id: TaskId,
    readonly prompt: string,
    readonly originChannel: string | undefined,
    readonly originSession: string | undefined,
    readonly timeoutMs: number,
    readonly createdAt: number,
    readonly creator: string | undefined = undefined,
    readonly nesting = 0,
  ) {}
}

/**
 * The `options` argument of `AgentRunner.run`: a plain object whose `signal` and `onUsage` are own
 * properties, so an adapter that spreads or copies the options keeps them.
 */
export function runOptions(record: TaskRecord): AgentRunOptions {
  return {
    signal: record.controller.signal,
    onUsage: (usage) => {
      const counts = usageCounts(usage)
      if (counts !== undefined) record.told = counts
    },
  }
}

/** `usage` when both counts are whole numbers of 0 or more (the runner is the host's code). */
export function usageCounts(usage: unknown): TaskSnapshot['usage'] {
  if (typeof usage !== 'object' || usage === null) return undefined
  const { inputTokens, outputTokens } = usage as { inputTokens?: unknown; outputTokens?: unknown }
  if (!isCount(inputTokens) || !isCount(outputTokens)) return undefined
  return Object.freeze({ inputTokens, outputTokens })
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/** Aborts the task's runner signal with `reason`; a no-op when it already aborted. */
export function abortRunner(record: TaskRecord, reason: unknown): void {
  if (!record.controller.signal.aborted) record.controller.abort(reason)
}
