import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ChannelNotifier } from '@lango/background'
import type { Clock, ChannelSender as CronChannelSender } from '@lango/cron'
import type { ApprovalGate } from '@lango/tools'
import { deliveryTargetFromSession as toolsDeliveryTarget } from '@lango/tools'
import type { ChannelSender as WorkflowChannelSender } from '@lango/workflow'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  BUSY_REPLY,
  type ChannelAdapter,
  type ChannelApprovalRequest,
  ChannelError,
  ChannelRouter,
  type ConversationHandler,
  deliveryTargetFromSession,
  type InboundHandler,
  loadChannelAdapter,
  parseRetryAfter,
  parseSessionKey,
  parseTarget,
  sessionKeyOf,
  splitMessage,
  withRetry,
} from '../src/channels/index.js'
import { undeliverableBecause } from '../src/channels/target.js'
import { silentLogger } from '../src/logger.js'
import { recordingLogger } from './fixtures/fake-chat-apis.js'
import { until } from './fixtures/http-server.js'

/** Resolves when `settle` is called: lets a test hold a handler mid-flight. */
function deferred<T = void>() {
  let settle!: (value: T) => void
  const promise = new Promise<T>((resolve) => {
    settle = resolve
  })
  return { promise, settle }
}

/** An adapter that records what it is asked to do (a fake of the ChannelAdapter port). */
function recordingAdapter(name = 'rec', options: { receive?: boolean; failStart?: Error } = {}) {
  const sent: { chatId: string | undefined; text: string }[] = []
  const approvals: { chatId: string; userId: string; request: ChannelApprovalRequest }[] = []
  let inbound: InboundHandler | undefined
  let stopped = 0
  let startSignal: AbortSignal | undefined
  const adapter: ChannelAdapter & Record<string, unknown> = {
    name,
    async send(chatId, text, { signal } = {}) {
      signal?.throwIfAborted()
      sent.push({ chatId, text })
    },
    async requestApproval(chatId, userId, request) {
      approvals.push({ chatId, userId, request })
      return true
    },
    async stop() {
      stopped += 1
    },
  }
  if (options.receive ?? true)
    adapter.start = async (handler, { signal }) => {
      if (options.failStart !== undefined) throw options.failStart
      inbound = handler
      startSignal = signal
    }
  return {
    adapter,
    sent,
    approvals,
    get stopped() {
      return stopped
    },
    get startSignal() {
      return startSignal
    },
    /** Delivers one inbound message the way an adapter does. */
    receive(chatId: string, userId: string, text: string, signal = new AbortController().signal) {
      if (inbound === undefined) throw new Error('not started')
      return inbound({ channel: name, chatId, userId, text }, { signal })
    },
  }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection')
    },
    (error: unknown) => error,
  )
}

async function channelError(promise: Promise<unknown>): Promise<ChannelError> {
  const error = await rejection(promise)
  if (!ChannelError.is(error)) throw new Error(`expected a ChannelError, got ${String(error)}`)
  return error
}

describe('splitMessage', () => {
  it('returns a short text as one part', () => {
    expect(splitMessage('hello\nworld', 4096)).toEqual(['hello\nworld'])
  })

  it('splits at 4096 between lines and loses nothing', () => {
    const lines = Array.from(
      { length: 120 },
      (_, index) => `${String(index).padStart(3, '0')} ${'x'.repeat(95)}`,
    )
    const text = lines.join('\n')
    const parts = splitMessage(text, 4096)
    expect(parts.length).toBe(3)
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(4096)
      // Every part holds whole lines.
      for (const line of part.split('\n')) expect(line).toMatch(/^\d{3} x{95}$/)
    }
    expect(parts.join('\n')).toBe(text)
    // 40 lines of 99 characters plus 39 newlines fit 4096; a 41st would not.
    expect(parts[0]?.split('\n').length).toBe(40)
  })

  it('splits at 2000 for Discord the same way', () => {
    const text = Array.from({ length: 50 }, () => 'y'.repeat(99)).join('\n')
    const parts = splitMessage(text, 2000)
    expect(parts.map((part) => part.split('\n').length)).toEqual([20, 20, 10])
    expect(parts.every((part) => part.length <= 2000)).toBe(true)
  })

  it('cuts a single longer line hard, next to whole lines', () => {
    const long = 'z'.repeat(5000)
    const parts = splitMessage(`before\n${long}\nafter`, 4096)
    expect(parts).toEqual(['before', 'z'.repeat(4096), `${'z'.repeat(904)}\nafter`])
  })

  it('never cuts inside a surrogate pair', () => {
    const text = `a${'😀'.repeat(3000)}`
    const parts = splitMessage(text, 4096)
    expect(parts[0]?.length).toBe(4095)
    expect(parts.join('')).toBe(text)
    for (const part of parts) expect(part).toBe(Buffer.from(part, 'utf8').toString('utf8'))
  })

  it('drops blank parts and refuses a useless limit', () => {
    expect(splitMessage('\n \n\n', 10)).toEqual([])
    expect(() => splitMessage('x', 1)).toThrow(RangeError)
  })
})

