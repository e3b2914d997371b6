import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import type { AnyTool, ApprovalGate, ApprovalPolicy } from '@lango/tools'
import {
  generateText,
  type LanguageModelUsage,
  type ModelMessage,
  stepCountIs,
  streamText,
  wrapLanguageModel,
} from 'ai'
import { type Logger, silentLogger } from '../logger.js'
import type { LogFields } from '../logger-port.js'
import { errorType } from '../telemetry/attributes.js'
import type { Tracer, TraceSpan } from '../telemetry/tracer.js'
import { CallMeter, type CallUsage, type UnfinishedCall } from './call-meter.js'
import { AgentError } from './errors.js'
import type { ConversationMemory } from './memory.js'
import { modelFailure } from './model-errors.js'
import { retryingModelCalls } from './model-retry.js'
import { displayUrl } from './model-url.js'
import { noModelRunner } from './no-model.js'
import { OBSERVER_SYSTEM_PROMPT, observerPrompt } from './observer.js'
import { CHAT_SESSION, type SessionKind, unattendedSession } from './session-kind.js'
import { SessionQueue } from './session-queue.js'
import { type AgentTurnEvent, drainTurnStream } from './stream-turn.js'
import { buildSystemPrompt, type UnattendedPermissions } from './system-prompt.js'
import { buildTurnTools, type ToolDenial } from './turn-tools.js'

/** Models each once-per-model warning remembers; past it, it forgets them all and may say it again. */
const MAX_WARNED_MODELS = 256
/**
 * What {@link AgentRunner.run} takes: the shared `AgentRunRequest` of `@lango/cron`,
 * `@lango/background` and `@lango/workflow` (ADR 0006). Their extras `jobName`, `jobId`, `runId`,
 * `workflowName`, `stepId` and `creator` pick the daily budgets and go with the usage; `agent` is
 * not used.
 */
export interface AgentRunRequest {
  /** The user message of the turn (cron and background have already put their automation prefix on it). */
  readonly prompt: string
  /** The conversation the turn belongs to: its memory, when it is not isolated. */
  readonly sessionKey: string
  /** A model name for this run instead of the runner's (a cron job's `model`). */
  readonly model?: string
  /**
   * Who started the turn: unattended rules and memory follow from it, never from the key. Default:
   * an unattended, isolated automated run (the side that refuses dangerous tools).
   */
  readonly session?: SessionKind
  /** The cron job that fired the run (`@lango/cron`): its daily budget applies ({@link AgentRunnerOptions.spendLimits}). */
  readonly jobName?: string
  /** That job's id: its daily spend is keyed by it, so renaming the job does not reset it. */
  readonly jobId?: string
  /** The cron run, workflow run or background task the turn is for: recorded with its usage. */
  readonly runId?: string
  /** The workflow whose step this is (`@lango/workflow`). */
  readonly workflowName?: string
  /** The workflow step (`@lango/workflow`). */
  readonly stepId?: string
  /**
   * Who the turn's spend counts against (the per-creator daily budget): the cron job's creator, or
   * whoever submitted the background task or started the workflow run. The turn's tools pass it on
   * to the work they start (`ToolContext.creator` of `@lango/tools`).
   */
  readonly creator?: string
}

/** The kind of a `run()` that names none. */
const AUTOMATED_RUN = unattendedSession('automation')

/** Tokens a turn used, summed over its steps; 0 where the model server reported none. */
interface TokenUsage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly totalTokens: number
}

/** A model's price in US dollars per million tokens. */
export interface ModelPrice {
  readonly inputPerMillion: number
  readonly outputPerMillion: number
}

/** {@link AgentRunnerOptions.turnBudget}. */
export interface TurnBudget {
  readonly maxTokens?: number
  readonly maxCostUsd?: number
}

/**
 * A daily budget a turn counts against ({@link AgentRunnerOptions.spendLimits}): its bounds and what
 * the ledger recorded today before the turn. A turn stops before its next model call once what it
 * used, added to `spentTokens` / `spentCostUsd`, passes a bound.
 */
export interface SpendLimit {
  /** What is bounded, in words: `cron job watcher`, `creator telegram:42:7`, `the server`. */
  readonly scope: string
  /** The setting that set it, for the message: `max_tokens_per_day of the job`, `agent.budget.max_tokens_per_day`. */
  readonly setting: string
  readonly maxTokens?: number
  readonly maxCostUsd?: number
  readonly spentTokens: number
  readonly spentCostUsd: number
}

/** What {@link AgentRunnerOptions.spendLimits} is asked about: the turn about to start. */
export interface TurnContext {
  /** `observe`: the observer condensing a session (its key, when known). */
  readonly purpose: 'run' | 'chat' | 'observe'
  readonly sessionKey?: string
  readonly model: string
  readonly jobName?: string
  readonly jobId?: string
  readonly runId?: string
  readonly workflowName?: string
  readonly stepId?: string
  /** Who the turn counts against ({@link AgentRunRequest.creator}); a chat is its own (its session key). */
  readonly creator?: string
}

/** The cost of `usage` at `price`, in US dollars. */
export function costOf(usage: TokenUsage, price: ModelPrice): number {
  return (usage.inputTokens * price.inputPerMillion + usage.outputTokens * price.outputPerMillion) / 1_000_000
}

/** What a turn returns. */
export interface AgentTurnResult {
  /**
   * The model's final answer. In unattended runs, refused tool calls are listed after it (a
   * `Refused in this unattended run` block), so they land in cron history and workflow results.
   */
  readonly text: string
  readonly usage: TokenUsage
  /** Model calls made (one per step of the tool loop). */
  readonly steps: number
  /** Tool calls the model made, refused ones included. */
  readonly toolCalls: number
  /** Tool calls that were refused, in order (at most 100 are kept). */
  readonly denials: readonly ToolDenial[]
  /** The model name used. */
  readonly model: string
  /** What the turn cost in US dollars, when the model has a price (`prices`). */
  readonly costUsd?: number
  /** True when the turn was appended to the conversation memory. */
  readonly remembered: boolean
  /**
   * Why the model's last call ended, as the AI SDK says it (`stop`, `length`, `content-filter`,
   * `other`, …): `length` when its answer was cut at the output limit.
   */
  readonly finishReason?: string
}

