import type { BackgroundErrorCode } from './errors.js'
import type { TaskStatus } from './task.js'
import { excerpt, formatDuration } from './text.js'

/** Longest prompt excerpt in a notice. */
const PROMPT_EXCERPT_LENGTH = 80
/** Longest result excerpt in a notice. */
const RESULT_EXCERPT_LENGTH = 500
/** Longest error excerpt in a notice. */
const ERROR_EXCERPT_LENGTH = 300

/** The task fields a notice is built from. */
export interface NoticeSubject {
  readonly id: string
  readonly status: TaskStatus
  readonly prompt: string
  readonly result: string | undefined
  readonly error: string | undefined
  readonly errorCode: BackgroundErrorCode | undefined
  readonly timedOut: boolean
  readonly retryable: boolean | undefined
  readonly timeoutMs: number
  readonly startedAt: number | undefined
  readonly completedAt: number | undefined
}

/**
 * The text sent to the origin channel when a task starts or ends: task id, status, a short prompt
 * excerpt to recognise the task by, and a short result or error excerpt.
 */
export function formatNotice(task: NoticeSubject): string {
  const header = `[Background] Task ${task.id}`
  const about = excerpt(task.prompt, PROMPT_EXCERPT_LENGTH)
  const elapsed =
    task.startedAt !== undefined && task.completedAt !== undefined
      ? formatDuration(task.completedAt - task.startedAt)
      : undefined
  switch (task.status) {
    case 'pending':
      return `${header} is queued: ${about}`
    case 'running':
      return `${header} started: ${about}\nI will post the result here when it ends.`
    case 'done': {
      const text = task.result ?? ''
      const shown = excerpt(text, RESULT_EXCERPT_LENGTH)
      const more =
        shown.length < text.trim().length ? `\n(Shortened; ask for the result of task ${task.id}.)` : ''
      return `${header} done in ${elapsed}: ${about}\n\n${shown || '(empty result)'}${more}`
    }
    case 'failed':
      if (task.timedOut) {
        return `${header} failed: it timed out after ${formatDuration(task.timeoutMs)} and was stopped: ${about}`
      }
      return (
        `${header} failed after ${elapsed}: ${about}\nError: ${excerpt(task.error ?? 'unknown error', ERROR_EXCERPT_LENGTH)}` +
        (task.retryable === false ? '\nRetrying will not help.' : '')
      )
    case 'cancelled':
      return task.errorCode === 'BACKGROUND_STOPPED'
        ? `${header} cancelled because the background service stopped: ${about}`
        : `${header} cancelled: ${about}`
  }
}
