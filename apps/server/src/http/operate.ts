import { type AnyTool, invokeTool } from '@lango/tools'
import type { Context } from 'hono'
import type { App } from '../app/app.js'
import { callSignal } from './call-signal.js'
import { failureStatus } from './error-status.js'
import { errorResponse, failureResponse, readJsonBody } from './responses.js'

/** Which configuration switch a tool depends on, for the message when it is off. */
function featureOf(toolName: string): string {
  if (toolName.startsWith('cron') || toolName === 'manage_cron_jobs') return 'cron'
  if (toolName.startsWith('workflow')) return 'workflow'
  if (toolName.startsWith('bg_')) return 'background'
  return 'exec'
}

/** What the operator routes run their calls with ({@link createOperator}). */
export interface Operator {
  /**
   * Runs `toolName` with `params` as the operator and answers with its result as it is: 200 and
   * the result; a failure as `{error}` with the status of `failureStatus` for a resource route
   * (an id that names nothing is 404); a tool switched off by configuration 404 `TOOL_NOT_FOUND`.
   */
  operate(c: Context, toolName: string, params: Record<string, unknown>): Promise<Response>
  /** The JSON object of the request body, or the error response to send. */
  bodyObject(c: Context): Promise<{ value: Record<string, unknown> } | { response: Response }>
}

/**
 * The calls of the operator REST API (apps/server/README.md, "HTTP API"): cron jobs and runs,
 * workflow runs and saved workflows, background tasks and processes. The bearer token is the
 * operator, so these calls need no approval: each runs the same tool an agent would, with policy
 * `none` and session `cli`. `extraTools` are the routes' own operations and views, by name over
 * the agent tools (never published).
 */
export function createOperator(
  app: App,
  shutdown: AbortSignal | undefined,
  extraTools: readonly AnyTool[] = [],
): Operator {
  const tools = new Map<string, AnyTool>(app.tools.map((tool) => [tool.name, tool]))
  for (const tool of extraTools) tools.set(tool.name, tool)

  const operate = async (
    c: Context,
    toolName: string,
    params: Record<string, unknown>,
  ): Promise<Response> => {
    const tool = tools.get(toolName)
    if (tool === undefined) {
      return errorResponse(
        c,
        'TOOL_NOT_FOUND',
        `${featureOf(toolName)} is disabled in this server's configuration (${featureOf(toolName)}.enabled in lango.yaml)`,
      )
    }
    const link = callSignal(c.req.raw.signal, shutdown)
    try {
      const outcome = await invokeTool(
        tool,
        params,
        { sessionKey: 'cli', signal: link.signal },
        { policy: 'none' },
      )
      if (!outcome.ok) return failureResponse(c, outcome.error, { resource: true })
      if (tool.isFailure?.(outcome.result) === true) {
        // manage_cron_jobs reports failures in its result (`{error: "Job not found"}`), as seed 002 does.
        const message = String((outcome.result as { error?: unknown } | null)?.error ?? `${toolName} failed`)
        if (message !== 'Job not found') return errorResponse(c, 'TOOL_FAILED', message)
        const reason = 'CRON_JOB_NOT_FOUND'
        return errorResponse(
          c,
          'TOOL_FAILED',
          'no cron job with that id or name',
          { reason },
          failureStatus({ code: 'TOOL_FAILED', reason }, { resource: true }),
        )
      }
      return c.json(outcome.result ?? null, 200)
    } finally {
      link.dispose()
    }
  }

  const bodyObject = async (
    c: Context,
  ): Promise<{ value: Record<string, unknown> } | { response: Response }> => {
    const body = await readJsonBody(c, app.config.server.bodyLimitBytes)
    return body.ok ? { value: body.value } : { response: body.response }
  }

  return { operate, bodyObject }
}
