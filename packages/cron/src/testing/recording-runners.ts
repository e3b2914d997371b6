import type {
  AgentRunner,
  AgentRunRequest,
  AgentRunResult,
  ChannelSender,
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

/**
 * Fake {@link AgentRunner} that records every request. By default it answers `result <n>`;
 * pass a handler to answer, throw or wait.
 */
export class RecordingAgentRunner implements AgentRunner {
  readonly calls: AgentRunRequest[] = []
  #handler: (
    request: AgentRunRequest,
    index: number,
  ) => Promise<AgentRunResult | string> | AgentRunResult | string

  constructor(
    handler?: (
      request: AgentRunRequest,
      index: number,
    ) => Promise<AgentRunResult | string> | AgentRunResult | string,
  ) {
    this.#handler = handler ?? ((_request, index) => ({ text: `result ${index + 1}` }))
  }

  /** Replaces the handler for later calls. */
  respond(
    handler: (
      request: AgentRunRequest,
      index: number,
    ) => Promise<AgentRunResult | string> | AgentRunResult | string,
  ): void {
    this.#handler = handler
  }

  async run(request: AgentRunRequest): Promise<AgentRunResult> {
    const index = this.calls.length
    this.calls.push(request)
    const answer = await this.#handler(request, index)
    return typeof answer === 'string' ? { text: answer } : answer
  }
}

/** Fake {@link ShellRunner} that records every request; exits 0 with `ok` unless told otherwise. */
export class RecordingShellRunner implements ShellRunner {
  readonly calls: ShellRunRequest[] = []
  #handler: (request: ShellRunRequest, index: number) => Promise<ShellRunResult> | ShellRunResult

  constructor(
    handler?: (request: ShellRunRequest, index: number) => Promise<ShellRunResult> | ShellRunResult,
  ) {
    this.#handler = handler ?? (() => ({ exitCode: 0, stdout: 'ok', stderr: '' }))
  }

  /** Replaces the handler for later calls. */
  respond(
    handler: (request: ShellRunRequest, index: number) => Promise<ShellRunResult> | ShellRunResult,
  ): void {
    this.#handler = handler
  }

  async run(request: ShellRunRequest): Promise<ShellRunResult> {
    const index = this.calls.length
    this.calls.push(request)
    return this.#handler(request, index)
  }
}

/** Fake {@link ChannelSender} that records messages; targets listed in `failingTargets` throw. */
export class RecordingChannelSender implements ChannelSender {
  readonly sent: { readonly target: string; readonly text: string }[] = []
  readonly failingTargets = new Set<string>()

  async send(target: string, text: string): Promise<void> {
    if (this.failingTargets.has(target)) throw new Error(`channel ${target} is unavailable`)
    this.sent.push({ target, text })
  }
}
