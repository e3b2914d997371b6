import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { allGone, forkTreeCommand, isAlive, readPids, tempDir } from './__fixtures__/helpers.js'
import { ExecError } from './errors.js'
import { run } from './run.js'

let dir: { path: string; cleanup: () => Promise<void> }
beforeEach(async () => {
  dir = await tempDir()
})
afterEach(async () => {
  await dir.cleanup()
})

describe('run: synchronous command execution (seed 001)', () => {
  it('returns stdout, stderr and exit code', async () => {
    const result = await run('echo out; echo err >&2; exit 3', { timeoutMs: 5_000 })
    expect(result.stdout).toBe('out\n')
    expect(result.stderr).toBe('err\n')
    expect(result.exitCode).toBe(3)
    expect(result.ok).toBe(false)
    expect(result.timedOut).toBe(false)
    expect(result.isCanceled).toBe(false)
    expect(result.durationMs).toBeGreaterThan(0)
  })

  it('describes a failure with exit code, and keeps both streams for debugging', async () => {
    const result = await run('echo partial; ls /definitely/not/here')
    expect(result.exitCode).not.toBe(0)
    expect(result.stdout).toBe('partial\n')
    expect(result.stderr).toMatch(/not/)
    expect(result.message).toMatch(/^Command failed with exit code \d+: echo partial; ls/)
  })

  it('reports success', async () => {
    const result = await run('true')
    expect(result).toMatchObject({ exitCode: 0, ok: true, signal: null, message: 'Command succeeded: true' })
  })

  it('feeds input on stdin when given, and /dev/null otherwise', async () => {
    expect((await run('cat', { input: 'hello\n' })).stdout).toBe('hello\n')
    expect((await run('cat')).stdout).toBe('')
  })

  it('rejects an empty command and bad options with typed errors before spawning', async () => {
    await expect(run('   ')).rejects.toMatchObject({ code: 'EXEC_INVALID_OPTION' })
    await expect(run('true', { timeoutMs: -1 })).rejects.toMatchObject({ code: 'EXEC_INVALID_OPTION' })
    await expect(run('true', { maxOutputBytes: 1.5 })).rejects.toMatchObject({ code: 'EXEC_INVALID_OPTION' })
  })
})

describe('run: timeouts and process groups', () => {
  it('terminates a command that exceeds its timeout and returns the output so far', async () => {
    const result = await run('echo before; sleep 30; echo after', { timeoutMs: 300, killGraceMs: 200 })
    expect(result.timedOut).toBe(true)
    expect(result.ok).toBe(false)
    expect(result.stdout).toBe('before\n')
    expect(result.message).toMatch(/^Command timed out after 300 ms and was killed/)
    // Not after the 30 s sleep (a generous bound: the timeout is 0.3 s).
    expect(result.durationMs).toBeLessThan(15_000)
  })

  it('kills every grandchild on timeout', async () => {
    const pidFile = join(dir.path, 'pids')
    const result = await run(forkTreeCommand(pidFile), { timeoutMs: 500, killGraceMs: 300 })
    expect(result.timedOut).toBe(true)
    const pids = await readPids(pidFile)
    expect(pids.length).toBeGreaterThanOrEqual(5)
    expect(await allGone(pids)).toBe(true)
  })

  it('kills every grandchild when a trapped SIGTERM is ignored (SIGKILL after the grace period)', async () => {
    const pidFile = join(dir.path, 'pids')
    const command = `trap '' TERM; (trap '' TERM; sleep 300) & echo $! >> ${pidFile}; echo $$ >> ${pidFile}; sleep 300`
    const result = await run(command, { timeoutMs: 300, killGraceMs: 300 })
    expect(result.timedOut).toBe(true)
    const pids = await readPids(pidFile)
    expect(pids).toHaveLength(2)
    expect(await allGone(pids)).toBe(true)
  })

  it('leaves nothing behind when the shell exits while its background jobs hold the output open', async () => {
    const pidFile = join(dir.path, 'pids')
    const result = await run(`sleep 300 & echo $! > ${pidFile}; echo done`, { killGraceMs: 300 })
    expect(result.stdout).toBe('done\n')
    expect(result.exitCode).toBe(0)
    const [pid] = await readPids(pidFile)
    await waitFor(async () => !(await isAlive(pid as number)), { intervalMs: 25 })
  })
})

