import { afterEach, describe, expect, it, vi } from 'vitest'
import { ClockReader } from './clock-reader.js'
import { systemClock } from './system-clock.js'
import { FakeClock } from './testing/fake-clock.js'

afterEach(() => {
  vi.useRealTimers()
})

describe('ClockReader', () => {
  it('reads wall time on read(), monotonic time on first use within the reading', () => {
    let monoReads = 0
    const clock = new FakeClock(Date.UTC(2025, 0, 1))
    const counting = {
      now: () => clock.now(),
      setTimeout: clock.setTimeout.bind(clock),
      clearTimeout: clock.clearTimeout.bind(clock),
      monotonicNow: () => {
        monoReads += 1
        return clock.monotonicNow()
      },
    }
    const reader = new ClockReader(counting)
    expect(reader.read().wallMs).toBe(Date.UTC(2025, 0, 1))
    expect(monoReads).toBe(0)
    expect(reader.monoMs).toBe(0)
    expect(reader.monoMs).toBe(0)
    expect(monoReads).toBe(1)
    clock.advance(1500)
    clock.setTime(Date.UTC(2030, 0, 1))
    expect(reader.read()).toMatchObject({ wallMs: Date.UTC(2030, 0, 1), monoMs: 1500 })
    expect(monoReads).toBe(2)
  })

  it('current() keeps the reading until invalidate(), then reads again', () => {
    const clock = new FakeClock(0)
    const reader = new ClockReader(clock)
    reader.read()
    clock.advance(10)
    expect(reader.current().wallMs).toBe(0)
    reader.invalidate()
    expect(reader.current()).toMatchObject({ wallMs: 10, monoMs: 10 })
    clock.advance(5)
    expect(reader.current().wallMs).toBe(10)
  })

  it('gives NaN monotonic time for a clock without monotonicNow()', () => {
    const reader = new ClockReader({ now: () => new Date(5), setTimeout: () => 0, clearTimeout: () => {} })
    expect(reader.read()).toMatchObject({ wallMs: 5, monoMs: Number.NaN })
  })

  it('reads Date.now() and performance.now() for the system clock, fake timers installed later included', () => {
    const reader = new ClockReader(systemClock)
    reader.read()
    vi.useFakeTimers({ now: Date.UTC(2025, 0, 1) })
    expect(reader.read()).toMatchObject({ wallMs: Date.UTC(2025, 0, 1), monoMs: performance.now() })
    vi.advanceTimersByTime(250)
    vi.setSystemTime(Date.now() - 3_600_000)
    expect(reader.read()).toMatchObject({ wallMs: Date.now(), monoMs: performance.now() })
  })
})
