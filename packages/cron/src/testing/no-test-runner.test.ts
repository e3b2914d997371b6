/**
 * `@lango/cron/testing` must load under any test runner (ADR 0006): the built bundle is run by
 * plain `node` with a resolve hook that refuses `vitest`, as in a host that tests with another
 * runner. The vitest contract suite lives in `/testing/vitest`; the same hook shows that entry
 * does need vitest (so the hook bites).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const dist = fileURLToPath(new URL('../../dist/', import.meta.url))
let directory = ''

const HOOKS = `
export async function resolve(specifier, context, next) {
  if (specifier === 'vitest' || specifier.startsWith('vitest/') || specifier.startsWith('@vitest/')) {
    const error = new Error("Cannot find package '" + specifier + "' (this host tests with another runner)")
    error.code = 'ERR_MODULE_NOT_FOUND'
    throw error
  }
  return next(specifier, context)
}
`

/** Runs `source` as an ES module with plain node, `vitest` unresolvable. */
function node(source: string) {
  const script = join(directory, `script-${Math.random().toString(36).slice(2)}.mjs`)
  writeFileSync(script, source)
  const child = spawnSync(process.execPath, ['--import', './register.mjs', script], {
    cwd: directory,
    encoding: 'utf8',
    timeout: 30_000,
  })
  return { status: child.status, stdout: child.stdout.trim(), stderr: child.stderr }
}

const url = (file: string) => JSON.stringify(pathToFileURL(join(dist, file)).href)

beforeAll(() => {
  if (!existsSync(join(dist, 'testing.js'))) {
    throw new Error(`${dist}testing.js is missing: build @lango/cron first`)
  }
  directory = mkdtempSync(join(tmpdir(), 'lango-cron-testing-'))
  writeFileSync(join(directory, 'package.json'), '{ "type": "module", "private": true }\n')
  writeFileSync(join(directory, 'hooks.mjs'), HOOKS)
  writeFileSync(
    join(directory, 'register.mjs'),
    "import { register } from 'node:module'\nregister('./hooks.mjs', import.meta.url)\n",
  )
})

afterAll(() => {
  if (directory !== '') rmSync(directory, { recursive: true, force: true })
})

describe('built /testing entry', () => {
  it('loads and drives a service in plain node where vitest cannot be resolved', () => {
    const result = node(`
      import { CronService } from ${url('index.js')}
      import {
        FakeClock, MemoryCronStore, RecordingAgentRunner, RecordingChannelSender, createTestJob,
      } from ${url('testing.js')}
      const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'))
      const store = new MemoryCronStore()
      const agentRunner = new RecordingAgentRunner()
      const channelSender = new RecordingChannelSender()
      const cron = new CronService({ store, clock, agentRunner, channelSender, defaultTimezone: 'UTC' })
      await cron.start()
      try {
        await cron.add({ name: 'news', scheduleType: 'every', schedule: '1h', prompt: 'x', deliverTo: ['telegram:1'] })
        await clock.advance(3_600_000)
        await cron.scheduler.whenIdle()
        const [run] = await cron.history({ job: 'news' })
        console.log(JSON.stringify({
          status: run.status,
          sent: channelSender.sent,
          signal: agentRunner.signals[0] instanceof AbortSignal,
          testJob: createTestJob({ name: 'fixture' }).name,
        }))
      } finally {
        await cron.stop()
      }
    `)
    expect(result.stderr).toBe('')
    expect(JSON.parse(result.stdout)).toEqual({
      status: 'completed',
      sent: [{ target: 'telegram:1', text: '[Cron] news\nresult 1' }],
      signal: true,
      testJob: 'fixture',
    })
    expect(result.status).toBe(0)
  })

  it('keeps the contract suite in /testing/vitest, which does need vitest', () => {
    const result = node(`await import(${url('testing/vitest.js')})`)
    expect(result.status).not.toBe(0)
    expect(result.stderr).toMatch(/Cannot find package 'vitest'/)
  })

  it('no module the /testing bundle loads imports vitest', () => {
    const seen = new Set<string>()
    const pending = [join(dist, 'testing.js')]
    while (pending.length > 0) {
      const file = pending.pop() as string
      if (seen.has(file)) continue
      seen.add(file)
      const text = readFileSync(file, 'utf8')
      expect(text, file).not.toMatch(/(?:from\s*|import\s*\(?\s*|require\s*\(\s*)["'](?:vitest|@vitest\/)/)
      for (const match of text.matchAll(/(?:from\s*|import\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g)) {
        pending.push(resolve(dirname(file), match[1] as string))
      }
    }
    expect(seen.size).toBeGreaterThan(1)
  })
})
