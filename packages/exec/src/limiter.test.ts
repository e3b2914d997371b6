import { describe, expect, it } from 'vitest'
import { ExecError, RunLimiter, run } from './index.js'
import { runWithPty } from './pty/index.js'

describe('RunLimiter: an optional cap on concurrent run()/runWithPty() (issue 11, finding 13)', () => {
  it('refuses at once beyond maxRunning (default: no waiting), shared by run and runWithPty', async () => {
    const limiter = new RunLimiter({ maxRunning: 2 })
    const first = run('sleep 0.4', { limiter })
    const second = runWithPty('sleep 0.4', { limiter })
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(limiter.running).toBe(2)
    for (const attempt of [() => run('true', { limiter }), () => runWithPty('true', { limiter })]) {
      const error = await attempt().catch((caught: unknown) => caught)
      expect(ExecError.is(error)).toBe(true)
      expect(error).toMatchObject({ code: 'EXEC_TOO_MANY_PROCESSES', data: { maxRunning: 2, maxWaiting: 0 } })
    }
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
    const all = [tracked('a', 'sleep 0.3'), tracked('b', 'sleep 0.1'), tracked('c', 'true')]
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(limiter).toMatchObject({ running: 1, waiting: 2 })
    await expect(run('true', { limiter })).rejects.toMatchObject({ code: 'EXEC_TOO_MANY_PROCESSES' })
    await Promise.all(all)
    expect(order).toEqual(['a', 'b', 'c'])
    expect(limiter).toMatchObject({ running: 0, waiting: 0 })
  })

  it('a waiting run honours its abort signal and gives up its place', async () => {
    const limiter = new RunLimiter({ maxRunning: 1, maxWaiting: 1 })
    const holder = run('sleep 0.3', { limiter })
    const controller = new AbortController()
    const waiting = run('echo never', { limiter, signal: controller.signal })
    await new Promise((resolve) => setTimeout(resolve, 50))
    const reason = new Error('no longer needed')
    controller.abort(reason)
    await expect(waiting).rejects.toBe(reason)
    expect(limiter.waiting).toBe(0)
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
