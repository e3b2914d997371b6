import { randomUUID } from 'node:crypto'
import { abortable, sleep } from './abort.js'
import type { LoadedWorkflow, StepDefinition } from './definition.js'
import { deliverToTargets, runReportText } from './deliver.js'
import {
  invalidOptionError,
  invalidWorkflowError,
  MAX_TIMER_MS,
  toError,
  WorkflowError,
  type WorkflowIssue,
} from './errors.js'
import { Emitter, type WorkflowEventName, type WorkflowListener } from './events.js'
import type { StepGraph } from './graph.js'
import { resolveLimits, TRUSTED_WORKFLOW_LIMITS, type WorkflowLimits, widestLimits } from './limits.js'
import {
  FIRST_LEASE_VERSION,
  isTerminalRunStatus,
  type RunStatus,
  type StepRunRecord,
  toRunSnapshot,
  toRunSummary,
  type WorkflowRunRecord,
  type WorkflowRunSnapshot,
  type WorkflowRunSummary,
} from './model.js'
import { refuseUnknownKeys } from './option-keys.js'
import { parseWorkflow, validatedGraph } from './parse-workflow.js'
import type {
  AgentRunner,
  ChannelSender,
  Clock,
  Logger,
  ReusedStep,
  ShellRunner,
  WorkflowStore,
} from './ports.js'
import { RunExecution } from './run-execution.js'
import { DELIVERY_TARGET, MAX_TARGETS } from './schema.js'
import { silentLogger } from './silent-logger.js'
import { runIdOfStepSession } from './step-session.js'
import { systemClock, unrefTimer } from './system-clock.js'
import { DEFAULT_MAX_PAYLOAD_IN_PROMPT_BYTES } from './template.js'

/** Options of {@link WorkflowEngine}. Only `store` is required. */
export interface WorkflowEngineOptions {
  readonly store: WorkflowStore
  /** Runs `prompt` steps. Without it, workflows with prompt steps are rejected at start. */
  readonly agentRunner?: AgentRunner
  /** Runs `run` steps. Without it, workflows with run steps are rejected at start. */
  readonly shellRunner?: ShellRunner
  /** Delivers step and run messages. Without it, `deliver_to` is recorded but nothing is sent. */
  readonly channelSender?: ChannelSender
  /** Working directory of `run` steps, passed to the ShellRunner as `cwd`. Default: none (the runner's own). */
  readonly cwd?: string
  readonly clock?: Clock
  readonly logger?: Logger
  /** Generates run ids; default `crypto.randomUUID`. */
  readonly idGenerator?: () => string
  /** This instance's owner id (runs it works on carry it); default a random UUID. */
  readonly ownerId?: string
  /** Caps for YAML text passed to `startRun`; default {@link AGENT_WORKFLOW_LIMITS}. */
  readonly limits?: Partial<WorkflowLimits>
  /** `max_parallel` when the workflow sets none. Default 4. */
  readonly defaultMaxParallel?: number
  /** Step timeout when the step sets none. Default 10 minutes. */
  readonly defaultStepTimeoutMs?: number
  /** Whole-run timeout, counted from the run's start (also across resumes). Default 2 hours. */
  readonly runTimeoutMs?: number
  /** Runs this engine executes at once; more are rejected (`WORKFLOW_TOO_MANY_RUNS`). Default 16. */
  readonly maxConcurrentRuns?: number
  /** Runs of one workflow name this engine executes at once. Default 4. */
  readonly maxRunsPerWorkflow?: number
  /** Deepest nesting of runs started from inside runs (SECURITY.md WF-7). Default 2. */
  readonly maxNesting?: number
  /** Longest stored result, in characters; longer results are cut with a notice. Default 64 KiB. */
  readonly maxResultLength?: number
  /**
   * Longest rendered prompt or command, in bytes of its UTF-8 (a character may take up to 4); longer
   * fails the step (`WORKFLOW_INPUT_TOO_LARGE`). Default 128 KiB (the kernel's single-argument cap).
   */
  readonly maxRenderedInputLength?: number
  /**
   * How much of the trigger's payload (a webhook's body) a `prompt` step's `{{trigger.payload}}`
   * carries, in bytes of its UTF-8: a longer one is cut there, with a line after the block saying how
   * much was cut. A `run` step's `{{trigger.payload}}` is the whole payload. Default 16 KiB.
   */
  readonly maxPayloadInPromptBytes?: number
  /**
   * How long a run's lease lasts without renewal. The heartbeat renews the leases of the runs this
   * engine executes every `leaseMs / 3`; another engine takes over a run whose lease expired,
   * and this engine stops working on a run whose lease it could not renew in time. Default 30 s.
   * The same name as cron's owner lease option.
   */
  readonly leaseMs?: number
  /** @deprecated Use `leaseMs`; `ownerLeaseMs` is still honoured for one release (`leaseMs` wins). */
  readonly ownerLeaseMs?: number
  /** Time allowed for one delivery. Default 15 s. */
  readonly deliveryTimeoutMs?: number
  /** How often `waitForRun` polls the store for runs another engine executes. Default 500 ms. */
  readonly pollIntervalMs?: number
  /** Ended runs are pruned beyond this age and count, each 1 or more. Default 30 days / 1000 runs. */
  readonly retention?: { readonly maxAgeMs: number; readonly maxRuns: number }
  /**
   * Prune on its own: at start and after runs end, at most hourly. Default true. A host with several
   * engines on one database may set false and call {@link WorkflowEngine.pruneHistory} from one of
   * them at a time.
   */
  readonly autoPrune?: boolean
  /**
   * The host's check of each shell command a workflow holds (a `run` step's text and every step's
   * `when`, templates not yet filled in), run by {@link WorkflowEngine.load} and
   * {@link WorkflowEngine.startRun} before anything runs: throw to refuse the text, and the
   * workflow is `WORKFLOW_INVALID` with a `command_refused` issue at the step's `run` or `when`
   * carrying the error's message (the host keeps values out of it: WF-6). For what the host's
   * shell runner would refuse when the step's turn came, after earlier steps ran: with
   * `@lango/exec`, `checkSecretPlacement` (a secret token in single quotes). Default: none.
   */
  readonly checkCommand?: (command: string, stepId: string) => void
}

