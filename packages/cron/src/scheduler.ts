import { randomUUID } from 'node:crypto'
import { formatDuration } from './duration.js'
import { CronError, toError } from './errors.js'
import { TypedEmitter, type Unsubscribe } from './events.js'
import {
  cancellation,
  deliver,
  deliveryText,
  type ExecutionOutcome,
  executeJob,
  truncate,
} from './executor.js'
import { MinHeap } from './heap.js'
import type { CronJob, CronRun, CronRunStatus, DeliveryStatus, RunTrigger } from './model.js'
import type { CompiledSchedule } from './next-fire-time.js'
import type {
  AgentRunner,
  ChannelSender,
  Clock,
  CronStore,
  IdGenerator,
  JobScheduleUpdate,
  Logger,
  NewCronRun,
  ShellRunner,
} from './ports.js'
import { silentLogger, systemClock } from './ports.js'
import { RunBudget } from './run-budget.js'
import { compileJobSchedule } from './schedule.js'

/** Options of {@link CronScheduler}. Only `store` is required. */
export interface CronSchedulerOptions {
  readonly store: CronStore
  /** Runs `ai` jobs; without it they fail with a clear error recorded on the run. */
  readonly agentRunner?: AgentRunner
  /** Runs `shell` jobs (apps/server applies the exec guard and env policy). */
  readonly shellRunner?: ShellRunner
  /** Delivers results to each job's `deliverTo` targets. */
  readonly channelSender?: ChannelSender
  readonly clock?: Clock
  readonly logger?: Logger
  readonly idGenerator?: IdGenerator
  /** This instance's id in the `owner` column; a fresh id by default. */
  readonly ownerId?: string
  /** Runs in flight at once across all jobs (default 5); further due runs wait for a slot. */
  readonly maxConcurrentJobs?: number
  /** Consecutive failures (failed or timed out) after which a job is paused (default 5). */
  readonly maxConsecutiveFailures?: number
  /** How many earlier results an `ai` prompt shows (default 3). */
  readonly recentResultsInPrompt?: number
  /** Text before every automated prompt. */
  readonly automationPrefix?: string
  /** Batching delay for next/last run time writes (default 250 ms). */
  readonly scheduleWriteDelayMs?: number
  /** Bound on a stored result (default 16,000 characters). */
  readonly maxResultChars?: number
  /** An owner that has not heartbeated for this long is dead; its running rows become interrupted (default 60 s). */
  readonly leaseMs?: number
  /** Catch-up window = half the job's period clamped to [minMs, maxMs] (defaults 2 min and 2 h). */
  readonly catchupWindow?: { readonly minMs?: number; readonly maxMs?: number }
  /** History retention (defaults 30 days and 1000 rows per job). */
  readonly retention?: { readonly maxAgeMs?: number; readonly maxRunsPerJob?: number }
  /**
   * Most `ai` runs started in any 24 hours (default 5000, room for three jobs every minute;
   * `Infinity` for none; SECURITY.md CRON-3).
   * Beyond it an `ai` occurrence is recorded `skipped` with the reason and when the next may run.
   * Counted from the store at start and from this scheduler's own starts after that.
   */
  readonly maxAiRunsPerDay?: number
  /**
   * Spreads jobs that fall due at the same moment (SECURITY.md CRON-6): each recurring job fires a
   * fixed delay after each of its due times, from 0 to this many ms, derived from its id, so the
   * same job is always delayed alike. `scheduledFor` stays the due time; `startedAt` shows the
   * delay, which also stays below half the gap to the job's next due time. One-time (`at`) jobs and
   * manual triggers are never delayed. Default 0 (off); at most half the smallest catch-up window
   * (60 s by default). With jitter on, schedules are compiled when armed rather than when they fire.
   */
  readonly maxJitterMs?: number
  /**
   * Bound on each delivery send (default 30 s): a channel that has not answered by then is
   * aborted and the delivery recorded `failed` with the reason. Pause, remove and stop abort
   * deliveries in flight too.
   */
  readonly deliveryTimeoutMs?: number
}

/** What {@link CronScheduler.trigger} did. */
export interface TriggerResult {
  /** `started` now, `queued` behind the concurrency cap or the running occurrence, or `skipped` (overlap `skip`). */
  readonly status: 'started' | 'queued' | 'skipped'
  readonly runId?: string
  readonly reason?: string
}

/** Payloads of the scheduler's events. */
export interface CronSchedulerEvents {
  /** An occurrence came due and was handled: started, queued, skipped (with reason) or claimed by another scheduler. */
  'schedule:fire': {
    readonly jobId: string
    readonly jobName: string
    readonly scheduledFor: number
    readonly firedAt: number
    readonly trigger: RunTrigger
    readonly outcome: 'started' | 'queued' | 'skipped' | 'claimed-elsewhere'
    readonly runId?: string
    readonly reason?: string
  }
  /** A claimed run starts (its ledger row is `running`). */
  'run:start': { readonly job: CronJob; readonly run: CronRun }
  /** A run reached its final status; `run.deliveryStatus` is final too. */
  'run:end': { readonly job: CronJob; readonly run: CronRun }
  /** A run failed or timed out, or the scheduler hit an error it logged and survived. */
  'run:error': { readonly jobId?: string; readonly runId?: string; readonly error: Error }
  /** The scheduler disabled a job (auto-pause after consecutive failures). */
  'job:pause': { readonly job: CronJob; readonly reason: string }
}

/** Smallest catch-up window unless `catchupWindow.minMs` says otherwise. */
const DEFAULT_CATCHUP_MIN_MS = 120_000

/** A job in the heap; its schedule is compiled on first use (start-up arms without compiling). */
class ArmedJob {
  job: CronJob
  dueAt: number | undefined = undefined
  #compiled: CompiledSchedule | undefined

  constructor(job: CronJob) {
    this.job = job
  }

  get compiled(): CompiledSchedule {
    this.#compiled ??= compileJobSchedule(this.job)
    return this.#compiled
  }
}

interface HeapEntry {
  /** When to fire: the occurrence plus the job's jitter. Orders the heap and sets the timer. */
  readonly dueAt: number
  /** The occurrence itself (the ledger's `scheduledFor`). */
  readonly occurrence: number
  readonly armed: ArmedJob
}

interface Occurrence {
  readonly scheduledFor: number
  readonly trigger: RunTrigger
}

