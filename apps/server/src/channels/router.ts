import { abortable, timeoutSignal } from '../abort.js'
import { RESERVED_CHANNEL_NAMES } from '../config/rules.js'
import { type Logger, silentLogger } from '../logger.js'
import { ChatQueue } from './chat-queue.js'
import { ChannelError, reasonOf } from './errors.js'
import { isChannelAdapter } from './loader.js'
import {
  CHANNEL_NAME_PATTERN,
  deliveryTargetFromSession,
  isSessionIdPart,
  parseSessionKey,
  parseTarget,
  sessionKeyOf,
} from './target.js'
import type {
  ChannelAdapter,
  ChannelApprovalRequest,
  ChannelSender,
  InboundHandler,
  InboundMessage,
} from './types.js'

/** Names the server configures itself; a target naming one that is not registered is `CHANNEL_NOT_CONFIGURED`. */
const BUILT_IN_CHANNELS: ReadonlySet<string> = new Set(['telegram', 'slack', 'discord', 'webhook', 'log'])
/**
 * Names no adapter may take: the first segment of the server's own session keys (the reserved
 * channel names that are not built-in channels). A channel's chats are `<channel>:<chat>:<user>`;
 * one named `cron` would read like a cron job's session.
 */
const SESSION_NAMES: ReadonlySet<string> = new Set(
  RESERVED_CHANNEL_NAMES.filter((name) => !BUILT_IN_CHANNELS.has(name)),
)

/** What the host's conversation handler gets with each message, besides the message. */
interface ConversationContext {
  /** `<channel>:<chat>:<user>`. */
  readonly sessionKey: string
  /** Aborted when the channel or the router stops. */
  readonly signal: AbortSignal
}

/**
 * The host's side of every chat: one inbound message in, the reply text (or `undefined`) out. The
 * agent runner goes here: `(message, { sessionKey, signal }) => agent.run({ prompt: message.text, sessionKey }, { signal })`.
 */
export type ConversationHandler = (
  message: InboundMessage,
  context: ConversationContext,
) => Promise<string | undefined>

/** Options of {@link ChannelRouter}. */
interface ChannelRouterOptions {
  /** The configured channels (built-in and custom); names must be distinct. */
  readonly adapters: readonly ChannelAdapter[]
  readonly logger?: Logger
  /**
   * Add the `log` channel (`log`, `log:<anything>`: the text goes to the server log at info level,
   * cut at 4000 characters), unless an adapter is named `log`. Default true.
   */
  readonly logChannel?: boolean
  /** The longest text `send` delivers; a longer one is cut, with a note saying so. Default 32,000. */
  readonly maxTextLength?: number
  /** The longest inbound text given to the handler; a longer one is cut. Default 16,000. */
  readonly maxInboundTextLength?: number
  /** Messages that may wait per conversation (a chat's user) behind the one being handled; more get {@link BUSY_REPLY}. Default 5. */
  readonly maxQueuedPerChat?: number
  /** Conversations with messages in flight at once; a message from one more gets {@link BUSY_REPLY}. Default 100. */
  readonly maxActiveChats?: number
  /**
   * How long an adapter's `start()` may take (default 60 s): one that has not settled by then is
   * stopped and counted failed, named in the log, and the server runs without it.
   */
  readonly startTimeoutMs?: number
}

/** Receiving on one exclusive channel, started and stopped by whoever decides who receives. */
interface ExclusiveReceiver {
  /** The adapter's `exclusive` key. */
  readonly key: string
  readonly channel: string
  /**
   * Starts receiving while `lease` holds; rejects when it cannot (see {@link ChannelAdapter.start}).
   * A failure after it started (Telegram's 409) goes to `lease.fail`.
   */
  start(lease?: ExclusiveLease): Promise<void>
  stop(): Promise<void>
}

