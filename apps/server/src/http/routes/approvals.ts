import { type Context, Hono } from 'hono'
import * as v from 'valibot'
import type { App } from '../../app/app.js'
import { APPROVAL_STATUSES, type ApprovalStatus } from '../../approvals.js'
import { ServerError } from '../../errors.js'
import { errorResponse, readJsonBody } from '../responses.js'

const decisionSchema = v.strictObject({
  decision: v.picklist(['approve', 'deny'], 'decision must be approve or deny'),
})

/** The approval `read` returns, or 404 `SERVER_APPROVAL_NOT_FOUND`. */
async function approvalResponse(c: Context, read: () => Promise<unknown>): Promise<Response> {
  try {
    return c.json(await read(), 200)
  } catch (error) {
    if (error instanceof ServerError && error.code === 'SERVER_APPROVAL_NOT_FOUND') {
      return errorResponse(c, error.code, error.message, error.data === undefined ? {} : { data: error.data })
    }
    throw error
  }
}

/**
 * Approvals of every process on the database (a `lango mcp` on the same home included), mounted
 * at `/api/approvals`: `GET /api/approvals`, `GET /api/approvals/:id`, `POST /api/approvals/:id`
 * (`{"decision": "approve" | "deny"}`).
 */
export function approvalRoutes(app: App): Hono {
  const routes = new Hono()

  routes.get('/', async (c) => {
    const status = c.req.query('status') || undefined
    if (status !== undefined && !APPROVAL_STATUSES.includes(status as ApprovalStatus)) {
      const message = `status must be one of ${APPROVAL_STATUSES.join(', ')}`
      return errorResponse(c, 'INVALID_REQUEST', message, { issues: [{ path: 'status', message }] })
    }
    const approvals = await app.approvals.list(
      status === undefined ? {} : { status: status as ApprovalStatus },
      { signal: c.req.raw.signal },
    )
    return c.json({ approvals, count: approvals.length })
  })
  routes.get('/:id', (c) => approvalResponse(c, () => app.approvals.get(c.req.param('id'))))
  routes.post('/:id', async (c) => {
    const body = await readJsonBody(c, app.config.server.bodyLimitBytes)
    if (!body.ok) return body.response
    const parsed = v.safeParse(decisionSchema, body.value)
    if (!parsed.success) {
      const issues = parsed.issues.map((issue) => ({
        path: issue.path?.map((item) => String(item.key)).join('.') || '(body)',
        message: issue.message,
      }))
      return errorResponse(
        c,
        'INVALID_REQUEST',
        `invalid approval answer: ${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')} (send {"decision": "approve"} or {"decision": "deny"})`,
        { issues },
      )
    }
    return approvalResponse(c, () =>
      app.approvals.answer(c.req.param('id'), parsed.output.decision === 'approve'),
    )
  })

  return routes
}
