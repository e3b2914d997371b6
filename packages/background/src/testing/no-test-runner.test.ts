/**
 * `@lango/background/testing` must load under any test runner (ADR 0006): the built bundle is
 * copied where no `vitest` can be resolved and driven by plain `node`. The vitest contract suites
 * live in `/testing/vitest`; the same check shows that entry does need vitest.
 */
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const dist = fileURLToPath(new URL('../../dist/', import.meta.url))
let directory = ''

/** Runs `source` as an ES module with plain node in the copy of dist. */
function node(source: string) {
  const script = join(directory, `script-${Math.random().toString(36).slice(2)}.mjs`)
  writeFileSync(script, source)
  const child = spawnSync(process.execPath, [script], { cwd: directory, encoding: 'utf8', timeout: 30_000 })
  return { status: child.status, stdout: child.stdout.trim(), stderr: child.stderr }
}

beforeAll(() => {
  if (!existsSync(join(dist, 'testing.js'))) {
    throw new Error(`${dist}testing.js is missing: build @lango/background first`)
  }
  // A directory outside the workspace, so that no node_modules above it holds vitest.
  directory = mkdtempSync(join(tmpdir(), 'lango-background-testing-'))
  cpSync(dist, join(directory, 'dist'), { recursive: true })
  writeFileSync(join(directory, 'package.json'), '{ "type": "module", "private": true }\n')
})

afterAll(() => {
  if (directory !== '') rmSync(directory, { recursive: true, force: true })
})

describe('built /testing entry', () => {
  it('loads and works in plain node where vitest cannot be resolved', () => {
    const result = node(`
      import { BackgroundManager } from './dist/index.js'
      import { RecordingAgentRunner, FakeClock, RecordingChannelSender, nextEvent } from './dist/testing.js'
      const clock = new FakeClock(Date.UTC(2025, 0, 1))
      const runner = new RecordingAgentRunner()
      const notifier = new RecordingChannelSender()
      const manager = new BackgroundManager({ runner, notifier, clock, taskTimeoutMs: 1000 })
      manager.start()
      const ended = nextEvent(manager, 'task:end')
      manager.submit({ prompt: 'hello', originChannel: 'chat:1' })
      await runner.nextCall()
      clock.advance(1000)
      const task = await ended
      await notifier.next()
      const notice = await notifier.next()
      await manager.stop()
      console.log(JSON.stringify({ status: task.status, timedOut: task.timedOut, target: notice.target }))
    `)
    expect(result.stderr).toBe('')
    expect(JSON.parse(result.stdout)).toEqual({ status: 'failed', timedOut: true, target: 'chat:1' })
    expect(result.status).toBe(0)
  })

  it('keeps the vitest contract suites in /testing/vitest, which does need vitest', () => {
    const result = node(`await import('./dist/testing/vitest.js')`)
    expect(result.status).not.toBe(0)
    expect(result.stderr).toMatch(/Cannot find package 'vitest'/)
  })
})
