import { type Context, Hono } from 'hono'
import * as v from 'valibot'
import type { App } from '../../app/app.js'
import { APPROVAL_STATUSES, type ApprovalCursor, type ApprovalStatus } from '../../approvals.js'
import { ServerError } from '../../errors.js'
import { errorResponse, knownQuery, readJsonBody } from '../responses.js'

/** `status` of `GET /api/approvals`: a status, or `decided` (anything but pending). */
const LIST_STATUSES: readonly string[] = [...APPROVAL_STATUSES, 'decided']

/** A `next_cursor` (`<created_at>:<id>`) read back; null when it is not one. */
function readCursor(text: string): ApprovalCursor | null {
  const colon = text.indexOf(':')
  if (colon <= 0 || colon === text.length - 1 || text.length > 300) return null
  const createdAt = Number(text.slice(0, colon))
  if (!Number.isSafeInteger(createdAt) || createdAt < 0) return null
  return { createdAt, id: text.slice(colon + 1) }
}

const decisionSchema = v.strictObject({
  decision: v.picklist(['approve', 'deny'], 'decision must be approve or deny'),
})

/** The approval `read` returns, or 404 `SERVER_APPROVAL_NOT_FOUND`. */
async function approvalResponse(c: Context, read: () => Promise<unknown>): Promise<Response> {
  try {
    return c.json(await read(), 200)
  } catch (error) {
    return approvalError(c, error)
  }
}

/** 404 `SERVER_APPROVAL_NOT_FOUND` for an unknown id; anything else is rethrown. */
function approvalError(c: Context, error: unknown): Response {
  if (error instanceof ServerError && error.code === 'SERVER_APPROVAL_NOT_FOUND') {
    return errorResponse(c, error.code, error.message, error.data === undefined ? {} : { data: error.data })
  }
  throw error
}

/**
 * Approvals of every process on the database (a `lango mcp` on the same home included), mounted
 * at `/api/approvals`: `GET /api/approvals` (`status`, `decided` too; `limit`; `cursor`),
 * `GET /api/approvals/:id`, `POST /api/approvals/:id`
 * (`{"decision": "approve" | "deny"}`).
 */
export function approvalRoutes(app: App): Hono {
  const routes = new Hono()

  routes.get('/', knownQuery(['status', 'limit', 'cursor']), async (c) => {
    const status = c.req.query('status') || undefined
    const limitText = c.req.query('limit') || undefined
    const cursorText = c.req.query('cursor') || undefined
    const issues: { path: string; message: string }[] = []
    if (status !== undefined && !LIST_STATUSES.includes(status))
      issues.push({ path: 'status', message: `status must be one of ${LIST_STATUSES.join(', ')}` })
    const limit = limitText === undefined ? undefined : Number(limitText)
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 200))
      issues.push({ path: 'limit', message: 'limit must be a whole number from 1 to 200' })
    const before = cursorText === undefined ? undefined : readCursor(cursorText)
    if (before === null)
      issues.push({ path: 'cursor', message: 'cursor must be the next_cursor of an earlier page' })
    else if (before !== undefined && status === undefined)
      issues.push({ path: 'cursor', message: 'cursor needs a status (one order per list)' })
    if (issues.length > 0) {
      const message = issues.map((issue) => issue.message).join('; ')
      return errorResponse(c, 'INVALID_REQUEST', message, { issues })
    }
    const { approvals: page, next: after } = await app.approvals.page(
      {
        ...(limit === undefined ? {} : { limit }),
        ...(status === undefined ? {} : { status: status as ApprovalStatus | 'decided' }),
        ...(before === undefined || before === null ? {} : { before }),
      },
      { signal: c.req.raw.signal },
    )
    const next = after === null ? null : `${after.createdAt}:${after.id}`
    return c.json({ approvals: page, count: page.length, next_cursor: next })
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
    const id = c.req.param('id')
    try {
      const { approval, decided } = await app.approvals.decide(id, parsed.output.decision === 'approve')
      if (decided) return c.json(approval, 200)
      // An answer that came too late must not read as a success: the approval stands as it was.
      const by = approval.decided_by === null ? '' : ` by ${approval.decided_by}`
      return errorResponse(
        c,
        'SERVER_APPROVAL_DECIDED',
        `approval ${approval.id} was already ${approval.status}${by}: this answer (${parsed.output.decision}) changed nothing`,
        { data: { id: approval.id, status: approval.status, decided_by: approval.decided_by, approval } },
      )
    } catch (error) {
      return approvalError(c, error)
    }
  })

  return routes
}
