import type {
  AgentRunner,
  AgentRunOptions,
  AgentRunRequest,
  AgentRunResult,
  ChannelSender,
} from '../ports.js'

/**
 * How a {@link RecordingAgentRunner} answers one request: text, a whole answer (text with the
 * `usage` a counting runner reports), or an Error to reject with.
 */
export type AgentResponder = (
  request: AgentRunRequest,
  options: AgentRunOptions,
) => string | AgentRunResult | Error | Promise<string | AgentRunResult | Error>

/**
 * An {@link AgentRunner} that records every request and answers from a responder (default:
 * `result of <step id>`). Honours its abort signal like a well-behaved runner.
 */
export class RecordingAgentRunner implements AgentRunner {
  /** Every request received, in order. */
  readonly calls: AgentRunRequest[] = []
  readonly #respond: AgentResponder

  constructor(respond: AgentResponder = (request) => `result of ${request.stepId}`) {
    this.#respond = respond
  }

  async run(request: AgentRunRequest, options: AgentRunOptions): Promise<AgentRunResult> {
    this.calls.push(request)
    options.signal.throwIfAborted()
    const answer = await this.#respond(request, options)
    options.signal.throwIfAborted()
    if (answer instanceof Error) throw answer
    return typeof answer === 'string' ? { text: answer } : answer
  }
}

/** One message a {@link RecordingChannelSender} received. */
export interface SentMessage {
  readonly target: string
  readonly text: string
}

/** A {@link ChannelSender} that records messages; targets listed in `failTargets` reject. */
export class RecordingChannelSender implements ChannelSender {
  /** Every message accepted, in order. */
  readonly messages: SentMessage[] = []
  readonly #failTargets: ReadonlySet<string>

  constructor(options: { readonly failTargets?: readonly string[] } = {}) {
    this.#failTargets = new Set(options.failTargets ?? [])
  }

  async send(target: string, text: string, options: { readonly signal: AbortSignal }): Promise<void> {
    options.signal.throwIfAborted()
    if (this.#failTargets.has(target)) throw new Error(`channel ${target} is down`)
    this.messages.push({ target, text })
  }

  /** Messages sent to one target. */
  to(target: string): SentMessage[] {
    return this.messages.filter((message) => message.target === target)
  }
}