/** Options of {@link WorkflowEngine.startRun}. */
export interface StartRunOptions {
  /** Targets auto-detected from the caller (e.g. the session's chat); the YAML's own `deliver_to` wins. */
  readonly deliverTo?: readonly string[]
  /**
   * Where the run's end report goes instead of the YAML's `deliver_to` and `deliverTo`: `[]` when
   * the host delivers the run's outcome itself (a scheduler with its own delivery ledger delivers
   * each occurrence once). Stored with the run, so a resumed run keeps it. Steps' own `deliver_to`
   * is unaffected.
   */
  readonly reportTo?: readonly string[]
  /** The session that asked for the run, recorded on it. */
  readonly originSession?: string
  /**
   * Who the run's spend counts against (a session key such as `telegram:1:2`): stored with the run
   * and passed with each prompt step (`AgentRunRequest.creator`), so a host can bound it by the
   * starter's daily budget. At most 256 characters.
   */
  readonly creator?: string
  /**
   * The payload of the call that started the run (a webhook's body, untrusted): its steps' `{{trigger.payload}}`,
   * quoted in commands and marked as untrusted data in prompts. Stored with the run (resume, rerun).
   */
  readonly triggerPayload?: string
  /** How deep in a chain of runs this start is (0 for a person or cron; +1 from inside a step). */
  readonly nesting?: number
  /** Caps for this YAML text when trusted callers need other limits than the engine's. */
  readonly limits?: Partial<WorkflowLimits>
  readonly signal?: AbortSignal
}

/** Options of {@link WorkflowEngine.rerunRun} and {@link WorkflowEngine.planRerun}. */
export interface RerunOptions {
  /**
   * The step to run again, with every step that depends on it. Default: the first steps of the run
   * that did not complete (its failed steps, or for a cancelled run the cancelled ones), not those
   * behind them.
   */
  readonly fromStep?: string
  /** The session that asked for the rerun; default the original run's. */
  readonly originSession?: string
  /** Who the rerun's spend counts against (see {@link StartRunOptions.creator}); default the original run's. */
  readonly creator?: string
  /** As in {@link StartRunOptions.nesting}. */
  readonly nesting?: number
  readonly signal?: AbortSignal
}

/** What a rerun will do, as {@link WorkflowEngine.planRerun} works it out (nothing is written). */
export interface RerunPlan {
  /** The run to rerun (ended). */
  readonly runId: string
  readonly workflowName: string
  /** The definition the run used (its stored YAML), parsed. */
  readonly workflow: LoadedWorkflow
  /** The steps chosen to run again (`fromStep`, or the first steps that did not complete). */
  readonly fromSteps: readonly string[]
  /** Every step that runs again, in definition order: `fromSteps`, their descendants, and steps with nothing to reuse. */
  readonly rerunSteps: readonly string[]
  /** Steps whose completed result the new run reuses, in definition order. */
  readonly reusedSteps: readonly string[]
}

/** Options of {@link WorkflowEngine.waitForRun}. */
export interface WaitForRunOptions {
  /** Return the current snapshot after this long even if the run has not ended; default: wait for the end. */
  readonly timeoutMs?: number
  readonly signal?: AbortSignal
}

type EngineState = 'idle' | 'starting' | 'started' | 'stopping' | 'stopped'

const PRUNE_INTERVAL_MS = 10 * 60 * 1000

/**
 * Runs workflows: validates, persists, executes steps as soon as their dependencies finish (capped
 * by `max_parallel`), retries, delivers, cancels, and on `start()` resumes runs a dead process left
 * behind (completed steps are kept, interrupted ones run again).
 * @example
 * const engine = new WorkflowEngine({ store, shellRunner, agentRunner, channelSender })
 * await engine.start()
 * try {
 *   const { runId } = await engine.startRun(yamlText, { deliverTo: ['telegram:123'] })
 *   const snapshot = await engine.waitForRun(runId, { timeoutMs: 30_000 })
 * } finally {
 *   await engine.stop()
 * }
 */
export class WorkflowEngine {
  readonly #options: Required<
    Omit<
      WorkflowEngineOptions,
      'agentRunner' | 'shellRunner' | 'channelSender' | 'cwd' | 'limits' | 'ownerLeaseMs' | 'checkCommand'
    >
  > & {
    readonly checkCommand?: (command: string, stepId: string) => void
    readonly agentRunner?: AgentRunner
    readonly shellRunner?: ShellRunner
    readonly channelSender?: ChannelSender
    readonly cwd?: string
  }
  readonly #limits: WorkflowLimits
  readonly #emitter: Emitter
  readonly #runs = new Map<string, RunExecution>()
  #state: EngineState = 'idle'
  #heartbeatTimer: unknown
  /** Heartbeats failing in a row (a database away): logged at once, then once a minute with a count. */
  #heartbeatFailure: { readonly since: number; failures: number; loggedAt: number } | undefined
  /** Fires when the earliest lease of a run this engine executes runs out unrenewed. */
  #fenceTimer: unknown
  #tick: Promise<void> = Promise.resolve()
  #lastPrune = Number.NEGATIVE_INFINITY

