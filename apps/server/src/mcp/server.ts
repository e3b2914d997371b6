import { registerTools } from '@lango/tools/mcp'
import { McpServer } from '@modelcontextprotocol/server'
import type { App } from '../app/app.js'
import { VERSION } from '../version.js'
import { McpApprovals } from './approval.js'

/** Options for {@link createMcpServer}. */
export interface CreateMcpServerOptions {
  /**
   * The second approval step over MCP, shared by every server of one process or endpoint (an
   * approval outlives the request that asked for it). Default: a new one on the config's
   * `approvals.mcp_policy`, which is `none` unless set (the host approves, ARCHITECTURE.md §9).
   */
  readonly approval?: McpApprovals
  /** Aborts every call in flight (the server stopping): each is cancelled and answered. */
  readonly signal?: AbortSignal
}

/**
 * An MCP server named `lango` with every tool of the app, in the app's order (a deterministic
 * `tools/list`), each with its title and annotations from its safety, and the automation
 * `instructions`. Calls run through `invokeTool` with the request's signal; with an MCP approval
 * policy, the calls it selects are approved through the client's form elicitation, else by a
 * pending approval answered elsewhere ({@link McpApprovals}). One server serves one connection
 * (stdio) or one request (stateless HTTP); the factory entries of the SDK call this per unit.
 */
export function createMcpServer(app: App, options: CreateMcpServerOptions = {}): McpServer {
  const server = new McpServer(
    { name: 'lango', title: 'Lango', version: VERSION },
    {
      instructions: app.instructions,
      // A form the user fills in is human-paced: the approval timeout bounds it, not the SDK's 10 min.
      inputRequired: { roundTimeoutMs: app.config.approvals.timeoutMs },
    },
  )
  const approvals = options.approval ?? new McpApprovals(app)
  const approval = approvals.approvalFor(server)
  approvals.wrap(
    registerTools(server, app.tools, {
      ...(approval === undefined ? {} : { approval }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    }),
  )
  return server
}
