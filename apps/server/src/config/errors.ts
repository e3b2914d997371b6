import { type AnyServerErrorCode, isServerErrorNamed, LangoServerError } from '../errors.js'

/** The code of every configuration failure (`CONFIG_INVALID` in `SERVER_ERROR_CODES`): branch on it, never on the message. */
export type ConfigErrorCode = Extract<AnyServerErrorCode, `CONFIG_${string}`>

/** One problem in the configuration. Never carries a token, an API key or a URL's value. */
export interface ConfigIssue {
  /**
   * Where: a dotted YAML key (`cron.max_concurrent_jobs`, list items as `server.allowed_origins[1]`),
   * an environment variable (`LANGO_PORT`), or `''` for the file as a whole.
   */
  readonly key: string
  /** The file the problem is in; absent for environment variables. */
  readonly file?: string
  /** 1-based line in `file`, when known. */
  readonly line?: number
  /** 1-based column in `file`, when known. */
  readonly column?: number
  /** What was wrong and what is accepted, e.g. `expected an integer from 1 to 100, got "five"`. */
  readonly message: string
}

/**
 * The configuration could not be loaded. `message` is one readable text listing every issue, one
 * per line, as `path/lango.yaml:12:3 cron.max_concurrent_jobs: expected …`; `issues` has them as data.
 */
export class ConfigError extends LangoServerError<ConfigErrorCode> {
  override readonly name = 'ConfigError'
  readonly issues: readonly ConfigIssue[]

  constructor(issues: readonly ConfigIssue[], options?: { readonly cause?: unknown }) {
    super('CONFIG_INVALID', formatIssues(issues), options)
    this.issues = Object.freeze(issues.map((issue) => Object.freeze({ ...issue })))
  }

  /** True for a `ConfigError`, also one from another copy of this module. */
  static is(value: unknown): value is ConfigError {
    return isServerErrorNamed(value, 'ConfigError')
  }

  /** `{ code, message, issues }`: no cause, no stack. */
  override toJSON(): { code: ConfigErrorCode; message: string; issues: readonly ConfigIssue[] } {
    return { code: this.code, message: this.message, issues: this.issues }
  }
}

function formatIssues(issues: readonly ConfigIssue[]): string {
  const count = issues.length === 1 ? '1 problem' : `${issues.length} problems`
  return [`Invalid configuration (${count}):`, ...issues.map((issue) => `  ${formatIssue(issue)}`)].join('\n')
}

/** `file:line:column key: message`, leaving out the parts an issue does not have. */
function formatIssue(issue: ConfigIssue): string {
  let where = issue.file ?? ''
  if (where !== '' && issue.line !== undefined) {
    where += `:${issue.line}`
    if (issue.column !== undefined) where += `:${issue.column}`
  }
  const parts = [where, issue.key].filter((part) => part !== '')
  return parts.length === 0 ? issue.message : `${parts.join(' ')}: ${issue.message}`
}
