/**
 * Type-level proof of the custom channel contract that examples/channel-adapter/README.md
 * documents ("Writing your own"), checked by `tsc --noEmit`: a module's default export
 * `(options, context) => adapter` (or a promise of one) is a `ChannelAdapterFactory`, `context` is
 * `{ name, home, logger }`, only `name` and `send` are required, and the handler `start` gets and the
 * approvals an adapter is asked for are what the server hands over.
 *
 * The example itself (`line-chat.mjs`) is JavaScript whose methods carry no types, so this file
 * cannot check it; `channels-example.test.ts` runs it through the server's loader instead.
 */
import type { ApprovalGate, ApprovalRequest } from '@lango/tools'
import { expectTypeOf } from 'vitest'
import type {
  ChannelAdapter,
  ChannelAdapterContext,
  ChannelAdapterFactory,
  ChannelApprovalRequest,
  ChannelCallOptions,
  ChannelStartOptions,
  InboundHandler,
  InboundMessage,
  InboundOptions,
} from '../src/channels/index.js'
import type { Logger } from '../src/logger.js'

type Fits<Source, Target> = [Source] extends [Target] ? true : false
declare function expectTrue<T extends true>(): T
declare function expectFalse<T extends false>(): T

// The factory gets the `options` from config as they are, and `{ name, home, logger }`.
expectTypeOf<Parameters<ChannelAdapterFactory>[0]>().toEqualTypeOf<Readonly<Record<string, unknown>>>()
expectTypeOf<ChannelAdapterContext>().toEqualTypeOf<{
  readonly name: string
  readonly home: string
  readonly logger: Logger
}>()

// The smallest adapter: `name` (the context's) and `send`; returned as it is or in a promise.
const minimal: ChannelAdapterFactory = (_options, context) => ({
  name: context.name,
  async send(chatId, text, { signal } = {}) {
    signal?.throwIfAborted()
    context.logger.debug('sent', { chatId, length: text.length })
  },
})
const promised: ChannelAdapterFactory = async (options, context) => minimal(options, context)
void promised

// Every part, written against the exported types alone, as line-chat.mjs has them.
const full: ChannelAdapterFactory = (_options, context) => {
  const pending = new Set<Promise<unknown>>()
  return {
    name: context.name,
    async send(_chatId: string | undefined, _text: string, options: ChannelCallOptions = {}) {
      options.signal?.throwIfAborted()
    },
    async start(inbound: InboundHandler, { signal, onError }: ChannelStartOptions) {
      const message: InboundMessage = { channel: context.name, chatId: 'ops', userId: 'alice', text: 'hi' }
      const options: InboundOptions = { signal }
      pending.add(inbound(message, options).catch((error: unknown) => onError?.(error as Error)))
    },
    async requestApproval(_chatId: string, _userId: string, request: ChannelApprovalRequest, { signal }) {
      signal.throwIfAborted()
      return request.safety === 'safe' ? true : undefined
    },
    async stop() {
      await Promise.all(pending)
    },
  }
}
void full

// Only `name` and `send` are required; the router feature-detects `start`, `requestApproval`, `stop`.
expectTrue<Fits<{ readonly name: string; send: ChannelAdapter['send'] }, ChannelAdapter>>()
expectFalse<Fits<{ readonly name: string }, ChannelAdapter>>()

// The check has teeth: a factory that needs a typed option, or more context, is not a factory.
type NeedsPort = (options: { readonly port: number }, context: ChannelAdapterContext) => ChannelAdapter
type NeedsSecret = (
  options: Readonly<Record<string, unknown>>,
  context: ChannelAdapterContext & { readonly secret: string },
) => ChannelAdapter
expectFalse<Fits<NeedsPort, ChannelAdapterFactory>>()
expectFalse<Fits<NeedsSecret, ChannelAdapterFactory>>()
// @ts-expect-error a factory demanding a `port` option is not a ChannelAdapterFactory
const needsPort: ChannelAdapterFactory = (options: { readonly port: number }, context) => ({
  name: `${context.name}:${options.port}`,
  async send() {},
})
void needsPort

// The handler `start` gets: one message and a signal in, the reply text (or none) out.
expectTypeOf<InboundHandler>().parameters.toEqualTypeOf<[InboundMessage, InboundOptions]>()
expectTypeOf<InboundHandler>().returns.resolves.toEqualTypeOf<string | undefined>()
expectTypeOf<InboundOptions>().toEqualTypeOf<{ readonly signal: AbortSignal }>()
// What line-chat.mjs builds (its `InboundHandler` typedef) is a message; a user id is required.
expectTrue<
  Fits<{ channel: string; chatId: string; userId: string; text: string; userName?: string }, InboundMessage>
>()
expectFalse<Fits<{ channel: string; chatId: string; text: string }, InboundMessage>>()

// Approvals: the router hands `@lango/tools`' request on as it is, and the answer back to its gate.
expectTrue<Fits<ApprovalRequest, ChannelApprovalRequest>>()
type RequestApproval = NonNullable<ChannelAdapter['requestApproval']>
expectTypeOf<RequestApproval>().returns.resolves.toEqualTypeOf<Awaited<ReturnType<ApprovalGate['request']>>>()
expectTypeOf<Parameters<RequestApproval>[3]>().toEqualTypeOf<Parameters<ApprovalGate['request']>[1]>()

// Calls an adapter gets may be cancelled, and carry cron's delivery id; `start` may also report later failures.
expectTypeOf<ChannelCallOptions>().toEqualTypeOf<{
  readonly signal?: AbortSignal
  readonly idempotencyKey?: string
}>()
expectTypeOf<ChannelStartOptions['signal']>().toEqualTypeOf<AbortSignal>()
expectTypeOf<ChannelStartOptions['onError']>().toEqualTypeOf<((error: Error) => void) | undefined>()
