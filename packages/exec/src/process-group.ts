/**
 * Process groups we started and have not yet seen die. If the host exits while they run, they
 * are SIGKILLed synchronously from `process.on('exit')` (SECURITY.md RES-6): children are
 * spawned in their own session, so nothing else would stop them. This set is process-wide on
 * purpose: it mirrors a process-wide resource (our children).
 */
const liveGroups = new Set<number>()
let exitHookInstalled = false

function killAllOnExit(): void {
  for (const pgid of liveGroups) signalGroup(pgid, 'SIGKILL')
}

/** Records a live process group (its leader's pid). */
export function trackGroup(pgid: number): void {
  liveGroups.add(pgid)
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.on('exit', killAllOnExit)
  }
}

/** Forgets a process group once it is known to be gone. */
export function untrackGroup(pgid: number): void {
  liveGroups.delete(pgid)
}

/** Sends `signal` to every process in the group; false when the group no longer exists. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  // ESRCH (group already gone) is the common case on the hot path; capturing a stack trace
  // for an error we discard costs more than the system call itself.
  const stackTraceLimit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    process.kill(-pgid, signal)
    return true
  } catch {
    return false
  } finally {
    Error.stackTraceLimit = stackTraceLimit
  }
}

/**
 * SIGTERM the group now and SIGKILL it after `graceMs` (unless `cancelled()` says it is gone).
 * Returns a function that cancels the pending SIGKILL.
 */
export function terminateGroup(pgid: number, graceMs: number, onKilled?: () => void): () => void {
  signalGroup(pgid, 'SIGTERM')
  const timer = setTimeout(() => {
    signalGroup(pgid, 'SIGKILL')
    onKilled?.()
  }, graceMs)
  return () => clearTimeout(timer)
}

/**
 * Watches one spawned process group for its caller: a timeout and an abort signal each stop the
 * group (SIGTERM, then SIGKILL after the grace period); `finish()` releases the watch and kills
 * whatever the leader left behind. Shared by `run`, `runWithPty` and background processes.
 */
export class GroupSupervisor {
  timedOut = false
  isCanceled = false
  readonly #pid: number | undefined
  readonly #graceMs: number
  readonly #signal: AbortSignal | undefined
  readonly #onKilled: (() => void) | undefined
  readonly #timer: NodeJS.Timeout
  readonly #onAbort = () => {
    this.isCanceled = true
    this.stop()
  }
  #cancelKill: (() => void) | undefined

  constructor(
    pid: number | undefined,
    options: {
      timeoutMs: number
      graceMs: number
      signal?: AbortSignal
      onKilled?: () => void
      /** Let the host exit while the timeout is pending (background processes). */
      unrefTimer?: boolean
    },
  ) {
    this.#pid = pid
    this.#graceMs = options.graceMs
    this.#signal = options.signal
    this.#onKilled = options.onKilled
    this.#timer = setTimeout(() => {
      this.timedOut = true
      this.stop()
    }, options.timeoutMs)
    if (options.unrefTimer === true) this.#timer.unref()
    this.#signal?.addEventListener('abort', this.#onAbort, { once: true })
    if (pid !== undefined) trackGroup(pid)
  }

  /** Stops the group now (once): SIGTERM, SIGKILL after the grace period. */
  stop(): void {
    if (this.#pid === undefined || this.#cancelKill !== undefined) return
    this.#cancelKill = terminateGroup(this.#pid, this.#graceMs, this.#onKilled)
  }

  /** The leader exited but left members behind: stop them too. */
  stopStrays(): void {
    if (this.#pid !== undefined && this.#cancelKill === undefined && signalGroup(this.#pid, 0)) this.stop()
  }

  /** Ends the watch: clears the timer and listener, and SIGKILLs anything left in the group. */
  finish(): void {
    clearTimeout(this.#timer)
    this.#cancelKill?.()
    this.#signal?.removeEventListener('abort', this.#onAbort)
    if (this.#pid !== undefined) {
      signalGroup(this.#pid, 'SIGKILL')
      untrackGroup(this.#pid)
    }
  }
}
