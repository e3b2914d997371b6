import { describe, expect, it } from 'vitest'
import { optionKeys } from './index.js'

describe('optionKeys', () => {
  const check = optionKeys('run options', ['cwd', 'timeoutMs', 'maxOutputBytes'])

  it('passes known keys, inherited keys and what is not an object', () => {
    expect(check({ cwd: '/tmp', timeoutMs: 5 })).toBeUndefined()
    expect(check(Object.create({ stray: 1 }))).toBeUndefined()
    expect(check(undefined)).toBeUndefined()
    expect(check('text')).toBeUndefined()
  })

  it('names the first unknown key, the closest accepted one and every accepted key', () => {
    expect(check({ cwd: '/tmp', timoutMs: 5 })).toEqual({
      key: 'timoutMs',
      suggestion: 'timeoutMs',
      accepted: ['cwd', 'timeoutMs', 'maxOutputBytes'],
      message:
        'unknown option "timoutMs" in run options (did you mean "timeoutMs"?); accepted: cwd, timeoutMs, maxOutputBytes',
    })
    // Case is ignored and neighbours swapped count as one edit; nothing close suggests nothing.
    expect(check({ MAXOUTPUTBYTSE: 1 })?.suggestion).toBe('maxOutputBytes')
    expect(check({ colour: true })).toMatchObject({ key: 'colour', suggestion: undefined })
    expect(check({ colour: true })?.message).toBe(
      'unknown option "colour" in run options; accepted: cwd, timeoutMs, maxOutputBytes',
    )
  })

  it('cuts a long key to 64 characters in what it reports', () => {
    expect(check({ ['x'.repeat(500)]: 1 })?.key).toHaveLength(64)
  })
})
