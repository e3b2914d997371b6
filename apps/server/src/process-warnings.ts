import { routeAiSdkWarnings } from './agent/ai-sdk-warnings.js'
import type { Logger } from './logger.js'

/** A warning's fields for a log line: its name, code and message (never its stack). */
function warningFields(warning: Error): Record<string, unknown> {
  const code = (warning as { code?: unknown }).code
  return { warning: warning.name, ...(typeof code === 'string' ? { code } : {}), message: warning.message }
}

/**
 * Sends Node's own warnings (a deprecation, "possible EventTarget memory leak", an experimental
 * feature) to `logger`, one `node warning` line each, instead of Node's plain-text printer, which
 * would break the JSON lines on stderr. The printers present when it is called (Node's own, at the
 * start of `serve()` or `lango mcp`) are taken off and put back by the function it returns. With
 * `--no-warnings` there is no printer, and nothing is logged either, as Node would do.
 */
function routeProcessWarnings(logger: Logger): () => void {
  const printers = process.listeners('warning')
  if (printers.length === 0) return () => {}
  const route = (warning: Error): void => logger.warn('node warning', warningFields(warning))
  for (const printer of printers) process.off('warning', printer)
  process.on('warning', route)
  return () => {
    process.off('warning', route)
    for (const printer of printers) process.on('warning', printer)
  }
}

/**
 * For an entry point (`serve()`, `lango mcp`): stderr carries JSON lines only, so the AI SDK's and
 * Node's warnings both go through `logger`. Returns a function that puts back what was there.
 */
export function routeWarnings(logger: Logger): () => void {
  const restoreAiSdk = routeAiSdkWarnings(logger)
  const restoreProcess = routeProcessWarnings(logger)
  return () => {
    restoreProcess()
    restoreAiSdk()
  }
}
