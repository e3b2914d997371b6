import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { open } from 'node:fs/promises'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { nodePtyDriver, runWithPty } from './index.js'

describe('runWithPty (seed 001)', () => {
  it('allocates a PTY and captures output', async () => {
    const result = await runWithPty('test -t 0 && test -t 1 && echo "on a tty"; tty')
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toContain('on a tty')
    expect(result.stdout).toMatch(/\/dev\/pts\/\d+/)
  })

  it('preserves ANSI escapes by default and strips them when asked', async () => {
    const command = "printf '\\033[31mred\\033[0m plain\\n'"
    const kept = await runWithPty(command)
    expect(kept.stdout).toContain('\u001B[31mred\u001B[0m plain')
    const stripped = await runWithPty(command, { stripAnsi: true })
    expect(stripped.stdout.trim()).toBe('red plain')
  })

  it('answers an interactive prompt through input', async () => {
    const result = await runWithPty('printf "continue? "; read answer; echo "got $answer"', {
      input: 'yes\r',
    })
    expect(result.stdout).toContain('got yes')
  })

  it('uses the requested terminal size', async () => {
    const result = await runWithPty('stty size', { cols: 100, rows: 40 })
    expect(result.stdout.trim()).toBe('40 100')
  })

  it('reports exit codes and timeouts like run()', async () => {
    expect((await runWithPty('exit 7')).exitCode).toBe(7)
    const slow = await runWithPty('echo before; sleep 30', { timeoutMs: 300, killGraceMs: 200 })
    expect(slow.timedOut).toBe(true)
    expect(slow.stdout).toContain('before')
  })

  it('is canceled by an abort signal', async () => {
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 200)
    const result = await runWithPty('sleep 30', { signal: controller.signal, killGraceMs: 200 })
    expect(result.isCanceled).toBe(true)
  })

  it('never loses the tail: 20 MB then an end marker, 50 times', async () => {
    const driver = nodePtyDriver()
    const lost: number[] = []
    for (let round = 0; round < 50; round++) {
      const result = await runWithPty(
        `head -c 20000000 /dev/zero | tr '\\0' a; printf 'END_MARKER_${round}'`,
        {
          driver,
          maxOutputBytes: 4096,
          timeoutMs: 60_000,
        },
      )
      if (!result.stdout.endsWith(`END_MARKER_${round}`)) lost.push(round)
    }
    expect(lost).toEqual([])
  }, 240_000)

  it('does not hand the host process file descriptors to the child (RES-7)', async () => {
    // Hold a listening socket and an open file, as a server with a database would.
    const server = createServer().listen(0, '127.0.0.1')
    await once(server, 'listening')
    const file = await open(fileURLToPath(import.meta.url), 'r')
    try {
      const listing = async (command: string) =>
        (await runWithPty(command, { stripAnsi: true })).stdout
          .split(/\r?\n/)
          .filter((line) => line.includes(' -> '))
          .map((line) =>
            line
              .slice(line.lastIndexOf(' -> ') + 4)
              .trim()
              .replace(/^'(.*)'$/, '$1'),
          )
      const targets = await listing('ls -l /proc/self/fd')
      expect(targets.filter((target) => target.startsWith('socket:'))).toEqual([])
      expect(targets.filter((target) => target.endsWith('pty.test.ts'))).toEqual([])
      // Anything else must also be open in a plain child: inherited by this test process from
      // its own parent, not opened by it.
      const plain = await new Promise<string>((resolve) => {
        const child = spawn('ls', ['-l', '/proc/self/fd'])
        let text = ''
        child.stdout.on('data', (chunk) => {
          text += chunk
        })
        child.on('close', () => resolve(text))
      })
      const inherited = new Set(
        plain.split('\n').map((line) => line.slice(line.lastIndexOf(' -> ') + 4).trim()),
      )
      const extra = targets.filter(
        (target) => !target.startsWith('/dev/pts/') && !target.startsWith('/proc/'),
      )
      expect(extra.filter((target) => !inherited.has(target))).toEqual([])
    } finally {
      await file.close()
      server.close()
    }
  })
})
