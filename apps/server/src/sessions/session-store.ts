import { randomUUID } from 'node:crypto'
import type { ModelMessage } from 'ai'
import { type Kysely, sql, type Transaction } from 'kysely'
import { abortable, timeoutSignal } from '../abort.js'
import type { Logger } from '../logger.js'
import { SessionError } from './errors.js'
import { chooseCut, cutPoints, decodeMessage, encodeMessage, estimateTokens, utf8Bytes } from './messages.js'
import { resolveLimits, type SessionLimits } from './options.js'
import type {
  CompactionOutcome,
  CompactionSkipReason,
  SessionClock,
  SessionEvent,
  SessionObserver,
} from './ports.js'
import type { SessionDatabase } from './schema.js'

/** What a session key looks like: `<kind>:<id>`, e.g. `telegram:-100123:42`, `http:abc`, `cron:backup`. */
const SESSION_KEY_PATTERN = /^[a-z][a-z0-9_-]{0,31}:[^\p{Cc}]{1,223}$/u

/** Largest page `list` returns (SECURITY.md SQL-4). */
const MAX_LIST_LIMIT = 500

/** Rows per multi-row INSERT, well under SQLite's and PostgreSQL's parameter limits. */
const INSERT_CHUNK = 100
/** Keys per retention or eviction batch. */
const SWEEP_CHUNK = 200
/** Batches one sweep works through before yielding to the next interval. */
const SWEEP_MAX_BATCHES = 50
/** Observer calls in one compaction run (a long observer outage leaves a backlog). */
const MAX_BATCHES_PER_RUN = 8
/** Sessions whose failure back-off is remembered. */
const MAX_BACKOFF_ENTRIES = 1024

// biome-ignore lint/suspicious/noExplicitAny: the store narrows any host handle to its own tables
type HostDatabase = Kysely<any>
type Executor = Kysely<SessionDatabase>

/** Options of {@link SessionStore}. */
interface SessionStoreOptions {
  /** Condenses old history; without one, sessions are only bounded (the oldest messages dropped). */
  readonly observer?: SessionObserver
  /** Bounds and thresholds; unset fields take {@link DEFAULT_SESSION_LIMITS}. */
  readonly limits?: Partial<SessionLimits>
  /** Where time comes from (default: the system clock). */
  readonly clock?: SessionClock
  /** Default: silent. */
  readonly logger?: Logger
  /** Ids of session incarnations and of this instance's compaction leases (default `randomUUID`). */
  readonly idGenerator?: () => string
  /** Called synchronously on each {@link SessionEvent}; a listener that throws is logged, not fatal. */
  readonly onEvent?: (event: SessionEvent) => void
}

/** What {@link SessionStore.load} returns: the context an agent turn starts from. */
interface LoadedSession {
  /** Observations and reflections, oldest first. */
  readonly observations: readonly string[]
  /** Messages not yet covered by an observation, in append order. */
  readonly messages: readonly ModelMessage[]
}

/** One row of {@link SessionStore.list}. */
interface SessionSummary {
  readonly key: string
  /** Epoch ms. */
  readonly createdAt: number
  /** Epoch ms of the last append; retention counts from it. */
  readonly updatedAt: number
  /** Messages `load` returns (not yet observed). */
  readonly messageCount: number
  readonly observationCount: number
  /** Highest sequence handed out. */
  readonly lastSeq: number
  /** Highest sequence covered by an observation. */
  readonly observedThrough: number
}

/** Options of {@link SessionStore.list}. */
interface ListSessionsOptions {
  readonly signal?: AbortSignal
  /** Only keys starting with this (e.g. `telegram:`); compared exactly, case-sensitive. */
  readonly prefix?: string
  /** Keys after this one (keyset paging: pass the last key of the previous page). */
  readonly after?: string
  /** Default 100, at most 500. */
  readonly limit?: number
}

/** What one {@link SessionStore.sweep} deleted. */
interface SweepResult {
  /** Sessions idle longer than `retentionMs`. */
  readonly expired: number
  /** Least recently used sessions beyond `maxSessions`. */
  readonly evicted: number
}

const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} }
const systemClock: SessionClock = { now: () => new Date() }

interface MessageRow {
  readonly seq: number
  readonly bytes: number
  readonly message: ModelMessage
}

interface SessionHead {
  readonly id: string
  readonly observedThrough: number
}

interface Entry {
  readonly fromSeq: number
  readonly throughSeq: number
  readonly generation: number
  readonly text: string
  readonly tokens: number
}

/** Thrown inside a transaction to roll it back when a guard finds another writer was first. */
class Conflict extends Error {}

/**
 * Persisted conversation sessions with observational memory compaction, over one Kysely handle
 * (SQLite or PostgreSQL; run {@link migrateSessions} first). Structurally an agent runner's
 * `ConversationMemory`: `load` returns observations plus the messages they do not cover, `append`
 * stores a turn. When a session's unobserved history passes a threshold, `append` starts a
 * compaction in the background (never awaited): the observer condenses the oldest messages, the
 * observation and the new "observed through" sequence commit together, then the covered
 * messages are deleted. Observations are in turn condensed by reflection. A failing observer
 * leaves the session as it was and is retried after a back-off.
 * @example
 * await migrateSessions(db)
 * await using sessions = new SessionStore(db, { observer })
 * sessions.start() // retention sweeps
 * const { observations, messages } = await sessions.load('telegram:42:7')
 * await sessions.append('telegram:42:7', [userMessage, ...response.messages])
 */
