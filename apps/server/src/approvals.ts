import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { type ApprovalGate, type ApprovalRequest, type ToolCallOutcome, ToolError } from '@lango/tools'
import {
  type ApprovalCursor,
  type ApprovalStatus,
  type ApprovalStore,
  type DecidedStatus,
  decidedAtOf,
  effectiveStatus,
  type StoredApproval,
} from './approvals/store.js'
import { ServerError } from './errors.js'
import type { EventHub } from './events.js'
import type { Logger } from './logger.js'

export {
  APPROVAL_MIGRATION_TABLE,
  APPROVAL_STATUSES,
  type ApprovalCursor,
  type ApprovalStatus,
  ApprovalStore,
  migrateApprovals,
} from './approvals/store.js'

/** A pending or answered approval, as the API and `lango approvals list` show it. */
export interface ApprovalView {
  readonly id: string
  /** As of the read: a pending approval past `expires_at` shows `expired`. */
  readonly status: ApprovalStatus
  readonly tool: string
  /**
   * What the call will do, whole: every command it would run, never cut (a workflow's steps one
   * per line); secrets stay unresolved tokens. Show all of it before offering to approve.
   */
  readonly summary: string
  readonly safety: string
  readonly session_key: string | null
  /** The process that asked (its owner id): a call waiting for the answer waits there. */
  readonly origin: string
  readonly created_at: number
  readonly expires_at: number
  readonly answered_at: number | null
  /** Who answered: the answering process's origin or the caller's label; null for an expiry. */
  readonly decided_by: string | null
  /** The call's outcome once it ran (or was denied), for callers that were handed the id. */
  readonly outcome: ToolCallOutcome | null
}

/** Options for {@link Approvals}. */
export interface ApprovalsOptions {
  /** The shared table (`new ApprovalStore(database.db)`). */
  readonly store: ApprovalStore
  /** A pending approval expires (and denies) after this. */
  readonly timeoutMs: number
  readonly events?: EventHub
  readonly logger?: Logger
  readonly now?: () => number
  readonly idGenerator?: () => string
  /** This process's owner id, recorded on the approvals it asks for. Default `<host>:<pid>:<random>`. */
  readonly origin?: string
  /** Pending at most, across every process on the database; a request beyond it is denied at once. Default 100. */
  readonly maxPending?: number
  /** Decided approvals are deleted after this long. Default 30 days. */
  readonly retentionMs?: number
  /** Decided approvals kept at most. Default 1000. */
  readonly maxDecided?: number
  /**
   * How often a call waiting here reads its approval, to see an answer given in another process.
   * Default 300 ms; an answer given in this process wakes it at once.
   */
  readonly pollIntervalMs?: number
}

/** Options of the async methods. */
export interface ApprovalCallOptions {
  readonly signal?: AbortSignal
}

/** An approval asked for by this process and still pending: its waiter, if any, and its expiry. */
interface Watch {
  readonly id: string
  readonly tool: string
  /** The call waiting for the answer (gate requests); absent for approvals answered by a retry. */
  waiter?: (approved: boolean) => void
  timer: ReturnType<typeof setTimeout>
}

const DAY_MS = 24 * 60 * 60 * 1000
/**
 * The longest summary an approval is asked with. A summary is never cut (the approver must see
 * every command), so a longer one is not asked about: the call is denied.
 */
export const MAX_APPROVAL_SUMMARY_CHARS = 1024 * 1024
/** Approvals one list returns at most. */
const LIST_LIMIT = 200

/** Which approvals {@link Approvals.list} and {@link Approvals.page} give. */
export interface ApprovalListFilter {
  readonly status?: ApprovalStatus | 'decided'
  /** At most this many (default and most 200). */
  readonly limit?: number
  /** The page after this approval (with a status). */
  readonly before?: ApprovalCursor
}

