import { setMaxListeners } from 'node:events'
import { abortable, childController, sleep } from './abort.js'
import type { LoadedWorkflow, StepDefinition } from './definition.js'
import { DELIVERY_TEXT_LIMIT, deliverToTargets, runReportText, truncate } from './deliver.js'
import { formatDuration } from './duration.js'
import { toError, WorkflowError } from './errors.js'
import type { Emitter } from './events.js'
import type { StepGraph } from './graph.js'
import type { RunStatus, StepRunRecord, StepStatus } from './model.js'
import type {
  AgentRunner,
  AgentRunRequest,
  ChannelSender,
  Clock,
  Logger,
  RunLease,
  ShellRunner,
  ShellRunRequest,
  WorkflowStore,
} from './ports.js'
import { ReadyQueue } from './ready-queue.js'
import { stepSessionKey } from './step-session.js'
import { renderCommand, renderPrompt } from './template.js'
import { addTokenCounts, failureOf, NO_TOKEN_COUNTS, type TokenCounts, tokenCounts } from './token-counts.js'
import { runWhenGate, whenDataSection } from './when-gate.js'

/** What a run needs from its engine. */
export interface RunContext {
  readonly store: WorkflowStore
  readonly agentRunner?: AgentRunner
  readonly shellRunner?: ShellRunner
  readonly channelSender?: ChannelSender
  /** Passed as `ShellRunRequest.cwd` when set. */
  readonly cwd?: string
  readonly clock: Clock
  readonly logger: Logger
  readonly emitter: Emitter
  readonly defaultMaxParallel: number
  readonly defaultStepTimeoutMs: number
  readonly runTimeoutMs: number
  readonly maxResultLength: number
  readonly maxRenderedInputLength: number
  /** How much of the trigger's payload a prompt's `{{trigger.payload}}` carries (bytes of UTF-8). */
  readonly maxPayloadInPromptBytes: number
  readonly deliveryTimeoutMs: number
}

/** A run as the engine starts or resumes it. */
export interface RunInit {
  readonly runId: string
  readonly workflow: LoadedWorkflow
  readonly graph: StepGraph
  readonly deliverTo: readonly string[]
  readonly startedAt: number
  /** The engine's hold on the run: every write names it, and is refused once another engine took the run. */
  readonly lease: RunLease
  /** Until when the lease holds, as last written to the store (epoch ms). */
  readonly leaseExpiresAt: number
  /** `{{trigger.payload}}` of the run; null or absent without one. */
  readonly triggerPayload?: string | null
  /** Who the run's spend counts against, passed with each prompt step; null or absent for none. */
  readonly creator?: string | null
  /** Stored step rows when resuming; absent for a fresh run (all pending). */
  readonly steps?: readonly StepRunRecord[]
}

const MAX_BACKOFF_MS = 10 * 60 * 1000
const ERROR_TEXT_LIMIT = 2000

type Outcome =
  | { readonly ok: true; readonly result: string; readonly tokens: TokenCounts }
  /**
   * `final`: another attempt cannot help (the runner's guard blocked the command, or the agent runner
   * said `retryable: false`). `tokens`: what the failed attempt spent, when its runner said.
   */
  | {
      readonly ok: false
      readonly error: WorkflowError
      readonly final?: boolean
      readonly tokens?: TokenCounts
    }

/**
 * Executes one run: a ready queue fed as dependencies finish, at most `max_parallel` steps at once,
 * every state change written to the store before it is acted on. Internal to the engine.
 */
export class RunExecution {
  readonly runId: string
  readonly workflowName: string
  readonly lease: RunLease
  /** Until when the lease holds as far as this engine knows; the engine moves it on each renewal. */
  leaseExpiresAt: number
  /** Settles when the run ended (recorded and delivered) or was interrupted (stop, lost lease). Never rejects. */
  readonly done: Promise<void>
  #resolveDone!: () => void
  readonly #context: RunContext
  readonly #init: RunInit
  readonly #steps: readonly StepDefinition[]
  readonly #graph: StepGraph
  readonly #controller = new AbortController()
  readonly #status: StepStatus[]
  readonly #results: (string | null)[]
  readonly #attempts: number[]
  /** Per step: dependencies not yet finished; the step is ready at 0. */
  readonly #remaining: number[]
  readonly #ready: ReadyQueue
  readonly #maxParallel: number
  readonly #deliveries = new Set<Promise<void>>()
  #running = 0
  #failure: string | null = null
  #finishing = false
  #runTimer: unknown

