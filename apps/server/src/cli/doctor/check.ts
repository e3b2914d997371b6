import { homedir } from 'node:os'

/** How one check went: `fail` makes `lango doctor` exit 1; `warn` does not. */
type CheckStatus = 'ok' | 'warn' | 'fail'

/** One line of the doctor's report. Messages name files, URLs and counts, never a secret. */
export interface CheckResult {
  readonly name: string
  readonly status: CheckStatus
  readonly message: string
  /** What to do about a `warn` or `fail`. */
  readonly fix?: string
  readonly details?: Readonly<Record<string, unknown>>
}

/** `~/…` for paths under the user's home: a report people paste into issues. */
export function shortPath(path: string): string {
  const home = homedir()
  return home !== '/' && path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path
}

/** An error's code or a short message, never anything that could carry a URL with a token. */
export function safeMessage(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string') return code
  return error instanceof Error ? (error.message.split('\n')[0]?.slice(0, 200) ?? 'error') : 'error'
}
