import type { Clock, TimerHandle } from '../../src/ports.js'

/**
 * A clock that moves only when told. `advance(ms)` jumps to the new time first, then fires every
 * timer that fell due, oldest first (and those they set that are due too), so a callback sees the
 * time a process would after being suspended that long. An engine whose clock is not advanced is
 * a stalled process: its heartbeat and fence timers never fire.
 */
export class ManualClock implements Clock {
  #now: number
  #nextId = 1
  readonly #timers = new Map<number, { readonly at: number; readonly callback: () => void }>()

  constructor(start: number) {
    this.#now = start
  }

  now(): Date {
    return new Date(this.#now)
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const id = this.#nextId++
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), callback })
    return id
  }

  clearTimeout(handle: TimerHandle): void {
    if (typeof handle === 'number') this.#timers.delete(handle)
  }

  advance(ms: number): void {
    this.#now += ms
    for (;;) {
      let due: [number, { readonly at: number; readonly callback: () => void }] | undefined
      for (const entry of this.#timers) {
        if (entry[1].at <= this.#now && (due === undefined || entry[1].at < due[1].at)) due = entry
      }
      if (due === undefined) return
      this.#timers.delete(due[0])
      due[1].callback()
    }
  }
}
