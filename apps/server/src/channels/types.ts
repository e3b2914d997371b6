/**
 * Terminology
 * - **channel**: one chat service the server talks through, registered under a name (`telegram`,
 *   `slack`, `discord`, `webhook`, `log`, or a custom adapter's name such as `line`).
 * - **chat**: a conversation inside a channel: a Telegram chat id, a Slack or Discord channel id, a
 *   custom adapter's room. Replies go to the chat a message came from.
 * - **user**: who wrote an inbound message, as the channel identifies them.
 * - **target**: where a delivery goes: `<channel>` (the channel's default chat) or `<channel>:<chat>`.
 * - **session key**: `<channel>:<chat>:<user>` (ARCHITECTURE §9), the agent session of an inbound message.
 * - **adapter**: the object that implements one channel ({@link ChannelAdapter}). Built-in adapters
 *   are classes in this directory; custom ones come from a module named in config (`loader.ts`).
 */

import type { Logger } from '../logger.js'

/** Options of every cancellable channel call. */
export interface ChannelCallOptions {
  readonly signal?: AbortSignal
  /**
   * The same key on every attempt of one delivery (cron's delivery id). An adapter that sets
   * {@link ChannelAdapter.deduplicates} passes it to the service, which drops a repeat.
   */
  readonly idempotencyKey?: string
}

/** A message a user wrote in a chat, as an adapter hands it to the host. */
export interface InboundMessage {
  /** The channel's registered name (the adapter's `name`). */
  readonly channel: string
  /** The chat it was written in; a reply goes there. No `:`. */
  readonly chatId: string
  /** Who wrote it, as the channel identifies users. No `:`. */
  readonly userId: string
  /** The text, as written (the router bounds its length). */
  readonly text: string
  /** A display name, when the channel has one; never used for authorisation. */
  readonly userName?: string
  /** The channel's id of the message, when it has one (a reply may quote it). */
  readonly messageId?: string
}

/** Options the host's handler gets with each inbound message. */
export interface InboundOptions {
  /** Aborted when the channel or the router stops. */
  readonly signal: AbortSignal
}

/**
 * The host's side of a conversation: it gets one inbound message and returns the reply text, or
 * `undefined` for no reply. The router wraps it before an adapter sees it: messages of one chat run
 * one at a time, in order, behind a bounded queue; a handler error becomes a short notice; the session
 * key is `<channel>:<chat>:<user>` ({@link sessionKeyOf}).
 *
 * Adapters must not block their receive loop on it: an approval asked during the handler is answered
 * by a later inbound event (a button press, a `/approve` line).
 */
export type InboundHandler = (message: InboundMessage, options: InboundOptions) => Promise<string | undefined>

/** Options of {@link ChannelAdapter.start}. */
export interface ChannelStartOptions {
  /** Aborted when the router stops; an adapter stops receiving when it is. */
  readonly signal: AbortSignal
  /**
   * Reports a failure after `start()` resolved that ended or disturbed receiving (Telegram's 409
   * Conflict, a revoked token). The router logs it; the adapter keeps sending.
   */
  readonly onError?: (error: Error) => void
  /**
   * For an adapter with `exclusive`, started under its cluster lease: milliseconds the lease surely
   * still holds. Receive only while it is positive, each long wait (a long poll) shorter than it.
   */
  readonly validForMs?: () => number
}

/** What a human is asked to approve: a subset of `@lango/tools`' `ApprovalRequest`, which fits it. */
export interface ChannelApprovalRequest {
  readonly toolName: string
  /**
   * What the call will do, whole: every command it would run, never cut, possibly several lines
   * and longer than a chat message; secrets stay as unresolved tokens. An adapter shows all of it
   * with its approve action (as one message, or an attachment or a link that holds all of it when
   * the service limits length) and never offers to approve a shortened view alone.
   */
  readonly summary: string
  readonly safety: string
  /** `<channel>:<chat>:<user>` of the session that asks, when there is one. */
  readonly sessionKey?: string
}

