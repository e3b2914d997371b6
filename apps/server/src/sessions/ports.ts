/**
 * Terminology
 * - session key: who a conversation belongs to — `telegram:<chat>:<user>`, `http:<session>`,
 *   `cron:<job>` — the primary key of `sessions`.
 * - sequence (`seq`): each appended message gets the next number of its session, never reused, so
 *   "everything up to `seq` n" means the same messages before and after a restart.
 * - observation: a short text written by the {@link SessionObserver} that condenses the oldest
 *   messages of a session; stored with the sequence range it covers (`from_seq`…`through_seq`).
 * - reflection: an entry condensing older observations (and older reflections) into one, when
 *   observations pass their own threshold (upstream lango's Reflector).
 * - observed through: the session's highest covered sequence. It moves in the same transaction
 *   that stores the observation, and `load` skips messages at or below it, so a crash before the
 *   observed messages are deleted neither loses nor repeats anything; deleting them is cleanup.
 * - compaction: one run of observe → commit → delete (→ reflect) for a session, under a per-session
 *   in-process lock and a lease in `sessions`, guarded at commit by compare-and-set.
 */
import type { ModelMessage } from 'ai'
import type { SessionError } from './errors.js'

/** Options the store passes to {@link SessionObserver.observe}. */
interface ObserveOptions {
  /** Aborted when the observer times out, the store stops or the caller of `compact` aborts. */
  readonly signal: AbortSignal
  readonly sessionKey: string
  /** The session's current observations and reflections, oldest first (context; do not repeat them). */
  readonly observations: readonly string[]
}

/** Options the store passes to {@link SessionObserver.reflect}. */
interface ReflectOptions {
  readonly signal: AbortSignal
  readonly sessionKey: string
}

/**
 * Condenses conversation history; implemented in apps/server by the model-backed agent runner,
 * by a deterministic function in tests.
 */
export interface SessionObserver {
  /**
   * Condenses `messages` (the oldest unobserved ones, whole tool-call groups, oldest first) into
   * one observation. An empty or whitespace-only result means nothing worth keeping: the messages
   * are marked observed and deleted, and no observation is stored. Throwing (or not settling
   * before the signal aborts) leaves the session as it was; compaction retries after a back-off.
   */
  observe(messages: readonly ModelMessage[], options: ObserveOptions): Promise<string>
  /**
   * Condenses older observations (oldest first) into one reflection; an empty result is a
   * failure (the observations stay). Optional: without it the store asks {@link observe} to
   * condense them, passed as one system message.
   */
  reflect?(observations: readonly string[], options: ReflectOptions): Promise<string>
}

/** Where the store reads time (epoch milliseconds are stored). */
export interface SessionClock {
  now(): Date
}

/** Why a compaction did not observe anything. */
export type CompactionSkipReason =
  /** The session has no row (never appended, deleted or expired). */
  | 'no-session'
  /** Unobserved history is under both thresholds and observations under theirs. */
  | 'below-threshold'
  /** Another instance holds the session's compaction lease. */
  | 'busy'
  /** Another compaction committed first (the store's compare-and-set refused this one). */
  | 'conflict'
  /** An earlier failure's back-off has not elapsed (background compactions only). */
  | 'backoff'
  /** The store is stopped. */
  | 'stopped'
  /** The store has no observer (no model configured): sessions are only bounded. */
  | 'no-observer'

/** What one compaction did. */
export interface CompactionOutcome {
  /** `compacted` when anything was observed or reflected, `failed` when the observer failed first. */
  readonly status: 'compacted' | 'skipped' | 'failed'
  /** Set when `status` is `skipped` (or when a later step of a compacted run was skipped). */
  readonly reason?: CompactionSkipReason
  /** Messages newly covered by observations. */
  readonly observedMessages: number
  /** Observations stored. */
  readonly observationsAdded: number
  /** Observations and reflections condensed into new reflections. */
  readonly reflected: number
  /** The observer's failure (`SESSION_OBSERVER_FAILED`), when `status` is `failed`. */
  readonly error?: SessionError
}

/** A state change of the store, for logs and the server's event stream. Never message content. */
export type SessionEvent =
  /** An observation was committed; the covered messages are deleted next. */
  | {
      readonly type: 'observation:commit'
      readonly sessionKey: string
      readonly fromSeq: number
      readonly throughSeq: number
      readonly messages: number
    }
  /** A reflection replaced older entries. */
  | {
      readonly type: 'reflection:commit'
      readonly sessionKey: string
      readonly condensed: number
      readonly generation: number
    }
  /** A compaction run ended (any outcome but `failed`). */
  | { readonly type: 'compaction:end'; readonly sessionKey: string; readonly outcome: CompactionOutcome }
  /** The observer or reflector failed; the session is unchanged and compaction retries later. */
  | {
      readonly type: 'compaction:error'
      readonly sessionKey: string
      readonly error: SessionError
      /** Epoch ms after which a background compaction may try again. */
      readonly retryAt: number
    }
  /** Unobserved messages were dropped to stay within `maxMessages` / `maxSessionBytes`. */
  | {
      readonly type: 'messages:dropped'
      readonly sessionKey: string
      readonly count: number
      readonly throughSeq: number
    }
  /** The oldest observations were dropped to stay within `maxObservations` (reflection kept failing). */
  | { readonly type: 'observations:dropped'; readonly sessionKey: string; readonly count: number }
  /** A retention sweep ended. */
  | { readonly type: 'sweep:end'; readonly expired: number; readonly evicted: number }
