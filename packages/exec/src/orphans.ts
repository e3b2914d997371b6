import { type ChildProcess, spawn } from 'node:child_process'
import { ExecError } from './errors.js'
import { hostMarkerPrefix, MARKER_VARIABLE, markedWith } from './proc.js'

/**
 * This host process's run id: every command it spawns (`run`, `runWithPty`, background processes)
 * and everything those start carry it in their environment. A host that can be killed without
 * cleaning up (`kill -9`, OOM) writes it somewhere durable at start and, on its next start, hands
 * the previous one to {@link killOrphans}.
 */
export function hostRunId(): string {
  return hostMarkerPrefix()
}

const RUN_ID = /^[0-9a-f]{12}$/

/**
 * Kills (SIGKILL, with their process groups) every live process that a host with this run id
 * spawned and that outlived it: its commands and anything they started, even ones that left their
 * group with `setsid` (unless they emptied their environment). Linux only (`/proc`); elsewhere it
 * finds nothing. Only this user's processes are visible. Returns the pids it signalled.
 * Throws `EXEC_INVALID_OPTION` for anything that is not a run id: a prefix that is too short
 * would match other hosts' commands.
 * @example
 * const previous = await readFile(runFile, 'utf8').catch(() => undefined)
 * if (previous !== undefined) killOrphans(previous.trim())
 * await writeFile(runFile, hostRunId())
 */
export function killOrphans(runId: string): number[] {
  if (typeof runId !== 'string' || !RUN_ID.test(runId))
    throw new ExecError(
      'EXEC_INVALID_OPTION',
      'runId must be a run id from hostRunId(): 12 lowercase hex digits',
    )
  if (runId === hostMarkerPrefix()) return []
  const pids = markedWith(runId)
  for (const pid of pids) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL')
      } catch {
        // Gone already, not a group leader, or not ours.
      }
    }
  }
  return pids
}

/**
 * The watcher that outlives this host: a `/bin/sh` in a session of its own holding the read end of
 * a pipe whose write end only this host has. When the host ends, however it ends (`kill -9`, OOM,
 * a crash), the pipe closes and the shell kills every live process carrying this host's marker
 * (`__LANGO_RUN=<run id>…`): each command the host started and its descendants, even those that
 * left their process group. Linux (`/proc`, `grep -z`); elsewhere it finds nothing to kill.
 */
const REAPER_SCRIPT = [
  'read -r _ || :',
  'for entry in /proc/[0-9]*/environ; do',
  '  [ -r "$entry" ] || continue',
  '  pid=${entry#/proc/}; pid=${pid%/environ}',
  '  [ "$pid" = "$$" ] && continue',
  `  if grep -qz "^${MARKER_VARIABLE}=$1" "$entry" 2>/dev/null; then`,
  '    kill -9 -- "-$pid" 2>/dev/null; kill -9 "$pid" 2>/dev/null',
  '  fi',
  'done',
].join('\n')

let reaper: ChildProcess | undefined

/**
 * Makes sure that nothing this host starts outlives it: starts (once per process) a small watcher
 * that, when this process ends by any means, kills every process exec started for it that is
 * still alive. A server killed with SIGKILL then leaves no command running on its machine (a
 * workflow step it was running is not also running beside the server that takes the run over).
 * The watcher holds no handle on the event loop. Idempotent; Linux only (a no-op elsewhere).
 * @example
 * ensureOrphanReaper() // at start, before running commands
 */
export function ensureOrphanReaper(): void {
  if (reaper !== undefined || process.platform !== 'linux') return
  const child = spawn('/bin/sh', ['-c', REAPER_SCRIPT, 'lango-reaper', hostMarkerPrefix()], {
    // A session of its own: a terminal's Ctrl-C to this host's group does not reach it.
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  })
  child.on('error', () => {})
  child.stdin?.on('error', () => {})
  child.unref()
  ;(child.stdin as unknown as { unref?: () => void } | null)?.unref?.()
  reaper = child
}
