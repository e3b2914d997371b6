import { createHash, randomUUID } from 'node:crypto'
import type { ModelMessage } from 'ai'
import { Hono } from 'hono'
import { streamSSE } from 'hono/streaming'
import * as v from 'valibot'
import type { AgentTurnResult } from '../../agent/agent-runner.js'
import { AgentError } from '../../agent/errors.js'
import type { App } from '../../app/app.js'
import { agentFailure, invalidBody, MAX_MESSAGE_CHARS } from '../agent-responses.js'
import { callSignal } from '../call-signal.js'
import { errorStatus } from '../error-status.js'
import { errorResponse, readJsonBody } from '../responses.js'

/** The name OpenAI-compatible clients pick: the agent with its tools, whatever model it runs on. */
const AGENT_MODEL_ID = 'lango'

/** Messages of a stateless conversation at most (the newest are kept by the runner's own bound). */
const MAX_HISTORY = 500

const textPart = v.object({ type: v.literal('text'), text: v.string() })
const openAiMessage = v.object({
  role: v.picklist(
    ['system', 'developer', 'user', 'assistant', 'tool'],
    'role must be system, user or assistant',
  ),
  content: v.nullish(
    v.union([v.string(), v.array(v.union([textPart, v.looseObject({ type: v.string() })]))]),
  ),
})
const completionBody = v.looseObject({
  model: v.optional(v.string()),
  messages: v.pipe(
    v.array(openAiMessage, 'messages must be an array of { role, content }'),
    v.minLength(1, 'messages must not be empty'),
    v.maxLength(MAX_HISTORY, `messages must be at most ${MAX_HISTORY}`),
  ),
  stream: v.optional(v.boolean()),
  // OpenAI accepts any string here; openAiSessionKey makes it a safe session key.
  user: v.optional(v.string('user must be a string')),
})

/** The one model `/v1/models` lists, in OpenAI's shape. */
const AGENT_MODEL = { id: AGENT_MODEL_ID, object: 'model', created: 0, owned_by: 'lango' } as const

/** An OpenAI `user` used in the session key as it is: short, and only characters with no meaning there. */
const PLAIN_USER = /^[A-Za-z0-9._@-]{1,64}$/

/**
 * The session of an OpenAI-compatible request's `user` (any string, as OpenAI accepts):
 * `openai:<user>` for a plain one (1-64 letters, digits, `.` `_` `@` `-`), `openai:~<SHA-256,
 * base64url>` for any other (spaces, `:`, other scripts, an empty or a long string), and
 * `openai:anonymous` without one. `~` never occurs in a plain user, so two users never share a
 * session; and whatever the string says (`cron:nightly`, `bg:…`), the key is an `openai:` chat's,
 * never one of the reserved kinds.
 */
function openAiSessionKey(user: string | undefined): string {
  if (user === undefined) return 'openai:anonymous'
  if (PLAIN_USER.test(user)) return `openai:${user}`
  return `openai:~${createHash('sha256').update(user, 'utf8').digest('base64url')}`
}

/** The text of an OpenAI message's content (string, or its text parts joined). */
function textOf(content: v.InferOutput<typeof openAiMessage>['content']): string {
  if (content === null || content === undefined) return ''
  if (typeof content === 'string') return content
  return content
    .filter((part): part is { type: 'text'; text: string } => part.type === 'text' && 'text' in part)
    .map((part) => part.text)
    .join('\n')
}

/**
 * The OpenAI-compatible API, mounted at `/v1`: `GET /v1/models`, `GET /v1/models/{id}` and
 * `POST /v1/chat/completions` (stateless: the client sends the conversation, its `user` names the
 * session; `stream: true` answers server-sent events), so chat front ends such as Open WebUI talk
 * to the agent and its tools. Calls that need approval wait for it; the client going away cancels
 * the turn.
 */
