/** How `lango` exits: scripts branch on these. */
export const EXIT = Object.freeze({
  /** The command did what was asked. */
  ok: 0,
  /** A failure: an API error, an invalid file, a failed, timed-out or cancelled run under `--wait`. */
  failure: 1,
  /** The command line was wrong (an unknown option, a missing argument); commander's message says what. */
  usage: 2,
  /** Nothing answers at the server's address: `lango serve` is not running there. */
  serverNotRunning: 3,
})

/** Codes of {@link CliError}; callers branch on these, never on messages. */
export type CliErrorCode =
  /** Nothing listens at the server's URL (ECONNREFUSED). Exit 3. */
  | 'CLI_SERVER_NOT_RUNNING'
  /** The server's URL did not answer for another reason (DNS, timeout, reset). */
  | 'CLI_SERVER_UNREACHABLE'
  /** The server answered something that is not the JSON API (another program on that port?). */
  | 'CLI_BAD_RESPONSE'
  /** An option's value is out of range or malformed (a duration, a limit). Exit 2. */
  | 'CLI_INVALID_OPTION'
  /** A file named on the command line cannot be read. */
  | 'CLI_FILE_UNREADABLE'
  /** A workflow file does not validate; `issues` lists every problem. */
  | 'CLI_INVALID_WORKFLOW'
  /** A run, task or job ended failed, cancelled, timed out or skipped (under `--wait`). */
  | 'CLI_RUN_FAILED'
  /** `--wait --timeout` passed before the run ended; the run goes on. */
  | 'CLI_WAIT_TIMEOUT'
  /** What was named (a secret) does not exist. */
  | 'CLI_NOT_FOUND'

const brand = Symbol.for('lango.error')

/** One problem in a document (a workflow file, a request), as printed under an error. */
export interface CliIssue {
  readonly path?: string
  readonly message: string
  readonly line?: number
  readonly column?: number
  readonly file?: string
  readonly key?: string
}

/** An error of the `lango` command line: printed as `error: <message>`, then exits with `exitCode`. */
export class CliError extends Error {
  override readonly name = 'CliError'
  readonly [brand] = true
  readonly exitCode: number
  readonly issues?: readonly CliIssue[]
  /** Machine-readable details for `--json` output (ids, statuses, the URL). Never secrets. */
  readonly data?: Readonly<Record<string, unknown>>

  constructor(
    readonly code: CliErrorCode,
    message: string,
    options?: {
      readonly cause?: unknown
      readonly exitCode?: number
      readonly issues?: readonly CliIssue[]
      readonly data?: Record<string, unknown>
    },
  ) {
    super(message, { cause: options?.cause })
    this.exitCode =
      options?.exitCode ?? (code === 'CLI_SERVER_NOT_RUNNING' ? EXIT.serverNotRunning : EXIT.failure)
    if (options?.issues !== undefined) this.issues = options.issues
    if (options?.data !== undefined) this.data = Object.freeze({ ...options.data })
  }

  static is(value: unknown): value is CliError {
    return (
      typeof value === 'object' &&
      value !== null &&
      brand in value &&
      (value as { name?: unknown }).name === 'CliError'
    )
  }
}

/**
 * The server answered with its error envelope `{ error: { code, message, issues? } }`; `code` is
 * the server's (e.g. `TOOL_NOT_FOUND`, `AUTH_REQUIRED`), `status` the HTTP status.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError'
  readonly [brand] = true
  readonly exitCode = EXIT.failure

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly issues?: readonly CliIssue[],
  ) {
    super(message)
  }

  static is(value: unknown): value is ApiError {
    return (
      typeof value === 'object' &&
      value !== null &&
      brand in value &&
      (value as { name?: unknown }).name === 'ApiError'
    )
  }
}