interface ActiveRun {
  readonly runId: string
  /** Aborted on timeout (the run only), pause, remove and stop; deliveries listen to it too. */
  readonly controller: AbortController
  /** What the run is doing, so an abort says what it interrupted. */
  phase: 'run' | 'deliver'
  done: Promise<unknown>
}

interface WaitingStart {
  readonly job: CronJob
  readonly occurrence: Occurrence
}

interface Plan {
  readonly run: Occurrence | undefined
  readonly skipped: readonly { readonly scheduledFor: number; readonly reason: string }[]
  readonly next: number | undefined
}

const MAX_TIMER_DELAY = 2_147_000_000
/** Missed occurrences recorded one row each before the rest are summarised in a reason. */
const MAX_SKIPPED_ROWS = 50
const PRUNE_EVERY_MS = 3_600_000

/**
 * The scheduler: one timer over a heap of next fires, the occurrence ledger, overlap policy,
 * a concurrency cap, timeouts, catch-up on start, interrupted-run recovery, retention and
 * auto-pause. Use {@link CronService} for the job operations; it keeps this in sync.
 * @example
 * await using scheduler = new CronScheduler({ store, agentRunner })
 * await scheduler.start()
 */
export class CronScheduler {
  /** Subscribe with `scheduler.events.on('run:end', …)` or await `scheduler.events.next('run:end')`. */
  readonly events: TypedEmitter<CronSchedulerEvents>
  /** This instance's `owner` id. */
  readonly ownerId: string

  readonly #store: CronStore
  readonly #clock: Clock
  readonly #logger: Logger
  readonly #newId: IdGenerator
  readonly #options: CronSchedulerOptions
  readonly #maxConcurrent: number
  readonly #aiBudget: RunBudget
  readonly #maxJitterMs: number
  readonly #deliveryTimeoutMs: number
  readonly #maxFailures: number
  readonly #leaseMs: number
  readonly #heap = new MinHeap<HeapEntry>()
  readonly #jobs = new Map<string, ArmedJob>()
  readonly #active = new Map<string, Set<ActiveRun>>()
  readonly #waiting: WaitingStart[] = []
  readonly #queuedBehind = new Map<string, Occurrence>()
  readonly #tasks = new Set<Promise<unknown>>()
  #running = 0
  #started = false
  #starting: Promise<void> | undefined
  #timer: unknown
  #timerAt: number | undefined
  #maintenanceTimer: unknown
  #writeTimer: unknown
  readonly #pendingWrites = new Map<string, JobScheduleUpdate>()
  #lastPrune = Number.NEGATIVE_INFINITY

  constructor(options: CronSchedulerOptions) {
    this.#options = Object.freeze({ ...options })
    this.#store = options.store
    this.#clock = options.clock ?? systemClock
    this.#logger = options.logger ?? silentLogger
    this.#newId = options.idGenerator ?? randomUUID
    this.ownerId = options.ownerId ?? this.#newId()
    this.#maxConcurrent = Math.max(1, options.maxConcurrentJobs ?? 5)
    const maxAiRunsPerDay = options.maxAiRunsPerDay ?? 5000
    if (typeof maxAiRunsPerDay !== 'number' || !(maxAiRunsPerDay >= 0)) {
      throw new CronError(
        'CRON_INVALID_INPUT',
        'maxAiRunsPerDay must be a number of runs, 0 or more (Infinity for no budget)',
        { data: { field: 'maxAiRunsPerDay' } },
      )
    }
    this.#aiBudget = new RunBudget(maxAiRunsPerDay)
    const maxJitterMs = options.maxJitterMs ?? 0
    const jitterLimit = Math.floor((options.catchupWindow?.minMs ?? DEFAULT_CATCHUP_MIN_MS) / 2)
    if (!Number.isSafeInteger(maxJitterMs) || maxJitterMs < 0 || maxJitterMs > jitterLimit) {
      throw new CronError(
        'CRON_INVALID_INPUT',
        `maxJitterMs must be a whole number of milliseconds from 0 to ${jitterLimit} (half the smallest catch-up window)`,
        { data: { field: 'maxJitterMs', max: jitterLimit } },
      )
    }
    this.#maxJitterMs = maxJitterMs
    const deliveryTimeoutMs = options.deliveryTimeoutMs ?? 30_000
    if (!Number.isSafeInteger(deliveryTimeoutMs) || deliveryTimeoutMs < 1) {
      throw new CronError(
        'CRON_INVALID_INPUT',
        'deliveryTimeoutMs must be a whole number of milliseconds, 1 or more',
        { data: { field: 'deliveryTimeoutMs' } },
      )
    }
    this.#deliveryTimeoutMs = deliveryTimeoutMs
    this.#maxFailures = Math.max(1, options.maxConsecutiveFailures ?? 5)
    this.#leaseMs = Math.max(1000, options.leaseMs ?? 60_000)
    this.events = new TypedEmitter((error) =>
      this.#logger.error('cron event listener threw', { error: toError(error).message }),
    )
  }

