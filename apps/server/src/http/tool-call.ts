import { type AnyTool, invokeTool, type ToolCallOutcome } from '@lango/tools'
import type { Context } from 'hono'
import type { App } from '../app/app.js'
import type { ApprovalView } from '../approvals.js'
import { failureBody, failureStatus } from './responses.js'

/** How much longer invokeTool waits than the approval registry, which owns expiry. */
const APPROVAL_TIMEOUT_SLACK_MS = 1_000

/**
 * A signal for one call that aborts with the request (the client went away) or the server's
 * shutdown signal; `detachRequest` lets the call outlive its request (a pending approval).
 */
export function callSignal(
  request: AbortSignal,
  shutdown: AbortSignal | undefined,
): { readonly signal: AbortSignal; detachRequest(): void; dispose(): void } {
  const controller = new AbortController()
  const onRequestAbort = (): void => controller.abort(request.reason)
  const onShutdown = (): void => controller.abort(shutdown?.reason)
  if (request.aborted) onRequestAbort()
  else request.addEventListener('abort', onRequestAbort, { once: true })
  if (shutdown?.aborted === true) onShutdown()
  else shutdown?.addEventListener('abort', onShutdown, { once: true })
  const detachRequest = (): void => request.removeEventListener('abort', onRequestAbort)
  return {
    signal: controller.signal,
    detachRequest,
    dispose() {
      detachRequest()
      shutdown?.removeEventListener('abort', onShutdown)
    },
  }
}

/**
 * `POST /api/tools/:name`: runs the call through `invokeTool` under the configured approval policy.
 * 200 `{ok: true, result}`; when the call needs approval, 202 `{status: 'pending_approval',
 * approval_id, summary, expires_at}` at once while the call keeps waiting for the answer in the
 * background (given in this process or any other on the database: src/approvals.ts), its
 * outcome recorded on the approval; a failure is its error with the status of
 * {@link failureStatus}. The client going away cancels the call (until it waits for approval).
 */
export async function callToolOverHttp(
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
    void call
      .then((outcome) => app.approvals.recordOutcome(approval.id, outcome))
      .catch((error: unknown) => app.logger.error('approved call failed', { tool: tool.name, error }))
      .finally(() => link.dispose())
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
  return outcomeResponse(c, first.outcome)
}

/** 200 `{ok: true, result}`, or the failure's error body and status. */
function outcomeResponse(c: Context, outcome: ToolCallOutcome): Response {
  if (outcome.ok) return c.json({ ok: true, result: outcome.result ?? null }, 200)
  return c.json(failureBody(outcome.error), failureStatus(outcome.error))
}
