import { describe, expect, it } from 'vitest'
import { capText, excerpt, formatDuration } from './text.js'

describe('capText', () => {
  it('keeps short text and marks how much of a long text was dropped', () => {
    expect(capText('abc', 3)).toBe('abc')
    expect(capText('abcdef', 3)).toBe('abc\n[… truncated 3 characters]')
  })

  it('never splits a surrogate pair', () => {
    const capped = capText('ab😀cd', 3)
    expect(capped.startsWith('ab\n')).toBe(true)
    expect(capped).toContain('truncated 4 characters')
  })
})

describe('excerpt', () => {
  it('collapses whitespace and adds an ellipsis only when cut', () => {
    expect(excerpt('  a\n\n b\tc ', 10)).toBe('a b c')
    expect(excerpt('one two three', 7)).toBe('one two…')
  })
})

describe('formatDuration', () => {
  it.each([
    [0, '0ms'],
    [-5, '0ms'],
    [850, '850ms'],
    [2500, '2.5s'],
    [60_000, '1m'],
    [250_000, '4m 10s'],
    [30 * 60_000, '30m'],
    [5_400_000, '1h 30m'],
    [7_200_000, '2h'],
    [Number.POSITIVE_INFINITY, 'no limit'],
  ])('formats %s ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text)
  })
})