export class SessionStore {
  /** The limits in force (defaults filled in). */
  readonly limits: SessionLimits
  readonly #db: Kysely<SessionDatabase>
  readonly #observer: SessionObserver | undefined
  readonly #clock: SessionClock
  readonly #logger: Logger
  readonly #newId: () => string
  readonly #onEvent: ((event: SessionEvent) => void) | undefined
  /** Lease owner id of this instance. */
  readonly #instanceId: string
  /** The per-session in-process lock: one compaction run per key; later callers join it. */
  readonly #running = new Map<string, Promise<CompactionOutcome>>()
  /** Every run and sweep in flight, awaited by `stop()`. */
  readonly #inFlight = new Set<Promise<unknown>>()
  readonly #backoff = new Map<string, { readonly failures: number; readonly retryAt: number }>()
  readonly #stop = new AbortController()
  #sweepTimer: ReturnType<typeof setInterval> | undefined
  #sweeping = false
  #started = false

  /**
   * @param db the host's handle (any tables besides the session tables).
   * @throws SessionError `SESSION_INVALID_OPTION`
   */
  constructor(db: HostDatabase, options: SessionStoreOptions = {}) {
    this.limits = resolveLimits(options.limits)
    // Kysely's DB parameter is invariant: narrow the host's handle once; only session tables are queried.
    this.#db = db as Kysely<SessionDatabase>
    this.#observer = options.observer
    this.#clock = options.clock ?? systemClock
    this.#logger = options.logger ?? silentLogger
    this.#newId = options.idGenerator ?? randomUUID
    this.#onEvent = options.onEvent
    this.#instanceId = this.#newId()
  }

  /**
   * The session's observations (oldest first) and the messages they do not cover, in order.
   * Both come from one statement, so a compaction committing meanwhile is seen entirely or not at
   * all. A session never appended to loads empty.
   * @throws SessionError `SESSION_INVALID_KEY`, `SESSION_STORE_CORRUPT`
   */
  async load(sessionKey: string, options?: { readonly signal?: AbortSignal }): Promise<LoadedSession> {
    options?.signal?.throwIfAborted()
    checkKey(sessionKey)
    const observations = this.#db
      .selectFrom('session_observations as o')
      .innerJoin('sessions as s', 's.key', 'o.session_key')
      .where('o.session_key', '=', sessionKey)
      .select([sql<string>`'o'`.as('kind'), 'o.through_seq as seq', 'o.text as body'])
    const messages = this.#db
      .selectFrom('session_messages as m')
      .innerJoin('sessions as s', 's.key', 'm.session_key')
      .where('m.session_key', '=', sessionKey)
      .whereRef('m.seq', '>', 's.observed_through')
      .select([sql<string>`'m'`.as('kind'), 'm.seq as seq', 'm.content as body'])
    const rows = await observations.unionAll(messages).execute()
    const parsed = rows
      .map((row) => ({ kind: row.kind, seq: toInteger(row.seq, sessionKey), body: row.body }))
      .sort((left, right) => left.seq - right.seq)
    return {
      observations: parsed.filter((row) => row.kind === 'o').map((row) => row.body),
      messages: parsed
        .filter((row) => row.kind === 'm')
        .map((row) => decodeMessage(row.body, sessionKey, row.seq)),
    }
  }

