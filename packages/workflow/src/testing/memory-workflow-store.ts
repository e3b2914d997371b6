import {
  FIRST_LEASE_VERSION,
  type RunStatus,
  type StepRunRecord,
  type StepStatus,
  type WorkflowRunRecord,
} from '../model.js'
import type {
  ClaimRunsRequest,
  LeasedRun,
  ListRunsQuery,
  NewWorkflowRun,
  OwnedCallOptions,
  RunCompletion,
  RunLease,
  StepPatch,
  StoreCallOptions,
  WorkflowStore,
} from '../ports.js'
import { reusedById } from '../reused-steps.js'

const ACTIVE = new Set<RunStatus>(['pending', 'running'])
const UNFINISHED_STEPS = new Set<StepStatus>(['pending', 'running'])

/**
 * An in-memory {@link WorkflowStore} with the same semantics as `SqliteWorkflowStore` (it passes
 * `workflowStoreContract()`). For tests and hosts without a database; nothing survives the process.
 */
export class MemoryWorkflowStore implements WorkflowStore {
  readonly #runs = new Map<string, WorkflowRunRecord>()
  readonly #steps = new Map<string, StepRunRecord[]>()
  readonly #owners = new Map<string, number>()

  async insertRun(run: NewWorkflowRun, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    if (this.#runs.has(run.id)) throw new Error(`A run with id ${run.id} already exists`)
    if (new Set(run.stepIds).size !== run.stepIds.length)
      throw new Error('Step ids must be unique within a run')
    const reused = reusedById(run)
    this.#runs.set(run.id, {
      id: run.id,
      workflowName: run.workflowName,
      definition: run.definition,
      status: run.status,
      totalSteps: run.stepIds.length,
      completedSteps: reused.size,
      error: null,
      deliverTo: [...run.deliverTo],
      originSession: run.originSession,
      owner: run.owner,
      leaseVersion: FIRST_LEASE_VERSION,
      leaseExpiresAt: run.leaseExpiresAt,
      startedAt: run.startedAt,
      completedAt: null,
      rerunOf: run.rerunOf ?? null,
      triggerPayload: run.triggerPayload ?? null,
      creator: run.creator ?? null,
    })
    this.#steps.set(
      run.id,
      run.stepIds.map((stepId, position) => {
        const taken = reused.get(stepId)
        return {
          runId: run.id,
          stepId,
          position,
          status: taken === undefined ? 'pending' : 'completed',
          input: taken?.input ?? null,
          result: taken?.result ?? null,
          error: null,
          attempt: 0,
          startedAt: null,
          completedAt: taken?.completedAt ?? null,
          inputTokens: null,
          outputTokens: null,
          reusedFrom: taken?.reusedFrom ?? null,
        }
      }),
    )
  }

  async updateStep(
    runId: string,
    stepId: string,
    patch: StepPatch,
    options: OwnedCallOptions,
  ): Promise<boolean> {
    return this.updateSteps(runId, [stepId], patch, options)
  }

  async updateSteps(
    runId: string,
    stepIds: readonly string[],
    patch: StepPatch,
    options: OwnedCallOptions,
  ): Promise<boolean> {
    options.signal?.throwIfAborted()
    if (stepIds.length === 0) return true
    const run = this.#runs.get(runId)
    const steps = this.#steps.get(runId)
    if (run === undefined || steps === undefined || !holds(run, options.lease)) return false
    const wanted = new Set(stepIds)
    let updated = 0
    let completed = 0
    for (let index = 0; index < steps.length; index += 1) {
      const step = steps[index] as StepRunRecord
      if (!wanted.has(step.stepId)) continue
      if (patch.status === 'completed' && step.status === 'completed') continue
      steps[index] = applyPatch(step, patch)
      updated += 1
      if (patch.status === 'completed') completed += 1
    }
    if (completed > 0) this.#runs.set(runId, { ...run, completedSteps: run.completedSteps + completed })
    return updated > 0
  }

  async finishRun(
    runId: string,
    completion: RunCompletion,
    options?: StoreCallOptions & { readonly lease?: RunLease },
  ): Promise<boolean> {
    options?.signal?.throwIfAborted()
    const run = this.#runs.get(runId)
    if (run === undefined || !ACTIVE.has(run.status)) return false
    if (options?.lease !== undefined && !holds(run, options.lease)) return false
    this.#runs.set(runId, {
      ...run,
      status: completion.status,
      error: completion.error,
      completedAt: completion.completedAt,
    })
    const remaining = completion.remainingSteps
    if (remaining !== undefined) {
      const steps = this.#steps.get(runId) ?? []
      for (let index = 0; index < steps.length; index += 1) {
        const step = steps[index] as StepRunRecord
        if (UNFINISHED_STEPS.has(step.status))
          steps[index] = { ...step, status: remaining, completedAt: completion.completedAt }
      }
    }
    return true
  }

  async getRun(runId: string, options?: StoreCallOptions): Promise<WorkflowRunRecord | undefined> {
    options?.signal?.throwIfAborted()
    const run = this.#runs.get(runId)
    return run === undefined ? undefined : { ...run }
  }

  async listSteps(runId: string, options?: StoreCallOptions): Promise<StepRunRecord[]> {
    options?.signal?.throwIfAborted()
    return (this.#steps.get(runId) ?? []).map((step) => ({ ...step }))
  }

  async listRuns(query?: ListRunsQuery, options?: StoreCallOptions): Promise<WorkflowRunRecord[]> {
    options?.signal?.throwIfAborted()
    const limit =
      query?.limit === undefined
        ? 20
        : Number.isFinite(query.limit)
          ? Math.min(500, Math.max(1, Math.trunc(query.limit)))
          : 500
    return [...this.#runs.values()]
      .filter((run) => query?.status === undefined || run.status === query.status)
      .filter((run) => query?.workflowName === undefined || run.workflowName === query.workflowName)
      .filter((run) => {
        const before = query?.before
        if (before === undefined) return true
        const started = run.startedAt ?? 0
        return started < before.startedAt || (started === before.startedAt && run.id < before.id)
      })
      .sort(
        (left, right) =>
          (right.startedAt ?? 0) - (left.startedAt ?? 0) ||
          (left.id < right.id ? 1 : left.id > right.id ? -1 : 0),
      )
      .slice(0, limit)
      .map((run) => ({ ...run }))
  }

  async heartbeat(owner: string, now: number, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    this.#owners.set(owner, now)
  }

  async renewLeases(
    owner: string,
    runs: readonly LeasedRun[],
    leaseExpiresAt: number,
    options?: StoreCallOptions,
  ): Promise<string[]> {
    options?.signal?.throwIfAborted()
    const renewed: string[] = []
    for (const { runId, version } of runs) {
      const run = this.#runs.get(runId)
      if (run === undefined || !holds(run, { owner, version })) continue
      this.#runs.set(runId, { ...run, leaseExpiresAt })
      renewed.push(runId)
    }
    return renewed
  }

  async releaseOwner(owner: string, options?: StoreCallOptions): Promise<void> {
    options?.signal?.throwIfAborted()
    this.#owners.delete(owner)
    for (const run of this.#runs.values()) {
      if (run.owner === owner && ACTIVE.has(run.status)) this.#runs.set(run.id, { ...run, leaseExpiresAt: 0 })
    }
  }

  async claimRuns(
    owner: string,
    request: ClaimRunsRequest,
    options?: StoreCallOptions,
  ): Promise<LeasedRun[]> {
    options?.signal?.throwIfAborted()
    const limit =
      request.limit === undefined ? Number.POSITIVE_INFINITY : Math.max(0, Math.trunc(request.limit))
    const claimed: LeasedRun[] = []
    const candidates = [...this.#runs.values()].sort(
      (left, right) =>
        (left.startedAt ?? 0) - (right.startedAt ?? 0) ||
        (left.id < right.id ? -1 : left.id > right.id ? 1 : 0),
    )
    for (const run of candidates) {
      if (claimed.length >= limit) break
      if (!ACTIVE.has(run.status)) continue
      if (run.leaseExpiresAt === null) {
        const heartbeat = run.owner === null ? undefined : this.#owners.get(run.owner)
        if (heartbeat !== undefined && heartbeat >= request.staleBefore) continue
      } else if (run.leaseExpiresAt >= request.now) continue
      const version = run.leaseVersion + 1
      this.#runs.set(run.id, {
        ...run,
        owner,
        status: 'running',
        leaseVersion: version,
        leaseExpiresAt: request.leaseExpiresAt,
      })
      const steps = this.#steps.get(run.id) ?? []
      for (let index = 0; index < steps.length; index += 1) {
        const step = steps[index] as StepRunRecord
        if (step.status === 'running') steps[index] = { ...step, status: 'pending' }
      }
      claimed.push({ runId: run.id, version })
    }
    for (const [id, heartbeat] of this.#owners)
      if (heartbeat < request.staleBefore && id !== owner) this.#owners.delete(id)
    return claimed
  }

  async pruneRuns(
    policy: { readonly completedBefore: number; readonly keep: number },
    options?: StoreCallOptions,
  ): Promise<number> {
    options?.signal?.throwIfAborted()
    const ended = [...this.#runs.values()]
      .filter((run) => !ACTIVE.has(run.status))
      .sort(
        (left, right) => (right.completedAt ?? 0) - (left.completedAt ?? 0) || (left.id < right.id ? 1 : -1),
      )
    let deleted = 0
    ended.forEach((run, index) => {
      if (index >= policy.keep || (run.completedAt !== null && run.completedAt < policy.completedBefore)) {
        this.#runs.delete(run.id)
        this.#steps.delete(run.id)
        deleted += 1
      }
    })
    return deleted
  }
}

/** Whether `lease` still holds the run: active, same owner, same version. */
function holds(run: WorkflowRunRecord, lease: RunLease): boolean {
  return ACTIVE.has(run.status) && run.owner === lease.owner && run.leaseVersion === lease.version
}

function applyPatch(step: StepRunRecord, patch: StepPatch): StepRunRecord {
  return {
    ...step,
    status: patch.status,
    ...(patch.input === undefined ? {} : { input: patch.input }),
    ...(patch.result === undefined ? {} : { result: patch.result }),
    ...(patch.error === undefined ? {} : { error: patch.error }),
    ...(patch.attempt === undefined ? {} : { attempt: patch.attempt }),
    ...(patch.startedAt === undefined ? {} : { startedAt: patch.startedAt }),
    ...(patch.completedAt === undefined ? {} : { completedAt: patch.completedAt }),
    ...(patch.inputTokens === undefined ? {} : { inputTokens: patch.inputTokens }),
    ...(patch.outputTokens === undefined ? {} : { outputTokens: patch.outputTokens }),
  }
}
