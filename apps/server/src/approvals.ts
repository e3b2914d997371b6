import { randomUUID } from 'node:crypto'
import type { ApprovalGate, ApprovalRequest, ToolCallOutcome } from '@lango/tools'
import { ServerError } from './errors.js'
import type { EventHub } from './events.js'

/** Where an approval stands. `expired` and `cancelled` deny, as no answer does. */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'cancelled'

/** A pending or answered approval, as the API and `lango approvals list` show it. */
export interface ApprovalView {
  readonly id: string
  readonly status: ApprovalStatus
  readonly tool: string
  /** One human line; secrets stay unresolved tokens. */
  readonly summary: string
  readonly safety: string
  readonly session_key: string | null
  readonly created_at: number
  readonly expires_at: number
  readonly answered_at: number | null
  /** The call's outcome once it ran (or was denied), for callers that were handed the id. */
  readonly outcome: ToolCallOutcome | null
}

interface Entry {
  view: ApprovalView
  resolve?: (approved: boolean) => void
}

/** Options for {@link Approvals}. */
export interface ApprovalsOptions {
  /** A pending approval expires (and denies) after this. */
  readonly timeoutMs: number
  readonly events?: EventHub
  readonly now?: () => number
  readonly idGenerator?: () => string
  /** Pending at most; a request beyond it is denied at once. Default 100. */
  readonly maxPending?: number
  /** Answered approvals kept for lookup. Default 200. */
  readonly maxAnswered?: number
}

/**
 * Approvals answered elsewhere: over HTTP (`POST /api/approvals/<id>`), by `lango approvals`, or by
 * the dashboard. {@link Approvals.gate} is the `ApprovalGate` a call is given; it records the request
 * as pending and waits for the answer (the caller's timeout and signal end the wait: no answer
 * means no). Kept in memory: a restart denies whatever was pending.
 */
export class Approvals {
  readonly #entries = new Map<string, Entry>()
  readonly #options: Required<Omit<ApprovalsOptions, 'events'>> & { events: EventHub | undefined }

  constructor(options: ApprovalsOptions) {
    this.#options = {
      timeoutMs: options.timeoutMs,
      events: options.events,
      now: options.now ?? Date.now,
      idGenerator: options.idGenerator ?? randomUUID,
      maxPending: options.maxPending ?? 100,
      maxAnswered: options.maxAnswered ?? 200,
    }
  }

  /**
   * A gate that records each request as pending; `onPending` learns the id at once (the HTTP API
   * answers 202 with it while the call waits).
   */
  gate(onPending?: (approval: ApprovalView) => void): ApprovalGate {
    return { request: (request, { signal }) => this.#request(request, signal, onPending) }
  }

  /** Pending first, newest first. */
  list(options: { readonly status?: ApprovalStatus } = {}): ApprovalView[] {
    const views = [...this.#entries.values()].map((entry) => entry.view)
    return views
      .filter((view) => options.status === undefined || view.status === options.status)
      .sort(
        (a, b) =>
          Number(b.status === 'pending') - Number(a.status === 'pending') || b.created_at - a.created_at,
      )
  }

  get(id: string): ApprovalView {
    const entry = this.#entries.get(id)
    if (entry === undefined)
      throw new ServerError(
        'SERVER_APPROVAL_NOT_FOUND',
        `no approval with id ${JSON.stringify(id.slice(0, 64))}`,
        {
          data: { id: id.slice(0, 64) },
        },
      )
    return entry.view
  }

  /** Answers a pending approval; an answered one is returned as it stands. */
  answer(id: string, approved: boolean): ApprovalView {
    const entry = this.#entries.get(id)
    if (entry === undefined || entry.resolve === undefined) return this.get(id)
    entry.resolve(approved)
    return entry.view
  }

  /** Records what became of the call an approval was asked for. */
  recordOutcome(id: string, outcome: ToolCallOutcome): void {
    const entry = this.#entries.get(id)
    if (entry !== undefined) entry.view = { ...entry.view, outcome }
  }

  /** Denies everything pending (server stop). */
  cancelAll(): void {
    for (const entry of this.#entries.values()) entry.resolve?.(false)
  }

  #request(
    request: ApprovalRequest,
    signal: AbortSignal,
    onPending: ((approval: ApprovalView) => void) | undefined,
  ): Promise<boolean> {
    const pending = [...this.#entries.values()].filter((entry) => entry.resolve !== undefined).length
    if (pending >= this.#options.maxPending) return Promise.resolve(false)
    const now = this.#options.now()
    const id = this.#options.idGenerator()
    const entry: Entry = {
      view: {
        id,
        status: 'pending',
        tool: request.toolName,
        summary: request.summary,
        safety: request.safety,
        session_key: request.sessionKey ?? null,
        created_at: now,
        expires_at: now + this.#options.timeoutMs,
        answered_at: null,
        outcome: null,
      },
    }
    this.#entries.set(id, entry)
    return new Promise<boolean>((resolve) => {
      const settle = (status: ApprovalStatus): void => {
        if (entry.resolve === undefined) return
        entry.resolve = undefined
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        entry.view = { ...entry.view, status, answered_at: this.#options.now() }
        this.#options.events?.publish('approval.answered', { id, status, tool: entry.view.tool })
        this.#trim()
        resolve(status === 'approved')
      }
      // The caller's approval timeout aborts with a TimeoutError (timers may fire a little before
      // the clock reaches expires_at): that is an expiry, as is anything at or past it.
      const onAbort = (): void => {
        const timedOut = (signal.reason as { name?: unknown } | undefined)?.name === 'TimeoutError'
        settle(timedOut || this.#options.now() >= entry.view.expires_at ? 'expired' : 'cancelled')
      }
      const timer = setTimeout(() => settle('expired'), this.#options.timeoutMs)
      timer.unref()
      entry.resolve = (approved) => settle(approved ? 'approved' : 'denied')
      signal.addEventListener('abort', onAbort, { once: true })
      this.#options.events?.publish('approval.pending', {
        id,
        tool: entry.view.tool,
        summary: entry.view.summary,
        expires_at: entry.view.expires_at,
      })
      onPending?.(entry.view)
    })
  }

  /** Drops the oldest answered approvals beyond the bound. */
  #trim(): void {
    const answered = [...this.#entries.values()].filter((entry) => entry.resolve === undefined)
    for (const entry of answered.slice(0, Math.max(0, answered.length - this.#options.maxAnswered)))
      this.#entries.delete(entry.view.id)
  }
}