  constructor(options: WorkflowEngineOptions) {
    checkEngineKeys(options)
    if (options.autoPrune !== undefined && typeof options.autoPrune !== 'boolean')
      throw invalidOptionError('autoPrune', 'autoPrune must be true or false')
    if (options.cwd !== undefined && typeof options.cwd !== 'string')
      throw invalidOptionError('cwd', 'cwd must be a directory path (a string)')
    if (options.checkCommand !== undefined && typeof options.checkCommand !== 'function')
      throw invalidOptionError('checkCommand', 'checkCommand must be a function (command, stepId) => void')
    this.#options = Object.freeze({
      ...options,
      clock: options.clock ?? systemClock,
      logger: options.logger ?? silentLogger,
      idGenerator: options.idGenerator ?? randomUUID,
      ownerId: options.ownerId ?? randomUUID(),
      defaultMaxParallel: count(options.defaultMaxParallel, 4, 'defaultMaxParallel'),
      defaultStepTimeoutMs: timerMs(options.defaultStepTimeoutMs, 10 * 60 * 1000, 'defaultStepTimeoutMs'),
      runTimeoutMs: timerMs(options.runTimeoutMs, 2 * 60 * 60 * 1000, 'runTimeoutMs'),
      maxConcurrentRuns: count(options.maxConcurrentRuns, 16, 'maxConcurrentRuns'),
      maxRunsPerWorkflow: count(options.maxRunsPerWorkflow, 4, 'maxRunsPerWorkflow'),
      maxNesting: count(options.maxNesting, 2, 'maxNesting'),
      maxResultLength: count(options.maxResultLength, 64 * 1024, 'maxResultLength'),
      maxRenderedInputLength: count(options.maxRenderedInputLength, 128 * 1024, 'maxRenderedInputLength'),
      maxPayloadInPromptBytes: count(
        options.maxPayloadInPromptBytes,
        DEFAULT_MAX_PAYLOAD_IN_PROMPT_BYTES,
        'maxPayloadInPromptBytes',
      ),
      leaseMs:
        options.leaseMs === undefined && options.ownerLeaseMs !== undefined
          ? timerMs(options.ownerLeaseMs, 30_000, 'ownerLeaseMs')
          : timerMs(options.leaseMs, 30_000, 'leaseMs'),
      deliveryTimeoutMs: timerMs(options.deliveryTimeoutMs, 15_000, 'deliveryTimeoutMs'),
      pollIntervalMs: timerMs(options.pollIntervalMs, 500, 'pollIntervalMs'),
      retention: checkedRetention(options.retention),
      autoPrune: options.autoPrune ?? true,
    })
    this.#limits = resolveLimits(options.limits)
    this.#emitter = new Emitter((event, error) =>
      this.#options.logger.error('workflow event listener threw', { event, error: toError(error).message }),
    )
  }

  /** This engine's owner id. */
  get ownerId(): string {
    return this.#options.ownerId
  }

  /** Runs this engine executes right now (started here or taken over); at most `maxConcurrentRuns`. */
  get runningCount(): number {
    return this.#runs.size
  }

  /**
   * Parses and validates YAML with this engine's limits (agent-safe by default) without running
   * it: what a caller shows an approver is then exactly what {@link startRun} runs when given the
   * result. Throws `WORKFLOW_INVALID` with every issue.
   */
  load(yaml: string, options?: { readonly limits?: Partial<WorkflowLimits> }): LoadedWorkflow {
    checkLoadKeys(options)
    const parsed = parseWorkflow(yaml, {
      limits: options?.limits === undefined ? this.#limits : resolveLimits(options.limits, this.#limits),
    })
    if (!parsed.ok) throw invalidWorkflowError(parsed.issues)
    this.#checkCommands(parsed.workflow)
    return parsed.workflow
  }

  /** Runs the host's {@link WorkflowEngineOptions.checkCommand} over every shell command of `loaded`. */
  #checkCommands(loaded: LoadedWorkflow): void {
    const check = this.#options.checkCommand
    if (check === undefined) return
    const issues: WorkflowIssue[] = []
    const refused = (index: number, field: 'run' | 'when', step: StepDefinition, command: string) => {
      try {
        check(command, step.id)
      } catch (error) {
        issues.push({
          path: `steps[${index}].${field}`,
          message: toError(error).message,
          code: 'command_refused',
        })
      }
    }
    loaded.definition.steps.forEach((step, index) => {
      if (step.kind === 'run') refused(index, 'run', step, step.text)
      if (step.when !== undefined) refused(index, 'when', step, step.when)
    })
    if (issues.length > 0) throw invalidWorkflowError(issues)
  }

  /** Subscribes to an event; returns the unsubscribe function. */
  on<E extends WorkflowEventName>(event: E, listener: WorkflowListener<E>): () => void {
    return this.#emitter.on(event, listener)
  }

  /**
   * Registers this engine as an owner, prunes old runs, and resumes every run whose lease expired
   * (a crashed, stalled or stopped process), as many as `maxConcurrentRuns` leaves room for:
   * completed steps are kept, interrupted steps run again. Then, every `leaseMs / 3`, renews the
   * leases of the runs it executes (stopping work at once on any it lost) and takes over expired runs.
   * Lease times come from the `clock` option: engines sharing a database need clocks that agree.
   * @returns the ids of the runs resumed now.
   */
  async start(options?: { readonly signal?: AbortSignal }): Promise<{ readonly resumed: readonly string[] }> {
    checkSignalKeys(options)
    options?.signal?.throwIfAborted()
    if (this.#state === 'started' || this.#state === 'starting') return { resumed: [] }
    if (this.#state !== 'idle')
      throw new WorkflowError('WORKFLOW_ENGINE_STOPPED', 'A stopped engine cannot be started again')
    this.#state = 'starting'
    try {
      await this.#options.store.heartbeat(this.ownerId, this.#now(), options)
      await this.#prune()
      const resumed = await this.#takeOver()
      this.#state = 'started'
      this.#scheduleHeartbeat()
      return { resumed }
    } catch (error) {
      this.#state = 'idle'
      throw error
    }
  }

  /**
   * Stops: interrupts every run this engine executes (they stay `running`, resumable by the next
   * engine), waits for them to settle, and releases the lease so another engine may take over at once.
   */
  async stop(options?: { readonly signal?: AbortSignal }): Promise<void> {
    checkSignalKeys(options)
    if (this.#state === 'stopped' || this.#state === 'idle') {
      this.#state = 'stopped'
      return
    }
    this.#state = 'stopping'
    this.#options.clock.clearTimeout(this.#heartbeatTimer)
    this.#options.clock.clearTimeout(this.#fenceTimer)
    const reason = new WorkflowError('WORKFLOW_ENGINE_STOPPED', 'The workflow engine stopped')
    for (const execution of this.#runs.values()) execution.interrupt(reason)
    const settled = Promise.allSettled([
      this.#tick,
      ...[...this.#runs.values()].map((execution) => execution.done),
    ])
    await abortable(settled, options?.signal)
    try {
      await this.#options.store.releaseOwner(this.ownerId)
    } catch (error) {
      this.#options.logger.warn('workflow owner not released', { error: toError(error).message })
    }
    this.#state = 'stopped'
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop()
  }

  /**
   * Validates a workflow and starts a run of it; returns once the run is stored, without waiting for
   * it. YAML text is parsed with the engine's limits (agent-safe by default); an invalid workflow
   * throws `WORKFLOW_INVALID` with every issue, and nothing is written.
   */
  async startRun(
    workflow: string | LoadedWorkflow,
    options?: StartRunOptions,
  ): Promise<{ readonly runId: string; readonly workflowName: string }> {
    options?.signal?.throwIfAborted()
    this.#assertStarted()
    checkStartRunOptions(options)
    if (
      typeof workflow !== 'string' &&
      (typeof workflow !== 'object' || workflow === null || typeof workflow.source !== 'string')
    )
      throw invalidWorkflowError([
        {
          path: '',
          code: 'invalid_type',
          message: 'the workflow must be YAML text, or a workflow from load() or parseWorkflow()',
        },
      ])
    let loaded: LoadedWorkflow
    let graph: StepGraph
    if (typeof workflow === 'string') {
      loaded = this.load(workflow, options?.limits === undefined ? {} : { limits: options.limits })
      graph = validatedGraph(loaded) as StepGraph
    } else {
      // Only objects parseWorkflow produced are trusted as validated; anything else is re-read from its source.
      const known = validatedGraph(workflow)
      if (known !== undefined) {
        loaded = workflow
        graph = known
      } else {
        const parsed = parseWorkflow(workflow.source, { limits: this.#limits })
        if (!parsed.ok) throw invalidWorkflowError(parsed.issues)
        loaded = parsed.workflow
        graph = validatedGraph(loaded) as StepGraph
      }
    }
    // load() checked a text; a workflow object parsed elsewhere is checked here.
    if (typeof workflow !== 'string') this.#checkCommands(loaded)
    const { definition } = loaded
    const creator = checkedCreator(options?.creator) ?? null
    this.#admit(loaded, await this.#nestingOf(options?.nesting, options?.originSession, options?.signal))
    const runId = this.#options.idGenerator()
    const startedAt = this.#now()
    const leaseExpiresAt = startedAt + this.#options.leaseMs
    const deliverTo = options?.reportTo ?? definition.deliverTo ?? options?.deliverTo ?? []
    await this.#options.store.insertRun(
      {
        id: runId,
        workflowName: definition.name,
        definition: loaded.source,
        status: 'running',
        deliverTo,
        originSession: options?.originSession ?? null,
        creator,
        owner: this.ownerId,
        startedAt,
        leaseExpiresAt,
        stepIds: definition.steps.map((step) => step.id),
        ...(options?.triggerPayload === undefined ? {} : { triggerPayload: options.triggerPayload }),
      },
      { ...(options?.signal === undefined ? {} : { signal: options.signal }) },
    )
    this.#launch(
      {
        runId,
        workflow: loaded,
        graph,
        deliverTo,
        startedAt,
        lease: { owner: this.ownerId, version: FIRST_LEASE_VERSION },
        leaseExpiresAt,
        triggerPayload: options?.triggerPayload ?? null,
        creator,
      },
      false,
    )
    return { runId, workflowName: definition.name }
  }

  /**
   * Waits until the run ends, or `timeoutMs` passes, then returns its snapshot (check `status`).
   * Works for runs another engine executes too (by polling the store). This is `workflow_run`'s wait.
   */
  async waitForRun(runId: string, options?: WaitForRunOptions): Promise<WorkflowRunSnapshot> {
    checkWaitKeys(options)
    const signal = options?.signal
    signal?.throwIfAborted()
    const { clock } = this.#options
    const timeoutMs = options?.timeoutMs
    if (
      timeoutMs !== undefined &&
      (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs) || timeoutMs < 0)
    )
      throw invalidOptionError(
        'timeoutMs',
        'timeoutMs must be a number of milliseconds, 0 or more (Infinity, or no timeoutMs, waits for the end)',
        { min: 0 },
      )
    const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : clock.now().getTime() + timeoutMs
    for (;;) {
      const left = deadline - clock.now().getTime()
      const execution = this.#runs.get(runId)
      if (execution !== undefined) {
        if (left <= 0) break
        const waits: Promise<unknown>[] = [execution.done]
        let timer: unknown
        // A wait longer than a Node timer holds goes in chunks: the loop looks at the time again.
        if (Number.isFinite(left))
          waits.push(
            new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, Math.min(left, MAX_TIMER_MS)))),
          )
        try {
          await abortable(Promise.race(waits), signal)
        } finally {
          clock.clearTimeout(timer)
        }
        // An ended execution has left #runs by now (its cleanup was registered first); look again.
        continue
      }
      const run = await this.#options.store.getRun(runId, signal === undefined ? undefined : { signal })
      if (run === undefined) throw notFound(runId)
      if (isTerminalRunStatus(run.status) || left <= 0) break
      await sleep(clock, Math.min(this.#options.pollIntervalMs, left), signal)
    }
    return this.#snapshot(runId, signal)
  }

  /** The run with its steps, or `undefined` if there is no such run (`workflow_status`). */
  async getRun(
    runId: string,
    options?: { readonly signal?: AbortSignal },
  ): Promise<WorkflowRunSnapshot | undefined> {
    checkSignalKeys(options)
    options?.signal?.throwIfAborted()
    const run = await this.#options.store.getRun(runId, options)
    if (run === undefined) return undefined
    return toRunSnapshot(run, await this.#options.store.listSteps(runId, options))
  }

  /** Runs newest first, optionally filtered by status (`workflow_list`). */
  async listRuns(
    query?: {
      readonly limit?: number
      readonly status?: RunStatus
      readonly workflowName?: string
      /** The page after the run of this `startedAt` and `id` (see `ListRunsQuery.before`). */
      readonly before?: { readonly startedAt: number; readonly id: string }
    },
    options?: { readonly signal?: AbortSignal },
  ): Promise<WorkflowRunSummary[]> {
    checkListKeys(query)
    checkSignalKeys(options)
    options?.signal?.throwIfAborted()
    return (await this.#options.store.listRuns(query, options)).map(toRunSummary)
  }

  /**
   * Cancels a run: running steps are aborted, unfinished steps end `cancelled`, the run ends
   * `cancelled` and its targets are told. Works on runs no live engine holds as well.
   * Throws `WORKFLOW_RUN_NOT_FOUND`, or `WORKFLOW_RUN_ENDED` (with `data.status`) for an ended run.
   */
  async cancelRun(runId: string, options?: { readonly signal?: AbortSignal }): Promise<WorkflowRunSnapshot> {
    checkSignalKeys(options)
    const signal = options?.signal
    signal?.throwIfAborted()
    const execution = this.#runs.get(runId)
    if (execution !== undefined) {
      execution.cancel()
      await abortable(execution.done, signal)
    } else {
      const run = await this.#options.store.getRun(runId, options)
      if (run === undefined) throw notFound(runId)
      if (isTerminalRunStatus(run.status)) {
        throw new WorkflowError('WORKFLOW_RUN_ENDED', `The run already ended (${run.status})`, {
          data: { runId, status: run.status },
        })
      }
      const changed = await this.#options.store.finishRun(
        runId,
        {
          status: 'cancelled',
          error: 'The run was cancelled',
          completedAt: this.#now(),
          remainingSteps: 'cancelled',
        },
        options,
      )
      if (!changed) {
        const current = await this.#options.store.getRun(runId, options)
        throw new WorkflowError('WORKFLOW_RUN_ENDED', 'The run already ended', {
          data: { runId, status: current?.status },
        })
      }
      // The engine working on it (another process's) stops at its next lease renewal and reports
      // nothing: the run's targets are told here, as they would be had it ended there.
      await this.#reportCancelled(run)
    }
    return this.#snapshot(runId, signal)
  }

  /**
   * Tells a run's targets it was cancelled (the report its engine would have sent: status, steps
   * completed, each step's outcome) and emits `run:end`, for a run cancelled where no engine of
   * this process executed it.
   */
  async #reportCancelled(run: WorkflowRunRecord): Promise<void> {
    const error = 'The run was cancelled'
    const sender = this.#options.channelSender
    if (run.deliverTo.length > 0 && sender !== undefined) {
      const steps = await this.#options.store.listSteps(run.id).catch(() => [] as StepRunRecord[])
      const ordered = [...steps].sort((a, b) => a.position - b.position)
      const text = runReportText({
        workflowName: run.workflowName,
        status: 'cancelled',
        error,
        totalSteps: run.totalSteps,
        steps: ordered.map((step) => ({ id: step.stepId, status: step.status })),
        results: [],
      })
      await deliverToTargets(
        {
          channelSender: sender,
          clock: this.#options.clock,
          logger: this.#options.logger,
          emitter: this.#emitter,
          deliveryTimeoutMs: this.#options.deliveryTimeoutMs,
        },
        { runId: run.id, workflowName: run.workflowName },
        run.deliverTo,
        text,
      )
    }
    this.#emitter.emit('run:end', {
      runId: run.id,
      workflowName: run.workflowName,
      status: 'cancelled',
      error,
    })
  }

  /**
   * Works out what {@link rerunRun} would do for an ended run, writing nothing: which steps run again
   * and which completed results are reused. Throws `WORKFLOW_RUN_NOT_FOUND`, `WORKFLOW_RUN_ACTIVE`
   * for a run still `pending`/`running`, `WORKFLOW_STEP_NOT_FOUND` for a `fromStep` the run does not
   * have, `WORKFLOW_NOTHING_TO_RERUN` without `fromStep` when every step completed.
   */
  async planRerun(runId: string, options?: RerunOptions): Promise<RerunPlan> {
    checkRerunKeys(options)
    return (await this.#planRerun(runId, options)).plan
  }

  async #planRerun(
    runId: string,
    options: RerunOptions | undefined,
  ): Promise<{ plan: RerunPlan; run: WorkflowRunRecord; rows: readonly StepRunRecord[] }> {
    const signal = options?.signal
    signal?.throwIfAborted()
    const store = this.#options.store
    const run = await store.getRun(runId, signal === undefined ? undefined : { signal })
    if (run === undefined) throw notFound(runId)
    if (!isTerminalRunStatus(run.status)) {
      throw new WorkflowError(
        'WORKFLOW_RUN_ACTIVE',
        `The run is still ${run.status}; rerun it once it has ended (or cancel it first)`,
        { data: { runId, status: run.status } },
      )
    }
    const rows = await store.listSteps(runId, signal === undefined ? undefined : { signal })
    // The stored definition was validated when the run started; re-read it with room for any caps it met.
    const parsed = parseWorkflow(run.definition, {
      limits: widestLimits(this.#limits, TRUSTED_WORKFLOW_LIMITS),
    })
    if (!parsed.ok) throw invalidWorkflowError(parsed.issues)
    const workflow = parsed.workflow
    const graph = validatedGraph(workflow) as StepGraph
    const steps = workflow.definition.steps
    const byId = new Map(rows.map((row) => [row.stepId, row]))
    const completed = steps.map((step) => byId.get(step.id)?.status === 'completed')
    let from: number[]
    if (options?.fromStep !== undefined) {
      const index = graph.indexOf.get(options.fromStep)
      if (index === undefined) {
        throw new WorkflowError('WORKFLOW_STEP_NOT_FOUND', 'The run has no step with this id', {
          data: { runId, stepId: options.fromStep, steps: steps.map((step) => step.id) },
        })
      }
      from = [index]
    } else {
      // The first steps that did not complete: none of their ancestors is one of them.
      const behind = new Array<boolean>(steps.length).fill(false)
      from = []
      for (const index of graph.order) {
        const afterUnfinished = (graph.dependencies[index] as readonly number[]).some(
          (dependency) => !completed[dependency] || behind[dependency],
        )
        behind[index] = afterUnfinished
        if (!completed[index] && !afterUnfinished) from.push(index)
      }
      from.sort((left, right) => left - right)
      if (from.length === 0) {
        throw new WorkflowError(
          'WORKFLOW_NOTHING_TO_RERUN',
          'Every step of the run completed; name the step to rerun from',
          { data: { runId } },
        )
      }
    }
    const again = new Array<boolean>(steps.length).fill(false)
    const stack = [...from]
    for (const index of from) again[index] = true
    while (stack.length > 0) {
      for (const dependent of graph.dependents[stack.pop() as number] as readonly number[]) {
        if (again[dependent]) continue
        again[dependent] = true
        stack.push(dependent)
      }
    }
    const rerunSteps: string[] = []
    const reusedSteps: string[] = []
    steps.forEach((step, index) => {
      // A step that did not complete has no result to reuse: it runs again too.
      if (again[index] || !completed[index]) rerunSteps.push(step.id)
      else reusedSteps.push(step.id)
    })
    const plan: RerunPlan = {
      runId,
      workflowName: run.workflowName,
      workflow,
      fromSteps: from.map((index) => (steps[index] as StepDefinition).id),
      rerunSteps,
      reusedSteps,
    }
    return { plan, run, rows }
  }

  /**
   * Starts a new run of the definition an ended run used, from a step: that step and every step that
   * depends on it (its descendants) run again, as does any step that did not complete; the other
   * steps are stored `completed` with the original result and `reusedFrom` (the run that produced
   * it), and `{{id.result}}` of the steps that run reads those results. The new run records
   * `rerunOf`, keeps the original's delivery targets, and returns once stored, like {@link startRun}.
   * Throws as {@link planRerun} does, and as {@link startRun} does when the run may not start.
   */
  async rerunRun(
    runId: string,
    options?: RerunOptions,
  ): Promise<{ readonly runId: string; readonly workflowName: string; readonly plan: RerunPlan }> {
    checkRerunKeys(options)
    const signal = options?.signal
    this.#assertStarted()
    const { plan, run: original, rows } = await this.#planRerun(runId, options)
    const byId = new Map(rows.map((row) => [row.stepId, row]))
    const loaded = plan.workflow
    const graph = validatedGraph(loaded) as StepGraph
    const creator = checkedCreator(options?.creator) ?? original.creator ?? null
    this.#admit(
      loaded,
      await this.#nestingOf(
        options?.nesting,
        options?.originSession ?? original.originSession ?? undefined,
        signal,
      ),
    )
    const newId = this.#options.idGenerator()
    const startedAt = this.#now()
    const leaseExpiresAt = startedAt + this.#options.leaseMs
    const reusedSteps: ReusedStep[] = plan.reusedSteps.map((stepId) => {
      const row = byId.get(stepId) as StepRunRecord
      return {
        stepId,
        reusedFrom: row.reusedFrom ?? runId,
        result: row.result,
        input: row.input,
        completedAt: startedAt,
      }
    })
    await this.#options.store.insertRun(
      {
        id: newId,
        workflowName: loaded.definition.name,
        definition: loaded.source,
        status: 'running',
        deliverTo: original.deliverTo,
        originSession: options?.originSession ?? original.originSession,
        creator,
        owner: this.ownerId,
        startedAt,
        leaseExpiresAt,
        stepIds: loaded.definition.steps.map((step) => step.id),
        rerunOf: runId,
        reusedSteps,
        triggerPayload: original.triggerPayload ?? null,
      },
      { ...(signal === undefined ? {} : { signal }) },
    )
    this.#options.logger.info('workflow run rerun', {
      runId: newId,
      rerunOf: runId,
      fromSteps: plan.fromSteps,
      reusedSteps: plan.reusedSteps.length,
    })
    this.#launch(
      {
        runId: newId,
        workflow: loaded,
        graph,
        deliverTo: original.deliverTo,
        startedAt,
        lease: { owner: this.ownerId, version: FIRST_LEASE_VERSION },
        leaseExpiresAt,
        steps: await this.#options.store.listSteps(newId),
        triggerPayload: original.triggerPayload ?? null,
        creator,
      },
      false,
    )
    return { runId: newId, workflowName: loaded.definition.name, plan }
  }

  /**
   * How deep a start is: the caller's `nesting`, or, when it is started from a step of a run of
   * this engine's store (an agent step's session, `workflow:<name>:<run id>:<step>`), the number of
   * runs above it, read from the store (each run's own `originSession`), whichever is deeper. A
   * caller that counts from its session alone sees one level (an outside probe's workflow started
   * itself 775 times: each start counted 1); the chain of runs is the store's. Read at most
   * `maxNesting` + 1 levels up.
   */
  async #nestingOf(
    given: number | undefined,
    originSession: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<number> {
    let depth = 0
    let session = originSession
    while (session !== undefined && depth <= this.#options.maxNesting) {
      const runId = runIdOfStepSession(session)
      if (runId === undefined) break
      const parent = await this.#options.store.getRun(runId, signal === undefined ? undefined : { signal })
      if (parent === undefined) break
      depth++
      session = parent.originSession ?? undefined
    }
    return Math.max(given ?? 0, depth)
  }

  /** Throws unless a run of `loaded` may start now: nesting, runners, concurrency caps. */
  #admit(loaded: LoadedWorkflow, nesting: number): void {
    const { definition } = loaded
    if (!Number.isInteger(nesting) || nesting < 0 || nesting > this.#options.maxNesting) {
      throw new WorkflowError(
        'WORKFLOW_NESTING_TOO_DEEP',
        `Runs may nest at most ${this.#options.maxNesting} deep`,
        {
          data: { nesting, maxNesting: this.#options.maxNesting },
        },
      )
    }
    for (const kind of ['prompt', 'run'] as const) {
      const runner = kind === 'run' ? this.#options.shellRunner : this.#options.agentRunner
      if (runner === undefined && definition.steps.some((step) => step.kind === kind)) {
        throw new WorkflowError(
          'WORKFLOW_RUNNER_MISSING',
          `This engine has no ${kind === 'run' ? 'ShellRunner for run' : 'AgentRunner for prompt'} steps`,
          { data: { kind } },
        )
      }
    }
    // A `when` gate is a command: a prompt step with one needs the ShellRunner too.
    if (this.#options.shellRunner === undefined && definition.steps.some((step) => step.when !== undefined)) {
      throw new WorkflowError('WORKFLOW_RUNNER_MISSING', 'This engine has no ShellRunner for when gates', {
        data: { kind: 'when' },
      })
    }
    let sameName = 0
    for (const execution of this.#runs.values()) if (execution.workflowName === definition.name) sameName += 1
    if (this.#runs.size >= this.#options.maxConcurrentRuns || sameName >= this.#options.maxRunsPerWorkflow) {
      throw new WorkflowError(
        'WORKFLOW_TOO_MANY_RUNS',
        'Too many workflow runs are in progress; try again later',
        {
          data: {
            running: this.#runs.size,
            maxConcurrentRuns: this.#options.maxConcurrentRuns,
            maxRunsPerWorkflow: this.#options.maxRunsPerWorkflow,
          },
        },
      )
    }
  }

  async #snapshot(runId: string, signal: AbortSignal | undefined): Promise<WorkflowRunSnapshot> {
    const snapshot = await this.getRun(runId, signal === undefined ? undefined : { signal })
    if (snapshot === undefined) throw notFound(runId)
    return snapshot
  }

  #launch(init: ConstructorParameters<typeof RunExecution>[1], resumed: boolean): void {
    const execution = new RunExecution(
      {
        store: this.#options.store,
        ...(this.#options.agentRunner === undefined ? {} : { agentRunner: this.#options.agentRunner }),
        ...(this.#options.shellRunner === undefined ? {} : { shellRunner: this.#options.shellRunner }),
        ...(this.#options.channelSender === undefined ? {} : { channelSender: this.#options.channelSender }),
        ...(this.#options.cwd === undefined ? {} : { cwd: this.#options.cwd }),
        clock: this.#options.clock,
        logger: this.#options.logger,
        emitter: this.#emitter,
        defaultMaxParallel: this.#options.defaultMaxParallel,
        defaultStepTimeoutMs: this.#options.defaultStepTimeoutMs,
        runTimeoutMs: this.#options.runTimeoutMs,
        maxResultLength: this.#options.maxResultLength,
        maxRenderedInputLength: this.#options.maxRenderedInputLength,
        maxPayloadInPromptBytes: this.#options.maxPayloadInPromptBytes,
        deliveryTimeoutMs: this.#options.deliveryTimeoutMs,
      },
      init,
    )
    this.#runs.set(init.runId, execution)
    void execution.done.then(() => {
      if (this.#runs.get(init.runId) === execution) this.#runs.delete(init.runId)
      if (this.#state === 'started') void this.#prune()
    })
    execution.begin(resumed)
    this.#armFence()
  }

  /** Claims runs whose lease expired and resumes each from its stored definition and steps. */
  async #takeOver(): Promise<string[]> {
    const { store, logger, leaseMs } = this.#options
    const room = this.#options.maxConcurrentRuns - this.#runs.size
    if (room <= 0) return []
    const now = this.#now()
    const leaseExpiresAt = now + leaseMs
    const claimed = await store.claimRuns(this.ownerId, {
      now,
      leaseExpiresAt,
      staleBefore: now - leaseMs,
      limit: room,
    })
    const resumed: string[] = []
    for (const { runId, version } of claimed) {
      // Stopping: leave claimed runs alone; releasing the lease lets the next engine take them.
      if (this.#state !== 'started' && this.#state !== 'starting') break
      const lease = { owner: this.ownerId, version }
      try {
        // This engine's own run whose lease ran out (self-fenced, or renewed too late): its
        // execution holds the old version; let it settle before resuming under the new one.
        const previous = this.#runs.get(runId)
        if (previous !== undefined) {
          previous.interrupt(leaseLost(runId, previous.lease.version))
          await previous.done
        }
        const run = await store.getRun(runId)
        if (run === undefined) continue
        const steps = await store.listSteps(runId)
        // The stored definition was validated when the run started; re-read it with room for any caps it met.
        const parsed = parseWorkflow(run.definition, {
          limits: widestLimits(this.#limits, TRUSTED_WORKFLOW_LIMITS),
        })
        if (!parsed.ok) {
          await store.finishRun(
            runId,
            {
              status: 'failed',
              error: 'The stored definition no longer validates',
              completedAt: this.#now(),
              remainingSteps: 'cancelled',
            },
            { lease },
          )
          continue
        }
        logger.info('workflow run resumed', {
          runId,
          leaseVersion: version,
          completedSteps: run.completedSteps,
          totalSteps: run.totalSteps,
        })
        this.#launch(
          {
            runId,
            workflow: parsed.workflow,
            graph: validatedGraph(parsed.workflow) as StepGraph,
            deliverTo: run.deliverTo,
            startedAt: run.startedAt ?? this.#now(),
            lease,
            leaseExpiresAt,
            steps,
            triggerPayload: run.triggerPayload ?? null,
            creator: run.creator ?? null,
          },
          true,
        )
        resumed.push(runId)
      } catch (error) {
        logger.error('workflow run could not be resumed', { runId, error: toError(error).message })
        this.#emitter.emit('run:error', { runId, error: toError(error) })
      }
    }
    return resumed
  }

  #scheduleHeartbeat(): void {
    if (this.#state !== 'started') return
    this.#heartbeatTimer = this.#options.clock.setTimeout(
      () => {
        this.#tick = this.#heartbeat().finally(() => this.#scheduleHeartbeat())
      },
      Math.max(1, Math.floor(this.#options.leaseMs / 3)),
    )
    unrefTimer(this.#heartbeatTimer)
  }

  async #heartbeat(): Promise<void> {
    if (this.#state !== 'started') return
    try {
      const now = this.#now()
      await this.#renew(now)
      await this.#options.store.heartbeat(this.ownerId, now)
      if (this.#state === 'started') await this.#takeOver()
      this.#heartbeatWritten()
    } catch (error) {
      this.#heartbeatFailed(toError(error))
      this.#emitter.emit('run:error', { error: toError(error) })
      this.#fence()
    }
  }

  /**
   * A failed heartbeat, said once and then once a minute with how many failed since, not every
   * `leaseMs / 3` for as long as a database outage lasts.
   */
  #heartbeatFailed(error: Error): void {
    const now = this.#now()
    const failure = this.#heartbeatFailure
    if (failure === undefined) {
      this.#heartbeatFailure = { since: now, failures: 1, loggedAt: now }
      this.#options.logger.error('workflow heartbeat failed', { error: error.message })
      return
    }
    failure.failures += 1
    if (now - failure.loggedAt < HEARTBEAT_LOG_EVERY_MS) return
    failure.loggedAt = now
    this.#options.logger.error('workflow heartbeat still failing', {
      error: error.message,
      failures: failure.failures,
      sinceMs: now - failure.since,
    })
  }

  /** A heartbeat that went through after failures: said once, with how long and how many. */
  #heartbeatWritten(): void {
    const failure = this.#heartbeatFailure
    if (failure === undefined) return
    this.#heartbeatFailure = undefined
    this.#options.logger.info('workflow heartbeat written again', {
      failures: failure.failures,
      failedForMs: this.#now() - failure.since,
    })
  }

  /**
   * Extends the leases of the runs this engine executes, in one store call. A run the store did
   * not extend was taken over or ended elsewhere: its execution is aborted at once (its steps'
   * signals fire; any write it still attempts is refused by the store anyway).
   */
  async #renew(now: number): Promise<void> {
    const held = [...this.#runs.values()].filter((execution) => execution.active)
    if (held.length === 0) return
    const leaseExpiresAt = now + this.#options.leaseMs
    const renewed = new Set(
      await this.#options.store.renewLeases(
        this.ownerId,
        held.map((execution) => ({ runId: execution.runId, version: execution.lease.version })),
        leaseExpiresAt,
      ),
    )
    for (const execution of held) {
      if (renewed.has(execution.runId)) {
        execution.leaseExpiresAt = Math.max(execution.leaseExpiresAt, leaseExpiresAt)
        continue
      }
      if (!execution.active) continue
      const error = leaseLost(execution.runId, execution.lease.version)
      this.#options.logger.warn('workflow lease lost', {
        runId: execution.runId,
        leaseVersion: execution.lease.version,
      })
      this.#emitter.emit('run:error', { runId: execution.runId, error })
      execution.interrupt(error)
    }
    this.#armFence()
  }

  /**
   * Self-fencing: stops working on every run whose lease ran out without a renewal (the store
   * did not answer in time), since another engine may take it over now. The runs stay resumable.
   */
  #fence(): void {
    const now = this.#now()
    for (const execution of this.#runs.values()) {
      if (!execution.active || execution.leaseExpiresAt > now) continue
      const error = new WorkflowError(
        'WORKFLOW_OWNERSHIP_LOST',
        'The run’s lease expired before it could be renewed; stopped working on the run',
        { data: { runId: execution.runId, leaseVersion: execution.lease.version } },
      )
      this.#options.logger.error('workflow lease expired unrenewed', {
        runId: execution.runId,
        leaseVersion: execution.lease.version,
      })
      this.#emitter.emit('run:error', { runId: execution.runId, error })
      execution.interrupt(error)
    }
    this.#armFence()
  }

  /** (Re)arms the fence timer for the earliest lease expiry among the runs this engine executes. */
  #armFence(): void {
    const { clock } = this.#options
    clock.clearTimeout(this.#fenceTimer)
    this.#fenceTimer = undefined
    if (this.#state !== 'started' && this.#state !== 'starting') return
    let earliest = Number.POSITIVE_INFINITY
    for (const execution of this.#runs.values())
      if (execution.active) earliest = Math.min(earliest, execution.leaseExpiresAt)
    if (earliest === Number.POSITIVE_INFINITY) return
    this.#fenceTimer = clock.setTimeout(() => this.#fence(), Math.max(0, earliest - this.#now()))
    unrefTimer(this.#fenceTimer)
  }

  /**
   * Deletes ended runs older than `retention.maxAgeMs` and beyond the newest `retention.maxRuns` now;
   * returns how many runs were deleted. Rejects with the store's error.
   */
  async pruneHistory(): Promise<number> {
    const { maxAgeMs, maxRuns } = this.#options.retention
    return this.#options.store.pruneRuns({ completedBefore: this.#now() - maxAgeMs, keep: maxRuns })
  }

  async #prune(): Promise<void> {
    if (!this.#options.autoPrune) return
    const now = this.#now()
    if (now - this.#lastPrune < PRUNE_INTERVAL_MS) return
    this.#lastPrune = now
    try {
      await this.pruneHistory()
    } catch (error) {
      this.#options.logger.warn('workflow prune failed', { error: toError(error).message })
    }
  }

  #assertStarted(): void {
    if (this.#state !== 'started') {
      throw new WorkflowError(
        'WORKFLOW_ENGINE_STOPPED',
        this.#state === 'idle' || this.#state === 'starting'
          ? 'Call start() before starting runs'
          : 'The workflow engine is stopped',
      )
    }
  }

  #now(): number {
    return this.#options.clock.now().getTime()
  }
}

/**
 * A millisecond option that feeds a timer: a positive number up to {@link MAX_TIMER_MS} (a longer
 * Node timer fires after about 1 ms); throws `WORKFLOW_INVALID_OPTION` naming it otherwise.
 */
function timerMs(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_TIMER_MS)
    throw invalidOptionError(
      name,
      `${name} must be a positive number of milliseconds up to ${MAX_TIMER_MS} (about 24.8 days, the longest timer Node keeps)`,
      { min: 1, max: MAX_TIMER_MS },
    )
  return value
}

