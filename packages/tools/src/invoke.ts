import * as v from 'valibot'
import {
  APPROVAL_POLICIES,
  type ApprovalGate,
  type ApprovalPolicy,
  buildApprovalSummary,
  requiresApproval,
} from './approval.js'
import { ToolError, type ToolErrorCode } from './errors.js'
import { type AnyTool, callSafety, type ToolContext } from './tool.js'

/**
 * A problem with the call's input: a parameter (its path and what is wrong and accepted), or a
 * place in an inline workflow (`steps[1].depends_on[0]`, with its 1-based line and column).
 */
export interface ParameterIssue {
  readonly path: string
  readonly message: string
  /** 1-based line in the YAML, for a workflow issue when known. */
  readonly line?: number
  /** 1-based column in the YAML, for a workflow issue when known. */
  readonly column?: number
}

/** The outcome of a call; a tool call never throws past this boundary. */
export type ToolCallOutcome =
  | { readonly ok: true; readonly result: unknown }
  | {
      readonly ok: false
      readonly error: {
        readonly code: ToolErrorCode
        readonly message: string
        /** Each invalid parameter, or each issue of an invalid workflow (`WORKFLOW_INVALID`). */
        readonly issues?: readonly ParameterIssue[]
        /** The failing service's own error code (e.g. `EXEC_INVALID_CWD`, `CRON_INVALID_EXPRESSION`). */
        readonly reason?: string
        /** The error's `data` (ids, limits, statuses; ADR 0006), from a `ToolError` or a service error. */
        readonly data?: Readonly<Record<string, unknown>>
      }
    }

/**
 * A failed call's payload as hosts send it (`{ error }`; MCP `structuredContent` of an `isError`
 * result): the `error` of a failed {@link ToolCallOutcome}. MCP adapters add it to every tool's
 * published `outputSchema`, so that every `structuredContent` fits the declaration (SDK 1.x
 * clients check error results against it too). Open to what a host adds: its own codes
 * (`SERVER_APPROVAL_PENDING`) and fields beside `error` (the pending `approval`).
 */
export const toolErrorPayloadSchema = v.looseObject({
  error: v.looseObject({
    code: v.pipe(
      v.string(),
      v.description("TOOL_INVALID_PARAMETERS, TOOL_DENIED, TOOL_FAILED, TOOL_CANCELED or a host's own code."),
    ),
    message: v.string(),
    issues: v.optional(
      v.array(
        v.strictObject({
          path: v.string(),
          message: v.string(),
          line: v.optional(v.number()),
          column: v.optional(v.number()),
        }),
      ),
    ),
    reason: v.optional(v.string()),
    data: v.optional(v.looseObject({})),
  }),
})

/** What a failed call's error carries besides its code and message. */
type FailureDetail = Omit<Extract<ToolCallOutcome, { ok: false }>['error'], 'code' | 'message'>

/** How {@link invokeTool} applies approval. */
export interface InvokeOptions {
  /** Default `dangerous`. */
  readonly policy?: ApprovalPolicy
  /** Without a gate, any call that needs approval is denied. */
  readonly gate?: ApprovalGate
  /** No answer within this time denies (default 5 minutes). */
  readonly approvalTimeoutMs?: number
}

function issuePath(issue: v.BaseIssue<unknown>): string {
  const keys = issue.path?.map((item) => String(item.key)) ?? []
  return keys.length === 0 ? '(parameters)' : keys.join('.')
}

/**
 * Formats valibot issues as `field: what is wrong`, one per problem. A schema's own message is kept;
 * valibot's default wording (`Invalid key: Expected never but received "x"`) is said plainly:
 * `unknown field`, `is required`, `must be one of "a", "b" (got "c")`, `must be a number (got "5")`.
 */
export function describeIssues(issues: readonly v.BaseIssue<unknown>[]): ParameterIssue[] {
  return issues.map((issue) => ({ path: issuePath(issue), message: plainMessage(issue) }))
}

