/**
 * What must not outlive the host: live process groups and private secret files. Each owner
 * registers one synchronous clean-up; they run when the host exits (`process.on('exit')`, where
 * only synchronous work happens) and from the signal handlers a host installs with
 * `installSignalCleanup()`. Process-wide on purpose: it mirrors process-wide resources.
 */
const cleanups: Array<() => void> = []
let exitHookInstalled = false

/** Runs every registered clean-up now, in registration order; one failing does not stop the rest. */
export function cleanUpNow(): void {
  for (const cleanup of cleanups) {
    try {
      cleanup()
    } catch {
      // Best effort while the host goes down: there is no one left to report to.
    }
  }
}

/** Registers a synchronous clean-up for host exit. Call once per resource kind, at module scope. */
export function onHostExit(cleanup: () => void): void {
  cleanups.push(cleanup)
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.on('exit', cleanUpNow)
  }
}