/** A count or size option: a whole number from 1; throws `WORKFLOW_INVALID_OPTION` naming it otherwise. */
function count(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw invalidOptionError(name, `${name} must be a whole number, 1 or more`, { min: 1 })
  return value
}

const DEFAULT_RETENTION = Object.freeze({ maxAgeMs: 30 * 24 * 60 * 60 * 1000, maxRuns: 1000 })

/**
 * The `retention` option: `maxAgeMs` a whole number of milliseconds and `maxRuns` a whole number,
 * both from 1 (0 would delete every ended run at the next prune, as in `@lango/cron`).
 */
/** How often a heartbeat that keeps failing is logged again. */
const HEARTBEAT_LOG_EVERY_MS = 60_000

const checkEngineKeys = refuseUnknownKeys('WorkflowEngine options', [
  'store',
  'agentRunner',
  'shellRunner',
  'channelSender',
  'cwd',
  'clock',
  'logger',
  'idGenerator',
  'ownerId',
  'limits',
  'defaultMaxParallel',
  'defaultStepTimeoutMs',
  'runTimeoutMs',
  'maxConcurrentRuns',
  'maxRunsPerWorkflow',
  'maxNesting',
  'maxResultLength',
  'maxRenderedInputLength',
  'maxPayloadInPromptBytes',
  'leaseMs',
  'ownerLeaseMs',
  'deliveryTimeoutMs',
  'pollIntervalMs',
  'retention',
  'autoPrune',
  'checkCommand',
] satisfies readonly (keyof WorkflowEngineOptions)[])
const checkStartRunKeys = refuseUnknownKeys('startRun options', [
  'deliverTo',
  'reportTo',
  'originSession',
  'creator',
  'triggerPayload',
  'nesting',
  'limits',
  'signal',
] satisfies readonly (keyof StartRunOptions)[])
const checkRerunKeys = refuseUnknownKeys('rerun options', [
  'fromStep',
  'originSession',
  'creator',
  'nesting',
  'signal',
] satisfies readonly (keyof RerunOptions)[])
const checkWaitKeys = refuseUnknownKeys('waitForRun options', ['timeoutMs', 'signal'])
const checkListKeys = refuseUnknownKeys('listRuns query', ['limit', 'status', 'workflowName', 'before'])
const checkLoadKeys = refuseUnknownKeys('load options', ['limits'])
const checkSignalKeys = refuseUnknownKeys('call options', ['signal'])
const checkRetentionKeys = refuseUnknownKeys('retention', ['maxAgeMs', 'maxRuns'], 'retention.')

