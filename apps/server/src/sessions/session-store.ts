import { randomUUID } from 'node:crypto'
import type { ModelMessage } from 'ai'
import { type Kysely, sql, type Transaction } from 'kysely'
import { abortable } from '../abort.js'
import { type Logger, silentLogger } from '../logger-port.js'
import { SessionCompaction } from './compaction.js'
import type { SessionContext } from './context.js'
import { SessionError } from './errors.js'
import { cutPoints, decodeMessage, encodeMessage } from './messages.js'
import { resolveLimits, type SessionLimits } from './options.js'
import type { CompactionOutcome, SessionClock, SessionEvent, SessionObserver } from './ports.js'
import { SessionRetention, type SweepResult } from './retention.js'
import {
  bumpSequence,
  checkKey,
  type MessageRow,
  toInteger,
  unobservedMessages,
  unobservedStats,
} from './rows.js'
import type { SessionDatabase } from './schema.js'

/** Largest page `list` returns (SECURITY.md SQL-4). */
const MAX_LIST_LIMIT = 500

/** Rows per multi-row INSERT, well under SQLite's and PostgreSQL's parameter limits. */
const INSERT_CHUNK = 100

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

const systemClock: SessionClock = { now: () => new Date() }

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
export class SessionStore<DB = SessionDatabase> {
  /** The limits in force (defaults filled in). */
  readonly limits: SessionLimits
  readonly #db: Kysely<SessionDatabase>
  readonly #logger: Logger
  readonly #newId: () => string
  readonly #compaction: SessionCompaction
  readonly #retention: SessionRetention
  /** Every run and sweep in flight, awaited by `stop()`. */
  readonly #inFlight = new Set<Promise<unknown>>()
  readonly #stop = new AbortController()
  readonly #context: SessionContext

  /**
   * @param db the host's handle (any tables besides the session tables).
   * @throws SessionError `SESSION_INVALID_OPTION`
   */
  constructor(db: Kysely<DB>, options: SessionStoreOptions = {}) {
    this.limits = resolveLimits(options.limits)
    // Kysely's DB parameter is invariant: narrow the host's handle once; only session tables are queried.
    this.#db = db as unknown as Kysely<SessionDatabase>
    const clock = options.clock ?? systemClock
    const logger = options.logger ?? silentLogger
    this.#logger = logger
    this.#newId = options.idGenerator ?? randomUUID
    const onEvent = options.onEvent
    const context: SessionContext = {
      db: this.#db,
      limits: this.limits,
      logger,
      stopSignal: this.#stop.signal,
      now: () => clock.now().getTime(),
      emit: (event: SessionEvent) => {
        if (onEvent === undefined) return
        try {
          onEvent(event)
        } catch (error) {
          logger.warn('session event listener threw', { type: event.type, error })
        }
      },
      track: (promise) => this.#track(promise),
    }
    this.#context = context
    this.#compaction = new SessionCompaction(context, {
      observer: options.observer,
      instanceId: this.#newId(),
    })
    this.#retention = new SessionRetention(context, {
      onDeleted: (sessionKey) => this.#compaction.forget(sessionKey),
    })
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
        dropped = await trimToBounds(transaction, sessionKey, head.observedThrough, this.limits)
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
    if (result.created) await this.#retention.evictOverflow(options?.signal)
    if (this.#compaction.overThreshold(result.stats)) this.#compaction.inBackground(sessionKey)
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
    return abortable(this.#compaction.run(sessionKey), options?.signal)
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
    this.#compaction.forget(sessionKey)
    return deleted
  }

  /**
   * Deletes sessions idle for longer than `retentionMs`, then the least recently used beyond
   * `maxSessions`. A session appended to meanwhile is kept (each delete re-checks its activity).
   */
  async sweep(options?: { readonly signal?: AbortSignal }): Promise<SweepResult> {
    return this.#retention.sweep(options)
  }

  /** Starts the periodic retention sweep (one right away). Idempotent. */
  start(): void {
    this.#retention.start()
  }

  /**
   * Stops sweeps and background compactions: aborts observer calls in flight (the sessions stay as
   * they were) and waits for every run to end. `load`, `append`, `list` and `delete` keep working;
   * `append` no longer starts compactions.
   */
  async stop(options?: { readonly signal?: AbortSignal }): Promise<void> {
    if (!this.#stop.signal.aborted) this.#stop.abort()
    this.#retention.stop()
    await abortable(Promise.allSettled([...this.#inFlight]), options?.signal)
  }

  /** `await using store = new SessionStore(…)` stops it at scope exit. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop()
  }

  #now(): number {
    return this.#context.now()
  }

  #emit(event: SessionEvent): void {
    this.#context.emit(event)
  }

  #track<T>(promise: Promise<T>): Promise<T> {
    this.#inFlight.add(promise)
    const forget = () => this.#inFlight.delete(promise)
    promise.then(forget, forget)
    return promise
  }
}

/**
 * Drops the oldest unobserved messages (whole tool-call groups) until the session is within
 * `maxMessages` and `maxSessionBytes`; returns what was dropped.
 */
async function trimToBounds(
  transaction: Transaction<SessionDatabase>,
  sessionKey: string,
  observedThrough: number,
  limits: SessionLimits,
): Promise<{ count: number; throughSeq: number } | undefined> {
  const { maxMessages, maxSessionBytes } = limits
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
