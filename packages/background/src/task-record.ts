import type { DeadlineItem } from './deadlines.js'
import type { BackgroundErrorCode } from './errors.js'
import type { TaskId, TaskSnapshot, TaskStatus } from './task.js'

/**
 * The parts of a task's state most tasks never need: an error, a truncated result, an abort signal,
 * waiters, notices. They live in a separate object made on first write, so the record every queued
 * task carries stays small; queued records survive garbage collections, and their size was a
 * measurable share of the manager's per-task cost (ADR 0003).
 */
export class TaskExtras {
  resultTruncated = false
  error: string | undefined = undefined
  errorCode: BackgroundErrorCode | undefined = undefined
  timedOut = false
  retryable: boolean | undefined = undefined
  /** Created only when the runner reads its signal (creating one costs microseconds). */
  controller: AbortController | undefined = undefined
  /** Why the runner's signal aborted, for a signal first read after the task ended. */
  abortReason: unknown = undefined
  /** Callers of `wait()`, released with the final snapshot. */
  waiters: Array<(snapshot: TaskSnapshot) => void> | undefined = undefined
  /** The task's latest notice delivery, so the next one is sent after it. */
  notices: Promise<void> | undefined = undefined
}

/** Mutable state of one task; never handed out (see `TaskSnapshot`). */
export class TaskRecord implements DeadlineItem {
  status: TaskStatus = 'pending'
  startedAt: number | undefined = undefined
  completedAt: number | undefined = undefined
  result: string | undefined = undefined
  deadlineAt = Number.POSITIVE_INFINITY
  watchIndex = -1
  /** See `TaskExtras`; read through the getters below, written through `more()`. */
  extras: TaskExtras | undefined = undefined

  constructor(
    /** The task's id as the caller sees it. */
    readonly id: TaskId,
    /** The key of the manager's task map: a sequence number for built-in ids, else the id. */
    readonly key: number | string,
    readonly prompt: string,
    readonly originChannel: string | undefined,
    readonly originSession: string | undefined,
    readonly timeoutMs: number,
    readonly createdAt: number,
  ) {}

  /** The extras, made on first use. */
  more(): TaskExtras {
    this.extras ??= new TaskExtras()
    return this.extras
  }

  get resultTruncated(): boolean {
    return this.extras?.resultTruncated ?? false
  }

  get error(): string | undefined {
    return this.extras?.error
  }

  get errorCode(): BackgroundErrorCode | undefined {
    return this.extras?.errorCode
  }

  get timedOut(): boolean {
    return this.extras?.timedOut ?? false
  }

  get retryable(): boolean | undefined {
    return this.extras?.retryable
  }
}

/**
 * The `options` argument of `AgentRunner.run`: a plain object whose `signal` is an own enumerable
 * property, so an adapter that spreads or copies the options keeps it. The signal itself is made on
 * first read (Node 20 takes microseconds to make an `AbortSignal`; ADR 0003); a signal first read
 * after the task ended comes back already aborted.
 */
export function runOptions(record: TaskRecord): { readonly signal: AbortSignal } {
  return {
    get signal(): AbortSignal {
      const extras = record.more()
      if (extras.controller === undefined) {
        extras.controller = new AbortController()
        if (extras.abortReason !== undefined) extras.controller.abort(extras.abortReason)
      }
      return extras.controller.signal
    },
  }
}

/** Aborts the task's runner signal (now, or whenever the runner first reads it). */
export function abortRunner(record: TaskRecord, reason: unknown): void {
  const extras = record.more()
  if (extras.abortReason !== undefined) return
  extras.abortReason = reason
  extras.controller?.abort(reason)
}
