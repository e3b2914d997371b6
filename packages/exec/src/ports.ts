/**
 * Terminology
 * - command: the text an agent or user wrote, run as `/bin/sh -c <command>`. Always the
 *   *unresolved* text: it is what logs, errors, results and `BackgroundProcess.command` show.
 * - reference token: `{{secret:NAME}}` or `{{decrypt:ID}}` inside a command. Resolved through a
 *   {@link RefStore} right before spawning and handed to the child through its environment.
 * - process group: every child is spawned as the leader of a new session and process group, so
 *   a timeout, cancel or stop signals the whole tree (`kill(-pgid)`).
 * - PTY driver: the subset of node-pty that `@lango/exec/pty` uses; the root entry never loads
 *   node-pty.
 */

/** Resolves reference tokens. Implemented by the server's secrets vault; `MemoryRefStore` for tests. */
export interface RefStore {
  /** The value for an exact token such as `{{secret:api-key}}`, or `undefined` when unknown. */
  resolve(token: string): string | undefined | Promise<string | undefined>
  /**
   * Optional capability: every value the store currently holds, so output can be masked even
   * when a command reaches a secret without naming its token (SECURITY.md SEC-4).
   */
  heldValues?(): Iterable<{ readonly label: string; readonly value: string }>
}

/** Structured fields of a log line: ids, names, durations. Never resolved secrets or env values. */
export type LogFields = Readonly<Record<string, unknown>>

/**
 * Narrow structured logger (ADR 0006), {@link silentLogger} by default. Receives unresolved
 * commands only, never resolved secrets or child environments. A pino logger fits with
 * `(message, fields) => pino.info(fields ?? {}, message)` per level.
 */
export interface Logger {
  debug(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  error(message: string, fields?: LogFields): void
}

/** The logger used when none is given: drops everything. */
export const silentLogger: Logger = Object.freeze({
  debug() {},
  info() {},
  warn() {},
  error() {},
})

/** The subset of a node-pty `IPty` the PTY path relies on. */
export interface PtyProcess {
  readonly pid: number
  onData(listener: (data: string) => void): void
  /** Fires once, after all output written before the exit has been delivered through `onData`. */
  onExit(listener: (event: { exitCode: number; signal: number | null }) => void): void
  write(data: string): void
  resize(cols: number, rows: number): void
}

/**
 * Spawns programs on a pseudo-terminal. `nodePtyDriver()` from `@lango/exec/pty` is the
 * implementation. `spawn` throws `EXEC_SPAWN_FAILED` when the program or `cwd` is missing, like
 * the piped spawners, rather than reporting a child that exits 1.
 */
export interface PtyDriver {
  spawn(
    file: string,
    args: readonly string[],
    options: {
      readonly cwd: string
      readonly env: Readonly<Record<string, string>>
      readonly cols: number
      readonly rows: number
    },
  ): PtyProcess
}
