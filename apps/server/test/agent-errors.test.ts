import { inspect } from 'node:util'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  AgentError,
  type AgentRunnerOptions,
  createAgentRunner,
  NO_MODEL_MESSAGE,
  type UsageRecord,
} from '../src/agent/index.js'
import type { Logger } from '../src/logger.js'
import { closedPort } from './fixtures/closed-port.js'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'

const API_KEY = 'sk-live-9d8c7b6a5f4e3d2c1b0a'

let model: FakeOpenAI
/** Every log line of every runner in this file, as JSON. */
const logLines: string[] = []
/** Every error a runner rejected with in this file. */
const failures: unknown[] = []
const unhandled: unknown[] = []
const onUnhandled = (reason: unknown) => unhandled.push(reason)

const recordingLogger: Logger = {
  debug: (message, fields) =>
    logLines.push(JSON.stringify({ level: 'debug', message, fields }, errorsAsText)),
  info: (message, fields) => logLines.push(JSON.stringify({ level: 'info', message, fields }, errorsAsText)),
  warn: (message, fields) => logLines.push(JSON.stringify({ level: 'warn', message, fields }, errorsAsText)),
  error: (message, fields) =>
    logLines.push(JSON.stringify({ level: 'error', message, fields }, errorsAsText)),
}

function errorsAsText(_key: string, value: unknown): unknown {
  return value instanceof Error ? inspect(value, { depth: 5 }) : value
}

beforeAll(() => {
  process.on('unhandledRejection', onUnhandled)
})
afterAll(async () => {
  // Let any stray promise settle before looking.
  await new Promise((resolve) => setTimeout(resolve, 50))
  process.off('unhandledRejection', onUnhandled)
  expect(unhandled).toEqual([])
  // The API key appears in no error (message, JSON, inspection with its cause) and no log line.
  expect(failures.length).toBeGreaterThan(8)
  for (const failure of failures) {
    expect(inspect(failure, { depth: 10 })).not.toContain(API_KEY)
    expect(JSON.stringify(failure)).not.toContain(API_KEY)
    expect(String(failure)).not.toContain(API_KEY)
  }
  expect(logLines.length).toBeGreaterThan(8)
  for (const line of logLines) expect(line).not.toContain(API_KEY)
})

beforeEach(async () => {
  model = await startFakeOpenAI()
})
afterEach(async () => {
  await model.close()
})

function runner(options: Partial<AgentRunnerOptions> = {}) {
  return createAgentRunner({
    baseUrl: model.baseUrl,
    model: 'test-model',
    apiKey: API_KEY,
    maxRetries: 0,
    logger: recordingLogger,
    ...options,
  })
}

/** The rejection of `promise` (failing the test if it resolves), recorded for the key checks. */
async function failureOf(promise: Promise<unknown>): Promise<AgentError> {
  const outcome = await promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ rejected: error }),
  )
  if (!('rejected' in outcome))
    throw new Error(`expected a rejection, got ${JSON.stringify(outcome.resolved)}`)
  failures.push(outcome.rejected)
  expect(AgentError.is(outcome.rejected)).toBe(true)
  return outcome.rejected as AgentError
}

