import { createHash, randomUUID } from 'node:crypto'
import type { ModelMessage } from 'ai'
import { type Context, Hono, type MiddlewareHandler } from 'hono'
import { streamSSE } from 'hono/streaming'
import * as v from 'valibot'
import type { AgentTurnResult } from '../../agent/agent-runner.js'
import { AgentError } from '../../agent/errors.js'
import { displayUrl } from '../../agent/model-url.js'
import type { AgentTurnEvent } from '../../agent/stream-turn.js'
import type { App } from '../../app/app.js'
import { agentFailure, invalidBody, MAX_MESSAGE_CHARS } from '../agent-responses.js'
import { callSignal } from '../call-signal.js'
import { errorStatus } from '../error-status.js'
import { errorResponse, readJsonBody, reshapeErrors } from '../responses.js'

/** The name OpenAI-compatible clients pick: the agent with its tools, whatever model it runs on. */
const AGENT_MODEL_ID = 'lango'

/** Messages of a stateless conversation at most (the newest are kept by the runner's own bound). */
const MAX_HISTORY = 500

const textPart = v.object({ type: v.literal('text'), text: v.string() })
const openAiMessage = v.object({
  role: v.picklist(
    ['system', 'developer', 'user', 'assistant', 'tool', 'function'],
    'role must be one of system, developer, user, assistant, tool or function',
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
  stream: v.optional(v.boolean('stream must be true or false')),
  // One reply per request: more choices are refused (below) rather than silently answered with one.
  n: v.optional(v.nullable(v.number('n must be a number'))),
  // OpenAI accepts any string here; openAiSessionKey makes it a safe session key.
  user: v.optional(v.string('user must be a string')),
})

/**
 * Request fields that hand the model the client's own tools. The agent runs with the server's
 * tools only, and the client could not run calls to its own anyway: such a request is refused
 * rather than answered as if they had been offered. An empty list (or `auto`/`none`) offers nothing
 * and is accepted, as some clients always send one.
 */
const CLIENT_TOOL_FIELDS = ['tools', 'functions', 'tool_choice', 'function_call'] as const

/** The first field of `body` that offers the model client-side tools, if any. */
function clientToolField(body: Readonly<Record<string, unknown>>): string | undefined {
  return CLIENT_TOOL_FIELDS.find((field) => {
    const value = body[field]
    if (value === undefined || value === null) return false
    if (Array.isArray(value)) return value.length > 0
    return value !== 'auto' && value !== 'none'
  })
}

/**
 * The lines a streamed reply shows for a tool call, each its own Markdown paragraph: when it starts
 * (it may then wait for an approval) and how it ended.
 */
const TOOL_LINES = {
  start: (tool: string) => `> 🔧 \`${tool}\` running…`,
  ok: (tool: string) => `> ✅ \`${tool}\` done`,
  failed: (tool: string) => `> ❌ \`${tool}\` failed`,
} as const

/** {@link TOOL_LINES} as a client sends them back in the assistant's history. */
const TOOL_LINE = /^> (?:🔧|✅|❌) `[A-Za-z0-9_.-]{1,128}` (?:running…|done|failed)[ \t]*$/gmu

/** An assistant message from the history without the tool lines a streamed reply had in it. */
function withoutToolLines(text: string): string {
  return text
    .replace(TOOL_LINE, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}

/** OpenAI's `finish_reason` for the AI SDK's reason the model's last call ended. */
function finishReasonOf(result: AgentTurnResult): 'stop' | 'length' | 'content_filter' {
  if (result.finishReason === 'length') return 'length'
  if (result.finishReason === 'content-filter') return 'content_filter'
  return 'stop'
}

/** OpenAI's error `type` for a status: its SDKs and chat front ends show and branch on it. */
function openAiErrorType(status: number): string {
  if (status === 401) return 'authentication_error'
  if (status === 403) return 'permission_error'
  if (status === 404) return 'invalid_request_error'
  if (status === 429) return 'rate_limit_error'
  return status >= 500 ? 'server_error' : 'invalid_request_error'
}

/**
 * Every error under `/v1` in OpenAI's shape, `{ error: { message, type, param, code } }`, whichever
 * layer answered (the Host, token and Origin guards, body checks, readiness, an unknown route, the
 * route itself), so OpenAI clients read each as they read OpenAI's own (issue 21: an outside probe
 * got the API's `{ code, message, issues }`). `code` is the API's code in lower case, `param` the
 * first field an `issues` list names. The model server's address never reaches the client: it is
 * taken out of an agent error's message (`AGENT_*`), the only kind that can name it.
 */
export function openAiErrors(app: App): MiddlewareHandler {
  const hide = modelAddressHider(app)
  return reshapeErrors((error, status) => {
    // Only a turn's failure can name the model server; the guards' own words name this server.
    const message = error.code.startsWith('AGENT_') ? hide(error.message) : error.message
    const param = error.issues?.find((issue) => typeof issue.path === 'string' && issue.path !== '')?.path
    return openAiErrorBody(error.code, message, status, param)
  })
}

/** An error in OpenAI's shape: `type` from the status, the API's `code` in lower case. */
export function openAiErrorBody(code: string, message: string, status: number, param?: string) {
  return { error: { message, type: openAiErrorType(status), param: param ?? null, code: code.toLowerCase() } }
}

/**
 * Takes the model server's address out of a message: `the model server http://10.0.0.5:8080/v1
 * answered …` reads `the model server answered …`, a bare address `the model server`. The network's
 * own words for a failed connection name it too (`connect ECONNREFUSED 10.0.0.5:8080`, `getaddrinfo
 * ENOTFOUND model.internal`): its host name and any IP address with its port read `[address]`.
 */
function modelAddressHider(app: App): (message: string) => string {
  const base = app.config.model.baseUrl
  if (base === undefined) return (message) => message
  const parsed = URL.parse(base)
  const addresses = [...new Set([displayUrl(base), base.replace(/\/+$/, ''), parsed?.origin ?? base])]
    .filter((address) => address !== '')
    .sort((a, b) => b.length - a.length)
  const names = [...new Set([parsed?.host ?? '', parsed?.hostname.replace(/^\[|\]$/g, '') ?? ''])]
    .filter((name) => name !== '')
    .sort((a, b) => b.length - a.length)
    .map((name) => new RegExp(`(?<![\\w.-])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`, 'gi'))
  return (message) => {
    let text = message
    for (const address of addresses) text = text.replaceAll(`the model server ${address}`, 'the model server')
    // `(model server <address>)`: the parenthesis names the server on its own.
    for (const address of addresses) text = text.replaceAll(`(model server ${address})`, '(the model server)')
    for (const address of addresses) text = text.replaceAll(address, 'the model server')
    for (const name of names) text = text.replace(name, '[address]')
    return text
      .replace(/(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?(?![\w.])/g, '[address]')
      .replace(/\[[0-9a-f:.]*:[0-9a-f:.]*\](?::\d{1,5})?/gi, '[address]')
  }
}

/**
 * A failed turn's answer, with `x-should-retry: false`: OpenAI's SDKs send a request again on a
 * 429 or 5xx unless told not to, and a turn is not a read: it may have run tools before it failed
 * (an outside probe's background task was submitted three times), the model server's calls were
 * already retried here, and a spent budget or a missing model fails again.
 */
function turnFailure(c: Context, error: unknown): Response {
  c.header('x-should-retry', 'false')
  return agentFailure(c, error)
}

/** An `invalid_request_error` in OpenAI's own shape (message, type, param, code), which its SDKs read. */
function invalidRequest(
  c: Context,
  status: 'INVALID_REQUEST' | 'NOT_FOUND',
  message: string,
  param: string,
  code: string,
): Response {
  return c.json({ error: { message, type: 'invalid_request_error', param, code } }, errorStatus(status))
}

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

/** The kinds of an OpenAI message's content parts that are not text (`image_url`, `input_audio`, `file`), each once. */
function nonTextKinds(content: v.InferOutput<typeof openAiMessage>['content']): string[] {
  if (content === null || content === undefined || typeof content === 'string') return []
  return [...new Set(content.filter((part) => part.type !== 'text').map((part) => part.type.slice(0, 40)))]
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
 * Characters of a streamed reply that may wait for a client that stopped reading (its socket
 * buffers full) before the turn is cancelled and the stream closed: 1 MiB of chunks.
 */
const MAX_QUEUED_STREAM_CHARS = 1 << 20

/**
 * The OpenAI-compatible API, mounted at `/v1`: `GET /v1/models`, `GET /v1/models/{id}` and
 * `POST /v1/chat/completions` (stateless: the client sends the conversation, its `user` names the
 * session), so chat front ends such as Open WebUI talk to the agent and its tools. `stream: true`
 * streams the turn as server-sent chunks while it runs: the model's text deltas as it writes them,
 * and a {@link TOOL_LINES} line in the content when a tool call starts and ends. A request's own
 * tools are refused ({@link CLIENT_TOOL_FIELDS}). Calls that need approval wait for it; the client
 * going away cancels the turn.
 */
export function openAiRoutes(app: App, shutdown: AbortSignal | undefined): Hono {
  const hideModelAddress = modelAddressHider(app)
  const routes = new Hono()

  routes.get('/models', (c) => c.json({ object: 'list', data: [AGENT_MODEL] }))
  // An id may hold slashes (`org/model`), as other OpenAI-compatible servers' ids do.
  routes.get('/models/:id{.+}', (c) => {
    if (c.req.param('id') === AGENT_MODEL_ID) return c.json(AGENT_MODEL)
    return invalidRequest(
      c,
      'NOT_FOUND',
      `no model with that id: this server offers one model, "${AGENT_MODEL_ID}"`,
      'model',
      'model_not_found',
    )
  })

  routes.post('/chat/completions', async (c) => {
    const body = await readJsonBody(c, app.config.server.bodyLimitBytes)
    if (!body.ok) return body.response
    const parsed = v.safeParse(completionBody, body.value)
    if (!parsed.success) return invalidBody(c, parsed.issues)
    const { messages, stream, user } = parsed.output
    const toolField = clientToolField(parsed.output)
    if (toolField !== undefined) {
      return invalidRequest(
        c,
        'INVALID_REQUEST',
        `\`${toolField}\` is not supported: this endpoint is the Lango agent, which calls its own tools (the server's exec, cron, background, workflow and secrets tools) and cannot call a client's. Send the request without \`${toolField}\` (in Open WebUI, set the model's Function Calling to Default, not Native).`,
        toolField,
        'unsupported_parameter',
      )
    }
    // Structured output asked for (a JSON schema, or JSON only) cannot be promised: the agent's
    // reply is its own text. Refused, as client tools are, rather than answered as if it were met.
    const format = (parsed.output as { response_format?: unknown }).response_format
    const formatType =
      typeof format === 'object' && format !== null ? (format as { type?: unknown }).type : undefined
    if (format !== undefined && format !== null && formatType !== 'text')
      return invalidRequest(
        c,
        'INVALID_REQUEST',
        '`response_format` other than `{"type": "text"}` is not supported: this endpoint is the Lango agent, whose reply is its own text, never held to a JSON schema. Ask for the format in the message instead, or leave `response_format` out.',
        'response_format',
        'unsupported_parameter',
      )
    const { n } = parsed.output
    if (n !== undefined && n !== null && n !== 1)
      return invalidRequest(
        c,
        'INVALID_REQUEST',
        '`n` must be 1: this endpoint is the Lango agent, which gives one reply per request',
        'n',
        'unsupported_parameter',
      )
    const last = messages.at(-1)
    if (last?.role !== 'user') {
      return errorResponse(c, 'INVALID_REQUEST', 'the last message must be the user’s')
    }
    const unread = nonTextKinds(last.content)
    if (unread.length > 0)
      return invalidRequest(
        c,
        'INVALID_REQUEST',
        `the last message holds ${unread.join(', ')} content, which this endpoint cannot read: the Lango agent reads text only. Send the request as text (describe or paste what the ${unread.length === 1 ? 'part shows' : 'parts show'}).`,
        `messages[${messages.length - 1}].content`,
        'unsupported_content',
      )
    const message = textOf(last.content)
    if (message.trim() === '') return errorResponse(c, 'INVALID_REQUEST', 'the last message has no text')
    if (message.length > MAX_MESSAGE_CHARS) {
      return errorResponse(c, 'INVALID_REQUEST', `a message must be at most ${MAX_MESSAGE_CHARS} characters`)
    }
    // Earlier turns as text: the client's own tool calls, if any, are not ours to replay.
    const history: ModelMessage[] = messages.slice(0, -1).flatMap((entry): ModelMessage[] => {
      // An earlier image or file is named, not dropped without a trace: the model knows it was there.
      const skipped = nonTextKinds(entry.content)
      const text = [textOf(entry.content), ...skipped.map((kind) => `[${kind} content not shown]`)]
        .filter((part) => part !== '')
        .join('\n')
      if (text === '') return []
      if (entry.role === 'user') return [{ role: 'user', content: text }]
      if (entry.role === 'assistant') {
        const reply = withoutToolLines(text)
        return reply === '' ? [] : [{ role: 'assistant', content: reply }]
      }
      if (entry.role === 'system' || entry.role === 'developer') return [{ role: 'system', content: text }]
      return []
    })
    const session = openAiSessionKey(user)
    const id = `chatcmpl-${randomUUID()}`
    const created = Math.floor(Date.now() / 1000)
    const link = callSignal(c.req.raw.signal, shutdown)
    const usageOf = (result: AgentTurnResult) => ({
      prompt_tokens: result.usage.inputTokens,
      completion_tokens: result.usage.outputTokens,
      total_tokens: result.usage.totalTokens,
    })
    if (stream !== true) {
      try {
        const result = await app.agent.chat(session, message, { signal: link.signal, history })
        return c.json({
          id,
          object: 'chat.completion',
          created,
          model: AGENT_MODEL_ID,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: result.text },
              finish_reason: finishReasonOf(result),
            },
          ],
          usage: usageOf(result),
        })
      } catch (error) {
        return turnFailure(c, error)
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
    // The response's status waits for the turn's first event: a turn that fails before it (a budget
    // already spent, the model server refusing its first call, a busy session) answers with the
    // error's own status, 429 or 502, as OpenAI does, instead of a 200 whose stream holds the error
    // (issue 21). A reply the model has begun streams from there; a turn that ends without an event
    // is streamed whole.
    const stalled = new AbortController()
    const turnSignal = AbortSignal.any([link.signal, stalled.signal])
    /** Events before the stream opened, in order; then each is written as it comes. */
    const early: AgentTurnEvent[] = []
    let forward: ((event: AgentTurnEvent) => void) | undefined
    let firstEvent: () => void = () => undefined
    const begun = new Promise<void>((resolve) => {
      firstEvent = resolve
    })
    const turn = app.agent.chat(session, message, {
      signal: turnSignal,
      history,
      onEvent(event) {
        if (forward !== undefined) return forward(event)
        early.push(event)
        firstEvent()
      },
    })
    const settled = turn.then(
      (result) => ({ ok: true as const, result }),
      (error: unknown) => ({ ok: false as const, error }),
    )
    const before = await Promise.race([begun.then(() => undefined), settled])
    if (before !== undefined && !before.ok && early.length === 0) {
      link.dispose()
      return turnFailure(c, before.error)
    }
    return streamSSE(c, async (sse) => {
      // The turn reports synchronously; its chunks are written in order, one after another. A
      // write that fails (the client went away, which also aborts the turn) ends the writing. A
      // client that keeps the connection but stops reading lets chunks pile up: past
      // MAX_QUEUED_STREAM_CHARS waiting, the turn is cancelled and the stream closed.
      const gaveUp = new Promise<void>((resolve) =>
        stalled.signal.addEventListener('abort', () => resolve(), { once: true }),
      )
      let writing = Promise.resolve()
      let broken = false
      let queued = 0
      const send = (data: string): void => {
        if (broken) return
        queued += data.length
        if (queued > MAX_QUEUED_STREAM_CHARS) {
          broken = true
          stalled.abort(new DOMException('the client stopped reading the stream', 'AbortError'))
          sse.abort()
          return
        }
        writing = writing.then(async () => {
          if (broken) return
          await sse.writeSSE({ data }).catch(() => {
            broken = true
          })
          queued -= data.length
        })
      }
      /** The writes in flight, or nothing more once the client stopped reading. */
      const written = () => Promise.race([writing, gaveUp])
      // Whether the last content ended a paragraph, so a tool line starts on its own.
      let atParagraph = true
      const content = (text: string): void => {
        send(chunk({ content: text }, null))
        atParagraph = text.endsWith('\n\n')
      }
      const toolLine = (line: string): void => content(`${atParagraph ? '' : '\n\n'}${line}\n\n`)
      const onEvent = (event: AgentTurnEvent): void => {
        if (event.type === 'text-delta') content(event.text)
        else if (event.type === 'tool-call') toolLine(TOOL_LINES.start(event.toolName))
        else toolLine((event.ok ? TOOL_LINES.ok : TOOL_LINES.failed)(event.toolName))
      }
      try {
        send(chunk({ role: 'assistant', content: '' }, null))
        for (const event of early.splice(0)) onEvent(event)
        forward = onEvent
        const outcome = await settled
        if (!outcome.ok) throw outcome.error
        send(chunk({}, finishReasonOf(outcome.result), { usage: usageOf(outcome.result) }))
        await written()
      } catch (error) {
        await written()
        if (stalled.signal.aborted) return
        const failure = AgentError.is(error)
          ? { code: error.code, message: hideModelAddress(error.message) }
          : turnSignal.aborted
            ? { code: 'CANCELLED', message: 'the turn was cancelled' }
            : { code: 'INTERNAL', message: 'the turn failed (the server log has the reason)' }
        if (!AgentError.is(error) && !turnSignal.aborted)
          app.logger.error('chat completion stream failed', {
            error: error instanceof Error ? error : new Error(String(error)),
          })
        await sse.writeSSE({
          data: JSON.stringify({
            error: {
              message: failure.message,
              type: 'server_error',
              param: null,
              code: failure.code.toLowerCase(),
            },
          }),
        })
      } finally {
        link.dispose()
        if (!stalled.signal.aborted) await sse.writeSSE({ data: '[DONE]' })
      }
    })
  })

  return routes
}
