import { type CatchUpPlan, isRequested, type Occurrence, planCatchUp } from './catch-up.js'
import { claimOrder, claimRank } from './claim-order.js'
import { DeliveryLedger } from './delivery-ledger.js'
import { DueBatch } from './due-batch.js'
import { CronError, toError } from './errors.js'
import { TypedEmitter, type Unsubscribe } from './events.js'
import { cancellation, truncate } from './executor.js'
import { ArmedJob, type DueJob, FireQueue } from './fire-queue.js'
import { jitterDelay } from './jitter.js'
import { JobSync } from './job-sync.js'
import { Ledger } from './ledger.js'
import { DEAD_AFTER_LEASES, Maintenance, type Stall } from './maintenance.js'
import type { CronJob, CronRun, RunTrigger } from './model.js'
import { refuseUnknownKeys } from './option-keys.js'
import type { CronStore, JobScheduleUpdate, JobVersion, NewCronRun, TimerHandle } from './ports.js'
import { RunBudget } from './run-budget.js'
import { RunExecutor } from './run-executor.js'
import { type PingStats, type RunPing, RunPings } from './run-pings.js'
import { type ActiveRun, RunSlots, type WaitingStart } from './run-slots.js'
import { ScheduleWrites } from './schedule-writes.js'
import { type CronSchedulerEvents, fireEvent } from './scheduler-events.js'
import {
  type CronSchedulerOptions,
  resolveSchedulerOptions,
  type SchedulerSettings,
} from './scheduler-options.js'
import { TokenBudget } from './token-budget.js'

/** Options of {@link CronScheduler.trigger}. */
export interface TriggerOptions {
  /**
   * Starts a `webhook` run with this payload (the body of the hook's call): the run is recorded with
   * trigger `webhook`; an `ai` job's prompt gets the payload as untrusted data, a shell job's runner
   * gets it as `request.payload`. Without it the run is `manual`.
   */
  readonly payload?: string
}

/** What {@link CronScheduler.trigger} did. */
export interface TriggerResult {
  /**
   * `started` now, `queued` behind the concurrency cap or the running occurrence, or `skipped`
   * (overlap `skip` or `queue_one`, the daily AI budget, or `maxWaitingRuns` occurrences already
   * waiting), then with the `reason` and the id of the `skipped` ledger row.
   */
  readonly status: 'started' | 'queued' | 'skipped'
  readonly runId?: string
  readonly reason?: string
}

/** How the scheduler's upkeep stands: {@link CronScheduler.health}. */
export interface SchedulerHealth {
  /**
   * When the scheduler's maintenance timer last fired (the heartbeat or the maintenance round, due
   * every third of `leaseMs`), or when it started; undefined while the scheduler is not running.
   */
  readonly lastTickAt: Date | undefined
  /** How often a tick is due: a third of `leaseMs`. */
  readonly tickIntervalMs: number
  /** How old the last tick may be before the scheduler counts as stale. */
  readonly staleAfterMs: number
  /**
   * True while the scheduler runs and its last tick is more than `staleAfterMs` behind the clock:
   * its event loop was blocked, its timers do not fire, or a store call hangs. Never true when stopped.
   */
  readonly stale: boolean
  /**
   * The last stall this scheduler saw since it started: a gap of more than a lease between two ticks
   * (its event loop was blocked, the process stopped, or the clock jumped). A stalled process cannot
   * answer while it is stalled; this is what it says once it runs again.
   */
  readonly lastStall: Stall | undefined
}

/**
 * The scheduler: one timer over a heap of next fires, the occurrence ledger, overlap policy
 * (checked across schedulers in the claim), a concurrency cap, timeouts, catch-up on start,
 * interrupted-run recovery, retention, auto-pause, and a periodic sync with the jobs other
 * schedulers on the database change. Use {@link CronService} for the job operations; it keeps
 * this in sync.
 * @example
 * const scheduler = new CronScheduler({ store, agentRunner })
 * await scheduler.start()
 * try {
 *   // …
 * } finally {
 *   await scheduler.stop()
 * }
 */
export class CronScheduler {
  /**
   * The event stream: await one event with `scheduler.events.next('run:end', predicate?)`. Subscribe
   * with {@link CronScheduler.on} (or `CronService.on`); `events.on` is deprecated.
   */
  readonly events: TypedEmitter<CronSchedulerEvents>
  /** This instance's `owner` id. */
  readonly ownerId: string

  readonly #settings: SchedulerSettings
  readonly #aiBudget: RunBudget
  readonly #tokenBudget: TokenBudget
  readonly #fires: FireQueue
  readonly #slots: RunSlots
  readonly #ledger: Ledger
  readonly #writes: ScheduleWrites
  readonly #maintenance: Maintenance
  readonly #sync: JobSync
  readonly #executor: RunExecutor
  readonly #pings: RunPings
  readonly #deliveries: DeliveryLedger
  /**
   * Jobs this scheduler stopped arming though they are enabled in the store (an `at` job that fired,
   * before its disable is written; a schedule that no longer compiles), by id, with the `updatedAt`
   * they had: the sync leaves those versions alone.
   */
  readonly #dropped = new Map<string, number>()
  /** Jobs registered or unregistered here while a sync read was in flight: that read is older. */
  #changedDuringSync: Set<string> | undefined
  readonly #tasks = new Set<Promise<unknown>>()
  /** A read of which waiting occurrences other schedulers took is in flight (one at a time). */
  #pruning = false
  /**
   * Another scheduler works on this database: one was alive at start, or took an occurrence this
   * one tried to claim. Occurrences due together are then taken in this scheduler's own order
   * (see {@link claimOrder}); alone, in the order they were armed.
   */
  #othersSeen = false
  /** When the waiting occurrences were last checked against the ledger (see #pruneWaiting). */
  #lastPrune = Number.NEGATIVE_INFINITY
  /** The schedulers alive on the database, this one included (at start, then each maintenance round). */
  #owners: readonly { readonly owner: string; readonly rank: (key: string) => number }[] = []
  /** Occurrences left to the scheduler that ranks first for them, not admitted here yet, with when to look. */
  readonly #deferred = new Map<WaitingStart, number>()
  /** The next/last run write of each deferred occurrence, queued by this scheduler if it takes it. */
  readonly #deferredWrites = new WeakMap<WaitingStart, JobScheduleUpdate>()
  #deferTimer: TimerHandle | undefined
  #started = false
  #lastStall: Stall | undefined
  #starting: Promise<void> | undefined

