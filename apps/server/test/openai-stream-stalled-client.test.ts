import { connect } from 'node:net'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { startTestServer, type TestServer } from './fixtures/http-server.js'

// A client of `POST /v1/chat/completions` with `stream: true` that keeps the connection open but
// stops reading: the chunks waiting for it are bounded (1 MiB); past that the turn is cancelled
// (its model request closed) and the stream ends, instead of the server holding the whole reply.

let model: FakeOpenAI
let server: TestServer

beforeAll(async () => {
  model = await startFakeOpenAI()
  server = await startTestServer((config) => ({ ...config, agent: { ...config.agent, maxRetries: 0 } }), {
    LANGO_MODEL_BASE_URL: model.baseUrl,
    LANGO_MODEL: 'test-model',
  })
})
afterAll(async () => {
  await server?.dispose()
  await model?.close()
})

describe('a streaming client that stops reading', () => {
  it('has its turn cancelled once 1 MiB waits for it, and the model request closed', async () => {
    // 24 MiB of reply, 8 KiB a delta — far more than the sockets' buffers hold — and then the model
    // keeps its request open: only the server giving up on the client closes it.
    const piece = `${'x'.repeat(8191)} `
    const chunks = Array.from({ length: 3073 }, () => piece)
    model.script(reply.text(chunks.join(''), { chunks, stallAfterChunks: 3072 }))
    const url = new URL(server.url)
    const body = JSON.stringify({
      model: 'lango',
      stream: true,
      user: 'stalled-reader',
      messages: [{ role: 'user', content: 'Write a very long answer.' }],
    })
    const socket = connect(Number(url.port), url.hostname)
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
    // Reads nothing from now on.
    socket.pause()
    try {
      await waitFor(() => (model.closedEarly.includes(1) ? true : undefined), {
        timeoutMs: 60_000,
        what: 'the model request to be closed',
      })
      expect(model.chatBodies).toHaveLength(1)
    } finally {
      socket.destroy()
    }
  })
})
