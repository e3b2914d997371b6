import { abortable, timeoutSignal } from '../abort.js'
import { capObservations, commitObservation, commitReflection } from './compaction-commits.js'
import { claimLease, releaseLease, renewLease } from './compaction-lease.js'
import type { SessionContext } from './context.js'
import { SessionError } from './errors.js'
import { chooseCut, estimateTokens, utf8Bytes } from './messages.js'
import type { CompactionOutcome, CompactionSkipReason, SessionObserver } from './ports.js'
import { type MessageRow, readEntries, readHead, unobservedMessages } from './rows.js'

/** Observer calls in one compaction run (a long observer outage leaves a backlog). */
const MAX_BATCHES_PER_RUN = 8
/** Sessions whose failure back-off is remembered. */
const MAX_BACKOFF_ENTRIES = 1024

type Progress = { observedMessages: number; observationsAdded: number; reflected: number }

/** Options of {@link SessionCompaction}. */
interface SessionCompactionOptions {
  /** Condenses old history; without one, every run is skipped (`no-observer`). */
  readonly observer: SessionObserver | undefined
  /** The lease owner id of this instance. */
  readonly instanceId: string
}

/**
 * Observational memory compaction of a session store: observe the oldest messages in batches,
 * commit each observation with the sequence it covers, delete what it covers, then reflect when
 * observations pass their threshold. One run per session at a time in this process (later callers
 * join it) and, through the lease, across instances. A failing observer leaves the session as it
 * was and is retried after a back-off.
 */
export class SessionCompaction {
  readonly #context: SessionContext
  readonly #observer: SessionObserver | undefined
  readonly #instanceId: string
  /** The per-session in-process lock: one compaction run per key; later callers join it. */
  readonly #running = new Map<string, Promise<CompactionOutcome>>()
  readonly #backoff = new Map<string, { readonly failures: number; readonly retryAt: number }>()

  constructor(context: SessionContext, options: SessionCompactionOptions) {
    this.#context = context
    this.#observer = options.observer
    this.#instanceId = options.instanceId
  }

  /** Whether unobserved history this large should be observed. */
  overThreshold(stats: { count: number; tokens: number }): boolean {
    const { observeAfterMessages, observeAfterTokens } = this.#context.limits
    return stats.count > observeAfterMessages || stats.tokens > observeAfterTokens
  }

  /** Forgets a session's failure back-off (the session was deleted). */
  forget(sessionKey: string): void {
    this.#backoff.delete(sessionKey)
  }

