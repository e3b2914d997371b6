import { describe, expect, it } from 'vitest'
import { BUDGET_WINDOW_MS, RunBudget } from './run-budget.js'

const HOUR = 3_600_000

describe('RunBudget', () => {
  it('allows max starts in any window and says when the next one may start', () => {
    const budget = new RunBudget(3)
    budget.record(0)
    budget.record(HOUR)
    expect(budget.blockedUntil(2 * HOUR)).toBeUndefined()
    budget.record(2 * HOUR)
    expect(budget.used(2 * HOUR)).toBe(3)
    expect(budget.blockedUntil(3 * HOUR)).toBe(BUDGET_WINDOW_MS)
    expect(budget.blockedUntil(BUDGET_WINDOW_MS - 1)).toBe(BUDGET_WINDOW_MS)
    // The first start leaves the window at exactly one day.
    expect(budget.blockedUntil(BUDGET_WINDOW_MS)).toBeUndefined()
    expect(budget.used(BUDGET_WINDOW_MS)).toBe(2)
  })

  it('counts starts seeded from the store together with new ones, keeping at most max', () => {
    const budget = new RunBudget(2)
    budget.seed([5 * HOUR, HOUR, 3 * HOUR])
    expect(budget.used(6 * HOUR)).toBe(2)
    expect(budget.blockedUntil(6 * HOUR)).toBe(3 * HOUR + BUDGET_WINDOW_MS)
  })

  it('keeps order when a start is recorded late', () => {
    const budget = new RunBudget(2)
    budget.record(2 * HOUR)
    budget.record(HOUR)
    expect(budget.blockedUntil(3 * HOUR)).toBe(HOUR + BUDGET_WINDOW_MS)
  })

  it('is unlimited with Infinity and closed with 0; rejects a negative maximum', () => {
    const open = new RunBudget(Number.POSITIVE_INFINITY)
    for (let index = 0; index < 10_000; index += 1) open.record(index)
    expect(open.blockedUntil(10_000)).toBeUndefined()
    expect(new RunBudget(0).blockedUntil(0)).toBe(Number.POSITIVE_INFINITY)
    expect(() => new RunBudget(-1)).toThrow(RangeError)
    expect(() => new RunBudget(Number.NaN)).toThrow(RangeError)
  })

  it('stays bounded over many days of starts', () => {
    const budget = new RunBudget(100)
    for (let minute = 0; minute < 60 * 24 * 10; minute += 1) {
      const now = minute * 60_000
      if (budget.blockedUntil(now) === undefined) budget.record(now)
    }
    expect(budget.used(60 * 24 * 10 * 60_000)).toBeLessThanOrEqual(100)
  })
})
