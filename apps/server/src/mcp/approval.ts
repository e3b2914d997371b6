import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
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
import type { App } from '../app.js'
import type { ApprovalView } from '../approvals.js'

/** The `inputRequests` key of the approval question (and of its answer in `inputResponses`). */
const APPROVAL_INPUT = 'lango_approval'

/** Remembered answers at most (an approved call waiting for its retry, a refusal to report once). */
const MAX_REMEMBERED = 200

/** Options for {@link McpApprovals}. */
export interface McpApprovalsOptions {
  /** Which calls need a second approval over MCP. Default `config.approvals.mcpPolicy`. */
  readonly policy?: ApprovalPolicy
  /** Ask through elicitation when the client supports it. Default true. */
  readonly elicit?: boolean
  /**
   * Whether a pending approval can be answered elsewhere: true where the process serves the HTTP
   * API (`lango serve`'s `/mcp`); false for `lango mcp`, whose approvals no API or CLI can reach, so
   * a call the client cannot be asked about is denied with what to do instead. Default true.
   */
  readonly answeredElsewhere?: boolean
}

/** What the approval step decided for one call; read by the tool wrapper once the call returns. */
type CallNote =
  /** The client can answer a form: the call is answered with an elicitation (`input_required`). */
  | { readonly kind: 'elicit'; readonly request: ApprovalRequest; readonly state: string }
  /** A pending approval answered elsewhere; the call is to be made again once it is approved. */
  | { readonly kind: 'pending'; readonly approval: ApprovalView }
  /** Nobody can be asked: the client has no forms and no API can answer a pending approval. */
  | { readonly kind: 'unaskable'; readonly request: ApprovalRequest }
  /** The approval was refused, expired or cancelled since the call was first made. */
  | { readonly kind: 'refused'; readonly approval: ApprovalView }
  /** The retried call consumed an approved approval: its outcome is recorded on it. */
  | { readonly kind: 'granted'; readonly approvalId: string }

/** An approval created for a call over MCP, keyed by the call's fingerprint. */
interface Remembered {
  /** As it last stood: pending, then as answered. */
  view: ApprovalView
  /** Until when an answer is kept (an approved call may be made again until then). */
  keepUntil: number
}

/**
 * The second approval over MCP (ARCHITECTURE.md §9), on top of the host's own prompt; only when
 * the config sets `approvals.mcp_policy`. A call that needs it is put to the user:
 *
 * - through the client, when it declared form elicitation: the call answers `input_required` with
 *   an approve/deny form (2026-07-28 clients fulfil it and retry; on 2025-era connections the SDK
 *   sends `elicitation/create` and re-enters the call). Accept with `approve: true` runs the call;
 *   decline, cancel, no answer or a form for another call deny.
 * - else, where an API can answer it (`answeredElsewhere`), as a pending approval in
 *   {@link App.approvals}, answered elsewhere (`POST
 *   /api/approvals/<id>`, `lango approvals approve <id>`, the dashboard): the call returns at once
 *   with an `isError` result naming the approval and what to do; once it is approved, the same
 *   call (same tool, parameters and session) made again runs, once. No answer means no: the
 *   approval expires after `approvals.timeout` and the next call is told so.
 * - else (`lango mcp` with a client without forms) denied, saying what to do instead.
 *
 * One instance serves every MCP server made for a process (stdio) or an HTTP endpoint (stateless:
 * one server per request), so an approval outlives the request that asked for it.
 */
export class McpApprovals {
  readonly policy: ApprovalPolicy
  readonly #app: App
  readonly #elicit: boolean
  readonly #answeredElsewhere: boolean
  readonly #remembered = new Map<string, Remembered>()
  readonly #notes = new WeakMap<object, CallNote>()
  /** Signs `requestState`, so an elicitation answer only approves the call it was asked for. */
  readonly #key = randomBytes(32)
  readonly #lifetime = new AbortController()

  constructor(app: App, options: McpApprovalsOptions = {}) {
    this.#app = app
    this.policy = options.policy ?? app.config.approvals.mcpPolicy
    this.#elicit = options.elicit ?? true
    this.#answeredElsewhere = options.answeredElsewhere ?? true
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
      request: async (request, { context }) => this.#request(server, request, context),
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

  /** Cancels what is still pending (the approvals deny) and forgets every answer. */
  close(): void {
    this.#lifetime.abort()
    this.#remembered.clear()
  }

  async #request(server: McpServer, request: ApprovalRequest, context: ServerContext): Promise<boolean> {
    const fingerprint = fingerprintOf(request)
    // A retried call carrying the client's answer to our form.
    if (context.mcpReq.inputResponses?.[APPROVAL_INPUT] !== undefined) {
      const answer = inputResponse(context.mcpReq.inputResponses, APPROVAL_INPUT)
      const approved =
        answer.kind === 'elicit' &&
        answer.action === 'accept' &&
        answer.content?.approve === true &&
        this.#signed(fingerprint, context.mcpReq.requestState())
      this.#app.logger.info('mcp approval answered by the client', { tool: request.toolName, approved })
      return approved
    }
    if (this.#elicit && supportsFormElicitation(clientCapabilities(server, context))) {
      this.#notes.set(context, { kind: 'elicit', request, state: this.#sign(fingerprint) })
      return false
    }
    if (!this.#answeredElsewhere) {
      this.#notes.set(context, { kind: 'unaskable', request })
      return false
    }
    return this.#pending(fingerprint, request, context)
  }

