import { SessionError } from './errors.js'

/** Bounds and thresholds of a {@link SessionStore}; every field has a default in {@link DEFAULT_SESSION_LIMITS}. */
export interface SessionLimits {
  /** Unobserved messages kept per session; beyond it the oldest are dropped (whole tool-call groups). */
  readonly maxMessages: number
  /** UTF-8 bytes of one message as JSON; larger ones lose binary parts, then long texts are shortened. */
  readonly maxMessageBytes: number
  /** UTF-8 bytes of a session's unobserved messages; beyond it the oldest are dropped. One append may not exceed it. */
  readonly maxSessionBytes: number
  /** Sessions kept; beyond it the least recently used are deleted (at creation and on each sweep). */
  readonly maxSessions: number
  /** A session without an append for this long is deleted by the sweep. */
  readonly retentionMs: number
  /** How often `start()`ed stores sweep. */
  readonly sweepIntervalMs: number
  /** Compaction starts when unobserved messages exceed this count … */
  readonly observeAfterMessages: number
  /** … or their estimated tokens (UTF-8 bytes / 4) exceed this. */
  readonly observeAfterTokens: number
  /** Compaction observes the oldest messages until at most this many remain … */
  readonly keepRecentMessages: number
  /** … and the remaining ones estimate at most this many tokens (whole tool-call groups either way). */
  readonly keepRecentTokens: number
  /** Estimated tokens handed to one observer call; larger backlogs are observed in several batches. */
  readonly maxObserveTokens: number
  /** UTF-8 bytes kept of one observation or reflection (longer ones are cut with a marker). */
  readonly maxObservationBytes: number
  /** Reflection starts when a session holds more observations than this … */
  readonly reflectAfterObservations: number
  /** … or their estimated tokens exceed this. */
  readonly reflectAfterTokens: number
  /** The newest observations a reflection leaves as they are. */
  readonly keepRecentObservations: number
  /** Hard cap on observations per session (only reached while reflection keeps failing): the oldest are dropped. */
  readonly maxObservations: number
  /** One observer or reflector call is aborted after this long. */
  readonly observeTimeoutMs: number
  /** How long a compaction lease in `sessions` lasts; renewed before each observer call. Must exceed `observeTimeoutMs`. */
  readonly leaseMs: number
  /** After an observer failure, background compaction of that session waits this long, doubling per failure … */
  readonly retryBaseMs: number
  /** … up to this. */
  readonly retryMaxMs: number
}

const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE

/** The defaults: 30-day retention as the rest of the server (ARCHITECTURE.md §2), about 16k tokens of raw history before observing. */
export const DEFAULT_SESSION_LIMITS: SessionLimits = Object.freeze({
  maxMessages: 500,
  maxMessageBytes: 128 * 1024,
  maxSessionBytes: 4 * 1024 * 1024,
  maxSessions: 10_000,
  retentionMs: 30 * DAY,
  sweepIntervalMs: 60 * MINUTE,
  observeAfterMessages: 50,
  observeAfterTokens: 16_000,
  keepRecentMessages: 12,
  keepRecentTokens: 4_000,
  maxObserveTokens: 24_000,
  maxObservationBytes: 16 * 1024,
  reflectAfterObservations: 8,
  reflectAfterTokens: 8_000,
  keepRecentObservations: 2,
  maxObservations: 32,
  observeTimeoutMs: 2 * MINUTE,
  leaseMs: 5 * MINUTE,
  retryBaseMs: MINUTE,
  retryMaxMs: 30 * MINUTE,
})

/**
 * Fills defaults and checks every limit: positive safe integers, and the orderings compaction
 * relies on.
 * @throws SessionError `SESSION_INVALID_OPTION`
 */
export function resolveLimits(overrides: Partial<SessionLimits> | undefined): SessionLimits {
  const limits: SessionLimits = Object.freeze({ ...DEFAULT_SESSION_LIMITS, ...stripUndefined(overrides) })
  for (const [name, value] of Object.entries(limits)) {
    if (
      !Number.isSafeInteger(value) ||
      (value as number) < 0 ||
      (value === 0 && name !== 'keepRecentMessages')
    ) {
      throw invalidOption(`${name} must be a positive integer`, name)
    }
  }
  const order: readonly [keyof SessionLimits, keyof SessionLimits][] = [
    ['keepRecentMessages', 'observeAfterMessages'],
    ['observeAfterMessages', 'maxMessages'],
    ['keepRecentTokens', 'observeAfterTokens'],
    ['maxMessageBytes', 'maxSessionBytes'],
    ['keepRecentObservations', 'reflectAfterObservations'],
    ['reflectAfterObservations', 'maxObservations'],
    ['observeTimeoutMs', 'leaseMs'],
    ['retryBaseMs', 'retryMaxMs'],
  ]
  for (const [smaller, larger] of order) {
    const strict = smaller !== 'retryBaseMs'
    if (strict ? limits[smaller] >= limits[larger] : limits[smaller] > limits[larger]) {
      throw invalidOption(`${smaller} must be ${strict ? 'below' : 'at most'} ${larger}`, smaller)
    }
  }
  return limits
}

function stripUndefined(overrides: Partial<SessionLimits> | undefined): Partial<SessionLimits> {
  const result: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(overrides ?? {})) {
    if (!(name in DEFAULT_SESSION_LIMITS)) throw invalidOption(`unknown session limit ${name}`, name)
    if (value !== undefined) result[name] = value
  }
  return result as Partial<SessionLimits>
}

function invalidOption(message: string, option: string): SessionError {
  return new SessionError('SESSION_INVALID_OPTION', message, { data: { option } })
}
