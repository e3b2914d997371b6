/**
 * Which servers on a home are dead (issue 21 (7)): a `/proc` check took every live server on macOS
 * for dead, so a second process on the same home interrupted its runs, expired its leases and
 * cancelled its approvals. The check is `kill(pid, 0)` plus the start time recorded in the run
 * file, read from `/proc` or, as on macOS, from `ps`; both are exercised here.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { claimHostRun, type StartTimeSource, startTimeOf } from '../src/host-runs.js'
import { silentLogger } from '../src/logger.js'

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
})

async function home(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), 'lango-host-runs-'))
  await mkdir(join(directory, 'run'))
  cleanups.push(() => rm(directory, { recursive: true, force: true }))
  return directory
}

/** A live process standing in for another server on the home. */
function liveProcess(): ChildProcess {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' })
  cleanups.push(async () => {
    child.kill('SIGKILL')
  })
  return child
}

/** A pid that surely belonged to a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn('true', { stdio: 'ignore' })
  await new Promise((resolve) => child.once('exit', resolve))
  return child.pid as number
}

const RUN_ID = 'abcdefabcdef'

describe.each<StartTimeSource>(['proc', 'ps'])('claimHostRun, start times from %s', (source) => {
  it('a live server is not taken for dead, and keeps its run file', async () => {
    const directory = await home()
    const other = liveProcess()
    const pid = other.pid as number
    const started = startTimeOf(pid, source)
    expect(started).toMatch(new RegExp(`^${source}:.+`))
    await writeFile(join(directory, 'run', `${pid}.exec`), `${RUN_ID}\nother-owner\n${started}\n`)
    const run = await claimHostRun(directory, 'me', silentLogger, { startTimes: source })
    cleanups.push(() => run.release())
    expect(run.deadOwners).toEqual([])
    expect(await readdir(join(directory, 'run'))).toContain(`${pid}.exec`)
  })

  it('a server that is gone is dead: its owner is returned and its file removed', async () => {
    const directory = await home()
    const pid = await deadPid()
    await writeFile(join(directory, 'run', `${pid}.exec`), `${RUN_ID}\ngone-owner\n${source}:whenever\n`)
    const run = await claimHostRun(directory, 'me', silentLogger, { startTimes: source })
    cleanups.push(() => run.release())
    expect(run.deadOwners).toEqual(['gone-owner'])
    expect(await readdir(join(directory, 'run'))).toEqual([`${process.pid}.exec`])
  })

  it('a pid reused by another process is dead: its start time differs from the recorded one', async () => {
    const directory = await home()
    const other = liveProcess()
    await writeFile(
      join(directory, 'run', `${other.pid}.exec`),
      `${RUN_ID}\nreused-owner\n${source}:long before that process\n`,
    )
    const run = await claimHostRun(directory, 'me', silentLogger, { startTimes: source })
    cleanups.push(() => run.release())
    expect(run.deadOwners).toEqual(['reused-owner'])
  })

  it("records this process's start time, which the next claim on the home recognises", async () => {
    const directory = await home()
    const run = await claimHostRun(directory, 'me', silentLogger, { startTimes: source })
    cleanups.push(() => run.release())
    const [runId, owner, started] = (
      await readFile(join(directory, 'run', `${process.pid}.exec`), 'utf8')
    ).split('\n')
    expect(runId).toMatch(/^[0-9a-f]{12}$/)
    expect(owner).toBe('me')
    expect(started).toBe(startTimeOf(process.pid, source))
  })
})
