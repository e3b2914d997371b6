import type { Logger } from '../logger.js'

/** One part of the server that starts and stops: a service, a database, a lock. */
export interface Part {
  readonly name: string
  start?(): unknown
  stop?(): unknown
}

/**
 * The server's parts, started in order and stopped in reverse (graphile-worker's releasers): each
 * stop is guarded and logged, so one part that fails to stop never leaves the database or the host
 * lock open. A part added as `held` (opened while the app was made: the database, the host-run
 * lock) is stopped even when `start()` never ran. A start that fails stops what already started.
 */
export class Lifecycle {
  readonly #logger: Logger
  readonly #parts: { readonly part: Part; started: boolean }[] = []
  #stopping: Promise<void> | undefined

  constructor(logger: Logger) {
    this.#logger = logger
  }

  /** Adds a part after the others; `held`: it is already open and must be stopped whatever happens. */
  add(part: Part, options: { readonly held?: boolean } = {}): void {
    this.#parts.push({ part, started: options.held === true })
  }

  /** Starts every part not started yet, in order; on a failure stops the started ones, then rethrows. */
  async start(): Promise<void> {
    for (const entry of this.#parts) {
      if (entry.started) continue
      try {
        await entry.part.start?.()
        entry.started = true
      } catch (error) {
        await this.stop().catch(() => {})
        throw error
      }
    }
  }

  /**
   * Stops every started part, last first, each on its own: a failure is logged and the rest still
   * stop. Rejects afterwards with an `AggregateError` naming the parts that failed. Idempotent.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      const failed: { name: string; error: unknown }[] = []
      for (const entry of [...this.#parts].reverse()) {
        if (!entry.started) continue
        entry.started = false
        try {
          await entry.part.stop?.()
        } catch (error) {
          failed.push({ name: entry.part.name, error })
          this.#logger.error('part did not stop cleanly; stopping the rest', { part: entry.part.name, error })
        }
      }
      if (failed.length > 0)
        throw new AggregateError(
          failed.map(({ error }) => error),
          `the server stopped, but these parts failed to: ${failed.map(({ name }) => name).join(', ')}`,
        )
    })()
    return this.#stopping
  }
}
