import type { SpanAttributes, SpanName } from './attributes.js'

/**
 * The server's tracing seam (issue 23), free of OpenTelemetry types: the composition root and the
 * agent loop use it; `./otel.ts` implements it over the OpenTelemetry SDK, loaded only when an OTLP
 * endpoint is configured. Spans nest through the SDK's AsyncLocalStorage context: a span started
 * inside `within(work)` of another is its child.
 */
export interface TraceSpan {
  /** Adds attributes (allow-listed: ./attributes.ts). */
  set(attributes: SpanAttributes): void
  /** Ends the span; with `error` it is marked failed with that `error.type` (a code, never a message). */
  end(outcome?: { readonly error?: string }): void
  /** Runs `work` with this span active: spans started inside are its children. */
  within<T>(work: () => T): T
}

/** Starts spans. */
export interface Tracer {
  /**
   * Starts a span: a child of `parent`, else of the active span, else (or with `root`) the root of
   * a new trace.
   */
  start(
    name: SpanName,
    attributes: SpanAttributes,
    options?: { readonly parent?: TraceSpan; readonly root?: boolean },
  ): TraceSpan
  /** Exports what is buffered and stops; spans started after it are dropped. */
  shutdown(): Promise<void>
}

/**
 * Runs `work` inside a new span, ended when `work` settles: failed with the error's code when it
 * throws (see `errorType`), else with what `onResult` reads from the result.
 */
export async function traced<T>(
  tracer: Tracer,
  name: SpanName,
  attributes: SpanAttributes,
  work: (span: TraceSpan) => Promise<T>,
  options: {
    readonly root?: boolean
    readonly errorType: (error: unknown) => string
    readonly onResult?: (result: T, span: TraceSpan) => { readonly error?: string } | undefined
    /** Sets what a failure still tells (what a failed agent turn spent), before the span ends. */
    readonly onError?: (error: unknown, span: TraceSpan) => void
  },
): Promise<T> {
  const span = tracer.start(name, attributes, options.root === true ? { root: true } : {})
  let result: T
  try {
    result = await span.within(() => work(span))
  } catch (error) {
    const type = options.errorType(error)
    options.onError?.(error, span)
    span.set({ 'error.type': type })
    span.end({ error: type })
    throw error
  }
  span.end(options.onResult?.(result, span) ?? {})
  return result
}
