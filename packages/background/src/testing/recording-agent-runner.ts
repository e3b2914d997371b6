import type { AgentRunner, AgentRunOptions, AgentRunRequest, AgentRunResult } from '../ports.js'
import { RecordCursor } from './record-cursor.js'

/** One call a `RecordingAgentRunner` received, with the means to finish it. */
export interface RecordedRun {
  /** 0 for the first call, 1 for the second, … */
  readonly index: number
  readonly request: AgentRunRequest
  readonly signal: AbortSignal
  /** Tells the manager the tokens spent so far, as a counting runner does (`AgentRunOptions.onUsage`). */
  onUsage(usage: { readonly inputTokens: number; readonly outputTokens: number }): void
  /** True once the run's promise has resolved or rejected. */
  readonly settled: boolean
  /** Resolves the run with `{ text }` (ignored once settled). */
  resolve(text: string): void
  /** Rejects the run with `error` (ignored once settled). */
  reject(error: unknown): void
}

/** Options of a `RecordingAgentRunner`. */
export interface RecordingAgentRunnerOptions {
  /**
   * Answers each call automatically. Without it, each call waits until the test calls
   * `resolve()` or `reject()` on its `RecordedRun`.
   */
  readonly handler?: (
    request: AgentRunRequest,
    options: AgentRunOptions,
  ) => AgentRunResult | Promise<AgentRunResult>
  /**
   * Behave like a badly written runner that never looks at its signal. Default false: the run
   * rejects with `signal.reason` as soon as the signal aborts.
   */
  readonly ignoreSignal?: boolean
}

/** A recording `AgentRunner` for tests: every call is kept in `calls`, and concurrency is measured. */
export class RecordingAgentRunner implements AgentRunner {
  /** Every call, in order. */
  readonly calls: RecordedRun[] = []
  readonly #options: RecordingAgentRunnerOptions
  #inFlight = 0
  #peakInFlight = 0
  readonly #cursor = new RecordCursor(this.calls)

  constructor(options: RecordingAgentRunnerOptions = {}) {
    this.#options = Object.freeze({ ...options })
  }

  /** Runs whose promise has not settled yet (including ones the manager already gave up on). */
  get inFlight(): number {
    return this.#inFlight
  }

  /** The most runs ever in flight at the same time. */
  get peakInFlight(): number {
    return this.#peakInFlight
  }

  /** Records the call; answers through the handler, or waits for `resolve()`/`reject()` on the recorded run. */
  run(request: AgentRunRequest, options: AgentRunOptions): Promise<AgentRunResult> {
    const { signal, onUsage } = options
    let settle!: (outcome: { ok: true; value: AgentRunResult } | { ok: false; error: unknown }) => void
    let settled = false
    const promise = new Promise<AgentRunResult>((resolve, reject) => {
      settle = (outcome) => {
        if (settled) return
        settled = true
        this.#inFlight -= 1
        if (outcome.ok) resolve(outcome.value)
        else reject(outcome.error)
      }
    })
    this.#inFlight += 1
    this.#peakInFlight = Math.max(this.#peakInFlight, this.#inFlight)
    const run: RecordedRun = {
      index: this.calls.length,
      request,
      signal,
      onUsage: (usage) => onUsage?.(usage),
      get settled() {
        return settled
      },
      resolve: (text) => settle({ ok: true, value: { text } }),
      reject: (error) => settle({ ok: false, error }),
    }
    this.calls.push(run)
    if (!this.#options.ignoreSignal) {
      if (signal.aborted) run.reject(signal.reason)
      else signal.addEventListener('abort', () => run.reject(signal.reason), { once: true })
    }
    const handler = this.#options.handler
    if (handler !== undefined) {
      Promise.resolve()
        .then(() => handler(request, options))
        .then(
          (value) => settle({ ok: true, value }),
          (error: unknown) => settle({ ok: false, error }),
        )
    }
    this.#cursor.notify()
    return promise
  }

  /**
   * The next call not yet returned by `nextCall()`, waiting for it if needed. Calls are handed out
   * in order, so `await runner.nextCall()` twice gives the first and the second call.
   */
  async nextCall(options?: { readonly signal?: AbortSignal }): Promise<RecordedRun> {
    return this.#cursor.next(options?.signal)
  }
}

/**
 * @deprecated Renamed {@link RecordingAgentRunner}, the name every package gives its recording
 * agent runner; `FakeAgentRunner` is kept for one release.
 * @alias
 */
export const FakeAgentRunner = RecordingAgentRunner
/** @deprecated Renamed {@link RecordingAgentRunner}; kept for one release. @alias */
export type FakeAgentRunner = RecordingAgentRunner
/** @deprecated Renamed {@link RecordingAgentRunnerOptions}; kept for one release. */
export type FakeAgentRunnerOptions = RecordingAgentRunnerOptions
