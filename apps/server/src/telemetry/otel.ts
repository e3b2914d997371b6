/**
 * The {@link Tracer} over the OpenTelemetry SDK (issue 23): spans batched and exported as OTLP/HTTP
 * JSON, nested through an AsyncLocalStorage context manager of this tracer's own (nothing is
 * registered globally, so two servers in one process keep their traces apart). Loaded with
 * `import()` by ./load.ts only when an endpoint is configured: a server without one never loads
 * any OpenTelemetry module.
 */
import { type Context, ROOT_CONTEXT, type Span, SpanStatusCode, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace'
import type { TraceSampler } from '../config/types.js'
import { VERSION } from '../version.js'
import { allowedAttributes, type SpanAttributes, type SpanName } from './attributes.js'
import type { Tracer, TraceSpan } from './tracer.js'

/** Options of {@link createOtelTracer}. */
export interface OtelTracerOptions {
  /** The OTLP/HTTP traces URL (`http://collector:4318/v1/traces`). */
  readonly url: string
  /** Sent with every export (`authorization`); never logged, never on a span. */
  readonly headers: Readonly<Record<string, string>>
  readonly serviceName: string
  /** Further resource attributes of every span (`OTEL_RESOURCE_ATTRIBUTES`); `service.name` is {@link serviceName}. */
  readonly resourceAttributes?: Readonly<Record<string, string>>
  /** Which spans are kept (`OTEL_TRACES_SAMPLER`); default `parentbased_always_on`, the SDK's. */
  readonly sampler?: TraceSampler
  /** The ratio of the `traceidratio` samplers (`OTEL_TRACES_SAMPLER_ARG`), 0 to 1; default 1. */
  readonly samplerArg?: number
  /** How long one export may take; default 10 s. */
  readonly timeoutMillis?: number
  /** Told of each export that failed (the collector down, refusing, too slow) and each that worked. */
  readonly onExport?: (outcome: { readonly ok: boolean; readonly error?: string }) => void
}

/** The SDK's exporter, with each export's outcome reported (the SDK itself says nothing of a failure). */
function reporting(exporter: SpanExporter, onExport: OtelTracerOptions['onExport']): SpanExporter {
  if (onExport === undefined) return exporter
  return {
    export(spans, resultCallback) {
      exporter.export(spans, (result) => {
        // ExportResultCode.SUCCESS is 0.
        onExport(
          result.code === 0
            ? { ok: true }
            : { ok: false, error: result.error?.message.slice(0, 200) ?? 'the export failed' },
        )
        resultCallback(result)
      })
    },
    shutdown: () => exporter.shutdown(),
    ...(exporter.forceFlush === undefined
      ? {}
      : { forceFlush: () => (exporter.forceFlush as () => Promise<void>)() }),
  }
}

/** The SDK's sampler of `OTEL_TRACES_SAMPLER`'s name (the specification's meaning of each). */
function samplerOf(name: TraceSampler, ratio: number): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler()
    case 'always_off':
      return new AlwaysOffSampler()
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio)
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() })
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) })
  }
}

/** Spans of one server: the SDK's provider, exporter and context manager behind the {@link Tracer} seam. */
export function createOtelTracer(options: OtelTracerOptions): Tracer {
  const provider = new TracerProvider({
    // The operator's attributes over the defaults; service.name is always the configured one.
    resource: resourceFromAttributes({
      'service.version': VERSION,
      ...options.resourceAttributes,
      'service.name': options.serviceName,
    }),
    sampler: samplerOf(options.sampler ?? 'parentbased_always_on', options.samplerArg ?? 1),
    spanProcessors: [
      // Bounded: beyond 2048 spans waiting, new ones are dropped (the SDK's default queue).
      new BatchSpanProcessor({
        exporter: reporting(
          new OTLPTraceExporter({
            url: options.url,
            headers: { ...options.headers },
            timeoutMillis: options.timeoutMillis ?? 10_000,
          }),
          options.onExport,
        ),
        maxQueueSize: 2048,
        maxExportBatchSize: 512,
        scheduledDelayMillis: 2000,
      }),
    ],
  })
  const contextManager = new AsyncLocalStorageContextManager().enable()
  const tracer = provider.getTracer('lango', VERSION)
  const spans = new WeakMap<TraceSpan, Span>()

  const wrap = (span: Span): TraceSpan => {
    const context: Context = trace.setSpan(contextManager.active(), span)
    const handle: TraceSpan = {
      set(attributes: SpanAttributes) {
        span.setAttributes(allowedAttributes(attributes))
      },
      end(outcome = {}) {
        // A failed span says how it failed: `error.type`, a code (tracer.ts's contract).
        if (outcome.error !== undefined) {
          span.setAttributes(allowedAttributes({ 'error.type': outcome.error }))
          span.setStatus({ code: SpanStatusCode.ERROR })
        }
        span.end()
      },
      within: (work) => contextManager.with(context, work),
    }
    spans.set(handle, span)
    return handle
  }

  return {
    start(name: SpanName, attributes, startOptions = {}) {
      const parent = startOptions.parent === undefined ? undefined : spans.get(startOptions.parent)
      const context =
        startOptions.root === true
          ? ROOT_CONTEXT
          : parent === undefined
            ? contextManager.active()
            : trace.setSpan(contextManager.active(), parent)
      return wrap(tracer.startSpan(name, { attributes: allowedAttributes(attributes) }, context))
    },
    async shutdown() {
      try {
        await provider.shutdown()
      } finally {
        contextManager.disable()
      }
    },
  }
}
