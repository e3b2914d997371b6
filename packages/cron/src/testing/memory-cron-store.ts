import { CronError } from '../errors.js'
import { checkExclusiveRuns } from '../exclusive-runs.js'
import { compareJobs, isAfter } from '../job-order.js'
import type { CronDelivery, CronJob, CronRun, CronRunStatus, DeliveryStatus } from '../model.js'
import type {
  CompletionWithOutcome,
  CronJobPatch,
  CronStore,
  DeliveryUpdate,
  JobCountFilter,
  JobListFilter,
  JobSchedule,
  JobScheduleUpdate,
  JobVersion,
  ListRunsOptions,
  NewCronDelivery,
  NewCronRun,
  OccurrenceKey,
  RunCompletion,
  RunInsertResult,
  RunOutcome,
  StoreCallOptions,
  TokenTotal,
} from '../ports.js'
import { checkBucketMs } from '../token-budget.js'

const MAX_LIST_LIMIT = 500

/** In-memory {@link CronStore} with the same semantics as `SqliteCronStore`; for tests and demos. */
export class MemoryCronStore implements CronStore {
  readonly #jobs = new Map<string, CronJob>()
  readonly #runs = new Map<string, CronRun>()
  readonly #occurrences = new Set<string>()
  readonly #owners = new Map<string, number>()
  readonly #deliveries = new Map<string, CronDelivery>()