  /** Starts a run unless one is in flight, the store stopped, or the session is backing off; never waits. */
  inBackground(sessionKey: string): void {
    if (this.#observer === undefined || this.#context.stopSignal.aborted || this.#running.has(sessionKey))
      return
    const backoff = this.#backoff.get(sessionKey)
    if (backoff !== undefined && backoff.retryAt > this.#context.now()) return
    this.run(sessionKey).catch((error: unknown) => {
      this.#context.logger.error('session compaction failed', { sessionKey, error })
    })
  }

  /** Starts a run for the session now (the back-off does not apply), or joins the one in flight. */
  run(sessionKey: string): Promise<CompactionOutcome> {
    const running = this.#running.get(sessionKey)
    if (running !== undefined) return running
    // Events go out once the run has released its lease and lock, so a listener that appends at
    // once starts the next compaction instead of finding this one still running.
    const run = this.#context.track(
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
      const retryAt = this.#backoff.get(sessionKey)?.retryAt ?? this.#context.now()
      this.#context.emit({ type: 'compaction:error', sessionKey, error: outcome.error, retryAt })
    }
    if (outcome.status !== 'failed') this.#context.emit({ type: 'compaction:end', sessionKey, outcome })
  }

  /** One compaction run; the caller holds the in-process lock for `sessionKey`. */
  async #run(sessionKey: string): Promise<CompactionOutcome> {
    const context = this.#context
    const progress: Progress = { observedMessages: 0, observationsAdded: 0, reflected: 0 }
    const skipped = (reason: CompactionSkipReason): CompactionOutcome => ({
      status: progress.observedMessages + progress.reflected > 0 ? 'compacted' : 'skipped',
      reason,
      ...progress,
    })
    if (this.#observer === undefined) return skipped('no-observer')
    if (context.stopSignal.aborted) return skipped('stopped')
    const observer = this.#observer
    const head = await readHead(context.db, sessionKey)
    if (head === undefined) return skipped('no-session')
    // Messages a crashed run observed but did not delete: load already skips them.
    await context.db
      .deleteFrom('session_messages')
      .where('session_key', '=', sessionKey)
      .where('seq', '<=', head.observedThrough)
      .execute()
    let leased = false
    const lease = async (): Promise<boolean> => {
      leased = leased
        ? await renewLease(context, this.#instanceId, sessionKey)
        : await claimLease(context, this.#instanceId, sessionKey, head.id)
      return leased
    }
    try {
      let observedThrough = head.observedThrough
      for (let batch = 0; batch < MAX_BATCHES_PER_RUN; batch += 1) {
        const history = await unobservedMessages(context.db, sessionKey, observedThrough)
        const tokens = history.reduce((total, row) => total + estimateTokens(row.bytes), 0)
        if (!this.overThreshold({ count: history.length, tokens })) break
        const taken = this.#chooseBatch(history)
        if (taken === undefined) break
        const claiming = !leased
        if (!(await lease())) return skipped(claiming ? 'busy' : 'conflict')
        if (claiming) {
          // Another instance may have compacted between our first read and the claim: start from its result.
          const fresh = await readHead(context.db, sessionKey)
          if (fresh === undefined || fresh.id !== head.id) return skipped('conflict')
          if (fresh.observedThrough !== observedThrough) {
            observedThrough = fresh.observedThrough
            continue
          }
        }
        const entries = await readEntries(context.db, sessionKey)
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
        const committed = await commitObservation(context, sessionKey, head.id, observedThrough, {
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
        context.emit({ type: 'observation:commit', sessionKey, fromSeq, throughSeq, messages: taken.length })
        await context.db
          .deleteFrom('session_messages')
          .where('session_key', '=', sessionKey)
          .where('seq', '<=', throughSeq)
          .execute()
      }
      const reflection = await this.#reflect(sessionKey, head.id, lease, progress)
      if (typeof reflection === 'object') return reflection
      await capObservations(context, sessionKey)
      if (typeof reflection === 'string') return skipped(reflection)
      if (progress.observedMessages + progress.reflected === 0) return skipped('below-threshold')
      return { status: 'compacted', ...progress }
    } finally {
      if (leased) await releaseLease(context, this.#instanceId, sessionKey)
    }
  }

  /**
   * The oldest messages to observe: enough that at most `keepRecentMessages` / `keepRecentTokens`
   * remain, at most `maxObserveTokens` per call, moved back to the start of a turn when one is near
   * ({@link chooseCut}), and never between a tool call and its result.
   */
  #chooseBatch(history: readonly MessageRow[]): readonly MessageRow[] | undefined {
    const { keepRecentMessages, keepRecentTokens, maxObserveTokens } = this.#context.limits
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
    progress: Progress,
  ): Promise<CompactionOutcome | 'busy' | 'conflict' | undefined> {
    const context = this.#context
    const { reflectAfterObservations, reflectAfterTokens, keepRecentObservations } = context.limits
    const entries = await readEntries(context.db, sessionKey)
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
      await capObservations(context, sessionKey)
      return outcome
    }
    const generation = Math.max(...taken.map((entry) => entry.generation)) + 1
    const committed = await commitReflection(context, sessionKey, sessionId, taken, {
      fromSeq: Math.min(...taken.map((entry) => entry.fromSeq)),
      throughSeq: Math.max(...taken.map((entry) => entry.throughSeq)),
      generation,
      text,
      tokens: estimateTokens(utf8Bytes(text)),
    })
    if (!committed) return 'conflict'
    progress.reflected += taken.length
    context.emit({ type: 'reflection:commit', sessionKey, condensed: taken.length, generation })
    return undefined
  }

  /** The signal of one observer call: store stop or `observeTimeoutMs` (its one-shot timer is unref'd). */
  #callSignal(): AbortSignal {
    return AbortSignal.any([
      this.#context.stopSignal,
      timeoutSignal(this.#context.limits.observeTimeoutMs).signal,
    ])
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
    const max = this.#context.limits.maxObservationBytes
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
  #failed(sessionKey: string, thrown: unknown, progress: Progress): CompactionOutcome {
    const context = this.#context
    if (context.stopSignal.aborted) {
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
    const { retryBaseMs, retryMaxMs } = context.limits
    const delay = Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(failures - 1, 30))
    const retryAt = context.now() + delay
    this.#backoff.delete(sessionKey)
    this.#backoff.set(sessionKey, { failures, retryAt })
    if (this.#backoff.size > MAX_BACKOFF_ENTRIES) {
      const oldest = this.#backoff.keys().next().value
      if (oldest !== undefined) this.#backoff.delete(oldest)
    }
    context.logger.warn('session observer failed; will retry', { sessionKey, failures, retryAt, error })
    return {
      status: progress.observedMessages + progress.reflected > 0 ? 'compacted' : 'failed',
      ...progress,
      error,
    }
  }
}
