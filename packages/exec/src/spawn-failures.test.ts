import { mkdir, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { tempDir } from './__fixtures__/helpers.js'
import { ExecError, ProcessRegistry, type RefStore, run } from './index.js'
import { nodePtyDriver, runWithPty } from './pty/index.js'

let dir: { path: string; cleanup: () => Promise<void> }
beforeEach(async () => {
  dir = await tempDir()
})
afterEach(async () => {
  await dir.cleanup()
})

/** A store whose lookup removes `victim` first: the agent's race between the cwd check and the spawn. */
function racingStore(victim: string): RefStore {
  return {
    async resolve(token) {
      await rm(victim, { recursive: true, force: true })
      return token === '{{secret:k}}' ? 'value-long-enough' : undefined
    },
  }
}

describe('background starts that cannot spawn (issue 11, finding 1)', () => {
  it('a missing shell rejects with EXEC_SPAWN_FAILED, the host survives, and the slot is free again', async () => {
    await using registry = new ProcessRegistry({ maxRunning: 1 })
    const missing = join(dir.path, 'no-such-shell')
    for (let attempt = 0; attempt < 3; attempt++) {
      const error = await registry.start('echo hi', { shell: missing }).catch((caught: unknown) => caught)
      expect(ExecError.is(error)).toBe(true)
      expect(error).toMatchObject({ code: 'EXEC_SPAWN_FAILED' })
      expect(JSON.stringify(error)).not.toContain('spawnargs')
    }
    // Give a stray 'error' event the chance to crash the host before we look.
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(registry.list()).toEqual([])
    const process = await registry.start('echo still-works')
    expect((await process.wait()).status).toBe('exited')
    expect(process.read(0).output).toBe('still-works\n')
  })

  it('a cwd removed between the check and the spawn rejects with EXEC_SPAWN_FAILED', async () => {
    const victim = join(dir.path, 'work')
    await mkdir(victim)
    await using registry = new ProcessRegistry({ maxRunning: 1, refStore: racingStore(victim) })
    await expect(registry.start('echo {{secret:k}}', { cwd: victim })).rejects.toMatchObject({
      code: 'EXEC_SPAWN_FAILED',
    })
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect((await (await registry.start('true')).wait()).status).toBe('exited')
  })

  it('run() turns the same race into EXEC_SPAWN_FAILED', async () => {
    const victim = join(dir.path, 'work')
    await mkdir(victim)
    await expect(
      run('echo {{secret:k}}', { cwd: victim, refStore: racingStore(victim) }),
    ).rejects.toMatchObject({ code: 'EXEC_SPAWN_FAILED' })
  })

  it('a PTY background start in a removed cwd rejects with EXEC_SPAWN_FAILED too (issue 21)', async () => {
    const victim = join(dir.path, 'work')
    await mkdir(victim)
    await using registry = new ProcessRegistry({
      maxRunning: 1,
      refStore: racingStore(victim),
      ptyDriver: nodePtyDriver(),
    })
    await expect(registry.start('echo {{secret:k}}', { cwd: victim, pty: true })).rejects.toMatchObject({
      code: 'EXEC_SPAWN_FAILED',
      data: { code: 'ENOENT' },
    })
    expect(registry.list()).toEqual([])
    expect((await (await registry.start('true', { pty: true })).wait()).status).toBe('exited')
  })

  it('a PTY start with a missing shell rejects with EXEC_SPAWN_FAILED, in the registry and runWithPty (issue 21)', async () => {
    await using registry = new ProcessRegistry({ maxRunning: 1, ptyDriver: nodePtyDriver() })
    for (const shell of [join(dir.path, 'no-such-shell'), 'no-such-shell-on-path', dir.path]) {
      const error = await registry.start('echo hi', { shell, pty: true }).catch((caught: unknown) => caught)
      expect(ExecError.is(error), shell).toBe(true)
      expect(error, shell).toMatchObject({ code: 'EXEC_SPAWN_FAILED' })
      await expect(runWithPty('echo hi', { shell }), shell).rejects.toMatchObject({
        code: 'EXEC_SPAWN_FAILED',
      })
    }
    expect(registry.list()).toEqual([])
    const process = await registry.start('echo still-works', { pty: true })
    expect((await process.wait()).status).toBe('exited')
    expect(process.read(0).output).toContain('still-works')
  })
})

describe('bad working directories are refused with a typed error before spawning (finding 10)', () => {
  const cases: Array<[string, () => Promise<unknown>]> = [
    ['a symlink loop', async () => join(dir.path, 'loop')],
    ['a NUL byte', async () => `${dir.path}/a\0b`],
    ['a number', async () => 42],
    ['an object', async () => ({ path: dir.path })],
    ['an empty string', async () => ''],
    ['a path through a file', async () => join(dir.path, 'file', 'sub')],
  ]
  beforeEach(async () => {
    await symlink(join(dir.path, 'loop'), join(dir.path, 'loop'))
    await writeFile(join(dir.path, 'file'), '')
  })

  it.each(cases)('%s', async (_name, make) => {
    const cwd = (await make()) as string
    const marker = join(dir.path, 'ran')
    const spawners = [
      () => run(`touch ${marker}`, { cwd }),
      () => runWithPty(`touch ${marker}`, { cwd }),
      async () => {
        await using registry = new ProcessRegistry({ ptyDriver: nodePtyDriver() })
        await registry.start(`touch ${marker}`, { cwd })
      },
      async () => {
        await using registry = new ProcessRegistry({ ptyDriver: nodePtyDriver() })
        await registry.start(`touch ${marker}`, { cwd, pty: true })
      },
    ]
    for (const spawn of spawners) {
      const error = await spawn().catch((caught: unknown) => caught)
      expect(ExecError.is(error)).toBe(true)
      expect(error).toMatchObject({ code: 'EXEC_INVALID_CWD' })
    }
    await expect(stat(marker)).rejects.toThrow()
  })
})
