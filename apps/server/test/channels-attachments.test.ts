import { getEventListeners } from 'node:events'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  ChannelError,
  ChannelRouter,
  DiscordChannel,
  SlackChannel,
  splitMessage,
  TelegramChannel,
} from '../src/channels/index.js'
import {
  type FakeService,
  type FakeSlack,
  recordingLogger,
  startFakeDiscord,
  startFakeSlack,
} from './fixtures/fake-chat-apis.js'
import { type FakeTelegram, startFakeTelegram, type UploadedFile } from './fixtures/fake-telegram.js'

const signal = () => AbortSignal.timeout(20_000)

/** A cron result of about 20,000 characters: prose paragraphs and Python code blocks. */
function longResult(): string {
  const sections: string[] = []
  for (let section = 1; section <= 12; section++) {
    sections.push(
      `## Step ${section}\n\n${`The job checked item ${section} and found it in order. `.repeat(12).trim()}`,
    )
    const code = Array.from(
      { length: 24 },
      (_, line) => `    print("step ${section}, line ${line}: ${'ok '.repeat(8).trim()}")`,
    )
    sections.push(`\`\`\`python\ndef step_${section}():\n${code.join('\n')}\n\`\`\``)
  }
  return sections.join('\n\n')
}

/** Every ``` fence in `part` is closed. */
function fencesBalanced(part: string): boolean {
  return part.split('\n').filter((line) => /^```/.test(line)).length % 2 === 0
}

describe('long deliveries: Telegram', () => {
  let fake: FakeTelegram
  let logger: ReturnType<typeof recordingLogger>
  const create = (options: { attachAfterParts?: number } = {}) =>
    new ChannelRouter({
      adapters: [
        new TelegramChannel({
          token: fake.token,
          apiRoot: fake.url,
          allowedChats: [111],
          logger,
          ...options,
        }),
      ],
      logger,
    })

  beforeEach(async () => {
    fake = await startFakeTelegram()
    logger = recordingLogger()
  })
  afterEach(async () => {
    await fake.close()
    expect(logger.dump()).not.toContain(fake.token)
  })

  it('a short result is one message', async () => {
    await create().send('telegram', 'All green.', { signal: signal() })
    expect(fake.callsOf('sendMessage').map((call) => call.payload.text)).toEqual(['All green.'])
    expect(fake.callsOf('sendDocument')).toEqual([])
  })

  it('a long result with code fences: its first part as a message, the whole as result.md', async () => {
    const text = longResult()
    const parts = splitMessage(text, 4096)
    expect(parts.length).toBeGreaterThan(3)
    await create().send('telegram', text, { signal: signal() })
    const messages = fake.callsOf('sendMessage')
    expect(messages.map((call) => call.payload.text)).toEqual([parts[0]])
    expect(fencesBalanced(String(messages[0]?.payload.text))).toBe(true)
    const [document] = fake.callsOf('sendDocument')
    const file = document?.payload.document as UploadedFile
    expect(file.filename).toBe('result.md')
    expect(file.text).toBe(text)
    expect(String(document?.payload.caption)).toContain(`${text.length} characters`)
    expect(document?.payload.chat_id).toBe('111')
  })

  it('falls back to split messages when Telegram refuses the document (413)', async () => {
    const text = longResult()
    fake.failNext('sendDocument', { status: 413, description: 'Request Entity Too Large' })
    await create().send('telegram', text, { signal: signal() })
    const sent = fake.callsOf('sendMessage').map((call) => String(call.payload.text))
    expect(sent).toEqual(splitMessage(text, 4096))
    expect(sent.every(fencesBalanced)).toBe(true)
    expect(fake.callsOf('sendDocument')).toHaveLength(1)
    expect(logger.entries.some((entry) => entry.level === 'warn' && entry.message.includes('refused'))).toBe(
      true,
    )
  })

  it('a 400 on the document falls back; a server error fails the delivery for the ledger to retry', async () => {
    const channel = new TelegramChannel({
      token: fake.token,
      apiRoot: fake.url,
      allowedChats: [111],
      logger,
      maxRetryAttempts: 0,
    })
    const text = longResult()
    fake.failNext('sendDocument', { status: 400, description: 'Bad Request: wrong file' })
    await channel.send(undefined, text, { signal: signal() })
    expect(fake.callsOf('sendMessage')).toHaveLength(splitMessage(text, 4096).length)
    fake.failNext('sendDocument', { status: 502, description: 'Bad Gateway' })
    const error = await channel.send(undefined, text, { signal: signal() }).then(
      () => undefined,
      (caught: unknown) => caught,
    )
    expect(ChannelError.is(error) && error.code).toBe('CHANNEL_SEND_FAILED')
    expect(ChannelError.is(error) && error.data?.status).toBe(502)
    // Only the first part went before the failed document: no fallback on a server error.
    expect(fake.callsOf('sendMessage')).toHaveLength(splitMessage(text, 4096).length + 1)
  })

  it('attachAfterParts: Infinity always splits', async () => {
    const text = longResult()
    await create({ attachAfterParts: Number.POSITIVE_INFINITY }).send('telegram', text, { signal: signal() })
    expect(fake.callsOf('sendMessage')).toHaveLength(splitMessage(text, 4096).length)
    expect(fake.callsOf('sendDocument')).toEqual([])
    expect(() => create({ attachAfterParts: 0 })).toThrow(/attachAfterParts/)
  })
})

describe('long deliveries: Slack', () => {
  const token = 'xoxb-1111-2222-SLACKSECRETTOKEN'
  let slack: FakeSlack
  let logger: ReturnType<typeof recordingLogger>
  const router = () =>
    new ChannelRouter({
      adapters: [new SlackChannel({ token, apiUrl: slack.url, retries: 1, retryMinDelayMs: 10, logger })],
    })

  beforeEach(async () => {
    slack = await startFakeSlack({ token })
    logger = recordingLogger()
  })
  afterEach(async () => {
    await slack.close()
    expect(logger.dump()).not.toContain(token)
  })

  const paths = () => slack.requests.map((request) => request.path.replace(/\/upload\/F\d+$/, '/upload'))

  it('a short result is one message', async () => {
    await router().send('slack:C1', 'All green.', { signal: signal() })
    expect(paths()).toEqual(['/api/chat.postMessage'])
    expect(slack.requests[0]?.body.text).toBe('All green.')
  })

  it('a long result with code fences: its first part as a message, the whole as an uploaded result.md', async () => {
    const text = longResult()
    const parts = splitMessage(text, 4000)
    expect(parts.length).toBeGreaterThan(3)
    await router().send('slack:C1', text, { signal: signal() })
    expect(paths()).toEqual([
      '/api/chat.postMessage',
      '/api/files.getUploadURLExternal',
      '/upload',
      '/api/files.completeUploadExternal',
    ])
    expect(slack.requests[0]?.body.text).toBe(parts[0])
    expect(fencesBalanced(String(slack.requests[0]?.body.text))).toBe(true)
    expect(slack.requests[1]?.body).toMatchObject({
      filename: 'result.md',
      length: String(Buffer.byteLength(text)),
    })
    // The signed upload URL gets the file, not the token.
    const upload = slack.requests[2]
    expect(upload?.headers.authorization).toBeUndefined()
    expect(upload?.files.map((file) => [file.field, file.filename, file.type])).toEqual([
      ['file', 'result.md', 'text/markdown'],
    ])
    expect(upload?.files[0]?.text).toBe(text)
    expect(slack.shared).toEqual([
      expect.objectContaining({ channelId: 'C1', filename: 'result.md', title: 'result.md', text }),
    ])
  })

  // A review: with rate-limited calls rejected, a second's 429 on the upload's first call failed the
  // attempt after its first part was posted (which the ledger's retry would post again).
  it('a short rate limit on the upload is waited out: one first part, the file shared', async () => {
    const text = longResult()
    slack.answerNext({
      path: '/api/files.getUploadURLExternal',
      status: 429,
      retryAfter: 1,
      body: { ok: false, error: 'ratelimited' },
    })
    await router().send('slack:C1', text, { signal: signal() })
    expect(paths()).toEqual([
      '/api/chat.postMessage',
      '/api/files.getUploadURLExternal',
      '/api/files.getUploadURLExternal',
      '/upload',
      '/api/files.completeUploadExternal',
    ])
    expect(slack.shared).toEqual([expect.objectContaining({ channelId: 'C1', filename: 'result.md', text })])
  })

  it('falls back to split messages when the upload is refused (413)', async () => {
    const text = longResult()
    slack.answerNext({ path: /^\/upload\//, status: 413, body: { ok: false } })
    await router().send('slack:C1', text, { signal: signal() })
    const posted = slack.requests
      .filter((request) => request.path === '/api/chat.postMessage')
      .map((request) => String(request.body.text))
    expect(posted).toEqual(splitMessage(text, 4000))
    expect(posted.every(fencesBalanced)).toBe(true)
    expect(slack.shared).toEqual([])
  })

  it('falls back to split messages when the bot lacks files:write (missing_scope)', async () => {
    const text = longResult()
    slack.answerNext({
      path: '/api/files.getUploadURLExternal',
      status: 200,
      body: { ok: false, error: 'missing_scope', needed: 'files:write' },
    })
    await router().send('slack:C1', text, { signal: signal() })
    expect(paths().filter((path) => path === '/api/chat.postMessage')).toHaveLength(
      splitMessage(text, 4000).length,
    )
    expect(logger.entries.some((entry) => entry.level === 'warn' && entry.message.includes('refused'))).toBe(
      true,
    )
  })
})

describe('long deliveries: Discord', () => {
  const token = 'MTIzNDU2Nzg5.DISCORD.SECRETTOKENVALUE'
  let discord: FakeService
  let logger: ReturnType<typeof recordingLogger>
  const adapters: DiscordChannel[] = []
  const router = () => {
    const adapter = new DiscordChannel({ token, apiUrl: discord.url, retries: 1, logger })
    adapters.push(adapter)
    return new ChannelRouter({ adapters: [adapter] })
  }

  beforeEach(async () => {
    discord = await startFakeDiscord({ token })
    logger = recordingLogger()
  })
  afterEach(async () => {
    for (const adapter of adapters.splice(0)) await adapter.stop()
    await discord.close()
    expect(logger.dump()).not.toContain(token)
  })

  it('a short result is one message', async () => {
    await router().send('discord:111', 'All green.', { signal: signal() })
    expect(discord.requests.map((request) => [request.body.content, request.files.length])).toEqual([
      ['All green.', 0],
    ])
  })

  it('a long result with code fences: one message, its first part with the whole attached as result.md', async () => {
    const text = longResult()
    const parts = splitMessage(text, 2000)
    expect(parts.length).toBeGreaterThan(3)
    await router().send('discord:111', text, { signal: signal() })
    expect(discord.requests).toHaveLength(1)
    const [request] = discord.requests
    expect(request?.headers['content-type']).toMatch(/^multipart\/form-data/)
    expect(request?.body).toMatchObject({
      content: parts[0],
      allowed_mentions: { parse: [] },
      flags: 4,
      attachments: [{ id: 0, filename: 'result.md' }],
    })
    expect(fencesBalanced(String(request?.body.content))).toBe(true)
    expect(request?.files.map((file) => [file.field, file.filename, file.text === text])).toEqual([
      ['files[0]', 'result.md', true],
    ])
  })

  it('falls back to split messages when the attachment is refused (413)', async () => {
    const text = longResult()
    discord.answerNext({ status: 413, body: { message: 'Request entity too large', code: 40005 } })
    await router().send('discord:111', text, { signal: signal() })
    const [refused, ...messages] = discord.requests
    expect(refused?.files).toHaveLength(1)
    const contents = messages.map((request) => String(request.body.content))
    expect(contents).toEqual(splitMessage(text, 2000))
    expect(contents.every(fencesBalanced)).toBe(true)
    expect(messages.every((request) => request.files.length === 0)).toBe(true)
  })

  it("sends every part without leaving a listener on the caller's signal", async () => {
    // @discordjs/rest listens to a request's signal and never lets go: given the caller's own, a
    // delivery of many parts piled them up there (Node warned of a leak past ten).
    const text = longResult()
    discord.answerNext({ status: 413, body: { message: 'Request entity too large', code: 40005 } })
    const adapter = new DiscordChannel({ token, apiUrl: discord.url, retries: 1, logger })
    adapters.push(adapter)
    const caller = new AbortController()
    await adapter.send('111', text, { signal: caller.signal })
    expect(discord.requests.length).toBeGreaterThan(10)
    expect(getEventListeners(caller.signal, 'abort')).toEqual([])
  })

  it('a rejected token is not a refusal: CHANNEL_AUTH_FAILED, no fallback', async () => {
    const wrong = new DiscordChannel({
      token: 'MTIz.WRONG.TOKENVALUEXYZ',
      apiUrl: discord.url,
      retries: 0,
      logger,
    })
    adapters.push(wrong)
    const error = await wrong
      .send('111', longResult(), { signal: signal() })
      .catch((caught: unknown) => caught)
    expect(ChannelError.is(error) && error.code).toBe('CHANNEL_AUTH_FAILED')
    expect(discord.requests).toHaveLength(1)
  })
})
