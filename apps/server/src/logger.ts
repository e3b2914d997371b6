import pino from 'pino'

import type { LogFields, Logger } from './logger-port.js'

export { type Logger, silentLogger } from './logger-port.js'

/** pino's levels, `silent` included. */
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent'

/**
 * Field names whose values are never written, whatever a caller passes: a package that logged a
 * token or key by mistake still does not put it on stderr (SECURITY.md SEC-6).
 */
const REDACTED_PATHS = [
  'apiKey',
  'api_key',
  'apiToken',
  'api_token',
  'token',
  'passphrase',
  'password',
  'secret',
  'value',
  'authorization',
  '*.apiKey',
  '*.api_key',
  '*.token',
  '*.passphrase',
  '*.password',
  '*.secret',
  '*.authorization',
]

/**
 * JSON lines on stderr (fd 2) in every mode: stdout belongs to MCP stdio and `--json` output.
 * `destination` is for tests (a file descriptor or a path); the default is fd 2.
 */
export function createLogger(options: {
  readonly level: LogLevel
  readonly destination?: number | string
}): Logger {
  const log = pino(
    {
      level: options.level,
      base: { name: 'lango' },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ dest: options.destination ?? 2, sync: true }),
  )
  // A level that is off costs a comparison: its fields are not copied (debug lines come per run).
  return {
    debug: (message, fields) => {
      if (log.isLevelEnabled('debug')) log.debug(errorFields(fields) ?? {}, message)
    },
    info: (message, fields) => {
      if (log.isLevelEnabled('info')) log.info(errorFields(fields) ?? {}, message)
    },
    warn: (message, fields) => {
      if (log.isLevelEnabled('warn')) log.warn(errorFields(fields) ?? {}, message)
    },
    error: (message, fields) => {
      if (log.isLevelEnabled('error')) log.error(errorFields(fields) ?? {}, message)
    },
  }
}

/**
 * An `Error` among the fields is written as its code and message only: a stack or a `cause` can
 * carry argv, environments or resolved values.
 */
function errorFields(fields: LogFields | undefined): LogFields | undefined {
  if (fields === undefined) return undefined
  const entries = Object.entries(fields).map(([key, value]) =>
    value instanceof Error
      ? [
          key,
          { ...('code' in value ? { code: (value as { code: unknown }).code } : {}), message: value.message },
        ]
      : [key, value],
  )
  return Object.fromEntries(entries)
}