describe('run: stripAnsi', () => {
  it('removes colour and cursor codes from stdout and stderr when asked, and keeps them otherwise', async () => {
    const command = "printf '\\033[31mred\\033[0m\\n'; printf '\\033[1mbold\\033[0m\\n' >&2"
    const stripped = await run(command, { stripAnsi: true })
    expect(stripped.stdout).toBe('red\n')
    expect(stripped.stderr).toBe('bold\n')
    const kept = await run(command)
    expect(kept.stdout).toBe('\u001b[31mred\u001b[0m\n')
  })
})

describe('run: cancellation', () => {
  it('throws signal.reason unchanged when aborted before start, without spawning', async () => {
    const marker = join(dir.path, 'ran')
    const controller = new AbortController()
    const reason = new Error('stop right there')
    controller.abort(reason)
    await expect(run(`touch ${marker}`, { signal: controller.signal })).rejects.toBe(reason)
    await expect(stat(marker)).rejects.toThrow()
  })

  it('kills the whole group when aborted during the run and reports isCanceled', async () => {
    const pidFile = join(dir.path, 'pids')
    const controller = new AbortController()
    const pending = run(forkTreeCommand(pidFile), { signal: controller.signal, killGraceMs: 300 })
    await waitFor(async () => (await readPids(pidFile)).length >= 5, { intervalMs: 25 })
    controller.abort()
    const result = await pending
    expect(result.isCanceled).toBe(true)
    expect(result.timedOut).toBe(false)
    expect(result.stdout).toBe('started\n')
    expect(result.message).toMatch(/^Command was canceled/)
    const pids = await readPids(pidFile)
    expect(await allGone(pids)).toBe(true)
  })
})

describe('run: working directory (seed 001)', () => {
  it('runs relative to the given directory', async () => {
    await mkdir(join(dir.path, 'sub'))
    await writeFile(join(dir.path, 'sub', 'file.txt'), 'x')
    const result = await run('pwd; ls', { cwd: join(dir.path, 'sub') })
    expect(result.stdout).toBe(`${join(dir.path, 'sub')}\nfile.txt\n`)
  })

  it('returns an error before execution when the directory does not exist', async () => {
    const marker = join(dir.path, 'ran')
    const error = await run(`touch ${marker}`, { cwd: join(dir.path, 'missing') }).catch((caught) => caught)
    expect(ExecError.is(error)).toBe(true)
    expect(error).toMatchObject({ code: 'EXEC_INVALID_CWD' })
    expect(error.message).toContain(join(dir.path, 'missing'))
    await expect(stat(marker)).rejects.toThrow()
  })

  it('refuses a file as working directory', async () => {
    await writeFile(join(dir.path, 'plain'), '')
    await expect(run('true', { cwd: join(dir.path, 'plain') })).rejects.toMatchObject({
      code: 'EXEC_INVALID_CWD',
    })
  })
})

describe('run: output bounds', () => {
  it('keeps the first and last halves of a huge output and says how much was dropped', async () => {
    const result = await run(`head -c 5000000 /dev/zero | tr '\\0' a; echo; echo THE_END`, {
      maxOutputBytes: 64 * 1024,
    })
    expect(result.truncated).toBe(true)
    expect(result.stdout.length).toBeLessThan(70 * 1024)
    expect(result.stdout.startsWith('aaaa')).toBe(true)
    expect(result.stdout.endsWith('THE_END\n')).toBe(true)
    expect(result.stdout).toMatch(/\[… \d+ bytes of output dropped …\]/)
  })

  it('does not mark small outputs as truncated', async () => {
    const result = await run('seq 1 1000', { maxOutputBytes: 64 * 1024 })
    expect(result.truncated).toBe(false)
    expect(result.stdout.split('\n')).toHaveLength(1001)
  })
})

describe('run: spawn failures', () => {
  it('reports a missing shell as EXEC_SPAWN_FAILED without leaking argv', async () => {
    const error = await run('echo secret-ish', { shell: join(dir.path, 'no-such-shell') }).catch(
      (caught) => caught,
    )
    expect(error).toMatchObject({ code: 'EXEC_SPAWN_FAILED' })
    expect(JSON.stringify(error)).not.toContain('spawnargs')
    expect(await readFile(dir.path).catch(() => 'dir')).toBe('dir')
  })
})
