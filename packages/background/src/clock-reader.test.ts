import { afterEach, describe, expect, it, vi } from 'vitest'
import { ClockReader, OFFSET_TRUST_MS } from './clock-reader.js'
import { systemClock } from './system-clock.js'
import { FakeClock } from './testing/fake-clock.js'

afterEach(() => {
  vi.useRealTimers()
})

describe('ClockReader', () => {
  it('reads an injected clock as it is, wall and monotonic time on every reading', () => {
    const clock = new FakeClock(Date.UTC(2025, 0, 1))
    const reader = new ClockReader(clock)
    expect(reader.read()).toMatchObject({ wallMs: Date.UTC(2025, 0, 1), monoMs: 0 })
    clock.advance(1500)
    clock.setTime(Date.UTC(2030, 0, 1))
    expect(reader.read()).toMatchObject({ wallMs: Date.UTC(2030, 0, 1), monoMs: 1500 })
  })

  it('gives NaN monotonic time for a clock without monotonicNow()', () => {
    const reader = new ClockReader({ now: () => new Date(5), setTimeout: () => 0, clearTimeout: () => {} })
    expect(reader.read()).toMatchObject({ wallMs: 5, monoMs: Number.NaN })
  })

  it('derives monotonic time from Date.now() for the system clock, in step with performance.now()', () => {
    vi.useFakeTimers({ now: Date.UTC(2025, 0, 1) })
    const reader = new ClockReader(systemClock)
    const first = { ...reader.read() }
    expect(first.wallMs).toBe(Date.UTC(2025, 0, 1))
    expect(first.monoMs).toBe(performance.now())
    for (const step of [1, 250, OFFSET_TRUST_MS, 60_000]) {
      vi.advanceTimersByTime(step)
      const reading = reader.read()
      expect(reading.wallMs).toBe(Date.now())
      expect(reading.monoMs).toBe(performance.now())
    }
  })

  it('follows a wall-clock step at once when it goes back, and within OFFSET_TRUST_MS when it goes forward', () => {
    vi.useFakeTimers({ now: Date.UTC(2025, 0, 1) })
    const reader = new ClockReader(systemClock)
    reader.read()
    // Back by an hour: caught on the next reading; monotonic time does not move back.
    vi.setSystemTime(Date.now() - 3_600_000)
    expect(reader.read().monoMs).toBe(performance.now())
    // Forward by 300 ms: wall time shows it at once, monotonic time is off by at most that...
    vi.setSystemTime(Date.now() + 300)
    const skewed = reader.read()
    expect(skewed.wallMs).toBe(Date.now())
    expect(Math.abs(skewed.monoMs - performance.now())).toBeLessThanOrEqual(300)
    // ...until the offset is re-read, at most OFFSET_TRUST_MS later.
    vi.advanceTimersByTime(OFFSET_TRUST_MS)
    expect(reader.read().monoMs).toBe(performance.now())
  })
})