/**
 * One chat service. Only `name` and `send` are required; the router feature-detects the rest
 * (kysely's optional `savepoint?`).
 *
 * @example
 * ```ts
 * const adapter: ChannelAdapter = {
 *   name: 'stdout',
 *   async send(chatId, text, { signal } = {}) {
 *     signal?.throwIfAborted()
 *     process.stdout.write(`[${chatId ?? 'default'}] ${text}\n`)
 *   },
 * }
 * ```
 */
export interface ChannelAdapter {
  /** The registered name: `[a-z][a-z0-9_-]{0,31}`; targets and session keys start with it. */
  readonly name: string
  /**
   * Delivers `text` to a chat; `chatId` undefined means the channel's default chat (a bare target
   * such as `telegram`). Long texts are split as the service requires (`splitMessage`: paragraph and
   * code-fence boundaries, fences closed and reopened), or sent as a first part plus the whole text as
   * an attached file where the service takes files (the built-in chat adapters). Rejects with a
   * `ChannelError` (or `signal.reason` when aborted); never with a token in its message.
   */
  send(chatId: string | undefined, text: string, options?: ChannelCallOptions): Promise<void>
  /**
   * Throws what {@link send} would throw for `chatId` before reaching the service (no default chat
   * for a bare target, a malformed chat id, a chat outside the allow-list), sending nothing. The host
   * calls it when a job, task or workflow names a delivery target, so a target this adapter would
   * refuse is refused then, not at every delivery; without it only the channel's name is checked.
   * Synchronous, and from the adapter's configuration alone: it is called before `start()` too (the
   * configured default and alert targets are checked at start-up). A promise it returns is not
   * awaited: the target is taken.
   */
  checkChat?(chatId: string | undefined): void
  /**
   * Starts receiving: each inbound message goes to `inbound`, and its reply back to the chat. Resolves
   * once receiving runs; rejects when it cannot start (bad token, address in use).
   */
  start?(inbound: InboundHandler, options: ChannelStartOptions): Promise<void>
  /**
   * Set when only one process may receive at a time (Telegram: one long poll per bot token): a key
   * naming that resource, never a secret (a hash of the token). With several servers on one database,
   * `start` is called only on the server that holds the cluster lease of this key (`receive:<key>`),
   * and `stop` when it loses it; `start` may be called again after `stop`.
   */
  readonly exclusive?: string
  /**
   * Asks `userId` in `chatId` to approve a tool call, showing `request.summary` whole (see
   * {@link ChannelApprovalRequest.summary}). Resolves `true` (approved) or `false` (denied),
   * `undefined` when no answer can be had; rejects with `signal.reason` when aborted. Only the asked
   * user may answer.
   */
  requestApproval?(
    chatId: string,
    userId: string,
    request: ChannelApprovalRequest,
    options: { readonly signal: AbortSignal },
  ): Promise<boolean | undefined>
  /**
   * True when the service drops a repeated send carrying the same `idempotencyKey` (the webhook's
   * `Idempotency-Key` header): cron then sends again a delivery whose outcome is unknown (the server
   * stopped mid-send) instead of recording it failed.
   */
  readonly deduplicates?: boolean
  /** Stops receiving, ends pending approvals and waits for in-flight work. Idempotent. */
  stop?(): Promise<void>
}

/** What a custom adapter's factory gets besides its own options. */
export interface ChannelAdapterContext {
  /** The name from config; the adapter must use it as its `name`. */
  readonly name: string
  /** `$LANGO_HOME`, for files an adapter keeps. */
  readonly home: string
  /** The server's logger, scoped to this channel. Never log a token or message text at info level. */
  readonly logger: Logger
}

/**
 * The default export of a custom adapter module: builds the adapter from the `options` given in
 * config (`channels.custom[].options`, validated by the factory itself).
 */
export type ChannelAdapterFactory = (
  options: Readonly<Record<string, unknown>>,
  context: ChannelAdapterContext,
) => ChannelAdapter | Promise<ChannelAdapter>

/**
 * Sends text to a delivery target: the one `send` shape of `@lango/cron`'s and `@lango/workflow`'s
 * `ChannelSender` and `@lango/background`'s `ChannelNotifier` (ADR 0006).
 */
export interface ChannelSender {
  send(
    target: string,
    text: string,
    options: { readonly signal: AbortSignal; readonly idempotencyKey?: string },
  ): Promise<void>
}