export function openAiRoutes(app: App, shutdown: AbortSignal | undefined): Hono {
  const routes = new Hono()

  routes.get('/models', (c) => c.json({ object: 'list', data: [AGENT_MODEL] }))
  // An id may hold slashes (`org/model`), as other OpenAI-compatible servers' ids do.
  routes.get('/models/:id{.+}', (c) => {
    if (c.req.param('id') === AGENT_MODEL_ID) return c.json(AGENT_MODEL)
    // OpenAI's own error shape (message, type, param, code), which its SDKs read.
    return c.json(
      {
        error: {
          message: `no model with that id: this server offers one model, "${AGENT_MODEL_ID}"`,
          type: 'invalid_request_error',
          param: 'model',
          code: 'model_not_found',
        },
      },
      errorStatus('NOT_FOUND'),
    )
  })

  routes.post('/chat/completions', async (c) => {
    const body = await readJsonBody(c, app.config.server.bodyLimitBytes)
    if (!body.ok) return body.response
    const parsed = v.safeParse(completionBody, body.value)
    if (!parsed.success) return invalidBody(c, parsed.issues)
    const { messages, stream, user } = parsed.output
    const last = messages.at(-1)
    if (last?.role !== 'user') {
      return errorResponse(c, 'INVALID_REQUEST', 'the last message must be the user’s')
    }
    const message = textOf(last.content)
    if (message.trim() === '') return errorResponse(c, 'INVALID_REQUEST', 'the last message has no text')
    if (message.length > MAX_MESSAGE_CHARS) {
      return errorResponse(c, 'INVALID_REQUEST', `a message must be at most ${MAX_MESSAGE_CHARS} characters`)
    }
    // Earlier turns as text: the client's own tool calls, if any, are not ours to replay.
    const history: ModelMessage[] = messages.slice(0, -1).flatMap((entry): ModelMessage[] => {
      const text = textOf(entry.content)
      if (text === '') return []
      if (entry.role === 'user') return [{ role: 'user', content: text }]
      if (entry.role === 'assistant') return [{ role: 'assistant', content: text }]
      if (entry.role === 'system' || entry.role === 'developer') return [{ role: 'system', content: text }]
      return []
    })
    const session = openAiSessionKey(user)
    const id = `chatcmpl-${randomUUID()}`
    const created = Math.floor(Date.now() / 1000)
    const link = callSignal(c.req.raw.signal, shutdown)
    const turn = app.agent.chat(session, message, { signal: link.signal, history })
    const usageOf = (result: AgentTurnResult) => ({
      prompt_tokens: result.usage.inputTokens,
      completion_tokens: result.usage.outputTokens,
      total_tokens: result.usage.totalTokens,
    })
    if (stream !== true) {
      try {
        const result = await turn
        return c.json({
          id,
          object: 'chat.completion',
          created,
          model: AGENT_MODEL_ID,
          choices: [
            { index: 0, message: { role: 'assistant', content: result.text }, finish_reason: 'stop' },
          ],
          usage: usageOf(result),
        })
      } catch (error) {
        return agentFailure(c, error)
      } finally {
        link.dispose()
      }
    }
    const chunk = (
      delta: Record<string, unknown>,
      finish: string | null,
      extra: Record<string, unknown> = {},
    ) =>
      JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model: AGENT_MODEL_ID,
        choices: [{ index: 0, delta, finish_reason: finish }],
        ...extra,
      })
    return streamSSE(c, async (sse) => {
      try {
        await sse.writeSSE({ data: chunk({ role: 'assistant', content: '' }, null) })
        // The reply is sent whole once the turn (its tool calls included) has ended.
        const result = await turn
        await sse.writeSSE({ data: chunk({ content: result.text }, null) })
        await sse.writeSSE({ data: chunk({}, 'stop', { usage: usageOf(result) }) })
      } catch (error) {
        const failure = AgentError.is(error)
          ? { code: error.code, message: error.message }
          : { code: 'CANCELLED', message: 'the turn was cancelled' }
        await sse.writeSSE({ data: JSON.stringify({ error: { ...failure, type: 'server_error' } }) })
      } finally {
        link.dispose()
        await sse.writeSSE({ data: '[DONE]' })
      }
    })
  })

  return routes
}
