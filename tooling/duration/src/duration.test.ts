import { describe, expect, it } from 'vitest'
import { DURATION_FORMS, durationProblemMessage, formatDuration, readDuration } from './index.js'
import { DURATION_TABLE } from './table.js'

describe('readDuration', () => {
  it.each(DURATION_TABLE)('reads $input', (row) => {
    const reading = readDuration(row.input)
    if ('milliseconds' in row) expect(reading).toEqual({ ok: true, milliseconds: row.milliseconds })
    else expect(reading).toEqual({ ok: false, problem: row.problem })
  })

  it('reads every unit in any case, zero, and whole milliseconds only', () => {
    expect(readDuration('1ms')).toEqual({ ok: true, milliseconds: 1 })
    expect(readDuration('0s')).toEqual({ ok: true, milliseconds: 0 })
    expect(readDuration('2D 3H 4M 5S 6MS')).toEqual({
      ok: true,
      milliseconds: 2 * 86_400_000 + 3 * 3_600_000 + 4 * 60_000 + 5 * 1000 + 6,
    })
    // 0.5 ms rounds half up; 0.4 ms down: never a fraction (PostgreSQL bigint columns refuse them).
    expect(readDuration('0.5ms')).toEqual({ ok: true, milliseconds: 1 })
    expect(readDuration('0.4ms')).toEqual({ ok: true, milliseconds: 0 })
    // Exact where floating point is not: 1.0005 × 1000 is 1000.4999… in doubles.
    expect(readDuration('1.0005s')).toEqual({ ok: true, milliseconds: 1001 })
    expect(readDuration('')).toEqual({ ok: false, problem: 'empty' })
    expect(readDuration('   ')).toEqual({ ok: false, problem: 'empty' })
    expect(readDuration('@every 5m')).toEqual({ ok: false, problem: 'not-a-duration' })
    expect(readDuration('１０m')).toEqual({ ok: false, problem: 'not-a-duration' })
    expect(readDuration(600 as unknown as string)).toEqual({ ok: false, problem: 'not-a-duration' })
  })

  it('is self-contained, so the dashboard can embed its source', () => {
    const copy = new Function(`return (${String(readDuration)})`)() as typeof readDuration
    for (const row of DURATION_TABLE) expect(copy(row.input)).toEqual(readDuration(row.input))
  })
})

describe('durationProblemMessage', () => {
  it('says what to write, quoting only the digits of a bare number', () => {
    expect(durationProblemMessage(' 600 ', 'unit-missing')).toBe(
      `has no unit: write "600s" for seconds or "600ms" for milliseconds (a duration is ${DURATION_FORMS})`,
    )
    expect(durationProblemMessage('ten minutes', 'not-a-duration')).toBe(
      `is not a duration; a duration is ${DURATION_FORMS}`,
    )
  })

  it('suggests no "0s" for a bare zero, which most fields would refuse next (an outside probe)', () => {
    for (const zero of ['0', ' 00 ', '0.0'])
      expect(durationProblemMessage(zero, 'unit-missing')).toBe(
        `has no unit; a duration is ${DURATION_FORMS}`,
      )
  })
})

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [500, '500ms'],
    [90_000, '1m30s'],
    [90_500, '1m30s500ms'],
    [5_400_000, '1h30m'],
    [86_400_000, '1d'],
    [691_200_000, '8d'],
  ])('%d → %s, which reads back to the same milliseconds', (milliseconds, text) => {
    expect(formatDuration(milliseconds)).toBe(text)
    expect(readDuration(text)).toEqual({ ok: true, milliseconds })
  })
})