describe('model server failures become typed errors', () => {
  it('retries a 429 after the Retry-After it names and succeeds', async () => {
    model.script(reply.error(429, 'slow down', { 'retry-after': '3' }), reply.text('after the wait'))
    const started = performance.now()
    const result = await runner({ maxRetries: 2 }).chat('http', 'hi')
    const elapsed = performance.now() - started
    expect(result.text).toBe('after the wait')
    expect(model.chatBodies).toHaveLength(2)
    // Retry-After: 3 s, longer than the SDK's own first backoff of 2 s, so only a wait that follows
    // the header lasts this long (a lower bound: a loaded machine only makes it longer).
    expect(elapsed).toBeGreaterThanOrEqual(2_950)
  })

  it('ends AGENT_MODEL_RATE_LIMITED when 429s outlast the retries', async () => {
    model.script(
      reply.error(429, 'slow down', { 'retry-after': '0' }),
      reply.error(429, 'slow down', { 'retry-after': '0' }),
    )
    const error = await failureOf(runner({ maxRetries: 1 }).chat('http', 'hi'))
    expect(error.code).toBe('AGENT_MODEL_RATE_LIMITED')
    expect(error.data).toMatchObject({ status: 429, attempts: 2, url: model.baseUrl, model: 'test-model' })
    expect(error.message).toContain(model.baseUrl)
    expect(error.message).toContain('after 2 attempts')
    expect(model.chatBodies).toHaveLength(2)
  })

  it('ends AGENT_MODEL_ERROR on a 500, naming the server and what it said', async () => {
    model.script(reply.error(500, 'internal failure in the GPU pool'))
    const error = await failureOf(runner().chat('http', 'hi'))
    expect(error.code).toBe('AGENT_MODEL_ERROR')
    expect(error.data).toMatchObject({ status: 500, attempts: 1 })
    expect(error.message).toBe(
      `the model server ${model.baseUrl} answered HTTP 500: internal failure in the GPU pool`,
    )
    expect(error.toJSON()).toEqual({
      name: 'AgentError',
      code: 'AGENT_MODEL_ERROR',
      message: error.message,
      data: error.data,
    })
  })

  it('retries a 500 when retries are allowed', async () => {
    model.script(reply.error(500, 'blip', { 'retry-after': '0' }), reply.text('recovered'))
    await expect(runner({ maxRetries: 1 }).chat('http', 'hi')).resolves.toMatchObject({ text: 'recovered' })
  })

  it('ends AGENT_INVALID_RESPONSE on a body that is not JSON', async () => {
    model.script(reply.raw('<html>502 Bad Gateway</html>', 200, { 'content-type': 'text/html' }))
    const error = await failureOf(runner().chat('http', 'hi'))
    expect(error.code).toBe('AGENT_INVALID_RESPONSE')
    expect(error.message).toContain(model.baseUrl)
  })

  it('ends AGENT_INVALID_RESPONSE on JSON that is not a chat completion', async () => {
    model.script(reply.raw(JSON.stringify({ object: 'list', data: [] })))
    const error = await failureOf(runner().chat('http', 'hi'))
    expect(error.code).toBe('AGENT_INVALID_RESPONSE')
  })

  it('ends AGENT_INVALID_RESPONSE on a completion without choices', async () => {
    model.script(reply.raw(JSON.stringify({ id: 'x', choices: [] })))
    const error = await failureOf(runner().chat('http', 'hi'))
    expect(error.code).toBe('AGENT_INVALID_RESPONSE')
  })

  it('ends AGENT_MODEL_UNAUTHORIZED on a 401, even when the server echoes the key', async () => {
    model.script(reply.error(401, `Incorrect API key provided: ${API_KEY}`))
    const error = await failureOf(runner().chat('http', 'hi'))
    expect(error.code).toBe('AGENT_MODEL_UNAUTHORIZED')
    expect(error.message).toContain('Incorrect API key provided: [redacted]')
  })

  it('ends AGENT_MODEL_UNREACHABLE when nothing listens at the URL', async () => {
    const port = await closedPort()
    const error = await failureOf(runner({ baseUrl: `http://127.0.0.1:${port}/v1/` }).chat('http', 'hi'))
    expect(error.code).toBe('AGENT_MODEL_UNREACHABLE')
    expect(error.message).toMatch(
      new RegExp(`^cannot reach the model server http://127\\.0\\.0\\.1:${port}/v1: `),
    )
  })

  it('ends AGENT_TIMEOUT when the server never answers, and reports the usage of finished steps and of the call cut off', async () => {
    model.script(reply.toolCalls([{ id: 'c1', name: 'missing_tool', arguments: {} }]), reply.hang())
    const usages: UsageRecord[] = []
    // The second model call never answers: only the turn's timeout can end this.
    const error = await failureOf(
      // Long enough for the second request to reach the fake on a loaded machine (compared below).
      runner({ timeoutMs: 3000, onUsage: (record) => usages.push(record) }).run({
        prompt: 'x',
        sessionKey: 'bg:1',
      }),
    )
    expect(error.code).toBe('AGENT_TIMEOUT')
    expect(error.message).toBe(`the agent turn did not finish within 3 s (model server ${model.baseUrl})`)
    expect(usages).toEqual([expect.objectContaining({ ok: false, steps: 1 })])
    // The finished step's 10 prompt tokens, and an estimate of the request the timeout cut off
    // (about four characters a token): the model server may have been generating all along.
    const cutOff = JSON.stringify(model.chatBodies[1]).length
    expect(usages[0]?.usage.inputTokens).toBeGreaterThan(10 + cutOff / 8)
    expect(usages[0]?.usage.inputTokens).toBeLessThan(10 + cutOff / 2)
  })

  it('never calls again before the Retry-After, however long: one past the turn’s time ends the call at once, saying the wait', async () => {
    // The AI SDK's own retry follows a Retry-After only up to 60 s and otherwise calls again after
    // 2 s: a server asking for 90 s was called again long before it allowed.
    model.script(
      reply.error(429, 'quota for this minute used', { 'retry-after': '90' }),
      reply.text('too early'),
    )
    const error = await failureOf(runner({ timeoutMs: 30_000, maxRetries: 2 }).chat('http', 'hi'))
    expect(error.code).toBe('AGENT_MODEL_RATE_LIMITED')
    expect(error.message).toBe(
      `the model server ${model.baseUrl} is rate limiting requests (HTTP 429): quota for this minute used; not tried again: the server asked to wait 90s, longer than the turn has left (agent.timeout)`,
    )
    expect(error.data).toMatchObject({ status: 429, attempts: 1, retryAfterMs: 90_000 })
    expect(model.chatBodies).toHaveLength(1)
  })

  it('does not sit out a backoff past the turn’s time either', async () => {
    model.script(reply.error(503, 'warming up'), reply.text('too late'))
    const error = await failureOf(runner({ timeoutMs: 1_000, maxRetries: 2 }).chat('http', 'hi'))
    expect(error.code).toBe('AGENT_MODEL_ERROR')
    expect(error.message).toContain(
      'not tried again: the next try would come after 2s, longer than the turn has left',
    )
    expect(model.chatBodies).toHaveLength(1)
  })
})