/** What valibot's default messages begin with (`Invalid type: Expected …`); a schema's own never do here. */
const DEFAULT_MESSAGE = /^Invalid (\w+): Expected /

const OBJECT_SCHEMAS = new Set(['object', 'strict_object', 'loose_object', 'object_with_rest'])

/** An issue's message in plain words when it is valibot's default, else as the schema wrote it. */
function plainMessage(issue: v.BaseIssue<unknown>): string {
  const wording = DEFAULT_MESSAGE.exec(issue.message)
  if (wording === null) return issue.message
  const { expected, received } = issue
  if (OBJECT_SCHEMAS.has(issue.type) && wording[1] === 'key') {
    if (expected === 'never') return 'unknown field (not one this accepts)'
    if (received === 'undefined') return 'is required'
  }
  const got = received === 'undefined' ? 'nothing' : received
  if (issue.kind === 'schema') return `must be ${expectedInWords(expected)} (got ${got})`
  const what = issue.type.endsWith('_length')
    ? 'length '
    : issue.type.endsWith('_size')
      ? 'size '
      : issue.type.endsWith('_entries')
        ? 'number of entries '
        : ''
  return `${what}must be ${boundInWords(expected)} (got ${got})`
}

/** `<=32` → `at most 32`, `>=1` → `at least 1`; anything else as valibot says it. */
function boundInWords(expected: string | null): string {
  if (expected === null) return 'another value'
  const bound = /^(<=|>=|<|>)(.+)$/.exec(expected)
  if (bound === null) return expected
  const words = { '<=': 'at most', '>=': 'at least', '<': 'less than', '>': 'more than' } as const
  return `${words[bound[1] as keyof typeof words]} ${bound[2]}`
}

const TYPE_WORDS: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  bigint: 'an integer',
  boolean: 'true or false',
  Object: 'an object',
  Array: 'an array',
  null: 'null',
  undefined: 'absent',
  never: 'absent',
}

/** `("a" | "b")` → `one of "a", "b"`; `number` → `a number`. */
function expectedInWords(expected: string | null): string {
  if (expected === null) return 'of another type'
  const alternatives =
    expected.startsWith('(') && expected.endsWith(')') ? expected.slice(1, -1).split(' | ') : [expected]
  const words = alternatives.map((alternative) => TYPE_WORDS[alternative] ?? alternative)
  return words.length === 1 ? (words[0] as string) : `one of ${words.join(', ')}`
}

/** `invalid parameters for <tool>: field: what is wrong; …`: the one wording every adapter uses. */
export function invalidParametersMessage(toolName: string, issues: readonly ParameterIssue[]): string {
  return `invalid parameters for ${toolName}: ${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')}`
}

function failure(code: ToolErrorCode, message: string, detail: FailureDetail = {}): ToolCallOutcome {
  return { ok: false, error: { code, message, ...detail } }
}

/** What became of an approval request. */
/**
 * How a gate answered; `unasked` when it rejected with a `ToolError` `TOOL_DENIED` saying why
 * nobody could be asked (the call is then refused with that reason, not as "not approved").
 */
type GateAnswer =
  | 'approved'
  | 'denied'
  | 'canceled'
  | { readonly unasked: string; readonly data: Readonly<Record<string, unknown>> | undefined }

/**
 * Asks the gate, bounded by the approval timeout and the call's signal; the gate's signal aborts
 * on either. The call's abort is `canceled`; no gate, no answer, an error or the timeout `denied`.
 */
