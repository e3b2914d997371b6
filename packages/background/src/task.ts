import type { BackgroundErrorCode } from './errors.js'

/** A task id, as returned by `BackgroundManager.submit`. */
export type TaskId = string

/** Every task status, in lifecycle order. */
export const TASK_STATUSES = Object.freeze(['pending', 'running', 'done', 'failed', 'cancelled'] as const)

/**
 * Where a task is in its life: `pending` (queued) → `running` → one of the terminal statuses
 * `done`, `failed` or `cancelled`. A pending task can also go straight to `cancelled`.
 */
export type TaskStatus = (typeof TASK_STATUSES)[number]

/** The statuses a task ends in; once reached, a task never changes again. */
export type TerminalTaskStatus = Extract<TaskStatus, 'done' | 'failed' | 'cancelled'>

/** True when `status` is `done`, `failed` or `cancelled`. */
export function isTerminalStatus(status: TaskStatus): status is TerminalTaskStatus {
  return status === 'done' || status === 'failed' || status === 'cancelled'
}

/** What `BackgroundManager.submit` takes. */
export interface SubmitRequest {
  /** What the agent should do. Required, not blank, at most `maxPromptLength` characters. */
  readonly prompt: string
  /** Channel to notify at start and end, e.g. `telegram:123`. Without it no notices are sent. */
  readonly originChannel?: string
  /** Session the task was submitted from, e.g. `telegram:123:456`. Kept for display only. */
  readonly originSession?: string
  /**
   * Who the task's spend counts against: the person (session key) whose chat or cron job submitted
   * it. Passed to the runner with the task (`AgentRunRequest.creator`); at most 256 characters.
   */
  readonly creator?: string
  /** This task's timeout; defaults to the manager's `taskTimeoutMs`. `Infinity` means none. */
  readonly timeoutMs?: number
  /**
   * How deep in a chain of automation runs this submission is, as the host counts it: 0 from a
   * person, 1 from inside a cron run, task or workflow step a person started, and so on (SECURITY.md
   * WF-7). The manager also counts its own chain (a submission from a task's session `bg:<id>` is
   * one deeper than that task) and takes the deeper; past `maxNesting` it refuses the task
   * (`BACKGROUND_NESTING_TOO_DEEP`). Default 0.
   */
  readonly nesting?: number
}

/**
 * An immutable copy of a task's state at one moment. Serialises cleanly to JSON; times are epoch
 * milliseconds (UTC), like the times the other Lango packages store.
 */
export interface TaskSnapshot {
  readonly id: TaskId
  readonly status: TaskStatus
  /** The prompt as submitted (without the automation prefix). */
  readonly prompt: string
  /** The agent's answer once `done`, capped at `maxResultLength` characters (see `resultTruncated`). */
  readonly result: string | undefined
  /** True when `result` was cut to `maxResultLength`; the text then ends with a `[… truncated …]` marker. */
  readonly resultTruncated: boolean
  /**
   * Tokens the agent reported for a `done` task (`AgentRunResult.usage`) or a `failed` one (its
   * rejection's `AgentRunFailure.usage`), counts that are not whole numbers of 0 or more left out;
   * undefined otherwise, and when the runner reported none.
   */
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number } | undefined
  /** Why the task failed or was cancelled, for people (capped at 2,000 characters). */
  readonly error: string | undefined
  /** Why the task failed or was cancelled, for code. */
  readonly errorCode: BackgroundErrorCode | undefined
  /** True when the task failed because it passed its deadline. */
  readonly timedOut: boolean
  /** How deep in a chain of automation runs the task is (`SubmitRequest.nesting`): 0 for a person's. */
  readonly nesting: number
  /**
   * For `failed` tasks: false when the runner threw a `PermanentError` or an error with
   * `retryable: false` (`AgentRunFailure`), else true. Undefined otherwise.
   */
  readonly retryable: boolean | undefined
  readonly originChannel: string | undefined
  readonly originSession: string | undefined
  /** The timeout this task runs under, in milliseconds (`Infinity` for none). */
  readonly timeoutMs: number
  /** When the task was submitted, in epoch milliseconds (UTC), from the manager's clock. */
  readonly createdAt: number
  /** When the task got a slot (epoch ms); undefined while pending and for tasks cancelled while pending. */
  readonly startedAt: number | undefined
  /** When the task ended (epoch ms); undefined until then. */
  readonly completedAt: number | undefined
}

/** What `BackgroundManager.result` returns for a `done` task. */
export interface TaskResult {
  readonly id: TaskId
  readonly status: 'done'
  readonly result: string
  readonly resultTruncated: boolean
}
