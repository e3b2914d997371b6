import { Hono } from 'hono'
import * as v from 'valibot'
import type { App } from '../../app/app.js'
import { agentFailure, invalidBody, MAX_MESSAGE_CHARS } from '../agent-responses.js'
import { callSignal } from '../call-signal.js'
import { readJsonBody } from '../responses.js'

const sessionName = v.pipe(
  v.string('session must be a string'),
  v.regex(/^[A-Za-z0-9._:@-]{1,128}$/, 'session must be 1-128 letters, digits, or . _ : @ -'),
)
const chatBody = v.strictObject({
  session: v.optional(sessionName),
  message: v.pipe(
    v.string('message must be a string'),
    v.minLength(1, 'message must not be empty'),
    v.maxLength(MAX_MESSAGE_CHARS, `message must be at most ${MAX_MESSAGE_CHARS} characters`),
  ),
})

/**
 * Chat with the agent over HTTP, mounted at `/api/chat`: `POST /api/chat` (`{ session?, message }`
 * → the reply, in the persisted session `http:<session>`). Calls that need approval wait for it
 * (pending approvals, answered over the API, the CLI or the dashboard); the client going away
 * cancels the turn.
 */
export function chatRoutes(app: App, shutdown: AbortSignal | undefined): Hono {
  const routes = new Hono()

  routes.post('/', async (c) => {
    const body = await readJsonBody(c, app.config.server.bodyLimitBytes)
    if (!body.ok) return body.response
    const parsed = v.safeParse(chatBody, body.value)
    if (!parsed.success) return invalidBody(c, parsed.issues)
    const session = `http:${parsed.output.session ?? 'default'}`
    const link = callSignal(c.req.raw.signal, shutdown)
    try {
      const turn = await app.agent.chat(session, parsed.output.message, { signal: link.signal })
      return c.json({
        session,
        reply: turn.text,
        usage: turn.usage,
        steps: turn.steps,
        tool_calls: turn.toolCalls,
        denials: turn.denials,
      })
    } catch (error) {
      return agentFailure(c, error)
    } finally {
      link.dispose()
    }
  })

  return routes
}
