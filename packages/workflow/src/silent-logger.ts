import type { Logger } from './ports.js'

const ignore = (): void => {}

/** A `Logger` that drops everything; the default. */
export const silentLogger: Logger = Object.freeze({
  debug: ignore,
  info: ignore,
  warn: ignore,
  error: ignore,
})
