import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { waitFor } from '@lango/vitest-config/wait-for'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { until } from './fixtures/http-server.js'
import { CLI } from './fixtures/lango-serve.js'

// Issue 21, item 15: the OpenAI-compatible endpoint as the official `openai` SDK sees it, against
// a real `lango serve --json` (built dist) whose stderr must stay JSON lines.

let home: string
let model: FakeOpenAI
let server: ChildProcess | undefined
let url: string
let client: OpenAI
const stderrLines: string[] = []

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error('build @lango/server before running this test')
  home = await mkdtemp(join(tmpdir(), 'lango-openai-sdk-'))
  model = await startFakeOpenAI()
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--json'], {
    env: {
      ...process.env,
      LANGO_HOME: home,
      LANGO_LOG_LEVEL: 'info',
      LANGO_MODEL_BASE_URL: model.baseUrl,
      LANGO_MODEL: 'test-model',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  server = child
  let pending = ''
  child.stderr?.setEncoding('utf8')
  child.stderr?.on('data', (chunk: string) => {
    pending += chunk
    const lines = pending.split('\n')
    pending = lines.pop() ?? ''
    stderrLines.push(...lines.filter((line) => line !== ''))
  })
  url = await new Promise<string>((resolve, reject) => {
    let stdout = ''
    child.stdout?.setEncoding('utf8')
    child.stdout?.on('data', (chunk: string) => {
      stdout += chunk
      try {
        resolve((JSON.parse(stdout) as { url: string }).url)
      } catch {
        // Not the whole document yet.
      }
    })
    child.once('exit', (code) => reject(new Error(`lango serve exited ${code}: ${stderrLines.join('\n')}`)))
  })
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused-on-loopback', maxRetries: 0 })
})

afterAll(async () => {
  if (server !== undefined && server.exitCode === null) {
    const exited = new Promise((resolve) => server?.once('exit', resolve))
    server.kill('SIGTERM')
    await exited
  }
  await model?.close()
  if (home !== undefined) await rm(home, { recursive: true, force: true })
})

describe('GET /v1/models/{id}', () => {
  it('retrieves the agent model in OpenAI’s shape, as listed', async () => {
    const listed = await client.models.list()
    expect(listed.data.map((entry) => entry.id)).toEqual(['lango'])
    const retrieved = await client.models.retrieve('lango')
    expect({ ...retrieved }).toEqual({ id: 'lango', object: 'model', created: 0, owned_by: 'lango' })
  })

  it('answers an unknown id 404 in OpenAI’s error shape, which the SDK reads', async () => {
    for (const id of ['gpt-4o', 'org/some-model']) {
      const error = await client.models.retrieve(id).catch((caught: unknown) => caught)
      expect(error, id).toBeInstanceOf(OpenAI.NotFoundError)
      expect(error, id).toMatchObject({
        status: 404,
        code: 'model_not_found',
        type: 'invalid_request_error',
        param: 'model',
        error: { message: expect.stringContaining('"lango"') },
      })
    }
  })
})

