import type { ServerConfig } from '../config/types.js'
import type { Logger } from '../logger.js'
import type { Tracer } from './tracer.js'

/**
 * The server's tracer, when traces are configured (`telemetry.otlp.endpoint` or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); undefined otherwise. The
 * OpenTelemetry SDK is imported here, on demand: a server without an endpoint never loads it.
 */
export async function loadTracer(config: ServerConfig, logger: Logger): Promise<Tracer | undefined> {
  const { tracesUrl, headers, serviceName } = config.telemetry
  if (tracesUrl === undefined) return undefined
  const { createOtelTracer } = await import('./otel.js')
  const tracer = createOtelTracer({ url: tracesUrl, headers, serviceName })
  // The URL's origin only: a path or query may hold a key.
  logger.info('traces exported over OTLP/HTTP', { endpoint: URL.parse(tracesUrl)?.origin ?? '[set]' })
  return tracer
}
