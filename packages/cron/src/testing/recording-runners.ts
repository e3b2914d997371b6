import type {
  AgentRunner,
  AgentRunOptions,
  AgentRunRequest,
  AgentRunResult,
  ChannelSender,
  PingDetails,
  PingPhase,
  RunMonitor,
  ShellRunner,
  ShellRunRequest,
  ShellRunResult,
} from '../ports.js'

/** A promise with its resolve/reject exposed, for runners that should wait until told. */
export interface Deferred<T> {
  readonly promise: Promise<T>
  resolve(value: T): void
  reject(reason: unknown): void
}

/** Creates a {@link Deferred}. */
export function createDeferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (reason: unknown) => void
  const promise = new Promise<T>((resolvePromise, rejectPromise) => {
    resolve = resolvePromise
    reject = rejectPromise
  })
  return { promise, resolve, reject }
}

/** The options every port call gets: the signal that cancels it. */
export interface PortCallOptions {
  readonly signal: AbortSignal
  /** Given to channel sends of cron deliveries: the delivery's id, the same on every attempt. */
  readonly idempotencyKey?: string
}

/** Answers a recorded agent request: a result, a text, or a promise of either (or a throw). */
export type AgentHandler = (
  request: AgentRunRequest,
  index: number,
  options: AgentRunOptions,
) => Promise<AgentRunResult | string> | AgentRunResult | string

/** Answers a recorded shell request. */
export type ShellHandler = (
  request: ShellRunRequest,
  index: number,
  options: PortCallOptions,
) => Promise<ShellRunResult> | ShellRunResult

/** Decides what a recorded send does: resolve, throw, or wait (for the signal, say). */
export type SendHandler = (target: string, text: string, options: PortCallOptions) => Promise<void> | void

/**
 * Fake {@link AgentRunner} that records every request and its signal. By default it answers
 * `result <n>`; pass a handler to answer, throw or wait.
 */
export class RecordingAgentRunner implements AgentRunner {
  readonly calls: AgentRunRequest[] = []
  /** The signal of each call, by index. */
  readonly signals: AbortSignal[] = []
  #handler: AgentHandler

  constructor(handler?: AgentHandler) {
    this.#handler = handler ?? ((_request, index) => ({ text: `result ${index + 1}` }))
  }

  /** Replaces the handler for later calls. */
  respond(handler: AgentHandler): void {
    this.#handler = handler
  }

  async run(request: AgentRunRequest, options: AgentRunOptions): Promise<AgentRunResult> {
    const index = this.calls.length
    this.calls.push(request)
    this.signals.push(options.signal)
    const answer = await this.#handler(request, index, options)
    return typeof answer === 'string' ? { text: answer } : answer
  }
}

/** Fake {@link ShellRunner} that records every request and its signal; exits 0 with `ok` unless told otherwise. */
export class RecordingShellRunner implements ShellRunner {
  readonly calls: ShellRunRequest[] = []
  /** The signal of each call, by index. */
  readonly signals: AbortSignal[] = []
  #handler: ShellHandler

  constructor(handler?: ShellHandler) {
    this.#handler = handler ?? (() => ({ exitCode: 0, stdout: 'ok', stderr: '' }))
  }

  /** Replaces the handler for later calls. */
  respond(handler: ShellHandler): void {
    this.#handler = handler
  }

  async run(request: ShellRunRequest, options: PortCallOptions): Promise<ShellRunResult> {
    const index = this.calls.length
    this.calls.push(request)
    this.signals.push(options.signal)
    return this.#handler(request, index, options)
  }
}

/**
 * Fake {@link ChannelSender}: records delivered messages in `sent`; targets listed in
 * `failingTargets` throw, and a handler set with `respond` runs before a message counts as sent.
 */
export class RecordingChannelSender implements ChannelSender {
  readonly sent: { readonly target: string; readonly text: string }[] = []
  /** The signal of every send, delivered or not, in call order. */
  readonly signals: AbortSignal[] = []
  readonly failingTargets = new Set<string>()
  /** The `idempotencyKey` of every send, in call order. */
  readonly idempotencyKeys: (string | undefined)[] = []
  /** Targets whose channel deduplicates by idempotency key ({@link RecordingChannelSender.canDeduplicate}). */
  readonly deduplicating = new Set<string>()
  #handler: SendHandler | undefined

  /** True for the targets in {@link RecordingChannelSender.deduplicating}. */
  canDeduplicate(target: string): boolean {
    return this.deduplicating.has(target)
  }

  /** Sets what later sends do before they are recorded (throw to fail, wait to hang). */
  respond(handler: SendHandler): void {
    this.#handler = handler
  }

  async send(target: string, text: string, options: PortCallOptions): Promise<void> {
    this.signals.push(options.signal)
    this.idempotencyKeys.push(options.idempotencyKey)
    if (this.failingTargets.has(target)) throw new Error(`channel ${target} is unavailable`)
    await this.#handler?.(target, text, options)
    this.sent.push({ target, text })
  }
}

/** One ping a {@link RecordingRunMonitor} received. */
export interface RecordedPing {
  readonly url: string
  readonly phase: PingPhase
  readonly details: PingDetails
  readonly signal: AbortSignal
}

/** Decides what a recorded ping does: resolve, throw, or wait (for the signal, say). */
export type PingHandler = (url: string, phase: PingPhase, options: PortCallOptions) => Promise<void> | void

/**
 * Fake {@link RunMonitor}: records every ping in `pings` in call order (before its handler runs,
 * so a ping that hangs or fails is recorded too); a handler set with `respond` can throw or wait.
 */
export class RecordingRunMonitor implements RunMonitor {
  readonly pings: RecordedPing[] = []
  #handler: PingHandler | undefined

  /** Sets what later pings do after they are recorded (throw to fail, wait to hang). */
  respond(handler: PingHandler): void {
    this.#handler = handler
  }

  async ping(
    url: string,
    phase: PingPhase,
    options: PortCallOptions & { readonly details: PingDetails },
  ): Promise<void> {
    this.pings.push({ url, phase, details: options.details, signal: options.signal })
    await this.#handler?.(url, phase, options)
  }
}
