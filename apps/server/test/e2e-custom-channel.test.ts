// Issue 13's custom channel, end to end: the example adapter (examples/channel-adapter/line-chat.mjs)
// loaded by a real server from `channels.custom`; a line typed in the chat becomes an agent turn
// whose reply comes back to the room, and a cron job's result is delivered to `line:<room>`.
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChannelAdapter } from '../src/channels/index.js'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'
import { chatClient } from './fixtures/line-chat-client.js'

const EXAMPLE = fileURLToPath(new URL('../../../examples/channel-adapter/line-chat.mjs', import.meta.url))

let model: FakeOpenAI
let server: TestServer
let port: number

beforeAll(async () => {
  model = await startFakeOpenAI()
  server = await startTestServer(
    (config) => ({
      ...config,
      agent: { ...config.agent, maxRetries: 0 },
      channels: { ...config.channels, custom: [{ name: 'line', module: EXAMPLE, options: { port: 0 } }] },
    }),
    { LANGO_MODEL_BASE_URL: model.baseUrl, LANGO_MODEL: 'test-model' },
  )
  const adapter = server.app.channels.get('line') as ChannelAdapter & { address?: { port: number } }
  port = adapter.address?.port as number
})
afterAll(async () => {
  await server?.dispose()
  await model?.close()
})

describe('a custom channel adapter loaded from channels.custom', () => {
  it('a line in the room is an agent turn in line:<room>:<nick>; the reply comes back to the room', async () => {
    const alice = await chatClient(port)
    try {
      alice.write('/nick alice')
      alice.write('/join ops')
      await alice.expectLine(/^lango> you are alice in room ops$/)
      model.script(
        reply.toolCalls([
          {
            id: 'call_add',
            name: 'cron_add',
            arguments: {
              name: 'ops-digest',
              schedule_type: 'cron',
              schedule: '0 9 * * 1',
              prompt: 'Write the ops digest.',
            },
          },
        ]),
        reply.text('Every Monday at 09:00 the digest will come to this room.'),
      )
      alice.write('send the ops digest here every monday at 9')
      await alice.expectLine(/^lango> Every Monday at 09:00 the digest will come to this room\.$/)
      // The job was created from this chat: its results go to the room it was asked in.
      const job = await server.app.cron.get('ops-digest')
      expect(job).toMatchObject({ deliverTo: ['line:ops'], createdBy: 'line:ops:alice' })

      model.script(reply.text('Ops digest: all services green.'))
      await server.app.cron.trigger('ops-digest')
      await alice.expectLine(/Ops digest: all services green\.$/)
      await until(async () => {
        const [run] = await server.app.cron.history({ job: 'ops-digest', limit: 1 })
        return run?.deliveryStatus === 'delivered' ? run : undefined
      })
    } finally {
      alice.close()
    }
  })
})
