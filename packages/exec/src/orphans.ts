import { ExecError } from './errors.js'
import { hostMarkerPrefix, markedWith } from './proc.js'

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
