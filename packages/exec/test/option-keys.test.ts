/**
 * An outside probe: a misspelt option (`timoutMs`) was dropped without a word. Through the public
 * API, with real processes.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  blockLangoExec,
  classifyLangoExec,
  createEnvBuilder,
  ExecError,
  installSignalCleanup,
  langoExecMessage,
  ProcessRegistry,
  Redactor,
  RunLimiter,
  run,
  startBackground,
} from '../src/index.js'
import { runWithPty } from '../src/pty/index.js'

const unknownOption = (key: string, suggestion?: string) =>
  expect.objectContaining({
    name: 'ExecError',
    code: 'EXEC_INVALID_OPTION',
    message: expect.stringContaining(`unknown option "${key}"`),
    data: expect.objectContaining({
      option: key,
      accepted: expect.any(Array),
      ...(suggestion === undefined ? {} : { suggestion }),
    }),
  })

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lango-exec-keys-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('unknown option keys', () => {
  it('run refuses a misspelt key before anything runs, naming it, the closest key and what is accepted', async () => {
    const marker = join(dir, 'ran')
    const error = await run(`touch ${marker}`, { timoutMs: 5_000 } as never).catch(
      (caught: unknown) => caught,
    )
    expect(error).toEqual(unknownOption('timoutMs', 'timeoutMs'))
    expect(ExecError.is(error)).toBe(true)
    expect((error as Error).message).toMatch(/did you mean "timeoutMs"\?.*accepted: cwd, env, .*timeoutMs/)
    expect(existsSync(marker)).toBe(false)
  })

  it('a key far from every accepted one gets no suggestion, only the list', async () => {
    const error = await run('true', { zzzzzz: 1 } as never).catch((caught: unknown) => caught)
    expect(error).toEqual(unknownOption('zzzzzz'))
    expect((error as ExecError).data).not.toHaveProperty('suggestion')
    expect((error as Error).message).not.toContain('did you mean')
  })

  it('runWithPty refuses an unknown key before it needs a terminal', async () => {
    await expect(runWithPty('true', { colls: 80 } as never)).rejects.toEqual(unknownOption('colls', 'cols'))
  })

  it('constructors and factories refuse unknown keys', async () => {
    expect(() => new ProcessRegistry({ maxRuning: 2 } as never)).toThrow(
      unknownOption('maxRuning', 'maxRunning'),
    )
    expect(() => new RunLimiter({ maxRunning: 1, maxWaitng: 2 } as never)).toThrow(
      unknownOption('maxWaitng', 'maxWaiting'),
    )
    expect(() => createEnvBuilder({ alow: ['MY_*'] } as never)).toThrow(unknownOption('alow', 'allow'))
    expect(() => createEnvBuilder().build({ overides: { A: 'b' } } as never)).toThrow(
      unknownOption('overides', 'overrides'),
    )
    await expect(run('true', { envPolicy: { inheirt: 'all' } as never })).rejects.toEqual(
      unknownOption('inheirt', 'inherit'),
    )
    expect(() => blockLangoExec('ls', { automationAvailable: true, strict: true } as never)).toThrow(
      unknownOption('strict'),
    )
    expect(() => installSignalCleanup({ signal: ['SIGTERM'] } as never)).toThrow(
      unknownOption('signal', 'signals'),
    )
    expect(() => installSignalCleanup({ signals: ['SIGTREM'] as never })).toThrow(
      expect.objectContaining({ code: 'EXEC_INVALID_OPTION', message: expect.stringContaining('signals') }),
    )
  })

  it('registry.start and startBackground refuse unknown keys before spawning', async () => {
    await using registry = new ProcessRegistry()
    const marker = join(dir, 'ran')
    await expect(registry.start(`touch ${marker}`, { timeout: 1000 } as never)).rejects.toEqual(
      unknownOption('timeout', 'timeoutMs'),
    )
    await expect(registry.start(`touch ${marker}`, { pty: { col: 80 } } as never)).rejects.toEqual(
      unknownOption('col', 'cols'),
    )
    await expect(startBackground(`touch ${marker}`, { registry, cdw: dir } as never)).rejects.toEqual(
      unknownOption('cdw', 'cwd'),
    )
    expect(registry.runningCount).toBe(0)
    expect(existsSync(marker)).toBe(false)
    // Every accepted key still passes.
    const started = await startBackground('echo ok', { registry, cwd: dir, timeoutMs: 10_000 })
    expect((await started.wait()).status).toBe('exited')
  })

  it('a background process refuses unknown wait options, and read takes no options object', async () => {
    await using registry = new ProcessRegistry()
    const process = await registry.start('echo ok')
    await expect(process.wait({ signl: AbortSignal.timeout(60_000) } as never)).rejects.toEqual(
      unknownOption('signl', 'signal'),
    )
    expect((await process.wait({ signal: new AbortController().signal })).status).toBe('exited')
    expect(() => process.read({ offset: 0 } as never)).toThrow(
      expect.objectContaining({ code: 'EXEC_INVALID_OPTION', message: expect.stringContaining('offset') }),
    )
  })

  it('RunLimiter.acquire refuses an unknown key before it takes a slot', async () => {
    const limiter = new RunLimiter({ maxRunning: 1 })
    await expect(limiter.acquire({ sigal: new AbortController().signal } as never)).rejects.toEqual(
      unknownOption('sigal', 'signal'),
    )
    expect(limiter.running).toBe(0)
    const release = await limiter.acquire({})
    release()
  })

  it("the Redactor's stream refuses an unknown key", () => {
    const redactor = new Redactor().add('sk-test-123456', 'api')
    expect(() => redactor.stream({ stripAnsii: true } as never)).toThrow(
      unknownOption('stripAnsii', 'stripAnsi'),
    )
    const stream = redactor.stream({ stripAnsi: true })
    expect(stream.push('\u001b[1mkey sk-test-123456\u001b[0m') + stream.flush()).toBe('key [secret:api]')
  })

  it('langoExecMessage refuses unknown keys, for an allowed command too', () => {
    const allowed = classifyLangoExec('ls')
    expect(() => langoExecMessage(allowed, { automationAvailble: true } as never)).toThrow(
      unknownOption('automationAvailble', 'automationAvailable'),
    )
    expect(() =>
      langoExecMessage(classifyLangoExec('lango cron list'), {
        automationAvailable: true,
        strict: 1,
      } as never),
    ).toThrow(unknownOption('strict'))
    expect(langoExecMessage(allowed, { automationAvailable: true })).toBe('')
  })
})