/** The lease an exclusive receiver runs under (a `DutyContext` of the cluster's duties fits). */
interface ExclusiveLease {
  /** Milliseconds the lease surely still holds (≤ 0: receive no more). */
  validForMs(): number
  /** Receiving ended by itself: the lease's holder gives it up. */
  fail(error: unknown): void
}

/** Options of {@link ChannelRouter.start}. */
interface ChannelStartOptions {
  /**
   * Gets the adapters that declare `exclusive` instead of starting them: the host starts each only
   * while it holds that key's lease. Without it they start like the others.
   */
  readonly exclusive?: (receiver: ExclusiveReceiver) => void
}

/** The outcome of {@link ChannelRouter.start}: it never throws halfway. */
interface ChannelStartResult {
  /** Channels now receiving. */
  readonly started: readonly string[]
  /** Exclusive channels handed to `options.exclusive`, to start while holding their lease. */
  readonly deferred: readonly string[]
  /** Channels that could not start, with why (a `ChannelError`, e.g. `CHANNEL_AUTH_FAILED`). */
  readonly failed: readonly { readonly channel: string; readonly error: Error }[]
}

/** The reply to a message that finds its chat's queue full. */
export const BUSY_REPLY = 'Still working on your earlier messages. Please wait a moment and send this again.'

/**
 * All channels behind one `send(target, text, { signal })`: implements the `ChannelSender` of cron and
 * workflow and background's `ChannelNotifier`. Routes `telegram`, `telegram:<chat>`, `slack:<channel>`,
 * `discord:<channel>`, `webhook`, `log`, `<custom>:<id>` to their adapters; starts the receiving ones
 * with one {@link ConversationHandler} (per-chat ordered, bounded queues); routes approvals by session key.
 *
 * @example
 * ```ts
 * const router = new ChannelRouter({ adapters: [new TelegramChannel({ token, allowedChats: ['123'] })], logger })
 * await router.start(async (message, { sessionKey, signal }) => (await agent.run({ prompt: message.text, sessionKey }, { signal })).text)
 * await router.send('telegram', 'Good morning', { signal: AbortSignal.timeout(30_000) })
 * await router.stop()
 * ```
 */
export class ChannelRouter implements ChannelSender {
  readonly #adapters = new Map<string, ChannelAdapter>()
  readonly #logger: Logger
  readonly #maxTextLength: number
  readonly #maxInboundTextLength: number
  readonly #startTimeoutMs: number
  readonly #queue: ChatQueue
  readonly #controller = new AbortController()
  readonly #inFlight = new Set<Promise<unknown>>()
  #state: 'idle' | 'started' | 'stopped' = 'idle'
  #stopping: Promise<void> | undefined