  /** The clock's time as epoch milliseconds (the ledger's unit). */
  #now(): number {
    return this.#clock.now().getTime()
  }

  /** True between `start()` and `stop()`. */
  get isRunning(): boolean {
    return this.#started
  }

  /** Runs in flight right now. */
  get runningCount(): number {
    return this.#running
  }

  /** Number of jobs armed in the heap. */
  get armedCount(): number {
    return this.#jobs.size
  }

  /** Subscribes to an event; shorthand for `events.on`. */
  on<K extends keyof CronSchedulerEvents>(
    event: K,
    listener: (payload: CronSchedulerEvents[K]) => void,
  ): Unsubscribe {
    return this.events.on(event, listener)
  }

  /**
   * Starts: registers this owner, marks runs of dead owners `interrupted`, loads enabled jobs,
   * runs one catch-up occurrence per job inside its window (others recorded `skipped`), arms
   * the timer. Idempotent.
   */
  async start(options?: { readonly signal?: AbortSignal }): Promise<void> {
    options?.signal?.throwIfAborted()
    if (this.#started) return
    if (this.#starting !== undefined) return this.#starting
    this.#starting = this.#doStart()
    try {
      await this.#starting
    } finally {
      this.#starting = undefined
    }
  }

  async #doStart(): Promise<void> {
    const now = this.#now()
    await this.#store.heartbeat(this.ownerId, now)
    const interrupted = await this.#store.interruptOrphanedRuns({
      now,
      aliveSince: now - this.#leaseMs,
      reason: 'interrupted: the scheduler that ran it stopped before the run ended (process exit or crash)',
    })
    const jobs = await this.#store.listJobs({ enabled: true })
    if (!this.#aiBudget.unlimited) {
      this.#aiBudget.seed(
        await this.#store.aiRunStartTimes({
          since: now - this.#aiBudget.windowMs,
          limit: this.#aiBudget.max,
        }),
      )
    }
    this.#started = true
    const missed: { armed: ArmedJob; firstDue: number }[] = []
    const updates: JobScheduleUpdate[] = []
    for (const job of jobs) {
      if (job.nextRunAt !== null && job.nextRunAt > now) {
        // The common case: armed from the persisted next fire, compiled only when it fires.
        const armed = new ArmedJob(job)
        this.#jobs.set(job.id, armed)
        this.#push(armed, job.nextRunAt)
        continue
      }
      const armed = this.#compile(job)
      if (armed === undefined) continue
      this.#jobs.set(job.id, armed)
      if (job.nextRunAt === null) {
        const next = armed.compiled.next(now)
        updates.push({ id: job.id, nextRunAt: next ?? null })
        armed.job = { ...job, nextRunAt: next ?? null }
        this.#push(armed, next)
      } else {
        missed.push({ armed, firstDue: job.nextRunAt })
      }
    }
    if (updates.length > 0) await this.#store.updateSchedules(updates)
    this.#logger.info('cron scheduler started', {
      owner: this.ownerId,
      jobs: this.#jobs.size,
      missed: missed.length,
      interrupted,
    })
    if (missed.length > 0) await this.#handleDue(missed, now, 'startup')
    this.#arm()
    this.#scheduleMaintenance(Math.min(this.#leaseMs / 3, 1000))
  }

  /**
   * Stops: clears timers, aborts in-flight runs (recorded `interrupted`), records occurrences
   * still waiting for a slot as `skipped`, waits for in-flight work, and deregisters the owner.
   */
  async stop(options?: { readonly signal?: AbortSignal }): Promise<void> {
    options?.signal?.throwIfAborted()
    if (this.#starting !== undefined) await this.#starting.catch(() => {})
    if (!this.#started) return
    this.#started = false
    this.#clearTimer()
    if (this.#maintenanceTimer !== undefined) this.#clock.clearTimeout(this.#maintenanceTimer)
    this.#maintenanceTimer = undefined
    for (const runs of this.#active.values()) {
      for (const run of runs) {
        run.controller.abort(
          cancellation(
            'interrupted',
            `interrupted: the scheduler stopped before the ${run.phase === 'run' ? 'run' : 'delivery'} ended`,
          ),
        )
      }
    }
    const waiting = this.#waiting.splice(0)
    for (const [jobId, occurrence] of this.#queuedBehind) {
      const armed = this.#jobs.get(jobId)
      if (armed !== undefined) waiting.push({ job: armed.job, occurrence })
    }
    this.#queuedBehind.clear()
    await this.whenIdle()
    if (waiting.length > 0) {
      await this.#recordSkips(
        waiting.map(({ job, occurrence }) => ({
          job,
          scheduledFor: occurrence.scheduledFor,
          trigger: occurrence.trigger,
          reason: 'skipped: the scheduler stopped before a run slot was free',
        })),
      ).catch((error: unknown) => this.#reportError(error))
    }
    await this.flushPendingWrites()
    this.#heap.clear()
    this.#jobs.clear()
    await this.#store.removeOwner(this.ownerId).catch((error: unknown) => this.#reportError(error))
    this.#logger.info('cron scheduler stopped', { owner: this.ownerId })
  }

  /** Same as {@link CronScheduler.stop}; for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop()
  }

  /** Resolves when no fire handling and no run is in flight. */
  async whenIdle(): Promise<void> {
    while (this.#tasks.size > 0) await Promise.allSettled([...this.#tasks])
  }

  /**
   * Arms (or re-arms) a job after it was created, updated or resumed. A disabled job is
   * unregistered. The job's `nextRunAt` is used when set, else the next fire after now.
   */
  register(job: CronJob): void {
    if (!this.#started) return
    if (!job.enabled) {
      void this.unregister(job.id, 'paused')
      return
    }
    const armed = this.#compile(job)
    if (armed === undefined) return
    // The caller just stored this job: its row is newer than any batched write for it.
    this.#pendingWrites.delete(job.id)
    this.#jobs.set(job.id, armed)
    this.#push(armed, job.nextRunAt ?? armed.compiled.next(this.#now()))
    this.#arm()
  }

  /**
   * Unregisters a job at once: its heap entry is dropped, runs in flight are aborted and
   * recorded `cancelled`, and occurrences waiting for a slot are recorded `skipped`.
   */
  async unregister(jobId: string, reason: 'paused' | 'removed'): Promise<void> {
    const armed = this.#jobs.get(jobId)
    this.#jobs.delete(jobId)
    this.#pendingWrites.delete(jobId)
    const active = [...(this.#active.get(jobId) ?? [])]
    for (const run of active) {
      run.controller.abort(
        cancellation(
          'cancelled',
          `cancelled: the job was ${reason} while the ${run.phase === 'run' ? 'run' : 'delivery'} was in progress`,
        ),
      )
    }
    const dropped = this.#dropPending(jobId, armed?.job)
    if (active.length > 0) await Promise.allSettled(active.map((run) => run.done))
    if (dropped.length > 0 && reason === 'paused') {
      await this.#recordSkips(
        dropped.map(({ job, occurrence }) => ({
          job,
          scheduledFor: occurrence.scheduledFor,
          trigger: occurrence.trigger,
          reason: 'skipped: the job was paused before the run could start',
        })),
      ).catch((error: unknown) => this.#reportError(error, jobId))
    }
    this.#arm()
  }

  /** Removes a job's occurrences waiting for a slot or queued behind its running one. */
  #dropPending(jobId: string, job: CronJob | undefined): WaitingStart[] {
    const dropped: WaitingStart[] = []
    for (let index = this.#waiting.length - 1; index >= 0; index--) {
      const waiting = this.#waiting[index] as WaitingStart
      if (waiting.job.id === jobId) dropped.push(...this.#waiting.splice(index, 1))
    }
    const queued = this.#queuedBehind.get(jobId)
    if (queued !== undefined && job !== undefined) dropped.push({ job, occurrence: queued })
    this.#queuedBehind.delete(jobId)
    return dropped
  }

  /**
   * Runs a job now, as its own ledger row (`trigger = manual`, `scheduledFor` = the trigger
   * time, moved back a millisecond at a time on collision). Returns without waiting for the run.
   */
  async trigger(job: CronJob): Promise<TriggerResult> {
    if (!this.#started) {
      throw new CronError(
        'CRON_NOT_RUNNING',
        'The scheduler is not running; start it before triggering jobs.',
      )
    }
    const now = this.#now()
    const admission = this.#admit(job)
    if (admission.kind === 'skip') {
      const recorded = await this.#claimManual(job, now, 'skipped', admission.reason, 1)
      return {
        status: 'skipped',
        reason: admission.reason,
        ...(recorded === undefined ? {} : { runId: recorded.id }),
      }
    }
    const occurrence: Occurrence = { scheduledFor: now, trigger: 'manual' }
    if (admission.kind === 'wait') {
      this.#waiting.push({ job, occurrence })
      return { status: 'queued', reason: 'waiting for a free run slot' }
    }
    if (admission.kind === 'behind') {
      this.#queuedBehind.set(job.id, occurrence)
      return { status: 'queued', reason: 'queued behind the running occurrence (overlap queue_one)' }
    }
    let claimed: { id: string; row: NewCronRun } | undefined
    try {
      claimed = await this.#claimManual(job, now, 'running', null, 1)
    } catch (error) {
      // The slot was taken by #admit: a failing store must not keep it (the caller may retry).
      this.#releaseSlot()
      throw error
    }
    if (claimed === undefined) {
      this.#releaseSlot()
      throw new CronError('CRON_RUN_FAILED', 'Could not record the manual run; try again.')
    }
    this.#startRun(job, claimed.row)
    return { status: 'started', runId: claimed.id }
  }

  // ---------------------------------------------------------------- firing

  #onTimer(): void {
    this.#timer = undefined
    this.#timerAt = undefined
    if (!this.#started) return
    const now = this.#now()
    const due: { armed: ArmedJob; firstDue: number }[] = []
    for (;;) {
      const top = this.#peekValid()
      // A timer that fired early (or a clock that went back) finds nothing due and re-arms.
      if (top === undefined || top.dueAt > now) break
      this.#heap.pop()
      top.armed.dueAt = undefined
      due.push({ armed: top.armed, firstDue: top.occurrence })
    }
    if (due.length > 0) this.#track(this.#handleDue(due, now, 'runtime'))
    this.#arm()
  }

  async #handleDue(
    due: readonly { armed: ArmedJob; firstDue: number }[],
    now: number,
    mode: 'startup' | 'runtime',
  ): Promise<void> {
    // Re-check the jobs: another process may have paused, removed or changed them.
    let versions: ReadonlyMap<string, { readonly enabled: boolean; readonly updatedAt: number }> | undefined
    if (mode === 'runtime') {
      try {
        versions = await this.#store.jobVersions(due.map((item) => item.armed.job.id))
      } catch (error) {
        this.#reportError(error)
        for (const item of due) {
          if (this.#jobs.get(item.armed.job.id) === item.armed) this.#push(item.armed, now + 1000)
        }
        this.#arm()
        return
      }
    }
    const startedAt = this.#now()
    const rows: NewCronRun[] = []
    const starts: { job: CronJob; row: NewCronRun }[] = []
    const updates = new Map<string, JobScheduleUpdate>()
    const rowsByJob = new Map<string, string[]>()
    const fires: CronSchedulerEvents['schedule:fire'][] = []
    const changed: string[] = []
    for (const { armed, firstDue } of due) {
      const jobId = armed.job.id
      if (this.#jobs.get(jobId) !== armed) continue
      const version = versions?.get(jobId)
      if (versions !== undefined && (version === undefined || !version.enabled)) {
        this.#jobs.delete(jobId)
        continue
      }
      if (version !== undefined && version.updatedAt !== armed.job.updatedAt) {
        changed.push(jobId)
        continue
      }
      const job = armed.job
      let plan: Plan
      try {
        plan = this.#plan(armed, firstDue, now, mode)
      } catch (error) {
        // A stored schedule that no longer compiles: report it and stop arming the job.
        this.#reportError(error, jobId)
        this.#jobs.delete(jobId)
        continue
      }
      const ids: string[] = []
      for (const skip of plan.skipped) {
        const row = this.#row(
          job,
          skip.scheduledFor,
          mode === 'startup' ? 'catchup' : 'schedule',
          'skipped',
          startedAt,
          skip.reason,
        )
        rows.push(row)
        ids.push(row.id)
        fires.push(this.#fireEvent(job, row, now, 'skipped', skip.reason))
      }
      if (plan.run !== undefined) {
        const admission = this.#admit(job)
        if (admission.kind === 'start') {
          const row = this.#row(job, plan.run.scheduledFor, plan.run.trigger, 'running', startedAt, null)
          rows.push(row)
          ids.push(row.id)
          starts.push({ job, row })
        } else if (admission.kind === 'skip') {
          const row = this.#row(
            job,
            plan.run.scheduledFor,
            plan.run.trigger,
            'skipped',
            startedAt,
            admission.reason,
          )
          rows.push(row)
          ids.push(row.id)
          fires.push(this.#fireEvent(job, row, now, 'skipped', admission.reason))
        } else {
          if (admission.kind === 'wait') this.#waiting.push({ job, occurrence: plan.run })
          else this.#queuedBehind.set(jobId, plan.run)
          fires.push({
            jobId,
            jobName: job.name,
            scheduledFor: plan.run.scheduledFor,
            firedAt: now,
            trigger: plan.run.trigger,
            outcome: 'queued',
            reason:
              admission.kind === 'wait'
                ? 'waiting for a free run slot'
                : 'queued behind the running occurrence',
          })
          ids.push('')
        }
      }
      rowsByJob.set(jobId, ids)
      const update: JobScheduleUpdate = {
        id: jobId,
        nextRunAt: plan.next ?? null,
        ...(plan.run === undefined ? {} : { lastRunAt: startedAt }),
        ...(plan.next === undefined
          ? { disable: { reason: 'done: the one-time (at) schedule has fired' } }
          : {}),
      }
      updates.set(jobId, update)
      armed.job = {
        ...job,
        nextRunAt: update.nextRunAt,
        ...(update.lastRunAt === undefined ? {} : { lastRunAt: update.lastRunAt }),
      }
      if (plan.next === undefined) this.#jobs.delete(jobId)
      else this.#push(armed, plan.next)
    }
    this.#arm()

    let claimed: ReadonlySet<string> = new Set()
    // Every start holds a slot taken by #admit: each is handed to a run or released, whatever throws.
    let unstarted = starts.length
    try {
      if (rows.length > 0) {
        let inserted: readonly NewCronRun[]
        try {
          ;({ claimed, rows: inserted } = await this.#insertRuns(rows, 3))
        } catch (error) {
          // Retried and still failing: reported, not dropped silently.
          this.#reportError(error)
          return
        }
        const byId = new Map(inserted.map((row) => [row.id, row]))
        for (const start of starts) start.row = byId.get(start.row.id) ?? start.row
      }
      for (const { job, row } of starts) {
        unstarted--
        if (claimed.has(row.id)) {
          this.events.emit('schedule:fire', this.#fireEvent(job, row, now, 'started'))
          this.#startRun(job, row)
        } else {
          this.#releaseSlot()
          this.events.emit('schedule:fire', this.#fireEvent(job, row, now, 'claimed-elsewhere'))
        }
      }
    } finally {
      for (; unstarted > 0; unstarted--) this.#releaseSlot()
    }
    for (const fire of fires) {
      if (fire.outcome === 'skipped' && fire.runId !== undefined && !claimed.has(fire.runId)) continue
      this.events.emit('schedule:fire', fire)
    }
    // Write next/last run only for jobs whose occurrence this instance recorded (or queued);
    // the instance that won a claim writes it otherwise.
    const writes: JobScheduleUpdate[] = []
    for (const [jobId, update] of updates) {
      const ids = rowsByJob.get(jobId) ?? []
      if (ids.length === 0 || ids.some((id) => id === '' || claimed.has(id))) writes.push(update)
    }
    this.#queueScheduleWrites(writes)
    for (const jobId of changed) {
      // Changed elsewhere: re-arm from the stored definition instead of firing the old one.
      let job: CronJob | undefined
      try {
        job = await this.#store.getJob(jobId)
      } catch (error) {
        this.#reportError(error, jobId)
        const stale = this.#jobs.get(jobId)
        if (stale !== undefined) this.#push(stale, this.#now() + 1000)
        continue
      }
      if (job === undefined || !job.enabled || !this.#started) {
        this.#jobs.delete(jobId)
        continue
      }
      const rearmed = this.#compile(job)
      if (rearmed === undefined) continue
      this.#jobs.set(jobId, rearmed)
      this.#push(rearmed, job.nextRunAt ?? rearmed.compiled.next(now))
    }
    if (changed.length > 0) this.#arm()
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.#clock.setTimeout(resolve, ms))
  }

  /**
   * Inserts ledger rows (the claim). A busy or failing database is reported and retried up to
   * `attempts` times in all, 250 ms apart and more; retried `running` rows take the retry's start
   * time. Throws the last error. Returns the claimed ids and the rows as inserted.
   */
  async #insertRuns(
    rows: readonly NewCronRun[],
    attempts: number,
  ): Promise<{ claimed: ReadonlySet<string>; rows: readonly NewCronRun[] }> {
    let pending = rows
    for (let attempt = 1; ; attempt++) {
      try {
        return { claimed: await this.#store.insertRuns(pending), rows: pending }
      } catch (error) {
        if (attempt >= attempts || !this.#started) throw error
        this.#reportError(error)
        await this.#sleep(250 * attempt)
        const retryAt = this.#now()
        pending = pending.map((row) => (row.status === 'running' ? { ...row, startedAt: retryAt } : row))
      }
    }
  }

  /**
   * next/last run times are written in batches (one statement every `scheduleWriteDelayMs`),
   * not one write per fire. Losing a batch in a crash is harmless: the ledger already holds the
   * claims, so a stale `next_run_at` only makes the next start re-try occurrences it cannot claim.
   */
  #queueScheduleWrites(writes: readonly JobScheduleUpdate[]): void {
    for (const write of writes) {
      const pending = this.#pendingWrites.get(write.id)
      const lastRunAt = Math.max(
        pending?.lastRunAt ?? Number.NEGATIVE_INFINITY,
        write.lastRunAt ?? Number.NEGATIVE_INFINITY,
      )
      const disable = write.disable ?? pending?.disable
      this.#pendingWrites.set(write.id, {
        id: write.id,
        nextRunAt: write.nextRunAt,
        ...(Number.isFinite(lastRunAt) ? { lastRunAt } : {}),
        ...(disable === undefined ? {} : { disable }),
      })
    }
    if (this.#pendingWrites.size >= 500) {
      this.#track(this.flushPendingWrites())
    } else if (this.#pendingWrites.size > 0 && this.#writeTimer === undefined) {
      this.#writeTimer = this.#clock.setTimeout(() => {
        this.#writeTimer = undefined
        this.#track(this.flushPendingWrites())
      }, this.#options.scheduleWriteDelayMs ?? 250)
    }
  }

  /** Writes batched next/last run times now (the service calls this before reading jobs). */
  async flushPendingWrites(): Promise<void> {
    if (this.#writeTimer !== undefined) this.#clock.clearTimeout(this.#writeTimer)
    this.#writeTimer = undefined
    if (this.#pendingWrites.size === 0) return
    const writes = [...this.#pendingWrites.values()]
    this.#pendingWrites.clear()
    try {
      await this.#store.updateSchedules(writes)
    } catch (error) {
      this.#reportError(error)
    }
  }

  /** Which occurrences from `firstDue` up to `now` run, which are skipped (and why), and the next fire. */
  #plan(armed: ArmedJob, firstDue: number, now: number, mode: 'startup' | 'runtime'): Plan {
    const { job, compiled } = armed
    const recorded: number[] = []
    let unrecorded = 0
    let cursor: number | undefined = firstDue
    let latest = firstDue
    let windowMs = this.#windowFor(compiled, firstDue)
    while (cursor !== undefined && cursor <= now) {
      latest = cursor
      if (recorded.length < MAX_SKIPPED_ROWS) recorded.push(cursor)
      else unrecorded++
      let following = compiled.next(cursor, firstDue)
      windowMs = this.#windowFor(compiled, cursor, following)
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

  #windowFor(compiled: CompiledSchedule, occurrence: number, following?: number): number {
    const minMs = this.#options.catchupWindow?.minMs ?? DEFAULT_CATCHUP_MIN_MS
    const maxMs = this.#options.catchupWindow?.maxMs ?? 7_200_000
    const period =
      compiled.type === 'at'
        ? Number.POSITIVE_INFINITY
        : following !== undefined
          ? following - occurrence
          : (compiled.periodMs ?? Number.POSITIVE_INFINITY)
    return Math.min(maxMs, Math.max(minMs, period / 2))
  }

  /** Decides whether a due occurrence starts now, waits for a slot, queues behind its job, or is skipped. */
  #admit(job: CronJob): { kind: 'start' | 'wait' | 'behind' } | { kind: 'skip'; reason: string } {
    const busy =
      (this.#active.get(job.id)?.size ?? 0) > 0 || this.#waiting.some((waiting) => waiting.job.id === job.id)
    if (busy && job.overlap !== 'allow') {
      if (job.overlap === 'skip') {
        return {
          kind: 'skip',
          reason: 'overlap: the previous run of this job is still in progress (overlap: skip)',
        }
      }
      if (this.#queuedBehind.has(job.id)) {
        return {
          kind: 'skip',
          reason: 'overlap: one occurrence is already queued behind the running one (overlap: queue_one)',
        }
      }
      return { kind: 'behind' }
    }
    if (job.kind === 'ai') {
      const until = this.#aiBudget.blockedUntil(this.#now())
      if (until !== undefined) {
        return {
          kind: 'skip',
          reason:
            `budget: ${this.#aiBudget.max} AI runs already started in the last 24 hours (maxAiRunsPerDay)` +
            (Number.isFinite(until) ? `; the next can start after ${new Date(until).toISOString()}` : ''),
        }
      }
    }
    if (this.#running >= this.#maxConcurrent) return { kind: 'wait' }
    this.#running++
    return { kind: 'start' }
  }

  #releaseSlot(): void {
    this.#running = Math.max(0, this.#running - 1)
    this.#pump()
  }

  /** Starts waiting occurrences while slots are free. */
  #pump(): void {
    if (!this.#started) return
    while (this.#running < this.#maxConcurrent && this.#waiting.length > 0) {
      const waiting = this.#waiting.shift() as WaitingStart
      this.#running++
      this.#track(this.#startWaiting(waiting))
    }
  }

  /** Claims and starts an occurrence that holds a slot; the slot is released unless a run starts. */
  async #startWaiting({ job, occurrence }: WaitingStart): Promise<void> {
    let started = false
    try {
      const now = this.#now()
      if (occurrence.trigger === 'manual') {
        const claimed = await this.#claimManual(job, now, 'running', null, 3)
        if (claimed !== undefined) {
          this.#startRun(job, claimed.row)
          started = true
        }
        return
      }
      const { claimed, rows } = await this.#insertRuns(
        [this.#row(job, occurrence.scheduledFor, occurrence.trigger, 'running', now, null)],
        3,
      )
      const row = rows[0] as NewCronRun
      if (claimed.has(row.id)) {
        this.events.emit('schedule:fire', this.#fireEvent(job, row, now, 'started'))
        this.#startRun(job, row)
        started = true
      } else {
        this.events.emit('schedule:fire', this.#fireEvent(job, row, now, 'claimed-elsewhere'))
      }
    } catch (error) {
      this.#reportError(error, job.id)
    } finally {
      if (!started) this.#releaseSlot()
    }
  }

  /**
   * Inserts a manual row at `now`, moving back 1 ms per collision; never on the job's pending next
   * fire. Each insert is tried up to `attempts` times (see #insertRuns).
   */
  async #claimManual(
    job: CronJob,
    now: number,
    status: 'running' | 'skipped',
    reason: string | null,
    attempts: number,
  ): Promise<{ id: string; row: NewCronRun } | undefined> {
    let scheduledFor = now
    for (let attempt = 0; attempt < 1000; attempt++, scheduledFor--) {
      // The pending scheduled occurrence must stay claimable by the schedule itself.
      if (scheduledFor === (this.#jobs.get(job.id)?.job.nextRunAt ?? job.nextRunAt)) continue
      const { claimed, rows } = await this.#insertRuns(
        [this.#row(job, scheduledFor, 'manual', status, now, reason)],
        attempts,
      )
      const row = rows[0] as NewCronRun
      if (claimed.has(row.id)) return { id: row.id, row }
    }
    return undefined
  }

  // ---------------------------------------------------------------- runs

  #startRun(job: CronJob, row: NewCronRun): void {
    const controller = new AbortController()
    // Claimed while stop() was under way: record it interrupted instead of starting work.
    if (!this.#started)
      controller.abort(
        cancellation('interrupted', 'interrupted: the scheduler stopped before the run started'),
      )
    const active: ActiveRun = { runId: row.id, controller, phase: 'run', done: Promise.resolve() }
    let set = this.#active.get(job.id)
    if (set === undefined) {
      set = new Set()
      this.#active.set(job.id, set)
    }
    set.add(active)
    if (job.kind === 'ai') this.#aiBudget.record(row.startedAt ?? this.#now())
    const run: CronRun = {
      ...row,
      durationMs: null,
      result: null,
      error: null,
      deliveryStatus: 'none',
      deliveryError: null,
    }
    this.events.emit('run:start', { job, run })
    const task = this.#execute(job, run, active).finally(() => {
      set.delete(active)
      if (set.size === 0) this.#active.delete(job.id)
      this.#releaseSlot()
      const queued = this.#queuedBehind.get(job.id)
      if (queued !== undefined && this.#started && this.#jobs.has(job.id)) {
        this.#queuedBehind.delete(job.id)
        const armed = this.#jobs.get(job.id) as ArmedJob
        const admission = this.#admit(armed.job)
        if (admission.kind === 'start')
          this.#track(this.#startWaiting({ job: armed.job, occurrence: queued }))
        else if (admission.kind === 'wait') this.#waiting.push({ job: armed.job, occurrence: queued })
        else if (admission.kind === 'behind') this.#queuedBehind.set(job.id, queued)
      }
    })
    active.done = task
    this.#track(task)
  }

  async #execute(job: CronJob, run: CronRun, active: ActiveRun): Promise<void> {
    const { controller } = active
    const startedAt = run.startedAt ?? this.#now()
    const timeout = this.#clock.setTimeout(() => {
      controller.abort(
        new CronError('CRON_RUN_TIMEOUT', `timed out after ${formatDuration(job.timeoutMs)}`, {
          data: { timeoutMs: job.timeoutMs },
        }),
      )
    }, job.timeoutMs)
    let outcome: ExecutionOutcome | undefined
    let status: Exclude<CronRunStatus, 'running' | 'skipped'>
    let error: string | null = null
    let result: string | null = null
    try {
      const recentCount = this.#options.recentResultsInPrompt ?? 3
      const recent =
        job.kind === 'ai' && recentCount > 0
          ? await this.#store.recentResults(job.id, recentCount)
          : ([] as string[])
      outcome = await executeJob(job, run.id, recent, controller.signal, {
        ...(this.#options.agentRunner === undefined ? {} : { agentRunner: this.#options.agentRunner }),
        ...(this.#options.shellRunner === undefined ? {} : { shellRunner: this.#options.shellRunner }),
        ...(this.#options.automationPrefix === undefined
          ? {}
          : { automationPrefix: this.#options.automationPrefix }),
        maxResultChars: this.#options.maxResultChars ?? 16_000,
      })
      status = outcome.status
      result = outcome.result
      error = outcome.error
    } catch (caught) {
      const reason = controller.signal.aborted ? controller.signal.reason : caught
      if (CronError.is(reason) && reason.code === 'CRON_RUN_TIMEOUT') {
        status = 'timed_out'
      } else if (CronError.is(reason) && reason.code === 'CRON_RUN_CANCELLED') {
        status = (reason.data?.status as 'cancelled' | 'interrupted' | undefined) ?? 'cancelled'
      } else {
        status = 'failed'
      }
      error = truncate(toError(reason).message, 4000)
      outcome = status === 'failed' || status === 'timed_out' ? { status, result: null, error } : undefined
    } finally {
      this.#clock.clearTimeout(timeout)
    }
    const completedAt = this.#now()
    let final: CronRun = { ...run, status, completedAt, durationMs: completedAt - startedAt, result, error }
    try {
      const updated = await this.#store.completeRun(run.id, {
        status,
        completedAt,
        durationMs: completedAt - startedAt,
        result,
        error,
      })
      if (!updated) {
        // Someone else finalised the row (e.g. marked interrupted after a lease loss): keep theirs.
        final = (await this.#store.getRun(run.id)) ?? final
      } else if (status === 'completed' || status === 'failed' || status === 'timed_out') {
        const failed = status !== 'completed'
        const armed = this.#jobs.get(job.id)
        const known = armed?.job ?? job
        // Steady state (success after success) changes nothing on the job row: skip the write.
        const failures =
          !failed && known.lastStatus === 'completed' && known.consecutiveFailures === 0
            ? 0
            : await this.#store.recordOutcome(job.id, status, failed)
        if (armed !== undefined && failures !== undefined) {
          armed.job = { ...armed.job, lastStatus: status, consecutiveFailures: failures }
        }
        active.phase = 'deliver'
        if (outcome !== undefined) {
          const delivery = await this.#deliver(job.deliverTo, deliveryText(job, outcome), controller.signal)
          if (delivery.status !== 'none') {
            await this.#store.setDelivery(run.id, delivery.status, delivery.error)
            final = { ...final, deliveryStatus: delivery.status, deliveryError: delivery.error }
          }
        }
        if (failed && failures !== undefined && failures >= this.#maxFailures)
          await this.#autoPause(job, failures, error, controller.signal)
      }
    } catch (storeError) {
      this.#reportError(storeError, job.id, run.id)
    }
    this.events.emit('run:end', { job, run: final })
    if (status === 'failed' || status === 'timed_out') {
      this.events.emit('run:error', {
        jobId: job.id,
        runId: run.id,
        error: new CronError(status === 'failed' ? 'CRON_RUN_FAILED' : 'CRON_RUN_TIMEOUT', error ?? status),
      })
    }
  }

  async #autoPause(
    job: CronJob,
    failures: number,
    lastError: string | null,
    signal: AbortSignal,
  ): Promise<void> {
    const reason = `paused after ${failures} consecutive failures; last error: ${truncate(lastError ?? 'unknown', 500)}`
    const paused = await this.#store.updateJob(job.id, {
      enabled: false,
      pauseReason: reason,
      nextRunAt: null,
    })
    this.#jobs.delete(job.id)
    const dropped = this.#dropPending(job.id, job)
    if (dropped.length > 0) {
      await this.#recordSkips(
        dropped.map(({ occurrence }) => ({
          job,
          scheduledFor: occurrence.scheduledFor,
          trigger: occurrence.trigger,
          reason: 'skipped: the job was paused after consecutive failures',
        })),
      )
    }
    this.#logger.warn('cron job auto-paused', { jobId: job.id, failures })
    await this.#deliver(
      job.deliverTo,
      `[Cron] ${job.name}\nThis job was paused after ${failures} consecutive failures. Last error: ${truncate(lastError ?? 'unknown', 500)}\nFix the job, then resume it (cron_resume).`,
      signal,
    )
    this.events.emit('job:pause', { job: paused ?? { ...job, enabled: false, pauseReason: reason }, reason })
  }

  /** Sends to every target, each send bounded by `deliveryTimeoutMs` and aborted with `signal`. */
  #deliver(
    targets: readonly string[],
    text: string,
    signal: AbortSignal,
  ): Promise<{ readonly status: DeliveryStatus; readonly error: string | null }> {
    return deliver(this.#options.channelSender, targets, text, {
      signal,
      clock: this.#clock,
      timeoutMs: this.#deliveryTimeoutMs,
    })
  }

  // ---------------------------------------------------------------- helpers

  #compile(job: CronJob): ArmedJob | undefined {
    try {
      const armed = new ArmedJob(job)
      void armed.compiled
      return armed
    } catch (error) {
      this.#reportError(error, job.id)
      return undefined
    }
  }

  /** Arms `armed` for its occurrence at `occurrence`, firing after the job's jitter. */
  #push(armed: ArmedJob, occurrence: number | undefined): void {
    const dueAt = occurrence === undefined ? undefined : occurrence + this.#jitterFor(armed, occurrence)
    armed.dueAt = dueAt
    if (dueAt !== undefined && occurrence !== undefined) this.#heap.push({ dueAt, occurrence, armed })
  }

  /**
   * The job's delay after `occurrence` (CRON-6): a hash of its id, 0 to `maxJitterMs`, and below half
   * the gap to the job's next occurrence, so a delayed fire never reaches the next one (which would
   * make `#plan` skip this occurrence as missed). Compiles the schedule; only when jitter is on.
   */
  #jitterFor(armed: ArmedJob, occurrence: number): number {
    const job = armed.job
    if (this.#maxJitterMs === 0 || job.scheduleType === 'at') return 0
    let cap = this.#maxJitterMs
    try {
      const following = armed.compiled.next(occurrence, occurrence)
      if (following !== undefined) cap = Math.min(cap, Math.floor((following - occurrence - 1) / 2))
    } catch {
      return 0 // a schedule that no longer compiles is reported when it fires
    }
    if (cap <= 0) return 0
    // FNV-1a: stable across processes, so every scheduler delays a job alike.
    let hash = 0x811c9dc5
    for (let index = 0; index < job.id.length; index++) {
      hash ^= job.id.charCodeAt(index)
      hash = Math.imul(hash, 0x01000193)
    }
    return (hash >>> 0) % (cap + 1)
  }

  #peekValid(): HeapEntry | undefined {
    for (;;) {
      const top = this.#heap.peek()
      if (top === undefined) return undefined
      if (this.#jobs.get(top.armed.job.id) === top.armed && top.armed.dueAt === top.dueAt) return top
      this.#heap.pop()
    }
  }

  #arm(): void {
    if (!this.#started) return
    const top = this.#peekValid()
    if (top === undefined) {
      this.#clearTimer()
      return
    }
    if (this.#timer !== undefined && this.#timerAt === top.dueAt) return
    this.#clearTimer()
    const delay = Math.min(MAX_TIMER_DELAY, Math.max(0, top.dueAt - this.#now()))
    this.#timerAt = top.dueAt
    this.#timer = this.#clock.setTimeout(() => this.#onTimer(), delay)
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#timerAt = undefined
  }

  #scheduleMaintenance(delay: number): void {
    if (!this.#started) return
    const handle = this.#clock.setTimeout(() => {
      this.#maintenanceTimer = undefined
      this.#track(this.#maintain())
    }, delay)
    ;(handle as { unref?: () => void } | undefined)?.unref?.()
    this.#maintenanceTimer = handle
  }

  /** Heartbeat, interrupt runs of dead owners, prune history (hourly). */
  async #maintain(): Promise<void> {
    if (!this.#started) return
    const now = this.#now()
    try {
      await this.#store.heartbeat(this.ownerId, now)
      await this.#store.interruptOrphanedRuns({
        now,
        aliveSince: now - this.#leaseMs,
        reason: 'interrupted: the scheduler that ran it stopped heartbeating (process exit or crash)',
      })
      if (now - this.#lastPrune >= PRUNE_EVERY_MS) {
        this.#lastPrune = now
        const pruned = await this.#store.pruneRuns({
          olderThan: now - (this.#options.retention?.maxAgeMs ?? 30 * 86_400_000),
          keepPerJob: this.#options.retention?.maxRunsPerJob ?? 1000,
        })
        if (pruned > 0) this.#logger.debug('cron history pruned', { pruned })
      }
    } catch (error) {
      this.#reportError(error)
    }
    this.#scheduleMaintenance(this.#leaseMs / 3)
  }

  /** Runs pruning now (also done hourly by maintenance); returns how many rows were deleted. */
  async pruneHistory(): Promise<number> {
    const now = this.#now()
    this.#lastPrune = now
    return this.#store.pruneRuns({
      olderThan: now - (this.#options.retention?.maxAgeMs ?? 30 * 86_400_000),
      keepPerJob: this.#options.retention?.maxRunsPerJob ?? 1000,
    })
  }

  #row(
    job: CronJob,
    scheduledFor: number,
    trigger: RunTrigger,
    status: 'running' | 'skipped',
    at: number,
    reason: string | null,
  ): NewCronRun {
    return {
      id: this.#newId(),
      jobId: job.id,
      jobName: job.name,
      trigger,
      status,
      scheduledFor,
      startedAt: status === 'running' ? at : null,
      completedAt: status === 'skipped' ? at : null,
      skipReason: reason,
      owner: this.ownerId,
    }
  }

  async #recordSkips(
    skips: readonly { job: CronJob; scheduledFor: number; trigger: RunTrigger; reason: string }[],
  ): Promise<void> {
    const now = this.#now()
    await this.#store.insertRuns(
      skips.map((skip) => this.#row(skip.job, skip.scheduledFor, skip.trigger, 'skipped', now, skip.reason)),
    )
  }

  #fireEvent(
    job: CronJob,
    row: NewCronRun,
    firedAt: number,
    outcome: CronSchedulerEvents['schedule:fire']['outcome'],
    reason?: string,
  ): CronSchedulerEvents['schedule:fire'] {
    return {
      jobId: job.id,
      jobName: job.name,
      scheduledFor: row.scheduledFor,
      firedAt,
      trigger: row.trigger,
      outcome,
      runId: row.id,
      ...(reason === undefined ? {} : { reason }),
    }
  }

  #track(task: Promise<unknown>): void {
    const tracked = task.catch((error: unknown) => this.#reportError(error))
    this.#tasks.add(tracked)
    void tracked.finally(() => this.#tasks.delete(tracked))
  }

  #reportError(error: unknown, jobId?: string, runId?: string): void {
    const normalized = toError(error)
    this.#logger.error('cron scheduler error', { jobId, runId, error: normalized.message })
    this.events.emit('run:error', {
      ...(jobId === undefined ? {} : { jobId }),
      ...(runId === undefined ? {} : { runId }),
      error: normalized,
    })
  }
}