describe('cancellation', () => {
  it('rejects with the reason of a signal aborted before, asking nothing', async () => {
    const reason = new Error('stopped by the scheduler')
    const controller = new AbortController()
    controller.abort(reason)
    await expect(
      runner().run({ prompt: 'x', sessionKey: 'cron:a:1' }, { signal: controller.signal }),
    ).rejects.toBe(reason)
    await expect(
      runner().observe([{ role: 'user', content: 'x' }], { signal: controller.signal }),
    ).rejects.toBe(reason)
    expect(model.requests).toHaveLength(0)
  })

  it('rejects with the reason of a signal aborted while the model works, and the request is dropped', async () => {
    model.script(reply.hang())
    const reason = new Error('task cancelled')
    const controller = new AbortController()
    const running = runner().run({ prompt: 'x', sessionKey: 'bg:1' }, { signal: controller.signal })
    await model.waitForRequests(1)
    controller.abort(reason)
    await expect(running).rejects.toBe(reason)
  })

  it('rejects with the reason of a signal aborted while waiting for an earlier turn of the session', async () => {
    const memory = {
      load: async () => ({ observations: [], messages: [] }),
      append: async () => {},
    }
    model.script(reply.text('slow', { delayMs: 300 }))
    const agent = runner({ memory })
    const first = agent.chat('http', 'one')
    const controller = new AbortController()
    const second = agent.chat('http', 'two', { signal: controller.signal })
    const reason = new Error('gave up')
    controller.abort(reason)
    await expect(second).rejects.toBe(reason)
    await expect(first).resolves.toMatchObject({ text: 'slow' })
    expect(model.chatBodies).toHaveLength(1)
  })
})

describe('configuration', () => {
  it('without a base URL or model, every call rejects AGENT_NO_MODEL with the server’s words', async () => {
    for (const options of [{}, { baseUrl: model.baseUrl }, { model: 'm' }, { baseUrl: ' ', model: 'm' }]) {
      const agent = createAgentRunner(options)
      expect(agent.configured).toBe(false)
      const error = await failureOf(
        agent.run({ prompt: 'x', sessionKey: 'cron:a:1' }, { signal: new AbortController().signal }),
      )
      expect(error.code).toBe('AGENT_NO_MODEL')
      expect(error.message).toBe(NO_MODEL_MESSAGE)
      expect(error.message).toMatch(/^no model configured/)
      await expect(agent.chat('http', 'x')).rejects.toMatchObject({ code: 'AGENT_NO_MODEL' })
      await expect(agent.observe([{ role: 'user', content: 'x' }])).rejects.toMatchObject({
        code: 'AGENT_NO_MODEL',
      })
    }
    expect(model.requests).toHaveLength(0)
  })

  it('refuses invalid options with AGENT_INVALID_OPTIONS', () => {
    const invalid: Partial<AgentRunnerOptions>[] = [
      { baseUrl: 'ftp://127.0.0.1/v1' },
      { baseUrl: 'not a url' },
      { maxSteps: 0 },
      { maxSteps: 1.5 },
      { timeoutMs: -1 },
      { maxRetries: 11 },
      { baseUrl: `http://user:${API_KEY}@127.0.0.1/v1` },
      { baseUrl: `http://127.0.0.1/v1?key=${API_KEY}` },
    ]
    for (const options of invalid) {
      let thrown: unknown
      try {
        createAgentRunner({ baseUrl: model.baseUrl, model: 'm', apiKey: API_KEY, ...options })
      } catch (error) {
        thrown = error
      }
      expect(thrown).toMatchObject({ code: 'AGENT_INVALID_OPTIONS' })
      failures.push(thrown)
    }
  })
})