  constructor(options: CronSchedulerOptions) {
    const settings = resolveSchedulerOptions(options)
    this.#settings = settings
    this.ownerId = settings.ownerId
    this.#aiBudget = new RunBudget(settings.maxAiRunsPerDay)
    this.#tokenBudget = new TokenBudget(settings.maxAiTokensPerDay)
    const report = (error: unknown, jobId?: string, runId?: string) => this.#reportError(error, jobId, runId)
    const track = (task: Promise<unknown>) => this.#track(task)
    this.#fires = new FireQueue(
      settings.clock,
      (armed, occurrence) => jitterDelay(armed.job, () => armed.compiled, occurrence, settings.maxJitterMs),
      () => this.#onTimer(),
    )
    const rank = claimRank(settings.ownerId)
    const rankWaiting = (waiting: WaitingStart) => rank(waiting.job.id)
    this.#slots = new RunSlots(settings, {
      blocked: (job) => this.#budgetBlock(job),
      start: (waiting) => this.#track(this.#startWaiting(waiting)),
      canStart: () => this.#started,
      rank: () => (this.#othersSeen ? rankWaiting : undefined),
    })
    this.#ledger = new Ledger(settings, { report, canRetry: () => this.#started })
    this.#writes = new ScheduleWrites(settings, { track, report })
    this.#maintenance = new Maintenance(settings, {
      track,
      report,
      alive: (owners) => this.#setOwners(owners),
      stalled: (stall) => this.#onStall(stall),
      interrupted: (runs) => this.#track(this.#reportInterrupted(runs)),
      round: () => this.#deliveries.requestSweep(),
      verifyOwnership: () => this.#stopRunsTakenOver(),
    })
    this.#sync = new JobSync(settings, {
      track,
      report,
      begin: () => {
        this.#changedDuringSync = new Set()
      },
      stale: (versions) => this.#staleVersions(versions),
      apply: (jobs, now) => this.#applySync(jobs, now),
      end: () => {
        this.#changedDuringSync = undefined
      },
    })
    this.#deliveries = new DeliveryLedger(settings, {
      track,
      report,
      emit: (payload) => this.events.emit('delivery:end', payload),
    })
    this.#executor = new RunExecutor(settings, report, this.#deliveries)
    this.#pings = new RunPings(settings, (task) => this.#track(task))
    this.events = new TypedEmitter((error) =>
      settings.logger.error('cron event listener threw', { error: toError(error).message }),
    )
  }

  /**
   * Stops the runs another scheduler marked `interrupted` while this one's heartbeat was stale (a
   * stall, a database it could not reach): their occurrences are that scheduler's to handle now,
   * and a copy going on here would run beside its next one (issue 21, an outside probe). The row
   * keeps `interrupted`; a run that already finished records what it did, as ever.
   */
  async #stopRunsTakenOver(): Promise<void> {
    const { store, logger } = this.#settings
    for (const active of this.#slots.allActive()) {
      if (active.phase !== 'run' || active.controller.signal.aborted) continue
      const row = await store.getRun(active.runId)
      if (row === undefined || row.status === 'running') continue
      logger.warn('cron run taken over while this scheduler was stalled: stopping it here', {
        runId: active.runId,
        jobName: row.jobName,
        status: row.status,
      })
      active.controller.abort(
        cancellation(
          'interrupted',
          `interrupted: another scheduler took this run for dead while this one was stalled or cut off from the database (${row.error ?? row.status}); its command was stopped here`,
        ),
      )
    }
  }

  /** True between `start()` and `stop()`. */
  get isRunning(): boolean {
    return this.#started
  }

  /** Runs in flight right now. */
  get runningCount(): number {
    return this.#slots.running
  }

  /** Occurrences due but not started: waiting for a run slot or queued behind their job's running one. */
  get waitingCount(): number {
    return this.#slots.waiting
  }

  /** Number of jobs armed in the heap. */
  get armedCount(): number {
    return this.#fires.size
  }

  /**
   * When the scheduler last ticked, and whether that is too long ago, measured on its clock (a
   * stalled event loop or timer shows as a tick older than the tick interval). `staleAfterMs`
   * defaults to three tick intervals, that is `leaseMs`.
   */
  health(options?: { readonly staleAfterMs?: number }): SchedulerHealth {
    checkHealthKeys(options)
    const tickIntervalMs = this.#maintenance.tickIntervalMs
    const staleAfterMs = options?.staleAfterMs ?? 3 * tickIntervalMs
    const last = this.#maintenance.lastTickAt
    return {
      lastTickAt: last === undefined ? undefined : new Date(last),
      tickIntervalMs,
      staleAfterMs,
      stale: this.#started && last !== undefined && this.#now() - last > staleAfterMs,
      lastStall: this.#lastStall,
    }
  }

  /**
   * Counts of the dead-man pings (jobs with a `pingUrl`) this scheduler sent since it was made:
   * accepted, failed (error or `pingTimeoutMs`) and in flight. A failed ping is logged, never fatal.
   */
  pingStats(): PingStats {
    return this.#pings.stats
  }

  /** Subscribes to an event; returns the unsubscribe function (like workflow's and background's `on`). */
  on<K extends keyof CronSchedulerEvents>(
    event: K,
    listener: (payload: CronSchedulerEvents[K]) => void,
  ): Unsubscribe {
    return this.events.on(event, listener)
  }

  /**
   * Starts: registers this owner, marks runs of dead owners `interrupted`, loads enabled jobs,
   * runs one catch-up occurrence per job inside its window (others recorded `skipped`), arms
   * the timer, and starts the periodic sync with jobs other schedulers change. While another
   * scheduler is alive on the database, due jobs are handled as late fires instead of catch-up
   * (trigger `schedule`; `catchup: none` does not skip them). Idempotent.
   */
  async start(options?: { readonly signal?: AbortSignal }): Promise<void> {
    checkSignalKeys(options)
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
    const { store, leaseMs } = this.#settings
    const now = this.#now()
    await store.heartbeat(this.ownerId, now)
    // Another scheduler alive on this database: the cluster was never down, so jobs found due are
    // late fires (as if this timer fired late), not occurrences missed while no scheduler ran.
    const others = (await store.liveOwners({ aliveSince: now - leaseMs })).filter(
      (owner) => owner !== this.ownerId,
    )
    const mode = others.length > 0 ? 'runtime' : 'startup'
    this.#setOwners([...others, this.ownerId])
    const interrupted = await store.interruptOrphanedRuns({
      now,
      aliveSince: now - DEAD_AFTER_LEASES * leaseMs,
      reason: 'interrupted: the scheduler that ran it stopped before the run ended (process exit or crash)',
    })
    if (!this.#aiBudget.unlimited) {
      this.#aiBudget.seed(
        await store.aiRunStartTimes({ since: now - this.#aiBudget.windowMs, limit: this.#aiBudget.max }),
      )
    }
    if (!this.#tokenBudget.unlimited) {
      this.#tokenBudget.seed(
        await store.aiTokenTotals({
          since: this.#tokenBudget.seedSince(now),
          bucketMs: this.#tokenBudget.bucketMs,
        }),
      )
    }
    this.#started = true
    const missed: DueJob[] = []
    const updates: JobScheduleUpdate[] = []
    for await (const job of enabledJobs(store)) {
      // Registered while a later page was read (or read twice across a concurrent rename): armed once.
      if (this.#fires.get(job.id) !== undefined) continue
      if (job.nextRunAt !== null && job.nextRunAt > now) {
        // The common case: armed from the persisted next fire, compiled only when it fires.
        const armed = new ArmedJob(job)
        this.#fires.set(armed)
        this.#fires.push(armed, job.nextRunAt)
        continue
      }
      const armed = this.#compile(job)
      if (armed === undefined) continue
      this.#fires.set(armed)
      if (job.nextRunAt === null) {
        const next = armed.compiled.next(now)
        updates.push({ id: job.id, version: job.updatedAt, nextRunAt: next ?? null })
        armed.job = { ...job, nextRunAt: next ?? null }
        this.#fires.push(armed, next)
      } else {
        missed.push({ armed, firstDue: job.nextRunAt })
      }
    }
    if (updates.length > 0) await store.updateSchedules(updates)
    this.#settings.logger.info('cron scheduler started', {
      owner: this.ownerId,
      jobs: this.#fires.size,
      missed: missed.length,
      interrupted: interrupted.length,
      otherSchedulers: others.length,
    })
    if (interrupted.length > 0) await this.#reportInterrupted(interrupted)
    if (missed.length > 0) await this.#handleDue(missed, now, mode, false)
    this.#arm()
    // Deliveries a previous process left: pending ones when due, sends a dead owner left mid-way.
    this.#deliveries.start()
    this.#maintenance.start(Math.min(leaseMs / 3, 1000))
    this.#sync.start(now)
  }

  /**
   * Stops: clears timers, aborts in-flight runs (recorded `interrupted`) and deliveries, records
   * occurrences still waiting for a slot as `skipped`, waits for in-flight work, and deregisters
   * the owner.
   */
  async stop(options?: { readonly signal?: AbortSignal }): Promise<void> {
    checkSignalKeys(options)
    options?.signal?.throwIfAborted()
    if (this.#starting !== undefined) await this.#starting.catch(() => {})
    if (!this.#started) return
    this.#started = false
    this.#fires.disarm()
    this.#maintenance.stop()
    this.#sync.stop()
    this.#deliveries.stop()
    const active = this.#slots.allActive()
    const cut = active.filter((run) => run.phase === 'run')
    for (const run of active) {
      run.controller.abort(
        cancellation('interrupted', `interrupted: the scheduler stopped before the ${run.phase} ended`),
      )
    }
    // Not retried: said where an operator stopping the server looks (a one-time job's only run).
    if (cut.length > 0)
      this.#settings.logger.warn('cron runs interrupted by the stop: not retried', {
        runs: cut.map((run) => run.runId),
      })
    const waiting = [
      ...this.#slots.drainPending((jobId) => this.#fires.get(jobId)?.job),
      ...this.#deferred.keys(),
    ]
    this.#deferred.clear()
    if (this.#deferTimer !== undefined) this.#settings.clock.clearTimeout(this.#deferTimer)
    this.#deferTimer = undefined
    await this.whenIdle()
    if (waiting.length > 0) {
      await this.#recordSkips(waiting, 'skipped: the scheduler stopped before a run slot was free').catch(
        (error: unknown) => this.#reportError(error),
      )
    }
    await this.flushPendingWrites()
    this.#fires.clear()
    this.#dropped.clear()
    await this.#settings.store.removeOwner(this.ownerId).catch((error: unknown) => this.#reportError(error))
    this.#settings.logger.info('cron scheduler stopped', { owner: this.ownerId })
  }

  /** Same as {@link CronScheduler.stop}; for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop()
  }

  /** Resolves when no fire handling and no run is in flight. */
  async whenIdle(): Promise<void> {
    while (this.#tasks.size > 0) await Promise.allSettled([...this.#tasks])
  }

  /** Writes batched next/last run times now (the service calls this before reading jobs). */
  async flushPendingWrites(): Promise<void> {
    await this.#writes.flush()
  }

  /**
   * Runs pruning now (also done hourly by maintenance, unless `autoPrune` is false); returns how
   * many rows were deleted.
   */
  async pruneHistory(): Promise<number> {
    return this.#maintenance.prune()
  }

  /**
   * Arms (or re-arms) a job after it was created, updated or resumed. A disabled job is
   * unregistered. The job's `nextRunAt` is used when set, else the next fire after now.
   */
  register(job: CronJob): void {
    if (!this.#started) return
    this.#changedDuringSync?.add(job.id)
    if (!job.enabled) {
      void this.unregister(job.id, 'paused')
      return
    }
    if (!this.#armStored(job, this.#now())) return
    // The caller just stored this job: its row is newer than any batched write for it.
    this.#writes.forget(job.id)
    this.#arm()
  }

  /**
   * Unregisters a job at once: its heap entry is dropped, runs in flight are aborted and
   * recorded `cancelled` (deliveries in flight too), and occurrences waiting for a slot are
   * recorded `skipped`.
   */
  async unregister(jobId: string, reason: 'paused' | 'removed'): Promise<void> {
    this.#changedDuringSync?.add(jobId)
    const armed = this.#fires.get(jobId)
    this.#fires.delete(jobId)
    this.#dropped.delete(jobId)
    this.#writes.forget(jobId)
    const active = this.#slots.activeOf(jobId)
    for (const run of active) {
      run.controller.abort(
        cancellation('cancelled', `cancelled: the job was ${reason} while the ${run.phase} was in progress`),
      )
    }
    if (reason === 'removed')
      this.#deliveries.abortJob(jobId, cancellation('cancelled', 'cancelled: the job was removed mid-send'))
    const dropped = [...this.#slots.dropPending(jobId, armed?.job), ...this.#dropDeferred(jobId)]
    if (active.length > 0) await Promise.allSettled(active.map((run) => run.done))
    if (dropped.length > 0 && reason === 'paused') {
      await this.#recordSkips(dropped, 'skipped: the job was paused before the run could start').catch(
        (error: unknown) => this.#reportError(error, jobId),
      )
    }
    this.#arm()
  }

  /**
   * Runs a job now, as its own ledger row (`trigger = manual`, `scheduledFor` = the trigger
   * time, moved back a millisecond at a time on collision). Returns without waiting for the run.
   * A failing store rejects with its error (and holds no run slot).
   */
  async trigger(job: CronJob, options: TriggerOptions = {}): Promise<TriggerResult> {
    checkTriggerKeys(options)
    if (!this.#started) {
      throw new CronError(
        'CRON_NOT_RUNNING',
        'The scheduler is not running; start it before triggering jobs.',
      )
    }
    const now = this.#now()
    const { payload } = options
    const occurrence: Occurrence =
      payload === undefined
        ? { scheduledFor: now, trigger: 'manual' }
        : { scheduledFor: now, trigger: 'webhook', payload }
    const admission = this.#slots.admit(job, occurrence)
    if (admission.kind === 'skip') {
      const recorded = await this.#claimManual(job, now, 'skipped', admission.reason, 1, occurrence.trigger)
      return {
        status: 'skipped',
        reason: admission.reason,
        ...(recorded === undefined ? {} : { runId: recorded.row.id }),
      }
    }
    if (admission.kind === 'wait') return { status: 'queued', reason: 'waiting for a free run slot' }
    if (admission.kind === 'behind') {
      return { status: 'queued', reason: 'queued behind the running occurrence (overlap queue_one)' }
    }
    let claimed: Awaited<ReturnType<Ledger['claimManual']>>
    try {
      claimed = await this.#claimManual(job, now, 'running', null, 1, occurrence.trigger)
    } catch (error) {
      // The slot was taken by admit: a failing store must not keep it (the caller may retry).
      this.#slots.release()
      throw error
    }
    if (claimed === undefined) {
      this.#slots.release()
      throw new CronError('CRON_RUN_FAILED', 'Could not record the manual run; try again.')
    }
    if (claimed.outcome === 'overlap-skipped') {
      // Another instance runs the job: the store recorded this trigger skipped instead.
      this.#slots.release()
      return { status: 'skipped', reason: claimed.row.skipReason ?? '', runId: claimed.row.id }
    }
    this.#startRun(job, claimed.row, payload)
    // A manual run is the job's last run too (`last_run_at`, `sort=last_run`); its next stays.
    this.#writes.queue([{ id: job.id, nextRunAt: null, lastRunAt: claimed.row.startedAt ?? now }])
    return { status: 'started', runId: claimed.row.id }
  }

  // ---------------------------------------------------------------- firing

  /**
   * Reports runs of dead schedulers this one marked `interrupted`, as one `run:interrupted` and each
   * as `run:end`: nobody else will (their owner is gone), and a host counting runs by status agrees
   * with the ledger.
   */
  async #reportInterrupted(runs: readonly CronRun[]): Promise<void> {
    // Said once per round, by job and owner: a server taken for dead is worth a line in every log
    // that watches the cluster (an outside probe found it silent).
    this.#settings.logger.warn('cron runs of a scheduler taken for dead marked interrupted', {
      runs: runs.length,
      jobs: [...new Set(runs.map((run) => run.jobName))].slice(0, 20),
      owners: [...new Set(runs.map((run) => run.owner).filter((owner) => owner !== null))].slice(0, 5),
    })
    this.events.emit('run:interrupted', { runs })
    for (const run of runs) {
      let job = this.#fires.get(run.jobId)?.job
      try {
        job ??= await this.#settings.store.getJob(run.jobId)
      } catch (error) {
        this.#reportError(error, run.jobId, run.id)
      }
      if (job !== undefined) this.events.emit('run:end', { job, run })
    }
  }

  /**
   * Records occurrences that never started as `skipped` for `reason`, and reports each this
   * scheduler recorded as a `schedule:fire` with outcome `skipped`: the final outcome of an
   * occurrence reported `queued` before (pause, stop, a budget that ran out meanwhile).
   */
  async #recordSkips(waiting: readonly WaitingStart[], reason: string): Promise<void> {
    const recorded = await this.#ledger.recordSkips(waiting, reason)
    const now = this.#now()
    for (const { job, row } of recorded)
      this.events.emit('schedule:fire', fireEvent(job, row, now, 'skipped', reason))
  }

  /**
   * The upkeep's timers came more than a lease late (the watchdog): what came due in the gap is
   * handled now (each occurrence runs, or is recorded skipped with a `missed …` reason, by the
   * catch-up rules of a late timer), then `scheduler:stall` is emitted for the host to alert on.
   */
  #onStall(stall: Stall): void {
    if (!this.#started) return
    this.#lastStall = stall
    this.#settings.logger.warn('cron scheduler stalled', {
      since: new Date(stall.since).toISOString(),
      stalledMs: stall.stalledMs,
      cause: stall.cause,
    })
    this.#onTimer()
    this.events.emit('scheduler:stall', stall)
  }

  #onTimer(): void {
    if (!this.#started) return
    const now = this.#now()
    this.#pruneStale(now)
    const due = this.#fires.takeDue(now)
    if (due.length > 0) this.#track(this.#handleDue(due, now, 'runtime'))
    this.#arm()
  }

  /**
   * Handles due jobs: re-checks them against the store (runtime), plans their occurrences
   * (catch-up), admits the one that runs, claims every row in one insert, starts the claimed
   * runs, and batches the jobs' next/last run times.
   */
  async #handleDue(
    due: readonly DueJob[],
    now: number,
    mode: 'startup' | 'runtime',
    recheck = mode === 'runtime',
  ): Promise<void> {
    // Occurrences another scheduler takes first are planned from the armed copy, without a read:
    // those still unclaimed when they are admitted here are checked then (#admitDeferred).
    const leftToOthers = new Set(
      mode === 'runtime'
        ? due.filter((item) => this.#prefersOther(item.armed.job.id, item.firstDue)).map((item) => item.armed)
        : [],
    )
    // Re-check the jobs: another process may have paused, removed or changed them (not needed
    // for the jobs start-up has just read).
    let versions: ReadonlyMap<string, { readonly enabled: boolean; readonly updatedAt: number }> | undefined
    const checked = due.filter((item) => !leftToOthers.has(item.armed))
    if (recheck && checked.length > 0) {
      try {
        versions = await this.#settings.store.jobVersions(checked.map((item) => item.armed.job.id))
      } catch (error) {
        this.#reportError(error)
        for (const item of due)
          if (this.#fires.isCurrent(item.armed)) this.#fires.retry(item.armed, item.firstDue, now + 1000)
        this.#arm()
        return
      }
    }
    const batch = new DueBatch(this.#ledger, now, this.#now())
    /** Jobs changed elsewhere, by id, with the occurrence they came due for. */
    const changed = new Map<string, number>()
    try {
      // Admitted (started or waiting for a slot) in this scheduler's own order when others claim too.
      const ordered = this.#othersSeen ? claimOrder(due, this.ownerId, (item) => item.armed.job.id) : due
      for (const { armed, firstDue } of ordered) {
        const jobId = armed.job.id
        if (!this.#fires.isCurrent(armed)) continue
        if (leftToOthers.has(armed)) {
          this.#planDue(batch, armed, firstDue, now, mode, true)
          continue
        }
        const version = versions?.get(jobId)
        if (versions !== undefined && (version === undefined || !version.enabled)) {
          this.#fires.delete(jobId)
          continue
        }
        if (version !== undefined && version.updatedAt !== armed.job.updatedAt) {
          changed.set(jobId, firstDue)
          continue
        }
        this.#planDue(batch, armed, firstDue, now, mode)
      }
      this.#arm()
      this.#deferLater(batch.deferred)
      const claimed = await this.#claimBatch(batch, now)
      if (claimed === undefined) return
      for (const fire of batch.fires(claimed)) this.events.emit('schedule:fire', fire)
      this.#writes.queue(batch.writes(claimed))
    } finally {
      // Changed jobs were taken off the heap above and only come back here, so re-arm them
      // whatever happened to the batch (a failed ledger insert returns early).
      if (changed.size > 0) await this.#rearmChanged(changed, now)
    }
  }

  /**
   * Adds one due job to `batch`: its missed occurrences skipped, the one that runs admitted (started,
   * waiting, queued behind or skipped) or, with `defer`, left to the scheduler that takes it first,
   * and its next run time; then re-arms it at its next fire.
   */
  #planDue(
    batch: DueBatch,
    armed: ArmedJob,
    firstDue: number,
    now: number,
    mode: 'startup' | 'runtime',
    defer = false,
  ): void {
    const job = armed.job
    let plan: CatchUpPlan
    try {
      plan = planCatchUp(job, armed.compiled, firstDue, now, mode, this.#settings.catchUp)
    } catch (error) {
      // A stored schedule that no longer compiles: report it and stop arming the job.
      this.#reportError(error, job.id)
      this.#drop(job)
      return
    }
    const trigger = mode === 'startup' ? 'catchup' : 'schedule'
    for (const skip of plan.skipped)
      batch.skip(job, { scheduledFor: skip.scheduledFor, trigger }, skip.reason)
    let deferred: WaitingStart | undefined
    if (plan.run !== undefined && defer) {
      deferred = batch.defer(job, plan.run)
    } else if (plan.run !== undefined) {
      const admission = this.#slots.admit(job, plan.run)
      if (admission.kind === 'start') batch.start(job, plan.run)
      else if (admission.kind === 'skip') batch.skip(job, plan.run, admission.reason)
      else if (admission.kind === 'wait') batch.queued(job, plan.run, 'waiting for a free run slot')
      else batch.queued(job, plan.run, 'queued behind the running occurrence')
    }
    const update = batch.schedule(job, plan)
    if (deferred !== undefined) this.#deferredWrites.set(deferred, update)
    armed.job = {
      ...job,
      nextRunAt: update.nextRunAt,
      ...(update.lastRunAt === undefined ? {} : { lastRunAt: update.lastRunAt }),
    }
    if (plan.next === undefined) this.#drop(job)
    else this.#fires.push(armed, plan.next)
  }

  /**
   * Claims the batch's rows in one insert and starts the runs this scheduler won. Every start holds
   * a slot taken by admit: each is handed to a run or released, whatever throws. Returns the claimed
   * row ids; undefined when the insert failed after its retries (reported, not dropped silently).
   */
  async #claimBatch(batch: DueBatch, now: number): Promise<ReadonlySet<string> | undefined> {
    let claimed: ReadonlySet<string> = new Set()
    let overlapSkipped: ReadonlySet<string> = new Set()
    let unstarted = batch.starts.length
    try {
      if (batch.rows.length > 0) {
        try {
          const insert = await this.#ledger.insert(batch.rows, 3)
          claimed = insert.claimed
          overlapSkipped = insert.overlapSkipped
          batch.inserted(insert.rows)
        } catch (error) {
          this.#reportError(error)
          return undefined
        }
      }
      for (const { job, row } of batch.starts) {
        unstarted--
        if (overlapSkipped.has(row.id)) {
          // Claimed, but recorded skipped: the job runs on another instance right now.
          this.#slots.release()
          const skipped = this.#ledger.overlapSkippedRow(row)
          this.events.emit(
            'schedule:fire',
            fireEvent(job, skipped, now, 'skipped', skipped.skipReason ?? undefined),
          )
        } else if (claimed.has(row.id)) {
          this.events.emit('schedule:fire', fireEvent(job, row, now, 'started'))
          this.#startRun(job, row)
        } else {
          this.#slots.release()
          this.events.emit('schedule:fire', fireEvent(job, row, now, 'claimed-elsewhere'))
          this.#othersSeen = true
          this.#pruneAfterLoss()
        }
      }
    } finally {
      for (; unstarted > 0; unstarted--) this.#slots.release()
    }
    return claimed
  }

  /**
   * Re-arms jobs changed by another process from their stored definition instead of firing the old
   * one. `changes` maps each job to the occurrence it came due for: when the store cannot be read,
   * that occurrence is looked at again a second later (its grid kept).
   */
  async #rearmChanged(changes: ReadonlyMap<string, number>, now: number): Promise<void> {
    for (const [jobId, occurrence] of changes) {
      let job: CronJob | undefined
      try {
        job = await this.#settings.store.getJob(jobId)
      } catch (error) {
        this.#reportError(error, jobId)
        const stale = this.#fires.get(jobId)
        if (stale !== undefined) this.#fires.retry(stale, occurrence, this.#now() + 1000)
        continue
      }
      if (job === undefined || !job.enabled || !this.#started) {
        this.#fires.delete(jobId)
        continue
      }
      this.#armStored(job, now)
    }
    this.#arm()
  }

  /**
   * Why `job` may not start now: an `ai` job beyond the daily AI run or token budget; undefined when
   * it may. When both are spent, the one that frees up later is named.
   */
  #budgetBlock(job: CronJob): string | undefined {
    if (job.kind !== 'ai') return undefined
    const now = this.#now()
    const runsUntil = this.#aiBudget.blockedUntil(now)
    const tokensUntil = this.#tokenBudget.blockedUntil(now)
    if (runsUntil === undefined && tokensUntil === undefined) return undefined
    const next = (until: number) =>
      Number.isFinite(until) ? `; the next can start after ${new Date(until).toISOString()}` : ''
    if (tokensUntil === undefined || (runsUntil !== undefined && runsUntil >= tokensUntil)) {
      return `budget: ${this.#aiBudget.max} AI runs already started in the last 24 hours (maxAiRunsPerDay)${next(runsUntil as number)}`
    }
    return (
      `budget: ${this.#tokenBudget.used(now)} AI tokens already used in the last 24 hours ` +
      `(maxAiTokensPerDay ${this.#tokenBudget.max})${next(tokensUntil)}`
    )
  }

  /**
   * Claims and starts occurrences that hold a slot each: the scheduled ones in one insert, each
   * manual one on its own (it looks for a free instant). The slot of each that does not start is
   * released.
   */
  async #startWaiting(waiting: readonly WaitingStart[]): Promise<void> {
    const scheduled = waiting.filter(({ occurrence }) => !isRequested(occurrence))
    await Promise.all([
      ...waiting
        .filter(({ occurrence }) => isRequested(occurrence))
        .map(({ job, occurrence }) => this.#startWaitingManual(job, occurrence)),
      ...(scheduled.length === 0 ? [] : [this.#claimWaiting(scheduled)]),
    ])
  }

  async #startWaitingManual(job: CronJob, occurrence: Occurrence): Promise<void> {
    let started = false
    try {
      const claimed = await this.#claimManual(job, this.#now(), 'running', null, 3, occurrence.trigger)
      if (claimed?.outcome === 'won') {
        this.#startRun(job, claimed.row, occurrence.payload)
        started = true
      }
    } catch (error) {
      this.#reportError(error, job.id)
    } finally {
      if (!started) this.#slots.release()
    }
  }

  /** Claims waiting scheduled occurrences in one insert and starts those this scheduler won. */
  async #claimWaiting(waiting: readonly WaitingStart[]): Promise<void> {
    let unstarted = waiting.length
    try {
      const now = this.#now()
      const { claimed, overlapSkipped, rows } = await this.#ledger.insert(
        waiting.map(({ job, occurrence }) =>
          this.#ledger.row(job, occurrence.scheduledFor, occurrence.trigger, 'running', now, null),
        ),
        3,
      )
      let lost = false
      rows.forEach((row, index) => {
        const job = (waiting[index] as WaitingStart).job
        if (overlapSkipped.has(row.id)) {
          const skipped = this.#ledger.overlapSkippedRow(row)
          this.events.emit(
            'schedule:fire',
            fireEvent(job, skipped, now, 'skipped', skipped.skipReason ?? undefined),
          )
        } else if (claimed.has(row.id)) {
          this.events.emit('schedule:fire', fireEvent(job, row, now, 'started'))
          unstarted--
          this.#startRun(job, row)
        } else {
          lost = true
          this.events.emit('schedule:fire', fireEvent(job, row, now, 'claimed-elsewhere'))
        }
      })
      if (lost) {
        this.#othersSeen = true
        this.#pruneAfterLoss()
      }
    } catch (error) {
      this.#reportError(error, waiting.length === 1 ? waiting[0]?.job.id : undefined)
    } finally {
      for (; unstarted > 0; unstarted--) this.#slots.release()
    }
  }

  /**
   * Drops the waiting scheduled occurrences that another scheduler has claimed meanwhile (when the
   * store can tell: {@link CronStore.claimedOccurrences}): called when a claim was lost, a sign
   * that others work through the same occurrences. Each dropped one is reported
   * `claimed-elsewhere`, as a lost claim is. One read at a time; a failed read changes nothing
   * (each occurrence is then claimed, and lost, on its own).
   */
  #pruneWaiting(): void {
    const { store } = this.#settings
    if (this.#pruning || store.claimedOccurrences === undefined) return
    this.#lastPrune = this.#now()
    const candidates = this.#slots
      .waitingList(PRUNE_LIMIT)
      .filter(({ occurrence }) => !isRequested(occurrence))
    if (candidates.length === 0) return
    this.#pruning = true
    const key = (jobId: string, scheduledFor: number) => `${scheduledFor}:${jobId}`
    const read = store.claimedOccurrences(
      candidates.map(({ job, occurrence }) => ({ jobId: job.id, scheduledFor: occurrence.scheduledFor })),
    )
    this.#track(
      read
        .then((taken) => {
          if (taken.length === 0) return
          const keys = new Set(taken.map((occurrence) => key(occurrence.jobId, occurrence.scheduledFor)))
          const removed = this.#slots.removeWaiting(
            new Set(
              candidates.filter(({ job, occurrence }) => keys.has(key(job.id, occurrence.scheduledFor))),
            ),
          )
          const now = this.#now()
          for (const { job, occurrence } of removed) {
            this.events.emit('schedule:fire', {
              jobId: job.id,
              jobName: job.name,
              scheduledFor: occurrence.scheduledFor,
              firedAt: now,
              trigger: occurrence.trigger,
              outcome: 'claimed-elsewhere',
            })
          }
        })
        .finally(() => {
          this.#pruning = false
        }),
    )
  }

  /** A lost claim: the waiting occurrences are checked, unless they were a moment ago. */
  #pruneAfterLoss(): void {
    if (this.#now() - this.#lastPrune >= PRUNE_AFTER_LOSS_MS) this.#pruneWaiting()
  }

  /**
   * While other schedulers claim too, the occurrences waiting here may have been taken and run
   * elsewhere meanwhile; left in the queue, they would hold the overlap rule (a job with one
   * waiting skips its next) and be claimed only to be lost. Checked against the ledger at most
   * every {@link PRUNE_EVERY_MS}, when occurrences come due or a run ends.
   */
  #pruneStale(now: number): void {
    if (this.#othersSeen && now - this.#lastPrune >= PRUNE_EVERY_MS) this.#pruneWaiting()
  }

  /** Takes the owners alive on the database (this one included). */
  #setOwners(owners: readonly string[]): void {
    this.#owners = [...new Set(owners)].sort().map((owner) => ({ owner, rank: claimRank(owner) }))
    // Alone again: occurrences due together go in the order they were armed once more.
    this.#othersSeen = this.#owners.some(({ owner }) => owner !== this.ownerId)
  }

  /**
   * Whether another live scheduler ranks first for an occurrence (rendezvous hashing over the owners
   * alive): each occurrence has one first taker, so schedulers that find the same occurrences due
   * do not all race to claim each of them. The others admit it {@link DEFER_MS} later if it is still
   * unclaimed then (its first taker is busy, stopped or dead). Never without the store's
   * `claimedOccurrences`, nor when this scheduler is not among the owners it read.
   */
  #prefersOther(jobId: string, scheduledFor: number): boolean {
    if (this.#owners.length < 2 || this.#settings.store.claimedOccurrences === undefined) return false
    const key = `${scheduledFor}:${jobId}`
    let first: string | undefined
    let lowest = Number.POSITIVE_INFINITY
    for (const { owner, rank } of this.#owners) {
      const value = rank(key)
      if (value < lowest) {
        lowest = value
        first = owner
      }
    }
    return first !== this.ownerId && this.#owners.some(({ owner }) => owner === this.ownerId)
  }

  /**
   * Admits `deferred` after {@link DEFER_MS}, those another scheduler has not claimed by then. One
   * timer serves every deferred occurrence: each look takes those whose time has come (or comes
   * within {@link DEFER_SLACK_MS}), so occurrences due a few milliseconds apart cost one read.
   */
  #deferLater(deferred: readonly WaitingStart[]): void {
    if (deferred.length === 0) return
    const at = this.#now() + DEFER_MS
    for (const waiting of deferred) this.#deferred.set(waiting, at)
    if (this.#deferTimer === undefined) this.#lookAtDeferred(DEFER_MS)
  }

  #lookAtDeferred(delay: number): void {
    this.#deferTimer = this.#settings.clock.setTimeout(() => {
      this.#deferTimer = undefined
      if (!this.#started) return
      const now = this.#now()
      const ready: WaitingStart[] = []
      let next = Number.POSITIVE_INFINITY
      for (const [waiting, at] of this.#deferred) {
        if (at <= now + DEFER_SLACK_MS) ready.push(waiting)
        else next = Math.min(next, at)
      }
      if (ready.length > 0) this.#track(this.#admitDeferred(ready))
      if (Number.isFinite(next)) this.#lookAtDeferred(Math.max(0, next - now))
    }, delay)
  }

  /**
   * Admits the deferred occurrences that no scheduler has claimed, as if they had just come due here,
   * after checking their jobs (paused, removed or changed meanwhile: not run, as at a timer fire),
   * while a run slot is free here; the others are looked at again {@link DEFER_MS} later.
   */
  async #admitDeferred(deferred: readonly WaitingStart[]): Promise<void> {
    const { store } = this.#settings
    const read = store.claimedOccurrences
    const pending = deferred.filter((waiting) => this.#deferred.has(waiting))
    if (pending.length === 0 || read === undefined) return
    const key = (jobId: string, scheduledFor: number) => `${scheduledFor}:${jobId}`
    let taken: ReadonlySet<string>
    let versions: ReadonlyMap<string, { readonly enabled: boolean; readonly updatedAt: number }>
    try {
      const [claimed, stored] = await Promise.all([
        read.call(
          store,
          pending.map(({ job, occurrence }) => ({ jobId: job.id, scheduledFor: occurrence.scheduledFor })),
        ),
        store.jobVersions([...new Set(pending.map(({ job }) => job.id))]),
      ])
      taken = new Set(claimed.map((occurrence) => key(occurrence.jobId, occurrence.scheduledFor)))
      versions = stored
    } catch (error) {
      // Looked at again in a second, still deferred.
      this.#reportError(error)
      const later = this.#now() + 1000
      for (const waiting of pending) if (this.#deferred.has(waiting)) this.#deferred.set(waiting, later)
      if (this.#deferTimer === undefined && this.#started) this.#lookAtDeferred(1000)
      return
    }
    // Stopped meanwhile: stop() took the deferred occurrences (recorded skipped).
    if (!this.#started) return
    const now = this.#now()
    const batch = new DueBatch(this.#ledger, now, now)
    const changed = new Map<string, number>()
    const writes: JobScheduleUpdate[] = []
    for (const waiting of pending) {
      // Dropped meanwhile (the job paused or removed here).
      if (!this.#deferred.delete(waiting)) continue
      const { job, occurrence } = waiting
      if (taken.has(key(job.id, occurrence.scheduledFor))) {
        this.events.emit('schedule:fire', {
          jobId: job.id,
          jobName: job.name,
          scheduledFor: occurrence.scheduledFor,
          firedAt: now,
          trigger: occurrence.trigger,
          outcome: 'claimed-elsewhere',
        })
        continue
      }
      const version = versions.get(job.id)
      if (version === undefined || !version.enabled) {
        this.#fires.delete(job.id)
        continue
      }
      if (version.updatedAt !== job.updatedAt) {
        changed.set(job.id, occurrence.scheduledFor)
        continue
      }
      if (!this.#slots.hasFreeSlot()) {
        // Busy here too: its first taker has it queued, or will; it is taken here only when a slot
        // is free (work stealing), never queued a second time, where it would hold the overlap rule.
        this.#deferred.set(waiting, now + DEFER_MS)
        continue
      }
      const admission = this.#slots.admit(job, occurrence)
      if (admission.kind === 'start') batch.start(job, occurrence)
      else if (admission.kind === 'skip') batch.skip(job, occurrence, admission.reason)
      else if (admission.kind === 'wait') batch.queued(job, occurrence, 'waiting for a free run slot')
      else batch.queued(job, occurrence, 'queued behind the running occurrence')
      const write = this.#deferredWrites.get(waiting)
      if (write !== undefined) writes.push(write)
    }
    // Taken here: the job's next run time is this scheduler's to write (compare-and-set, as ever).
    this.#writes.queue(writes)
    if (this.#deferred.size > 0 && this.#deferTimer === undefined) this.#lookAtDeferred(DEFER_MS)
    try {
      const claimed = await this.#claimBatch(batch, now)
      if (claimed === undefined) return
      for (const fire of batch.fires(claimed)) this.events.emit('schedule:fire', fire)
    } finally {
      if (changed.size > 0) await this.#rearmChanged(changed, now)
    }
  }

  /** Removes the job's deferred occurrences; returns them. */
  #dropDeferred(jobId: string): WaitingStart[] {
    const dropped: WaitingStart[] = []
    for (const waiting of this.#deferred.keys()) {
      if (waiting.job.id !== jobId) continue
      this.#deferred.delete(waiting)
      dropped.push(waiting)
    }
    return dropped
  }

  /** A manual row for `job`, never on its pending scheduled occurrence (the schedule's to claim). */
  #claimManual(
    job: CronJob,
    now: number,
    status: 'running' | 'skipped',
    reason: string | null,
    attempts: number,
    trigger: RunTrigger = 'manual',
  ): ReturnType<Ledger['claimManual']> {
    const reserved = this.#fires.get(job.id)?.job.nextRunAt ?? job.nextRunAt
    return this.#ledger.claimManual(job, now, status, reason, { reserved, attempts, trigger })
  }

  // ---------------------------------------------------------------- runs

  #startRun(job: CronJob, row: NewCronRun, payload?: string): void {
    const controller = new AbortController()
    // Claimed while stop() was under way: record it interrupted instead of starting work.
    if (!this.#started)
      controller.abort(
        cancellation('interrupted', 'interrupted: the scheduler stopped before the run started'),
      )
    const active: ActiveRun = {
      runId: row.id,
      controller,
      phase: 'run',
      done: Promise.resolve(),
      ...(payload === undefined ? {} : { payload }),
    }
    this.#slots.addActive(job.id, active)
    if (job.kind === 'ai') this.#aiBudget.record(row.startedAt ?? this.#now())
    const run: CronRun = {
      ...row,
      durationMs: null,
      result: null,
      error: null,
      deliveryStatus: 'none',
      deliveryError: null,
      inputTokens: null,
      outputTokens: null,
    }
    this.events.emit('run:start', { job, run })
    // Fire-and-forget: the run does not wait for its monitor (a run claimed during stop() pings not).
    const ping = controller.signal.aborted ? undefined : this.#pings.start(job, run)
    const { runScope } = this.#settings
    const task = (
      runScope === undefined
        ? this.#execute(job, run, active, ping)
        : runScope(
            { jobId: job.id, jobName: job.name, runId: run.id, kind: job.kind, trigger: run.trigger },
            () => this.#execute(job, run, active, ping),
          )
    ).finally(() => {
      this.#slots.removeActive(job.id, active)
      this.#pruneStale(this.#now())
      this.#slots.release()
      const armed = this.#fires.get(job.id)
      if (!this.#started || armed === undefined) return
      const queued = this.#slots.takeQueued(job.id)
      if (queued === undefined) return
      const admission = this.#slots.admit(armed.job, queued)
      if (admission.kind === 'start')
        this.#track(this.#startWaiting([{ job: armed.job, occurrence: queued }]))
      else if (admission.kind === 'skip') {
        // Refused now (the daily AI budget): recorded, never dropped silently.
        this.#track(
          this.#recordSkips([{ job: armed.job, occurrence: queued }], admission.reason).catch(
            (error: unknown) => this.#reportError(error, job.id),
          ),
        )
      }
    })
    active.done = task
    this.#track(task)
  }

  async #execute(job: CronJob, run: CronRun, active: ActiveRun, ping: RunPing | undefined): Promise<void> {
    const end = await this.#executor.execute(job, run, active, {
      current: () => this.#fires.get(job.id)?.job ?? job,
      recorded: (status, consecutiveFailures) => {
        const armed = this.#fires.get(job.id)
        if (armed !== undefined) armed.job = { ...armed.job, lastStatus: status, consecutiveFailures }
      },
    })
    if (job.kind === 'ai' && end.tokens > 0) this.#tokenBudget.record(this.#now(), end.tokens)
    const failed = end.status === 'failed' || end.status === 'timed_out'
    if (failed && end.failures !== undefined && end.failures >= this.#settings.maxConsecutiveFailures) {
      try {
        await this.#autoPause(job, end.failures, end.error, active.controller.signal)
      } catch (storeError) {
        this.#reportError(storeError, job.id, run.id)
      }
    }
    this.#pings.end(ping, job, end.final)
    this.events.emit('run:end', { job, run: end.final })
    if (failed) {
      this.events.emit('run:error', {
        jobId: job.id,
        runId: run.id,
        error: new CronError(
          end.status === 'failed' ? 'CRON_RUN_FAILED' : 'CRON_RUN_TIMEOUT',
          end.error ?? end.status,
        ),
      })
    }
  }

  async #autoPause(
    job: CronJob,
    failures: number,
    lastError: string | null,
    signal: AbortSignal,
  ): Promise<void> {
    const last = truncate(lastError ?? 'unknown', 500)
    const reason = `paused after ${failures} consecutive failures; last error: ${last}`
    const paused = await this.#settings.store.updateJob(job.id, {
      enabled: false,
      pauseReason: reason,
      nextRunAt: null,
    })
    this.#fires.delete(job.id)
    const dropped = [...this.#slots.dropPending(job.id, job), ...this.#dropDeferred(job.id)]
    if (dropped.length > 0) {
      await this.#recordSkips(dropped, 'skipped: the job was paused after consecutive failures')
    }
    this.#settings.logger.warn('cron job auto-paused', { jobId: job.id, failures })
    const notice = await this.#executor.deliver(
      job.deliverTo,
      `[Cron] ${job.name}\nThis job was paused after ${failures} consecutive failures. Last error: ${last}\nFix the job, then resume it (cron_resume).`,
      signal,
    )
    // A notice, not a run's result: sent once, without the ledger's retries; a failure is said here.
    if (notice.status === 'failed')
      this.#settings.logger.warn('cron job auto-pause notice not delivered', {
        jobId: job.id,
        jobName: job.name,
        error: notice.error,
      })
    this.events.emit('job:pause', { job: paused ?? { ...job, enabled: false, pauseReason: reason }, reason })
  }

  // ---------------------------------------------------------------- helpers

  /** The clock's time as epoch milliseconds (the ledger's unit). */
  #now(): number {
    return this.#settings.clock.now().getTime()
  }

  #arm(): void {
    if (this.#started) this.#fires.arm()
  }

  /**
   * Makes the stored `job` its queue entry, due at its `nextRunAt` or else its next fire after
   * `now`; false (reported, the entry unchanged) when its schedule no longer compiles.
   */
  #armStored(job: CronJob, now: number): boolean {
    const armed = this.#compile(job)
    if (armed === undefined) return false
    this.#fires.set(armed)
    this.#fires.push(armed, job.nextRunAt ?? armed.compiled.next(now))
    return true
  }

  #compile(job: CronJob): ArmedJob | undefined {
    try {
      const armed = new ArmedJob(job)
      void armed.compiled
      this.#dropped.delete(job.id)
      return armed
    } catch (error) {
      this.#reportError(error, job.id)
      this.#remember(job)
      return undefined
    }
  }

  /** Stops arming an enabled job (no next occurrence, or an uncompilable schedule); see `#dropped`. */
  #drop(job: CronJob): void {
    this.#fires.delete(job.id)
    this.#remember(job)
  }

  /**
   * Records a dropped version. Entries leave when the job is unregistered here or seen disabled
   * by the sync (an `at` job once its disable is written); a job removed on another scheduler is
   * never seen again, so the map is also capped, oldest first. Forgetting one costs at most a
   * re-arm of that version, whose occurrence the ledger's unique key lets run only once.
   */
  #remember(job: CronJob): void {
    this.#dropped.delete(job.id)
    if (this.#dropped.size >= MAX_DROPPED) this.#dropped.delete(this.#dropped.keys().next().value as string)
    this.#dropped.set(job.id, job.updatedAt)
  }

  /**
   * What the sync does with a job the store reports changed: `drop` a disabled one armed here (its
   * runs here cancelled, as a pause here would), `arm` an enabled one unless it is armed here in the
   * same version (`updatedAt`) or was dropped here in that version, nothing otherwise. Jobs
   * registered here while the sync read are newer here than in the store.
   */
  #syncAction(job: Pick<JobVersion, 'id' | 'enabled' | 'updatedAt'>): 'arm' | 'drop' | undefined {
    if (this.#changedDuringSync?.has(job.id)) return undefined
    const armed = this.#fires.get(job.id)
    if (!job.enabled) {
      // Disabled in the store: the sync never arms it, so a dropped version need not be kept.
      this.#dropped.delete(job.id)
      return armed === undefined ? undefined : 'drop'
    }
    if (armed !== undefined && armed.job.updatedAt === job.updatedAt) return undefined
    if (armed === undefined && this.#dropped.get(job.id) === job.updatedAt) return undefined
    return 'arm'
  }

  /** The ids among `versions` that {@link #applySync} would act on: read those whole. */
  #staleVersions(versions: readonly JobVersion[]): string[] {
    return versions.filter((version) => this.#syncAction(version) !== undefined).map((version) => version.id)
  }

  /** Applies one page of the changed jobs, read whole (each decided again: it may have changed since). */
  #applySync(jobs: readonly CronJob[], now: number): void {
    if (!this.#started) return
    for (const job of jobs) {
      const action = this.#syncAction(job)
      if (action === 'drop') this.#track(this.unregister(job.id, 'paused'))
      else if (action === 'arm' && this.#armStored(job, now)) {
        this.#writes.forget(job.id)
        this.#settings.logger.debug('cron job synced from the store', { jobId: job.id })
      }
    }
    this.#arm()
  }

  #track(task: Promise<unknown>): void {
    const tracked = task.catch((error: unknown) => this.#reportError(error))
    this.#tasks.add(tracked)
    void tracked.finally(() => this.#tasks.delete(tracked))
  }

  /** When the last `cron scheduler error` line was logged, and how many errors were not since. */
  #errorLog = { at: Number.NEGATIVE_INFINITY, unlogged: 0 }

  #reportError(error: unknown, jobId?: string, runId?: string): void {
    const normalized = toError(error)
    // A store that fails (a full disk, a lost database) fails every call: one line a minute, with
    // how many more there were, instead of a storm. Every error is still emitted as `run:error`.
    const now = this.#now()
    if (now - this.#errorLog.at >= ERROR_LOG_INTERVAL_MS) {
      const { unlogged } = this.#errorLog
      this.#errorLog = { at: now, unlogged: 0 }
      this.#settings.logger.error('cron scheduler error', {
        jobId,
        runId,
        error: normalized.message,
        ...(unlogged === 0 ? {} : { moreSinceLastLine: unlogged }),
      })
    } else {
      this.#errorLog.unlogged++
    }
    this.events.emit('run:error', {
      ...(jobId === undefined ? {} : { jobId }),
      ...(runId === undefined ? {} : { runId }),
      error: normalized,
    })
  }
}