describe('targets and session keys', () => {
  it('parses bare and chat targets; the chat id is everything after the first colon', () => {
    expect(parseTarget('telegram')).toEqual({ channel: 'telegram', chatId: undefined })
    expect(parseTarget('telegram:-100123')).toEqual({ channel: 'telegram', chatId: '-100123' })
    expect(parseTarget('line:ops:x')).toEqual({ channel: 'line', chatId: 'ops:x' })
  })

  it.each(['', 'Telegram', 'telegram:', 'tele gram', 'telegram:a b', `x:${'1'.repeat(300)}`])(
    'refuses the target %j',
    (target) => {
      expect(() => parseTarget(target)).toThrow(expect.objectContaining({ code: 'CHANNEL_INVALID_TARGET' }))
    },
  )

  it("says why a target cannot be delivered to, through the adapter's checkChat where it has one", async () => {
    const refusing: ChannelAdapter = {
      name: 'line',
      send: async () => {},
      checkChat: (chatId) => {
        if (chatId !== 'ops')
          throw new ChannelError('CHANNEL_TARGET_NOT_ALLOWED', `line: room ${chatId} is closed`)
      },
    }
    const router = new ChannelRouter({ adapters: [refusing], logger: silentLogger })
    expect(undeliverableBecause('line:ops', router)).toBeUndefined()
    expect(undeliverableBecause('line:lobby', router)).toBe('line: room lobby is closed')
    expect(undeliverableBecause('slack:C1', router)).toBe('the slack channel is not configured')
    expect(undeliverableBecause('Slack', router)).toBe(
      'a delivery target is <channel> or <channel>:<chat id>',
    )
    // Against the contract, an async checkChat: not awaited (the target is taken), and its
    // rejection is handled, not left to end the process.
    const unhandled: unknown[] = []
    const record = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', record)
    try {
      const asynchronous = {
        name: 'later',
        send: async () => {},
        checkChat: async () => {
          throw new Error('too late')
        },
      } as unknown as ChannelAdapter
      const other = new ChannelRouter({ adapters: [asynchronous], logger: silentLogger })
      expect(undeliverableBecause('later:x', other)).toBeUndefined()
      await new Promise((resolve) => setImmediate(resolve))
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', record)
    }
  })

  it('builds and reads <channel>:<chat>:<user>', () => {
    const key = sessionKeyOf({ channel: 'telegram', chatId: '123', userId: '456' })
    expect(key).toBe('telegram:123:456')
    expect(parseSessionKey(key)).toEqual({ channel: 'telegram', chatId: '123', userId: '456' })
    expect(parseSessionKey('cron:nightly')).toBeUndefined()
    expect(parseSessionKey('cron:nightly:run:1')).toBeUndefined()
  })

  it("derives the delivery target by @lango/tools' one rule, custom channels included", () => {
    expect(deliveryTargetFromSession).toBe(toolsDeliveryTarget)
    expect(deliveryTargetFromSession('telegram:123:456')).toBe('telegram:123')
    expect(deliveryTargetFromSession('line:ops:alice')).toBe('line:ops')
    expect(deliveryTargetFromSession('cron:nightly')).toBeUndefined()
  })
})

