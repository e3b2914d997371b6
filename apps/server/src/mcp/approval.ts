import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { ApprovalPolicy, ApprovalRequest, ToolCallOutcome } from '@lango/tools'
import type { McpApproval } from '@lango/tools/mcp'
import {
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  type McpServer,
  type RegisteredTool,
  type ServerContext,
} from '@modelcontextprotocol/server'
import type { App } from '../app/app.js'
import type { ApprovalView } from '../approvals.js'

/** The `inputRequests` key of the approval question (and of its answer in `inputResponses`). */
const APPROVAL_INPUT = 'lango_approval'

/** Options for {@link McpApprovals}. */
export interface McpApprovalsOptions {
  /** Which calls need a second approval over MCP. Default `config.approvals.mcpPolicy`. */
  readonly policy?: ApprovalPolicy
  /** Ask through elicitation when the client supports it. Default true. */
  readonly elicit?: boolean
}

/** What the approval step decided for one call; read by the tool wrapper once the call returns. */
type CallNote =
  /** The client can answer a form: the call is answered with an elicitation (`input_required`). */
  | { readonly kind: 'elicit'; readonly request: ApprovalRequest; readonly state: string }
  /** A pending approval answered elsewhere; the call is to be made again once it is approved. */
  | { readonly kind: 'pending'; readonly approval: ApprovalView }
  /** The approval was refused, expired or cancelled since the call was first made. */
  | { readonly kind: 'refused'; readonly approval: ApprovalView }
  /** The retried call consumed an approved approval: its outcome is recorded on it. */
  | { readonly kind: 'granted'; readonly approvalId: string }

/**
 * The second approval over MCP (ARCHITECTURE.md §9), on top of the host's own prompt; only when
 * the config sets `approvals.mcp_policy`. A call that needs it is put to the user:
 *
 * - through the client, when it declared form elicitation: the call answers `input_required` with
 *   an approve/deny form (2026-07-28 clients fulfil it and retry; on 2025-era connections the SDK
 *   sends `elicitation/create` and re-enters the call). The question is a pending approval in
 *   {@link App.approvals} too (listed, answerable elsewhere, recorded with its outcome). Accept with
 *   `approve: true` runs the call, once, within `approvals.timeout`; decline, cancel, no answer, a
 *   form for another call, an answer used before or one past the timeout deny.
 * - else as a pending approval in {@link App.approvals}, which lives in the server's database:
 *   the call returns at once with an `isError` result (`SERVER_APPROVAL_PENDING`) naming the
 *   approval and what to do. Any process on the same database answers it: `lango approvals approve
 *   <id>` or `POST /api/approvals/<id>` against a running `lango serve` (for `lango mcp` over stdio
 *   too, on the same `$LANGO_HOME`), or the dashboard. Once it is approved, the same call (same
 *   tool, parameters and session) made again runs, once, whichever process it reaches; a refusal
 *   is reported once. No answer means no: the approval expires after `approvals.timeout` and the
 *   next call is told so. An answer is kept for `approvals.timeout` after it was given; after that
 *   (or once used) the same call asks again.
 *
 * Nothing of a pending approval is kept in memory, so one instance may serve every MCP server of a
 * process (stdio) or of an HTTP endpoint (stateless: one server per request), and an approval
 * outlives the request, the connection and the process that asked for it.
 */
export class McpApprovals {
  readonly policy: ApprovalPolicy
  readonly #app: App
  readonly #elicit: boolean
  readonly #notes = new WeakMap<object, CallNote>()
  /** Signs `requestState`, so an elicitation answer only answers the approval of the call it was asked for. */
  readonly #key = randomBytes(32)
  readonly #lifetime = new AbortController()

  constructor(app: App, options: McpApprovalsOptions = {}) {
    this.#app = app
    this.policy = options.policy ?? app.config.approvals.mcpPolicy
    this.#elicit = options.elicit ?? true
  }

  /**
   * The `McpApproval` to hand `registerTools` for one server (then {@link McpApprovals.wrap} what
   * it registered); undefined when the policy is `none` (the host approves).
   */
  approvalFor(server: McpServer): McpApproval | undefined {
    if (this.policy === 'none') return undefined
    return {
      policy: this.policy,
      timeoutMs: this.#app.config.approvals.timeoutMs,
      request: async (request, { signal, context }) => this.#request(server, request, context, signal),
    }
  }

  /**
   * Wraps registered tools so that a call the approval step held back answers with the form to
   * fill in (`input_required`) or with the pending approval, and records the outcome of a call that
   * ran on an approval given elsewhere.
   */
  wrap(registered: readonly RegisteredTool[]): void {
    if (this.policy === 'none') return
    for (const tool of registered) {
      const original = tool.handler as (args: unknown, context: ServerContext) => Promise<CallToolResult>
      tool.update({
        callback: async (args: unknown, context: ServerContext) => {
          const result = await original(args, context)
          const note = this.#notes.get(context)
          this.#notes.delete(context)
          return note === undefined ? result : this.#answer(note, result)
        },
      })
    }
  }

