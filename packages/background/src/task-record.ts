import type { DeadlineItem } from './deadlines.js'
import type { BackgroundErrorCode } from './errors.js'
import type { TaskId, TaskSnapshot, TaskStatus } from './task.js'

/** Mutable state of one task; never handed out (see `TaskSnapshot`). */
export class TaskRecord implements DeadlineItem {
  status: TaskStatus = 'pending'
  startedAt: number | undefined = undefined
  completedAt: number | undefined = undefined
  result: string | undefined = undefined
  resultTruncated = false
  usage: TaskSnapshot['usage'] = undefined
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
 * The `options` argument of `AgentRunner.run`: a plain object whose `signal` is an own property, so
 * an adapter that spreads or copies the options keeps it.
 */
export function runOptions(record: TaskRecord): { readonly signal: AbortSignal } {
  return { signal: record.controller.signal }
}

/** Aborts the task's runner signal with `reason`; a no-op when it already aborted. */
export function abortRunner(record: TaskRecord, reason: unknown): void {
  if (!record.controller.signal.aborted) record.controller.abort(reason)
}