describe('withRetry and parseRetryAfter', () => {
  /** A clock whose timers fire on the next turn, recording the delays asked for. */
  function recordingClock() {
    const delays: number[] = []
    const clock: Clock = {
      now: () => new Date('2026-11-20T10:00:00Z'),
      setTimeout: (callback, ms) => {
        delays.push(ms)
        return setImmediate(callback)
      },
      clearTimeout: (handle) => clearImmediate(handle as NodeJS.Immediate),
    }
    return { clock, delays }
  }

  it('retries retryable failures with growing backoff, then throws the last error', async () => {
    const { clock, delays } = recordingClock()
    let attempts = 0
    const error = await rejection(
      withRetry(
        async (attempt) => {
          attempts = attempt
          throw new Error(`failure ${attempt}`)
        },
        { classify: () => ({ retry: true }), maxAttempts: 4, baseDelayMs: 100, clock, random: () => 0.999 },
      ),
    )
    expect(attempts).toBe(4)
    expect((error as Error).message).toBe('failure 4')
    expect(delays).toEqual([100, 200, 400])
  })

  it('waits the Retry-After instead of the backoff, and gives up on one that is too long', async () => {
    const { clock, delays } = recordingClock()
    let calls = 0
    const value = await withRetry(
      async () => {
        calls += 1
        if (calls < 3) throw new Error('limited')
        return 'sent'
      },
      { classify: () => ({ retry: true, retryAfterMs: 1500 }), clock },
    )
    expect(value).toBe('sent')
    expect(delays).toEqual([1500, 1500])

    const tooLong = await rejection(
      withRetry(
        async () => {
          throw new Error('wait an hour')
        },
        { classify: () => ({ retry: true, retryAfterMs: 3_600_000 }), maxRetryAfterMs: 60_000, clock },
      ),
    )
    expect((tooLong as Error).message).toBe('wait an hour')
    expect(delays).toEqual([1500, 1500])
  })

  it('throws a non-retryable error at once', async () => {
    let calls = 0
    await rejection(
      withRetry(
        async () => {
          calls += 1
          throw new Error('400')
        },
        { classify: () => ({ retry: false }) },
      ),
    )
    expect(calls).toBe(1)
  })

  it('rethrows signal.reason when aborted before or while waiting', async () => {
    const before = new AbortController()
    const reason = new Error('stop now')
    before.abort(reason)
    let calls = 0
    const first = await rejection(
      withRetry(
        async () => {
          calls += 1
        },
        { classify: () => ({ retry: true }), signal: before.signal },
      ),
    )
    expect(first).toBe(reason)
    expect(calls).toBe(0)

    // A clock whose timers never fire: only the abort can end the wait.
    const delays: number[] = []
    const stalled: Clock = {
      now: () => new Date(),
      setTimeout: (_callback, ms) => delays.push(ms),
      clearTimeout: () => {},
    }
    const during = new AbortController()
    let attempts = 0
    const waiting = withRetry(
      async () => {
        attempts += 1
        throw new Error('down')
      },
      { classify: () => ({ retry: true, retryAfterMs: 30_000 }), signal: during.signal, clock: stalled },
    )
    setTimeout(() => during.abort(reason), 20)
    expect(await rejection(waiting)).toBe(reason)
    expect(attempts).toBe(1)
    expect(delays).toEqual([30_000])
  })

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = new Date('2026-11-20T10:00:00Z')
    expect(parseRetryAfter('3', now)).toBe(3000)
    expect(parseRetryAfter('0.25', now)).toBe(250)
    expect(parseRetryAfter('Fri, 20 Nov 2026 10:00:05 GMT', now)).toBe(5000)
    expect(parseRetryAfter('Fri, 20 Nov 2026 09:00:00 GMT', now)).toBe(0)
    expect(parseRetryAfter('soon', now)).toBeUndefined()
    expect(parseRetryAfter(null, now)).toBeUndefined()
  })
})

