import type { ChildProcess } from 'node:child_process'
import { onHostExit } from './host-cleanup.js'
import { descendants, processExists } from './proc.js'

/**
 * Process groups we started and have not yet seen die, with their spawn's marker. Children are
 * spawned as leaders of their own session and group (pgid = sid = the leader's pid), so nothing
 * else would stop them when the host goes: on host exit each gets SIGKILL, with every descendant
 * that left the group (SECURITY.md RES-6).
 */
const liveGroups = new Map<number, string>()

/** Leaders that ended, with their markers; their descendants are swept once shortly after, in one batch. */
const endedGroups = new Map<number, string>()
let sweepTimer: NodeJS.Timeout | undefined

/** Delay before ended commands are swept: one `/proc` scan serves every command that ended meanwhile. */
const SWEEP_DELAY_MS = 50

/** On host exit: SIGKILL to every live group and its escaped descendants, and the pending sweep. */
function killEverything(): void {
  for (const group of liveGroups.keys()) signalGroup(group, 'SIGKILL')
  signalDescendants(liveGroups, 'SIGKILL')
  sweepEnded()
}

function track(pgid: number, marker: string): void {
  liveGroups.set(pgid, marker)
  onHostExit(killEverything)
}

/** Sends `signal` to every process in the group; false when the group no longer exists. */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
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
 * Signals the descendants of `leaders` (pid → marker) that left their groups (see `proc.ts`). With
 * SIGKILL, repeats while new ones turn up (one may fork while we look), a few rounds at most.
 */
function signalDescendants(leaders: ReadonlyMap<number, string>, signal: NodeJS.Signals): void {
  for (let round = 0; round < 4; round++) {
    const found = descendants(leaders)
    for (const pid of found) {
      try {
        process.kill(pid, signal)
      } catch {
        // Already gone.
      }
    }
    if (found.length === 0 || signal !== 'SIGKILL') return
  }
}

function sweepEnded(): void {
  clearTimeout(sweepTimer)
  sweepTimer = undefined
  // A leader is gone and reaped; a live process with its pid leads someone else's new session.
  for (const leader of endedGroups.keys()) if (processExists(leader)) endedGroups.delete(leader)
  signalDescendants(endedGroups, 'SIGKILL')
  endedGroups.clear()
}

/** Queues an ended leader's descendants for a sweep; batched so a busy host scans `/proc` rarely. */
function sweepSoon(leader: number, marker: string): void {
  endedGroups.set(leader, marker)
  if (sweepTimer === undefined) {
    sweepTimer = setTimeout(sweepEnded, SWEEP_DELAY_MS)
    sweepTimer.unref()
  }
}

/**
 * Watches one spawned process group for its caller: a timeout and an abort signal each stop the
 * group (SIGTERM to the group and to descendants that left it, SIGKILL after the grace period,
 * then `onKilled`); `finish()` releases the watch and kills whatever the leader left behind: in its
 * group at once, elsewhere shortly after. Shared by `run`, `runWithPty` and background processes.
 */
export class GroupSupervisor {
  timedOut = false
  isCanceled = false
  readonly #pid: number | undefined
  readonly #marker: string
  readonly #graceMs: number
  readonly #signal: AbortSignal | undefined
  readonly #onKilled: (() => void) | undefined
  readonly #timer: NodeJS.Timeout
  readonly #onAbort = () => {
    this.isCanceled = true
    this.stop()
  }
  #killTimer: NodeJS.Timeout | undefined
  #stopping = false

  constructor(
    pid: number | undefined,
    options: {
      /** The spawn's marker (`__LANGO_RUN` in the child's environment). */
      marker: string
      timeoutMs: number
      graceMs: number
      signal?: AbortSignal
      /**
       * Runs once the group is dead and the grace period is over: a piped caller releases its pipes
       * there, whatever still holds their other end.
       */
      onKilled?: () => void
      /** Let the host exit while the timeout is pending (background processes). */
      unrefTimer?: boolean
    },
  ) {
    this.#pid = pid
    this.#marker = options.marker
    this.#graceMs = options.graceMs
    this.#signal = options.signal
    this.#onKilled = options.onKilled
    this.#timer = setTimeout(() => {
      this.timedOut = true
      this.stop()
    }, options.timeoutMs)
    if (options.unrefTimer === true) this.#timer.unref()
    this.#signal?.addEventListener('abort', this.#onAbort, { once: true })
    if (pid !== undefined) track(pid, options.marker)
  }

  /** Stops the group now (once): SIGTERM to it and its escaped descendants, SIGKILL after the grace period. */
  stop(): void {
    const pid = this.#pid
    if (pid === undefined || this.#stopping) return
    this.#stopping = true
    signalGroup(pid, 'SIGTERM')
    signalDescendants(new Map([[pid, this.#marker]]), 'SIGTERM')
    this.#killTimer = setTimeout(() => this.#kill(), this.#graceMs)
  }

  /**
   * The leader exited. Members it left in its group are stopped like on a timeout. If the group is
   * already empty, only something outside it can still hold the caller's pipes: it is killed and
   * `onKilled` runs after the grace period, unless `finish()` came first.
   */
  leaderExited(): void {
    if (this.#pid === undefined || this.#stopping) return
    if (signalGroup(this.#pid, 0)) {
      this.stop()
      return
    }
    this.#stopping = true
    this.#killTimer = setTimeout(() => this.#kill(), this.#graceMs)
  }

  #kill(): void {
    const pid = this.#pid as number
    signalGroup(pid, 'SIGKILL')
    signalDescendants(new Map([[pid, this.#marker]]), 'SIGKILL')
    this.#onKilled?.()
  }

  /** Ends the watch: clears timers and listener, SIGKILLs what is left in the group, sweeps the rest soon. */
  finish(): void {
    clearTimeout(this.#timer)
    clearTimeout(this.#killTimer)
    this.#signal?.removeEventListener('abort', this.#onAbort)
    if (this.#pid !== undefined) {
      signalGroup(this.#pid, 'SIGKILL')
      liveGroups.delete(this.#pid)
      sweepSoon(this.#pid, this.#marker)
    }
  }
}

/**
 * Lets go of a piped child's stdio once its group and marked descendants are dead: whatever still
 * holds the other end (a descendant that wiped its environment after `setsid`) no longer keeps the
 * command from ending, because `close` follows once our ends are destroyed.
 */
export function releasePipes(child: ChildProcess): void {
  child.stdin?.destroy()
  child.stdout?.destroy()
  child.stderr?.destroy()
}