const checkHealthKeys = refuseUnknownKeys('health options', ['staleAfterMs'])
const checkSignalKeys = refuseUnknownKeys('call options', ['signal'])
const checkTriggerKeys = refuseUnknownKeys('trigger options', ['payload'])

/** Waiting occurrences checked by one read of which other schedulers took (one store chunk). */
/** At most one `cron scheduler error` log line per this long; the rest are counted into the next. */
const ERROR_LOG_INTERVAL_MS = 60_000

const PRUNE_LIMIT = 500

/** Least time between two checks of the waiting occurrences while other schedulers claim too. */
const PRUNE_EVERY_MS = 200

/** Least time between a check and the next one a lost claim asks for (a burst loses many at once). */
const PRUNE_AFTER_LOSS_MS = 50

/** How long an occurrence is left to the scheduler that ranks first for it before the others admit it. */
const DEFER_MS = 50

/** A look at the deferred occurrences also takes those whose time comes this much later. */
const DEFER_SLACK_MS = 10

/** Jobs read per page at start-up: each page's decoded rows are garbage before the next is read. */
const START_PAGE = 500

/** The enabled jobs, page by page in name order, so start-up never holds every decoded row at once. */
async function* enabledJobs(store: CronStore): AsyncGenerator<CronJob> {
  let after: string | undefined
  for (;;) {
    const page = await store.listJobs({
      enabled: true,
      limit: START_PAGE,
      ...(after === undefined ? {} : { after }),
    })
    yield* page
    if (page.length < START_PAGE) return
    after = page[page.length - 1]?.name
  }
}

/** Dropped job versions remembered at most (see `#remember`). */
const MAX_DROPPED = 10_000