  /**
   * Appends one turn's messages in order, each with the next sequence number, and enforces the
   * bounds: an oversized message loses its binary parts, then its longest texts are shortened; if
   * the session then holds more than `maxMessages` or `maxSessionBytes` of unobserved history, the
   * oldest messages are dropped (whole tool-call groups). Starts a background compaction when the
   * history passes the observe threshold; never waits for it.
   * @throws SessionError `SESSION_INVALID_KEY`, `SESSION_INVALID_MESSAGE`,
   * `SESSION_MESSAGE_TOO_LARGE`, `SESSION_TURN_TOO_LARGE`
   */
  async append(
    sessionKey: string,
    messages: readonly ModelMessage[],
    options?: { readonly signal?: AbortSignal },
  ): Promise<void> {
    options?.signal?.throwIfAborted()
    checkKey(sessionKey)
    if (!Array.isArray(messages)) {
      throw new SessionError('SESSION_INVALID_MESSAGE', 'messages must be an array', { data: { sessionKey } })
    }
    if (messages.length === 0) return
    const { maxMessages, maxMessageBytes, maxSessionBytes } = this.limits
    if (messages.length > maxMessages) {
      throw new SessionError(
        'SESSION_TURN_TOO_LARGE',
        `one append holds ${messages.length} messages, above the session limit of ${maxMessages}`,
        { data: { sessionKey, count: messages.length, maxMessages } },
      )
    }
    const encoded = messages.map((message, index) => encodeMessage(message, index, maxMessageBytes))
    const turnBytes = encoded.reduce((total, message) => total + message.bytes, 0)
    if (turnBytes > maxSessionBytes) {
      throw new SessionError(
        'SESSION_TURN_TOO_LARGE',
        `one append holds ${turnBytes} bytes, above the session limit of ${maxSessionBytes}`,
        { data: { sessionKey, bytes: turnBytes, maxSessionBytes } },
      )
    }
    const shrunk = encoded.filter((message) => message.shrunk).length
    if (shrunk > 0)
      this.#logger.info('session messages shrunk to fit', { sessionKey, shrunk, maxMessageBytes })
    options?.signal?.throwIfAborted()
    const now = this.#now()
    const result = await this.#db.transaction().execute(async (transaction) => {
      let created = false
      let head = await bumpSequence(transaction, sessionKey, encoded.length, now)
      if (head === undefined) {
        const inserted = await transaction
          .insertInto('sessions')
          .values({
            key: sessionKey,
            id: this.#newId(),
            created_at: now,
            updated_at: now,
            last_seq: 0,
            observed_through: 0,
            lease_owner: null,
            lease_until: null,
          })
          .onConflict((conflict) => conflict.column('key').doNothing())
          .executeTakeFirst()
        created = (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n
        head = await bumpSequence(transaction, sessionKey, encoded.length, now)
        if (head === undefined) throw new Error('session row vanished inside its own transaction')
      }
      const firstSeq = head.lastSeq - encoded.length + 1
      const rows = encoded.map((message, index) => ({
        session_key: sessionKey,
        seq: firstSeq + index,
        role: message.role,
        content: message.json,
        bytes: message.bytes,
        created_at: now,
      }))
      for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
        await transaction
          .insertInto('session_messages')
          .values(rows.slice(start, start + INSERT_CHUNK))
          .execute()
      }
      let stats = await unobservedStats(transaction, sessionKey, head.observedThrough)
      let dropped: { count: number; throughSeq: number } | undefined
      if (stats.count > maxMessages || stats.bytes > maxSessionBytes) {
        dropped = await this.#trim(transaction, sessionKey, head.observedThrough)
        stats = await unobservedStats(transaction, sessionKey, head.observedThrough)
      }
      return { created, stats, dropped }
    })
    if (result.dropped !== undefined) {
      this.#logger.warn('session messages dropped to stay within bounds', {
        sessionKey,
        count: result.dropped.count,
        throughSeq: result.dropped.throughSeq,
      })
      this.#emit({ type: 'messages:dropped', sessionKey, ...result.dropped })
    }
    if (result.created) await this.#evictOverflow(options?.signal)
    if (this.#overObserveThreshold(result.stats)) this.#compactInBackground(sessionKey)
  }

  /**
   * Runs compaction for one session now (threshold permitting; the failure back-off does not
   * apply): observe the oldest messages in batches, commit each observation with the sequence it
   * covers, delete what it covers, then reflect when observations pass their threshold. A second
   * call while a run is in flight joins it. `signal` ends this caller's wait; the run itself is
   * bounded by `observeTimeoutMs` per observer call and by `stop()`.
   * @throws SessionError `SESSION_INVALID_KEY`; database errors as they are
   */
  async compact(sessionKey: string, options?: { readonly signal?: AbortSignal }): Promise<CompactionOutcome> {
    options?.signal?.throwIfAborted()
    checkKey(sessionKey)
    return abortable(this.#startRun(sessionKey), options?.signal)
  }

  /**
   * Lists sessions in key order (the database's text order), with counts.
   * @throws SessionError `SESSION_INVALID_OPTION` for a limit that is not an integer in 1…500
   */
  async list(options?: ListSessionsOptions): Promise<readonly SessionSummary[]> {
    options?.signal?.throwIfAborted()
    const limit = options?.limit ?? 100
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new SessionError(
        'SESSION_INVALID_OPTION',
        `limit must be an integer from 1 to ${MAX_LIST_LIMIT}`,
        {
          data: { option: 'limit' },
        },
      )
    }
    const { prefix, after } = options ?? {}
    const rows = await this.#db
      .selectFrom('sessions as s')
      .select((eb) => [
        's.key',
        's.created_at',
        's.updated_at',
        's.last_seq',
        's.observed_through',
        eb
          .selectFrom('session_messages as m')
          .select((inner) => inner.fn.countAll().as('count'))
          .whereRef('m.session_key', '=', 's.key')
          .whereRef('m.seq', '>', 's.observed_through')
          .as('message_count'),
        eb
          .selectFrom('session_observations as o')
          .select((inner) => inner.fn.countAll().as('count'))
          .whereRef('o.session_key', '=', 's.key')
          .as('observation_count'),
      ])
      // Exact, case-sensitive prefix on both databases (LIKE is case-insensitive in SQLite).
      .$if(prefix !== undefined && prefix !== '', (query) =>
        query.where(
          sql<string>`substr(${sql.ref('s.key')}, 1, cast(${[...(prefix as string)].length} as integer))`,
          '=',
          prefix as string,
        ),
      )
      .$if(after !== undefined, (query) => query.where('s.key', '>', after as string))
      .orderBy('s.key')
      .limit(limit)
      .execute()
    return rows.map((row) => ({
      key: row.key,
      createdAt: toInteger(row.created_at, row.key),
      updatedAt: toInteger(row.updated_at, row.key),
      messageCount: toInteger(row.message_count ?? 0, row.key),
      observationCount: toInteger(row.observation_count ?? 0, row.key),
      lastSeq: toInteger(row.last_seq, row.key),
      observedThrough: toInteger(row.observed_through, row.key),
    }))
  }

  /**
   * Deletes a session, its messages and its observations. A compaction in flight for it finds the
   * session gone at commit and stores nothing. Returns whether the session existed.
   * @throws SessionError `SESSION_INVALID_KEY`
   */
  async delete(sessionKey: string, options?: { readonly signal?: AbortSignal }): Promise<boolean> {
    options?.signal?.throwIfAborted()
    checkKey(sessionKey)
    const deleted = await this.#db.transaction().execute(async (transaction) => {
      const result = await transaction.deleteFrom('sessions').where('key', '=', sessionKey).executeTakeFirst()
      await transaction.deleteFrom('session_messages').where('session_key', '=', sessionKey).execute()
      await transaction.deleteFrom('session_observations').where('session_key', '=', sessionKey).execute()
      return result.numDeletedRows > 0n
    })
    this.#backoff.delete(sessionKey)
    return deleted
  }

  /**
   * Deletes sessions idle for longer than `retentionMs`, then the least recently used beyond
   * `maxSessions`. A session appended to meanwhile is kept (each delete re-checks its activity).
   */
  async sweep(options?: { readonly signal?: AbortSignal }): Promise<SweepResult> {
    options?.signal?.throwIfAborted()
    const cutoff = this.#now() - this.limits.retentionMs
    let expired = 0
    for (let batch = 0; batch < SWEEP_MAX_BATCHES; batch += 1) {
      options?.signal?.throwIfAborted()
      const rows = await this.#db
        .selectFrom('sessions')
        .select('key')
        .where('updated_at', '<', cutoff)
        .orderBy('updated_at')
        .limit(SWEEP_CHUNK)
        .execute()
      if (rows.length === 0) break
      expired += await this.#deleteIdle(
        rows.map((row) => row.key),
        cutoff,
      )
    }
    const evicted = await this.#evictOverflow(options?.signal)
    this.#emit({ type: 'sweep:end', expired, evicted })
    if (expired + evicted > 0) this.#logger.info('sessions swept', { expired, evicted })
    return { expired, evicted }
  }

  /** Starts the periodic retention sweep (one right away). Idempotent. */
  start(): void {
    if (this.#started || this.#stop.signal.aborted) return
    this.#started = true
    this.#sweepInBackground()
    this.#sweepTimer = setInterval(() => this.#sweepInBackground(), this.limits.sweepIntervalMs)
    this.#sweepTimer.unref()
  }

  /**
   * Stops sweeps and background compactions: aborts observer calls in flight (the sessions stay as
   * they were) and waits for every run to end. `load`, `append`, `list` and `delete` keep working;
   * `append` no longer starts compactions.
   */
  async stop(options?: { readonly signal?: AbortSignal }): Promise<void> {
    if (!this.#stop.signal.aborted) this.#stop.abort()
    if (this.#sweepTimer !== undefined) clearInterval(this.#sweepTimer)
    this.#sweepTimer = undefined
    await abortable(Promise.allSettled([...this.#inFlight]), options?.signal)
  }

  /** `await using store = new SessionStore(…)` stops it at scope exit. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop()
  }

  #now(): number {
    return this.#clock.now().getTime()
  }

  #emit(event: SessionEvent): void {
    if (this.#onEvent === undefined) return
    try {
      this.#onEvent(event)
    } catch (error) {
      this.#logger.warn('session event listener threw', { type: event.type, error })
    }
  }

  #overObserveThreshold(stats: { count: number; tokens: number }): boolean {
    return stats.count > this.limits.observeAfterMessages || stats.tokens > this.limits.observeAfterTokens
  }

  #track<T>(promise: Promise<T>): Promise<T> {
    this.#inFlight.add(promise)
    const forget = () => this.#inFlight.delete(promise)
    promise.then(forget, forget)
    return promise
  }

  #compactInBackground(sessionKey: string): void {
    if (this.#observer === undefined || this.#stop.signal.aborted || this.#running.has(sessionKey)) return
    const backoff = this.#backoff.get(sessionKey)
    if (backoff !== undefined && backoff.retryAt > this.#now()) return
    this.#startRun(sessionKey).catch((error: unknown) => {
      this.#logger.error('session compaction failed', { sessionKey, error })
    })
  }

  #sweepInBackground(): void {
    if (this.#sweeping || this.#stop.signal.aborted) return
    this.#sweeping = true
    this.#track(this.sweep({ signal: this.#stop.signal }))
      .catch((error: unknown) => {
        if (!this.#stop.signal.aborted) this.#logger.error('session sweep failed', { error })
      })
      .finally(() => {
        this.#sweeping = false
      })
  }

  #startRun(sessionKey: string): Promise<CompactionOutcome> {
    const running = this.#running.get(sessionKey)
    if (running !== undefined) return running
    // Events go out once the run has released its lease and lock, so a listener that appends at
    // once starts the next compaction instead of finding this one still running.
    const run = this.#track(
      this.#run(sessionKey).then(
        (outcome) => {
          this.#running.delete(sessionKey)
          this.#report(sessionKey, outcome)
          return outcome
        },
        (error: unknown) => {
          this.#running.delete(sessionKey)
          throw error
        },
      ),
    )
    this.#running.set(sessionKey, run)
    return run
  }

  #report(sessionKey: string, outcome: CompactionOutcome): void {
    if (outcome.error !== undefined) {
      const retryAt = this.#backoff.get(sessionKey)?.retryAt ?? this.#now()
      this.#emit({ type: 'compaction:error', sessionKey, error: outcome.error, retryAt })
    }
    if (outcome.status !== 'failed') this.#emit({ type: 'compaction:end', sessionKey, outcome })
  }

  /** One compaction run; the caller holds the in-process lock for `sessionKey`. */
  async #run(sessionKey: string): Promise<CompactionOutcome> {
    const progress = { observedMessages: 0, observationsAdded: 0, reflected: 0 }
    const skipped = (reason: CompactionSkipReason): CompactionOutcome => ({
      status: progress.observedMessages + progress.reflected > 0 ? 'compacted' : 'skipped',
      reason,
      ...progress,
    })
    if (this.#observer === undefined) return skipped('no-observer')
    if (this.#stop.signal.aborted) return skipped('stopped')
    const observer = this.#observer
    const head = await readHead(this.#db, sessionKey)
    if (head === undefined) return skipped('no-session')
    // Messages a crashed run observed but did not delete: load already skips them.
    await this.#db
      .deleteFrom('session_messages')
      .where('session_key', '=', sessionKey)
      .where('seq', '<=', head.observedThrough)
      .execute()
    let leased = false
    const lease = async (): Promise<boolean> => {
      leased = leased ? await this.#renewLease(sessionKey) : await this.#claimLease(sessionKey, head.id)
      return leased
    }
    try {
      let observedThrough = head.observedThrough
      for (let batch = 0; batch < MAX_BATCHES_PER_RUN; batch += 1) {
        const history = await unobservedMessages(this.#db, sessionKey, observedThrough)
        const tokens = history.reduce((total, row) => total + estimateTokens(row.bytes), 0)
        if (!this.#overObserveThreshold({ count: history.length, tokens })) break
        const taken = this.#chooseBatch(history)
        if (taken === undefined) break
        const claiming = !leased
        if (!(await lease())) return skipped(claiming ? 'busy' : 'conflict')
        if (claiming) {
          // Another instance may have compacted between our first read and the claim: start from its result.
          const fresh = await readHead(this.#db, sessionKey)
          if (fresh === undefined || fresh.id !== head.id) return skipped('conflict')
          if (fresh.observedThrough !== observedThrough) {
            observedThrough = fresh.observedThrough
            continue
          }
        }
        const entries = await readEntries(this.#db, sessionKey)
        const signal = this.#callSignal()
        let text: string
        try {
          const observing = Promise.resolve().then(() =>
            observer.observe(
              taken.map((row) => row.message),
              { signal, sessionKey, observations: entries.map((entry) => entry.text) },
            ),
          )
          text = this.#checkObservation(await abortable(observing, signal), 'observation', true)
        } catch (error) {
          return this.#failed(sessionKey, error, progress)
        }
        const fromSeq = (taken[0] as MessageRow).seq
        const throughSeq = (taken[taken.length - 1] as MessageRow).seq
        const committed = await this.#commitObservation(sessionKey, head.id, observedThrough, {
          fromSeq,
          throughSeq,
          generation: 0,
          text,
          tokens: estimateTokens(utf8Bytes(text)),
        })
        if (!committed) return skipped('conflict')
        observedThrough = throughSeq
        progress.observedMessages += taken.length
        if (text !== '') progress.observationsAdded += 1
        this.#backoff.delete(sessionKey)
        // THE PHASE BOUNDARY: the observation is durable; a crash from here on loses nothing.
        this.#emit({ type: 'observation:commit', sessionKey, fromSeq, throughSeq, messages: taken.length })
        await this.#db
          .deleteFrom('session_messages')
          .where('session_key', '=', sessionKey)
          .where('seq', '<=', throughSeq)
          .execute()
      }
      const reflection = await this.#reflect(sessionKey, head.id, lease, progress)
      if (typeof reflection === 'object') return reflection
      await this.#capObservations(sessionKey)
      if (typeof reflection === 'string') return skipped(reflection)
      if (progress.observedMessages + progress.reflected === 0) return skipped('below-threshold')
      return { status: 'compacted', ...progress }
    } finally {
      if (leased) await this.#releaseLease(sessionKey)
    }
  }

  /**
   * The oldest messages to observe: enough that at most `keepRecentMessages` / `keepRecentTokens`
   * remain, at most `maxObserveTokens` per call, moved back to the start of a turn when one is near
   * ({@link chooseCut}), and never between a tool call and its result.
   */
  #chooseBatch(history: readonly MessageRow[]): readonly MessageRow[] | undefined {
    const { keepRecentMessages, keepRecentTokens, maxObserveTokens } = this.limits
    const count = history.length
    let keep = 0
    let keptTokens = 0
    for (let index = count - 1; index >= 0 && keep < keepRecentMessages; index -= 1) {
      const tokens = estimateTokens((history[index] as MessageRow).bytes)
      if (keptTokens + tokens > keepRecentTokens) break
      keptTokens += tokens
      keep += 1
    }
    let desired = count - keep
    let batchTokens = 0
    for (let index = 0; index < desired; index += 1) {
      batchTokens += estimateTokens((history[index] as MessageRow).bytes)
      if (batchTokens > maxObserveTokens) {
        desired = Math.max(1, index)
        break
      }
    }
    if (desired < 1) return undefined
    const cut = chooseCut(
      history.map((row) => row.message),
      desired,
    )
    return cut === undefined ? undefined : history.slice(0, cut)
  }

  /**
   * Condenses older observations when there are too many. Returns the outcome when the observer
   * failed, why nothing was condensed when another instance holds the lease or reflected first,
   * and `undefined` otherwise.
   */
  async #reflect(
    sessionKey: string,
    sessionId: string,
    lease: () => Promise<boolean>,
    progress: { observedMessages: number; observationsAdded: number; reflected: number },
  ): Promise<CompactionOutcome | 'busy' | 'conflict' | undefined> {
    const { reflectAfterObservations, reflectAfterTokens, keepRecentObservations } = this.limits
    const entries = await readEntries(this.#db, sessionKey)
    const tokens = entries.reduce((total, entry) => total + entry.tokens, 0)
    if (entries.length <= reflectAfterObservations && tokens <= reflectAfterTokens) return undefined
    const taken = entries.slice(0, Math.max(2, entries.length - keepRecentObservations))
    if (taken.length < 2) return undefined
    if (!(await lease())) return 'busy'
    const observer = this.#observer as SessionObserver
    const texts = taken.map((entry) => entry.text)
    const signal = this.#callSignal()
    let text: string
    try {
      const condensed = Promise.resolve().then(() =>
        observer.reflect !== undefined
          ? observer.reflect(texts, { signal, sessionKey })
          : observer.observe(
              [
                {
                  role: 'system',
                  content: `Observations recorded earlier in this conversation, oldest first. Condense them into one.\n\n${texts
                    .map((entry, index) => `Observation ${index + 1}:\n${entry}`)
                    .join('\n\n')}`,
                },
              ],
              { signal, sessionKey, observations: [] },
            ),
      )
      text = this.#checkObservation(await abortable(condensed, signal), 'reflection', false)
    } catch (error) {
      const outcome = this.#failed(sessionKey, error, progress)
      await this.#capObservations(sessionKey)
      return outcome
    }
    const generation = Math.max(...taken.map((entry) => entry.generation)) + 1
    const committed = await this.#commitReflection(sessionKey, sessionId, taken, {
      fromSeq: Math.min(...taken.map((entry) => entry.fromSeq)),
      throughSeq: Math.max(...taken.map((entry) => entry.throughSeq)),
      generation,
      text,
      tokens: estimateTokens(utf8Bytes(text)),
    })
    if (!committed) return 'conflict'
    progress.reflected += taken.length
    this.#emit({ type: 'reflection:commit', sessionKey, condensed: taken.length, generation })
    return undefined
  }

  /** The signal of one observer call: store stop or `observeTimeoutMs` (its one-shot timer is unref'd). */
  #callSignal(): AbortSignal {
    return AbortSignal.any([this.#stop.signal, timeoutSignal(this.limits.observeTimeoutMs).signal])
  }

  /**
   * The text to store: at most `maxObservationBytes`. An empty observation (nothing worth keeping)
   * is `''` when `emptyAllowed`; an empty reflection, or anything but a string, is a failure.
   */
  #checkObservation(text: unknown, what: string, emptyAllowed: boolean): string {
    if (typeof text !== 'string') {
      throw new SessionError('SESSION_OBSERVER_FAILED', `the observer returned no text for the ${what}`)
    }
    if (text.trim() === '') {
      if (emptyAllowed) return ''
      throw new SessionError('SESSION_OBSERVER_FAILED', `the observer returned an empty ${what}`)
    }
    const max = this.limits.maxObservationBytes
    if (utf8Bytes(text) <= max) return text
    const marker = `\n[… ${what} truncated to ${max} bytes]`
    let head = Buffer.from(text, 'utf8')
      .subarray(0, Math.max(0, max - utf8Bytes(marker)))
      .toString('utf8')
    // A multi-byte character cut in half decodes to U+FFFD; drop it.
    if (head.endsWith('\uFFFD')) head = head.slice(0, -1)
    return `${head}${marker}`
  }

  /** Records a failed observer call: back-off and log; the outcome says what was done before. */
  #failed(
    sessionKey: string,
    thrown: unknown,
    progress: { observedMessages: number; observationsAdded: number; reflected: number },
  ): CompactionOutcome {
    if (this.#stop.signal.aborted) {
      return {
        status: progress.observedMessages + progress.reflected > 0 ? 'compacted' : 'skipped',
        reason: 'stopped',
        ...progress,
      }
    }
    const error = SessionError.is(thrown)
      ? thrown
      : new SessionError('SESSION_OBSERVER_FAILED', 'the observer failed; the session is unchanged', {
          cause: thrown,
          data: { sessionKey },
        })
    const failures = (this.#backoff.get(sessionKey)?.failures ?? 0) + 1
    const delay = Math.min(this.limits.retryMaxMs, this.limits.retryBaseMs * 2 ** Math.min(failures - 1, 30))
    const retryAt = this.#now() + delay
    this.#backoff.delete(sessionKey)
    this.#backoff.set(sessionKey, { failures, retryAt })
    if (this.#backoff.size > MAX_BACKOFF_ENTRIES) {
      const oldest = this.#backoff.keys().next().value
      if (oldest !== undefined) this.#backoff.delete(oldest)
    }
    this.#logger.warn('session observer failed; will retry', { sessionKey, failures, retryAt, error })
    return {
      status: progress.observedMessages + progress.reflected > 0 ? 'compacted' : 'failed',
      ...progress,
      error,
    }
  }

  /**
   * The first phase: moves `observed_through` from `expected` to the entry's end and stores the
   * entry (unless its text is empty), in one transaction with nothing else. The compare-and-set on `(key, id,
   * observed_through)` refuses a second compaction of the same messages, and any compaction of a
   * deleted or re-created session.
   */
  async #commitObservation(
    sessionKey: string,
    sessionId: string,
    expected: number,
    entry: Entry,
  ): Promise<boolean> {
    const now = this.#now()
    return this.#db.transaction().execute(async (transaction) => {
      const moved = await transaction
        .updateTable('sessions')
        .set({ observed_through: entry.throughSeq })
        .where('key', '=', sessionKey)
        .where('id', '=', sessionId)
        .where('observed_through', '=', expected)
        .executeTakeFirst()
      if (moved.numUpdatedRows === 0n) return false
      // Nothing worth keeping: the messages count as observed, with no text to show for them.
      if (entry.text === '') return true
      await transaction
        .insertInto('session_observations')
        .values({
          session_key: sessionKey,
          from_seq: entry.fromSeq,
          through_seq: entry.throughSeq,
          generation: entry.generation,
          text: entry.text,
          tokens: entry.tokens,
          created_at: now,
        })
        .execute()
      return true
    })
  }

  /** Replaces `taken` by `reflection` atomically; false when the session changed or another run reflected first. */
  async #commitReflection(
    sessionKey: string,
    sessionId: string,
    taken: readonly Entry[],
    reflection: Entry,
  ): Promise<boolean> {
    const now = this.#now()
    try {
      await this.#db.transaction().execute(async (transaction) => {
        // Locks the session row (PostgreSQL) and proves it is the same incarnation.
        const same = await transaction
          .updateTable('sessions')
          .set((eb) => ({ observed_through: eb.ref('observed_through') }))
          .where('key', '=', sessionKey)
          .where('id', '=', sessionId)
          .executeTakeFirst()
        if (same.numUpdatedRows === 0n) throw new Conflict()
        const removed = await transaction
          .deleteFrom('session_observations')
          .where('session_key', '=', sessionKey)
          .where(
            'through_seq',
            'in',
            taken.map((entry) => entry.throughSeq),
          )
          .executeTakeFirst()
        if (removed.numDeletedRows !== BigInt(taken.length)) throw new Conflict()
        await transaction
          .insertInto('session_observations')
          .values({
            session_key: sessionKey,
            from_seq: reflection.fromSeq,
            through_seq: reflection.throughSeq,
            generation: reflection.generation,
            text: reflection.text,
            tokens: reflection.tokens,
            created_at: now,
          })
          .execute()
      })
      return true
    } catch (error) {
      if (error instanceof Conflict) return false
      throw error
    }
  }

  /** Drops the oldest observations beyond `maxObservations` (only while reflection keeps failing). */
  async #capObservations(sessionKey: string): Promise<void> {
    const entries = await readEntries(this.#db, sessionKey)
    const excess = entries.length - this.limits.maxObservations
    if (excess <= 0) return
    const through = (entries[excess - 1] as Entry).throughSeq
    await this.#db
      .deleteFrom('session_observations')
      .where('session_key', '=', sessionKey)
      .where('through_seq', '<=', through)
      .execute()
    this.#logger.warn('session observations dropped to stay within bounds', { sessionKey, count: excess })
    this.#emit({ type: 'observations:dropped', sessionKey, count: excess })
  }

  async #claimLease(sessionKey: string, sessionId: string): Promise<boolean> {
    const now = this.#now()
    const result = await this.#db
      .updateTable('sessions')
      .set({ lease_owner: this.#instanceId, lease_until: now + this.limits.leaseMs })
      .where('key', '=', sessionKey)
      .where('id', '=', sessionId)
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  async #renewLease(sessionKey: string): Promise<boolean> {
    const result = await this.#db
      .updateTable('sessions')
      .set({ lease_until: this.#now() + this.limits.leaseMs })
      .where('key', '=', sessionKey)
      .where('lease_owner', '=', this.#instanceId)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  async #releaseLease(sessionKey: string): Promise<void> {
    try {
      await this.#db
        .updateTable('sessions')
        .set({ lease_owner: null, lease_until: null })
        .where('key', '=', sessionKey)
        .where('lease_owner', '=', this.#instanceId)
        .execute()
    } catch (error) {
      // The lease then simply expires after leaseMs.
      this.#logger.warn('session lease release failed', { sessionKey, error })
    }
  }

  /** Drops the oldest unobserved messages (whole tool-call groups) until the session is within bounds. */
  async #trim(
    transaction: Transaction<SessionDatabase>,
    sessionKey: string,
    observedThrough: number,
  ): Promise<{ count: number; throughSeq: number } | undefined> {
    const { maxMessages, maxSessionBytes } = this.limits
    const history = await unobservedMessages(transaction, sessionKey, observedThrough)
    let bytes = history.reduce((total, row) => total + row.bytes, 0)
    let minimum = 0
    while (minimum < history.length && (history.length - minimum > maxMessages || bytes > maxSessionBytes)) {
      bytes -= (history[minimum] as MessageRow).bytes
      minimum += 1
    }
    if (minimum === 0) return undefined
    const allowed = cutPoints(history.map((row) => row.message))
    let cut = minimum
    while (cut < history.length && !allowed[cut]) cut += 1
    const throughSeq = (history[cut - 1] as MessageRow).seq
    await transaction
      .deleteFrom('session_messages')
      .where('session_key', '=', sessionKey)
      .where('seq', '<=', throughSeq)
      .execute()
    return { count: cut, throughSeq }
  }

  /** Deletes the given sessions if still idle since before `cutoff`; returns how many. */
  async #deleteIdle(keys: readonly string[], cutoff: number): Promise<number> {
    return this.#db.transaction().execute(async (transaction) => {
      const deleted = await transaction
        .deleteFrom('sessions')
        .where('key', 'in', keys)
        .where('updated_at', '<', cutoff)
        .returning('key')
        .execute()
      const gone = deleted.map((row) => row.key)
      if (gone.length > 0) {
        await transaction.deleteFrom('session_messages').where('session_key', 'in', gone).execute()
        await transaction.deleteFrom('session_observations').where('session_key', 'in', gone).execute()
      }
      for (const key of gone) this.#backoff.delete(key)
      return gone.length
    })
  }

  /** Deletes the least recently used sessions beyond `maxSessions`; returns how many. */
  async #evictOverflow(signal: AbortSignal | undefined): Promise<number> {
    let evicted = 0
    for (let batch = 0; batch < SWEEP_MAX_BATCHES; batch += 1) {
      signal?.throwIfAborted()
      const row = await this.#db
        .selectFrom('sessions')
        .select((eb) => eb.fn.countAll().as('count'))
        .executeTakeFirstOrThrow()
      const excess = toInteger(row.count, 'sessions') - this.limits.maxSessions
      if (excess <= 0) break
      const oldest = await this.#db
        .selectFrom('sessions')
        .select(['key', 'updated_at'])
        .orderBy('updated_at')
        .orderBy('key')
        .limit(Math.min(excess, SWEEP_CHUNK))
        .execute()
      const last = oldest[oldest.length - 1]
      if (last === undefined) break
      const removed = await this.#deleteIdle(
        oldest.map((entry) => entry.key),
        toInteger(last.updated_at, last.key) + 1,
      )
      evicted += removed
      if (removed === 0) break
    }
    if (evicted > 0) this.#logger.info('least recently used sessions evicted', { evicted })
    return evicted
  }
}

