import { describe, expect, it } from 'vitest'
import { formatDuration, parseDuration } from './duration.js'

describe('durations', () => {
  it('parses units and combinations, rejects the rest', () => {
    expect(parseDuration('500ms')).toBe(500)
    expect(parseDuration('1.5s')).toBe(1500)
    expect(parseDuration('1h30m')).toBe(5_400_000)
    expect(parseDuration('2d')).toBe(172_800_000)
    for (const bad of ['', '30', '5 x', 'm', '-1s', '1y', 'x'.repeat(40)])
      expect(parseDuration(bad)).toBeUndefined()
    expect([
      formatDuration(200),
      formatDuration(1500),
      formatDuration(300_000),
      formatDuration(5_400_000),
    ]).toEqual(['200ms', '1.5s', '5m', '1.5h'])
  })
})
