/** Who started a turn, as read from its session key. */
type SessionSource = 'cron' | 'background' | 'workflow' | 'chat'

/** What the runner reads from a session key. */
export interface SessionKind {
  readonly source: SessionSource
  /** Started by cron, background or workflow: nobody is present to approve anything. */
  readonly unattended: boolean
  /** One session per run (a run id is in the key): conversation memory is neither read nor written. */
  readonly isolated: boolean
}

/**
 * Classifies a session key by its prefix. What each package sends (read from their sources):
 *
 * | key | sent by | unattended | isolated |
 * |---|---|---|---|
 * | `cron:<job name>` | `@lango/cron`, `session_mode: main` | yes | no: the job's runs share one memory |
 * | `cron:<job name>:<run id>` | `@lango/cron`, `session_mode: isolated` (default) | yes | yes |
 * | `bg:<task id>` | `@lango/background` | yes | yes |
 * | `background:<task id>` | nobody today; accepted as an alias of `bg:` | yes | yes |
 * | `workflow:<name>:<run id>:<step id>` | `@lango/workflow` | yes | yes |
 * | anything else (`telegram:<chat>:<user>`, `http`, `mcp`, …) | chats | no | no |
 *
 * Cron job names cannot contain `:` (`[A-Za-z0-9][A-Za-z0-9_.-]{0,63}`), so a third segment can
 * only be a run id.
 */
export function classifySession(sessionKey: string): SessionKind {
  const [prefix, ...rest] = sessionKey.split(':')
  switch (prefix) {
    case 'cron':
      return { source: 'cron', unattended: true, isolated: rest.length >= 2 }
    case 'bg':
    case 'background':
      return { source: 'background', unattended: true, isolated: true }
    case 'workflow':
      return { source: 'workflow', unattended: true, isolated: true }
    default:
      return { source: 'chat', unattended: false, isolated: false }
  }
}
