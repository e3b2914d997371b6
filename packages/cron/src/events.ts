/** A listener-returning subscription: call it to unsubscribe. */
export type Unsubscribe = () => void

/** Small typed event emitter; a throwing listener is reported to `onListenerError`, never rethrown. */
export class TypedEmitter<TEvents extends { readonly [K in keyof TEvents]: unknown }> {
  readonly #listeners = new Map<keyof TEvents, Set<(payload: never) => void>>()
  readonly #onListenerError: (error: unknown) => void

  constructor(onListenerError: (error: unknown) => void = () => {}) {
    this.#onListenerError = onListenerError
  }

  /**
   * Subscribes to an event; returns the unsubscribe function.
   * @deprecated As `scheduler.events.on(...)`: subscribe with `cron.on(...)` ({@link CronService.on})
   * or `scheduler.on(...)`, the `on(event, listener) => unsubscribe` that workflow's engine and
   * background's manager have too. Still works for one release.
   */
  on<K extends keyof TEvents>(event: K, listener: (payload: TEvents[K]) => void): Unsubscribe {
    let set = this.#listeners.get(event)
    if (set === undefined) {
      set = new Set()
      this.#listeners.set(event, set)
    }
    set.add(listener as (payload: never) => void)
    return () => set.delete(listener as (payload: never) => void)
  }

  /** Resolves with the next payload of `event` that satisfies `predicate`. */
  next<K extends keyof TEvents>(event: K, predicate?: (payload: TEvents[K]) => boolean): Promise<TEvents[K]> {
    return new Promise((resolve) => {
      const unsubscribe = this.on(event, (payload) => {
        if (predicate !== undefined && !predicate(payload)) return
        unsubscribe()
        resolve(payload)
      })
    })
  }

  /** Delivers `payload` to every listener of `event`. */
  emit<K extends keyof TEvents>(event: K, payload: TEvents[K]): void {
    const set = this.#listeners.get(event)
    if (set === undefined) return
    for (const listener of [...set]) {
      try {
        ;(listener as (payload: TEvents[K]) => void)(payload)
      } catch (error) {
        this.#onListenerError(error)
      }
    }
  }
}
