import { createHmac } from 'node:crypto'
import { inspect } from 'node:util'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { toDeliveryError } from '../src/channels/delivery-error.js'
import {
  ChannelError,
  ChannelRouter,
  DiscordChannel,
  SlackChannel,
  WebhookChannel,
  type WebhookPayload,
} from '../src/channels/index.js'
import { closedPort } from './fixtures/closed-port.js'
import {
  discordRateLimit,
  type FakeService,
  recordingLogger,
  startFakeDiscord,
  startFakeSlack,
  startWebhookReceiver,
} from './fixtures/fake-chat-apis.js'

async function channelError(promise: Promise<unknown>): Promise<ChannelError> {
  const error = await promise.then(
    () => {
      throw new Error('expected a rejection')
    },
    (caught: unknown) => caught,
  )
  if (!ChannelError.is(error)) throw new Error(`expected a ChannelError, got ${inspect(error)}`)
  return error
}

/** A loopback URL nothing listens on. */
async function closedPortUrl(path: string): Promise<string> {
  return `http://127.0.0.1:${await closedPort()}${path}`
}

const signal = () => AbortSignal.timeout(20_000)

describe('WebhookChannel', () => {
  let receiver: FakeService
  beforeEach(async () => {
    receiver = await startWebhookReceiver()
  })
  afterEach(async () => {
    await receiver.close()
  })

  it('POSTs { target, channel, chat_id, text, sent_at } as JSON, signed when a secret is set', async () => {
    const webhook = new WebhookChannel({
      url: `${receiver.url}/hooks/lango`,
      secret: 'hook-secret-123',
      headers: { authorization: 'Bearer receiver-token' },
      clock: {
        now: () => new Date(1_800_000_000_000),
        setTimeout,
        clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
      },
    })
    const router = new ChannelRouter({ adapters: [webhook] })
    await router.send('webhook', 'daily report', { signal: signal() })
    await router.send('webhook:ops', 'second', { signal: signal() })
    const [bare, withId] = receiver.requests
    expect(bare?.method).toBe('POST')
    expect(bare?.path).toBe('/hooks/lango')
    expect(bare?.headers['content-type']).toBe('application/json')
    expect(bare?.headers.authorization).toBe('Bearer receiver-token')
    expect(bare?.body).toEqual({
      target: 'webhook',
      channel: 'webhook',
      chat_id: null,
      text: 'daily report',
      sent_at: 1_800_000_000_000,
    } satisfies WebhookPayload)
    expect(withId?.body).toMatchObject({ target: 'webhook:ops', chat_id: 'ops', text: 'second' })
    const expected = createHmac('sha256', 'hook-secret-123')
      .update(bare?.raw ?? '')
      .digest('hex')
    expect(bare?.headers['x-lango-signature']).toBe(`sha256=${expected}`)
  })

  it('retries a 429 after its Retry-After', async () => {
    receiver.answerNext({ status: 429, retryAfter: 1 })
    const webhook = new WebhookChannel({ url: `${receiver.url}/hook` })
    await webhook.send(undefined, 'hello', { signal: signal() })
    expect(receiver.requests).toHaveLength(2)
    const [first, second] = receiver.requests
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(900)
    expect(second?.body.text).toBe('hello')
  })

  it('retries 5xx a bounded number of times, then fails with the status', async () => {
    for (let index = 0; index < 3; index++) receiver.answerNext({ status: 503 })
    const webhook = new WebhookChannel({
      url: `${receiver.url}/hook`,
      retry: { maxAttempts: 3, baseDelayMs: 10 },
    })
    const error = await channelError(webhook.send(undefined, 'x', { signal: signal() }))
    expect(error.code).toBe('CHANNEL_SEND_FAILED')
    expect(error.message).toBe('webhook delivery failed: HTTP 503 after 3 attempts')
    expect(error.data).toEqual({ channel: 'webhook', status: 503, attempts: 3 })
    expect(receiver.requests).toHaveLength(3)
  })

  it('does not retry other 4xx; 401/403 are CHANNEL_AUTH_FAILED', async () => {
    receiver.answerNext({ status: 400 })
    const webhook = new WebhookChannel({ url: `${receiver.url}/hook`, retry: { baseDelayMs: 10 } })
    expect((await channelError(webhook.send(undefined, 'x'))).code).toBe('CHANNEL_SEND_FAILED')
    expect(receiver.requests).toHaveLength(1)
    receiver.answerNext({ status: 401 })
    expect((await channelError(webhook.send(undefined, 'x'))).code).toBe('CHANNEL_AUTH_FAILED')
    expect(receiver.requests).toHaveLength(2)
  })

  it('does not follow a redirect, nor retry it: it fails at once, saying so (outside probe)', async () => {
    receiver.answerNext({ status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data' } })
    const webhook = new WebhookChannel({ url: `${receiver.url}/hook`, retry: { baseDelayMs: 10 } })
    const error = await channelError(webhook.send(undefined, 'x'))
    expect(error.code).toBe('CHANNEL_SEND_FAILED')
    expect(error.message).toBe(
      'webhook delivery failed: HTTP 302 (redirects are not followed: set channels.webhook.url to the final address) after 1 attempt',
    )
    expect(receiver.requests).toHaveLength(1)
    // The delivery ledger does not try it again either.
    expect(toDeliveryError(error).permanent).toBe(true)
  })

  it('retries network errors, and keeps the URL (a secret) out of the error', async () => {
    const url = await closedPortUrl('/hooks/SECRET-PATH-TOKEN-42')
    const logger = recordingLogger()
    const webhook = new WebhookChannel({ url, retry: { maxAttempts: 2, baseDelayMs: 10 }, logger })
    const error = await channelError(webhook.send(undefined, 'x', { signal: signal() }))
    expect(error.code).toBe('CHANNEL_SEND_FAILED')
    expect(error.data).toEqual({ channel: 'webhook', attempts: 2 })
    expect(inspect(error, { depth: 20 })).not.toContain('SECRET-PATH-TOKEN-42')
    expect(JSON.stringify(error)).not.toContain('SECRET-PATH-TOKEN-42')
    expect(logger.dump()).not.toContain('SECRET-PATH-TOKEN-42')
    expect(() => new WebhookChannel({ url: 'ftp://host/SECRET-PATH-TOKEN-42' })).toThrow(
      expect.objectContaining({
        code: 'CHANNEL_INVALID_OPTIONS',
        message: 'webhook: the webhook url must be an http(s) URL',
      }),
    )
  })

  it('rejects with signal.reason when aborted while waiting out a Retry-After', async () => {
    receiver.answerNext({ status: 429, retryAfter: 30 })
    const webhook = new WebhookChannel({ url: `${receiver.url}/hook` })
    const controller = new AbortController()
    const reason = new Error('delivery timeout')
    const sending = webhook.send(undefined, 'x', { signal: controller.signal })
    await receiver.waitForRequests(1)
    controller.abort(reason)
    await expect(sending).rejects.toBe(reason)
    expect(receiver.requests).toHaveLength(1)
  })
})

describe('SlackChannel', () => {
  const token = 'xoxb-1111-2222-SLACKSECRETTOKEN'
  let slack: FakeService
  beforeEach(async () => {
    slack = await startFakeSlack({ token })
  })
  afterEach(async () => {
    await slack.close()
  })

  const channel = (options: Partial<ConstructorParameters<typeof SlackChannel>[0]> = {}) =>
    new SlackChannel({ token, apiUrl: slack.url, retries: 2, retryMinDelayMs: 10, ...options })

  it('posts with chat.postMessage, a bare target going to the default channel', async () => {
    const router = new ChannelRouter({ adapters: [channel({ defaultChannel: 'C0DEFAULT' })] })
    await router.send('slack:C0123ABCD', 'build passed', { signal: signal() })
    await router.send('slack', 'to the default', { signal: signal() })
    expect(slack.requests.map((request) => [request.path, request.body.channel, request.body.text])).toEqual([
      ['/api/chat.postMessage', 'C0123ABCD', 'build passed'],
      ['/api/chat.postMessage', 'C0DEFAULT', 'to the default'],
    ])
    expect(slack.requests[0]?.headers.authorization).toBe(`Bearer ${token}`)
    expect(slack.requests[0]?.body).toMatchObject({ unfurl_links: 'false', unfurl_media: 'false' })
    const noDefault = new ChannelRouter({ adapters: [channel()] })
    expect((await channelError(noDefault.send('slack', 'x'))).code).toBe('CHANNEL_NO_DEFAULT_CHAT')
  })

  it('splits long texts on line boundaries (4000 by default)', async () => {
    const text = Array.from({ length: 60 }, () => 'w'.repeat(99)).join('\n')
    await channel().send('C1', text, { signal: signal() })
    const texts = slack.requests.map((request) => String(request.body.text))
    expect(texts.map((part) => part.split('\n').length)).toEqual([40, 20])
    expect(texts.join('\n')).toBe(text)
  })

  it('splits so that each part is at most 4000 once escaped (a < is four characters)', async () => {
    const text = Array.from({ length: 60 }, () => `${'<'.repeat(50)}${'w'.repeat(49)}`).join('\n')
    await channel({ attachAfterParts: Number.POSITIVE_INFINITY }).send('C1', text, { signal: signal() })
    const texts = slack.requests.map((request) => String(request.body.text))
    for (const part of texts) expect(part.length).toBeLessThanOrEqual(4000)
    const unescaped = texts.map((part) =>
      part.replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&'),
    )
    expect(unescaped.join('\n')).toBe(text)
  })

  it('the client retries a 429 after Retry-After by itself', async () => {
    slack.answerNext({ status: 429, retryAfter: 1, body: { ok: false, error: 'ratelimited' } })
    await channel().send('C1', 'after the limit', { signal: signal() })
    expect(slack.requests).toHaveLength(2)
    expect((slack.requests[1]?.at ?? 0) - (slack.requests[0]?.at ?? 0)).toBeGreaterThanOrEqual(900)
    expect(slack.requests[1]?.body.text).toBe('after the limit')
  })

  // An outside probe: the client waited out a 40 s Retry-After inside a 30 s delivery attempt and
  // posted after the ledger had recorded the delivery failed.
  it('a Retry-After longer than 5 s fails the post at once with its wait, and the client posts nothing later', async () => {
    slack.answerNext({ status: 429, retryAfter: 40, body: { ok: false, error: 'ratelimited' } })
    const failure = await channelError(channel().send('C1', 'after a long limit', { signal: signal() }))
    expect(failure.data).toMatchObject({ status: 429, retryAfterMs: 40_000 })
    expect(toDeliveryError(failure)).toMatchObject({ permanent: false, retryAfterMs: 40_000 })
    // A request the client would send on its own comes at once (its retry delay here is 10 ms).
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(slack.requests).toHaveLength(1)
  })

  it('a Slack error no retry fixes is permanent for the delivery ledger; a passing one is not', async () => {
    const missing = await channelError(channel().send('C404', 'x', { signal: signal() }))
    expect(toDeliveryError(missing).permanent).toBe(true)
    for (const code of ['rate_limited', 'message_limit_exceeded']) {
      slack.answerNext({ status: 200, body: { ok: false, error: code } })
      const throttled = await channelError(channel({ retries: 0 }).send('C1', 'x', { signal: signal() }))
      expect({ code, permanent: toDeliveryError(throttled).permanent }).toEqual({ code, permanent: false })
    }
    slack.answerNext({ status: 200, body: { ok: false, error: 'internal_error' } })
    const passing = await channelError(channel({ retries: 0 }).send('C1', 'x', { signal: signal() }))
    expect(passing.message).toBe('slack: chat.postMessage to C1 failed: internal_error')
    expect(toDeliveryError(passing).permanent).toBe(false)
  })

  it('a rejected token is CHANNEL_AUTH_FAILED, with the token nowhere in the error or the log', async () => {
    const logger = recordingLogger()
    const wrong = new SlackChannel({
      token: 'xoxb-9999-WRONGSECRETVALUE',
      apiUrl: slack.url,
      retries: 0,
      logger,
    })
    const error = await channelError(wrong.send('C1', 'x', { signal: signal() }))
    expect(error.code).toBe('CHANNEL_AUTH_FAILED')
    expect(error.data).toMatchObject({ error: 'invalid_auth' })
    for (const text of [inspect(error, { depth: 20 }), JSON.stringify(error), logger.dump()])
      expect(text).not.toContain('WRONGSECRETVALUE')
  })

  it('escapes &, < and > so an agent cannot ping the channel or disguise a link', async () => {
    await channel().send('C1', '<!channel> see <https://evil.example|your bank> & more', { signal: signal() })
    expect(slack.requests[0]?.body.text).toBe(
      '&lt;!channel&gt; see &lt;https://evil.example|your bank&gt; &amp; more',
    )
  })

  it('reports Slack errors and refuses channels outside the allow list', async () => {
    const error = await channelError(channel().send('C404', 'x', { signal: signal() }))
    expect(error.code).toBe('CHANNEL_SEND_FAILED')
    expect(error.message).toBe('slack: chat.postMessage to C404 failed: channel_not_found')
    const allowed = channel({ allowedChannels: ['C1'] })
    expect((await channelError(allowed.send('C2', 'x'))).code).toBe('CHANNEL_TARGET_NOT_ALLOWED')
    expect((await channelError(allowed.send('bad channel!', 'x'))).code).toBe('CHANNEL_INVALID_TARGET')
    expect(slack.requests).toHaveLength(1)
  })
})

describe('DiscordChannel', () => {
  const token = 'MTIzNDU2Nzg5.DISCORDSECRET.token'
  let discord: FakeService
  let adapters: DiscordChannel[] = []
  beforeEach(async () => {
    discord = await startFakeDiscord({ token })
  })
  afterEach(async () => {
    await Promise.all(adapters.map((adapter) => adapter.stop()))
    adapters = []
    await discord.close()
  })

  const channel = (options: Partial<ConstructorParameters<typeof DiscordChannel>[0]> = {}) => {
    const adapter = new DiscordChannel({ token, apiUrl: discord.url, retries: 1, ...options })
    adapters.push(adapter)
    return adapter
  }

  it('posts channel messages with mentions disabled', async () => {
    const router = new ChannelRouter({ adapters: [channel({ defaultChannel: '222' })] })
    await router.send('discord:111', 'deploy done @everyone', { signal: signal() })
    await router.send('discord', 'default', { signal: signal() })
    expect(discord.requests.map((request) => [request.method, request.path])).toEqual([
      ['POST', '/api/v10/channels/111/messages'],
      ['POST', '/api/v10/channels/222/messages'],
    ])
    expect(discord.requests[0]?.body).toEqual({
      content: 'deploy done @everyone',
      allowed_mentions: { parse: [] },
      flags: 4,
    })
    expect(discord.requests[0]?.headers.authorization).toBe(`Bot ${token}`)
  })

  it('splits at 2000 on line boundaries', async () => {
    const text = Array.from(
      { length: 45 },
      (_, index) => `${String(index).padStart(2, '0')}${'d'.repeat(97)}`,
    ).join('\n')
    await channel().send('111', text, { signal: signal() })
    const contents = discord.requests.map((request) => String(request.body.content))
    expect(contents.map((content) => content.length)).toEqual([1999, 1999, 499])
    expect(contents.join('\n')).toBe(text)
  })

  it('the REST client waits out a 429 and retries by itself', async () => {
    discord.answerNext(discordRateLimit(0.3))
    await channel().send('111', 'after the limit', { signal: signal() })
    expect(discord.requests).toHaveLength(2)
    expect((discord.requests[1]?.at ?? 0) - (discord.requests[0]?.at ?? 0)).toBeGreaterThanOrEqual(250)
    expect(discord.requests[1]?.body.content).toBe('after the limit')
  })

  it('by default a 429 of more than 5 s fails at once with its wait, for the delivery ledger', async () => {
    discord.answerNext(discordRateLimit(40))
    const failure = await channelError(
      new DiscordChannel({ token, apiUrl: discord.url, retries: 1 }).send('123456789012345678', 'x', {
        signal: signal(),
      }),
    )
    const delivery = toDeliveryError(failure)
    expect(delivery.permanent).toBe(false)
    // The REST client adds its own small margin to the wait Discord sent.
    expect(delivery.retryAfterMs).toBeGreaterThanOrEqual(40_000)
    expect(delivery.retryAfterMs).toBeLessThan(41_000)
  })

  it('a 429 asking for longer than maxRetryAfterMs fails instead of waiting', async () => {
    discord.answerNext(discordRateLimit(120))
    // Waiting out the 120 s would outlast the test; and nothing was sent again.
    const error = await channelError(
      channel({ maxRetryAfterMs: 1000 }).send('111', 'x', { signal: signal() }),
    )
    expect(error.code).toBe('CHANNEL_SEND_FAILED')
    expect(error.data).toMatchObject({ status: 429 })
    expect(discord.requests).toHaveLength(1)
  })

  it('a rejected token is CHANNEL_AUTH_FAILED, with the token nowhere in the error', async () => {
    const wrong = channel({ token: 'WRONG.DISCORDSECRETVALUE.x' })
    const error = await channelError(wrong.send('111', 'x', { signal: signal() }))
    expect(error.code).toBe('CHANNEL_AUTH_FAILED')
    expect(inspect(error, { depth: 20 })).not.toContain('DISCORDSECRETVALUE')
    expect(JSON.stringify(error)).not.toContain('DISCORDSECRETVALUE')
  })

  it('refuses malformed and disallowed channel ids and a bare target without a default', async () => {
    expect((await channelError(channel().send('general', 'x'))).code).toBe('CHANNEL_INVALID_TARGET')
    expect((await channelError(channel().send(undefined, 'x'))).code).toBe('CHANNEL_NO_DEFAULT_CHAT')
    expect((await channelError(channel({ allowedChannels: ['1'] }).send('2', 'x'))).code).toBe(
      'CHANNEL_TARGET_NOT_ALLOWED',
    )
    expect(discord.requests).toHaveLength(0)
  })
})