/** @throws SessionError `SESSION_INVALID_KEY` */
function checkKey(sessionKey: unknown): asserts sessionKey is string {
  if (typeof sessionKey !== 'string' || !SESSION_KEY_PATTERN.test(sessionKey)) {
    throw new SessionError(
      'SESSION_INVALID_KEY',
      'a session key is <kind>:<id>: kind of a-z, 0-9, "_" or "-" (up to 32), id of 1 to 223 characters without control characters',
    )
  }
}

/** PostgreSQL returns bigint and count(*) as strings; SQLite as numbers. */
function toInteger(value: unknown, sessionKey: string): number {
  const number =
    typeof value === 'number'
      ? value
      : typeof value === 'string' || typeof value === 'bigint'
        ? Number(value)
        : Number.NaN
  if (!Number.isSafeInteger(number)) {
    throw new SessionError('SESSION_STORE_CORRUPT', 'a stored number of a session is not an integer', {
      data: { sessionKey },
    })
  }
  return number
}

/** Reserves `count` sequence numbers and marks activity; undefined when the session has no row. */
async function bumpSequence(
  transaction: Transaction<SessionDatabase>,
  sessionKey: string,
  count: number,
  now: number,
): Promise<{ lastSeq: number; observedThrough: number } | undefined> {
  const row = await transaction
    .updateTable('sessions')
    .set((eb) => ({ last_seq: eb('last_seq', '+', count), updated_at: now }))
    .where('key', '=', sessionKey)
    .returning(['last_seq', 'observed_through'])
    .executeTakeFirst()
  if (row === undefined) return undefined
  return {
    lastSeq: toInteger(row.last_seq, sessionKey),
    observedThrough: toInteger(row.observed_through, sessionKey),
  }
}