describe('POST /v1/chat/completions', () => {
  it('tells the SDK not to send a failed turn again (its tools ran): one turn, however many retries it allows', async () => {
    // An outside probe: with the SDK's default maxRetries (2) a turn that ran a tool and then
    // failed was sent three times, and the tool ran three times.
    const retrying = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused-on-loopback', maxRetries: 2 })
    model.script(
      reply.toolCalls([{ id: 'call_once', name: 'cron_list', arguments: {} }]),
      reply.error(500, 'boom'),
      reply.error(500, 'boom'),
      reply.error(500, 'boom'),
    )
    const before = model.chatBodies.length
    const failed = await retrying.chat.completions
      .create({ model: 'lango', messages: [{ role: 'user', content: 'list and fail' }] })
      .catch((caught: unknown) => caught)
    expect(failed).toBeInstanceOf(OpenAI.APIError)
    expect((failed as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe('false')
    // One turn: the tool call, then the model server's three failed tries (its own retries).
    expect(model.chatBodies.length - before).toBe(4)
  })

  it('passes a system message to the model and keeps stderr JSON lines (no plain-text AI SDK warning)', async () => {
    model.script(reply.text('Bonjour.'))
    const completion = await client.chat.completions.create({
      model: 'lango',
      messages: [
        { role: 'system', content: 'Answer in French.' },
        { role: 'user', content: 'Hello?' },
      ],
    })
    expect(completion.choices[0]?.message.content).toBe('Bonjour.')
    const sent = model.chatBodies.at(-1)?.messages ?? []
    expect(sent).toContainEqual(expect.objectContaining({ role: 'system', content: 'Answer in French.' }))
    // The first system message is the server's own prompt; the client's comes after it.
    expect(sent[0]?.content).not.toBe('Answer in French.')
    // A request the server logs about, so stderr has lines written after the turn.
    await fetch(`${url}/api/nothing-here`)
    await until(async () => (stderrLines.length > 0 ? true : undefined))
    for (const line of stderrLines) {
      expect(line).not.toContain('AI SDK Warning')
      expect(() => JSON.parse(line), line).not.toThrow()
    }
  })

  it('refuses an image in the last message with a 400 naming it; an earlier one is named to the model, not dropped', async () => {
    const requests = model.requests.length
    const image = { type: 'image_url' as const, image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }
    const refused = await client.chat.completions
      .create({
        model: 'lango',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'What is on this receipt?' }, image] }],
      })
      .catch((caught: unknown) => caught)
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError)
    expect(refused).toMatchObject({
      type: 'invalid_request_error',
      param: 'messages[0].content',
      code: 'unsupported_content',
    })
    expect((refused as Error).message).toContain('image_url content')
    expect(model.requests.length).toBe(requests)

    model.script(reply.text('Then I cannot see it.'))
    await client.chat.completions.create({
      model: 'lango',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Look:' }, image] },
        { role: 'assistant', content: 'I cannot read images.' },
        { role: 'user', content: 'Fine, it says 42 EUR.' },
      ],
    })
    const sent = model.chatBodies.at(-1)?.messages ?? []
    expect(sent).toContainEqual(
      expect.objectContaining({ role: 'user', content: 'Look:\n[image_url content not shown]' }),
    )
  })

  it('accepts any string as `user`, each its own chat session, none a reserved kind', async () => {
    const users = [
      'alice',
      'Alice Smith',
      'cron:nightly',
      'bg:1234',
      'workflow:x:y:z',
      '',
      'ü'.repeat(3),
      'x'.repeat(2000),
    ]
    const keys: string[] = []
    for (const user of users) {
      // The model asks to run a command: an attended chat asks for approval (an unattended
      // session would refuse it outright), and the approval names the session.
      model.script(
        reply.toolCalls([{ id: 'call_1', name: 'exec', arguments: { command: 'echo hi' } }]),
        reply.text('Not approved, then.'),
      )
      const turn = client.chat.completions.create({
        model: 'lango',
        user,
        messages: [{ role: 'user', content: 'run echo hi' }],
      })
      const approval = await until(async () => {
        const answer = (await (await fetch(`${url}/api/approvals?status=pending`)).json()) as {
          approvals: Array<{ id: string; session_key: string }>
        }
        return answer.approvals[0]
      }, 10_000)
      keys.push(approval.session_key)
      const denied = await fetch(`${url}/api/approvals/${approval.id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'deny' }),
      })
      expect(denied.status).toBe(200)
      expect((await turn).choices[0]?.message.content, JSON.stringify(user)).toBe('Not approved, then.')
    }
    expect(keys[0]).toBe('openai:alice')
    for (const key of keys.slice(1)) expect(key).toMatch(/^openai:~[A-Za-z0-9_-]{43}$/)
    expect(new Set(keys).size).toBe(users.length)
  })
})

// Issue 24, item 4: `stream: true` streams as the model writes, with the agent's tool activity.
describe('POST /v1/chat/completions with stream: true', () => {
  it('gives the SDK’s stream helper one content delta per delta of the model, as they come', async () => {
    model.script(reply.text('The first sentence. The second one! And a third?'))
    const deltas: string[] = []
    const stream = client.chat.completions.stream({
      model: 'lango',
      messages: [{ role: 'user', content: 'Say three things.' }],
    })
    stream.on('content', (delta) => deltas.push(delta))
    const final = await stream.finalChatCompletion()
    expect(deltas.filter((delta) => delta !== '')).toEqual([
      'The first sentence. ',
      'The second one! ',
      'And a third?',
    ])
    expect(final.choices[0]?.message.content).toBe('The first sentence. The second one! And a third?')
    expect(final.choices[0]?.finish_reason).toBe('stop')
    expect(model.chatBodies.at(-1)?.stream).toBe(true)
  })

  it('shows the tool calls the agent makes while it makes them, then the answer', async () => {
    model.script(
      reply.toolCalls([{ id: 'call_list', name: 'cron_list', arguments: {} }]),
      reply.text('You have no cron jobs.'),
    )
    const deltas: string[] = []
    const stream = client.chat.completions.stream({
      model: 'lango',
      messages: [{ role: 'user', content: 'What is scheduled?' }],
    })
    stream.on('content', (delta) => deltas.push(delta))
    const content = await stream.finalContent()
    expect(deltas).toContain('> 🔧 `cron_list` running…\n\n')
    expect(deltas).toContain('> ✅ `cron_list` done\n\n')
    expect(content).toBe('> 🔧 `cron_list` running…\n\n> ✅ `cron_list` done\n\nYou have no cron jobs.')
    // The tool really ran: its result went back to the model.
    const toolMessage = model.chatBodies.at(-1)?.messages.find((message) => message.role === 'tool')
    expect(toolMessage?.tool_call_id).toBe('call_list')
  })

  it('leaves the tool lines of an earlier streamed reply out of the history it sends the model', async () => {
    model.script(reply.text('Still none.'))
    await client.chat.completions.create({
      model: 'lango',
      messages: [
        { role: 'user', content: 'What is scheduled?' },
        {
          role: 'assistant',
          content: '> 🔧 `cron_list` running…\n\n> ✅ `cron_list` done\n\nYou have no cron jobs.',
        },
        { role: 'user', content: 'And now?' },
      ],
    })
    const sent = model.chatBodies.at(-1)?.messages ?? []
    expect(sent).toContainEqual({ role: 'assistant', content: 'You have no cron jobs.' })
  })

  it('cancels the agent turn (and its model request) when the client aborts mid-stream', async () => {
    model.script(reply.text('One. Two. Three.', { stallAfterChunks: 1 }))
    const request = model.requests.length + 1
    const stream = client.chat.completions.stream({
      model: 'lango',
      messages: [{ role: 'user', content: 'Count slowly.' }],
    })
    const deltas: string[] = []
    stream.on('content', (delta) => {
      deltas.push(delta)
      if (delta !== '') stream.abort()
    })
    await expect(stream.done()).rejects.toThrow()
    expect(deltas.filter((delta) => delta !== '')).toEqual(['One. '])
    await waitFor(() => model.closedEarly.includes(request), { what: 'the model request to be closed' })
    const failed = await waitFor(() =>
      stderrLines
        .map((line) => JSON.parse(line) as { msg?: string; aborted?: boolean; sessionKey?: string })
        .find((entry) => entry.msg === 'agent turn failed' && entry.aborted === true),
    )
    expect(failed.sessionKey).toBe('openai:anonymous')
  })

  it('says `length` when the model was cut at its output limit, streamed or not', async () => {
    // An outside probe: every reply said `stop`, so a client could not tell a truncated answer.
    model.script(reply.text('Half an ans', { finishReason: 'length' }))
    const whole = await client.chat.completions.create({
      model: 'lango',
      messages: [{ role: 'user', content: 'Tell me everything.' }],
    })
    expect(whole.choices[0]?.finish_reason).toBe('length')
    model.script(reply.text('Half an ans', { finishReason: 'length' }))
    const stream = await client.chat.completions.create({
      model: 'lango',
      stream: true,
      messages: [{ role: 'user', content: 'Tell me everything.' }],
    })
    const reasons: (string | null)[] = []
    for await (const part of stream) reasons.push(part.choices[0]?.finish_reason ?? null)
    expect(reasons.filter((reason) => reason !== null)).toEqual(['length'])
    model.script(reply.text('Done.'))
    const stopped = await client.chat.completions.create({
      model: 'lango',
      messages: [{ role: 'user', content: 'Hi' }],
    })
    expect(stopped.choices[0]?.finish_reason).toBe('stop')
  })

  it('refuses `n` other than 1 in OpenAI’s error shape instead of answering one choice', async () => {
    const requests = model.requests.length
    const error = await client.chat.completions
      .create({ model: 'lango', n: 2, messages: [{ role: 'user', content: 'Two ideas?' }] })
      .catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect(error).toMatchObject({
      status: 400,
      type: 'invalid_request_error',
      param: 'n',
      code: 'unsupported_parameter',
    })
    expect(model.requests.length).toBe(requests)
  })

  it('refuses a response_format other than text instead of answering free text as if it were met', async () => {
    const requests = model.requests.length
    for (const response_format of [
      { type: 'json_object' as const },
      { type: 'json_schema' as const, json_schema: { name: 'answer', schema: { type: 'object' } } },
    ]) {
      const error = await client.chat.completions
        .create({ model: 'lango', response_format, messages: [{ role: 'user', content: 'JSON please' }] })
        .catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(OpenAI.BadRequestError)
      expect(error).toMatchObject({
        status: 400,
        type: 'invalid_request_error',
        param: 'response_format',
        code: 'unsupported_parameter',
      })
    }
    expect(model.requests.length).toBe(requests)
    model.script(reply.text('plain'))
    const plain = await client.chat.completions.create({
      model: 'lango',
      response_format: { type: 'text' },
      messages: [{ role: 'user', content: 'Text is fine' }],
    })
    expect(plain.choices[0]?.message.content).toBe('plain')
  })

  it('answers every /v1 error in OpenAI’s shape, and never names the model server’s address', async () => {
    const empty = await client.chat.completions
      .create({ model: 'lango', messages: [] })
      .catch((caught: unknown) => caught)
    expect(empty).toBeInstanceOf(OpenAI.BadRequestError)
    expect(empty).toMatchObject({ type: 'invalid_request_error', param: 'messages', code: 'invalid_request' })
    const route = await client.get('/nothing-here').catch((caught: unknown) => caught)
    expect(route).toBeInstanceOf(OpenAI.NotFoundError)
    expect(route).toMatchObject({ type: 'invalid_request_error', code: 'not_found' })
    model.script(reply.error(500, 'boom'), reply.error(500, 'boom'), reply.error(500, 'boom'))
    const failed = await client.chat.completions
      .create({ model: 'lango', messages: [{ role: 'user', content: 'Hi' }] })
      .catch((caught: unknown) => caught)
    expect(failed).toBeInstanceOf(OpenAI.APIError)
    expect(failed).toMatchObject({ type: 'server_error', code: expect.stringMatching(/^agent_/) })
    expect(JSON.stringify((failed as { error?: unknown }).error)).not.toContain(new URL(model.baseUrl).host)
    expect((failed as Error).message).not.toContain('the model server the model server')
    expect((failed as Error).message).toContain('the model server answered')
    // The same failure before anything was streamed: the error's own status (502), as OpenAI
    // answers a streamed request it cannot start, not a 200 whose stream holds the error.
    model.script(reply.error(500, 'boom'), reply.error(500, 'boom'), reply.error(500, 'boom'))
    const unstarted = await client.chat.completions
      .create({ model: 'lango', stream: true, messages: [{ role: 'user', content: 'Hi' }] })
      .catch((caught: unknown) => caught)
    expect(unstarted).toBeInstanceOf(OpenAI.InternalServerError)
    expect(unstarted).toMatchObject({ status: 502, type: 'server_error', code: 'agent_model_error' })
    expect((unstarted as Error).message).not.toContain(new URL(model.baseUrl).host)
    expect((unstarted as Error).message).toContain('the model server answered')
    // In the middle of a stream (after a tool call was shown): an error chunk, hiding the address too.
    model.script(
      reply.toolCalls([{ id: 'call_mid', name: 'cron_list', arguments: {} }]),
      reply.error(500, 'boom'),
      reply.error(500, 'boom'),
      reply.error(500, 'boom'),
    )
    const chunks: string[] = []
    const streamed = await (async () => {
      const stream = await client.chat.completions.create({
        model: 'lango',
        stream: true,
        messages: [{ role: 'user', content: 'Hi' }],
      })
      for await (const chunk of stream) chunks.push(chunk.choices[0]?.delta.content ?? '')
    })().catch((caught: unknown) => caught)
    expect(chunks.join('')).toContain('cron_list')
    expect(streamed).toBeInstanceOf(OpenAI.APIError)
    expect((streamed as Error).message).not.toContain(new URL(model.baseUrl).host)
    expect((streamed as Error).message).toContain('the model server answered')
  })

  it('refuses a request’s own tools with a 400 in OpenAI’s error shape, naming the field', async () => {
    const requests = model.requests.length
    const cases: Array<[string, Record<string, unknown>]> = [
      [
        'tools',
        { tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }] },
      ],
      ['tool_choice', { tool_choice: 'required' }],
      ['functions', { functions: [{ name: 'get_weather', parameters: { type: 'object' } }] }],
      ['function_call', { function_call: { name: 'get_weather' } }],
    ]
    for (const [field, extra] of cases) {
      for (const stream of [false, true]) {
        const error = await client.chat.completions
          .create({ model: 'lango', stream, messages: [{ role: 'user', content: 'weather?' }], ...extra })
          .catch((caught: unknown) => caught)
        expect(error, field).toBeInstanceOf(OpenAI.BadRequestError)
        expect(error, field).toMatchObject({
          status: 400,
          type: 'invalid_request_error',
          param: field,
          code: 'unsupported_parameter',
          error: { message: expect.stringContaining(`\`${field}\` is not supported`) },
        })
      }
    }
    // Nothing offered: accepted, as clients that always send the fields need.
    model.script(reply.text('Sunny.'))
    const answer = await client.chat.completions.create({
      model: 'lango',
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [],
      tool_choice: 'auto',
    })
    expect(answer.choices[0]?.message.content).toBe('Sunny.')
    expect(model.requests.length).toBe(requests + 1)
  })
})
