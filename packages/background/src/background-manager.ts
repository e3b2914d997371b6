import { applyAutomationPrefix } from './automation-prefix.js'
import {
  type BackgroundManagerOptions,
  checkTimeout,
  invalidInput,
  type ResolvedOptions,
  resolveOptions,
} from './background-manager-options.js'
import { Deadlines } from './deadlines.js'
import { BackgroundError, PermanentError, toError } from './errors.js'
import { type BackgroundEventName, type BackgroundListener, Emitter } from './events.js'
import { Fifo } from './fifo.js'
import { NoticeDelivery } from './notice-delivery.js'
import { refuseUnknownKeys } from './option-keys.js'
import type { AgentRunResult } from './ports.js'
import {
  isTerminalStatus,
  type SubmitRequest,
  TASK_STATUSES,
  type TaskId,
  type TaskResult,
  type TaskSnapshot,
  type TaskStatus,
} from './task.js'
import { abortRunner, runOptions, TaskRecord, usageCounts } from './task-record.js'
import { capText, formatDuration } from './text.js'

/** Longest stored error message, in characters. */
const MAX_ERROR_LENGTH = 2000
/** Longest accepted origin channel or session name, in characters. */
const MAX_ORIGIN_LENGTH = 256
/** Matches any text with a non-whitespace character. */
const NON_BLANK = /\S/

const checkSubmitKeys = refuseUnknownKeys('submit request', [
  'prompt',
  'originChannel',
  'originSession',
  'creator',
  'timeoutMs',
  'nesting',
])
const checkListKeys = refuseUnknownKeys('list options', ['status'])
const checkSignalKeys = refuseUnknownKeys('call options', ['signal'])

/** Lifecycle of a manager: `idle` (queueing only) → `running` → `stopping` → `stopped`. */
export type BackgroundManagerState = 'idle' | 'running' | 'stopping' | 'stopped'

/**
 * Runs agent tasks in the background, in memory: a bounded FIFO queue feeds at most
 * `maxConcurrentTasks` runners; each task has a deadline, can be cancelled, and its origin channel
 * hears when it starts and ends. Ended tasks are kept up to `maxFinishedTasks`.
 *
 * Tasks submitted before `start()` wait in the queue. `stop()` cancels everything and waits.
 *
 * @example
 * const manager = new BackgroundManager({ agentRunner, channelSender })
 * manager.start()
 * const id = manager.submit({ prompt: 'Summarise the open issues', originChannel: 'telegram:42' })
 * const task = await manager.wait(id)
 * await manager.stop()
 */
export class BackgroundManager {
  readonly #options: ResolvedOptions
  readonly #emitter: Emitter
  readonly #deadlines: Deadlines<TaskRecord>
  /** Every known task by id, in submission order (so newest is last). */
  readonly #tasks = new Map<TaskId, TaskRecord>()
  /**
   * Pending tasks in FIFO order. A cancelled pending task stays in it until dispatch skips it (or a
   * compaction drops it), so `#pendingCount`, not the list length, is the queue size.
   */
  readonly #queue = new Fifo<TaskRecord>()
  #pendingCount = 0
  /** Ended tasks in the order they ended, for eviction. */
  readonly #ended = new Fifo<TaskRecord>()
  #runningCount = 0
  /** Runner calls that have not settled, including ones whose task already ended. */
  #liveRunners = 0
  readonly #notices: NoticeDelivery
  #idleWaiters: Array<() => void> = []
  /** Callers of whenIdle(): released once no task is pending or running and no notice is in flight. */
  #drainWaiters: Array<() => void> = []
  #state: BackgroundManagerState = 'idle'
  #pumping = false
  #stopping: Promise<void> | undefined
  #releaseDrain: (() => void) | undefined