/**
 * Tool calls waiting for a person's answer, kept in the server's database so that every process
 * on it (`lango serve`, a `lango mcp` on the same `$LANGO_HOME`, later several servers) sees them
 * and any of them can answer: over HTTP (`POST /api/approvals/<id>`), by `lango approvals`, or by
 * the dashboard.
 *
 * - {@link Approvals.gate} is the `ApprovalGate` a call is given (the HTTP API, HTTP chat): it
 *   records the request as pending and waits for the answer. An answer given in this process wakes
 *   the call at once; one given in another process is seen by reading the row every
 *   `pollIntervalMs` while anything waits here. No answer means no: at `expires_at` the approval
 *   expires and the call is denied; the caller's signal ends the wait too (`cancelled`).
 * - {@link Approvals.open} and {@link Approvals.claimAnswer} serve approvals answered by making the
 *   same call again (MCP clients without forms): nothing waits; the retry, in whichever process it
 *   arrives, uses the answer once.
 *
 * Events (`GET /api/events`) in this process: `approval.pending` `{ id, tool, summary, expires_at }`
 * when this process asks; `approval.answered` `{ id, status, tool, decided_by }` when this process
 * answers an approval, or when one it asked for is answered, expires or is cancelled. An approval
 * asked for here and answered in another process is published here when a poll or a retry sees the
 * answer (its `decided_by` names the other process); one asked for and answered elsewhere publishes
 * nothing here. At stop, calls waiting here are cancelled; approvals answered by a retry stay
 * pending for another process (or a restarted one) to use.
 */