  constructor(context: RunContext, init: RunInit) {
    this.#context = context
    this.#init = init
    this.runId = init.runId
    this.workflowName = init.workflow.definition.name
    this.lease = init.lease
    this.leaseExpiresAt = init.leaseExpiresAt
    this.#steps = init.workflow.definition.steps
    this.#graph = init.graph
    const count = this.#steps.length
    this.#status = new Array<StepStatus>(count).fill('pending')
    this.#results = new Array<string | null>(count).fill(null)
    this.#attempts = new Array<number>(count).fill(0)
    this.#remaining = new Array<number>(count).fill(0)
    this.#ready = new ReadyQueue(init.graph.height)
    this.#maxParallel = init.workflow.definition.maxParallel ?? context.defaultMaxParallel
    // Each running step listens on the run's signal (up to max_parallel at once, plus backoff waits).
    setMaxListeners(0, this.#controller.signal)
    this.done = new Promise<void>((resolve) => {
      this.#resolveDone = resolve
    })
    for (const row of init.steps ?? []) {
      const index = init.graph.indexOf.get(row.stepId)
      if (index === undefined) continue
      this.#status[index] = row.status === 'running' ? 'pending' : row.status
      this.#results[index] = row.result
      this.#attempts[index] = row.attempt
      if (row.status === 'failed' && !(this.#steps[index] as StepDefinition).continueOnError) {
        this.#failure ??= `Step "${row.stepId}" failed: ${row.error ?? 'unknown error'}`
      }
    }
  }

  /** Cancels the run: running steps are aborted, the run ends `cancelled`. */
  cancel(): void {
    this.#controller.abort(
      new WorkflowError('WORKFLOW_RUN_CANCELLED', 'The run was cancelled', { data: { runId: this.runId } }),
    )
  }

  /** Stops working on the run without ending it (engine stop, lost lease); it stays resumable. */
  interrupt(reason: WorkflowError): void {
    this.#controller.abort(reason)
  }

  /** Still working on the run: neither aborted (cancel, timeout, stop, lost lease) nor ending. */
  get active(): boolean {
    return !this.#controller.signal.aborted && !this.#finishing
  }

  /** Starts executing. Call once. */
  begin(resumed: boolean): void {
    const { clock } = this.#context
    const remainingMs = this.#init.startedAt + this.#context.runTimeoutMs - clock.now().getTime()
    const timeout = () =>
      this.#controller.abort(
        new WorkflowError(
          'WORKFLOW_RUN_TIMEOUT',
          `The run timed out after ${formatDuration(this.#context.runTimeoutMs)}`,
          {
            data: { runId: this.runId },
          },
        ),
      )
    if (remainingMs <= 0) timeout()
    else this.#runTimer = clock.setTimeout(timeout, remainingMs)
    this.#context.emitter.emit('run:start', { runId: this.runId, workflowName: this.workflowName, resumed })
    this.#seed().then(
      () => this.#pump(),
      (error: unknown) => this.#lost(error),
    )
  }

  get #signal(): AbortSignal {
    return this.#controller.signal
  }

  /** Fills the ready queue from the current statuses; on resume, skips steps behind a failure that were not yet marked. */
  async #seed(): Promise<void> {
    const skipped: number[] = []
    for (const index of this.#graph.order) {
      if (this.#status[index] !== 'pending') continue
      let waiting = 0
      let blockedBy: number | undefined
      for (const dependency of this.#graph.dependencies[index] as readonly number[]) {
        if (this.#satisfied(dependency)) continue
        if (this.#blocking(dependency)) blockedBy ??= dependency
        else waiting += 1
      }
      if (blockedBy !== undefined) {
        this.#status[index] = 'skipped'
        skipped.push(index)
      } else {
        this.#remaining[index] = waiting
        if (waiting === 0) this.#ready.push(index)
      }
    }
    if (skipped.length > 0) await this.#writeSkipped(skipped, 'a dependency did not complete')
  }

  #satisfied(index: number): boolean {
    const status = this.#status[index]
    const step = this.#steps[index] as StepDefinition
    // A skipped step with continue_on_skip was skipped by its own gate: a step skipped because a
    // dependency failed or was skipped had all its descendants skipped in the same transaction.
    return (
      status === 'completed' ||
      (status === 'failed' && step.continueOnError) ||
      (status === 'skipped' && step.continueOnSkip)
    )
  }

  #blocking(index: number): boolean {
    const status = this.#status[index]
    return (
      (status === 'skipped' && !(this.#steps[index] as StepDefinition).continueOnSkip) ||
      status === 'cancelled' ||
      (status === 'failed' && !(this.#steps[index] as StepDefinition).continueOnError)
    )
  }

  #pump(): void {
    while (!this.#signal.aborted && this.#running < this.#maxParallel && this.#ready.size > 0) {
      const index = this.#ready.pop() as number
      if (this.#status[index] !== 'pending') continue
      this.#running += 1
      this.#execute(index).then(
        () => {
          this.#running -= 1
          this.#pump()
        },
        (error: unknown) => {
          this.#running -= 1
          this.#lost(error)
          this.#pump()
        },
      )
    }
    if (this.#running === 0 && (this.#ready.size === 0 || this.#signal.aborted)) void this.#finish()
  }

  /** A store write failed or the lease was lost: stop here and leave the run for resume. */
  #lost(error: unknown): void {
    const reason = WorkflowError.is(error)
      ? error
      : new WorkflowError('WORKFLOW_OWNERSHIP_LOST', 'Stopped working on the run after a store error', {
          cause: error,
          data: { runId: this.runId },
        })
    this.#context.logger.error('workflow run interrupted', { runId: this.runId, code: reason.code })
    this.#context.emitter.emit('run:error', { runId: this.runId, error: reason })
    this.#controller.abort(reason)
    if (this.#running === 0) void this.#finish()
  }

  #owned(): { lease: RunLease } {
    return { lease: this.lease }
  }

  async #write(stepId: string, patch: Parameters<WorkflowStore['updateStep']>[2]): Promise<void> {
    const changed = await this.#context.store.updateStep(this.runId, stepId, patch, this.#owned())
    if (!changed) {
      throw new WorkflowError(
        'WORKFLOW_OWNERSHIP_LOST',
        'The run is no longer owned by this engine or has ended',
        {
          data: { runId: this.runId, stepId },
        },
      )
    }
  }

  async #execute(index: number): Promise<void> {
    const step = this.#steps[index] as StepDefinition
    const { clock } = this.#context
    const budget = step.retry?.attempts ?? 1
    const first = (this.#attempts[index] as number) + 1
    const last = first + budget - 1
    let failure: WorkflowError | undefined
    let gateData: string | undefined
    if (step.when !== undefined) {
      const decision = await this.#gate(index, step)
      if (decision === undefined) return
      if (decision.kind === 'skip') return this.#skip(index, decision.reason)
      if (decision.kind === 'fail') return this.#fail(index, decision.error)
      gateData = decision.data
    }
    let input: string
    try {
      input = this.#render(step, gateData)
    } catch (error) {
      const reason = error as WorkflowError
      await this.#write(step.id, {
        status: 'running',
        attempt: first,
        input: null,
        startedAt: clock.now().getTime(),
      })
      this.#attempts[index] = first
      return this.#fail(index, reason)
    }
    // Every attempt's tokens count: the step's record keeps their sum, failed attempts included.
    let spent = NO_TOKEN_COUNTS
    for (let attempt = first; attempt <= last; attempt += 1) {
      if (this.#signal.aborted) return
      this.#status[index] = 'running'
      this.#attempts[index] = attempt
      await this.#write(step.id, {
        status: 'running',
        attempt,
        input,
        result: null,
        error: failure === undefined ? null : failure.message,
        startedAt: clock.now().getTime(),
        completedAt: null,
      })
      this.#context.emitter.emit('step:start', { runId: this.runId, stepId: step.id, attempt })
      const outcome = await this.#attempt(step, input, attempt)
      if (outcome.tokens !== undefined) spent = addTokenCounts(spent, outcome.tokens)
      if (this.#signal.aborted) return this.#interrupted(index, attempt, spent)
      if (outcome.ok) return this.#complete(index, outcome.result, spent)
      failure = outcome.error
      if (outcome.final === true) break
      if (attempt < last) {
        const delay = Math.min(MAX_BACKOFF_MS, (step.retry?.backoffMs ?? 0) * 2 ** (attempt - first))
        this.#context.logger.info('workflow step attempt failed, retrying', {
          runId: this.runId,
          stepId: step.id,
          attempt,
          delayMs: delay,
        })
        try {
          await sleep(clock, delay, this.#signal)
        } catch {}
      }
    }
    if (failure !== undefined) await this.#fail(index, failure, spent)
  }

  /**
   * The run was aborted while `index` worked: cancel and run timeout mark it `cancelled` (keeping
   * what its attempts spent, `spent`), stop and lost lease leave it for resume.
   */
  async #interrupted(index: number, attempt: number, spent: TokenCounts = NO_TOKEN_COUNTS): Promise<void> {
    // Cancel and run timeout are recorded by #finish; stop and lost lease leave the step for resume.
    this.#status[index] = 'pending'
    const reason = this.#signal.reason
    if (
      WorkflowError.is(reason) &&
      (reason.code === 'WORKFLOW_RUN_CANCELLED' || reason.code === 'WORKFLOW_RUN_TIMEOUT')
    ) {
      this.#status[index] = 'cancelled'
      if (spent.inputTokens !== null || spent.outputTokens !== null) {
        // Before #finish (it waits for every step): a step cut off spent its tokens all the same.
        await this.#write((this.#steps[index] as StepDefinition).id, {
          status: 'running',
          inputTokens: spent.inputTokens,
          outputTokens: spent.outputTokens,
        }).catch((error: unknown) =>
          this.#context.logger.warn('workflow step tokens not recorded', {
            runId: this.runId,
            stepId: (this.#steps[index] as StepDefinition).id,
            error,
          }),
        )
      }
      this.#context.emitter.emit('step:end', {
        runId: this.runId,
        stepId: (this.#steps[index] as StepDefinition).id,
        status: 'cancelled',
        attempt,
        error: reason.message,
      })
    }
  }

  /**
   * Runs the step's `when` gate (its dependencies have completed): the command rendered like a `run`
   * step's, through the `ShellRunner` with the step's timeout, once (not retried). `undefined` when
   * the run was aborted meanwhile (recorded as for an attempt).
   */
  async #gate(index: number, step: StepDefinition) {
    const { clock } = this.#context
    this.#status[index] = 'running'
    await this.#write(step.id, {
      status: 'running',
      input: null,
      result: null,
      error: null,
      startedAt: clock.now().getTime(),
      completedAt: null,
    })
    let command: string
    try {
      command = this.#renderText(step, step.when as string, 'run')
    } catch (error) {
      const reason = error as WorkflowError
      return {
        kind: 'fail',
        error: new WorkflowError(reason.code, `when: ${reason.message}`, { data: reason.data }),
      } as const
    }
    const runner = this.#context.shellRunner
    if (runner === undefined) {
      return {
        kind: 'fail',
        error: new WorkflowError(
          'WORKFLOW_RUNNER_MISSING',
          'when: no ShellRunner is configured for when gates',
        ),
      } as const
    }
    const timeoutMs = step.timeoutMs ?? this.#context.defaultStepTimeoutMs
    const { controller, dispose } = childController(this.#signal)
    let timedOut = false
    const timer = clock.setTimeout(() => {
      timedOut = true
      controller.abort(
        new WorkflowError(
          'WORKFLOW_STEP_TIMEOUT',
          `when: the gate timed out after ${formatDuration(timeoutMs)}`,
        ),
      )
    }, timeoutMs)
    try {
      const request: ShellRunRequest = {
        command,
        ...(this.#context.cwd === undefined ? {} : { cwd: this.#context.cwd }),
        timeoutMs,
        workflowName: this.workflowName,
        runId: this.runId,
        stepId: step.id,
        gate: true,
      }
      return await runWhenGate(runner, request, controller.signal, () => timedOut && !this.#signal.aborted)
    } catch {
      // Only an abort of the run rejects: record it as an interrupted attempt would be.
      this.#interrupted(index, this.#attempts[index] as number)
      return undefined
    } finally {
      clock.clearTimeout(timer)
      dispose()
    }
  }

  /** The step's input: its text rendered, plus the gate's JSON as untrusted data for a prompt. */
  #render(step: StepDefinition, gateData: string | undefined): string {
    if (gateData === undefined || step.kind === 'run') return this.#renderText(step, step.text, step.kind)
    return this.#renderText(step, step.text, step.kind, `\n\n${whenDataSection(gateData)}`)
  }

  #renderText(step: StepDefinition, template: string, kind: StepDefinition['kind'], suffix = ''): string {
    let text = template
    if (step.references.length > 0 || step.usesTrigger === true) {
      const results = new Map<string, string | null>()
      for (const id of step.references)
        results.set(id, this.#results[this.#graph.indexOf.get(id) as number] ?? null)
      const payload = this.#init.triggerPayload ?? null
      text =
        kind === 'run'
          ? renderCommand(template, results, payload)
          : renderPrompt(template, results, payload, this.#context.maxPayloadInPromptBytes)
    }
    text += suffix
    // Bytes, not characters: the cap bounds what the kernel, the runner and the store hold, and a
    // character may take up to 4 bytes. A text of at most cap/3 UTF-16 units cannot exceed it
    // (no UTF-16 unit takes more than 3 bytes), so only longer ones are measured.
    const cap = this.#context.maxRenderedInputLength
    const bytes = text.length * 3 <= cap ? 0 : Buffer.byteLength(text, 'utf8')
    if (bytes > cap) {
      throw new WorkflowError(
        'WORKFLOW_INPUT_TOO_LARGE',
        `The rendered ${kind === 'run' ? 'command' : 'prompt'} is longer than ${cap} bytes of UTF-8 (${bytes})`,
        { data: { runId: this.runId, stepId: step.id, bytes, maxRenderedInputLength: cap } },
      )
    }
    return text
  }

  async #attempt(step: StepDefinition, input: string, attempt: number): Promise<Outcome> {
    const { clock } = this.#context
    const timeoutMs = step.timeoutMs ?? this.#context.defaultStepTimeoutMs
    const { controller, dispose } = childController(this.#signal)
    /** The agent runner's last running total (`AgentRunOptions.onUsage`), for an attempt cut off or without its own. */
    let told: TokenCounts | undefined
    const timer = clock.setTimeout(
      () =>
        controller.abort(
          new WorkflowError(
            'WORKFLOW_STEP_TIMEOUT',
            `The step timed out after ${formatDuration(timeoutMs)}`,
            {
              data: { runId: this.runId, stepId: step.id, attempt },
            },
          ),
        ),
      timeoutMs,
    )
    const signal = controller.signal
    try {
      if (signal.aborted) return { ok: false, error: signal.reason as WorkflowError }
      if (step.kind === 'run') {
        const runner = this.#context.shellRunner
        if (runner === undefined)
          throw new WorkflowError('WORKFLOW_RUNNER_MISSING', 'No ShellRunner is configured for run steps')
        const request: ShellRunRequest = {
          command: input,
          ...(this.#context.cwd === undefined ? {} : { cwd: this.#context.cwd }),
          timeoutMs,
          workflowName: this.workflowName,
          runId: this.runId,
          stepId: step.id,
        }
        const result = await abortable(runner.run(request, { signal }), signal)
        if (result.blocked === true) {
          const message =
            typeof result.message === 'string' && result.message !== ''
              ? result.message.slice(0, ERROR_TEXT_LIMIT)
              : 'The ShellRunner refused the command'
          return {
            ok: false,
            final: true,
            error: new WorkflowError('WORKFLOW_COMMAND_BLOCKED', message, {
              data: { runId: this.runId, stepId: step.id },
            }),
          }
        }
        if (result.timedOut === true) {
          return {
            ok: false,
            error: new WorkflowError(
              'WORKFLOW_STEP_TIMEOUT',
              `The command timed out after ${formatDuration(timeoutMs)}`,
            ),
          }
        }
        if (result.exitCode !== 0) {
          const stderr = tail(result.stderr.trim(), 1000)
          const message = `The command exited with ${result.exitCode === null ? 'a signal' : `code ${result.exitCode}`}${stderr === '' ? '' : `: ${stderr}`}`
          return {
            ok: false,
            error: new WorkflowError('WORKFLOW_STEP_FAILED', message, {
              data: { exitCode: result.exitCode },
            }),
          }
        }
        return { ok: true, result: result.stdout.replace(/\n+$/, ''), tokens: NO_TOKEN_COUNTS }
      }
      const runner = this.#context.agentRunner
      if (runner === undefined)
        throw new WorkflowError('WORKFLOW_RUNNER_MISSING', 'No AgentRunner is configured for prompt steps')
      const request: AgentRunRequest = {
        prompt: input,
        sessionKey: stepSessionKey(this.workflowName, this.runId, step.id),
        ...(step.agent === undefined ? {} : { agent: step.agent }),
        workflowName: this.workflowName,
        runId: this.runId,
        stepId: step.id,
        ...(typeof this.#init.creator === 'string' ? { creator: this.#init.creator } : {}),
      }
      const answer = await abortable(
        runner.run(request, {
          signal,
          onUsage: (usage) => {
            told = tokenCounts(usage)
          },
        }),
        signal,
      )
      if (typeof answer?.text !== 'string') {
        return { ok: false, error: new WorkflowError('WORKFLOW_STEP_FAILED', 'The agent returned no text') }
      }
      return { ok: true, result: answer.text, tokens: reported(tokenCounts(answer.usage), told) }
    } catch (error) {
      // Cut off (step timeout, cancel, stop): the runner was not waited for; its last told total counts.
      if (signal.aborted && WorkflowError.is(signal.reason))
        return { ok: false, error: signal.reason, ...(told === undefined ? {} : { tokens: told }) }
      // The runner's rejection may say what it spent and that trying again cannot help (a budget
      // that is exhausted stays exhausted): recorded, and no further attempt.
      const failure = failureOf(error)
      const { final } = failure
      const tokens = reported(failure.tokens, told)
      if (WorkflowError.is(error)) return { ok: false, error, final, tokens }
      const message = toError(error).message
      return {
        ok: false,
        final,
        tokens,
        error: new WorkflowError(
          'WORKFLOW_STEP_FAILED',
          `The step failed: ${message.slice(0, ERROR_TEXT_LIMIT)}`,
          { cause: error },
        ),
      }
    } finally {
      clock.clearTimeout(timer)
      dispose()
    }
  }

  async #complete(index: number, raw: string, tokens: TokenCounts): Promise<void> {
    const step = this.#steps[index] as StepDefinition
    const result = capResult(raw, this.#context.maxResultLength)
    await this.#write(step.id, {
      status: 'completed',
      result,
      error: null,
      completedAt: this.#context.clock.now().getTime(),
      inputTokens: tokens.inputTokens,
      outputTokens: tokens.outputTokens,
    })
    this.#status[index] = 'completed'
    this.#results[index] = result
    this.#context.emitter.emit('step:end', {
      runId: this.runId,
      stepId: step.id,
      status: 'completed',
      attempt: this.#attempts[index] as number,
      error: null,
    })
    this.#deliverStep(step, 'completed', result)
    this.#release(index)
  }

  async #fail(index: number, error: WorkflowError, tokens?: TokenCounts): Promise<void> {
    const step = this.#steps[index] as StepDefinition
    const message = error.message.slice(0, ERROR_TEXT_LIMIT)
    await this.#write(step.id, {
      status: 'failed',
      error: message,
      completedAt: this.#context.clock.now().getTime(),
      ...(tokens === undefined || (tokens.inputTokens === null && tokens.outputTokens === null)
        ? {}
        : { inputTokens: tokens.inputTokens, outputTokens: tokens.outputTokens }),
    })
    this.#status[index] = 'failed'
    this.#context.emitter.emit('step:end', {
      runId: this.runId,
      stepId: step.id,
      status: 'failed',
      attempt: this.#attempts[index] as number,
      error: message,
    })
    this.#deliverStep(step, 'failed', message)
    if (step.continueOnError) {
      this.#release(index)
      return
    }
    this.#failure ??= `Step "${step.id}" failed: ${message}`
    // Every descendant still pending can never run: mark them all in one transaction.
    const skipped = this.#pendingDescendants(index)
    if (skipped.length > 0) await this.#writeSkipped(skipped, `step "${step.id}" failed`)
  }

  /**
   * The step's `when` gate skipped it: recorded `skipped` with `reason`, and every descendant still
   * pending is skipped too (in one transaction), unless the step has `continue_on_skip` (then they
   * run, its result empty). Not a failure: the run can still end `completed`.
   */
  async #skip(index: number, reason: string): Promise<void> {
    const step = this.#steps[index] as StepDefinition
    await this.#write(step.id, {
      status: 'skipped',
      error: reason,
      completedAt: this.#context.clock.now().getTime(),
    })
    this.#status[index] = 'skipped'
    this.#context.emitter.emit('step:end', {
      runId: this.runId,
      stepId: step.id,
      status: 'skipped',
      attempt: this.#attempts[index] as number,
      error: reason,
    })
    if (step.continueOnSkip) {
      this.#release(index)
      return
    }
    const skipped = this.#pendingDescendants(index)
    if (skipped.length > 0)
      await this.#writeSkipped(skipped, `step "${step.id}" was skipped by its when gate`)
  }

  /** Marks every descendant of `index` still pending `skipped` (in memory) and returns them. */
  #pendingDescendants(index: number): number[] {
    const skipped: number[] = []
    const stack = [index]
    while (stack.length > 0) {
      for (const next of this.#graph.dependents[stack.pop() as number] as readonly number[]) {
        if (this.#status[next] !== 'pending') continue
        this.#status[next] = 'skipped'
        skipped.push(next)
        stack.push(next)
      }
    }
    return skipped
  }

  async #writeSkipped(indices: readonly number[], why: string): Promise<void> {
    const ids = indices.map((index) => (this.#steps[index] as StepDefinition).id)
    const changed = await this.#context.store.updateSteps(
      this.runId,
      ids,
      { status: 'skipped', error: `Skipped: ${why}`, completedAt: this.#context.clock.now().getTime() },
      this.#owned(),
    )
    if (!changed)
      throw new WorkflowError('WORKFLOW_OWNERSHIP_LOST', 'The run is no longer owned by this engine', {
        data: { runId: this.runId },
      })
  }

  /** A finished dependency: dependents whose last dependency this was become ready. */
  #release(index: number): void {
    for (const dependent of this.#graph.dependents[index] as readonly number[]) {
      const left = (this.#remaining[dependent] as number) - 1
      this.#remaining[dependent] = left
      if (left === 0 && this.#status[dependent] === 'pending') this.#ready.push(dependent)
    }
  }

  async #finish(): Promise<void> {
    if (this.#finishing) return
    this.#finishing = true
    const { clock, store, emitter, logger } = this.#context
    clock.clearTimeout(this.#runTimer)
    try {
      const reason = this.#signal.aborted ? this.#signal.reason : undefined
      let status: RunStatus
      let error: string | null
      if (reason !== undefined && WorkflowError.is(reason) && reason.code === 'WORKFLOW_RUN_CANCELLED') {
        status = 'cancelled'
        error = 'The run was cancelled'
      } else if (reason !== undefined && WorkflowError.is(reason) && reason.code === 'WORKFLOW_RUN_TIMEOUT') {
        status = 'failed'
        error = reason.message
      } else if (reason !== undefined) {
        // Engine stop or lost lease: leave the run as it is, resumable.
        await Promise.allSettled(this.#deliveries)
        return
      } else if (this.#status.some((stepStatus) => stepStatus === 'pending' || stepStatus === 'running')) {
        // Cannot happen in a validated DAG; fail loudly rather than record a half-run as completed.
        status = 'failed'
        error = this.#failure ?? 'Some steps could not be scheduled'
      } else {
        status = this.#failure === null ? 'completed' : 'failed'
        error = this.#failure
      }
      const completedAt = clock.now().getTime()
      let recorded = false
      try {
        recorded = await store.finishRun(
          this.runId,
          {
            status,
            error,
            completedAt,
            ...(status === 'completed' ? {} : { remainingSteps: 'cancelled' as const }),
          },
          this.#owned(),
        )
      } catch (caught) {
        logger.error('workflow run end not recorded', { runId: this.runId })
        emitter.emit('run:error', { runId: this.runId, error: toError(caught) })
      }
      await Promise.allSettled(this.#deliveries)
      if (!recorded) return
      for (let index = 0; index < this.#status.length; index += 1) {
        if (this.#status[index] === 'pending' || this.#status[index] === 'running')
          this.#status[index] = 'cancelled'
      }
      await this.#deliverRun(status, error)
      emitter.emit('run:end', { runId: this.runId, workflowName: this.workflowName, status, error })
    } finally {
      this.#resolveDone()
    }
  }

  #deliverStep(step: StepDefinition, status: StepStatus, text: string): void {
    if (step.deliverTo === undefined || step.deliverTo.length === 0) return
    const message = truncate(
      `[Workflow] ${this.workflowName} › ${step.id}: ${status}\n\n${text}`,
      DELIVERY_TEXT_LIMIT,
    )
    this.#track(this.#deliver(step.deliverTo, message, step.id))
  }

  async #deliverRun(status: RunStatus, error: string | null): Promise<void> {
    const targets = this.#init.deliverTo
    if (targets.length === 0) return
    const steps = this.#steps.map((step, index) => ({
      id: step.id,
      status: this.#status[index] as StepStatus,
    }))
    // Sinks (no dependents) hold the workflow's outcome.
    const results = this.#steps.flatMap((step, index) =>
      this.#graph.dependents[index]?.length !== 0 || this.#status[index] !== 'completed'
        ? []
        : [{ id: step.id, text: this.#results[index] ?? '' }],
    )
    await this.#deliver(
      targets,
      runReportText({
        workflowName: this.workflowName,
        status,
        error,
        totalSteps: steps.length,
        steps,
        results,
      }),
    )
  }

  #track(promise: Promise<void>): void {
    this.#deliveries.add(promise)
    void promise.finally(() => this.#deliveries.delete(promise))
  }

  async #deliver(targets: readonly string[], text: string, stepId?: string): Promise<void> {
    await deliverToTargets(
      this.#context,
      { runId: this.runId, workflowName: this.workflowName, ...(stepId === undefined ? {} : { stepId }) },
      targets,
      text,
    )
  }
}

/** The counts an answer or a rejection reported, else the runner's last told total. */
function reported(own: TokenCounts, told: TokenCounts | undefined): TokenCounts {
  return own.inputTokens === null && own.outputTokens === null && told !== undefined ? told : own
}

function capResult(value: string, limit: number): string {
  const clean = value.includes('\0') ? value.replaceAll('\0', '\uFFFD') : value
  if (clean.length <= limit) return clean
  return `${clean.slice(0, limit)}\n… [truncated ${clean.length - limit} characters]`
}

function tail(text: string, limit: number): string {
  return text.length <= limit ? text : `…${text.slice(text.length - limit)}`
}