  constructor(options: BackgroundManagerOptions) {
    this.#options = Object.freeze(resolveOptions(options))
    this.#deadlines = new Deadlines<TaskRecord>(this.#options.clock, (record) => this.#onDeadline(record))
    this.#emitter = new Emitter((event, error) => {
      this.#options.logger.error('background event listener threw', { event, errorName: toError(error).name })
    })
    this.#notices = new NoticeDelivery(this.#options, {
      isStopped: () => this.#state === 'stopped',
      onError: (event) => this.#emitter.emit('notify:error', event),
      onSettled: () => this.#checkIdle(),
    })
  }

  /** Where the manager is in its lifecycle. */
  get state(): BackgroundManagerState {
    return this.#state
  }

  /** Starts dispatching queued tasks. Calling it again is a no-op; after `stop()` it throws `BACKGROUND_STOPPED`. */
  start(): void {
    if (this.#state === 'running') return
    if (this.#state !== 'idle') throw stoppedError()
    this.#state = 'running'
    this.#options.logger.info('background manager started', {
      maxConcurrentTasks: this.#options.maxConcurrentTasks,
      maxQueuedTasks: this.#options.maxQueuedTasks,
    })
    this.#pump()
  }

  /**
   * Queues a task and returns its id at once; it starts as soon as a slot is free.
   *
   * @throws BackgroundError `BACKGROUND_INVALID_INPUT` for a blank or too long prompt or a bad timeout,
   *   `BACKGROUND_NESTING_TOO_DEEP` past `maxNesting`, `BACKGROUND_QUEUE_FULL` when `maxQueuedTasks`
   *   tasks already wait, `BACKGROUND_STOPPED` after `stop()`.
   */
  submit(request: SubmitRequest): TaskId {
    checkSubmitKeys(request)
    if (this.#state === 'stopping' || this.#state === 'stopped') throw stoppedError()
    const options = this.#options
    const prompt = request?.prompt
    if (typeof prompt !== 'string' || !NON_BLANK.test(prompt)) {
      throw invalidInput('prompt is required and must be a non-empty string', { field: 'prompt' })
    }
    if (prompt.length > options.maxPromptLength) {
      throw invalidInput(`prompt is longer than ${options.maxPromptLength} characters`, {
        field: 'prompt',
        length: prompt.length,
        maxPromptLength: options.maxPromptLength,
      })
    }
    const originChannel = checkOrigin(request.originChannel, 'originChannel')
    const originSession = checkOrigin(request.originSession, 'originSession')
    const creator = checkOrigin(request.creator, 'creator')
    const timeoutMs = request.timeoutMs ?? options.taskTimeoutMs
    checkTimeout(timeoutMs, 'timeoutMs')
    const nesting = this.#nestingOf(request.nesting, originSession)

    const startsNow =
      this.#state === 'running' && this.#runningCount < options.maxConcurrentTasks && this.#pendingCount === 0
    if (!startsNow && this.#pendingCount >= options.maxQueuedTasks) {
      throw new BackgroundError(
        'BACKGROUND_QUEUE_FULL',
        `The background queue is full (${options.maxQueuedTasks} tasks waiting); try again when some have ended.`,
        { data: { maxQueuedTasks: options.maxQueuedTasks, running: this.#runningCount } },
      )
    }

    const id = options.idGenerator()
    if (typeof id !== 'string' || id === '' || this.#tasks.has(id)) {
      throw new BackgroundError(
        'BACKGROUND_DUPLICATE_ID',
        'The id generator returned an empty or duplicate id',
      )
    }
    const record = new TaskRecord(
      id,
      prompt,
      originChannel,
      originSession,
      timeoutMs,
      this.#now(),
      creator,
      nesting,
    )
    this.#tasks.set(id, record)
    this.#queue.push(record)
    this.#pendingCount += 1
    options.logger.debug('background task submitted', { taskId: id, promptLength: prompt.length })
    if (this.#emitter.has('task:submit')) this.#emitter.emit('task:submit', toSnapshot(record))
    this.#pump()
    return id
  }

  /**
   * How deep a submission is: the caller's `nesting`, or one deeper than the task whose session
   * (`bg:<id>`) it comes from, whichever is deeper. Throws past `maxNesting`.
   */
  #nestingOf(given: number | undefined, originSession: string | undefined): number {
    if (given !== undefined && (!Number.isSafeInteger(given) || given < 0))
      throw invalidInput('nesting must be a whole number of 0 or more', { field: 'nesting' })
    const parent =
      originSession?.startsWith('bg:') === true ? this.#tasks.get(originSession.slice(3)) : undefined
    const nesting = Math.max(given ?? 0, parent === undefined ? 0 : parent.nesting + 1)
    const { maxNesting } = this.#options
    if (nesting > maxNesting)
      throw new BackgroundError(
        'BACKGROUND_NESTING_TOO_DEEP',
        `Tasks submitted from inside automation runs may nest at most ${maxNesting} deep; this one would be ${nesting} deep. Do the work in this task instead of submitting another.`,
        { data: { nesting, maxNesting } },
      )
    return nesting
  }

  /**
   * The current state of a task.
   *
   * @throws BackgroundError `BACKGROUND_TASK_NOT_FOUND` for an unknown or evicted id.
   */
  snapshot(taskId: TaskId): TaskSnapshot {
    return toSnapshot(this.#get(taskId))
  }

  /**
   * Known tasks, newest (most recently submitted) first, optionally only those with one status.
   * At most `maxQueuedTasks + maxConcurrentTasks + maxFinishedTasks` tasks are ever known.
   *
   * @throws BackgroundError `BACKGROUND_INVALID_INPUT` for an unknown status.
   */
  list(options?: { readonly status?: TaskStatus }): readonly TaskSnapshot[] {
    checkListKeys(options)
    const status = options?.status
    if (status !== undefined && !(TASK_STATUSES as readonly string[]).includes(status)) {
      throw invalidInput(`status must be one of ${TASK_STATUSES.join(', ')}`, { field: 'status' })
    }
    const records = [...this.#tasks.values()]
    const snapshots: TaskSnapshot[] = []
    for (let index = records.length - 1; index >= 0; index -= 1) {
      const record = records[index] as TaskRecord
      if (status === undefined || record.status === status) snapshots.push(toSnapshot(record))
    }
    return snapshots
  }

  /**
   * The result of a `done` task.
   *
   * @throws BackgroundError `BACKGROUND_TASK_NOT_DONE` (naming the status in the message and
   *   `data.status`) when the task is pending, running, failed or cancelled;
   *   `BACKGROUND_TASK_NOT_FOUND` for an unknown or evicted id.
   */
  result(taskId: TaskId): TaskResult {
    const record = this.#get(taskId)
    if (record.status !== 'done') {
      throw new BackgroundError('BACKGROUND_TASK_NOT_DONE', notDoneMessage(record), {
        data: { taskId: record.id, status: record.status, errorCode: record.errorCode },
      })
    }
    return Object.freeze({
      id: record.id,
      status: 'done',
      result: record.result ?? '',
      resultTruncated: record.resultTruncated,
    })
  }

  /**
   * Cancels a pending or running task: it ends `cancelled` at once, frees its slot, its runner's
   * signal aborts with a `BACKGROUND_TASK_CANCELLED` error, and its origin channel is told.
   *
   * @throws BackgroundError `BACKGROUND_TASK_ENDED` when the task already ended,
   *   `BACKGROUND_TASK_NOT_FOUND` for an unknown or evicted id.
   */
  cancel(taskId: TaskId): TaskSnapshot {
    const record = this.#get(taskId)
    if (isTerminalStatus(record.status)) {
      throw new BackgroundError(
        'BACKGROUND_TASK_ENDED',
        `Task ${record.id} already ended (${record.status}); there is nothing to cancel.`,
        { data: { taskId: record.id, status: record.status } },
      )
    }
    const reason = new BackgroundError('BACKGROUND_TASK_CANCELLED', `Task ${record.id} was cancelled`, {
      data: { taskId: record.id },
    })
    if (record.status === 'running') abortRunner(record, reason)
    this.#end(record, 'cancelled', reason)
    return toSnapshot(record)
  }

  /**
   * Resolves once no task is pending or running and every notice has been delivered (or given
   * up on): the way to wait for a batch without listening to every `task:end`.
   *
   * Rejects with `signal.reason` when `signal` aborts.
   */
  async whenIdle(options?: { readonly signal?: AbortSignal }): Promise<void> {
    checkSignalKeys(options)
    const signal = options?.signal
    signal?.throwIfAborted()
    if (this.#isIdle() && this.#pendingCount === 0 && this.#runningCount === 0) return
    let release!: () => void
    const idle = new Promise<void>((resolve) => {
      release = resolve
    })
    this.#drainWaiters.push(release)
    if (signal === undefined) return idle
    let onAbort: (() => void) | undefined
    try {
      await Promise.race([
        idle,
        new Promise<never>((_, reject) => {
          onAbort = () => reject(signal.reason)
          signal.addEventListener('abort', onAbort, { once: true })
        }),
      ])
    } finally {
      if (onAbort !== undefined) signal.removeEventListener('abort', onAbort)
      this.#drainWaiters = this.#drainWaiters.filter((waiter) => waiter !== release)
    }
  }

  /**
   * Resolves with the task's snapshot once it has ended (at once if it already has).
   *
   * @throws BackgroundError `BACKGROUND_TASK_NOT_FOUND`; rejects with `signal.reason` when `signal` aborts.
   */
  async wait(taskId: TaskId, options?: { readonly signal?: AbortSignal }): Promise<TaskSnapshot> {
    checkSignalKeys(options)
    const signal = options?.signal
    signal?.throwIfAborted()
    const record = this.#get(taskId)
    if (isTerminalStatus(record.status)) return toSnapshot(record)
    return new Promise<TaskSnapshot>((resolve, reject) => {
      const onAbort = (): void => {
        const index = record.waiters?.indexOf(waiter) ?? -1
        if (index >= 0) record.waiters?.splice(index, 1)
        reject(signal?.reason)
      }
      const waiter = (snapshot: TaskSnapshot): void => {
        signal?.removeEventListener('abort', onAbort)
        resolve(snapshot)
      }
      record.waiters ??= []
      record.waiters.push(waiter)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** Subscribes to an event; returns a function that unsubscribes. */
  on<E extends BackgroundEventName>(event: E, listener: BackgroundListener<E>): () => void {
    return this.#emitter.on(event, listener)
  }

  /**
   * Stops for good: rejects new submissions, cancels every pending and running task (each ends
   * `cancelled` with `BACKGROUND_STOPPED` and its channel is told), then waits for runners and
   * notices to settle, at most `stopGraceMs`. Runners still going after that are abandoned and logged.
   * Calling it again waits for the same stop.
   *
   * If `signal` aborts, stop gives up waiting at once and rejects with `signal.reason`
   * (the tasks are already cancelled).
   */
  async stop(options?: { readonly signal?: AbortSignal }): Promise<void> {
    checkSignalKeys(options)
    const signal = options?.signal
    signal?.throwIfAborted()
    if (this.#stopping === undefined) {
      this.#state = 'stopping'
      const reason = stoppedError()
      // Copy first: ending a task mutates the queue and may evict from the task map.
      for (const record of [...this.#tasks.values()]) {
        if (isTerminalStatus(record.status)) continue
        if (record.status === 'running') abortRunner(record, reason)
        this.#end(record, 'cancelled', reason)
      }
      this.#stopping = this.#drain()
    }
    if (signal === undefined) return this.#stopping
    const stopping = this.#stopping
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.#releaseDrain?.()
        reject(signal.reason)
      }
      signal.addEventListener('abort', onAbort, { once: true })
      stopping.then(() => {
        signal.removeEventListener('abort', onAbort)
        resolve()
      }, reject)
    })
  }

  /** Same as `stop()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop()
  }

  #get(taskId: TaskId): TaskRecord {
    const record = typeof taskId === 'string' ? this.#tasks.get(taskId) : undefined
    if (record === undefined) {
      throw new BackgroundError(
        'BACKGROUND_TASK_NOT_FOUND',
        'No background task has this id (it may never have existed, or it ended long ago and was evicted).',
        { data: { taskId: typeof taskId === 'string' ? taskId.slice(0, 100) : undefined } },
      )
    }
    return record
  }

  /** The clock's wall time in epoch milliseconds, for timestamps. */
  #now(): number {
    return this.#options.clock.now().getTime()
  }

  /** Starts queued tasks while slots are free. Re-entrant calls (from listeners) are folded into the running loop. */
  #pump(): void {
    if (this.#pumping) return
    this.#pumping = true
    try {
      const max = this.#options.maxConcurrentTasks
      while (this.#state === 'running' && this.#runningCount < max && this.#pendingCount > 0) {
        const record = this.#queue.shift() as TaskRecord
        if (record.status !== 'pending') continue
        this.#pendingCount -= 1
        this.#begin(record)
      }
    } finally {
      this.#pumping = false
    }
  }

  #begin(record: TaskRecord): void {
    const options = this.#options
    record.status = 'running'
    record.startedAt = this.#now()
    this.#runningCount += 1
    if (record.timeoutMs !== Number.POSITIVE_INFINITY) this.#deadlines.watch(record, record.timeoutMs)
    options.logger.info('background task started', { taskId: record.id })
    if (this.#emitter.has('task:start')) this.#emitter.emit('task:start', toSnapshot(record))
    this.#notices.notify(record)

    this.#liveRunners += 1
    let running: Promise<AgentRunResult>
    try {
      running = options.agentRunner.run(
        {
          prompt: applyAutomationPrefix(options.automationPrefix, record.prompt),
          sessionKey: `bg:${record.id}`,
          ...(record.creator === undefined ? {} : { creator: record.creator }),
        },
        runOptions(record),
      )
    } catch (error) {
      running = Promise.reject(error)
    }
    // The task may end first (cancel, deadline, stop); then #settle only releases the runner.
    Promise.resolve(running).then(
      (value) => this.#settle(record, value, undefined, true),
      (error: unknown) => this.#settle(record, undefined, error, false),
    )
  }

  #settle(record: TaskRecord, value: unknown, failure: unknown, ok: boolean): void {
    this.#liveRunners -= 1
    if (record.status !== 'running') {
      this.#options.logger.debug('background runner settled after its task ended; outcome discarded', {
        taskId: record.id,
        status: record.status,
      })
      this.#checkIdle()
      return
    }
    try {
      this.#finish(record, value, failure, ok)
    } finally {
      // #finish ends the task, and #end releases whenIdle()/stop(); this also covers a throw half way.
      this.#checkIdle()
    }
  }

  /** Ends a running task with its runner's outcome. */
  #finish(record: TaskRecord, value: unknown, failure: unknown, ok: boolean): void {
    let text: string | undefined
    if (ok) {
      try {
        text = resultText(value)
      } catch (error) {
        // A result whose text cannot be read (a throwing toString) fails the task instead of leaving it running.
        failure = error
      }
    }
    if (text !== undefined) {
      record.result = capText(text, this.#options.maxResultLength)
      record.resultTruncated = text.length > this.#options.maxResultLength
      record.usage = usageOf(value)
      this.#end(record, 'done', undefined)
    } else {
      const cause = toError(failure)
      const error = new BackgroundError('BACKGROUND_TASK_FAILED', cause.message || cause.name, {
        cause,
        data: { taskId: record.id },
      })
      // The runner's rejection may say what it spent and that retrying cannot help (AgentRunFailure).
      record.usage = usageOf(failure)
      record.retryable =
        !PermanentError.is(failure) && (failure as { retryable?: unknown } | null)?.retryable !== false
      this.#end(record, 'failed', error)
    }
  }

  #onDeadline(record: TaskRecord): void {
    if (record.status !== 'running') return
    const error = new BackgroundError(
      'BACKGROUND_TASK_TIMEOUT',
      `Task ${record.id} timed out after ${formatDuration(record.timeoutMs)}`,
      { data: { taskId: record.id, timeoutMs: record.timeoutMs } },
    )
    this.#options.logger.warn('background task timed out', { taskId: record.id, timeoutMs: record.timeoutMs })
    abortRunner(record, error)
    record.timedOut = true
    this.#end(record, 'failed', error)
  }

  /**
   * Moves a pending or running task to a terminal status; the single place a task ends. Callers set
   * `result`, `resultTruncated`, `timedOut` and `retryable` on the record first.
   */
  #end(
    record: TaskRecord,
    status: 'done' | 'failed' | 'cancelled',
    error: BackgroundError | undefined,
  ): void {
    const wasRunning = record.status === 'running'
    if (!wasRunning && record.status !== 'pending') return
    const options = this.#options
    record.status = status
    record.completedAt = this.#now()
    if (wasRunning) this.#deadlines.unwatch(record)
    if (error !== undefined) {
      record.error = capText(error.message, MAX_ERROR_LENGTH)
      record.errorCode = error.code
      if (status === 'failed') record.retryable ??= true
    }
    if (wasRunning) {
      this.#runningCount -= 1
      // Ended without the runner's own count (cancelled, timed out, stopped): its last told total.
      record.usage ??= record.told
    } else {
      this.#pendingCount -= 1
      // Cancelled pending tasks linger in the queue until dispatch reaches them; keep that bounded.
      if (this.#queue.length > 2 * this.#pendingCount + 64)
        this.#queue.retain((queued) => queued.status === 'pending')
    }
    this.#ended.push(record)

    options.logger.info('background task ended', {
      taskId: record.id,
      status,
      errorCode: record.errorCode,
      durationMs: wasRunning ? Math.max(0, record.completedAt - (record.startedAt ?? record.completedAt)) : 0,
    })
    const waiters = record.waiters
    record.waiters = undefined
    if (waiters !== undefined || this.#emitter.has('task:end')) {
      const snapshot = toSnapshot(record)
      for (const waiter of waiters ?? []) waiter(snapshot)
      this.#emitter.emit('task:end', snapshot)
    }
    this.#notices.notify(record)
    this.#evict()
    this.#pump()
    this.#checkIdle()
  }

  #evict(): void {
    const max = this.#options.maxFinishedTasks
    while (this.#ended.length > max) {
      const oldest = this.#ended.shift() as TaskRecord
      this.#tasks.delete(oldest.id)
      oldest.notices = undefined
    }
  }

  /** Waits until runners and notices have settled or `stopGraceMs` passed, then gives up on the rest. */
  async #drain(): Promise<void> {
    const options = this.#options
    if (!this.#isIdle() && options.stopGraceMs > 0) {
      await new Promise<void>((resolve) => {
        let released = false
        const release = (): void => {
          if (released) return
          released = true
          options.clock.clearTimeout(timer)
          this.#releaseDrain = undefined
          resolve()
        }
        const timer = options.clock.setTimeout(release, options.stopGraceMs)
        this.#releaseDrain = release
        this.#idleWaiters.push(release)
      })
    }
    this.#idleWaiters = []
    this.#state = 'stopped'
    const reason = stoppedError()
    this.#notices.abortAll(reason)
    if (this.#liveRunners > 0) {
      options.logger.warn('background runners ignored their abort signal; abandoning them', {
        count: this.#liveRunners,
      })
    }
    options.logger.info('background manager stopped', {})
  }

  #isIdle(): boolean {
    return this.#liveRunners === 0 && this.#notices.live === 0
  }

  #checkIdle(): void {
    if (!this.#isIdle()) return
    if (this.#idleWaiters.length > 0) {
      const waiters = this.#idleWaiters
      this.#idleWaiters = []
      for (const waiter of waiters) waiter()
    }
    if (this.#drainWaiters.length > 0 && this.#pendingCount === 0 && this.#runningCount === 0) {
      const waiters = this.#drainWaiters
      this.#drainWaiters = []
      for (const waiter of waiters) waiter()
    }
  }
}