/** One turn's token count, given to {@link AgentRunnerOptions.onUsage} whether it succeeded or not. */
export interface UsageRecord {
  readonly purpose: 'run' | 'chat' | 'observe'
  /** The turn's session; absent for an `observe` call that named none. */
  readonly sessionKey?: string
  readonly model: string
  readonly usage: TokenUsage
  readonly steps: number
  /** False when the turn failed, timed out or was aborted (the usage is then what finished steps used). */
  readonly ok: boolean
  /** What the turn cost in US dollars, when the model has a price. */
  readonly costUsd?: number
  /** True when the turn was stopped by its budget (`AGENT_BUDGET_EXHAUSTED`). */
  readonly budgetExhausted?: boolean
  /** Which budget stopped it, in words (`agent.budget`, `max_tokens_per_day of cron job watcher`). */
  readonly budget?: string
  /** The model the server said answered (the last step's response), when it said one. */
  readonly answeredBy?: string
  /** The request's cron job, run, workflow, step and creator, for the usage ledger. */
  readonly jobName?: string
  readonly jobId?: string
  readonly runId?: string
  readonly workflowName?: string
  readonly stepId?: string
  readonly creator?: string
}

/** Options of {@link AgentRunner.chat}. */
interface ChatOptions {
  readonly signal?: AbortSignal
  /** Asks the person in this chat (Telegram inline buttons, …); default the runner's `approvalGate`. */
  readonly approvalGate?: ApprovalGate
  /**
   * The conversation so far, sent by a stateless client (the OpenAI-compatible endpoint): used
   * instead of the session's memory, which this turn then neither reads nor appends to.
   */
  readonly history?: readonly ModelMessage[]
  /**
   * Streams the turn: the model is called with `stream: true`, and each text delta and tool call
   * is given to this as it happens (the OpenAI-compatible endpoint's `stream: true`). Without it
   * the turn is one plain request per step. Its errors are logged and ignored.
   */
  readonly onEvent?: (event: AgentTurnEvent) => void
}

/** The second argument of {@link AgentRunner.run}: the `AgentRunOptions` of cron, background and workflow. */
export interface AgentRunCallOptions {
  readonly signal?: AbortSignal
  /**
   * Hears the turn's tokens so far (a running total): after each step, when `signal` aborts (the
   * call under way included, reported or estimated as the usage ledger counts it) and at the end.
   * A caller that does not wait for an aborted turn records what it spent from the last total.
   */
  readonly onUsage?: (usage: { readonly inputTokens: number; readonly outputTokens: number }) => void
}

/** Options of {@link AgentRunner.observe}. */
interface ObserveOptions {
  readonly signal?: AbortSignal
  /** The session the messages come from, for {@link UsageRecord} only. */
  readonly sessionKey?: string
}

/**
 * Runs agent turns against an OpenAI-compatible chat-completions server with the tool-calling
 * loop. Its `run` fits the `AgentRunner` port of `@lango/cron`, `@lango/background` and
 * `@lango/workflow` as it is.
 */
export interface AgentRunner {
  /** False when no model is configured: every call then rejects `AGENT_NO_MODEL`. */
  readonly configured: boolean
  /**
   * Runs one turn for `request.prompt` in `request.sessionKey`, as `request.session` says: an
   * unattended one (the default) gets the unattended rules; an attended one uses the runner's
   * approval policy and gate. Rejects with `signal.reason` when `signal` aborts, with an
   * {@link AgentError} otherwise; never throws synchronously.
   */
  run(request: AgentRunRequest, options?: AgentRunCallOptions): Promise<AgentTurnResult>
  /** One interactive turn (HTTP chat, Telegram): `message` from the person in `sessionKey`. Rejects as {@link run} does. */
  chat(sessionKey: string, message: string, options?: ChatOptions): Promise<AgentTurnResult>
  /**
   * The observer turn of seed 003: asks the model to condense `messages` into observation text
   * (one `- ` line per fact, oldest first) for the session compaction. `''` for no messages or
   * nothing worth keeping. No tools, one model call. Rejects as {@link run} does.
   */
  observe(messages: readonly ModelMessage[], options?: ObserveOptions): Promise<string>
}

/** Options of {@link createAgentRunner}. */
export interface AgentRunnerOptions {
  /**
   * The OpenAI-compatible API's base URL (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`
   * for Ollama, vLLM, llama.cpp, LM Studio). Without it, or without `model`, every call rejects
   * `AGENT_NO_MODEL` with `NO_MODEL_MESSAGE` (no-model.ts).
   */
  readonly baseUrl?: string | undefined
  /** The model name sent with every request (unless a run names its own). */
  readonly model?: string | undefined
  /** Sent as `Authorization: Bearer …` when given; never logged, never in an error. */
  readonly apiKey?: string | undefined
  /** The tools the model may call (every `@lango/tools` tool the server built). Default none. */
  readonly tools?: readonly AnyTool[]
  /** Model calls per turn at most (`stopWhen: stepCountIs(maxSteps)`), 1–1000. Default 20. */
  readonly maxSteps?: number
  /** A turn (every step, tool calls and retries included) ends `AGENT_TIMEOUT` after this. Default 10 min. */
  readonly timeoutMs?: number
  /** Retries of a failed model call (429, 5xx, network), honouring `Retry-After`, 0–10. Default 2. */
  readonly maxRetries?: number
  /** Which calls of attended turns need approval. Default `dangerous`. */
  readonly approvalPolicy?: ApprovalPolicy
  /** Who approves attended turns' calls when a chat brings no gate of its own; none denies them. */
  readonly approvalGate?: ApprovalGate
  /** No answer from the gate within this denies. Default 5 min. */
  readonly approvalTimeoutMs?: number
  /** What unattended runs may do. Default: no dangerous tools, no cron jobs created. */
  readonly unattended?: Partial<UnattendedPermissions>
  /** Conversation memory for sessions that are not isolated; without it every turn stands alone. */
  readonly memory?: ConversationMemory
  /** Messages from memory sent at most (the newest, starting at a user message). Default 200. */
  readonly maxHistoryMessages?: number
  /** Characters of observations put in the system prompt at most (the newest). Default 16,000. */
  readonly maxObservationChars?: number
  /** Characters of one tool result sent to the model at most (head and tail kept). Default 40,000. */
  readonly maxToolResultChars?: number
  /** Characters of transcript one `observe` call sends at most (head and tail kept). Default 100,000. */
  readonly maxObserveChars?: number
  /** Receives every turn's token usage (for the cron AI budget); its errors are logged and ignored. */
  readonly onUsage?: (record: UsageRecord) => void
  /**
   * Bounds on one turn (`agent.budget`): once the tokens the turn used (input and output, summed
   * over its steps) pass `maxTokens`, or its cost (with `prices`) passes `maxCostUsd`, the turn stops
   * before the next model call (it overshoots by at most one step) and, if the model still wanted
   * to call tools, rejects `AGENT_BUDGET_EXHAUSTED`. Default none.
   */
  readonly turnBudget?: TurnBudget
  /**
   * The daily budgets a turn counts against (per cron job, per creator, the whole server), asked
   * once before its first model call: a turn whose budgets are already spent makes no model call,
   * and one that passes a budget stops before its next model call (at most one step over), both
   * `AGENT_BUDGET_EXHAUSTED`. If it fails, the failure is logged and the turn goes on bounded by
   * `turnBudget` alone (a ledger that cannot be read does not stop every agent). Default none.
   */
  readonly spendLimits?: (turn: TurnContext) => Promise<readonly SpendLimit[]>
  /**
   * What each model costs, in US dollars per million input and output tokens (`models.<name>.price`):
   * a turn's cost is reported (`AgentTurnResult.costUsd`, `UsageRecord.costUsd`) and bounded by
   * `turnBudget.maxCostUsd`. A model without a price has no cost. Default none.
   */
  readonly prices?: Readonly<Record<string, ModelPrice>>
  /**
   * Traces each model call (`agent.step`: model, token counts, finish reason) and each tool call
   * (`tool.call`: tool name, outcome) under the span active when the turn starts. Default none.
   */
  readonly tracer?: Tracer
  readonly logger?: Logger
  /** The current time, for the system prompt and durations. Default `() => new Date()`. */
  readonly now?: () => Date
}

