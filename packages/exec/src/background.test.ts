import { join } from 'node:path'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { allGone, forkTreeCommand, readPids, tempDir } from './__fixtures__/helpers.js'
import { ProcessRegistry, startBackground } from './background.js'
import { nodePtyDriver } from './pty/index.js'

let dir: { path: string; cleanup: () => Promise<void> }
let registry: ProcessRegistry
beforeEach(async () => {
  dir = await tempDir()
  registry = new ProcessRegistry({ killGraceMs: 300, ptyDriver: nodePtyDriver() })
})
afterEach(async () => {
  await registry.stop()
  await dir.cleanup()
})

describe('background execution (seed 001)', () => {
  it('returns a session id at once, and status with output and state later', async () => {
    const process = await startBackground('echo one; sleep 0.2; echo two', { registry })
    expect(process.id).toMatch(/^proc_/)
    expect(process.status).toBe('running')
    expect(registry.get(process.id)).toBe(process)
    const snapshot = await process.wait()
    expect(snapshot).toMatchObject({ id: process.id, status: 'exited', exitCode: 0, pty: false })
    expect(snapshot.endedAt).toBeGreaterThanOrEqual(snapshot.startedAt)
    expect(process.read(0)).toMatchObject({ output: 'one\ntwo\n', offset: 0, nextOffset: 8, droppedBytes: 0 })
    expect(registry.list()[0]).toMatchObject({ id: process.id, command: 'echo one; sleep 0.2; echo two' })
  })

  it('reads continue from next_offset without gaps or repeats', async () => {
    const process = await registry.start('for i in 1 2 3 4 5; do echo line$i; sleep 0.05; done')
    let offset = 0
    let collected = ''
    while (process.status === 'running') {
      const read = process.read(offset)
      collected += read.output
      offset = read.nextOffset
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    collected += process.read(offset).output
    expect(collected).toBe('line1\nline2\nline3\nline4\nline5\n')
  })

  it('is safe to read while a fast writer fills the ring: ordered, consistent, drops counted', async () => {
    await using small = new ProcessRegistry({ outputBufferBytes: 4 * 1024 })
    // 200k numbered lines (~1.3 MB) into a 4 KiB ring, read concurrently.
    const process = await small.start('seq 1 200000')
    let offset = 0
    let dropped = 0
    let last = 0
    let carry = ''
    let reads = 0
    const consume = () => {
      const read = process.read(offset)
      reads++
      let text = read.output
      let afterGap = false
      if (read.droppedBytes > 0) {
        // A gap: the partial line before it is gone, and so is the start of the next one.
        dropped += read.droppedBytes
        carry = ''
        text = text.slice(text.indexOf('\n') + 1)
        afterGap = true
      }
      checkLines(text, afterGap)
      offset = read.nextOffset
    }
    const checkLines = (text: string, afterGap: boolean) => {
      const lines = (carry + text).split('\n')
      carry = lines.pop() ?? ''
      let first = afterGap
      for (const line of lines) {
        const value = Number(line)
        expect(Number.isInteger(value)).toBe(true)
        if (first) expect(value).toBeGreaterThan(last)
        else if (last > 0) expect(value).toBe(last + 1)
        first = false
        last = value
      }
    }
    while (process.status === 'running') {
      consume()
      await new Promise((resolve) => setImmediate(resolve))
    }
    consume()
    expect(last).toBe(200000)
    expect(reads).toBeGreaterThan(2)
    const total = process.snapshot().outputBytes
    expect(total).toBe(Buffer.byteLength(Array.from({ length: 200000 }, (_, i) => `${i + 1}\n`).join('')))
    expect(process.snapshot().droppedBytes).toBe(total - 4 * 1024)
    expect(dropped).toBeGreaterThan(0)
  })

  it('kill() stops the whole process group', async () => {
    const pidFile = join(dir.path, 'pids')
    const process = await registry.start(forkTreeCommand(pidFile))
    await waitFor(async () => (await readPids(pidFile)).length >= 5, { intervalMs: 25 })
    const snapshot = await process.kill()
    expect(snapshot.status).toBe('killed')
    const pids = await readPids(pidFile)
    expect(await allGone(pids)).toBe(true)
  })

  it('times out after its maximum lifetime', async () => {
    const process = await registry.start('sleep 30', { timeoutMs: 200 })
    expect((await process.wait()).status).toBe('timed_out')
  })

  it('stop() kills everything still running and refuses new work', async () => {
    const pidFile = join(dir.path, 'pids')
    await registry.start(forkTreeCommand(pidFile))
    await registry.start('sleep 30')
    await waitFor(async () => (await readPids(pidFile)).length >= 5, { intervalMs: 25 })
    await registry.stop()
    expect(registry.list().every((snapshot) => snapshot.status === 'killed')).toBe(true)
    const pids = await readPids(pidFile)
    expect(await allGone(pids)).toBe(true)
    await expect(registry.start('true')).rejects.toMatchObject({ code: 'EXEC_INVALID_OPTION' })
  })

  it('bounds running processes and forgets the oldest finished ones', async () => {
    await using bounded = new ProcessRegistry({ maxRunning: 2, maxRetained: 2 })
    const first = await bounded.start('sleep 30')
    await bounded.start('sleep 30')
    await expect(bounded.start('true')).rejects.toMatchObject({ code: 'EXEC_TOO_MANY_PROCESSES' })
    await first.kill()
    const finished = [first]
    for (let index = 0; index < 3; index++) {
      const process = await bounded.start('true')
      await process.wait()
      finished.push(process)
    }
    expect(bounded.get(first.id)).toBeUndefined()
    expect(bounded.list().filter((snapshot) => snapshot.status !== 'running')).toHaveLength(2)
    expect(() => bounded.require('nope')).toThrow(expect.objectContaining({ code: 'EXEC_PROCESS_NOT_FOUND' }))
  })

  it('refuses input for non-PTY processes', async () => {
    // Still running when written to, however slow the machine (afterEach's stop() ends it).
    const process = await registry.start('sleep 30')
    expect(() => process.write('x')).toThrow(expect.objectContaining({ code: 'EXEC_NOT_WRITABLE' }))
  })

  it('wait() honours an abort signal and rethrows its reason', async () => {
    const process = await registry.start('sleep 30')
    const controller = new AbortController()
    const reason = new Error('gave up')
    setTimeout(() => controller.abort(reason), 50)
    await expect(process.wait({ signal: controller.signal })).rejects.toBe(reason)
  })
})

describe('PTY sessions', () => {
  it('accept input: a prompt is answered through write()', async () => {
    const process = await registry.start('printf "name? "; read name; echo "hello $name"', { pty: true })
    await waitFor(() => process.read(0).output.includes('name?'), { intervalMs: 25 })
    process.write('lango\r')
    await process.wait()
    expect(process.read(0).output).toContain('hello lango')
    expect(process.snapshot()).toMatchObject({ pty: true, status: 'exited', exitCode: 0 })
  })

  it('run on a terminal', async () => {
    const process = await registry.start('test -t 0 && test -t 1 && echo tty', { pty: true })
    await process.wait()
    expect(process.read(0).output).toContain('tty')
  })

  it('need a PTY driver', async () => {
    await using plain = new ProcessRegistry()
    await expect(plain.start('true', { pty: true })).rejects.toMatchObject({ code: 'EXEC_PTY_UNAVAILABLE' })
  })
})