  async insertJob(job: CronJob, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    this.#assertNameFree(job.name, job.id)
    if (this.#jobs.has(job.id)) throw new Error(`job id ${job.id} exists`)
    this.#jobs.set(job.id, freezeJob(job))
  }

  async updateJob(id: string, patch: CronJobPatch, options?: StoreCallOptions): Promise<CronJob | undefined> {
    options?.signal?.throwIfAborted()
    const job = this.#jobs.get(id)
    if (job === undefined) return undefined
    if (patch.name !== undefined) this.#assertNameFree(patch.name, id)
    const defined = Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined))
    const updated = freezeJob({ ...job, ...defined, id: job.id, createdAt: job.createdAt })
    this.#jobs.set(id, updated)
    return updated
  }

  async deleteJob(id: string, options?: StoreCallOptions): Promise<boolean> {
    options?.signal?.throwIfAborted()
    for (const run of [...this.#runs.values()]) if (run.jobId === id) this.#deleteRun(run)
    return this.#jobs.delete(id)
  }

  async getJob(id: string, options?: StoreCallOptions): Promise<CronJob | undefined> {
    options?.signal?.throwIfAborted()
    return this.#jobs.get(id)
  }

  async getJobByName(name: string, options?: StoreCallOptions): Promise<CronJob | undefined> {
    options?.signal?.throwIfAborted()
    for (const job of this.#jobs.values()) if (job.name === name) return job
    return undefined
  }

  async listJobs(options?: StoreCallOptions & JobListFilter): Promise<CronJob[]> {
    options?.signal?.throwIfAborted()
    const { after, limit, changedSince, sort = 'name', afterKey } = options ?? {}
    const ids = options?.ids === undefined ? undefined : new Set(options.ids)
    const jobs = [...this.#jobs.values()]
      .filter(
        (job) =>
          (ids === undefined || ids.has(job.id)) &&
          this.#matches(job, options ?? {}) &&
          (after === undefined || isAfter(job, sort, after, afterKey)) &&
          (changedSince === undefined || job.updatedAt >= changedSince),
      )
      .sort(compareJobs(sort))
    return limit === undefined ? jobs : jobs.slice(0, limit)
  }

  async countJobs(options?: StoreCallOptions & JobCountFilter): Promise<number> {
    options?.signal?.throwIfAborted()
    let count = 0
    for (const job of this.#jobs.values()) {
      if (
        this.#matches(job, options ?? {}) &&
        (options?.changedSince === undefined || job.updatedAt >= options.changedSince)
      )
        count += 1
    }
    return count
  }

  /** The filters {@link listJobs} and {@link countJobs} share. */
  #matches(job: CronJob, filter: JobCountFilter): boolean {
    const {
      enabled,
      createdBy,
      nameContains,
      kind,
      timezone,
      scheduleType,
      schedule,
      lastStatus,
      running,
      failing,
      lastDeliveryFailed,
    } = filter
    return (
      (enabled === undefined || job.enabled === enabled) &&
      (createdBy === undefined || job.createdBy === createdBy) &&
      (nameContains === undefined || job.name.toLowerCase().includes(nameContains.toLowerCase())) &&
      (kind === undefined || job.kind === kind) &&
      (timezone === undefined || job.timezone === timezone) &&
      (scheduleType === undefined || job.scheduleType === scheduleType) &&
      (schedule === undefined || job.schedule === schedule) &&
      (lastStatus === undefined || job.lastStatus === lastStatus) &&
      (running === undefined || this.#running(job.id) === running) &&
      (failing === undefined || job.consecutiveFailures > 0 === failing) &&
      (lastDeliveryFailed === undefined || (this.#lastDelivery(job.id) === 'failed') === lastDeliveryFailed)
    )
  }

  /** Whether a run of the job is in progress. */
  #running(jobId: string): boolean {
    for (const run of this.#runs.values()) if (run.jobId === jobId && run.status === 'running') return true
    return false
  }

  /** The delivery status of the job's newest run whose delivery is final (`delivered` or `failed`). */
  #lastDelivery(jobId: string): DeliveryStatus | undefined {
    let newest: CronRun | undefined
    for (const run of this.#runs.values()) {
      if (run.jobId !== jobId || (run.deliveryStatus !== 'delivered' && run.deliveryStatus !== 'failed'))
        continue
      if (newest === undefined || run.scheduledFor > newest.scheduledFor) newest = run
    }
    return newest?.deliveryStatus
  }

  async enabledSchedules(options?: StoreCallOptions): Promise<JobSchedule[]> {
    options?.signal?.throwIfAborted()
    return [...this.#jobs.values()]
      .filter((job) => job.enabled)
      .sort(compareJobs('name'))
      .map(({ id, name, scheduleType, schedule, timezone, enabled, nextRunAt }) => ({
        id,
        name,
        scheduleType,
        schedule,
        timezone,
        enabled,
        nextRunAt,
      }))
  }

  async changedJobVersions(
    input: { readonly changedSince: number; readonly after?: string; readonly limit: number },
    options?: StoreCallOptions,
  ): Promise<JobVersion[]> {
    options?.signal?.throwIfAborted()
    return [...this.#jobs.values()]
      .filter(
        (job) => job.updatedAt >= input.changedSince && (input.after === undefined || job.name > input.after),
      )
      .sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0))
      .slice(0, input.limit)
      .map(({ id, name, enabled, updatedAt }) => ({ id, name, enabled, updatedAt }))
  }

  async jobVersions(
    ids: readonly string[],
    options?: StoreCallOptions,
  ): Promise<ReadonlyMap<string, { readonly enabled: boolean; readonly updatedAt: number }>> {
    options?.signal?.throwIfAborted()
    const versions = new Map<string, { enabled: boolean; updatedAt: number }>()
    for (const id of ids) {
      const job = this.#jobs.get(id)
      if (job !== undefined) versions.set(id, { enabled: job.enabled, updatedAt: job.updatedAt })
    }
    return versions
  }

  async updateSchedules(updates: readonly JobScheduleUpdate[], options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    for (const update of updates) {
      const job = this.#jobs.get(update.id)
      // Compare-and-set, as the SQL store: never a disabled or redefined job, never backwards.
      if (job === undefined) continue
      if (update.version !== undefined && job.updatedAt !== update.version) continue
      if (update.disable !== undefined && !job.enabled) continue
      const lastRunAt =
        update.lastRunAt !== undefined && (job.lastRunAt === null || job.lastRunAt < update.lastRunAt)
          ? update.lastRunAt
          : job.lastRunAt
      let changes: Partial<CronJob> = { lastRunAt }
      if (update.disable !== undefined) {
        changes = {
          ...changes,
          nextRunAt: update.nextRunAt,
          enabled: false,
          pauseReason: update.disable.reason,
        }
      } else if (
        job.enabled &&
        update.nextRunAt !== null &&
        (job.nextRunAt === null || job.nextRunAt < update.nextRunAt)
      ) {
        changes = { ...changes, nextRunAt: update.nextRunAt }
      }
      this.#jobs.set(update.id, freezeJob({ ...job, ...changes }))
    }
  }

  async insertRuns(runs: readonly NewCronRun[], options?: StoreCallOptions): Promise<RunInsertResult> {
    options?.signal?.throwIfAborted()
    checkExclusiveRuns(runs)
    const inserted = new Set<string>()
    const overlapSkipped = new Set<string>()
    // The overlap check sees the rows stored before the call, not those of the call itself.
    const runningJobs = new Set<string>()
    for (const run of this.#runs.values()) if (run.status === 'running') runningJobs.add(run.jobId)
    for (const run of runs) {
      const key = occurrenceKey(run.jobId, run.scheduledFor)
      if (this.#occurrences.has(key) || this.#runs.has(run.id)) continue
      this.#occurrences.add(key)
      const { exclusive, ...row } = run
      const skipped = exclusive !== undefined && run.status === 'running' && runningJobs.has(run.jobId)
      this.#runs.set(
        run.id,
        Object.freeze({
          ...row,
          ...(skipped
            ? {
                status: 'skipped',
                startedAt: null,
                completedAt: run.startedAt,
                skipReason: exclusive.skipReason,
              }
            : {}),
          durationMs: null,
          result: null,
          error: null,
          deliveryStatus: 'none',
          deliveryError: null,
          inputTokens: null,
          outputTokens: null,
        }),
      )
      inserted.add(run.id)
      if (skipped) overlapSkipped.add(run.id)
    }
    return { inserted, overlapSkipped }
  }

  async claimedOccurrences(
    occurrences: readonly OccurrenceKey[],
    options?: StoreCallOptions,
  ): Promise<OccurrenceKey[]> {
    options?.signal?.throwIfAborted()
    return occurrences.filter((occurrence) =>
      this.#occurrences.has(occurrenceKey(occurrence.jobId, occurrence.scheduledFor)),
    )
  }

  async completeRun(id: string, completion: RunCompletion, options?: StoreCallOptions): Promise<boolean> {
    options?.signal?.throwIfAborted()
    const run = this.#runs.get(id)
    const owned =
      run?.status === 'interrupted' && completion.owner !== undefined && run.owner === completion.owner
    if (run === undefined || (run.status !== 'running' && !owned)) return false
    const { owner: _owner, ...fields } = completion
    this.#runs.set(id, Object.freeze({ ...run, ...fields }))
    return true
  }

  async completeRunWithOutcome(
    id: string,
    completion: RunCompletion,
    outcome: RunOutcome,
    options?: StoreCallOptions,
  ): Promise<CompletionWithOutcome> {
    const updated = await this.completeRun(id, completion, options)
    return {
      updated,
      failures: updated ? await this.recordOutcome(outcome.jobId, outcome.status, outcome.failed) : undefined,
    }
  }

  async setDelivery(
    id: string,
    status: DeliveryStatus,
    error: string | null,
    options?: StoreCallOptions,
  ): Promise<void> {
    options?.signal?.throwIfAborted()
    const run = this.#runs.get(id)
    if (run !== undefined)
      this.#runs.set(id, Object.freeze({ ...run, deliveryStatus: status, deliveryError: error }))
  }

  async insertDeliveries(rows: readonly NewCronDelivery[], options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    for (const row of rows) {
      if (this.#deliveries.has(row.id)) continue
      if ([...this.#deliveries.values()].some((d) => d.runId === row.runId && d.target === row.target))
        continue
      this.#deliveries.set(
        row.id,
        Object.freeze({
          id: row.id,
          runId: row.runId,
          jobId: row.jobId,
          target: row.target,
          status: 'pending',
          attempts: 0,
          nextAttemptAt: row.nextAttemptAt,
          lastError: null,
          text: row.text,
          owner: null,
          createdAt: row.createdAt,
          updatedAt: row.createdAt,
          deliveredAt: null,
        }),
      )
    }
  }

  async claimDelivery(
    id: string,
    input: { readonly owner: string; readonly now: number },
    options?: StoreCallOptions,
  ): Promise<CronDelivery | undefined> {
    options?.signal?.throwIfAborted()
    const row = this.#deliveries.get(id)
    if (row?.status !== 'pending') return undefined
    const claimed = Object.freeze({
      ...row,
      status: 'sending' as const,
      owner: input.owner,
      attempts: row.attempts + 1,
      updatedAt: input.now,
    })
    this.#deliveries.set(id, claimed)
    return claimed
  }

  async finishDelivery(id: string, update: DeliveryUpdate, options?: StoreCallOptions): Promise<boolean> {
    options?.signal?.throwIfAborted()
    const row = this.#deliveries.get(id)
    if (row?.status !== 'sending' || row.owner !== update.owner) return false
    this.#deliveries.set(
      id,
      Object.freeze({
        ...row,
        status: update.status,
        nextAttemptAt: update.status === 'pending' ? update.nextAttemptAt : null,
        lastError: update.lastError,
        updatedAt: update.now,
        deliveredAt: update.status === 'delivered' ? update.now : row.deliveredAt,
      }),
    )
    return true
  }

  async pendingDeliveries(
    input: { readonly limit: number },
    options?: StoreCallOptions,
  ): Promise<CronDelivery[]> {
    options?.signal?.throwIfAborted()
    return [...this.#deliveries.values()]
      .filter((row) => row.status === 'pending')
      .sort(
        (left, right) =>
          (left.nextAttemptAt ?? 0) - (right.nextAttemptAt ?? 0) || (left.id < right.id ? -1 : 1),
      )
      .slice(0, Math.min(MAX_LIST_LIMIT, Math.max(1, Math.floor(input.limit))))
  }

  async orphanedDeliveries(
    input: { readonly aliveSince: number; readonly limit: number },
    options?: StoreCallOptions,
  ): Promise<CronDelivery[]> {
    options?.signal?.throwIfAborted()
    return [...this.#deliveries.values()]
      .filter((row) => {
        if (row.status !== 'sending') return false
        const heartbeat = row.owner === null ? undefined : this.#owners.get(row.owner)
        return heartbeat === undefined || heartbeat < input.aliveSince
      })
      .sort((left, right) => (left.id < right.id ? -1 : 1))
      .slice(0, Math.min(MAX_LIST_LIMIT, Math.max(1, Math.floor(input.limit))))
  }

  async listDeliveries(runIds: readonly string[], options?: StoreCallOptions): Promise<CronDelivery[]> {
    options?.signal?.throwIfAborted()
    const ids = new Set(runIds)
    return [...this.#deliveries.values()]
      .filter((row) => ids.has(row.runId))
      .sort((left, right) =>
        left.runId !== right.runId
          ? left.runId < right.runId
            ? -1
            : 1
          : left.target < right.target
            ? -1
            : left.target > right.target
              ? 1
              : 0,
      )
  }

  async recordOutcome(
    jobId: string,
    status: CronRunStatus,
    failed: boolean,
    options?: StoreCallOptions,
  ): Promise<number | undefined> {
    options?.signal?.throwIfAborted()
    const job = this.#jobs.get(jobId)
    if (job === undefined) return undefined
    const consecutiveFailures = failed ? job.consecutiveFailures + 1 : 0
    this.#jobs.set(jobId, freezeJob({ ...job, lastStatus: status, consecutiveFailures }))
    return consecutiveFailures
  }

  async getRun(id: string, options?: StoreCallOptions): Promise<CronRun | undefined> {
    options?.signal?.throwIfAborted()
    return this.#runs.get(id)
  }

  async listRuns(options?: ListRunsOptions): Promise<CronRun[]> {
    options?.signal?.throwIfAborted()
    const limit = clampLimit(options?.limit)
    return [...this.#runs.values()]
      .filter(
        (run) =>
          (options?.jobId === undefined || run.jobId === options.jobId) &&
          (options?.status === undefined || run.status === options.status) &&
          (options?.before === undefined ||
            run.scheduledFor < options.before.scheduledFor ||
            (run.scheduledFor === options.before.scheduledFor && run.id < options.before.id)),
      )
      .sort(newestFirst)
      .slice(0, limit)
  }

  async aiRunStartTimes(
    input: { readonly since: number; readonly limit: number },
    options?: StoreCallOptions,
  ): Promise<number[]> {
    options?.signal?.throwIfAborted()
    const limit = Number.isFinite(input.limit)
      ? Math.min(100_000, Math.max(0, Math.floor(input.limit)))
      : 100_000
    const times: number[] = []
    for (const run of this.#runs.values()) {
      const kind = this.#jobs.get(run.jobId)?.kind
      if (kind === 'ai' && run.status !== 'skipped' && run.startedAt !== null && run.startedAt >= input.since)
        times.push(run.startedAt)
    }
    return times.sort((a, b) => b - a).slice(0, limit)
  }

  async aiTokenTotals(
    input: { readonly since: number; readonly bucketMs: number },
    options?: StoreCallOptions,
  ): Promise<TokenTotal[]> {
    options?.signal?.throwIfAborted()
    const bucketMs = checkBucketMs(input.bucketMs)
    const totals = new Map<number, number>()
    for (const run of this.#runs.values()) {
      if (run.completedAt === null || run.completedAt < input.since) continue
      if (run.inputTokens === null && run.outputTokens === null) continue
      // Truncated like the SQL store's integer division.
      const at = Math.trunc(run.completedAt / bucketMs) * bucketMs
      totals.set(at, (totals.get(at) ?? 0) + (run.inputTokens ?? 0) + (run.outputTokens ?? 0))
    }
    return [...totals].sort(([left], [right]) => left - right).map(([at, tokens]) => ({ at, tokens }))
  }

  async recentResults(jobId: string, limit: number, options?: StoreCallOptions): Promise<string[]> {
    options?.signal?.throwIfAborted()
    return [...this.#runs.values()]
      .filter((run) => run.jobId === jobId && run.status === 'completed' && run.result !== null)
      .sort(newestFirst)
      .slice(0, clampLimit(limit))
      .map((run) => run.result as string)
  }

  async heartbeat(owner: string, now: number, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    this.#owners.set(owner, now)
  }

  async removeOwner(owner: string, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    this.#owners.delete(owner)
  }

  async liveOwners(input: { readonly aliveSince: number }, options?: StoreCallOptions): Promise<string[]> {
    options?.signal?.throwIfAborted()
    return [...this.#owners]
      .filter(([, heartbeat]) => heartbeat >= input.aliveSince)
      .map(([owner]) => owner)
      .sort()
  }

  async interruptOrphanedRuns(
    input: { readonly now: number; readonly aliveSince: number; readonly reason: string },
    options?: StoreCallOptions,
  ): Promise<CronRun[]> {
    options?.signal?.throwIfAborted()
    const interrupted: CronRun[] = []
    for (const run of this.#runs.values()) {
      if (run.status !== 'running') continue
      const heartbeat = run.owner === null ? undefined : this.#owners.get(run.owner)
      if (heartbeat !== undefined && heartbeat >= input.aliveSince) continue
      const row: CronRun = Object.freeze({
        ...run,
        status: 'interrupted',
        completedAt: input.now,
        durationMs: input.now - (run.startedAt ?? input.now),
        error: input.reason,
      })
      this.#runs.set(run.id, row)
      interrupted.push(row)
    }
    for (const [owner, heartbeat] of this.#owners)
      if (heartbeat < input.aliveSince) this.#owners.delete(owner)
    return interrupted
  }

  async pruneRuns(
    input: { readonly olderThan: number; readonly keepPerJob: number },
    options?: StoreCallOptions,
  ): Promise<number> {
    options?.signal?.throwIfAborted()
    let deleted = 0
    const byJob = new Map<string, CronRun[]>()
    for (const run of [...this.#runs.values()]) {
      if (run.status !== 'running' && run.scheduledFor < input.olderThan) {
        this.#deleteRun(run)
        deleted++
        continue
      }
      const list = byJob.get(run.jobId) ?? []
      list.push(run)
      byJob.set(run.jobId, list)
    }
    const keep = Math.max(1, Math.floor(input.keepPerJob))
    for (const runs of byJob.values()) {
      if (runs.length <= keep) continue
      runs.sort(newestFirst)
      const boundary = (runs[keep - 1] as CronRun).scheduledFor
      for (const run of runs) {
        if (run.status !== 'running' && run.scheduledFor < boundary) {
          this.#deleteRun(run)
          deleted++
        }
      }
    }
    return deleted
  }

  #deleteRun(run: CronRun): void {
    this.#runs.delete(run.id)
    for (const delivery of [...this.#deliveries.values()])
      if (delivery.runId === run.id) this.#deliveries.delete(delivery.id)
    this.#occurrences.delete(occurrenceKey(run.jobId, run.scheduledFor))
  }

  #assertNameFree(name: string, id: string): void {
    for (const job of this.#jobs.values()) {
      if (job.name === name && job.id !== id) {
        throw new CronError(
          'CRON_DUPLICATE_NAME',
          `A job named "${name}" already exists; choose another name or update that job.`,
          {
            data: { name },
          },
        )
      }
    }
  }
}

function occurrenceKey(jobId: string, scheduledFor: number): string {
  return `${jobId}\u0000${scheduledFor}`
}

function freezeJob(job: CronJob): CronJob {
  return Object.freeze({ ...job, deliverTo: Object.freeze([...job.deliverTo]) })
}

function newestFirst(left: CronRun, right: CronRun): number {
  return right.scheduledFor - left.scheduledFor || (right.id < left.id ? -1 : right.id > left.id ? 1 : 0)
}

function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return 100
  return Math.min(MAX_LIST_LIMIT, Math.max(1, Math.floor(limit)))
}
