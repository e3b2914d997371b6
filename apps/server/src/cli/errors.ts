import { type AnyServerErrorCode, isServerErrorNamed, LangoServerError } from '../errors.js'

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

/** Codes of {@link CliError} (`CLI_*` in `SERVER_ERROR_CODES`); callers branch on these, never on messages. */
export type CliErrorCode = Extract<AnyServerErrorCode, `CLI_${string}`>

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
export class CliError extends LangoServerError<CliErrorCode> {
  override readonly name = 'CliError'
  readonly exitCode: number
  readonly issues?: readonly CliIssue[]

  constructor(
    code: CliErrorCode,
    message: string,
    options?: {
      readonly cause?: unknown
      readonly exitCode?: number
      readonly issues?: readonly CliIssue[]
      /** Machine-readable details for `--json` output (ids, statuses, the URL). Never secrets. */
      readonly data?: Record<string, unknown>
    },
  ) {
    super(code, message, options)
    this.exitCode =
      options?.exitCode ?? (code === 'CLI_SERVER_NOT_RUNNING' ? EXIT.serverNotRunning : EXIT.failure)
    if (options?.issues !== undefined) this.issues = options.issues
  }

  static is(value: unknown): value is CliError {
    return isServerErrorNamed(value, 'CliError')
  }
}

/**
 * The server answered with its error envelope `{ error: { code, message, issues? } }`; `code` is
 * the server's (e.g. `TOOL_NOT_FOUND`, `AUTH_REQUIRED`), `status` the HTTP status.
 */
export class ApiError extends LangoServerError<string> {
  override readonly name = 'ApiError'
  readonly exitCode = EXIT.failure

  constructor(
    readonly status: number,
    code: string,
    message: string,
    readonly issues?: readonly CliIssue[],
    /**
     * What the API said beyond code and message: a tool failure's `reason` (`CRON_JOB_NOT_FOUND`)
     * and its `data`, passed on in `--json` output for scripts to branch on.
     */
    readonly details: { readonly reason?: string; readonly data?: Readonly<Record<string, unknown>> } = {},
  ) {
    super(code, message)
  }

  static is(value: unknown): value is ApiError {
    return isServerErrorNamed(value, 'ApiError')
  }
}
