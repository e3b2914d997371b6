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
    const result = await runWithPty('printf "continue? "; read answer; echo "got $answer"', { input: 'yes\r' })
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
      const result = await runWithPty(`head -c 20000000 /dev/zero | tr '\\0' a; printf 'END_MARKER_${round}'`, {
        driver,
        maxOutputBytes: 4096,
        timeoutMs: 60_000,
      })
      if (!result.stdout.endsWith(`END_MARKER_${round}`)) lost.push(round)
    }
    expect(lost).toEqual([])
  }, 240_000)

  it('does not hand the host process file descriptors to the child (RES-7)', async () => {
    const result = await runWithPty('ls /proc/self/fd', { stripAnsi: true })
    const fds = result.stdout
      .split(/\s+/)
      .filter(Boolean)
      .map(Number)
      .sort((a, b) => a - b)
    // 0-2 are the terminal; the one more is ls's own handle on /proc/self/fd.
    expect(fds).toEqual([0, 1, 2, 3])
  })
})
