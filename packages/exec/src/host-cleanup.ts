import { constants } from 'node:os'
import { ExecError } from './errors.js'
import { refuseUnknownKeys } from './option-keys.js'

/**
 * What must not outlive the host: live process groups and private secret files. Each owner
 * registers one synchronous clean-up; they run when the host exits (`process.on('exit')`, where
 * only synchronous work happens) and from the signal handlers a host installs with
 * `installSignalCleanup()`. Process-wide on purpose: it mirrors process-wide resources.
 */
const cleanups = new Set<() => void>()

/** Runs every registered clean-up now, in registration order; one failing does not stop the rest. */
function cleanUpNow(): void {
  for (const cleanup of cleanups) {
    try {
      cleanup()
    } catch {
      // Best effort while the host goes down: there is no one left to report to.
    }
  }
}

/**
 * Registers a synchronous clean-up for host exit. Idempotent: owners call it with the same
 * module-level function whenever they take a resource, so no hook exists until there is work.
 */
export function onHostExit(cleanup: () => void): void {
  if (cleanups.has(cleanup)) return
  if (cleanups.size === 0) process.on('exit', cleanUpNow)
  cleanups.add(cleanup)
}

/** Options for {@link installSignalCleanup}. */
export interface SignalCleanupOptions {
  /** Signals to handle (default SIGTERM, SIGINT and SIGHUP). */
  readonly signals?: readonly NodeJS.Signals[]
}

const DEFAULT_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP']

const checkCleanupKeys = refuseUnknownKeys('installSignalCleanup options', ['signals'])

/** `signals` is a list of signal names this platform knows (`'SIGTERM'`); a typo would never fire. */
function checkSignals(signals: unknown): void {
  if (signals === undefined) return
  if (
    Array.isArray(signals) &&
    signals.every((name) => typeof name === 'string' && Object.hasOwn(constants.signals, name))
  )
    return
  throw new ExecError('EXEC_INVALID_OPTION', 'signals must be a list of signal names such as "SIGTERM"')
}

/** One listener per signal however often hosts install, with a count of the installs that want it. */
const signalHandlers = new Map<NodeJS.Signals, { listener: () => void; installs: number }>()

function removeSignalHandler(signal: NodeJS.Signals): void {
  const entry = signalHandlers.get(signal)
  if (entry === undefined) return
  signalHandlers.delete(signal)
  process.removeListener(signal, entry.listener)
}

/**
 * Kills every process exec started (whole groups and the descendants that left them) and removes
 * every private secret file when the host receives one of `signals`. The one call a host makes
 * for this: the library installs no signal handler on its own.
 *
 * - Host without its own handler for the signal: after the clean-up, the signal's default action
 *   is restored and the signal raised again, so the host dies of it exactly as it would have
 *   (its parent sees "killed by SIGTERM").
 * - Host with its own handler(s): the clean-up runs, then the host's handlers run as usual and
 *   decide whether and when to exit; nothing exits behind their back. (A host that wants to stop
 *   background processes gracefully in its handler calls `registry.stop()` there instead and does
 *   not need this: on `process.exit` every live group is killed anyway.)
 *
 * Returns a function that uninstalls (idempotent); installs are counted, so two parts of a host
 * may each install and uninstall.
 * @example
 * const uninstall = installSignalCleanup()
 * // … on shutdown of this component:
 * uninstall()
 */
export function installSignalCleanup(options: SignalCleanupOptions = {}): () => void {
  checkCleanupKeys(options)
  checkSignals(options.signals)
  const signals = [...new Set(options.signals ?? DEFAULT_SIGNALS)]
  for (const signal of signals) {
    const entry = signalHandlers.get(signal)
    if (entry !== undefined) {
      entry.installs += 1
      continue
    }
    const listener = () => {
      cleanUpNow()
      // Ours is the only listener: the host expected the default action. Restore it and re-raise.
      if (process.listenerCount(signal) === 1) {
        removeSignalHandler(signal)
        process.kill(process.pid, signal)
      }
    }
    signalHandlers.set(signal, { listener, installs: 1 })
    process.on(signal, listener)
  }
  let installed = true
  return () => {
    if (!installed) return
    installed = false
    for (const signal of signals) {
      const entry = signalHandlers.get(signal)
      if (entry === undefined) continue
      entry.installs -= 1
      if (entry.installs === 0) removeSignalHandler(signal)
    }
  }
}