describe('ChannelRouter', () => {
  it('fits the ChannelSender of cron and workflow, the ChannelNotifier of background and an ApprovalGate', () => {
    const router = new ChannelRouter({ adapters: [] })
    const cron: CronChannelSender = router
    const workflow: WorkflowChannelSender = router
    const background: ChannelNotifier = router
    const gate: ApprovalGate = { request: (request, options) => router.requestApproval(request, options) }
    expect([cron, workflow, background, gate].every((port) => port !== undefined)).toBe(true)
  })

  it('routes <channel> and <channel>:<chat> to the adapter', async () => {
    const rec = recordingAdapter()
    const router = new ChannelRouter({ adapters: [rec.adapter] })
    await router.send('rec:42', 'to a chat', { signal: new AbortController().signal })
    await router.send('rec', 'to the default chat', { signal: new AbortController().signal })
    expect(rec.sent).toEqual([
      { chatId: '42', text: 'to a chat' },
      { chatId: undefined, text: 'to the default chat' },
    ])
    expect(router.channels).toEqual(['rec', 'log'])
  })

  it('keeps the log target: the text goes to the server log, cut at 4000 characters', async () => {
    const logger = recordingLogger()
    const router = new ChannelRouter({ adapters: [], logger })
    await router.send('log', 'a result', { signal: new AbortController().signal })
    await router.send('log:cron', 'x'.repeat(5000), { signal: new AbortController().signal })
    expect(logger.entries).toEqual([
      { level: 'info', message: 'delivery', fields: { target: 'log', text: 'a result' } },
      { level: 'info', message: 'delivery', fields: { target: 'log:cron', text: 'x'.repeat(4000) } },
    ])
    const without = new ChannelRouter({ adapters: [], logChannel: false })
    expect((await channelError(without.send('log', 'x'))).code).toBe('CHANNEL_NOT_CONFIGURED')
  })

  it('refuses unknown, unconfigured and malformed targets and blank texts with typed errors', async () => {
    const router = new ChannelRouter({ adapters: [recordingAdapter().adapter] })
    const unknown = await channelError(router.send('matrix:1', 'x'))
    expect(unknown.code).toBe('CHANNEL_UNKNOWN')
    expect(unknown.message).toBe('no channel is named matrix')
    expect(unknown.toJSON()).toEqual({
      name: 'ChannelError',
      code: 'CHANNEL_UNKNOWN',
      message: 'no channel is named matrix',
      data: { channel: 'matrix' },
    })
    for (const target of ['telegram', 'telegram:123', 'slack:C1', 'discord:1', 'webhook'])
      expect((await channelError(router.send(target, 'x'))).code).toBe('CHANNEL_NOT_CONFIGURED')
    expect((await channelError(router.send('Not A Target', 'x'))).code).toBe('CHANNEL_INVALID_TARGET')
    expect((await channelError(router.send('rec:1', ' \n '))).code).toBe('CHANNEL_INVALID_MESSAGE')
  })

  it('passes an adapter ChannelError through and wraps anything else as CHANNEL_SEND_FAILED', async () => {
    const own = new ChannelError('CHANNEL_TARGET_NOT_ALLOWED', 'no')
    const foreign = new TypeError('socket hang up')
    let next: Error = own
    const router = new ChannelRouter({
      adapters: [
        {
          name: 'flaky',
          async send() {
            throw next
          },
        },
      ],
    })
    expect(await rejection(router.send('flaky:1', 'x'))).toBe(own)
    next = foreign
    const wrapped = await channelError(router.send('flaky:1', 'x'))
    expect(wrapped.code).toBe('CHANNEL_SEND_FAILED')
    expect(wrapped.cause).toBe(foreign)
    // The adapter's reason is kept (first line, bounded; an address, which may hold a token, is not).
    expect(wrapped.message).toBe('delivery to flaky failed: socket hang up')
    next = new Error('POST https://user:tok@chat.example/send refused\n    at internal stack')
    expect((await channelError(router.send('flaky:1', 'x'))).message).toBe(
      'delivery to flaky failed: POST <url> refused',
    )
  })

  it('rejects with signal.reason when aborted before or during a send', async () => {
    const rec = recordingAdapter()
    const hanging: ChannelAdapter = {
      name: 'slow',
      send: (_chat, _text, { signal } = {}) =>
        new Promise((_resolve, reject) =>
          signal?.addEventListener('abort', () => reject(new Error('inner'))),
        ),
    }
    const router = new ChannelRouter({ adapters: [rec.adapter, hanging] })
    const before = new AbortController()
    const reason = new Error('deadline')
    before.abort(reason)
    expect(await rejection(router.send('rec:1', 'x', { signal: before.signal }))).toBe(reason)
    expect(rec.sent).toEqual([])
    const during = new AbortController()
    const sending = router.send('slow:1', 'x', { signal: during.signal })
    during.abort(reason)
    expect(await rejection(sending)).toBe(reason)
  })

  it('cuts an oversized text with a note', async () => {
    const rec = recordingAdapter()
    const router = new ChannelRouter({ adapters: [rec.adapter], maxTextLength: 100 })
    await router.send('rec:1', 'a'.repeat(250))
    const text = rec.sent[0]?.text ?? ''
    expect(text.length).toBeLessThanOrEqual(100)
    expect(text).toMatch(/^a+\n\[… 150 more characters cut\]$/)
  })

  it('refuses duplicate and malformed channel names', () => {
    expect(
      () => new ChannelRouter({ adapters: [recordingAdapter('a').adapter, recordingAdapter('a').adapter] }),
    ).toThrow(expect.objectContaining({ code: 'CHANNEL_DUPLICATE' }))
    expect(() => new ChannelRouter({ adapters: [recordingAdapter('Bad Name').adapter] })).toThrow(
      expect.objectContaining({ code: 'CHANNEL_INVALID_OPTIONS' }),
    )
  })

  // Issue 21 (8): a channel named like the server's own sessions made its chats look unattended.
  it.each(['cron', 'bg', 'background', 'workflow'])(
    'refuses an adapter named %s, a session name of the server',
    (name) => {
      expect(() => new ChannelRouter({ adapters: [recordingAdapter(name).adapter] })).toThrow(
        expect.objectContaining({
          code: 'CHANNEL_INVALID_OPTIONS',
          message: expect.stringContaining('reserved'),
        }),
      )
    },
  )

  describe('inbound', () => {
    let router: ChannelRouter
    afterEach(async () => {
      await router.stop()
    })

    it('gives the handler the message and its session key, and the reply back', async () => {
      const rec = recordingAdapter()
      router = new ChannelRouter({ adapters: [rec.adapter] })
      const seen: { text: string; sessionKey: string }[] = []
      const result = await router.start(async (message, { sessionKey }) => {
        seen.push({ text: message.text, sessionKey })
        return `echo: ${message.text}`
      })
      expect(result).toEqual({ started: ['rec'], deferred: [], failed: [] })
      expect(await rec.receive('c1', 'u1', 'hi')).toBe('echo: hi')
      expect(seen).toEqual([{ text: 'hi', sessionKey: 'rec:c1:u1' }])
    })

    it('handles one chat in order, one message at a time, other chats alongside', async () => {
      const rec = recordingAdapter()
      router = new ChannelRouter({ adapters: [rec.adapter] })
      const gate = deferred()
      const events: string[] = []
      await router.start(async (message) => {
        events.push(`start ${message.chatId} ${message.text}`)
        if (message.text === 'first') await gate.promise
        events.push(`end ${message.chatId} ${message.text}`)
        return message.text
      })
      const first = rec.receive('c1', 'u1', 'first')
      const second = rec.receive('c1', 'u1', 'second')
      const elsewhere = await rec.receive('c2', 'u2', 'other chat')
      expect(elsewhere).toBe('other chat')
      expect(events).toEqual(['start c1 first', 'start c2 other chat', 'end c2 other chat'])
      gate.settle()
      expect(await Promise.all([first, second])).toEqual(['first', 'second'])
      expect(events.slice(3)).toEqual(['end c1 first', 'start c1 second', 'end c1 second'])
    })

    it('in a group, one person’s turn (or the approval it waits for) does not hold up another’s', async () => {
      const rec = recordingAdapter()
      router = new ChannelRouter({ adapters: [rec.adapter] })
      const gate = deferred()
      await router.start(async (message) => {
        if (message.userId === 'u1') await gate.promise
        return `${message.userId}: ${message.text}`
      })
      const waiting = rec.receive('group', 'u1', 'needs approval')
      expect(await rec.receive('group', 'u2', 'hello')).toBe('u2: hello')
      gate.settle()
      expect(await waiting).toBe('u1: needs approval')
    })

    it('bounds a reply like a delivery, saying how much was cut', async () => {
      const rec = recordingAdapter()
      router = new ChannelRouter({ adapters: [rec.adapter], maxTextLength: 100 })
      await router.start(async () => 'z'.repeat(1000))
      const reply = (await rec.receive('c1', 'u1', 'write a lot')) ?? ''
      expect(reply.length).toBeLessThanOrEqual(100)
      expect(reply).toMatch(/^z+\n\[… \d+ more characters cut\]$/)
    })

    it('answers busy when a chat queue is full, without calling the handler', async () => {
      const rec = recordingAdapter()
      router = new ChannelRouter({ adapters: [rec.adapter], maxQueuedPerChat: 1 })
      const gate = deferred()
      const handled: string[] = []
      await router.start(async (message) => {
        handled.push(message.text)
        await gate.promise
        return 'done'
      })
      const running = rec.receive('c1', 'u1', 'one')
      const waiting = rec.receive('c1', 'u1', 'two')
      expect(await rec.receive('c1', 'u1', 'three')).toBe(BUSY_REPLY)
      gate.settle()
      expect(await Promise.all([running, waiting])).toEqual(['done', 'done'])
      expect(handled).toEqual(['one', 'two'])
    })

    it('turns a handler error into a short notice and logs it', async () => {
      const rec = recordingAdapter()
      const logger = recordingLogger()
      router = new ChannelRouter({ adapters: [rec.adapter], logger })
      await router.start(async () => {
        throw Object.assign(new Error('model down'), { code: 'AGENT_MODEL_UNAVAILABLE' })
      })
      expect(await rec.receive('c1', 'u1', 'hi')).toBe('Sorry, that failed (AGENT_MODEL_UNAVAILABLE).')
      expect(logger.entries.some((entry) => entry.message === 'conversation handler failed')).toBe(true)
    })

    it('ignores ids that cannot form a session key, and bounds the text', async () => {
      const rec = recordingAdapter()
      const logger = recordingLogger()
      router = new ChannelRouter({ adapters: [rec.adapter], logger, maxInboundTextLength: 10 })
      const texts: string[] = []
      await router.start(async (message) => {
        texts.push(message.text)
        return undefined
      })
      expect(await rec.receive('a:b', 'u1', 'x')).toBeUndefined()
      expect(await rec.receive('c1', 'u 1', 'x')).toBeUndefined()
      await rec.receive('c1', 'u1', 'y'.repeat(50))
      expect(texts).toEqual([`${'y'.repeat(10)}\n[… 40 more characters of this message were cut]`])
      expect(logger.entries.filter((entry) => entry.level === 'warn')).toHaveLength(2)
    })

    it('reports an adapter that cannot start and starts the others', async () => {
      const good = recordingAdapter('good')
      const bad = recordingAdapter('bad', {
        failStart: new ChannelError('CHANNEL_AUTH_FAILED', 'token rejected'),
      })
      const sendOnly = recordingAdapter('quiet', { receive: false })
      router = new ChannelRouter({ adapters: [good.adapter, bad.adapter, sendOnly.adapter] })
      const result = await router.start(async () => undefined)
      expect(result.started).toEqual(['good'])
      expect(result.failed).toEqual([
        { channel: 'bad', error: expect.objectContaining({ code: 'CHANNEL_AUTH_FAILED' }) },
      ])
    })

    it('gives up on an adapter whose start() never settles: named in the log, stopped, the others run', async () => {
      const good = recordingAdapter('good')
      let stopped = 0
      const hung: ChannelAdapter = {
        name: 'hangs',
        send: async () => undefined,
        start: () => new Promise<void>(() => {}),
        stop: async () => {
          stopped++
        },
      }
      const logger = recordingLogger()
      router = new ChannelRouter({ adapters: [good.adapter, hung], logger, startTimeoutMs: 200 })
      const result = await router.start(async () => undefined)
      expect(result.started).toEqual(['good'])
      expect(result.failed).toEqual([
        {
          channel: 'hangs',
          error: expect.objectContaining({
            code: 'CHANNEL_RECEIVE_FAILED',
            message: 'hangs: its start() did not finish within 200 ms; the server runs without it',
          }),
        },
      ])
      expect(
        logger.entries.some(
          (entry) => entry.message === 'channel failed to start' && entry.fields?.channel === 'hangs',
        ),
      ).toBe(true)
      await until(async () => stopped === 1 || undefined)
    })

    it('stop aborts in-flight handlers, stops every adapter and waits', async () => {
      const rec = recordingAdapter()
      router = new ChannelRouter({ adapters: [rec.adapter] })
      let aborted = false
      const entered = deferred()
      await router.start(
        (_message, { signal }) =>
          new Promise((_resolve, reject) => {
            entered.settle()
            signal.addEventListener('abort', () => {
              aborted = true
              reject(signal.reason)
            })
          }),
      )
      const pending = rec.receive('c1', 'u1', 'long job')
      await entered.promise
      await router.stop()
      expect(aborted).toBe(true)
      expect(rec.startSignal?.aborted).toBe(true)
      expect(rec.stopped).toBe(1)
      await expect(pending).rejects.toThrow()
      await router.stop()
      expect(rec.stopped).toBe(1)
    })
  })

  it('routes approvals by session key and answers undefined when no channel can ask', async () => {
    const rec = recordingAdapter()
    const sendOnly: ChannelAdapter = { name: 'quiet', send: async () => undefined }
    const router = new ChannelRouter({ adapters: [rec.adapter, sendOnly] })
    const signal = new AbortController().signal
    const request = { toolName: 'exec', summary: 'rm -rf build', safety: 'dangerous' }
    expect(await router.requestApproval({ ...request, sessionKey: 'rec:c1:u1' }, { signal })).toBe(true)
    expect(rec.approvals).toEqual([
      { chatId: 'c1', userId: 'u1', request: { ...request, sessionKey: 'rec:c1:u1' } },
    ])
    expect(
      await router.requestApproval({ ...request, sessionKey: 'cron:nightly' }, { signal }),
    ).toBeUndefined()
    expect(
      await router.requestApproval({ ...request, sessionKey: 'quiet:c1:u1' }, { signal }),
    ).toBeUndefined()
    expect(await router.requestApproval(request, { signal })).toBeUndefined()
  })

  it('derives reply targets for built-in chat channels and receiving custom ones', () => {
    const router = new ChannelRouter({
      adapters: [recordingAdapter('line').adapter, recordingAdapter('quiet', { receive: false }).adapter],
    })
    expect(router.deliveryTargetFor('line:ops:alice')).toBe('line:ops')
    expect(router.deliveryTargetFor('telegram:1:2')).toBe('telegram:1')
    expect(router.deliveryTargetFor('quiet:c:u')).toBe('quiet:c')
    expect(router.deliveryTargetFor('bg:task-1')).toBeUndefined()
  })
})

