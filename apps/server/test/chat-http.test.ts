import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

let model: FakeOpenAI
let server: TestServer

beforeAll(async () => {
  model = await startFakeOpenAI()
  // No retries: a failing model answers at once (the runner's own tests cover Retry-After).
  server = await startTestServer((config) => ({ ...config, agent: { ...config.agent, maxRetries: 0 } }), {
    LANGO_MODEL_BASE_URL: model.baseUrl,
    LANGO_MODEL: 'test-model',
  })
})
afterAll(async () => {
  await server?.dispose()
  await model?.close()
})

/** Server-sent events' `data:` payloads, in order. */
function sseData(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).trim())
}

describe('POST /api/chat', () => {
  it('runs an agent turn that calls a tool, in the session http:<session>, and answers its reply', async () => {
    model.script(
      reply.toolCalls([
        {
          id: 'call_1',
          name: 'cron_add',
          arguments: {
            name: 'nightly-backup',
            schedule_type: 'cron',
            schedule: '0 3 * * *',
            prompt: 'Back up the project and say how it went.',
          },
        },
      ]),
      reply.text('Scheduled: every day at 03:00.'),
    )
    const response = await server.request('/api/chat', {
      json: { session: 'alice', message: 'every day at 3 am back up the project and tell me how it went' },
    })
    expect(response.status).toBe(200)
    const body = (await response.json()) as Json
    expect(body).toMatchObject({
      session: 'http:alice',
      reply: 'Scheduled: every day at 03:00.',
      tool_calls: 1,
    })
    expect(body.usage).toMatchObject({ inputTokens: expect.any(Number), outputTokens: expect.any(Number) })
    // The tool really ran: the job exists, created by the chat's session.
    const job = (await (await server.request('/api/cron/jobs/nightly-backup')).json()) as Json
    expect(job.job).toMatchObject({ name: 'nightly-backup', schedule: '0 3 * * *' })
    const second = model.chatBodies.at(-1)
    expect(second?.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_1' })
    // Issue 24, item 7: an http: session is no chat to deliver to and no default is configured, so
    // the tool result tells the model the results stay in the history (it must not promise a report).
    expect(job.job.deliver_to).toEqual([])
    const toolResult = String(second?.messages.at(-1)?.content)
    expect(toolResult).toContain('no delivery target')
    expect(toolResult).toContain('lango cron history')
    expect(toolResult).toContain('Do not promise to tell the user how it went')
  })

  it('tells the model the same of a job created from the OpenAI-compatible endpoint (issue 24, item 7)', async () => {
    model.script(
      reply.toolCalls([
        {
          id: 'call_2',
          name: 'cron_add',
          arguments: { name: 'openai-backup', schedule_type: 'every', schedule: '1h', prompt: 'Back up.' },
        },
      ]),
      reply.text('Scheduled hourly; see lango cron history for results.'),
    )
    const response = await server.request('/v1/chat/completions', {
      json: { model: 'lango', user: 'alice', messages: [{ role: 'user', content: 'back up hourly' }] },
    })
    expect(response.status).toBe(200)
    const toolMessage = model.chatBodies.at(-1)?.messages.at(-1)
    expect(toolMessage).toMatchObject({ role: 'tool', tool_call_id: 'call_2' })
    expect(String(toolMessage?.content)).toContain('They are kept only in the run history')
  })

  it('records how an approved call of a chat turn ended on its approval, as for a direct call (outside probe)', async () => {
    model.script(
      reply.toolCalls([{ id: 'call_exec', name: 'exec', arguments: { command: 'echo chat-approved' } }]),
      reply.text('Done.'),
    )
    const chat = server.request('/api/chat', { json: { session: 'outcome', message: 'run it' } })
    const pending = await until(async () => {
      const list = (await (await server.request('/api/approvals?status=pending')).json()) as Json
      return list.approvals.find((approval: Json) => approval.session_key === 'http:outcome')
    })
    expect(
      (await server.request(`/api/approvals/${pending.id}`, { json: { decision: 'approve' } })).status,
    ).toBe(200)
    expect((await chat).status).toBe(200)
    const decided = await until(async () => {
      const view = (await (await server.request(`/api/approvals/${pending.id}`)).json()) as Json
      return view.outcome === null ? undefined : view
    })
    expect(decided.outcome).toMatchObject({
      ok: true,
      result: { stdout: expect.stringContaining('chat-approved') },
    })
  })

  it('refuses a malformed body with the field named, and keeps serving', async () => {
    const response = await server.request('/api/chat', { json: { session: 'bad session!', message: 5 } })
    expect(response.status).toBe(400)
    const body = (await response.json()) as Json
    expect(body.error.code).toBe('INVALID_REQUEST')
    expect(body.error.issues.map((issue: Json) => issue.path)).toEqual(['session', 'message'])
    // In plain words, each after its field (an outside probe read valibot's `Invalid key: Expected …`).
    const unknown = await server.request('/api/chat', { json: { message: 'hi', sesion: 'x' } })
    expect(((await unknown.json()) as Json).error).toMatchObject({
      message: 'sesion: unknown field (not one this accepts)',
      issues: [{ path: 'sesion', message: 'unknown field (not one this accepts)' }],
    })
    const missing = await server.request('/api/chat', { json: {} })
    expect(((await missing.json()) as Json).error.message).toBe('message: is required')
    expect((await server.request('/healthz')).status).toBe(200)
  })

  it('answers 502 with the agent error when the model server fails, and keeps serving', async () => {
    model.script(reply.error(500, 'boom'))
    const response = await server.request('/api/chat', { json: { message: 'hello' } })
    expect(response.status).toBe(502)
    const body = (await response.json()) as Json
    expect(body.error.code).toBe('AGENT_MODEL_ERROR')
    expect(JSON.stringify(body)).not.toContain('stack')
    expect((await server.request('/healthz')).status).toBe(200)
  })
})

describe('OpenAI-compatible /v1', () => {
  it('lists the agent as a model', async () => {
    const body = (await (await server.request('/v1/models')).json()) as Json
    expect(body).toEqual({
      object: 'list',
      data: [expect.objectContaining({ id: 'lango', object: 'model' })],
    })
  })

  it('answers a chat completion from the conversation the client sends (stateless)', async () => {
    model.script(reply.text('Paris, as before.'))
    const response = await server.request('/v1/chat/completions', {
      json: {
        model: 'lango',
        messages: [
          { role: 'system', content: 'Answer briefly.' },
          { role: 'user', content: 'What is the capital of France?' },
          { role: 'assistant', content: 'Paris.' },
          { role: 'user', content: [{ type: 'text', text: 'And again?' }] },
        ],
      },
    })
    expect(response.status).toBe(200)
    const body = (await response.json()) as Json
    expect(body).toMatchObject({
      object: 'chat.completion',
      model: 'lango',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Paris, as before.' }, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) },
    })
    expect(body.id).toMatch(/^chatcmpl-/)
    const sent = model.chatBodies.at(-1)?.messages.map((message) => [message.role, message.content])
    expect(sent).toEqual(
      expect.arrayContaining([
        ['user', 'What is the capital of France?'],
        ['assistant', 'Paris.'],
        ['user', 'And again?'],
      ]),
    )
  })

  it('streams server-sent chunks ending with [DONE] when stream is true', async () => {
    model.script(reply.text('Streamed answer.'))
    const response = await server.request('/v1/chat/completions', {
      json: { model: 'lango', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toContain('text/event-stream')
    const events = sseData(await response.text())
    expect(events.at(-1)).toBe('[DONE]')
    const chunks = events.slice(0, -1).map((data) => JSON.parse(data) as Json)
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk')).toBe(true)
    expect(chunks.map((chunk) => chunk.choices[0].delta.content ?? '').join('')).toBe('Streamed answer.')
    expect(chunks.at(-1)?.choices[0].finish_reason).toBe('stop')
  })

  it('refuses a conversation whose last message is not the user’s', async () => {
    const response = await server.request('/v1/chat/completions', {
      json: { messages: [{ role: 'assistant', content: 'hi' }] },
    })
    expect(response.status).toBe(400)
    // OpenAI's error shape, as every /v1 error (issue 21).
    expect(((await response.json()) as Json).error).toEqual({
      message: 'the last message must be the user’s',
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_request',
    })
  })
})

describe('without a model', () => {
  it('answers a streamed /v1 request with 503 in OpenAI’s shape, not a 200 stream holding the error', async () => {
    const bare = await startTestServer()
    try {
      const response = await bare.request('/v1/chat/completions', {
        json: { model: 'lango', stream: true, messages: [{ role: 'user', content: 'hello' }] },
      })
      expect(response.status).toBe(503)
      expect(response.headers.get('content-type')).toContain('application/json')
      expect(((await response.json()) as Json).error).toMatchObject({
        type: 'server_error',
        code: 'agent_no_model',
        message: expect.stringContaining('LANGO_MODEL'),
      })
    } finally {
      await bare.dispose()
    }
  })

  it('answers 503 AGENT_NO_MODEL with what to configure', async () => {
    const bare = await startTestServer()
    try {
      const response = await bare.request('/api/chat', { json: { message: 'hello' } })
      expect(response.status).toBe(503)
      const body = (await response.json()) as Json
      expect(body.error).toMatchObject({
        code: 'AGENT_NO_MODEL',
        message: expect.stringContaining('LANGO_MODEL'),
      })
    } finally {
      await bare.dispose()
    }
  })
})