async function askGate(
  gate: ApprovalGate | undefined,
  request: Parameters<ApprovalGate['request']>[0],
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<GateAnswer> {
  // A function, not a narrowed property: the signal aborts while the gate is asked.
  const canceledByCaller = () => signal?.aborted === true
  if (canceledByCaller()) return 'canceled'
  if (gate === undefined) return 'denied'
  // Not AbortSignal.timeout(): inside AbortSignal.any() Node 20 may garbage-collect it before it
  // fires (nodejs/node#57736), and the person would be asked for ever. The timer holds this one.
  const timeout = new AbortController()
  const timer = setTimeout(
    () => timeout.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')),
    timeoutMs,
  )
  const combined = signal === undefined ? timeout.signal : AbortSignal.any([signal, timeout.signal])
  let onAbort: (() => void) | undefined
  try {
    const aborted = new Promise<undefined>((resolve) => {
      onAbort = () => resolve(undefined)
      combined.addEventListener('abort', onAbort, { once: true })
    })
    const answer = await Promise.race([gate.request(request, { signal: combined }), aborted])
    if (canceledByCaller()) return 'canceled'
    return answer === true && !combined.aborted ? 'approved' : 'denied'
  } catch (error) {
    if (canceledByCaller()) return 'canceled'
    // A gate that could not ask anyone says why (too many pending, too long to show whole).
    return ToolError.is(error) && error.code === 'TOOL_DENIED'
      ? { unasked: error.message, data: error.data }
      : 'denied'
  } finally {
    clearTimeout(timer)
    if (onAbort !== undefined) combined.removeEventListener('abort', onAbort)
  }
}

/** The outcome of a call whose signal aborted. */
function canceled(tool: AnyTool): ToolCallOutcome {
  return failure('TOOL_CANCELED', `${tool.name} was canceled`)
}

/** The tool's own approval line when it has one (it may read a file), else the generic one. */
async function approvalLine(tool: AnyTool, params: unknown, context: ToolContext): Promise<string> {
  if (tool.approvalSummary !== undefined) {
    try {
      return await tool.approvalSummary(params, context)
    } catch {
      // The handler meets the same problem and reports it; the approver still sees a line.
    }
  }
  return buildApprovalSummary(tool.name, params)
}

/**
 * Validates parameters, awaits the tool's preflight (a blocked `lango` command returns here, before
 * anyone is asked; `workflow_run` reads its file), judges the call's safety, applies the approval
 * policy, runs the handler and turns every failure into a tool error result: the one way hosts
 * should call a tool. A call whose signal aborts before it runs or while approval is asked ends
 * `TOOL_CANCELED` (the gate's signal aborts with it).
 */
export async function invokeTool(
  tool: AnyTool,
  params: unknown,
  context: ToolContext = {},
  options: InvokeOptions = {},
): Promise<ToolCallOutcome> {
  // A policy that is none of the four (a JavaScript caller's typo) runs nothing: it never fails open.
  if (options.policy !== undefined && !APPROVAL_POLICIES.includes(options.policy))
    return failure(
      'TOOL_DENIED',
      `not run: the approval policy ${JSON.stringify(String(options.policy)).slice(0, 40)} is not one of ${APPROVAL_POLICIES.join(', ')}`,
    )
  const parsed = v.safeParse(tool.parameters, params ?? {})
  if (!parsed.success) {
    const issues = describeIssues(parsed.issues)
    return failure('TOOL_INVALID_PARAMETERS', invalidParametersMessage(tool.name, issues), { issues })
  }
  // A call canceled before it starts asks nobody and runs nothing.
  if (context.signal?.aborted === true) return canceled(tool)
  // A refusal that runs nothing (the lango guard), or input the tool's service rejects (an invalid
  // workflow), never asks anyone.
  let early: unknown
  try {
    early = await tool.preflight?.(parsed.output, context)
  } catch (error) {
    return handlerFailure(tool, error, context)
  }
  if (early !== undefined) return { ok: true, result: early }
  const safety = callSafety(tool, parsed.output)
  if (!requiresApproval(options.policy ?? 'dangerous', safety)) return run(tool, parsed.output, context)
  const summary = await approvalLine(tool, parsed.output, context)
  const request = {
    toolName: tool.name,
    summary,
    safety,
    params: parsed.output,
    sessionKey: context.sessionKey,
  }
  const answer = await askGate(
    options.gate,
    request,
    options.approvalTimeoutMs ?? 5 * 60 * 1000,
    context.signal,
  )
  // Nobody was asked: there is nothing for the gate to record.
  if (typeof answer === 'object')
    // `asked: false` tells a host this refusal was nobody's decision (too many pending, too long).
    return failure('TOOL_DENIED', `not run, ${answer.unasked}: ${summary}`, {
      data: { ...answer.data, asked: false },
    })
  const outcome =
    answer === 'canceled'
      ? canceled(tool)
      : answer === 'denied'
        ? failure('TOOL_DENIED', `not approved: ${summary}`)
        : await run(tool, parsed.output, context)
  if (options.gate?.settled !== undefined)
    try {
      options.gate.settled(request, outcome)
    } catch {
      // The gate's bookkeeping never changes what the call returns.
    }
  return outcome
}

/** Runs the handler; every failure becomes a tool error result. */
async function run(tool: AnyTool, params: unknown, context: ToolContext): Promise<ToolCallOutcome> {
  try {
    if (context.signal?.aborted) return canceled(tool)
    return { ok: true, result: await tool.handler(params, context) }
  } catch (error) {
    return handlerFailure(tool, error, context)
  }
}

/** How many issues of a failed call are passed on (a workflow error's `data.issueCount` has them all). */
const MAX_ISSUES = 100

/** Brand of the error classes of every `@lango/*` package (ADR 0006). */
const LANGO_ERROR = Symbol.for('lango.error')

/** A workflow issue as `WorkflowError.issues` carries it, reduced to what a caller is shown. */
function toIssue(value: unknown): ParameterIssue | undefined {
  const issue = value as { path?: unknown; message?: unknown; line?: unknown; column?: unknown } | null
  if (typeof issue?.path !== 'string' || typeof issue.message !== 'string') return undefined
  return {
    path: issue.path,
    message: issue.message,
    ...(Number.isInteger(issue.line) ? { line: issue.line as number } : {}),
    ...(Number.isInteger(issue.column) ? { column: issue.column as number } : {}),
  }
}

/**
 * The structured detail of a `@lango/*` error (ADR 0006): its `issues` (a `WorkflowError`) and its
 * `data`, as JSON. Never `cause` or `stack`; other errors give nothing (their fields are unknown).
 */
function errorDetail(error: unknown): FailureDetail {
  if (typeof error !== 'object' || error === null || !(LANGO_ERROR in error)) return {}
  const { issues, data } = error as { issues?: unknown; data?: unknown }
  const shown = Array.isArray(issues)
    ? issues
        .slice(0, MAX_ISSUES)
        .map(toIssue)
        .filter((issue) => issue !== undefined)
    : []
  let json: unknown
  try {
    json = typeof data === 'object' && data !== null ? JSON.parse(JSON.stringify(data)) : undefined
  } catch {
    json = undefined // not JSON (a bigint, a cycle): left out rather than failing the result
  }
  return {
    ...(shown.length === 0 ? {} : { issues: shown }),
    ...(typeof json === 'object' && json !== null && !Array.isArray(json)
      ? { data: json as Record<string, unknown> }
      : {}),
  }
}

/**
 * A tool error result for what a handler or preflight threw: a `ToolError` keeps its code, another
 * error becomes `TOOL_FAILED` with the service's own code as `reason`; both keep their issues and
 * data (never cause or stack).
 */
function handlerFailure(tool: AnyTool, error: unknown, context: ToolContext): ToolCallOutcome {
  if (context.signal?.aborted) return canceled(tool)
  const detail = errorDetail(error)
  if (ToolError.is(error))
    return failure(error.code, error.message, {
      ...(error.reason === undefined ? {} : { reason: error.reason }),
      ...detail,
    })
  const message = error instanceof Error ? error.message : String(error)
  const reason = (error as { code?: unknown } | null)?.code
  return failure('TOOL_FAILED', `${tool.name} failed: ${message}`, {
    ...(typeof reason === 'string' ? { reason } : {}),
    ...detail,
  })
}