  /**
   * Ends this step (the process or endpoint is stopping): a call asked about from now on is denied,
   * and one asking the database now is abandoned. Approvals already pending stay in the database,
   * where another process (or a restarted one) still answers and uses them.
   */
  close(): void {
    this.#lifetime.abort()
  }

  async #request(
    server: McpServer,
    request: ApprovalRequest,
    context: ServerContext,
    signal: AbortSignal,
  ): Promise<boolean> {
    const fingerprint = fingerprintOf(request)
    if (this.#lifetime.signal.aborted) return false
    const watched = AbortSignal.any([signal, this.#lifetime.signal])
    // A retried call carrying the client's answer to our form.
    if (context.mcpReq.inputResponses?.[APPROVAL_INPUT] !== undefined)
      return this.#answered(fingerprint, request, context, watched)
    if (this.#elicit && supportsFormElicitation(clientCapabilities(server, context))) {
      // The question is an approval in the database, as every other (the dashboard and `lango
      // approvals` list it, and may answer it first): the form's answer decides it and is used once.
      const created = await this.#app.approvals.open(
        request,
        { callKey: callKeyOf(fingerprint) },
        { signal: watched },
      )
      // Full (too many pending), or a summary too long to ask about: denied at once.
      if (created === undefined) return false
      this.#app.logger.info('mcp approval asked through the client', {
        id: created.id,
        tool: request.toolName,
      })
      this.#notes.set(context, { kind: 'elicit', request, state: this.#sign(fingerprint, created.id) })
      return false
    }
    return this.#pending(fingerprint, request, context, watched)
  }

  /**
   * The client's answer to the form, with the `requestState` it was given: valid only for the call
   * it was asked for (signed with the call's fingerprint and the approval's id), and used once
   * within `approvals.timeout` (the approval is decided and claimed; a replay or a late answer
   * finds it claimed or expired). The decision is recorded as any other, with the call's outcome.
   */
  async #answered(
    fingerprint: string,
    request: ApprovalRequest,
    context: ServerContext,
    signal: AbortSignal,
  ): Promise<boolean> {
    const answer = inputResponse(context.mcpReq.inputResponses ?? {}, APPROVAL_INPUT)
    const id = this.#verified(fingerprint, context.mcpReq.requestState())
    const approve = answer.kind === 'elicit' && answer.action === 'accept' && answer.content?.approve === true
    if (id === undefined) {
      this.#app.logger.warn("mcp approval answer refused: its request state is not this call's", {
        tool: request.toolName,
      })
      return false
    }
    const { approval, used } = await this.#app.approvals.answerAndUse(id, approve, {
      decidedBy: 'mcp client form',
      signal,
    })
    this.#app.logger.info('mcp approval answered by the client', {
      id,
      tool: request.toolName,
      approved: used,
      ...(approve && !used ? { status: approval.status, reason: 'already used, expired or decided' } : {}),
    })
    if (used) this.#notes.set(context, { kind: 'granted', approvalId: id })
    return used
  }

  /**
   * The pending-approval path: the answer to this call's approval (used once), the approval still
   * pending, or a new one.
   */
  async #pending(
    fingerprint: string,
    request: ApprovalRequest,
    context: ServerContext,
    signal: AbortSignal,
  ): Promise<boolean> {
    const callKey = callKeyOf(fingerprint)
    const answered = await this.#app.approvals.claimAnswer(callKey, { signal })
    if (answered?.status === 'pending') {
      this.#notes.set(context, { kind: 'pending', approval: answered })
      return false
    }
    if (answered?.status === 'approved') {
      this.#app.logger.info('mcp approval used', { id: answered.id, tool: request.toolName })
      this.#notes.set(context, { kind: 'granted', approvalId: answered.id })
      return true
    }
    if (answered !== undefined) {
      this.#notes.set(context, { kind: 'refused', approval: answered })
      return false
    }
    const created = await this.#app.approvals.open(request, { callKey }, { signal })
    // Full (too many pending): denied at once, as invokeTool reports.
    if (created === undefined) return false
    this.#app.logger.info('mcp approval pending', { id: created.id, tool: request.toolName })
    this.#notes.set(context, { kind: 'pending', approval: created })
    return false
  }

  /** `requestState` of a form: the approval's id and a MAC of it with the call's fingerprint. */
  #sign(fingerprint: string, approvalId: string): string {
    const mac = createHmac('sha256', this.#key).update(`${approvalId}\n${fingerprint}`).digest('base64url')
    return `${approvalId}.${mac}`
  }

  /** The approval id of a `requestState` this process signed for this call; undefined otherwise. */
  #verified(fingerprint: string, state: unknown): string | undefined {
    if (typeof state !== 'string') return undefined
    const dot = state.lastIndexOf('.')
    if (dot <= 0 || dot > 200) return undefined
    const approvalId = state.slice(0, dot)
    const expected = Buffer.from(this.#sign(fingerprint, approvalId))
    const given = Buffer.from(state)
    return given.length === expected.length && timingSafeEqual(given, expected) ? approvalId : undefined
  }

  /** The result a held-back call answers with. */
  async #answer(note: CallNote, result: CallToolResult): Promise<CallToolResult | InputRequiredResult> {
    if (note.kind === 'granted') {
      // The call ran: its result goes back even when the outcome cannot be recorded.
      await this.#app.approvals
        .recordOutcome(note.approvalId, outcomeOf(result))
        .catch((error: unknown) => this.#app.logger.warn('approval outcome not recorded', { error }))
      return result
    }
    // Only a call the approval step denied is replaced (not one canceled meanwhile).
    if (errorCodeOf(result) !== 'TOOL_DENIED') return result
    switch (note.kind) {
      case 'elicit':
        return inputRequired({
          inputRequests: {
            [APPROVAL_INPUT]: inputRequired.elicit({
              mode: 'form',
              message: `Approve this ${note.request.safety} call of ${note.request.toolName}?\n${note.request.summary}`,
              requestedSchema: {
                type: 'object',
                properties: {
                  approve: {
                    type: 'boolean',
                    title: 'Approve',
                    description: `Run ${note.request.toolName} as shown`,
                    default: false,
                  },
                },
                required: ['approve'],
              },
            }),
          },
          requestState: note.state,
        })
      case 'pending':
        return pendingResult(note.approval)
      case 'refused':
        return refusedResult(note.approval)
    }
  }
}

