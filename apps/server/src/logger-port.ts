/**
 * The Logger port alone, without pino: modules that must stay light (the session store, which a
 * host may bundle on its own) import it from here; `./logger.ts` re-exports it beside pino's logger.
 */

/** Structured fields of a log line: ids, names, durations. Never resolved secrets. */
export type LogFields = Readonly<Record<string, unknown>>

/** The one Logger shape of every `@lango/*` package (ADR 0006). */
export interface Logger {
  debug(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  error(message: string, fields?: LogFields): void
}

/** A logger that drops everything. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} }
