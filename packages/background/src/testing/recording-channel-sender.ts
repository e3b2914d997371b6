import type { ChannelNotifier } from '../ports.js'
import { RecordCursor } from './record-cursor.js'

/** One notice a `RecordingChannelSender` was asked to send. */
export interface RecordedNotice {
  /** The task's origin channel. */
  readonly target: string
  readonly text: string
  readonly signal: AbortSignal
}

/** Options of a `RecordingChannelSender`. */
export interface RecordingChannelSenderOptions {
  /** Decides how each delivery ends: throw or reject to fail it, never settle to hang it. Default: succeed. */
  readonly handler?: (
    target: string,
    text: string,
    options: { readonly signal: AbortSignal },
  ) => void | Promise<void>
}

/** A `ChannelNotifier` for tests that records every notice it is asked to send. */
export class RecordingChannelSender implements ChannelNotifier {
  /** Every notice, in the order `send` was called. */
  readonly notices: RecordedNotice[] = []
  readonly #handler: RecordingChannelSenderOptions['handler']
  readonly #cursor = new RecordCursor(this.notices)

  constructor(options: RecordingChannelSenderOptions = {}) {
    this.#handler = options.handler
  }

  /** The notice texts, in order. */
  get texts(): readonly string[] {
    return this.notices.map((notice) => notice.text)
  }

  /** Records the notice (unless the signal already aborted), then lets the handler decide how delivery ends. */
  async send(target: string, text: string, options: { readonly signal: AbortSignal }): Promise<void> {
    options.signal.throwIfAborted()
    this.notices.push({ target, text, signal: options.signal })
    this.#cursor.notify()
    if (this.#handler !== undefined) await this.#handler(target, text, options)
  }

  /**
   * The next notice not yet returned by `next()`, waiting for it if needed; notices are handed out
   * in order.
   */
  async next(options?: { readonly signal?: AbortSignal }): Promise<RecordedNotice> {
    return this.#cursor.next(options?.signal)
  }
}

/**
 * @deprecated Renamed {@link RecordingChannelSender}, the name every package gives its recording
 * channel port (the option is `channelSender`); `RecordingNotifier` is kept for one release.
 * @alias
 */
export const RecordingNotifier = RecordingChannelSender
/** @deprecated Renamed {@link RecordingChannelSender}; kept for one release. @alias */
export type RecordingNotifier = RecordingChannelSender
/** @deprecated Renamed {@link RecordingChannelSenderOptions}; kept for one release. */
export type RecordingNotifierOptions = RecordingChannelSenderOptions