const ZERO_USAGE: TokenUsage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 }
const MAX_DENIALS = 100
const MAX_DENIALS_SHOWN = 20

/**
 * The most tokens one step may report: no model's context comes near it. A model server that
 * reports more (or a negative count, or not a number) is wrong, and its figure is not trusted.
 */
const MAX_STEP_TOKENS = 100_000_000

/**
 * A step's token count as the budgets use it: a whole number from 0 to {@link MAX_STEP_TOKENS}.
 * Above the bound counts as the bound (a budget errs toward stopping); a fraction counts as the
 * nearest whole number; negative or not a number counts as 0. {@link usageProblem} reports each.
 */
function tokenCount(value: number | undefined): number {
  if (value === undefined || !Number.isFinite(value) || value <= 0)
    return value === Number.POSITIVE_INFINITY ? MAX_STEP_TOKENS : 0
  return Math.min(MAX_STEP_TOKENS, Math.round(value))
}

/**
 * Adds a step's usage to the turn's. A total beyond its parts (a server that reports only
 * `total_tokens`, or leaves tokens out of both parts) counts the rest as output tokens, the dearer
 * kind: the budgets count every token the server says it used, never 0 for a turn it reported.
 */
function addUsage(total: TokenUsage, step: CallUsage | undefined): TokenUsage {
  const input = tokenCount(step?.inputTokens)
  const reported = tokenCount(step?.outputTokens)
  const stepTotal = Math.max(input + reported, tokenCount(totalOf(step)))
  const output = stepTotal - input
  return {
    inputTokens: total.inputTokens + input,
    outputTokens: total.outputTokens + output,
    totalTokens: total.totalTokens + stepTotal,
  }
}

/**
 * A step's total: the AI SDK's, or the server's own `total_tokens` when that is more (the SDK
 * reads the total only beside `prompt_tokens` and `completion_tokens`, and says 0 without them).
 */
function totalOf(step: CallUsage | undefined): number | undefined {
  const raw = step?.raw?.total_tokens
  if (typeof raw !== 'number') return step?.totalTokens
  return step?.totalTokens === undefined || !(step.totalTokens >= raw) ? raw : step.totalTokens
}

/**
 * What is wrong with a step's usage as the model server reported it: `missing` (no counts: the
 * budgets cannot count the turn), `invalid` (negative, not whole, beyond {@link MAX_STEP_TOKENS}),
 * or undefined.
 */
function usageProblem(step: CallUsage | undefined): 'missing' | 'invalid' | undefined {
  const counts = [step?.inputTokens, step?.outputTokens, totalOf(step)]
  if (counts.every((count) => count === undefined)) return 'missing'
  const valid = (count: number | undefined) =>
    count === undefined || (Number.isSafeInteger(count) && count >= 0 && count <= MAX_STEP_TOKENS)
  return counts.every(valid) ? undefined : 'invalid'
}

/**
 * The most output tokens one model call may ask for (`max_tokens`): what the tightest token budget
 * of the turn (its own, a daily one) has left when it starts, at least 1; undefined without one.
 */
function outputBound(
  budget: { readonly maxTokens?: number },
  limits: readonly SpendLimit[],
): number | undefined {
  const left = [
    budget.maxTokens,
    ...limits.map((limit) =>
      limit.maxTokens === undefined ? undefined : limit.maxTokens - limit.spentTokens,
    ),
  ].filter((tokens): tokens is number => tokens !== undefined)
  return left.length === 0 ? undefined : Math.max(1, Math.min(...left))
}

/** `usage` in words: `1,234 tokens` and, with a price, `($0.0123)`. */
function describeSpend(usage: TokenUsage, price: ModelPrice | undefined): string {
  const tokens = `${(usage.inputTokens + usage.outputTokens).toLocaleString('en-US')} tokens`
  return price === undefined ? tokens : `${tokens} ($${costOf(usage, price).toFixed(4)})`
}

/** The budget in words: `10,000 tokens`, `$0.50`, or both. */
function describeBudget(budget: TurnBudget): string {
  const parts: string[] = []
  if (budget.maxTokens !== undefined) parts.push(`${budget.maxTokens.toLocaleString('en-US')} tokens`)
  if (budget.maxCostUsd !== undefined) parts.push(`$${budget.maxCostUsd}`)
  return parts.join(' or ')
}

/** A daily budget in words: `10,000 tokens a day`, `$0.50 a day`, or both. */
function describeLimit(limit: SpendLimit): string {
  return `${describeBudget(limit)} a day`
}

/** Where a budget is set, for messages and the alert: `agent.budget` or the limit's setting. */
function budgetSource(bound: SpendLimit | undefined): string {
  return bound === undefined ? 'agent.budget' : `${bound.setting}, ${bound.scope}`
}

/** {@link AgentRunnerOptions.turnBudget}, checked: positive finite numbers (tokens whole). */
function checkedBudget(budget: TurnBudget | undefined): TurnBudget {
  if (budget === undefined) return {}
  const { maxTokens, maxCostUsd } = budget
  if (maxTokens !== undefined && !(Number.isSafeInteger(maxTokens) && maxTokens > 0))
    throw new AgentError('AGENT_INVALID_OPTIONS', 'turnBudget.maxTokens must be a whole number above 0', {
      data: { field: 'turnBudget.maxTokens' },
    })
  if (maxCostUsd !== undefined && !(Number.isFinite(maxCostUsd) && maxCostUsd > 0))
    throw new AgentError(
      'AGENT_INVALID_OPTIONS',
      'turnBudget.maxCostUsd must be a number of dollars above 0',
      {
        data: { field: 'turnBudget.maxCostUsd' },
      },
    )
  return {
    ...(maxTokens === undefined ? {} : { maxTokens }),
    ...(maxCostUsd === undefined ? {} : { maxCostUsd }),
  }
}

