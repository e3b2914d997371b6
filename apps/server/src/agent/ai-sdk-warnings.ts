import type { LogWarningsFunction, Warning } from 'ai'
import type { Logger } from '../logger.js'

/** A warning's own fields (`type`, and `feature`/`details` or `message`), for a log line. */
function warningFields(warning: Warning): Record<string, unknown> {
  const { type, ...rest } = warning as { type: string } & Record<string, unknown>
  return { warning: type, ...rest }
}

/**
 * Sends the AI SDK's warnings (a setting the model server ignores, a compatibility mode) to
 * `logger`, one `model warning` line each, instead of the SDK's plain-text `console.warn`, which
 * would break the JSON lines on stderr. The SDK reads the process-wide
 * `globalThis.AI_SDK_LOG_WARNINGS`, so this is for an entry point (`serve()`, `lango mcp`);
 * returns a function that puts back what was there.
 */
export function routeAiSdkWarnings(logger: Logger): () => void {
  const previous = globalThis.AI_SDK_LOG_WARNINGS
  const route: LogWarningsFunction = ({ warnings, provider, model }) => {
    for (const warning of warnings)
      logger.warn('model warning', { provider, model, ...warningFields(warning) })
  }
  globalThis.AI_SDK_LOG_WARNINGS = route
  return () => {
    if (globalThis.AI_SDK_LOG_WARNINGS === route) globalThis.AI_SDK_LOG_WARNINGS = previous
  }
}
