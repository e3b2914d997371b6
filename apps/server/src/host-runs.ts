import { existsSync } from 'node:fs'
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

/**
 * `$LANGO_HOME/run/<pid>.exec` holds the exec run id and the cron/workflow owner id of each server
 * process using this home. At start, the file of a process that no longer exists (killed with
 * SIGKILL, OOM) names commands nobody will clean up: they are killed and the file removed; its
 * owner id is returned so its cron runs are marked interrupted and its workflow runs resumed at once.
 */
export async function claimHostRun(home: string, ownerId: string, logger: Logger): Promise<HostRun> {
  const directory = join(home, 'run')
  const deadOwners: string[] = []
  await mkdir(directory, { recursive: true, mode: 0o700 })
  for (const name of await readdir(directory)) {
    const match = /^(\d+)\.exec$/.exec(name)
    if (match === null) continue
    const pid = Number(match[1])
    if (pid === process.pid || existsSync(`/proc/${pid}`)) continue
    const file = join(directory, name)
    const [runId = '', owner] = (await readFile(file, 'utf8').catch(() => '')).trim().split('\n')
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
  await writeFile(own, `${hostRunId()}\n${ownerId}\n`, { mode: 0o600 })
  return { deadOwners, release: () => rm(own, { force: true }) }
}
