import { describe, expect, expectTypeOf, it } from 'vitest'
import { recordingLogger } from './__fixtures__/helpers.js'
import { ExecError, type Logger, ProcessRegistry, run, silentLogger } from './index.js'

describe('one port vocabulary (issue 10, ADR 0006)', () => {
  it('Logger is the object shape {debug, info, warn, error}(message, fields?)', async () => {
    expectTypeOf<Logger['info']>().toEqualTypeOf<
      (message: string, fields?: Readonly<Record<string, unknown>>) => void
    >()
    expect(Object.keys(silentLogger).sort()).toEqual(['debug', 'error', 'info', 'warn'])
    const logger = recordingLogger()
    await run('echo hi', { logger, env: { GREETING: 'value-xyz-123' } })
    expect(logger.lines.map(([level, message]) => `${level} ${message}`)).toEqual([
      'debug exec:start',
      'debug exec:end',
    ])
    expect(JSON.stringify(logger.lines)).toContain('echo hi')
    expect(JSON.stringify(logger.lines)).not.toContain('value-xyz-123')
    await using registry = new ProcessRegistry({ logger })
    await (await registry.start('true')).wait()
    expect(
      logger.lines.some(([level, message]) => level === 'info' && message === 'exec:background:start'),
    ).toBe(true)
  })

  it('ExecError.toJSON() is {name, code, message, data?}: never cause or stack', () => {
    const withData = new ExecError('EXEC_ENV_REJECTED', 'env override "X" rejected', {
      cause: new Error('inner detail'),
      data: { name: 'X' },
    })
    expect(withData.toJSON()).toEqual({
      name: 'ExecError',
      code: 'EXEC_ENV_REJECTED',
      message: 'env override "X" rejected',
      data: { name: 'X' },
    })
    expect(JSON.parse(JSON.stringify(withData))).toEqual(withData.toJSON())
    expect(JSON.stringify(withData)).not.toContain('inner detail')
    expect(new ExecError('EXEC_PROCESS_NOT_FOUND', 'no process').toJSON()).toEqual({
      name: 'ExecError',
      code: 'EXEC_PROCESS_NOT_FOUND',
      message: 'no process',
    })
    expect(withData.cause).toBeInstanceOf(Error)
  })
})
