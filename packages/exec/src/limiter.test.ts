import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { tempDir } from './__fixtures__/helpers.js'
import { ExecError, RunLimiter, run } from './index.js'
import { runWithPty } from './pty/index.js'

// The runs that hold a slot wait for a gate the test opens: they still run when the test looks,
// however slow the machine, and the test waits for the limiter's state instead of a fixed time.
let dir: { path: string; cleanup: () => Promise<void> }
let gates = 0
beforeEach(async () => {
  dir = await tempDir()
})
afterEach(async () => {
  await dir.cleanup()
})

/** A command that runs until `open()` is called, and the function that opens its gate. */
function gated(): { command: string; open: () => Promise<void> } {
  const gate = join(dir.path, `gate-${++gates}`)
  return {
    command: `while [ ! -e '${gate}' ]; do sleep 0.01; done`,
    open: () => writeFile(gate, ''),
  }
}

describe('RunLimiter: an optional cap on concurrent run()/runWithPty() (issue 11, finding 13)', () => {
  it('refuses at once beyond maxRunning (default: no waiting), shared by run and runWithPty', async () => {
    const limiter = new RunLimiter({ maxRunning: 2 })
    const gate = gated()
    const first = run(gate.command, { limiter })
    const second = runWithPty(gate.command, { limiter })
    await waitFor(() => limiter.running === 2)
    for (const attempt of [() => run('true', { limiter }), () => runWithPty('true', { limiter })]) {
      const error = await attempt().catch((caught: unknown) => caught)
      expect(ExecError.is(error)).toBe(true)
      expect(error).toMatchObject({ code: 'EXEC_TOO_MANY_PROCESSES', data: { maxRunning: 2, maxWaiting: 0 } })
    }
    expect(limiter.running).toBe(2)
    await gate.open()
    await Promise.all([first, second])
    expect(limiter.running).toBe(0)
    expect((await run('echo again', { limiter })).stdout).toBe('again\n')
  })

  it('with maxWaiting, excess runs wait in order and start when a slot frees', async () => {
    const limiter = new RunLimiter({ maxRunning: 1, maxWaiting: 2 })
    const order: string[] = []
    const tracked = (name: string, command: string) =>
      run(command, { limiter }).then((result) => {
        order.push(name)
        return result
      })
    const gate = gated()
    // b takes longer than c: only first-in, first-out makes b end before c.
    const all = [tracked('a', gate.command), tracked('b', 'sleep 0.1'), tracked('c', 'true')]
    await waitFor(() => limiter.waiting === 2)
    expect(limiter).toMatchObject({ running: 1, waiting: 2 })
    await expect(run('true', { limiter })).rejects.toMatchObject({ code: 'EXEC_TOO_MANY_PROCESSES' })
    await gate.open()
    await Promise.all(all)
    expect(order).toEqual(['a', 'b', 'c'])
    expect(limiter).toMatchObject({ running: 0, waiting: 0 })
  })

  it('a waiting run honours its abort signal and gives up its place', async () => {
    const limiter = new RunLimiter({ maxRunning: 1, maxWaiting: 1 })
    const gate = gated()
    const holder = run(gate.command, { limiter })
    const controller = new AbortController()
    const waiting = run('echo never', { limiter, signal: controller.signal })
    await waitFor(() => limiter.running === 1 && limiter.waiting === 1)
    const reason = new Error('no longer needed')
    controller.abort(reason)
    await expect(waiting).rejects.toBe(reason)
    expect(limiter.waiting).toBe(0)
    await gate.open()
    await holder
    expect(limiter.running).toBe(0)
  })

  it('frees the slot when a run fails before or at spawn', async () => {
    const limiter = new RunLimiter({ maxRunning: 1 })
    await expect(run('true', { limiter, cwd: '/definitely/missing' })).rejects.toMatchObject({
      code: 'EXEC_INVALID_CWD',
    })
    await expect(run('true', { limiter, shell: '/definitely/missing/sh' })).rejects.toMatchObject({
      code: 'EXEC_SPAWN_FAILED',
    })
    expect(limiter.running).toBe(0)
    expect((await run('true', { limiter })).ok).toBe(true)
  })

  it('validates its bounds', () => {
    for (const options of [{ maxRunning: 0 }, { maxRunning: 1.5 }, { maxRunning: 1, maxWaiting: -1 }])
      expect(() => new RunLimiter(options)).toThrow(expect.objectContaining({ code: 'EXEC_INVALID_OPTION' }))
  })
})
