import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { allGone, isAlive, killAll, readPids, tempDir } from './__fixtures__/helpers.js'
import { hostRunId, installSignalCleanup, killOrphans } from './index.js'

const host = fileURLToPath(new URL('./__fixtures__/signal-host.mjs', import.meta.url))
const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url))

let dir: { path: string; cleanup: () => Promise<void> }
let pidFile: string
beforeAll(() => {
  // The host imports the built package, as a real host would (`pnpm test` builds first).
  if (!existsSync(dist)) throw new Error('build @lango/exec before running this test')
})
beforeEach(async () => {
  dir = await tempDir()
  pidFile = join(dir.path, 'pids')
})
afterEach(async () => {
  killAll(await readPids(pidFile))
  await dir.cleanup()
})

/** Starts the host, waits for its trees, sends `signal`, and reports how it ended. */
async function signalHost(mode: string, signal: NodeJS.Signals) {
  const child = spawn(process.execPath, [host, mode, pidFile], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk) => {
    output += chunk
  })
  child.stderr.on('data', (chunk) => {
    output += chunk
  })
  let exited = false
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = true
      resolve({ code, signal })
    }),
  )
  await waitFor(() => exited || output.includes('ready'), { intervalMs: 25 }).catch(() => false)
  const ready = !exited && output.includes('ready')
  if (!ready) {
    child.kill('SIGKILL')
    throw new Error(`host never became ready: ${output}`)
  }
  const pids = await readPids(pidFile)
  expect(pids.length).toBeGreaterThanOrEqual(10)
  child.kill(signal)
  return { ...(await ended), output, pids }
}

describe('installSignalCleanup (issue 11, finding 5)', () => {
  it.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)(
    '%s: every tree dies with the host, and the host dies of the signal',
    async (signal) => {
      const { signal: endedBy, pids } = await signalHost('install', signal)
      expect(endedBy).toBe(signal)
      expect(await allGone(pids)).toBe(true)
    },
  )

  it('a host with its own handler keeps control: its handler runs and decides how to exit', async () => {
    const { code, output, pids } = await signalHost('own-handler', 'SIGTERM')
    expect(output).toContain('host handled SIGTERM')
    expect(code).toBe(0)
    expect(await allGone(pids)).toBe(true)
  })

  it('without the call, no signal handler is installed behind the host’s back', async () => {
    const { signal: endedBy } = await signalHost('none', 'SIGTERM')
    expect(endedBy).toBe('SIGTERM')
    // (its children outlive it: that is what the call is for; afterEach kills them)
  })

  it('uninstall is idempotent and counted', () => {
    const before = process.listenerCount('SIGHUP')
    const first = installSignalCleanup()
    const second = installSignalCleanup({ signals: ['SIGHUP'] })
    expect(process.listenerCount('SIGHUP')).toBe(before + 1)
    first()
    first()
    expect(process.listenerCount('SIGHUP')).toBe(before + 1)
    second()
    expect(process.listenerCount('SIGHUP')).toBe(before)
  })
})

describe('killOrphans: what a host killed with SIGKILL left running', () => {
  it('kills every tree the dead host started, setsid and job-control escapes included', async () => {
    const { signal, output, pids } = await signalHost('none', 'SIGKILL')
    expect(signal).toBe('SIGKILL')
    // Nothing could clean up: the piped trees outlive their host (the PTY tree gets SIGHUP).
    expect((await Promise.all(pids.map(isAlive))).filter(Boolean).length).toBeGreaterThanOrEqual(6)
    const runId = /run-id ([0-9a-f]+)/.exec(output)?.[1] as string
    const killed = killOrphans(runId)
    expect(killed.length).toBeGreaterThanOrEqual(6)
    expect(await allGone(pids)).toBe(true)
  })

  // Issue 21 (6): a killed server's workflow step kept running beside the server that took the run over.
  it('with the orphan reaper, a host killed with SIGKILL leaves nothing running, unasked', async () => {
    const { signal, pids } = await signalHost('reaper', 'SIGKILL')
    expect(signal).toBe('SIGKILL')
    expect(await allGone(pids)).toBe(true)
  })

  it('refuses anything but a run id, and never its own host', () => {
    expect(() => killOrphans('')).toThrow(expect.objectContaining({ code: 'EXEC_INVALID_OPTION' }))
    expect(() => killOrphans('abc')).toThrow(expect.objectContaining({ code: 'EXEC_INVALID_OPTION' }))
    expect(hostRunId()).toMatch(/^[0-9a-f]{12}$/)
    expect(killOrphans(hostRunId())).toEqual([])
  })
})
