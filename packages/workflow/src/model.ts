/** Status of a run. `completed`, `failed` and `cancelled` are terminal. */
export type RunStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled'

/**
 * Status of one step in a run. `completed`, `failed`, `skipped` and `cancelled` are terminal. A step
 * a rerun reused from an earlier run is `completed` with `reusedFrom` set (there is no separate status).
 */
export type StepStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped' | 'cancelled'

/** Every run status, in lifecycle order. */
export const RUN_STATUSES: readonly RunStatus[] = Object.freeze([
  'pending',
  'running',
  'completed',
  'failed',
  'cancelled',
])

/** Every step status, in lifecycle order. */
export const STEP_STATUSES: readonly StepStatus[] = Object.freeze([
  'pending',
  'running',
  'completed',
  'failed',
  'skipped',
  'cancelled',
])

/** The lease version a run is inserted with; each takeover adds 1. */
export const FIRST_LEASE_VERSION = 1

/** True when a run can no longer change. */
export function isTerminalRunStatus(status: RunStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled'
}

/** A stored run (`workflow_runs`). Times are epoch milliseconds (UTC). */
export interface WorkflowRunRecord {
  readonly id: string
  readonly workflowName: string
  /** The YAML text the run was started from; resume re-reads it. */
  readonly definition: string
  readonly status: RunStatus
  readonly totalSteps: number
  /** Steps whose status is `completed`. */
  readonly completedSteps: number
  readonly error: string | null
  /** Run-level delivery targets (`channel` or `channel:id`). */
  readonly deliverTo: readonly string[]
  /** The session that started the run (e.g. `telegram:1:2`), if any. */
  readonly originSession: string | null
  /** The engine instance working on the run; another takes over when its lease expires. */
  readonly owner: string | null
  /** The fencing token: 1 at insert, +1 at each takeover; owned writes must name it (0: stored before leases). */
  readonly leaseVersion: number
  /** Until when `owner` holds the run unless it renews (epoch ms); null for runs stored before leases. */
  readonly leaseExpiresAt: number | null
  readonly startedAt: number | null
  readonly completedAt: number | null
  /** The run this one reruns (`WorkflowEngine.rerunRun`); null for a run started afresh. */
  readonly rerunOf: string | null
  /**
   * The payload of the call that started the run (a webhook's body), `{{trigger.payload}}` in its
   * steps; null or absent for a run started otherwise. Kept so a resumed run renders the same.
   */
  readonly triggerPayload?: string | null
  /**
   * Who the run's spend counts against (a session key such as `telegram:1:2`), passed with each
   * prompt step (`AgentRunRequest.creator`); null or absent for none. Kept so a resumed run keeps it.
   */
  readonly creator?: string | null
}

/** A stored step of a run (`workflow_step_runs`, unique on `(run_id, step_id)`). */
export interface StepRunRecord {
  readonly runId: string
  readonly stepId: string
  /** The step's index in the definition (display order). */
  readonly position: number
  readonly status: StepStatus
  /** The rendered prompt or command of the latest attempt (templates substituted). */
  readonly input: string | null
  readonly result: string | null
  readonly error: string | null
  /** Attempts started so far. */
  readonly attempt: number
  readonly startedAt: number | null
  readonly completedAt: number | null
  /**
   * Tokens the agent reported for the attempt that completed a `prompt` step (prompt, tool results
   * and history sent to the model); null for `run` steps, steps that did not complete, and answers
   * without a usable count.
   */
  readonly inputTokens: number | null
  /** Tokens the model generated for a completed `prompt` step; null as for {@link StepRunRecord.inputTokens}. */
  readonly outputTokens: number | null
  /**
   * For a step a rerun reused instead of running it: the run whose step of the same id produced the
   * result (status `completed`, no attempts, no tokens); null for every step that ran in this run.
   */
  readonly reusedFrom: string | null
}

/** One step of a {@link WorkflowRunSnapshot}. */
export interface StepSnapshot {
  readonly stepId: string
  readonly status: StepStatus
  readonly result: string | null
  readonly error: string | null
  readonly attempt: number
  readonly input: string | null
  readonly startedAt: number | null
  readonly completedAt: number | null
  /** See {@link StepRunRecord.inputTokens}: a completed `prompt` step's reported tokens, else null. */
  readonly inputTokens: number | null
  readonly outputTokens: number | null
  /** See {@link StepRunRecord.reusedFrom}: the run whose result this rerun reused, else null. */
  readonly reusedFrom: string | null
}

/** A run with its steps, as `getRun`/`waitForRun` return it (the shape `workflow_status` serves). */
export interface WorkflowRunSnapshot {
  readonly runId: string
  readonly workflowName: string
  readonly status: RunStatus
  readonly totalSteps: number
  readonly completedSteps: number
  readonly error: string | null
  readonly deliverTo: readonly string[]
  readonly originSession: string | null
  readonly startedAt: number | null
  readonly completedAt: number | null
  /** The run this one reruns, or null. */
  readonly rerunOf: string | null
  /** In definition order. */
  readonly steps: readonly StepSnapshot[]
}

/** A run without its steps or definition, as `listRuns` returns it. */
export interface WorkflowRunSummary {
  readonly runId: string
  readonly workflowName: string
  readonly status: RunStatus
  readonly totalSteps: number
  readonly completedSteps: number
  readonly error: string | null
  readonly startedAt: number | null
  readonly completedAt: number | null
  /** The run this one reruns, or null. */
  readonly rerunOf: string | null
}

/** Builds a snapshot from stored rows. */
export function toRunSnapshot(run: WorkflowRunRecord, steps: readonly StepRunRecord[]): WorkflowRunSnapshot {
  return {
    runId: run.id,
    workflowName: run.workflowName,
    status: run.status,
    totalSteps: run.totalSteps,
    completedSteps: run.completedSteps,
    error: run.error,
    deliverTo: run.deliverTo,
    originSession: run.originSession,
    startedAt: run.startedAt,
    completedAt: run.completedAt,
    rerunOf: run.rerunOf,
    steps: [...steps]
      .sort((left, right) => left.position - right.position)
      .map((step) => ({
        stepId: step.stepId,
        status: step.status,
        result: step.result,
        error: step.error,
        attempt: step.attempt,
        input: step.input,
        startedAt: step.startedAt,
        completedAt: step.completedAt,
        inputTokens: step.inputTokens,
        outputTokens: step.outputTokens,
        reusedFrom: step.reusedFrom,
      })),
  }
}

/** Builds a summary from a stored run. */
export function toRunSummary(run: WorkflowRunRecord): WorkflowRunSummary {
  return {
    runId: run.id,
    workflowName: run.workflowName,
    status: run.status,
    totalSteps: run.totalSteps,
    completedSteps: run.completedSteps,
    error: run.error,
    startedAt: run.startedAt,
    completedAt: run.completedAt,
    rerunOf: run.rerunOf,
  }
}
