import type { Clock } from './ports.js'

/**
 * The real clock. Each member is an arrow that reads the global at call time, so
 * `vi.useFakeTimers()` installed after import still takes effect.
 */
export const systemClock: Clock = Object.freeze({
  now: () => new Date(),
  setTimeout: (callback: () => void, ms: number) => globalThis.setTimeout(callback, ms),
  clearTimeout: (handle: unknown) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>),
  monotonicNow: () => globalThis.performance.now(),
})