export class Approvals {
  /** This process's owner id (the `origin` of the approvals it asks for). */
  readonly origin: string
  readonly #store: ApprovalStore
  readonly #options: Required<Omit<ApprovalsOptions, 'events' | 'logger' | 'store' | 'origin'>> & {
    readonly events: EventHub | undefined
    readonly logger: Logger | undefined
  }
  readonly #watched = new Map<string, Watch>()
  /** The approval each gate request was recorded as, until the gate is told the call's outcome. */
  readonly #asked = new WeakMap<ApprovalRequest, string>()
  #pollTimer: ReturnType<typeof setTimeout> | undefined
  /** The poll in flight, which stopping waits for (the database closes next). */
  #polling: Promise<void> | undefined
  #closed = false

  constructor(options: ApprovalsOptions) {
    this.#store = options.store
    this.origin = options.origin ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
    this.#options = Object.freeze({
      timeoutMs: options.timeoutMs,
      events: options.events,
      logger: options.logger,
      now: options.now ?? (() => Date.now()),
      idGenerator: options.idGenerator ?? randomUUID,
      maxPending: options.maxPending ?? 100,
      retentionMs: options.retentionMs ?? 30 * DAY_MS,
      maxDecided: options.maxDecided ?? 1000,
      pollIntervalMs: options.pollIntervalMs ?? 300,
    })
  }

  /**
   * A gate that records each request as pending and waits for its answer; `onPending` learns the
   * approval once it is recorded (the HTTP API answers 202 with it while the call waits). A store
   * error rejects, which `invokeTool` takes as a denial.
   */
  gate(onPending?: (approval: ApprovalView) => void): ApprovalGate {
    return {
      request: (request, { signal }) => this.#request(request, signal, onPending),
      settled: (request, outcome) => this.settled(request, outcome),
    }
  }

  /**
   * Records what became of a call a gate of these approvals asked about (`ApprovalGate.settled`)
   * on its approval: the history's "how the call ended". A request no gate here recorded is ignored.
   */
  settled(request: ApprovalRequest, outcome: ToolCallOutcome): void {
    const id = this.#asked.get(request)
    if (id === undefined) return
    this.#asked.delete(request)
    this.recordOutcome(id, outcome).catch((error: unknown) =>
      this.#options.logger?.warn('approval outcome not recorded', { approval: id, error }),
    )
  }

  /**
   * Records a pending approval nobody waits for here: it is acted on by making the same call again
   * (see {@link Approvals.claimAnswer}). Undefined when too many are pending or the summary is
   * longer than {@link MAX_APPROVAL_SUMMARY_CHARS} (the call is denied).
   * This process still publishes its answer or expiry while it runs.
   */
  async open(
    request: ApprovalRequest,
    input: { readonly callKey: string },
    options: ApprovalCallOptions = {},
  ): Promise<ApprovalView | undefined> {
    if (this.#closed) return undefined
    const created = await this.#create(request, input.callKey, options.signal)
    // Stopped meanwhile: the approval stays pending for another process, unwatched here.
    if (created !== undefined && !this.#closed) this.#watch(created)
    return created === undefined ? undefined : toView(created, this.#options.now())
  }

  /**
   * For the same call made again: the newest approval of `callKey` nobody has used. A pending one
   * is returned as it stands. A decided one (approved, denied, expired or cancelled) is claimed, so
   * its answer is used once across every process, and returned; undefined when there is none, when
   * another retry claimed it first, or when it was decided more than `timeoutMs` ago (the call is
   * asked about again).
   */
  async claimAnswer(callKey: string, options: ApprovalCallOptions = {}): Promise<ApprovalView | undefined> {
    const now = this.#options.now()
    const stored = await this.#store.newestUnclaimed(callKey, options)
    if (stored === undefined) return undefined
    const status = effectiveStatus(stored, now)
    if (status === 'pending') return toView(stored, now)
    const decidedAt = decidedAtOf(stored, now) ?? now
    if (decidedAt + this.#options.timeoutMs < now) return undefined
    if (!(await this.#store.claim(stored.id, now, options))) return undefined
    const view = toView(stored, now)
    const watch = this.#watched.get(stored.id)
    if (watch !== undefined) this.#settle(watch, status, stored.decidedBy)
    return view
  }

  /**
   * Pending first, newest first, then answered ones, newest first (at most `limit`, default and
   * most 200), from every process. `status: 'decided'` lists every answered, expired or cancelled
   * one; `before` (with a status) the page after that approval.
   */
  async list(filter: ApprovalListFilter = {}, options: ApprovalCallOptions = {}): Promise<ApprovalView[]> {
    return (await this.page(filter, options)).approvals
  }

  /**
   * One page of {@link list} (`limit`, default and most 200) and the cursor of the page after it:
   * null when this page is the last (one more row is read to know, so a full page of 200 has one).
   */
  async page(
    filter: ApprovalListFilter = {},
    options: ApprovalCallOptions = {},
  ): Promise<{ readonly approvals: ApprovalView[]; readonly next: ApprovalCursor | null }> {
    const now = this.#options.now()
    const size = Math.max(1, Math.min(filter.limit ?? LIST_LIMIT, LIST_LIMIT))
    const rows = await this.#store.list(
      {
        now,
        limit: size + 1,
        ...(filter.status === undefined ? {} : { status: filter.status }),
        ...(filter.before === undefined ? {} : { before: filter.before }),
      },
      options,
    )
    const shown = rows.slice(0, size)
    const last = shown.at(-1)
    return {
      approvals: shown.map((row) => toView(row, now)),
      next: rows.length > size && last !== undefined ? { createdAt: last.createdAt, id: last.id } : null,
    }
  }

  /** How many approvals are pending (not past expiry), from every process: `lango_approvals_pending`. */
  countPending(options: ApprovalCallOptions = {}): Promise<number> {
    return this.#store.countPending(this.#options.now(), options)
  }

  /** One approval as it stands; `SERVER_APPROVAL_NOT_FOUND` for an unknown (or pruned) id. */
  async get(id: string, options: ApprovalCallOptions = {}): Promise<ApprovalView> {
    const stored = await this.#store.get(id, options)
    if (stored === undefined)
      throw new ServerError(
        'SERVER_APPROVAL_NOT_FOUND',
        `no approval with id ${JSON.stringify(id.slice(0, 64))}`,
        { data: { id: id.slice(0, 64) } },
      )
    return toView(stored, this.#options.now())
  }

  /**
   * Answers a pending approval, whichever process asked for it; one already answered or expired is
   * returned as it stands (the caller compares its status, or uses {@link decide} to learn whether
   * this answer was the one that counted). `decidedBy` defaults to this process's origin.
   */
  async answer(
    id: string,
    approved: boolean,
    options: ApprovalCallOptions & { readonly decidedBy?: string } = {},
  ): Promise<ApprovalView> {
    return (await this.decide(id, approved, options)).approval
  }

  /**
   * Answers a pending approval as {@link answer} does, and says whether this answer decided it:
   * `decided` is false when it was already answered, expired or cancelled (the approval is then
   * returned as it stands, unchanged by this answer).
   */
  async decide(
    id: string,
    approved: boolean,
    options: ApprovalCallOptions & { readonly decidedBy?: string } = {},
  ): Promise<{ readonly approval: ApprovalView; readonly decided: boolean }> {
    const status = approved ? 'approved' : 'denied'
    const decidedBy = options.decidedBy ?? this.origin
    const won = await this.#store.decide(
      id,
      { status, now: this.#options.now(), decidedBy },
      options.signal === undefined ? {} : { signal: options.signal },
    )
    if (won) {
      const watch = this.#watched.get(id)
      if (watch !== undefined) this.#settle(watch, status, decidedBy)
      else {
        const view = await this.get(id)
        this.#publishAnswered(view.id, status, view.tool, decidedBy)
        return { approval: view, decided: true }
      }
    }
    return { approval: await this.get(id), decided: won }
  }

  /**
   * Answers a pending approval for the call that runs on the answer at once (an MCP client's form
   * answer, sent with the call made again): decides it when it is still pending and unexpired, and
   * claims it, so one answer runs one call across every process. `used` is true only when it stands
   * approved (by this answer, or by one given elsewhere first: the first answer counts) and this
   * caller is the one that claimed it; a replayed or late answer finds it claimed or expired.
   */
  async answerAndUse(
    id: string,
    approved: boolean,
    options: ApprovalCallOptions & { readonly decidedBy?: string } = {},
  ): Promise<{ readonly approval: ApprovalView; readonly used: boolean }> {
    const approval = await this.answer(id, approved, options)
    if (approval.status === 'pending') return { approval, used: false }
    const claimed = await this.#store.claim(id, this.#options.now(), options)
    // The first answer counts: one given elsewhere (the dashboard, `lango approvals`) before this
    // one decides the call, whatever this one says.
    return { approval, used: claimed && approval.status === 'approved' }
  }

  /** Records what became of the call an approval was asked for. */
  async recordOutcome(
    id: string,
    outcome: ToolCallOutcome,
    options: ApprovalCallOptions = {},
  ): Promise<void> {
    await this.#store.recordOutcome(id, outcome, options)
  }

  /**
   * Cancels the approvals that calls of these processes were waiting on (processes that died:
   * nobody would run those calls). Returns how many.
   */
  async cancelOrigins(origins: readonly string[], options: ApprovalCallOptions = {}): Promise<number> {
    return this.#store.cancelWaiting(origins, { now: this.#options.now(), decidedBy: this.origin }, options)
  }

  /**
   * Records lapsed approvals as expired, deletes decided ones older than `retentionMs` and beyond
   * the newest `maxDecided`. Runs before each new approval; returns how many were deleted.
   */
  async prune(options: ApprovalCallOptions = {}): Promise<number> {
    const now = this.#options.now()
    return this.#store.prune(
      { now, olderThan: now - this.#options.retentionMs, keepDecided: this.#options.maxDecided },
      options,
    )
  }

  /**
   * Stops (server stop): the calls waiting here are denied and their approvals cancelled; approvals
   * answered by a retry stay pending in the database. Later requests are denied. Never throws (a
   * store error is logged).
   */
  async cancelAll(): Promise<void> {
    this.#closed = true
    if (this.#pollTimer !== undefined) clearTimeout(this.#pollTimer)
    this.#pollTimer = undefined
    await this.#polling
    const watches = [...this.#watched.values()]
    await Promise.all(
      watches.map(async (watch) => {
        if (watch.waiter === undefined) {
          clearTimeout(watch.timer)
          this.#watched.delete(watch.id)
          return
        }
        await this.#end(watch, 'cancelled')
      }),
    )
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.cancelAll()
  }

  async #request(
    request: ApprovalRequest,
    signal: AbortSignal,
    onPending: ((approval: ApprovalView) => void) | undefined,
  ): Promise<boolean> {
    if (this.#closed || signal.aborted) return false
    const created = await this.#create(request, null, signal)
    if (created === undefined) return false
    this.#asked.set(request, created.id)
    if (this.#closed) {
      // Stopped while it was recorded: nobody here will wait for it.
      await this.#store.decide(created.id, {
        status: 'cancelled',
        now: this.#options.now(),
        decidedBy: this.origin,
      })
      return false
    }
    return new Promise<boolean>((resolve) => {
      // The caller's approval timeout aborts with a TimeoutError (timers may fire a little before
      // the clock reaches expires_at): that is an expiry, as is anything at or past it.
      const onAbort = (): void => {
        const timedOut = (signal.reason as { name?: unknown } | undefined)?.name === 'TimeoutError'
        const expired = timedOut || this.#options.now() >= created.expiresAt
        void this.#end(watch, expired ? 'expired' : 'cancelled')
      }
      const watch = this.#watch(created, (approved) => {
        signal.removeEventListener('abort', onAbort)
        resolve(approved)
      })
      if (signal.aborted) onAbort()
      else signal.addEventListener('abort', onAbort, { once: true })
      onPending?.(toView(created, this.#options.now()))
    })
  }

  /** Prunes, checks the pending bounds, inserts the row and publishes `approval.pending`. */
  async #create(
    request: ApprovalRequest,
    callKey: string | null,
    signal: AbortSignal | undefined,
  ): Promise<StoredApproval | undefined> {
    const options = signal === undefined ? {} : { signal }
    await this.prune(options)
    if (request.summary.length > MAX_APPROVAL_SUMMARY_CHARS) {
      this.#options.logger?.warn('approval refused: the request is too long to show whole', {
        tool: request.toolName,
        characters: request.summary.length,
        max: MAX_APPROVAL_SUMMARY_CHARS,
      })
      throw new ToolError(
        'TOOL_DENIED',
        `nobody was asked: the request is ${request.summary.length} characters, more than an approval shows whole (${MAX_APPROVAL_SUMMARY_CHARS})`,
        { data: { characters: request.summary.length, max: MAX_APPROVAL_SUMMARY_CHARS } },
      )
    }
    const now = this.#options.now()
    const { maxPending } = this.#options
    const perChannel = Math.max(1, Math.ceil(maxPending / 4))
    // A quarter per channel, not per session: session names cost an API client nothing.
    const channel = request.sessionKey === undefined ? undefined : channelOf(request.sessionKey)
    const [pending, ofChannel] = await Promise.all([
      this.#store.countPending(now, options),
      this.#store.countPending(now, {
        ...options,
        ...(channel === undefined ? { sessionKey: null } : { channel }),
      }),
    ])
    if (pending >= maxPending || ofChannel >= perChannel) {
      const whose =
        pending >= maxPending
          ? 'on this server'
          : channel === undefined
            ? 'from callers without a session'
            : `from ${channel} sessions`
      const max = pending >= maxPending ? maxPending : perChannel
      this.#options.logger?.warn('approval refused: too many pending', { max, session: request.sessionKey })
      throw new ToolError(
        'TOOL_DENIED',
        `nobody was asked: ${max} approvals are already waiting ${whose}, the most it keeps; answer or deny them (lango approvals, the dashboard, POST /api/approvals/<id>) or let them expire`,
        { data: { max, pending, ofChannel } },
      )
    }
    const id = this.#options.idGenerator()
    await this.#store.insert(
      {
        id,
        tool: request.toolName,
        summary: request.summary,
        safety: request.safety,
        sessionKey: request.sessionKey ?? null,
        origin: this.origin,
        callKey,
        createdAt: now,
        expiresAt: now + this.#options.timeoutMs,
      },
      options,
    )
    // Read back: what every other process sees (the summary whole; labels bounded).
    const created = await this.#store.get(id, options)
    if (created === undefined) return undefined
    this.#options.events?.emit('approval.pending', {
      id,
      tool: created.tool,
      summary: created.summary,
      expires_at: created.expiresAt,
    })
    return created
  }

  /** Watches an approval asked for here until it is decided; starts the poll. */
  #watch(created: StoredApproval, waiter?: (approved: boolean) => void): Watch {
    const delay = Math.max(0, created.expiresAt - this.#options.now())
    const watch: Watch = {
      id: created.id,
      tool: created.tool,
      timer: setTimeout(() => void this.#end(watch, 'expired'), delay),
      ...(waiter === undefined ? {} : { waiter }),
    }
    watch.timer.unref()
    this.#watched.set(created.id, watch)
    this.#schedulePoll()
    return watch
  }

  /**
   * Ends a watched approval with an expiry or a cancellation; when someone answered first, settles
   * with their answer instead (`invokeTool` still denies a call whose signal aborted).
   */
  async #end(watch: Watch, status: Extract<DecidedStatus, 'expired' | 'cancelled'>): Promise<void> {
    if (!this.#watched.has(watch.id)) return
    const now = this.#options.now()
    const decidedBy = status === 'expired' ? null : this.origin
    try {
      if (await this.#store.decide(watch.id, { status, now, decidedBy })) {
        this.#settle(watch, status, decidedBy)
        return
      }
      const current = await this.#store.get(watch.id)
      if (current === undefined) this.#settle(watch, 'cancelled', null)
      else if (current.status !== 'pending') this.#settle(watch, current.status, current.decidedBy)
      // Still pending (cannot be after a failed conditional update), so it is left to the poll.
      else this.#release(watch)
    } catch (error) {
      this.#options.logger?.warn('approval not recorded as ended', { id: watch.id, status, error })
      this.#release(watch)
    }
  }

  /** Stops watching without an answer (the store failed): a waiter is denied. */
  #release(watch: Watch): void {
    if (!this.#watched.delete(watch.id)) return
    clearTimeout(watch.timer)
    watch.waiter?.(false)
  }

  /** Once per approval: stops watching, publishes the answer, wakes the waiter. */
  #settle(watch: Watch, status: ApprovalStatus, decidedBy: string | null): void {
    if (!this.#watched.delete(watch.id)) return
    clearTimeout(watch.timer)
    this.#publishAnswered(watch.id, status, watch.tool, decidedBy)
    watch.waiter?.(status === 'approved')
  }

  #publishAnswered(id: string, status: ApprovalStatus, tool: string, decidedBy: string | null): void {
    this.#options.events?.emit('approval.answered', { id, status, tool, decided_by: decidedBy })
  }

  #schedulePoll(): void {
    if (this.#pollTimer !== undefined || this.#closed || this.#watched.size === 0) return
    this.#pollTimer = setTimeout(() => {
      this.#polling = this.#poll()
    }, this.#options.pollIntervalMs)
    this.#pollTimer.unref()
  }

  /** Reads every watched approval once; settles those answered elsewhere. */
  async #poll(): Promise<void> {
    try {
      const rows = await this.#store.getMany([...this.#watched.keys()])
      for (const watch of [...this.#watched.values()]) {
        const row = rows.get(watch.id)
        if (row === undefined) this.#settle(watch, 'cancelled', null)
        else if (row.status !== 'pending') this.#settle(watch, row.status, row.decidedBy)
      }
    } catch (error) {
      this.#options.logger?.warn('approval poll failed', { error })
    } finally {
      this.#pollTimer = undefined
      this.#polling = undefined
      this.#schedulePoll()
    }
  }
}

/**
 * The channel a session belongs to (`http` of `http:alice`, `telegram` of `telegram:5:6`, `mcp`):
 * the server composes every session key from its channel, and channel names are reserved.
 */
function channelOf(sessionKey: string): string {
  const colon = sessionKey.indexOf(':')
  return colon === -1 ? sessionKey : sessionKey.slice(0, colon)
}

function toView(stored: StoredApproval, now: number): ApprovalView {
  return {
    id: stored.id,
    status: effectiveStatus(stored, now),
    tool: stored.tool,
    summary: stored.summary,
    safety: stored.safety,
    session_key: stored.sessionKey,
    origin: stored.origin,
    created_at: stored.createdAt,
    expires_at: stored.expiresAt,
    answered_at: decidedAtOf(stored, now),
    decided_by: stored.decidedBy,
    outcome: stored.outcome,
  }
}
