import { describe, expect, it } from 'vitest'
import { BackgroundError, PermanentError, toError } from './errors.js'

describe('BackgroundError', () => {
  it('carries code, data and cause, and is recognised across package copies by its brand', () => {
    const cause = new Error('root')
    const error = new BackgroundError('BACKGROUND_QUEUE_FULL', 'full', { cause, data: { maxQueuedTasks: 1 } })
    expect(error).toMatchObject({ name: 'BackgroundError', code: 'BACKGROUND_QUEUE_FULL', cause })
    expect(error.data).toEqual({ maxQueuedTasks: 1 })
    expect(BackgroundError.is(error)).toBe(true)

    const fromOtherCopy = Object.assign(new Error('x'), {
      name: 'BackgroundError',
      [Symbol.for('lango.error')]: true,
    })
    expect(BackgroundError.is(fromOtherCopy)).toBe(true)
    expect(BackgroundError.is(new Error('plain'))).toBe(false)
    expect(BackgroundError.is(new PermanentError('p'))).toBe(false)
    expect(BackgroundError.is(null)).toBe(false)
  })
})

describe('BackgroundError.toJSON', () => {
  it('serialises name, code, message and data, never cause or stack', () => {
    const cause = new Error('secret detail from the runner')
    const error = new BackgroundError('BACKGROUND_TASK_FAILED', 'Task t1 failed', {
      cause,
      data: { taskId: 't1' },
    })
    expect(error.toJSON()).toEqual({
      name: 'BackgroundError',
      code: 'BACKGROUND_TASK_FAILED',
      message: 'Task t1 failed',
      data: { taskId: 't1' },
    })
    const text = JSON.stringify({ error })
    expect(JSON.parse(text)).toEqual({ error: error.toJSON() })
    expect(text).not.toContain('secret detail')
    expect(text).not.toContain('stack')
    expect(error.cause).toBe(cause)
  })

  it('leaves data out when there is none', () => {
    const json = new BackgroundError('BACKGROUND_STOPPED', 'The background manager has stopped').toJSON()
    expect(json).toEqual({
      name: 'BackgroundError',
      code: 'BACKGROUND_STOPPED',
      message: 'The background manager has stopped',
    })
    expect(Object.keys(json)).toEqual(['name', 'code', 'message'])
  })
})

describe('PermanentError', () => {
  it('is recognised by its brand', () => {
    expect(PermanentError.is(new PermanentError('gone'))).toBe(true)
    expect(PermanentError.is(new PermanentError('gone', { cause: new Error('404') }))).toBe(true)
    expect(new PermanentError('gone', { cause: 'x' }).cause).toBe('x')
    expect(PermanentError.is(new Error('gone'))).toBe(false)
    expect(new PermanentError('gone')).toBeInstanceOf(Error)
  })
})

describe('toError', () => {
  it('returns errors unchanged and wraps anything else, keeping it as cause', () => {
    const error = new Error('e')
    expect(toError(error)).toBe(error)
    expect(toError('text')).toMatchObject({ message: 'text', cause: 'text' })
    expect(toError({ code: 1 }).message).toBe('{"code":1}')
    expect(toError(undefined).message).toBe('undefined')
    const circular: Record<string, unknown> = {}
    circular.self = circular
    expect(toError(circular).message).toBe('[object Object]')
  })
})