/** {@link AgentRunnerOptions.prices}, checked: finite prices of 0 or more. */
function checkedPrices(
  prices: Readonly<Record<string, ModelPrice>> | undefined,
): Readonly<Record<string, ModelPrice>> {
  const checked: Record<string, ModelPrice> = Object.create(null)
  for (const [model, price] of Object.entries(prices ?? {})) {
    const valid = (value: unknown) => typeof value === 'number' && Number.isFinite(value) && value >= 0
    if (!valid(price?.inputPerMillion) || !valid(price?.outputPerMillion))
      throw new AgentError(
        'AGENT_INVALID_OPTIONS',
        `prices.${model} must give inputPerMillion and outputPerMillion in dollars (0 or more)`,
        { data: { field: `prices.${model}` } },
      )
    checked[model] = { inputPerMillion: price.inputPerMillion, outputPerMillion: price.outputPerMillion }
  }
  return checked
}

function integerIn(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  const resolved = value ?? fallback
  if (!Number.isInteger(resolved) || resolved < min || resolved > max) {
    throw new AgentError('AGENT_INVALID_OPTIONS', `${name} must be a whole number from ${min} to ${max}`, {
      data: { field: name, min, max },
    })
  }
  return resolved
}

/** The newest `max` messages, starting at a user message so no tool result loses its call. */
function recentMessages(messages: readonly ModelMessage[], max: number): readonly ModelMessage[] {
  if (messages.length <= max) return messages
  const tail = messages.slice(-max)
  const start = tail.findIndex((message) => message.role === 'user')
  return start === -1 ? [] : tail.slice(start)
}

const DENIAL_REASONS: Readonly<Record<ToolDenial['reason'], string>> = {
  unattended_dangerous:
    'dangerous tools need approval and nobody can approve an unattended run (approvals.unattended.allow_dangerous)',
  unattended_cron_create:
    'unattended runs cannot create or change cron jobs (approvals.unattended.allow_cron_create)',
  not_approved: 'not approved',
  not_asked: 'nobody could be asked',
}

/** The block listing a run's refused calls, for its recorded text or error. */
function denialBlock(denials: readonly ToolDenial[]): string {
  const shown = denials
    .slice(0, MAX_DENIALS_SHOWN)
    .map((denial) => `- ${denial.toolName}: ${denial.summary} — ${DENIAL_REASONS[denial.reason]}`)
  const more = denials.length > MAX_DENIALS_SHOWN ? [`- and ${denials.length - MAX_DENIALS_SHOWN} more`] : []
  return [`Refused in this unattended run (${denials.length}):`, ...shown, ...more].join('\n')
}

/** The first of `limits` already spent today (its cost counts only for a model with a price). */
function spentLimit(limits: readonly SpendLimit[], price: ModelPrice | undefined): SpendLimit | undefined {
  return limits.find(
    (limit) =>
      (limit.maxTokens !== undefined && limit.spentTokens >= limit.maxTokens) ||
      (limit.maxCostUsd !== undefined && price !== undefined && limit.spentCostUsd >= limit.maxCostUsd),
  )
}

/** The error of a model call refused before it was made: `spent`, a daily budget, is used up. */
function notStarted(spent: SpendLimit, what: string): AgentError {
  const cost = spent.spentCostUsd > 0 ? ` ($${spent.spentCostUsd.toFixed(4)})` : ''
  return new AgentError(
    'AGENT_BUDGET_EXHAUSTED',
    `budget_exhausted: ${spent.scope} already used ${spent.spentTokens.toLocaleString('en-US')} tokens${cost} today, past its budget of ${describeLimit(spent)} (${spent.setting}); ${what} was not started (no model call)`,
    {
      data: {
        steps: 0,
        scope: spent.scope,
        setting: spent.setting,
        spentTokens: spent.spentTokens,
        spentCostUsd: spent.spentCostUsd,
        ...(spent.maxTokens === undefined ? {} : { maxTokens: spent.maxTokens }),
        ...(spent.maxCostUsd === undefined ? {} : { maxCostUsd: spent.maxCostUsd }),
      },
      // Nothing was done: cron records the run skipped (no failure, no auto-pause).
      started: false,
    },
  )
}

/** Whether a turn ended because it was cancelled or ran out of time (a request it had sent may still be generating). */
function aborted(error: unknown, callerSignal: AbortSignal | undefined): boolean {
  return callerSignal?.aborted === true || (AgentError.is(error) && error.code === 'AGENT_TIMEOUT')
}

/**
 * A failed turn's error: the same code, any refused calls added to its message and data, and what
 * the turn spent (`usage`, the packages' `AgentRunFailure.usage`) when it called the model.
 */
function failedTurn(
  error: AgentError,
  denials: readonly ToolDenial[],
  usage: TokenUsage | undefined,
): AgentError {
  if (denials.length === 0 && usage === undefined) return error
  const data = denials.length === 0 ? error.data : { ...error.data, denials }
  return new AgentError(
    error.code,
    denials.length === 0 ? error.message : `${error.message}\n${denialBlock(denials)}`,
    {
      cause: error.cause,
      ...(data === undefined ? {} : { data }),
      ...(error.started === undefined ? {} : { started: error.started }),
      ...(usage === undefined
        ? {}
        : { usage: { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens } }),
    },
  )
}

/**
 * Runs one tool call in a `tool.call` span, a child of the model call that asked for it: its name
 * and outcome (`ok`, `error`: a failure the model saw, `denied`), never its input or output.
 */
async function traceToolCall(
  tracer: Tracer,
  step: TraceSpan | undefined,
  toolName: string,
  work: () => Promise<unknown>,
): Promise<unknown> {
  const span = tracer.start(
    'tool.call',
    { 'gen_ai.tool.name': toolName },
    step === undefined ? {} : { parent: step },
  )
  try {
    const output = await span.within(work)
    const code = (output as { error?: { code?: unknown } } | null)?.error?.code
    const outcome = code === undefined ? 'ok' : code === 'TOOL_DENIED' ? 'denied' : 'error'
    span.set({ 'lango.tool.outcome': outcome, ...(typeof code === 'string' ? { 'error.type': code } : {}) })
    span.end(outcome === 'ok' ? {} : { error: String(code) })
    return output
  } catch (error) {
    const type = errorType(error)
    span.set({ 'lango.tool.outcome': 'error', 'error.type': type })
    span.end({ error: type })
    throw error
  }
}

