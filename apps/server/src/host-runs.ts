import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { hostRunId, killOrphans } from '@lango/exec'
import type { Logger } from './logger.js'

/**
 * `$LANGO_HOME/run/<pid>.exec` holds the exec run id of each server process using this home. At
 * start, the file of a process that no longer exists (killed with SIGKILL, OOM) names commands
 * nobody will clean up: they are killed and the file removed. Returns how to drop our own file.
 */
export async function claimHostRun(home: string, logger: Logger): Promise<() => Promise<void>> {
  const directory = join(home, 'run')
  await mkdir(directory, { recursive: true, mode: 0o700 })
  for (const name of await readdir(directory)) {
    const match = /^(\d+)\.exec$/.exec(name)
    if (match === null) continue
    const pid = Number(match[1])
    if (pid === process.pid || existsSync(`/proc/${pid}`)) continue
    const file = join(directory, name)
    const runId = (await readFile(file, 'utf8').catch(() => '')).trim()
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
  await writeFile(own, `${hostRunId()}\n`, { mode: 0o600 })
  return () => rm(own, { force: true })
}
