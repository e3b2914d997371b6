import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { allGone, isAlive, killAll, readPids, tempDir } from './__fixtures__/helpers.js'
import { ProcessRegistry, run } from './index.js'
import { nodePtyDriver, runWithPty } from './pty/index.js'

let dir: { path: string; cleanup: () => Promise<void> }
let pidFile: string
beforeEach(async () => {
  dir = await tempDir()
  pidFile = join(dir.path, 'pids')
})
afterEach(async () => {
  killAll([...(await readPids(pidFile)), ...(await readPids(join(dir.path, 'other')))])
  await dir.cleanup()
})

/**
 * Fails instead of hanging the suite when `promise` does not settle in time. The deadlines are
 * generous (a loaded machine) and far below what a hang would take (the escapees sleep for an hour,
 * the run timeouts are ten minutes).
 */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms)
    }),
  ])
}

const hasPython = (() => {
  try {
    execFileSync('python3', ['-c', 'pass'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()

describe('a descendant that leaves the group but keeps the output open (issue 11, finding 2)', () => {
  // The escapee writes its pid after setsid(); the shell waits for it, so the escape is complete
  // (not racing the group kill) by the time the shell exits.
  const escapee = (seconds: number) =>
    `setsid sh -c 'echo $$ >> ${pidFile}; exec sleep ${seconds}' & until [ -s ${pidFile} ]; do sleep 0.01; done`
  const escaping = () => `${escapee(3099)}; echo done`

  it('background kill() settles as killed, frees the slot and kills the holder', async () => {
    await using registry = new ProcessRegistry({ maxRunning: 1, killGraceMs: 300 })
    const process = await registry.start(escaping())
    await waitFor(() => process.read(0).output === 'done\n', { intervalMs: 25 })
    const snapshot = await within(process.kill(), 20_000, 'kill()')
    expect(snapshot.status).toBe('killed')
    expect(process.read(0).output).toBe('done\n')
    expect(await allGone(await readPids(pidFile))).toBe(true)
    const next = await registry.start('echo next')
    expect((await within(next.wait(), 20_000, 'next')).status).toBe('exited')
  })

  it('background lifetime timeout settles as timed_out', async () => {
    await using registry = new ProcessRegistry({ killGraceMs: 300 })
    const process = await registry.start(`${escaping()}; sleep 30`, { timeoutMs: 300 })
    expect((await within(process.wait(), 20_000, 'wait()')).status).toBe('timed_out')
    expect(await allGone(await readPids(pidFile))).toBe(true)
  })

  it('registry stop() returns, and every slot is released', async () => {
    const registry = new ProcessRegistry({ maxRunning: 2, killGraceMs: 300 })
    const first = await registry.start(escaping())
    await waitFor(async () => (await readPids(pidFile)).length === 1, { intervalMs: 25 })
    const other = join(dir.path, 'other')
    await registry.start(
      `setsid sh -c 'echo $$ > ${other}; exec sleep 3098' & until [ -s ${other} ]; do sleep 0.01; done; sleep 30`,
    )
    await waitFor(async () => (await readPids(other)).length === 1, { intervalMs: 25 })
    expect(first.status).toBe('running')
    await within(registry.stop(), 20_000, 'stop()')
    expect(registry.list().every((snapshot) => snapshot.status !== 'running')).toBe(true)
    expect(await allGone([...(await readPids(pidFile)), ...(await readPids(other))])).toBe(true)
  })

  it('a background process whose shell exited ends by itself soon after', async () => {
    await using registry = new ProcessRegistry({ killGraceMs: 300 })
    const process = await registry.start(escaping())
    const snapshot = await within(process.wait(), 20_000, 'wait()')
    expect(snapshot).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(await allGone(await readPids(pidFile))).toBe(true)
  })

  it('run() returns when the shell exits instead of waiting for its timeout', async () => {
    const result = await within(run(escaping(), { killGraceMs: 300, timeoutMs: 600_000 }), 20_000, 'run()')
    expect(result).toMatchObject({ stdout: 'done\n', exitCode: 0, timedOut: false, ok: true })
    expect(await allGone(await readPids(pidFile))).toBe(true)
  })

  it('one that also empties its environment is out of reach (cgroups), yet never keeps run() waiting', async () => {
    const command = `env -i setsid sh -c 'echo $$ >> ${pidFile}; exec sleep 3097' & until [ -s ${pidFile} ]; do sleep 0.01; done; echo done`
    const result = await within(run(command, { killGraceMs: 300, timeoutMs: 600_000 }), 20_000, 'run()')
    expect(result).toMatchObject({ stdout: 'done\n', timedOut: false })
    // The documented limit: neither its session nor its environment leads back to us.
    const [pid] = await readPids(pidFile)
    expect(await isAlive(pid as number)).toBe(true)
  })

  it('runWithPty() and PTY background sessions return too', async () => {
    const result = await within(
      runWithPty(escaping(), { killGraceMs: 300, timeoutMs: 600_000 }),
      20_000,
      'pty',
    )
    expect(result).toMatchObject({ exitCode: 0, timedOut: false })
    expect(result.stdout).toContain('done')
    await using registry = new ProcessRegistry({ killGraceMs: 300, ptyDriver: nodePtyDriver() })
    const process = await registry.start(escaping(), { pty: true })
    expect((await within(process.kill(), 20_000, 'pty kill()')).status).not.toBe('running')
  })
})

describe('descendants that leave the group without setsid (finding 14)', () => {
  // `set -m` gives every background job its own process group inside our session.
  const jobControl = () => `bash -c 'set -m; sleep 301 > /dev/null 2>&1 & echo $! > ${pidFile}'`

  it('run(): gone after the command ends', async () => {
    const result = await run(jobControl(), { killGraceMs: 300 })
    expect(result.ok).toBe(true)
    const pids = await readPids(pidFile)
    expect(pids).toHaveLength(1)
    expect(await allGone(pids)).toBe(true)
  })

  it('run(): gone after a timeout', async () => {
    const result = await run(`${jobControl()}; sleep 30`, { timeoutMs: 300, killGraceMs: 300 })
    expect(result.timedOut).toBe(true)
    expect(await allGone(await readPids(pidFile))).toBe(true)
  })

  it('background kill() and PTY runs: gone too', async () => {
    await using registry = new ProcessRegistry({ killGraceMs: 300 })
    const process = await registry.start(`${jobControl()}; sleep 30`)
    await waitFor(async () => (await readPids(pidFile)).length === 1, { intervalMs: 25 })
    expect((await process.kill()).status).toBe('killed')
    expect(await allGone(await readPids(pidFile))).toBe(true)

    await runWithPty(jobControl(), { killGraceMs: 300 })
    expect(await allGone(await readPids(pidFile))).toBe(true)
  })

  it.skipIf(!hasPython)('a Python child that calls setpgid: gone after the command ends', async () => {
    const script = [
      'import os, sys, time',
      'pid = os.fork()',
      'if pid:',
      `    open(${JSON.stringify(pidFile)}, "w").write(str(pid))`,
      '    sys.exit(0)',
      'os.setpgid(0, 0)',
      'devnull = os.open(os.devnull, os.O_WRONLY)',
      'os.dup2(devnull, 1)',
      'os.dup2(devnull, 2)',
      'time.sleep(300)',
    ].join('\n')
    const result = await run(`python3 -c '${script}'`, { killGraceMs: 300 })
    expect(result.ok).toBe(true)
    const pids = await readPids(pidFile)
    expect(pids).toHaveLength(1)
    expect(await allGone(pids)).toBe(true)
  })
})