/** The client's capabilities for this request: its envelope (2026-07-28), else its `initialize`. */
function clientCapabilities(server: McpServer, context: ServerContext): ClientCapabilities | undefined {
  const envelope = context.mcpReq.envelope as Record<string, unknown> | undefined
  return (
    (envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined) ??
    server.server.getClientCapabilities()
  )
}

/** Form mode: declared, or implied by a bare `elicitation: {}` (the spec's default). */
function supportsFormElicitation(capabilities: ClientCapabilities | undefined): boolean {
  const elicitation = capabilities?.elicitation as { form?: unknown; url?: unknown } | undefined
  return elicitation !== undefined && (elicitation.form !== undefined || elicitation.url === undefined)
}

/**
 * The same tool, parameters and session, shown the same way: the call an approval was given for.
 * The summary counts too, because a call's parameters may name content that changes between the
 * approval and the call made again (`workflow_run` of a file, `cron_add` over a job): approved as
 * shown, it runs only while it would still be shown so; otherwise it is asked about again.
 */
function fingerprintOf(request: ApprovalRequest): string {
  return JSON.stringify([
    request.toolName,
    request.sessionKey ?? null,
    canonical(request.params),
    request.summary,
  ])
}

/**
 * The call's key in the approvals table: a SHA-256 of its fingerprint, so the same call finds its
 * approval in any process while the table holds no parameters (only the summary shows them).
 */
function callKeyOf(fingerprint: string): string {
  return createHash('sha256').update(fingerprint).digest('hex')
}

/** JSON with object keys sorted, so key order does not make two calls differ. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, item]) => [key, canonical(item)]),
  )
}

function errorCodeOf(result: CallToolResult): unknown {
  const error = (result.structuredContent as { error?: { code?: unknown } } | undefined)?.error
  return result.isError === true ? error?.code : undefined
}

/** What became of the call, as the approval records it (`lango approvals list`, the API). */
function outcomeOf(result: CallToolResult): ToolCallOutcome {
  const error = (result.structuredContent as { error?: { code?: unknown; message?: unknown } } | undefined)
    ?.error
  if (result.isError === true && typeof error?.code === 'string' && typeof error.message === 'string')
    return { ok: false, error: error as Extract<ToolCallOutcome, { ok: false }>['error'] }
  return { ok: true, result: result.structuredContent ?? null }
}

/** The same JSON as text and as `structuredContent`, marked as an error. */
function errorResult(payload: Record<string, unknown>): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(payload) }],
    structuredContent: payload,
    isError: true,
  }
}

/** The approval as the client sees it: no parameters (the summary shows them, secrets as tokens). */
function approvalPayload(approval: ApprovalView) {
  return {
    id: approval.id,
    status: approval.status,
    tool: approval.tool,
    summary: approval.summary,
    expires_at: new Date(approval.expires_at).toISOString(),
  }
}

function pendingResult(approval: ApprovalView): CallToolResult {
  return errorResult({
    error: {
      code: 'SERVER_APPROVAL_PENDING',
      message:
        `not run yet: this call needs the user's approval (${approval.summary}). ` +
        `Ask the user to approve it with \`lango approvals approve ${approval.id}\` (the lango server on the same LANGO_HOME or database must be running; or POST /api/approvals/${approval.id}) ` +
        `before ${new Date(approval.expires_at).toISOString()}, then make the same call again with the same parameters. ` +
        'No answer means no.',
    },
    approval: approvalPayload(approval),
  })
}

function refusedResult(approval: ApprovalView): CallToolResult {
  const why =
    approval.status === 'denied'
      ? 'the user denied it'
      : approval.status === 'cancelled'
        ? 'it was cancelled'
        : 'nobody answered it in time'
  return errorResult({
    error: {
      code: 'TOOL_DENIED',
      message: `not approved: ${approval.summary} (approval ${approval.id}: ${why}). Calling again asks again.`,
    },
    approval: approvalPayload(approval),
  })
}
