import type { CronService, RunScope } from '@lango/cron'
import type { WorkflowEngine } from '@lango/workflow'
// The error class alone: the agent's index loads the AI SDK, which an idle server never needs.
import { AgentError } from '../agent/errors.js'
import type { AgentRunCallOptions, AgentRunner, AgentRunRequest, AgentTurnResult } from '../agent/index.js'
import type { DeliverySender } from '../metrics/delivery-metrics.js'
import type { HostShellRunner } from '../scheduled-workflows/dispatch.js'
import { errorType, type SpanAttributes } from '../telemetry/attributes.js'
import { type Tracer, type TraceSpan, traced } from '../telemetry/tracer.js'

/**
 * The server's traces (issue 23), wired at the composition root around the packages' ports: one
 * trace per cron run (cron's `runScope`), workflow run, background task and chat turn; child spans
 * for each model call and tool call (the agent loop), shell command and delivery. Every attribute
 * goes through the allow-list of ../telemetry/attributes.ts. Without a tracer every port is
 * returned as it is.
 */
export interface AppTracing {
  /** cron's `runScope`: the `cron.run` root span around each run, delivery included. */
  readonly cronRunScope: RunScope | undefined
  /** `shell.command` spans around every command of cron jobs and workflow steps. */
  shell(runner: HostShellRunner): HostShellRunner
  /** `delivery` spans around every send of cron, background and workflow. */
  sender(sender: DeliverySender): DeliverySender
  /** The agent runner of one source: background tasks and workflow steps get their root spans here. */
  agent<R extends AgentRunRequest & { readonly runId?: string }>(
    source: 'cron' | 'background' | 'workflow',
    runner: {
      run(
        request: R,
        options: { readonly signal: AbortSignal } & AgentRunCallOptions,
      ): Promise<AgentTurnResult>
    },
  ): {
    run(request: R, options: { readonly signal: AbortSignal } & AgentRunCallOptions): Promise<AgentTurnResult>
  }
  /** `chat.turn` root spans around the agent's chats. */
  chats(agent: AgentRunner): AgentRunner
  /** Reads how runs ended from the services' events (the root spans' status). */
  observe(services: { readonly cron: CronService; readonly engine: WorkflowEngine }): void
}

/** The channel of a delivery target (`telegram` of `telegram:42`): no chat id on the span. */
function channelOf(target: string): string {
  const colon = target.indexOf(':')
  return colon === -1 ? target : target.slice(0, colon)
}

const FAILED = new Set(['failed', 'timed_out', 'cancelled', 'interrupted'])

