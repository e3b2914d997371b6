import type { Logger } from '../logger-port.js'
import type { SessionLimits } from './options.js'
import type { SessionEvent } from './ports.js'
import type { Executor } from './rows.js'

/**
 * What a the session store shares with its parts (compaction, retention): the narrowed database
 * handle, the limits in force, and the store's clock, logger, event listener and lifecycle.
 */
export interface SessionContext {
  readonly db: Executor
  readonly limits: SessionLimits
  readonly logger: Logger
  /** Aborted by the store's `stop()`. */
  readonly stopSignal: AbortSignal
  /** Epoch ms from the store's clock. */
  now(): number
  /** Calls the store's `onEvent`; a listener that throws is logged, not fatal. */
  emit(event: SessionEvent): void
  /** Adds work to what the store's `stop()` waits for; returns the same promise. */
  track<T>(promise: Promise<T>): Promise<T>
}