function checkedRetention(
  value: WorkflowEngineOptions['retention'],
): NonNullable<WorkflowEngineOptions['retention']> {
  if (value === undefined) return DEFAULT_RETENTION
  if (typeof value !== 'object' || value === null)
    throw invalidOptionError('retention', 'retention must be an object { maxAgeMs, maxRuns }')
  checkRetentionKeys(value)
  const { maxAgeMs, maxRuns } = value
  if (typeof maxAgeMs !== 'number' || !Number.isSafeInteger(maxAgeMs) || maxAgeMs < 1)
    throw invalidOptionError(
      'retention.maxAgeMs',
      'retention.maxAgeMs must be a whole number of milliseconds, 1 or more (0 would delete every ended run)',
      { min: 1 },
    )
  if (typeof maxRuns !== 'number' || !Number.isSafeInteger(maxRuns) || maxRuns < 1)
    throw invalidOptionError(
      'retention.maxRuns',
      'retention.maxRuns must be a whole number, 1 or more (0 would delete every ended run)',
      { min: 1 },
    )
  return Object.freeze({ maxAgeMs, maxRuns })
}

/**
 * `startRun`'s options: `deliverTo` and `reportTo` follow the YAML's `deliver_to` rule (at most 16 targets, each
 * `channel` or `channel:id`), `triggerPayload` and `originSession` are strings. Throws `WORKFLOW_INVALID_OPTION`.
 */