  constructor(options: ChannelRouterOptions) {
    this.#logger = options.logger ?? silentLogger
    this.#maxTextLength = positiveInteger(options.maxTextLength ?? 32_000, 'maxTextLength')
    this.#maxInboundTextLength = positiveInteger(
      options.maxInboundTextLength ?? 16_000,
      'maxInboundTextLength',
    )
    this.#startTimeoutMs = positiveInteger(options.startTimeoutMs ?? 60_000, 'startTimeoutMs')
    this.#queue = new ChatQueue({
      maxWaitingPerKey: positiveInteger(options.maxQueuedPerChat ?? 5, 'maxQueuedPerChat'),
      maxKeys: positiveInteger(options.maxActiveChats ?? 100, 'maxActiveChats'),
    })
    for (const adapter of options.adapters) this.#register(adapter)
    if ((options.logChannel ?? true) && !this.#adapters.has('log'))
      this.#register(createLogChannel(this.#logger))
  }

  /** The registered channel names, in registration order. */
  get channels(): readonly string[] {
    return [...this.#adapters.keys()]
  }

  /** The adapter registered under `name`. */
  get(name: string): ChannelAdapter | undefined {
    return this.#adapters.get(name)
  }

  /**
   * Delivers `text` to `target`. Unknown channel: `CHANNEL_UNKNOWN`; a built-in one that is not
   * configured: `CHANNEL_NOT_CONFIGURED`; a blank text: `CHANNEL_INVALID_MESSAGE`; an adapter's own
   * failure stays a `ChannelError` (a foreign error becomes `CHANNEL_SEND_FAILED` with it as `cause`).
   * Aborting rejects with `signal.reason` unchanged.
   */
  async send(
    target: string,
    text: string,
    options: { readonly signal?: AbortSignal; readonly idempotencyKey?: string } = {},
  ): Promise<void> {
    const { signal, idempotencyKey } = options
    signal?.throwIfAborted()
    const { channel, chatId } = parseTarget(target)
    const adapter = this.#adapterFor(channel)
    if (text.trim() === '')
      throw new ChannelError('CHANNEL_INVALID_MESSAGE', 'the message text is empty', { data: { channel } })
    try {
      await adapter.send(chatId, this.#bound(text), {
        ...(signal === undefined ? {} : { signal }),
        ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
      })
    } catch (error) {
      if (signal?.aborted) throw signal.reason
      if (ChannelError.is(error)) throw error
      throw new ChannelError('CHANNEL_SEND_FAILED', `delivery to ${channel} failed${reasonOf(error)}`, {
        cause: error,
        data: { channel },
      })
    }
  }

  /**
   * True when `target`'s channel deduplicates sends by idempotency key (its adapter sets
   * `deduplicates`: the webhook); false for any other or unknown target.
   */
  canDeduplicate(target: string): boolean {
    try {
      return this.#adapters.get(parseTarget(target).channel)?.deduplicates === true
    } catch {
      return false
    }
  }

  /**
   * Starts every adapter that receives, each inbound message going to `handler` (per chat one at a
   * time, in order; at most `maxQueuedPerChat` waiting; a handler error is logged and answered with a
   * short notice). Never throws for one adapter's failure: see {@link ChannelStartResult}.
   */
  async start(handler: ConversationHandler, options: ChannelStartOptions = {}): Promise<ChannelStartResult> {
    if (this.#state !== 'idle')
      throw new ChannelError('CHANNEL_NOT_STARTED', `the channel router was already ${this.#state}`)
    this.#state = 'started'
    const started: string[] = []
    const deferred: string[] = []
    const failed: { channel: string; error: Error }[] = []
    const signal = this.#controller.signal
    await Promise.all(
      [...this.#adapters.values()].map(async (adapter) => {
        const start = adapter.start?.bind(adapter)
        if (start === undefined) return
        const receive = (lease?: ExclusiveLease) =>
          this.#withinStartTimeout(
            adapter,
            start(this.#inbound(adapter.name, handler), {
              signal,
              onError: (error) => {
                this.#logger.error('channel receive failed', { channel: adapter.name, error })
                lease?.fail(error)
              },
              ...(lease === undefined ? {} : { validForMs: () => lease.validForMs() }),
            }),
          )
        if (adapter.exclusive !== undefined && options.exclusive !== undefined) {
          options.exclusive({
            key: adapter.exclusive,
            channel: adapter.name,
            start: async (lease) => {
              if (this.#state !== 'started')
                throw new ChannelError('CHANNEL_NOT_STARTED', 'the channels stopped')
              await receive(lease)
            },
            stop: async () => adapter.stop?.(),
          })
          deferred.push(adapter.name)
          return
        }
        try {
          await receive()
          started.push(adapter.name)
        } catch (error) {
          const failure = error instanceof Error ? error : new Error(String(error))
          this.#logger.error('channel failed to start', { channel: adapter.name, error: failure })
          failed.push({ channel: adapter.name, error: failure })
        }
      }),
    )
    if (started.length > 0) this.#logger.info('channels receiving', { channels: started })
    return { started, deferred, failed }
  }

  /**
   * `starting`, or a `CHANNEL_RECEIVE_FAILED` rejection once it has not settled within the start
   * timeout; the adapter is then asked to stop (a hung `stop()` is not waited for).
   */
  async #withinStartTimeout(adapter: ChannelAdapter, starting: Promise<void>): Promise<void> {
    const ms = this.#startTimeoutMs
    const timeout = timeoutSignal(ms)
    try {
      await abortable(starting, timeout.signal)
    } catch (error) {
      if (!timeout.signal.aborted) throw error
      void Promise.resolve()
        .then(() => adapter.stop?.())
        .catch((stopError: unknown) =>
          this.#logger.warn('channel stop failed', { channel: adapter.name, error: stopError }),
        )
      throw new ChannelError(
        'CHANNEL_RECEIVE_FAILED',
        `${adapter.name}: its start() did not finish within ${ms < 1000 ? `${ms} ms` : `${ms / 1000} s`}; the server runs without it`,
        { data: { channel: adapter.name } },
      )
    } finally {
      timeout.clear()
    }
  }

  /**
   * Asks the user of a `<channel>:<chat>:<user>` session to approve a call, through that channel.
   * `undefined` when the session is not a chat session or its channel cannot ask; otherwise the
   * adapter's answer. Fits `@lango/tools`' `ApprovalGate.request`.
   */
  async requestApproval(
    request: ChannelApprovalRequest,
    options: { readonly signal: AbortSignal },
  ): Promise<boolean | undefined> {
    options.signal.throwIfAborted()
    const session = request.sessionKey === undefined ? undefined : parseSessionKey(request.sessionKey)
    if (session === undefined) return undefined
    const adapter = this.#adapters.get(session.channel)
    if (adapter?.requestApproval === undefined) return undefined
    return adapter.requestApproval(session.chatId, session.userId, request, options)
  }

  /** The reply target implied by a session key (`telegram:123:456` → `telegram:123`): `@lango/tools`' rule. */
  deliveryTargetFor(sessionKey: string | undefined): string | undefined {
    return deliveryTargetFromSession(sessionKey)
  }

  /** Stops receiving on every channel, aborts in-flight handlers and waits for them. Idempotent. */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop()
    return this.#stopping
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop()
  }

  async #stop(): Promise<void> {
    this.#state = 'stopped'
    this.#controller.abort(new DOMException('the channels are stopping', 'AbortError'))
    const results = await Promise.allSettled(
      [...this.#adapters.values()].map(async (adapter) => adapter.stop?.()),
    )
    results.forEach((result, index) => {
      if (result.status === 'rejected')
        this.#logger.warn('channel did not stop cleanly', {
          channel: [...this.#adapters.keys()][index],
          error: result.reason instanceof Error ? result.reason : new Error(String(result.reason)),
        })
    })
    await Promise.allSettled([...this.#inFlight])
  }

  #register(adapter: ChannelAdapter): void {
    if (!isChannelAdapter(adapter))
      throw new ChannelError('CHANNEL_INVALID_OPTIONS', 'a channel adapter needs a name and a send method')
    if (!CHANNEL_NAME_PATTERN.test(adapter.name))
      throw new ChannelError(
        'CHANNEL_INVALID_OPTIONS',
        'a channel name is 1-32 characters of a-z, 0-9, _ and -, starting with a letter',
        { data: { channel: adapter.name.slice(0, 40) } },
      )
    if (SESSION_NAMES.has(adapter.name))
      throw new ChannelError(
        'CHANNEL_INVALID_OPTIONS',
        `the channel name ${adapter.name} is reserved for the server's own sessions (${[...SESSION_NAMES].join(', ')})`,
        { data: { channel: adapter.name } },
      )
    if (this.#adapters.has(adapter.name))
      throw new ChannelError('CHANNEL_DUPLICATE', `two channels are named ${adapter.name}`, {
        data: { channel: adapter.name },
      })
    this.#adapters.set(adapter.name, adapter)
  }

  #adapterFor(channel: string): ChannelAdapter {
    const adapter = this.#adapters.get(channel)
    if (adapter !== undefined) return adapter
    if (BUILT_IN_CHANNELS.has(channel))
      throw new ChannelError('CHANNEL_NOT_CONFIGURED', `the ${channel} channel is not configured`, {
        data: { channel },
      })
    throw new ChannelError('CHANNEL_UNKNOWN', `no channel is named ${channel}`, { data: { channel } })
  }

  #bound(text: string): string {
    if (text.length <= this.#maxTextLength) return text
    const note = `\n[… ${text.length - this.#maxTextLength} more characters cut]`
    return text.slice(0, Math.max(0, this.#maxTextLength - note.length)) + note
  }

  /** The adapter-facing handler of one channel: checks, bounds, orders and guards the host's handler. */
  #inbound(channel: string, handler: ConversationHandler): InboundHandler {
    return (message, { signal }) => {
      if (!isSessionIdPart(message.chatId) || !isSessionIdPart(message.userId)) {
        this.#logger.warn('inbound message ignored: its chat or user id cannot form a session key', {
          channel,
        })
        return Promise.resolve(undefined)
      }
      const cut = message.text.length - this.#maxInboundTextLength
      const bounded: InboundMessage = {
        ...message,
        channel,
        // Cut, the model is told so (it would otherwise answer a message it read half of).
        text:
          cut > 0
            ? `${message.text.slice(0, this.#maxInboundTextLength)}\n[… ${cut} more characters of this message were cut]`
            : message.text,
      }
      const sessionKey = sessionKeyOf(bounded)
      const combined = AbortSignal.any([signal, this.#controller.signal])
      // One conversation (a chat's user) at a time, in order: in a group, one person's turn, or
      // the approval it waits for, does not hold up the others'.
      const queued = this.#queue
        .run(sessionKey, () => this.#handle(handler, bounded, sessionKey, combined))
        // A reply is bounded like a delivery: a runaway model does not flood the chat.
        ?.then((reply) => (typeof reply === 'string' ? this.#bound(reply) : reply))
      if (queued === undefined) {
        this.#logger.warn('inbound message refused: the chat queue is full', {
          channel,
          chatId: bounded.chatId,
        })
        return Promise.resolve(BUSY_REPLY)
      }
      this.#inFlight.add(queued)
      const untrack = (): void => {
        this.#inFlight.delete(queued)
      }
      queued.then(untrack, untrack)
      return queued
    }
  }

  async #handle(
    handler: ConversationHandler,
    message: InboundMessage,
    sessionKey: string,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    signal.throwIfAborted()
    try {
      return await handler(message, { sessionKey, signal })
    } catch (error) {
      if (signal.aborted) throw signal.reason
      const failure = error instanceof Error ? error : new Error(String(error))
      this.#logger.error('conversation handler failed', {
        channel: message.channel,
        chatId: message.chatId,
        error: failure,
      })
      const code = (failure as { code?: unknown }).code
      return `Sorry, that failed${typeof code === 'string' && /^[A-Z][A-Z0-9_]*$/.test(code) ? ` (${code})` : ''}.`
    }
  }
}

/**
 * The `log` channel: a delivery is written to the server log at info level (`delivery`, with the
 * target and the text cut at 4000 characters); what the server did before chat channels existed.
 */
function createLogChannel(logger: Logger): ChannelAdapter {
  return {
    name: 'log',
    async send(chatId, text, options = {}) {
      options.signal?.throwIfAborted()
      logger.info('delivery', {
        target: chatId === undefined ? 'log' : `log:${chatId}`,
        text: text.slice(0, 4000),
      })
    },
  }
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1)
    throw new ChannelError('CHANNEL_INVALID_OPTIONS', `${name} must be a positive integer`)
  return value
}