describe('loadChannelAdapter', () => {
  let home: string
  beforeEach(async () => {
    home = await mkdtemp(join(tmpdir(), 'lango-channels-'))
    await mkdir(join(home, 'adapters'))
  })
  afterEach(async () => {
    await rm(home, { recursive: true, force: true })
  })

  const write = (file: string, source: string) => writeFile(join(home, 'adapters', file), source)
  const load = (module: string, name = 'custom', options?: Record<string, unknown>) =>
    loadChannelAdapter(
      { name, module, ...(options === undefined ? {} : { options }) },
      { home, logger: silentLogger },
    )

  it('loads a factory from a path relative to $LANGO_HOME, with options and context', async () => {
    await write(
      'good.mjs',
      `export default async (options, context) => ({
        name: context.name,
        seen: { options, home: context.home },
        async send() {},
        log(message) { context.logger.info(message, { extra: 1 }) },
      })`,
    )
    const logger = recordingLogger()
    const adapter = (await loadChannelAdapter(
      { name: 'custom', module: 'adapters/good.mjs', options: { port: 1 } },
      { home, logger },
    )) as ChannelAdapter & { seen: unknown; log(message: string): void }
    expect(adapter.name).toBe('custom')
    expect(adapter.seen).toEqual({ options: { port: 1 }, home })
    adapter.log('hello')
    expect(logger.entries).toEqual([
      { level: 'info', message: 'hello', fields: { channel: 'custom', extra: 1 } },
    ])
    const absolute = await load(join(home, 'adapters', 'good.mjs'))
    expect(absolute.name).toBe('custom')
  })

  it('CHANNEL_ADAPTER_NOT_FOUND for a missing module or a directory', async () => {
    const missing = await channelError(load('adapters/nope.mjs'))
    expect(missing.code).toBe('CHANNEL_ADAPTER_NOT_FOUND')
    expect(missing.message).toContain(join(home, 'adapters', 'nope.mjs'))
    expect((await channelError(load('adapters'))).code).toBe('CHANNEL_ADAPTER_NOT_FOUND')
  })

  it('CHANNEL_ADAPTER_LOAD_FAILED when the module or the factory throws', async () => {
    await write('broken.mjs', `throw new Error('top-level failure')`)
    const broken = await channelError(load('adapters/broken.mjs'))
    expect(broken.code).toBe('CHANNEL_ADAPTER_LOAD_FAILED')
    expect((broken.cause as Error).message).toBe('top-level failure')
    await write('throws.mjs', `export default () => { throw new Error('bad options') }`)
    const throws = await channelError(load('adapters/throws.mjs'))
    expect(throws.code).toBe('CHANNEL_ADAPTER_LOAD_FAILED')
    expect((throws.cause as Error).message).toBe('bad options')
    // The message an operator reads says why (and where, for a module that does not load).
    expect(broken.message).toMatch(
      /^channel custom: the adapter module failed to load: top-level failure \(at .*broken\.mjs:1\)$/,
    )
    expect(throws.message).toBe('channel custom: the adapter factory threw: bad options')
    await write('syntax.mjs', 'export default () => {\n  return {\n}}}\n')
    expect((await channelError(load('adapters/syntax.mjs'))).message).toMatch(
      // Node says `Unexpected token`; under vitest its module loader words it: either way, a reason.
      /^channel custom: the adapter module failed to load: \S.*(syntax|Unexpected token)/i,
    )
  })

  it('CHANNEL_ADAPTER_INVALID without a default-exported factory or without an adapter', async () => {
    await write('named.mjs', 'export const factory = () => ({})')
    await write('object.mjs', 'export default { name: "custom", send() {} }')
    await write('empty.mjs', 'export default () => ({ name: "custom" })')
    await write('bad-stop.mjs', 'export default () => ({ name: "custom", send() {}, stop: true })')
    await write('bad-check.mjs', 'export default () => ({ name: "custom", send() {}, checkChat: "no" })')
    await write('renamed.mjs', 'export default () => ({ name: "other", send() {} })')
    for (const file of [
      'named.mjs',
      'object.mjs',
      'empty.mjs',
      'bad-stop.mjs',
      'bad-check.mjs',
      'renamed.mjs',
    ]) {
      const error = await channelError(load(`adapters/${file}`))
      expect(error.code, file).toBe('CHANNEL_ADAPTER_INVALID')
    }
  })

  it('refuses a name that cannot be a channel name', async () => {
    expect((await channelError(load('adapters/good.mjs', 'Has Space'))).code).toBe('CHANNEL_INVALID_OPTIONS')
  })
})

// A type-level check that a ConversationHandler can be written against the exported types alone.
const echo: ConversationHandler = async (message, { sessionKey }) => `${sessionKey}: ${message.text}`
void echo
