import type { Clock } from './ports.js'

/**
 * The real clock. Each member is an arrow that reads the global at call time, so
 * `vi.useFakeTimers()` installed after import still takes effect.
 */
export const systemClock: Clock = Object.freeze({
  now: () => new Date(),
  setTimeout: (callback: () => void, ms: number) => globalThis.setTimeout(callback, ms),
  clearTimeout: (handle: unknown) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>),
})

/** Lets an idle timer not keep the process alive, when the handle supports it (Node timers do). */
export function unrefTimer(handle: unknown): void {
  if (typeof handle === 'object' && handle !== null && 'unref' in handle) {
    const unref = (handle as { unref?: unknown }).unref
    if (typeof unref === 'function') unref.call(handle)
  }
}
