import { type AnyTool, invokeTool, toFunctionTool } from '@lango/tools'
import { type Context, Hono } from 'hono'
import type { App } from '../../app/app.js'
import type { ApprovalView } from '../../approvals.js'
import { callSignal } from '../call-signal.js'
import { errorResponse, failureResponse, readJsonBody } from '../responses.js'

/** How much longer invokeTool waits than the approval registry, which owns expiry. */
const APPROVAL_TIMEOUT_SLACK_MS = 1_000

/** One entry of `GET /api/tools`. */
function catalogueEntry(tool: AnyTool) {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    safety: tool.safety,
    worst_safety: tool.worstSafety ?? tool.safety,
    parameters: toFunctionTool(tool).function.parameters,
    output: tool.outputJsonSchema,
  }
}

/**
 * The tool catalogue and tool calls under the approval policy, mounted at `/api/tools`:
 * `GET /api/tools` and `POST /api/tools/:name` ({@link callToolOverHttp}).
 */
export function toolRoutes(app: App, shutdown: AbortSignal | undefined): Hono {
  const routes = new Hono()
  const tools = new Map(app.tools.map((tool) => [tool.name, tool]))
  const catalogue = app.tools.map(catalogueEntry)

  routes.get('/', (c) => c.json({ tools: catalogue, count: catalogue.length }))
  routes.post('/:name', async (c) => {
    const tool = tools.get(c.req.param('name'))
    if (tool === undefined) {
      return errorResponse(c, 'TOOL_NOT_FOUND', 'no tool with that name; GET /api/tools lists the tools')
    }
    const body = await readJsonBody(c, app.config.server.bodyLimitBytes)
    if (!body.ok) return body.response
    return callToolOverHttp(c, app, tool, body.value, shutdown)
  })

  return routes
}

/**
 * `POST /api/tools/:name`: runs the call through `invokeTool` under the configured approval policy.
 * 200 `{ok: true, result}`; when the call needs approval, 202 `{status: 'pending_approval',
 * approval_id, summary, expires_at}` at once while the call keeps waiting for the answer in the
 * background (given in this process or any other on the database: src/approvals.ts), its
 * outcome recorded on the approval; a failure is its error with the status of `failureStatus`
 * (src/http/error-status.ts). The client going away cancels the call (until it waits for approval).
 */
async function callToolOverHttp(
  c: Context,
  app: App,
  tool: AnyTool,
  params: unknown,
  shutdown: AbortSignal | undefined,
): Promise<Response> {
  const link = callSignal(c.req.raw.signal, shutdown)
  let announce: (approval: ApprovalView) => void = () => {}
  const pending = new Promise<ApprovalView>((resolve) => {
    announce = resolve
  })
  const call = invokeTool(
    tool,
    params,
    { sessionKey: 'http', signal: link.signal },
    {
      policy: app.config.approvals.policy,
      gate: app.approvals.gate((approval) => announce(approval)),
      // The registry expires the approval (status `expired`) at timeoutMs; invokeTool's own timer
      // is only a backstop. Were they equal, invokeTool's could fire first and the registry would
      // record `cancelled` for what is an expiry.
      approvalTimeoutMs: app.config.approvals.timeoutMs + APPROVAL_TIMEOUT_SLACK_MS,
    },
  )
  const first = await Promise.race([
    call.then((outcome) => ({ outcome }) as const),
    pending.then((approval) => ({ approval }) as const),
  ])
  if ('approval' in first) {
    const { approval } = first
    // The answer comes in another request: this one ends now, the call goes on.
    link.detachRequest()
    // The gate records the call's outcome on its approval when it ends (ApprovalGate.settled).
    void call.finally(() => link.dispose())
    return c.json(
      {
        status: 'pending_approval',
        approval_id: approval.id,
        summary: approval.summary,
        expires_at: approval.expires_at,
      },
      202,
    )
  }
  link.dispose()
  const { outcome } = first
  // 200 `{ok: true, result}`, or the failure's error body and status.
  if (outcome.ok) return c.json({ ok: true, result: outcome.result ?? null }, 200)
  return failureResponse(c, outcome.error)
}