/** The tracing of one app; `tracer` undefined: none, every port as it is. */
export function appTracing(tracer: Tracer | undefined): AppTracing {
  if (tracer === undefined) {
    return {
      cronRunScope: undefined,
      shell: (runner) => runner,
      sender: (sender) => sender,
      agent: (_source, runner) => runner,
      chats: (agent) => agent,
      observe: () => {},
    }
  }
  // Root spans of runs in flight, by run id: their end comes as an event, inside them.
  const cronRuns = new Map<string, { readonly span: TraceSpan; status?: string }>()
  const workflowRuns = new Map<string, TraceSpan>()

  const agentResult = (result: AgentTurnResult, span: TraceSpan) => {
    span.set({
      'gen_ai.request.model': result.model,
      'gen_ai.usage.input_tokens': result.usage.inputTokens,
      'gen_ai.usage.output_tokens': result.usage.outputTokens,
    })
    return undefined
  }
  // A failed turn (its budget passed, its time up) still spent: its error carries the tokens.
  const agentFailure = (error: unknown, span: TraceSpan) => {
    if (!AgentError.is(error) || error.usage === undefined) return
    span.set({
      'gen_ai.usage.input_tokens': error.usage.inputTokens,
      'gen_ai.usage.output_tokens': error.usage.outputTokens,
    })
  }

  return {
    cronRunScope: (run, work) => {
      const span = tracer.start(
        'cron.run',
        {
          'lango.source': 'cron',
          'lango.cron.job_id': run.jobId,
          'lango.cron.job_name': run.jobName,
          'lango.cron.job_kind': run.kind,
          'lango.cron.run_id': run.runId,
          'lango.cron.trigger': run.trigger,
        },
        { root: true },
      )
      const entry: { readonly span: TraceSpan; status?: string } = { span }
      cronRuns.set(run.runId, entry)
      return span.within(work).finally(() => {
        cronRuns.delete(run.runId)
        span.end(entry.status !== undefined && FAILED.has(entry.status) ? { error: entry.status } : {})
      })
    },
    shell: (runner) => ({
      run(request, options) {
        const workflowRun =
          'workflowName' in request && request.stepId !== undefined
            ? workflowRuns.get(request.runId)
            : undefined
        const attributes: SpanAttributes =
          'workflowName' in request
            ? { 'lango.workflow.name': request.workflowName, 'lango.workflow.step_id': request.stepId }
            : { 'lango.cron.job_name': request.jobName }
        const span = tracer.start(
          'shell.command',
          attributes,
          workflowRun === undefined ? {} : { parent: workflowRun },
        )
        return span
          .within(() => runner.run(request, options))
          .then(
            (result) => {
              span.set({
                ...(result.exitCode === null ? {} : { 'process.exit_code': result.exitCode }),
                'lango.shell.timed_out': result.timedOut === true,
                'lango.shell.blocked': result.blocked === true,
              })
              span.end(result.exitCode === 0 ? {} : { error: result.blocked === true ? 'blocked' : 'exit' })
              return result
            },
            (error: unknown) => {
              const type = errorType(error)
              span.set({ 'error.type': type })
              span.end({ error: type })
              throw error
            },
          )
      },
    }),
    sender: (sender) => ({
      send: (target, text, options) =>
        traced(
          tracer,
          'delivery',
          { 'lango.delivery.channel': channelOf(target) },
          () => sender.send(target, text, options),
          { errorType },
        ),
    }),
    agent: (source, runner) => ({
      run(request, options) {
        if (source === 'background') {
          // `bg:<task id>`: the task's own trace.
          const taskId = request.sessionKey.startsWith('bg:') ? request.sessionKey.slice(3) : undefined
          return traced(
            tracer,
            'background.task',
            { 'lango.source': 'background', 'lango.background.task_id': taskId },
            () => runner.run(request, options),
            { root: true, errorType, onResult: agentResult, onError: agentFailure },
          )
        }
        const workflowRun = request.runId === undefined ? undefined : workflowRuns.get(request.runId)
        if (source === 'workflow' && workflowRun !== undefined)
          return workflowRun.within(() => runner.run(request, options))
        return runner.run(request, options)
      },
    }),
    chats: (agent) => ({
      ...agent,
      run: agent.run.bind(agent),
      observe: agent.observe.bind(agent),
      chat: (sessionKey, message, options) =>
        traced(
          tracer,
          'chat.turn',
          { 'lango.source': 'chat', 'lango.session.key': sessionKey },
          () => agent.chat(sessionKey, message, options),
          { root: true, errorType, onResult: agentResult, onError: agentFailure },
        ),
    }),
    observe({ cron, engine }) {
      cron.on('run:end', ({ run }) => {
        const entry = cronRuns.get(run.id)
        if (entry === undefined) return
        entry.status = run.status
        entry.span.set({
          'lango.run.status': run.status,
          'lango.delivery.status': run.deliveryStatus,
          ...(run.inputTokens === null ? {} : { 'gen_ai.usage.input_tokens': run.inputTokens }),
          ...(run.outputTokens === null ? {} : { 'gen_ai.usage.output_tokens': run.outputTokens }),
        })
      })
      engine.on('run:start', ({ runId, workflowName }) => {
        workflowRuns.set(
          runId,
          tracer.start(
            'workflow.run',
            {
              'lango.source': 'workflow',
              'lango.workflow.name': workflowName,
              'lango.workflow.run_id': runId,
            },
            { root: true },
          ),
        )
      })
      engine.on('run:end', ({ runId, status }) => {
        const span = workflowRuns.get(runId)
        if (span === undefined) return
        workflowRuns.delete(runId)
        span.set({ 'lango.run.status': status })
        span.end(FAILED.has(status) ? { error: status } : {})
      })
      // A run's error event means this engine stopped working on it without an end (its lease
      // lost or expired unrenewed, a store write or its end not recorded): the run stays resumable,
      // here or on another server, and its span ends now, not never.
      engine.on('run:error', ({ runId, error }) => {
        const span = runId === undefined ? undefined : workflowRuns.get(runId)
        if (runId === undefined || span === undefined) return
        workflowRuns.delete(runId)
        span.set({ 'lango.run.status': 'interrupted' })
        span.end({ error: errorType(error) })
      })
    },
  }
}
