import { describe, expect, it } from 'vitest'
import { CronError } from './errors.js'

describe('CronError (ADR 0006 error shape)', () => {
  it('keeps code, message, data and cause; serialises only name, code, message and data', () => {
    const cause = new Error('SQLITE_BUSY: database is locked at /srv/secret/path.db')
    const error = new CronError('CRON_JOB_NOT_FOUND', 'Job not found: no job has this id or name.', {
      cause,
      data: { id: 'news' },
    })
    expect(error).toBeInstanceOf(Error)
    expect(error.name).toBe('CronError')
    expect(error.code).toBe('CRON_JOB_NOT_FOUND')
    expect(error.cause).toBe(cause)
    expect(error.toJSON()).toEqual({
      name: 'CronError',
      code: 'CRON_JOB_NOT_FOUND',
      message: 'Job not found: no job has this id or name.',
      data: { id: 'news' },
    })
    const text = JSON.stringify(error)
    expect(JSON.parse(text)).toEqual(error.toJSON())
    expect(text).not.toMatch(/stack|cause|SQLITE_BUSY|secret/)
  })

  it('omits data when there is none, and data is frozen', () => {
    const bare = new CronError('CRON_NOT_RUNNING', 'The scheduler is not running.')
    expect(bare.toJSON()).toEqual({
      name: 'CronError',
      code: 'CRON_NOT_RUNNING',
      message: 'The scheduler is not running.',
    })
    expect('data' in bare.toJSON()).toBe(false)
    const withData = new CronError('CRON_TOO_MANY_JOBS', 'Too many.', { data: { maxJobs: 5 } })
    expect(Object.isFrozen(withData.data)).toBe(true)
  })

  it('is() recognises a CronError by brand (another copy of the package), not a look-alike', () => {
    const foreign = Object.assign(new Error('x'), { name: 'CronError', [Symbol.for('lango.error')]: true })
    expect(CronError.is(foreign)).toBe(true)
    expect(CronError.is(Object.assign(new Error('x'), { name: 'CronError' }))).toBe(false)
    expect(CronError.is(new CronError('CRON_INVALID_INPUT', 'bad'))).toBe(true)
    expect(CronError.is('CronError')).toBe(false)
  })
})
