/** Who started a turn. */
export type SessionSource = 'cron' | 'background' | 'workflow' | 'automation' | 'chat'

/**
 * Who started a turn and what follows from it, carried as data from where the run starts (issue
 * 21: it used to be read from the session key's prefix, so a custom channel named `cron` made its
 * chats unattended). The composition root gives each package's runs their kind; `chat()` turns
 * are always attended.
 */
export interface SessionKind {
  readonly source: SessionSource
  /** Started by cron, background or workflow: nobody is present to approve anything. */
  readonly unattended: boolean
  /** One session per run: conversation memory is neither read nor written. */
  readonly isolated: boolean
  /**
   * How deep in a chain of automation runs the turn is (SECURITY.md WF-7): a background task or
   * workflow run its tools start is this deep, refused past `maxNesting`. 0 for a person's chat and
   * a cron run; absent: the tools count from the session key alone (one level for `bg:` and
   * `workflow:`).
   */
  readonly nesting?: number
}

/** A person's chat (HTTP, MCP, Telegram, a custom channel): attended, with memory. */
export const CHAT_SESSION: SessionKind = Object.freeze({
  source: 'chat',
  unattended: false,
  isolated: false,
  nesting: 0,
})

/**
 * An automated run: unattended, and isolated unless it shares memory across runs (a cron job's
 * `session_mode: main`). `automation` is the kind of a `run()` that names none: the safe side.
 */
export function unattendedSession(
  source: Exclude<SessionSource, 'chat'>,
  options: { readonly isolated?: boolean; readonly nesting?: number } = {},
): SessionKind {
  return Object.freeze({
    source,
    unattended: true,
    isolated: options.isolated ?? true,
    ...(options.nesting === undefined ? {} : { nesting: options.nesting }),
  })
}
