/**
 * Bad options get `EXEC_INVALID_OPTION` naming the option and what is accepted, at once, instead of
 * a registry that times every process out, refuses every start, or a raw `TypeError` later (an
 * outside probe's findings). Through the public API, with real processes where one runs.
 */
import { describe, expect, it } from 'vitest'
import {
  blockLangoExec,
  classifyLangoExec,
  createEnvBuilder,
  ExecError,
  ProcessRegistry,
  run,
} from './index.js'

const invalid = (message: RegExp) =>
  expect.objectContaining({ code: 'EXEC_INVALID_OPTION', message: expect.stringMatching(message) })

describe('ProcessRegistry options', () => {
  it.each([
    [{ maxLifetimeMs: -1 }, /maxLifetimeMs must be a positive number of milliseconds up to 2147483647/],
    [{ maxLifetimeMs: 0 }, /maxLifetimeMs/],
    [{ maxLifetimeMs: 2 ** 40 }, /maxLifetimeMs/],
    [{ killGraceMs: Number.NaN }, /killGraceMs/],
    [{ maxRunning: 0 }, /maxRunning must be a whole number from 1 up, got 0/],
    [{ maxRunning: 1.5 }, /maxRunning must be a whole number from 1 up, got 1.5/],
    [{ maxRunning: Number.NaN }, /maxRunning/],
    [{ maxRetained: -1 }, /maxRetained must be a whole number from 0 up, got -1/],
    [{ unknownReferences: 'bogus' }, /unknownReferences must be "keep" or "refuse", got "bogus"/],
  ])('%o is refused at construction', (options, message) => {
    expect(() => new ProcessRegistry(options as never)).toThrow(invalid(message))
  })

  it('a valid registry still runs; read() refuses an offset that is not a byte count, and one past the end drops nothing', async () => {
    await using registry = new ProcessRegistry({ maxRunning: 1, maxRetained: 0, maxLifetimeMs: 10_000 })
    const process = await registry.start('echo hi')
    await process.wait()
    expect(process.read(0).output).toBe('hi\n')
    expect(() => process.read(Number.NaN)).toThrow(
      invalid(/offset must be a whole number of bytes from 0 up/),
    )
    expect(() => process.read(-1)).toThrow(invalid(/offset/))
    expect(() => process.read(0, 0)).toThrow(invalid(/maxBytes must be a whole number from 1 up/))
    expect(process.read(1e20)).toMatchObject({ output: '', droppedBytes: 0 })
  })
})

describe('run options', () => {
  // An outside probe: `envSource: 'bogus'` was taken for 'trusted' (PATH overridable, plain tokens
  // in credential-named keys), and a command over Linux's one-argument limit rejected with a raw E2BIG.
  it.each(['bogus', 'host', 'Agent'])('envSource %o is refused before anything runs', async (envSource) => {
    await expect(
      run('echo $PATH', { env: { PATH: '/tmp' }, envSource: envSource as never }),
    ).rejects.toMatchObject(invalid(/envSource must be "agent" or "trusted"/))
  })

  it.runIf(process.platform === 'linux')(
    'a command longer than one argument of a program may be on Linux is refused with the limit, in bytes',
    async () => {
      await expect(run(`: ${'日'.repeat(50_000)}`)).rejects.toMatchObject(
        invalid(/command must be at most 131071 bytes in UTF-8 .* got 150002/),
      )
      // Just under the limit still runs.
      expect(await run(`: ${'a'.repeat(131_000)}; echo ran`)).toMatchObject({ exitCode: 0, stdout: 'ran\n' })
    },
  )

  it("unknownReferences: 'refuse' without a secret store refuses every token before anything runs", async () => {
    await expect(run('echo {{secret:missing}}', { unknownReferences: 'refuse' })).rejects.toMatchObject({
      code: 'EXEC_SECRET_UNKNOWN',
      message: expect.stringContaining('no secret store was given'),
    })
    await expect(
      run('echo "$GH_TOKEN"', { unknownReferences: 'refuse', env: { GH_TOKEN: '{{secret:gh}}' } }),
    ).rejects.toMatchObject({ code: 'EXEC_SECRET_UNKNOWN' })
    // 'keep' (the default) still passes the token on as text.
    expect((await run('echo {{secret:missing}}')).stdout).toBe('{{secret:missing}}\n')
  })

  it('an unknown unknownReferences value and a signal that is not an AbortSignal are refused', async () => {
    await expect(run('true', { unknownReferences: 'bogus' as never })).rejects.toMatchObject(
      invalid(/unknownReferences must be "keep" or "refuse"/),
    )
    await expect(run('true', { signal: {} as never })).rejects.toMatchObject(
      invalid(/signal must be an AbortSignal/),
    )
  })

  it('an env policy with an unknown inherit mode or a deny list that is not a list is refused', () => {
    expect(() => createEnvBuilder({ inherit: 'bogus' as never })).toThrow(
      invalid(/inherit must be "core" or "all"/),
    )
    expect(() => createEnvBuilder({ deny: 'x' as never })).toThrow(invalid(/envPolicy.deny must be a list/))
  })
})

describe('the lango CLI guard', () => {
  it('refuses a command that is not a string, and an availability that is not booleans, with EXEC_INVALID_OPTION', () => {
    const refused = (call: () => unknown) => {
      try {
        call()
      } catch (error) {
        return error
      }
      return undefined
    }
    for (const command of [null, 42, undefined, ['lango']]) {
      const error = refused(() => blockLangoExec(command as never, { automationAvailable: true }))
      expect(ExecError.is(error) && error.code, String(command)).toBe('EXEC_INVALID_OPTION')
      expect((error as Error).message).toContain('takes the command line as a string')
      expect(refused(() => classifyLangoExec(command as never))).toMatchObject({
        code: 'EXEC_INVALID_OPTION',
      })
    }
    for (const options of [
      null,
      {},
      { automationAvailable: 'yes' },
      { automationAvailable: { cron: 1 } },
      { automationAvailable: { crons: true } },
    ]) {
      const error = refused(() => blockLangoExec('lango cron list', options as never))
      expect(ExecError.is(error) && error.code, JSON.stringify(options)).toBe('EXEC_INVALID_OPTION')
      expect((error as Error).message).toContain('automationAvailable')
    }
    // What is accepted still answers; a feature left out, or undefined, is off.
    expect(blockLangoExec('ls', { automationAvailable: { cron: true } })).toBe('')
    expect(blockLangoExec('ls', { automationAvailable: { cron: undefined } })).toBe('')
    expect(blockLangoExec('lango cron list', { automationAvailable: { cron: undefined } })).toContain(
      'Settings',
    )
    expect(blockLangoExec('lango cron list', { automationAvailable: { cron: true } })).toContain('cron_')
    expect(blockLangoExec('lango cron list', { automationAvailable: false })).toContain('Settings')
  })
})
