/** Codes carried by every {@link ExecError}; callers branch on these, never on messages. */
export type ExecErrorCode =
  /** The working directory does not exist or is not a directory; nothing was spawned. */
  | 'EXEC_INVALID_CWD'
  /** An env override was refused (name or value), see SECURITY.md ENV-3/ENV-4; nothing was spawned. */
  | 'EXEC_ENV_REJECTED'
  /** A secret reference sits where the shell would not expand it (single quotes, `$'…'`, quoted heredoc). */
  | 'EXEC_SECRET_IN_QUOTES'
  /**
   * A secret reference sits in text that a nested shell, `eval` or an interpreter parses again as
   * code (`sh -c "…"`, `| sh`, `python3 -c`); `data.by` names that program. Pass the value as an
   * env variable or use a `{{secretfile:…}}` token instead.
   */
  | 'EXEC_SECRET_REPARSED'
  /** A secret value is shorter than `MIN_SECRET_LENGTH` (8) characters: masking it would reveal it. */
  | 'EXEC_SECRET_TOO_SHORT'
  /** A reference token names nothing the store holds, under `unknownReferences: 'refuse'`. */
  | 'EXEC_SECRET_UNKNOWN'
  /**
   * An option was out of range (timeout, buffer size, PTY size, command length), or the guard was
   * given a command that is not a string or an `automationAvailable` that is not booleans.
   */
  | 'EXEC_INVALID_OPTION'
  /** The process could not be spawned (shell missing, EAGAIN, PTY driver failed). */
  | 'EXEC_SPAWN_FAILED'
  /** The registry already holds its maximum of running background processes. */
  | 'EXEC_TOO_MANY_PROCESSES'
  /** No background process with that id is known to the registry. */
  | 'EXEC_PROCESS_NOT_FOUND'
  /** Input was written to a process that is not a PTY session or has ended. */
  | 'EXEC_NOT_WRITABLE'
  /** A PTY was requested but no PTY driver is available (install node-pty, use `@lango/exec/pty`). */
  | 'EXEC_PTY_UNAVAILABLE'

const brand = Symbol.for('lango.error')

/**
 * The one error type `@lango/exec` throws. Messages never contain resolved secret values or the
 * child's environment; they name the original (unresolved) command at most.
 */
export class ExecError extends Error {
  override readonly name = 'ExecError'
  readonly [brand] = true
  readonly data?: Readonly<Record<string, unknown>>

  constructor(
    readonly code: ExecErrorCode,
    message: string,
    options?: { cause?: unknown; data?: Record<string, unknown> },
  ) {
    super(message, { cause: options?.cause })
    if (options?.data !== undefined) this.data = Object.freeze({ ...options.data })
  }

  /** What a server may return to a caller: never `cause` or `stack`. */
  toJSON(): {
    name: 'ExecError'
    code: ExecErrorCode
    message: string
    data?: Readonly<Record<string, unknown>>
  } {
    return this.data === undefined
      ? { name: this.name, code: this.code, message: this.message }
      : { name: this.name, code: this.code, message: this.message, data: this.data }
  }

  /** True for an `ExecError` from any copy of this package (checked by brand, not `instanceof`). */
  static is(value: unknown): value is ExecError {
    return (
      typeof value === 'object' &&
      value !== null &&
      brand in value &&
      (value as { name?: unknown }).name === 'ExecError'
    )
  }
}

/**
 * `EXEC_SPAWN_FAILED` for a child that could not be started. Built from the unresolved command and
 * the errno code only: Node's spawn errors carry argv (`spawnargs`) and must not travel (SEC-6).
 */
export function spawnFailed(shell: string, command: string, error: unknown): ExecError {
  return new ExecError('EXEC_SPAWN_FAILED', `could not start ${shell} for: ${command.slice(0, 200)}`, {
    data: { code: (error as NodeJS.ErrnoException | undefined)?.code },
  })
}
