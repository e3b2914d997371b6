import type { ChannelNotifier } from '../ports.js'
import { RecordCursor } from './record-cursor.js'

/** One notice a `RecordingNotifier` received. */
export interface RecordedNotice {
  readonly channel: string
  readonly message: string
  readonly signal: AbortSignal
}

/** Options of a `RecordingNotifier`. */
export interface RecordingNotifierOptions {
  /** Decides how each delivery ends: throw or reject to fail it, never settle to hang it. Default: succeed. */
  readonly handler?: (
    channel: string,
    message: string,
    options: { readonly signal: AbortSignal },
  ) => void | Promise<void>
}

/** A `ChannelNotifier` for tests that records every notice it is asked to send. */
export class RecordingNotifier implements ChannelNotifier {
  /** Every notice, in the order `notify` was called. */
  readonly notices: RecordedNotice[] = []
  readonly #handler: RecordingNotifierOptions['handler']
  readonly #cursor = new RecordCursor(this.notices)

  constructor(options: RecordingNotifierOptions = {}) {
    this.#handler = options.handler
  }

  /** The message texts, in order. */
  get messages(): readonly string[] {
    return this.notices.map((notice) => notice.message)
  }

  /** Records the notice (unless the signal already aborted), then lets the handler decide how delivery ends. */
  async notify(channel: string, message: string, options: { readonly signal: AbortSignal }): Promise<void> {
    options.signal.throwIfAborted()
    this.notices.push({ channel, message, signal: options.signal })
    this.#cursor.notify()
    if (this.#handler !== undefined) await this.#handler(channel, message, options)
  }

  /**
   * The next notice not yet returned by `next()`, waiting for it if needed; notices are handed out
   * in order.
   */
  async next(options?: { readonly signal?: AbortSignal }): Promise<RecordedNotice> {
    return this.#cursor.next(options?.signal)
  }
}