  /** The pending-approval path: a new approval, the one still pending, or the answer to it. */
  #pending(fingerprint: string, request: ApprovalRequest, context: ServerContext): boolean {
    this.#sweep()
    const remembered = this.#remembered.get(fingerprint)
    if (remembered !== undefined) {
      const { view } = remembered
      if (view.status === 'pending') {
        this.#notes.set(context, { kind: 'pending', approval: view })
        return false
      }
      // An answer is used once: an approved call runs, a refusal is reported; the next call asks again.
      this.#remembered.delete(fingerprint)
      if (view.status === 'approved') {
        this.#notes.set(context, { kind: 'granted', approvalId: view.id })
        return true
      }
      this.#notes.set(context, { kind: 'refused', approval: view })
      return false
    }
    const pending: { view?: ApprovalView } = {}
    const answered = this.#app.approvals
      .gate((view) => {
        pending.view = view
      })
      .request(request, { signal: this.#lifetime.signal })
    const created = pending.view
    // Full (too many pending): denied at once, as invokeTool reports.
    if (created === undefined) return false
    const entry: Remembered = { view: created, keepUntil: created.expires_at }
    this.#remembered.set(fingerprint, entry)
    const settle = () => {
      entry.view = this.#answered(entry.view)
      // An approved call may be made again for as long again as the approval was open.
      entry.keepUntil = Date.now() + this.#app.config.approvals.timeoutMs
    }
    void answered.then(settle, settle)
    this.#app.logger.info('mcp approval pending', { id: created.id, tool: request.toolName })
    this.#notes.set(context, { kind: 'pending', approval: created })
    return false
  }

  /** The approval as answered; one already dropped from the answered list is long over. */
  #answered(view: ApprovalView): ApprovalView {
    try {
      return this.#app.approvals.get(view.id)
    } catch {
      return { ...view, status: 'expired' }
    }
  }

  /** Forgets answers past their time, and the oldest beyond the bound. */
  #sweep(): void {
    const now = Date.now()
    for (const [fingerprint, entry] of this.#remembered)
      if (entry.view.status !== 'pending' && entry.keepUntil < now) this.#remembered.delete(fingerprint)
    for (const fingerprint of [...this.#remembered.keys()].slice(
      0,
      Math.max(0, this.#remembered.size - MAX_REMEMBERED),
    ))
      this.#remembered.delete(fingerprint)
  }

  #sign(fingerprint: string): string {
    return createHmac('sha256', this.#key).update(fingerprint).digest('base64url')
  }

  #signed(fingerprint: string, state: unknown): boolean {
    if (typeof state !== 'string') return false
    const expected = Buffer.from(this.#sign(fingerprint))
    const given = Buffer.from(state)
    return given.length === expected.length && timingSafeEqual(given, expected)
  }

  /** The result a held-back call answers with. */
  #answer(note: CallNote, result: CallToolResult): CallToolResult | InputRequiredResult {
    if (note.kind === 'granted') {
      this.#app.approvals.recordOutcome(note.approvalId, outcomeOf(result))
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
      case 'unaskable':
        return errorResult({
          error: {
            code: 'TOOL_DENIED',
            message:
              `not approved: ${note.request.summary}. approvals.mcp_policy (${this.policy}) asks for a second approval of this call, ` +
              'but this MCP client cannot show an approval form (elicitation) and nothing else can answer one for `lango mcp`: ' +
              'use a client with elicitation, the /mcp endpoint of `lango serve`, or set approvals.mcp_policy to none (the client approves).',
          },
        })
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

/** The same tool, parameters and session: the call an approval was given for. */
function fingerprintOf(request: ApprovalRequest): string {
  return JSON.stringify([request.toolName, request.sessionKey ?? null, canonical(request.params)])
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
        `Ask the user to approve it with \`lango approvals approve ${approval.id}\` (or POST /api/approvals/${approval.id}) ` +
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
