import type { ResolvedOptions } from './background-manager-options.js'
import { BackgroundError, toError } from './errors.js'
import { formatNotice } from './notice.js'
import { isTerminalStatus, type TaskId } from './task.js'
import type { TaskRecord } from './task-record.js'

/** How the manager hands notice delivery its state and hears back from it. */
export interface NoticeHooks {
  /** Whether the manager has stopped for good; notices queued after that are dropped. */
  readonly isStopped: () => boolean
  /** A notice failed or timed out (the manager emits `notify:error`). */
  readonly onError: (event: {
    readonly taskId: TaskId
    readonly channel: string
    readonly error: BackgroundError
  }) => void
  /** A notice settled (delivered, failed, timed out or dropped): the manager re-checks idleness. */
  readonly onSettled: () => void
}

/**
 * Sends the origin channel a notice when a task starts and ends, one notice of a task after the
 * other, each bounded by `notifyTimeoutMs`. Counts the notices in flight so the manager knows when
 * it is idle, and lets `stop()` give up on those still being delivered.
 */
export class NoticeDelivery {
  readonly #options: Pick<ResolvedOptions, 'channelSender' | 'clock' | 'logger' | 'notifyTimeoutMs'>
  readonly #hooks: NoticeHooks
  /** Notices queued or being delivered. */
  #live = 0
  /** Abort functions of notices being delivered, so stop() can give up on them. */
  readonly #deliveries = new Set<(reason: BackgroundError) => void>()

  constructor(
    options: Pick<ResolvedOptions, 'channelSender' | 'clock' | 'logger' | 'notifyTimeoutMs'>,
    hooks: NoticeHooks,
  ) {
    this.#options = options
    this.#hooks = hooks
  }

  /** Notices queued or being delivered. */
  get live(): number {
    return this.#live
  }

  /** Queues a notice for the task's current status, after any earlier notice of the same task. */
  notify(record: TaskRecord): void {
    const channel = record.originChannel
    if (channel === undefined) return
    const text = formatNotice(record)
    const taskId = record.id
    this.#live += 1
    const previous = record.notices
    const delivery =
      previous === undefined
        ? this.#deliver(taskId, channel, text)
        : previous.then(() => this.#deliver(taskId, channel, text))
    record.notices = isTerminalStatus(record.status) ? undefined : delivery
  }

  /** Gives up on every notice being delivered: each send's signal aborts with `reason`. */
  abortAll(reason: BackgroundError): void {
    for (const abort of [...this.#deliveries]) abort(reason)
  }

  /** Delivers one notice; always resolves. Failures and timeouts are logged and reported, never thrown. */
  #deliver(taskId: TaskId, channel: string, text: string): Promise<void> {
    const options = this.#options
    return new Promise<void>((resolve) => {
      if (this.#hooks.isStopped()) {
        options.logger.warn('background notice dropped: manager stopped', { taskId })
        this.#live -= 1
        this.#hooks.onSettled()
        resolve()
        return
      }
      const controller = new AbortController()
      let settled = false
      const settle = (error: BackgroundError | undefined): void => {
        if (settled) return
        settled = true
        options.clock.clearTimeout(timer)
        this.#deliveries.delete(abort)
        this.#live -= 1
        if (error !== undefined) {
          options.logger.warn('background notice failed', {
            taskId,
            channel,
            errorCode: error.code,
            causeName: error.cause instanceof Error ? error.cause.name : undefined,
          })
          this.#hooks.onError({ taskId, channel, error })
        }
        resolve()
        this.#hooks.onSettled()
      }
      const abort = (reason: BackgroundError): void => {
        controller.abort(reason)
        settle(reason)
      }
      const timer = options.clock.setTimeout(() => {
        abort(
          new BackgroundError(
            'BACKGROUND_NOTIFY_FAILED',
            `The notice for task ${taskId} was not delivered within ${options.notifyTimeoutMs} ms`,
            { data: { taskId } },
          ),
        )
      }, options.notifyTimeoutMs)
      this.#deliveries.add(abort)
      let sending: Promise<void>
      try {
        sending = options.channelSender.send(channel, text, { signal: controller.signal })
      } catch (error) {
        sending = Promise.reject(error)
      }
      Promise.resolve(sending).then(
        () => settle(undefined),
        (error: unknown) =>
          settle(
            new BackgroundError(
              'BACKGROUND_NOTIFY_FAILED',
              `The notice for task ${taskId} was not delivered`,
              {
                cause: toError(error),
                data: { taskId },
              },
            ),
          ),
      )
    })
  }
}