function checkStartRunOptions(options: StartRunOptions | undefined): void {
  if (options === undefined) return
  if (typeof options !== 'object' || options === null)
    throw invalidOptionError('options', 'startRun options must be an object')
  checkStartRunKeys(options)
  for (const name of ['deliverTo', 'reportTo'] as const) {
    const targets = options[name]
    if (targets === undefined) continue
    if (!Array.isArray(targets) || targets.length > MAX_TARGETS)
      throw invalidOptionError(
        name,
        `${name} must be a list of at most ${MAX_TARGETS} targets, each "channel" or "channel:id"`,
        { max: MAX_TARGETS },
      )
    targets.forEach((target: unknown, index) => {
      if (typeof target !== 'string' || !DELIVERY_TARGET.test(target))
        throw invalidOptionError(
          name,
          `${name}[${index}] must be "channel" or "channel:id" (channel [A-Za-z0-9_-]{1,32}, id without spaces), as in deliver_to`,
          { index },
        )
    })
  }
  for (const name of ['triggerPayload', 'originSession'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'string')
      throw invalidOptionError(name, `${name} must be a string`)
  }
}

/** Longest `creator` a run takes (a session key). */
const MAX_CREATOR_LENGTH = 256

/** A run's `creator` option: undefined for none or `''`; `WORKFLOW_INVALID_OPTION` for anything but a short string. */
function checkedCreator(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined
  if (typeof value !== 'string' || value.length > MAX_CREATOR_LENGTH)
    throw invalidOptionError(
      'creator',
      `creator must be a string of at most ${MAX_CREATOR_LENGTH} characters (a session key)`,
      { max: MAX_CREATOR_LENGTH },
    )
  return value
}

function leaseLost(runId: string, leaseVersion: number): WorkflowError {
  return new WorkflowError(
    'WORKFLOW_OWNERSHIP_LOST',
    'The run’s lease was lost: another engine took the run over, or it ended elsewhere',
    { data: { runId, leaseVersion } },
  )
}

function notFound(runId: string): WorkflowError {
  return new WorkflowError('WORKFLOW_RUN_NOT_FOUND', 'No workflow run with this id', { data: { runId } })
}
