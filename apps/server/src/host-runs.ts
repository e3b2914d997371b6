import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { hostRunId, killOrphans } from '@lango/exec'
import type { Logger } from './logger.js'

/** What a server learns at start about the servers that died on its home. */
export interface HostRun {
  /** Scheduler/engine owner ids of dead servers: their runs need not wait for a lease to expire. */
  readonly deadOwners: readonly string[]
  /** Removes this server's run file (on stop). */
  release(): Promise<void>
}

/** Where a process's start time is read: Linux's `/proc`, or `ps` (macOS, BSDs; Linux too). */
export type StartTimeSource = 'proc' | 'ps'

/** Options of {@link claimHostRun}. */
export interface ClaimHostRunOptions {
  /** Default `proc` where `/proc/self/stat` exists, else `ps`. */
  readonly startTimes?: StartTimeSource
}

/**
 * `$LANGO_HOME/run/<pid>.exec` holds the exec run id, the cron/workflow owner id and the start time
 * of each server process using this home. At start, the file of a process that no longer exists
 * (killed with SIGKILL, OOM) names commands nobody will clean up: they are killed and the file
 * removed; its owner id is returned so its cron runs are marked interrupted and its workflow runs
 * resumed at once. A process is alive when `kill(pid, 0)` finds it and its start time is the one
 * recorded (so a pid the system reused for another process is not taken for the server), on Linux
 * and macOS alike (issue 21: a `/proc` check took every live server on macOS for dead).
 */
export async function claimHostRun(
  home: string,
  ownerId: string,
  logger: Logger,
  options: ClaimHostRunOptions = {},
): Promise<HostRun> {
  const source = options.startTimes ?? (existsSync('/proc/self/stat') ? 'proc' : 'ps')
  const directory = join(home, 'run')
  const deadOwners: string[] = []
  await mkdir(directory, { recursive: true, mode: 0o700 })
  for (const name of await readdir(directory)) {
    const match = /^(\d+)\.exec$/.exec(name)
    if (match === null) continue
    const pid = Number(match[1])
    if (pid === process.pid) continue
    const file = join(directory, name)
    const [runId = '', owner, started] = (await readFile(file, 'utf8').catch(() => '')).trim().split('\n')
    if (isAlive(pid, started, source)) continue
    if (owner !== undefined && owner !== '') deadOwners.push(owner)
    try {
      const killed = killOrphans(runId)
      if (killed.length > 0)
        logger.warn('killed commands left running by a server that died', { pid, killed: killed.length })
    } catch (error) {
      logger.warn('unreadable run file of a dead server', { file, error })
    }
    await rm(file, { force: true })
  }
  const own = join(directory, `${process.pid}.exec`)
  const started = startTimeOf(process.pid, source) ?? ''
  await writeFile(own, `${hostRunId()}\n${ownerId}\n${started}\n`, { mode: 0o600 })
  return { deadOwners, release: () => rm(own, { force: true }) }
}

/**
 * Whether `pid` is still the process that wrote its run file. A pid of another user is a reused
 * one (servers sharing a home run as its owner); a start time that cannot be read now proves
 * nothing, and the process is taken for alive. Files written before start times were recorded
 * have none: existence decides.
 */
function isAlive(pid: number, recorded: string | undefined, source: StartTimeSource): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    // ESRCH: gone. EPERM: another user's, so not the server that wrote the file.
    return false
  }
  if (recorded === undefined || recorded === '' || !recorded.startsWith(`${source}:`)) return true
  const now = startTimeOf(pid, source)
  return now === undefined || now === recorded
}

/**
 * When `pid` started, as an opaque text (`proc:<ticks since boot>` or `ps:<date>`): the same pid
 * with the same text is the same process. Undefined when it cannot be read.
 */
export function startTimeOf(pid: number, source: StartTimeSource): string | undefined {
  if (source === 'proc') {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      // The command name may hold spaces and parentheses: fields start after the last ')'.
      const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
      return ticks === undefined ? undefined : `proc:${ticks}`
    } catch {
      return undefined
    }
  }
  const answer = spawnSync('ps', ['-o', 'lstart=', '-p', String(pid)], {
    encoding: 'utf8',
    timeout: 5_000,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', TZ: 'UTC' },
  })
  const text = answer.status === 0 ? answer.stdout.trim() : ''
  return text === '' ? undefined : `ps:${text}`
}