function checkOrigin(value: string | undefined, field: string): string | undefined {
  if (value === undefined || value === '') return undefined
  if (typeof value !== 'string' || value.length > MAX_ORIGIN_LENGTH) {
    throw invalidInput(`${field} must be a string of at most ${MAX_ORIGIN_LENGTH} characters`, { field })
  }
  return value
}

function stoppedError(): BackgroundError {
  return new BackgroundError('BACKGROUND_STOPPED', 'The background manager has stopped')
}

function notDoneMessage(record: TaskRecord): string {
  switch (record.status) {
    case 'pending':
      return `Task ${record.id} is pending (waiting for a free slot); it has no result until it is done.`
    case 'running':
      return `Task ${record.id} is still running; it has no result until it is done.`
    case 'failed':
      return record.timedOut
        ? `Task ${record.id} failed (it timed out); it has no result.`
        : `Task ${record.id} failed; it has no result (see its error).`
    default:
      return `Task ${record.id} was ${record.status}; it has no result.`
  }
}

function resultText(value: unknown): string {
  if (typeof value === 'string') return value
  const text = (value as { text?: unknown } | null | undefined)?.text
  if (typeof text === 'string') return text
  return text === undefined || text === null ? '' : String(text)
}

/**
 * The runner's `usage`, when both counts are whole numbers of 0 or more: the runner is the host's
 * code, so anything else is left out rather than shown as a count.
 */
function usageOf(value: unknown): TaskSnapshot['usage'] {
  return usageCounts((value as { usage?: unknown } | null | undefined)?.usage)
}

function toSnapshot(record: TaskRecord): TaskSnapshot {
  return Object.freeze({
    id: record.id,
    status: record.status,
    prompt: record.prompt,
    result: record.result,
    resultTruncated: record.resultTruncated,
    usage: record.usage,
    error: record.error,
    errorCode: record.errorCode,
    timedOut: record.timedOut,
    retryable: record.retryable,
    originChannel: record.originChannel,
    originSession: record.originSession,
    nesting: record.nesting,
    timeoutMs: record.timeoutMs,
    createdAt: record.createdAt,
    startedAt: record.startedAt,
    completedAt: record.completedAt,
  })
}