async function readHead(db: Executor, sessionKey: string): Promise<SessionHead | undefined> {
  const row = await db
    .selectFrom('sessions')
    .select(['id', 'observed_through'])
    .where('key', '=', sessionKey)
    .executeTakeFirst()
  return row === undefined
    ? undefined
    : { id: row.id, observedThrough: toInteger(row.observed_through, sessionKey) }
}

async function unobservedStats(
  db: Executor,
  sessionKey: string,
  observedThrough: number,
): Promise<{ count: number; bytes: number; tokens: number }> {
  const row = await db
    .selectFrom('session_messages')
    .select((eb) => [
      eb.fn.countAll().as('count'),
      eb.fn.sum<number | string | null>('bytes').as('bytes'),
      // Per message, as compaction counts: the sum of ceil(bytes / 4) (integer division on both databases).
      sql<number | string | null>`sum((${sql.ref('bytes')} + 3) / 4)`.as('tokens'),
    ])
    .where('session_key', '=', sessionKey)
    .where('seq', '>', observedThrough)
    .executeTakeFirstOrThrow()
  return {
    count: toInteger(row.count, sessionKey),
    bytes: toInteger(row.bytes ?? 0, sessionKey),
    tokens: toInteger(row.tokens ?? 0, sessionKey),
  }
}

async function unobservedMessages(
  db: Executor,
  sessionKey: string,
  observedThrough: number,
): Promise<MessageRow[]> {
  const rows = await db
    .selectFrom('session_messages')
    .select(['seq', 'bytes', 'content'])
    .where('session_key', '=', sessionKey)
    .where('seq', '>', observedThrough)
    .orderBy('seq')
    .execute()
  return rows.map((row) => {
    const seq = toInteger(row.seq, sessionKey)
    return {
      seq,
      bytes: toInteger(row.bytes, sessionKey),
      message: decodeMessage(row.content, sessionKey, seq),
    }
  })
}

async function readEntries(db: Executor, sessionKey: string): Promise<Entry[]> {
  const rows = await db
    .selectFrom('session_observations')
    .select(['from_seq', 'through_seq', 'generation', 'text', 'tokens'])
    .where('session_key', '=', sessionKey)
    .orderBy('through_seq')
    .execute()
  return rows.map((row) => ({
    fromSeq: toInteger(row.from_seq, sessionKey),
    throughSeq: toInteger(row.through_seq, sessionKey),
    generation: toInteger(row.generation, sessionKey),
    text: row.text,
    tokens: toInteger(row.tokens, sessionKey),
  }))
}
