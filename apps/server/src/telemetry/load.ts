import type { ServerConfig } from '../config/types.js'
import type { Logger } from '../logger.js'
import type { Tracer } from './tracer.js'

/**
 * The server's tracer, when traces are configured (`telemetry.otlp.endpoint` or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) and not turned off
 * (`OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`); undefined otherwise. The OpenTelemetry SDK
 * is imported here, on demand: a server without traces never loads it.
 */
export async function loadTracer(config: ServerConfig, logger: Logger): Promise<Tracer | undefined> {
  const { tracesUrl, headers, serviceName, resourceAttributes, sampler, samplerArg, timeoutMs } =
    config.telemetry
  if (tracesUrl === undefined) return undefined
  if (!config.telemetry.enabled || config.telemetry.exporter === 'none') {
    logger.info('traces are off', {
      reason: config.telemetry.enabled ? 'the trace exporter is none' : 'the OpenTelemetry SDK is disabled',
    })
    return undefined
  }
  const { createOtelTracer } = await import('./otel.js')
  const tracer = createOtelTracer({
    url: tracesUrl,
    headers,
    serviceName,
    resourceAttributes,
    sampler,
    samplerArg,
    timeoutMillis: timeoutMs,
    onExport: exportReporter(logger),
  })
  // The URL's origin only: a path or query may hold a key.
  logger.info('traces exported over OTLP/HTTP', {
    endpoint: URL.parse(tracesUrl)?.origin ?? '[set]',
    sampler,
  })
  return tracer
}

/** How often a collector that keeps failing is said again. */
const REPEAT_FAILURE_MS = 5 * 60_000

/**
 * Says when traces stop reaching the collector (at once, then every 5 minutes while it lasts, with
 * how many exports failed) and when they reach it again: spans dropped quietly are an outage of
 * the operator's own tooling.
 */
function exportReporter(
  logger: Logger,
): (outcome: { readonly ok: boolean; readonly error?: string }) => void {
  let failures = 0
  let saidAt = Number.NEGATIVE_INFINITY
  return ({ ok, error }) => {
    if (ok) {
      if (failures > 0) logger.info('traces reach the collector again', { failed_exports: failures })
      failures = 0
      saidAt = Number.NEGATIVE_INFINITY
      return
    }
    failures++
    const now = Date.now()
    if (now - saidAt < REPEAT_FAILURE_MS) return
    saidAt = now
    logger.warn('traces not exported: the collector did not take them (spans are dropped)', {
      error,
      failed_exports: failures,
    })
  }
}