/** The request's cron job, run, workflow, step and creator, where it names them (strings only). */
function sourceOf(request: {
  readonly jobName?: unknown
  readonly jobId?: unknown
  readonly runId?: unknown
  readonly workflowName?: unknown
  readonly stepId?: unknown
  readonly creator?: unknown
}): Pick<TurnContext, 'jobName' | 'jobId' | 'runId' | 'workflowName' | 'stepId' | 'creator'> {
  const { jobName, jobId, runId, workflowName, stepId, creator } = request
  return {
    ...(typeof jobName === 'string' ? { jobName } : {}),
    ...(typeof jobId === 'string' ? { jobId } : {}),
    ...(typeof runId === 'string' ? { runId } : {}),
    ...(typeof workflowName === 'string' ? { workflowName } : {}),
    ...(typeof stepId === 'string' ? { stepId } : {}),
    ...(typeof creator === 'string' && creator !== '' ? { creator } : {}),
  }
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`
}

/**
 * Builds the agent runner. With `baseUrl` and `model` it talks to that OpenAI-compatible server
 * through the AI SDK (`generateText`, `stopWhen: stepCountIs(maxSteps)`, `maxRetries` honouring
 * `Retry-After`, one timeout per turn combined with the caller's signal); without them every call
 * rejects `AGENT_NO_MODEL` (the server still runs: shell jobs, shell steps and exec work).
 *
 * A turn's system prompt is `TOOL_USAGE` plus the automation section for the features the tools
 * offer (`@lango/prompts`), the unattended rules when cron, background or workflow started it, and
 * the memory's observations. Memory rule: a session that is not isolated (chats, `cron:<job>` of a
 * `main` session job) loads the memory before the turn and appends the user message and the
 * response messages after a successful one; isolated sessions (`cron:<job>:<run>`, `bg:`,
 * `workflow:`) neither read nor write it. Turns of one session run one after another.
 *
 * Unattended runs are refused dangerous calls (unless `unattended.allowDangerous`) and the
 * creation or change of cron jobs (unless `unattended.allowCronCreate`); the model gets the
 * refusal as a tool error, and the run's `text` ends with the list of refusals, so cron records
 * them in the run's history. Throws `AGENT_INVALID_OPTIONS` for invalid options.
 *
 * @example
 * const runner = createAgentRunner({ baseUrl: 'http://127.0.0.1:11434/v1', model: 'qwen3:8b', tools: app.tools })
 * const cron = new CronService({ store, agentRunner: runner })
 * const { text, usage } = await runner.chat('telegram:42:7', 'what is scheduled tonight?', { signal })
 */
export function createAgentRunner(options: AgentRunnerOptions): AgentRunner {
  const maxSteps = integerIn('maxSteps', options.maxSteps, 20, 1, 1000)
  const timeoutMs = integerIn('timeoutMs', options.timeoutMs, 600_000, 1, 2_147_483_647)
  const maxRetries = integerIn('maxRetries', options.maxRetries, 2, 0, 10)
  const approvalTimeoutMs = integerIn(
    'approvalTimeoutMs',
    options.approvalTimeoutMs,
    300_000,
    1,
    2_147_483_647,
  )
  const maxHistoryMessages = integerIn('maxHistoryMessages', options.maxHistoryMessages, 200, 0, 100_000)
  const maxObservationChars = integerIn(
    'maxObservationChars',
    options.maxObservationChars,
    16_000,
    0,
    1_000_000,
  )
  const maxToolResultChars = integerIn(
    'maxToolResultChars',
    options.maxToolResultChars,
    40_000,
    100,
    10_000_000,
  )
  const maxObserveChars = integerIn('maxObserveChars', options.maxObserveChars, 100_000, 1000, 10_000_000)
  const tools = [...(options.tools ?? [])]
  const budget = checkedBudget(options.turnBudget)
  const prices = checkedPrices(options.prices)
  /** Models a cost budget could not bound (no price), each warned about once. */
  const unpriced = new Set<string>()
  const logger = options.logger ?? silentLogger
  const now = options.now ?? (() => new Date())
  const permissions: UnattendedPermissions = {
    allowDangerous: options.unattended?.allowDangerous ?? false,
    allowCronCreate: options.unattended?.allowCronCreate ?? false,
  }
  const policy = options.approvalPolicy ?? 'dangerous'
  const baseUrl = options.baseUrl?.trim() ?? ''
  const defaultModel = options.model?.trim() ?? ''
  const apiKey = options.apiKey === '' ? undefined : options.apiKey
  const configured = baseUrl !== '' && defaultModel !== ''

  if (!configured) return noModelRunner()
  let parsed: URL | undefined
  try {
    parsed = new URL(baseUrl)
  } catch {
    parsed = undefined
  }
  if (parsed === undefined || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new AgentError('AGENT_INVALID_OPTIONS', 'baseUrl must be an http:// or https:// URL', {
      data: { field: 'baseUrl' },
    })
  }
  // fetch refuses URLs with credentials, and the client appends paths to the base URL, which a
  // query or fragment would swallow. The URL itself is not echoed: it may hold a secret.
  if (parsed.username !== '' || parsed.password !== '' || parsed.search !== '' || parsed.hash !== '') {
    throw new AgentError(
      'AGENT_INVALID_OPTIONS',
      'baseUrl must not contain credentials, a query or a fragment (pass the key as apiKey)',
      { data: { field: 'baseUrl' } },
    )
  }

  const url = displayUrl(baseUrl)
  const provider = createOpenAICompatible({
    baseURL: baseUrl.replace(/\/+$/, ''),
    name: 'lango-model',
    // Streamed turns ask for the usage chunk (`stream_options.include_usage`), so they count
    // against the AI budget as plain ones do.
    includeUsage: true,
    ...(apiKey === undefined ? {} : { apiKey }),
  })
  const queue = new SessionQueue()

  // Said once per model and problem: a model server without usage would otherwise say it every turn.
  const usageWarned = new Set<string>()
  const checkUsage = (model: string, step: LanguageModelUsage | undefined) => {
    const problem = usageProblem(step)
    if (problem === undefined || usageWarned.has(`${problem}:${model}`)) return
    // Model names are free text (a cron job's `model`): past the bound, warnings start over.
    if (usageWarned.size >= MAX_WARNED_MODELS) usageWarned.clear()
    usageWarned.add(`${problem}:${model}`)
    if (problem === 'missing')
      logger.warn('the model server reported no token usage: budgets and costs do not count its turns', {
        model,
        fix: 'use a model server that returns usage (for streamed turns the final chunk of stream_options.include_usage)',
      })
    else
      logger.warn(
        'the model server reported token usage that cannot be right: counted within 0 and the bound',
        {
          model,
          input_tokens: step?.inputTokens,
          output_tokens: step?.outputTokens,
          total_tokens: step?.totalTokens,
          bound: MAX_STEP_TOKENS,
        },
      )
  }

  const reportUsage = (record: UsageRecord) => {
    if (options.onUsage === undefined) return
    try {
      options.onUsage(record)
    } catch (error) {
      logger.warn('agent usage callback failed', { error })
    }
  }

  /**
   * Runs `work` under the turn's signal (the caller's, combined with the timeout) and turns what
   * it throws into the runner's errors: the caller's abort reason unchanged, a timeout as
   * `AGENT_TIMEOUT`, anything else through {@link modelFailure}.
   */
  /**
   * The model `name` for one turn: each call metered (`meter`: a call cut off still counts) and
   * tried again as {@link retryingModelCalls} does, within the turn's time (`deadline`, from
   * `performance.now()`). The meter is inside the retries: a wait between tries costs nothing.
   */
  const metered = (name: string, meter: CallMeter, deadline: number) =>
    wrapLanguageModel({
      model: wrapLanguageModel({ model: provider.chatModel(name), middleware: meter.middleware }),
      middleware: retryingModelCalls({ maxRetries, timeLeft: () => deadline - performance.now() }),
    })

  /**
   * The daily budgets (per job, creator, server) a model call is asked about, read before it
   * starts. Budgets that cannot be read are logged, and `what` is bounded by `agent.budget` alone.
   */
  async function dailyLimits(
    context: TurnContext,
    signal: AbortSignal,
    what: string,
    fields: LogFields,
  ): Promise<readonly SpendLimit[]> {
    if (options.spendLimits === undefined) return []
    try {
      return await options.spendLimits(context)
    } catch (error) {
      if (signal.aborted) throw error
      logger.warn(`agent daily budgets not read: ${what} is bounded by agent.budget alone`, {
        ...fields,
        error,
      })
      return []
    }
  }

  async function guarded<T>(
    callerSignal: AbortSignal | undefined,
    model: string,
    work: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const timeout = new AbortController()
    let timedOut = false
    const timer = setTimeout(() => {
      if (callerSignal?.aborted === true) return
      timedOut = true
      timeout.abort(new DOMException(`agent turn timeout of ${timeoutMs} ms exceeded`, 'TimeoutError'))
    }, timeoutMs)
    const signal =
      callerSignal === undefined ? timeout.signal : AbortSignal.any([callerSignal, timeout.signal])
    try {
      return await work(signal)
    } catch (error) {
      if (timedOut) {
        throw new AgentError(
          'AGENT_TIMEOUT',
          `the agent turn did not finish within ${formatSeconds(timeoutMs)} (model server ${url})`,
          { data: { url, model, timeoutMs } },
        )
      }
      if (callerSignal?.aborted === true) throw callerSignal.reason
      throw modelFailure(error, { baseUrl, apiKey, model })
    } finally {
      clearTimeout(timer)
    }
  }

  interface TurnInput {
    readonly purpose: 'run' | 'chat'
    /** What the daily budgets are asked about. */
    readonly context: TurnContext
    readonly sessionKey: string
    readonly session: SessionKind
    readonly prompt: string
    readonly model: string
    readonly gate: ApprovalGate | undefined
    readonly history?: readonly ModelMessage[] | undefined
    readonly onEvent?: ((event: AgentTurnEvent) => void) | undefined
    readonly onUsage?: AgentRunCallOptions['onUsage'] | undefined
  }

  async function turn(input: TurnInput, callerSignal: AbortSignal | undefined): Promise<AgentTurnResult> {
    const { session } = input
    const memory = session.isolated || input.history !== undefined ? undefined : options.memory
    const startedAt = now().getTime()
    const denials: ToolDenial[] = []
    let usage = ZERO_USAGE
    /** The model calls of the turn, so that one cut off before its step ended still counts. */
    const meter = new CallMeter()
    let unfinished: UnfinishedCall | undefined
    let steps = 0
    let toolCalls = 0
    let modelCalled = false
    let ok = false
    let budgetExhausted = false
    const price = prices[input.model]
    /** Fail-open on money is said out loud, once per model and setting: token budgets still apply. */
    const warnUnpriced = (setting: string): void => {
      if (price !== undefined || unpriced.has(`${setting}\n${input.model}`)) return
      if (unpriced.size >= MAX_WARNED_MODELS) unpriced.clear()
      unpriced.add(`${setting}\n${input.model}`)
      logger.warn(`${setting} does not bound this model: it has no price (models.<name>.price)`, {
        model: input.model,
        setting,
        fix: `give the model a price in lango.yaml (models.${input.model}.price: { input, output }, US dollars per million tokens), or bound it with a token budget`,
      })
    }
    if (budget.maxCostUsd !== undefined) warnUnpriced('agent.budget.max_cost_per_turn')
    /** The daily budgets of this turn (per job, creator, server), read before its first model call. */
    let limits: readonly SpendLimit[] = []
    /** The daily budget that stopped the turn; undefined when it was the turn's own (or none). */
    let stoppedBy: SpendLimit | undefined
    let answeredBy: string | undefined
    /**
     * Whether `spent` passes the turn's budget or, added to what was spent today, one of its daily
     * budgets (tokens, or cost when the model has a price). Runs after every step: plain arithmetic.
     */
    const overBudget = (spent: TokenUsage): boolean => {
      const tokens = spent.inputTokens + spent.outputTokens
      const cost = price === undefined ? undefined : costOf(spent, price)
      if (
        (budget.maxTokens !== undefined && tokens > budget.maxTokens) ||
        (budget.maxCostUsd !== undefined && cost !== undefined && cost > budget.maxCostUsd)
      ) {
        stoppedBy = undefined
        return true
      }
      for (const limit of limits) {
        if (
          (limit.maxTokens !== undefined && limit.spentTokens + tokens > limit.maxTokens) ||
          (limit.maxCostUsd !== undefined &&
            cost !== undefined &&
            limit.spentCostUsd + cost > limit.maxCostUsd)
        ) {
          stoppedBy = limit
          return true
        }
      }
      return false
    }
    const fields = { sessionKey: input.sessionKey, model: input.model }
    /** Tells the caller's `onUsage` the turn's running total (the caller's code: its throw is logged). */
    const tell = (total: TokenUsage): void => {
      if (input.onUsage === undefined) return
      try {
        input.onUsage({ inputTokens: total.inputTokens, outputTokens: total.outputTokens })
      } catch (error) {
        logger.warn('agent usage listener failed', { ...fields, error })
      }
    }
    // A caller that stops waiting when it aborts (cron's timeout, a cancel) hears what the turn
    // spent at that moment, the call under way included, before it records the run.
    const onCallerAbort = (): void => {
      const open = meter.peek(true)
      tell(open === undefined ? usage : addUsage(usage, open.usage))
    }
    if (input.onUsage !== undefined) callerSignal?.addEventListener('abort', onCallerAbort, { once: true })
    const { tracer } = options
    /** The model call under way and the tool calls it asked for (`agent.step`), when tracing. */
    let stepSpan: TraceSpan | undefined
    const deadline = performance.now() + timeoutMs
    try {
      return await guarded(callerSignal, input.model, async (signal) => {
        let history: Awaited<ReturnType<ConversationMemory['load']>> = {
          observations: [],
          messages: input.history ?? [],
        }
        if (memory !== undefined) {
          try {
            history = await memory.load(input.sessionKey, { signal })
          } catch (error) {
            if (signal.aborted) throw error
            throw new AgentError(
              'AGENT_MEMORY_FAILED',
              `the conversation memory could not be loaded: ${(error as Error)?.message ?? String(error)}`,
              {
                cause: error,
                data: { sessionKey: input.sessionKey },
              },
            )
          }
        }
        limits = await dailyLimits(input.context, signal, 'this turn', fields)
        for (const limit of limits) if (limit.maxCostUsd !== undefined) warnUnpriced(limit.setting)
        const spent = spentLimit(limits, price)
        if (spent !== undefined) {
          stoppedBy = spent
          budgetExhausted = true
          throw notStarted(spent, 'the turn')
        }
        const userMessage: ModelMessage = { role: 'user', content: input.prompt }
        modelCalled = true
        const maxOutputTokens = outputBound(budget, limits)
        const settings = {
          model: metered(input.model, meter, deadline),
          system: buildSystemPrompt({
            tools,
            session,
            permissions,
            observations: history.observations,
            maxObservationChars,
            now: now(),
          }),
          messages: [...recentMessages(history.messages, maxHistoryMessages), userMessage],
          // System messages come only in the history of the OpenAI-compatible endpoint, whose client
          // holds the API token (the operator); ours is `system`, first. Allowed on purpose, so the
          // SDK prints no plain-text warning into the JSON log stream.
          allowSystemInMessages: true,
          ...(tools.length === 0
            ? {}
            : {
                tools: buildTurnTools({
                  tools,
                  sessionKey: input.sessionKey,
                  // What the turn's tools start counts against its creator (a chat: its own key).
                  ...(input.context.creator === undefined ? {} : { creator: input.context.creator }),
                  session,
                  permissions,
                  policy,
                  gate: input.gate,
                  approvalTimeoutMs,
                  maxResultChars: maxToolResultChars,
                  ...(tracer === undefined
                    ? {}
                    : { traceTool: (toolName, work) => traceToolCall(tracer, stepSpan, toolName, work) }),
                  onDenial(denial) {
                    if (denials.length < MAX_DENIALS) denials.push(denial)
                    logger.warn('tool call refused', {
                      ...fields,
                      tool: denial.toolName,
                      reason: denial.reason,
                    })
                  },
                }),
              }),
          // The budget is checked after each step: a turn past it makes no further model call.
          stopWhen: [
            stepCountIs(maxSteps),
            ({ steps: done }: { readonly steps: readonly { readonly usage: LanguageModelUsage }[] }) =>
              overBudget(done.reduce((total, step) => addUsage(total, step.usage), ZERO_USAGE)),
          ],
          // No one answer may be longer than the tightest token budget has left: a model that
          // writes without end is cut by the server, not after it has been paid for.
          ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
          // Retried by retryingModelCalls, which follows any Retry-After.
          maxRetries: 0,
          abortSignal: signal,
          ...(tracer === undefined
            ? {}
            : {
                experimental_onStepStart() {
                  stepSpan = tracer.start('agent.step', {
                    'gen_ai.operation.name': 'chat',
                    'gen_ai.request.model': input.model,
                    'lango.agent.step': steps + 1,
                  })
                },
              }),
          onStepFinish(step: {
            readonly usage: LanguageModelUsage
            readonly toolCalls: readonly unknown[]
            readonly response: { readonly modelId: string }
            readonly finishReason: string
          }) {
            steps += 1
            meter.stepEnded()
            checkUsage(input.model, step.usage)
            usage = addUsage(usage, step.usage)
            tell(usage)
            if (step.response.modelId !== '') answeredBy = step.response.modelId
            toolCalls += step.toolCalls.length
            stepSpan?.set({
              'gen_ai.response.model': step.response.modelId,
              'gen_ai.usage.input_tokens': step.usage.inputTokens,
              'gen_ai.usage.output_tokens': step.usage.outputTokens,
              'gen_ai.response.finish_reasons': step.finishReason,
            })
            stepSpan?.end()
            stepSpan = undefined
          },
        }
        const { onEvent } = input
        const result =
          onEvent === undefined
            ? await generateText(settings)
            : await drainTurnStream(
                // Errors come out of the stream (drainTurnStream rethrows them), never to the console.
                streamText({ ...settings, onError: () => undefined }),
                (event) => {
                  try {
                    onEvent(event)
                  } catch (error) {
                    logger.warn('agent turn event callback failed', { ...fields, error })
                  }
                },
                signal,
              )
        const last = result.steps.at(-1)
        if (last !== undefined && last.toolCalls.length > 0 && overBudget(usage)) {
          budgetExhausted = true
          // The step that passed the budget had its tool calls run already (the AI SDK checks
          // `stopWhen` after them): say which, and keep the turn in the session's memory, so neither
          // the reader of the error nor the next turn takes them for not done.
          if (memory !== undefined) {
            await memory
              .append(input.sessionKey, [userMessage, ...result.response.messages], { signal })
              .catch((error: unknown) => logger.warn('agent turn not remembered', { ...fields, error }))
          }
          const ran = [...new Set(last.toolCalls.map((call) => call.toolName))].join(', ')
          const daily = stoppedBy
          const spend = describeSpend(usage, price)
          const what =
            daily === undefined
              ? `the turn used ${spend}, past its budget of ${describeBudget(budget)} (agent.budget)`
              : `the turn used ${spend}; with the ${daily.spentTokens.toLocaleString('en-US')} tokens${daily.spentCostUsd > 0 ? ` ($${daily.spentCostUsd.toFixed(4)})` : ''} ${daily.scope} used before it today, that passes its budget of ${describeLimit(daily)} (${daily.setting})`
          throw new AgentError(
            'AGENT_BUDGET_EXHAUSTED',
            `budget_exhausted: ${what}; it was stopped before the next model call (the tool calls of its last step ran: ${ran})`,
            {
              data: {
                steps: result.steps.length,
                tokens: usage.inputTokens + usage.outputTokens,
                ...(price === undefined ? {} : { costUsd: costOf(usage, price) }),
                ...(daily === undefined
                  ? budget
                  : {
                      scope: daily.scope,
                      setting: daily.setting,
                      spentTokens: daily.spentTokens,
                      spentCostUsd: daily.spentCostUsd,
                      ...(daily.maxTokens === undefined ? {} : { maxTokens: daily.maxTokens }),
                      ...(daily.maxCostUsd === undefined ? {} : { maxCostUsd: daily.maxCostUsd }),
                    }),
              },
            },
          )
        }
        if (last !== undefined && last.toolCalls.length > 0 && result.steps.length >= maxSteps) {
          throw new AgentError(
            'AGENT_STEP_LIMIT',
            `the model was still calling tools (${[...new Set(last.toolCalls.map((call) => call.toolName))].join(', ')}) after ${maxSteps} steps, the step limit`,
            { data: { maxSteps, steps: result.steps.length } },
          )
        }
        const text =
          session.unattended && denials.length > 0
            ? `${result.text.trimEnd()}\n\n${denialBlock(denials)}`.trimStart()
            : result.text
        let remembered = false
        if (memory !== undefined) {
          try {
            await memory.append(input.sessionKey, [userMessage, ...result.response.messages], { signal })
            remembered = true
          } catch (error) {
            if (signal.aborted) throw error
            logger.warn('agent turn not remembered', { ...fields, error })
          }
        }
        ok = true
        logger.info('agent turn end', {
          ...fields,
          steps,
          toolCalls,
          denials: denials.length,
          inputTokens: usage.inputTokens,
          outputTokens: usage.outputTokens,
          durationMs: now().getTime() - startedAt,
        })
        return {
          text,
          usage,
          steps,
          toolCalls,
          denials: [...denials],
          model: input.model,
          ...(price === undefined ? {} : { costUsd: costOf(usage, price) }),
          remembered,
          ...(last === undefined ? {} : { finishReason: last.finishReason }),
        }
      })
    } catch (error) {
      if (stepSpan !== undefined) {
        const type = errorType(error)
        stepSpan.set({ 'error.type': type })
        stepSpan.end({ error: type })
        stepSpan = undefined
      }
      // A model call cut off before its step ended (the turn's timeout, a cancel, a broken stream)
      // was paid for all the same: its reported or estimated tokens count.
      unfinished = meter.unfinished(aborted(error, callerSignal))
      if (unfinished !== undefined) usage = addUsage(usage, unfinished.usage)
      const failure = AgentError.is(error)
        ? failedTurn(error, denials, modelCalled || budgetExhausted ? usage : undefined)
        : error
      logger.warn('agent turn failed', {
        ...fields,
        ...(AgentError.is(failure) ? { code: failure.code, error: failure.message } : { aborted: true }),
        ...(unfinished === undefined ? {} : { unfinishedCall: unfinished.basis }),
        steps,
        durationMs: now().getTime() - startedAt,
      })
      throw failure
    } finally {
      callerSignal?.removeEventListener('abort', onCallerAbort)
      if (modelCalled) tell(usage)
      if (modelCalled || budgetExhausted) {
        reportUsage({
          purpose: input.purpose,
          sessionKey: input.sessionKey,
          model: input.model,
          usage,
          steps,
          ok,
          ...(price === undefined ? {} : { costUsd: costOf(usage, price) }),
          ...(budgetExhausted ? { budgetExhausted, budget: budgetSource(stoppedBy) } : {}),
          ...(answeredBy === undefined ? {} : { answeredBy }),
          ...sourceOf(input.context),
        })
      }
    }
  }

  /** Runs a turn, one at a time per session when it uses memory. */
  async function queued(input: TurnInput, signal: AbortSignal | undefined): Promise<AgentTurnResult> {
    signal?.throwIfAborted()
    const useMemory = options.memory !== undefined && input.history === undefined && !input.session.isolated
    return useMemory ? queue.run(input.sessionKey, () => turn(input, signal), signal) : turn(input, signal)
  }

  return {
    configured: true,
    async run(request, runOptions = {}) {
      const model =
        typeof request.model === 'string' && request.model.trim() !== '' ? request.model.trim() : defaultModel
      return queued(
        {
          purpose: 'run',
          context: { purpose: 'run', sessionKey: request.sessionKey, model, ...sourceOf(request) },
          sessionKey: request.sessionKey,
          session: request.session ?? AUTOMATED_RUN,
          prompt: request.prompt,
          model,
          gate: options.approvalGate,
          onUsage: runOptions.onUsage,
        },
        runOptions.signal,
      )
    },
    async chat(sessionKey, message, chatOptions = {}) {
      return queued(
        {
          purpose: 'chat',
          context: { purpose: 'chat', sessionKey, model: defaultModel },
          sessionKey,
          session: CHAT_SESSION,
          prompt: message,
          model: defaultModel,
          gate: chatOptions.approvalGate ?? options.approvalGate,
          history: chatOptions.history,
          onEvent: chatOptions.onEvent,
        },
        chatOptions.signal,
      )
    },
    async observe(messages, observeOptions = {}) {
      observeOptions.signal?.throwIfAborted()
      if (messages.length === 0) return ''
      const meter = new CallMeter()
      const deadline = performance.now() + timeoutMs
      const price = prices[defaultModel]
      let usage = ZERO_USAGE
      let steps = 0
      let ok = false
      let modelCalled = false
      let budgetExhausted = false
      let stoppedBy: SpendLimit | undefined
      try {
        const text = await guarded(observeOptions.signal, defaultModel, async (signal) => {
          // Condensing a session spends on it: the server's daily budget holds for the observer as
          // for a turn (a probe found observer calls went on past a spent budget).
          const limits = await dailyLimits(
            {
              purpose: 'observe',
              model: defaultModel,
              ...(observeOptions.sessionKey === undefined ? {} : { sessionKey: observeOptions.sessionKey }),
            },
            signal,
            'this observer call',
            { model: defaultModel },
          )
          const spent = spentLimit(limits, price)
          if (spent !== undefined) {
            stoppedBy = spent
            budgetExhausted = true
            throw notStarted(spent, 'condensing the session (the observer)')
          }
          const maxOutputTokens = outputBound(budget, limits)
          modelCalled = true
          const result = await generateText({
            model: metered(defaultModel, meter, deadline),
            system: OBSERVER_SYSTEM_PROMPT,
            prompt: observerPrompt(messages, maxObserveChars),
            stopWhen: stepCountIs(1),
            ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
            // Retried by retryingModelCalls, which follows any Retry-After.
            maxRetries: 0,
            abortSignal: signal,
            onStepFinish(step) {
              steps += 1
              meter.stepEnded()
              checkUsage(defaultModel, step.usage)
              usage = addUsage(usage, step.usage)
            },
          })
          return result.text.trim()
        })
        ok = true
        return text
      } catch (error) {
        const unfinished = meter.unfinished(aborted(error, observeOptions.signal))
        if (unfinished !== undefined) usage = addUsage(usage, unfinished.usage)
        throw error
      } finally {
        if (modelCalled || budgetExhausted)
          reportUsage({
            purpose: 'observe',
            ...(observeOptions.sessionKey === undefined ? {} : { sessionKey: observeOptions.sessionKey }),
            model: defaultModel,
            usage,
            steps,
            ok,
            ...(price === undefined ? {} : { costUsd: costOf(usage, price) }),
            ...(budgetExhausted ? { budgetExhausted, budget: budgetSource(stoppedBy) } : {}),
          })
      }
    },
  }
}
