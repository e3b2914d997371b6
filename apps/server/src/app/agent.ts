import type { AnyTool } from '@lango/tools'
import type {
  AgentRunCallOptions,
  AgentRunner,
  AgentRunRequest,
  SpendLimit,
  TurnContext,
  UsageRecord,
} from '../agent/index.js'
import { noModelRunner } from '../agent/no-model.js'
import { unattendedSession } from '../agent/session-kind.js'
import type { Approvals } from '../approvals.js'
import type { ServerConfig } from '../config/types.js'
import type { Logger } from '../logger.js'
import { SessionStore } from '../sessions/index.js'
import type { Tracer } from '../telemetry/tracer.js'
import type { ServerDatabase } from './database-features.js'

/** Whether the configuration names a model (base URL and model name). */
function modelConfigured(config: ServerConfig): boolean {
  return config.model.baseUrl !== undefined && config.model.name !== undefined
}

/**
 * The agent runner of one package's runs (cron, background, workflow): each run carries who started
 * it (unattended; isolated unless `isolated` says a cron job shares one session across runs),
 * never read back from the session key, and how deep it is in a chain of runs (`nestingOf` its
 * session). `agent` is read at each run: the agent is made after the services these runners serve
 * (it needs their tools), and nothing runs before `start()`.
 */
export function unattendedRunner(
  agent: () => AgentRunner,
  source: 'cron' | 'background' | 'workflow',
  nestingOf: (sessionKey: string) => Promise<number>,
  isolated: (request: AgentRunRequest & { readonly jobName?: string }) => boolean = () => true,
) {
  return {
    run: async (
      request: AgentRunRequest & { readonly jobName?: string },
      // Passed on as they are: the signal, and `onUsage` (the run's running token total).
      options: { readonly signal: AbortSignal } & AgentRunCallOptions,
    ) => {
      // How deep the run is in a chain of runs, across kinds: what its tools start is one deeper.
      const nesting = await nestingOf(request.sessionKey)
      return agent().run(
        { ...request, session: unattendedSession(source, { isolated: isolated(request), nesting }) },
        options,
      )
    },
  }
}

/**
 * Conversation memory with observational compaction; the observer is the model itself (read at
 * each observation, like {@link unattendedRunner}), when there is one.
 */
export function createSessions(
  config: ServerConfig,
  database: ServerDatabase,
  agent: () => AgentRunner,
  logger: Logger,
): SessionStore {
  return new SessionStore(database.db, {
    ...(modelConfigured(config)
      ? { observer: { observe: (messages, options) => agent().observe(messages, options) } }
      : {}),
    limits: {
      retentionMs: config.sessions.retentionMs,
      maxSessions: config.sessions.maxSessions,
      maxMessages: config.sessions.maxMessages,
      observeAfterMessages: config.sessions.observeAfterMessages,
      keepRecentMessages: config.sessions.keepRecentMessages,
    },
    logger,
  })
}

/**
 * The LLM agent: chat turns and the runs of cron, background and workflow, with `tools`, `memory`
 * and the approval policy. The AI SDK loads only for a server with a model (a shell-only server
 * never pays for it); without one every call fails saying so.
 */
export async function createAgent(
  config: ServerConfig,
  parts: {
    readonly memory: SessionStore
    readonly tools: readonly AnyTool[]
    readonly approvals: Approvals
    readonly logger: Logger
    /** Receives every turn's token usage (the metrics). */
    readonly onUsage?: (record: UsageRecord) => void
    /** The daily budgets of a turn about to start (the usage ledger). */
    readonly spendLimits?: (turn: TurnContext) => Promise<readonly SpendLimit[]>
    /** Traces the model calls and tool calls of every turn. */
    readonly tracer?: Tracer
  },
): Promise<AgentRunner> {
  const { createAgentRunner } = modelConfigured(config)
    ? await import('../agent/agent-runner.js')
    : { createAgentRunner: () => noModelRunner() }
  return createAgentRunner({
    memory: parts.memory,
    baseUrl: config.model.baseUrl,
    model: config.model.name,
    apiKey: config.model.apiKey,
    tools: parts.tools,
    maxSteps: config.agent.maxSteps,
    timeoutMs: config.agent.timeoutMs,
    maxRetries: config.agent.maxRetries,
    turnBudget: config.agent.turnBudget,
    prices: Object.fromEntries(
      Object.entries(config.models).flatMap(([model, entry]) =>
        entry.price === undefined ? [] : [[model, entry.price] as const],
      ),
    ),
    // Attended turns without a gate of their own (HTTP chat): pending approvals, answered over
    // the API, the CLI or the dashboard.
    approvalPolicy: config.approvals.policy,
    approvalGate: parts.approvals.gate(),
    approvalTimeoutMs: config.approvals.timeoutMs,
    unattended: {
      allowDangerous: config.approvals.unattendedAllowDangerous,
      allowCronCreate: config.approvals.unattendedAllowCronCreate,
    },
    ...(parts.onUsage === undefined ? {} : { onUsage: parts.onUsage }),
    ...(parts.spendLimits === undefined ? {} : { spendLimits: parts.spendLimits }),
    ...(parts.tracer === undefined ? {} : { tracer: parts.tracer }),
    logger: parts.logger,
  })
}
