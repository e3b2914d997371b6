import type { Counter } from 'prom-client'

/**
 * The values of one caller-chosen label (job, workflow and model names) that a set of counters keeps
 * series for, the most recently used last. Past `max` values the least recently used one's series
 * are removed from every counter, so the exposition stays bounded whatever names agents and API
 * callers choose (a name per inline workflow, jobs renamed or removed on another server). A series
 * that comes back starts again at zero, which Prometheus' `rate()` and `increase()` read as a
 * counter reset.
 */
export class RecentLabels {
  readonly #values = new Map<string, true>()
  readonly #label: string
  readonly #max: number
  readonly #counters: readonly Counter<string>[]

  constructor(label: string, max: number, counters: readonly Counter<string>[]) {
    this.#label = label
    this.#max = max
    this.#counters = counters
  }

  /** Marks `value` as just used and returns it; forgets the least recently used value past `max`. */
  use(value: string): string {
    this.#values.delete(value)
    this.#values.set(value, true)
    if (this.#values.size > this.#max) {
      const oldest = this.#values.keys().next().value as string
      this.forget(oldest)
    }
    return value
  }

  /** Removes every series whose label is `value` (a removed job's, a renamed job's old name). */
  forget(value: string): void {
    this.#values.delete(value)
    for (const counter of this.#counters) {
      // `get()` reads the series synchronously for a counter without a `collect` callback; it is
      // typed as a promise because collect callbacks may be async.
      void Promise.resolve(counter.get()).then(({ values }) => {
        for (const { labels } of values) {
          if (labels[this.#label] === value && !this.#values.has(value)) counter.remove(labels)
        }
      })
    }
  }

  /** How many values have series now. */
  get size(): number {
    return this.#values.size
  }
}
