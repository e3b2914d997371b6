import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'

/**
 * Finding the descendants of a command that left its process group, through Linux `/proc`.
 * Best effort and a no-op where `/proc` does not exist (macOS): the group kill still applies.
 *
 * A descendant is recognised by either of two marks it inherits from the command's leader:
 * - its session id (the leader's pid): kept by `set -m` job control and `setpgid`;
 * - the spawn's marker variable in its environment (`__LANGO_RUN=<id>`): kept through `setsid`,
 *   double forks and daemonising, unless the process empties or rewrites its environment.
 * A descendant was forked after the leader, so its pid is larger, unless the kernel's pid counter
 * wrapped in between; `ns_last_pid` tells us when it did, and then every pid is read.
 */

/** Name of the variable that marks every process a spawn starts. Reserved: agents cannot set it. */
export const MARKER_VARIABLE = '__LANGO_RUN'

const markerPrefix = randomBytes(6).toString('hex')
let markerCount = 0

/** This host process's marker prefix (12 hex digits): every marker of its spawns starts with it. */
export function hostMarkerPrefix(): string {
  return markerPrefix
}

/** A marker unique to this spawn in this host process (one random prefix per host, then a counter). */
export function newMarker(): string {
  markerCount += 1
  return `${markerPrefix}${markerCount.toString(36).padStart(6, '0')}`
}

/** Pids that may descend from `leader`, never our own. */
function candidatePids(leader: number): number[] {
  let names: string[]
  try {
    names = readdirSync('/proc')
  } catch {
    return []
  }
  const wrapped = lastPid() < leader
  const pids: number[] = []
  for (const name of names) {
    const pid = Number(name)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    if (wrapped || pid > leader) pids.push(pid)
  }
  return pids
}

function lastPid(): number {
  try {
    return Number(readFileSync('/proc/sys/kernel/ns_last_pid', 'utf8'))
  } catch {
    return 0 // unknown: assume a wrap, so every pid is considered
  }
}

/** `[state, session id]` from `/proc/<pid>/stat`, or undefined when the process is gone. */
function stateAndSession(pid: number): [string, number] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return [fields[0] ?? '', Number(fields[3])]
  } catch {
    return undefined
  }
}

const MARKER_PREFIX = Buffer.from(`${MARKER_VARIABLE}=`)

/** The value of `__LANGO_RUN` in a process's environment, or undefined (none, gone, another user's). */
function markerOf(pid: number): string | undefined {
  let environ: Buffer
  try {
    environ = readFileSync(`/proc/${pid}/environ`)
  } catch {
    return undefined
  }
  // Entries are NUL-separated `NAME=value`; the name must start an entry.
  for (let at = environ.indexOf(MARKER_PREFIX); at >= 0; at = environ.indexOf(MARKER_PREFIX, at + 1)) {
    if (at > 0 && environ[at - 1] !== 0) continue
    const start = at + MARKER_PREFIX.length
    const end = environ.indexOf(0, start)
    return environ.toString('latin1', start, end < 0 ? environ.length : end)
  }
  return undefined
}

/**
 * Live processes (not zombies), other than the leaders themselves, that descend from any of
 * `leaders` (pid → marker): in a leader's session, or carrying a leader's marker. One pass over
 * `/proc` serves them all. Processes of other users are not visible and never returned.
 */
export function descendants(leaders: ReadonlyMap<number, string>): number[] {
  if (leaders.size === 0) return []
  const markers = new Set(leaders.values())
  const found: number[] = []
  for (const pid of candidatePids(Math.min(...leaders.keys()))) {
    if (leaders.has(pid)) continue
    const entry = stateAndSession(pid)
    if (entry === undefined || entry[0] === 'Z' || entry[0] === 'X') continue
    if (leaders.has(entry[1])) found.push(pid)
    else {
      const marker = markerOf(pid)
      if (marker !== undefined && markers.has(marker)) found.push(pid)
    }
  }
  return found
}

/**
 * Live processes (not zombies) whose marker starts with `prefix`: what the spawns of the host that
 * owned the prefix left running. Never our own process. Empty where `/proc` does not exist.
 */
export function markedWith(prefix: string): number[] {
  const found: number[] = []
  for (const pid of candidatePids(0)) {
    const entry = stateAndSession(pid)
    if (entry === undefined || entry[0] === 'Z' || entry[0] === 'X') continue
    if (markerOf(pid)?.startsWith(prefix) === true) found.push(pid)
  }
  return found
}

/** True while a process with this pid exists (a reused pid counts too). */
export function processExists(pid: number): boolean {
  return existsSync(`/proc/${pid}`)
}
