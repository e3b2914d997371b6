import { describe, expect, it } from 'vitest'
import { BUDGET_WINDOW_MS } from './run-budget.js'
import { TOKEN_BUCKET_MS, TokenBudget } from './token-budget.js'

const MINUTE = 60_000
const HOUR = 3_600_000

describe('TokenBudget', () => {
  it('blocks once the tokens of the last 24 hours reach the maximum, until enough of them leave', () => {
    const budget = new TokenBudget(1000)
    budget.record(HOUR + 30_000, 400)
    budget.record(2 * HOUR, 400)
    expect(budget.blockedUntil(2 * HOUR)).toBeUndefined()
    budget.record(3 * HOUR, 300)
    expect(budget.used(3 * HOUR)).toBe(1100)
    // The first 400 leave a day after the end of their minute; then 700 < 1000.
    expect(budget.blockedUntil(3 * HOUR)).toBe(HOUR + MINUTE + BUDGET_WINDOW_MS)
    expect(budget.blockedUntil(HOUR + MINUTE + BUDGET_WINDOW_MS - 1)).toBe(HOUR + MINUTE + BUDGET_WINDOW_MS)
    expect(budget.blockedUntil(HOUR + MINUTE + BUDGET_WINDOW_MS)).toBeUndefined()
    expect(budget.used(HOUR + MINUTE + BUDGET_WINDOW_MS)).toBe(700)
  })

  it('reaching the maximum exactly blocks; a large run may need several older ones to leave', () => {
    const budget = new TokenBudget(100)
    budget.record(0, 30)
    budget.record(MINUTE, 30)
    budget.record(2 * MINUTE, 40)
    expect(budget.blockedUntil(3 * MINUTE)).toBe(MINUTE + BUDGET_WINDOW_MS)
    budget.record(3 * MINUTE, 500)
    // 600 counted: 30, 30 and 40 must all leave, and the 500 too, before it is below 100.
    expect(budget.blockedUntil(4 * MINUTE)).toBe(4 * MINUTE + BUDGET_WINDOW_MS)
  })

  it('adds totals seeded from the store to its own records, in any order, per minute', () => {
    const budget = new TokenBudget(1000)
    budget.seed([
      { at: 5 * MINUTE, tokens: 300 },
      { at: 2 * MINUTE, tokens: 500 },
    ])
    budget.record(2 * MINUTE + 59_999, 250)
    budget.record(MINUTE, 1)
    expect(budget.used(6 * MINUTE)).toBe(1051)
    // 1 leaves first (minute 1), then 750 (minute 2): 300 is left.
    expect(budget.blockedUntil(6 * MINUTE)).toBe(3 * MINUTE + BUDGET_WINDOW_MS)
    expect(budget.seedSince(BUDGET_WINDOW_MS + HOUR)).toBe(HOUR - TOKEN_BUCKET_MS)
  })

  it('is unlimited with Infinity and closed with 0; rejects a negative maximum; ignores runs without tokens', () => {
    const open = new TokenBudget(Number.POSITIVE_INFINITY)
    open.record(0, Number.MAX_SAFE_INTEGER)
    expect(open.blockedUntil(0)).toBeUndefined()
    expect(new TokenBudget(0).blockedUntil(0)).toBe(Number.POSITIVE_INFINITY)
    expect(() => new TokenBudget(-1)).toThrow(RangeError)
    expect(() => new TokenBudget(Number.NaN)).toThrow(RangeError)
    const budget = new TokenBudget(10)
    budget.record(0, 0)
    budget.record(0, Number.NaN)
    expect(budget.used(0)).toBe(0)
  })

  it('stays bounded to one count per minute of the window over many days of runs', () => {
    const budget = new TokenBudget(Number.MAX_SAFE_INTEGER)
    for (let second = 0; second < 3 * 86_400; second += 7) budget.record(second * 1000, 3)
    const now = 3 * 86_400_000
    // Every token of the last day (and the minute that straddles its start) is still counted.
    const perDay = Math.ceil((BUDGET_WINDOW_MS + MINUTE) / 7000) * 3
    expect(budget.used(now)).toBeLessThanOrEqual(perDay)
    expect(budget.used(now)).toBeGreaterThanOrEqual(Math.floor(BUDGET_WINDOW_MS / 7000) * 3)
  })
})
