import { BackgroundError } from './errors.js'
import type { TaskId, TaskSnapshot } from './task.js'

/** Events a `BackgroundManager` emits, with their payloads. Listeners run synchronously. */
export interface BackgroundEvents {
  /** A task was accepted and queued. */
  'task:submit': TaskSnapshot
  /** A task got a slot and its runner was called. */
  'task:start': TaskSnapshot
  /** A task ended (`done`, `failed` or `cancelled`) and freed its slot. */
  'task:end': TaskSnapshot
  /** A notice could not be delivered. The task's status is unaffected. */
  'notify:error': { readonly taskId: TaskId; readonly channel: string; readonly error: BackgroundError }
}

/** The name of a `BackgroundEvents` event. */
export type BackgroundEventName = keyof BackgroundEvents

/** A listener for one event. */
export type BackgroundListener<E extends BackgroundEventName> = (payload: BackgroundEvents[E]) => void

/** A minimal typed emitter; a throwing listener is reported and never breaks the manager. */
export class Emitter {
  /**
   * Listener arrays are replaced, never mutated (copy on write), so `emit` can iterate one without
   * copying it and (un)subscribing inside a listener is safe.
   */
  readonly #listeners: { [E in BackgroundEventName]: ReadonlyArray<BackgroundListener<E>> } = {
    'task:submit': [],
    'task:start': [],
    'task:end': [],
    'notify:error': [],
  }
  readonly #onListenerError: (event: BackgroundEventName, error: unknown) => void

  constructor(onListenerError: (event: BackgroundEventName, error: unknown) => void) {
    this.#onListenerError = onListenerError
  }

  on<E extends BackgroundEventName>(event: E, listener: BackgroundListener<E>): () => void {
    const listeners = this.#listeners as unknown as Record<E, ReadonlyArray<BackgroundListener<E>>>
    if (!Object.hasOwn(listeners, event)) {
      throw new BackgroundError(
        'BACKGROUND_INVALID_INPUT',
        `Unknown background event: ${String(event).slice(0, 40)}`,
        {
          data: { field: 'event' },
        },
      )
    }
    listeners[event] = [...listeners[event], listener]
    let subscribed = true
    return () => {
      if (!subscribed) return
      subscribed = false
      const current = listeners[event]
      const index = current.indexOf(listener)
      if (index >= 0) listeners[event] = [...current.slice(0, index), ...current.slice(index + 1)]
    }
  }

  has(event: BackgroundEventName): boolean {
    return this.#listeners[event].length > 0
  }

  emit<E extends BackgroundEventName>(event: E, payload: BackgroundEvents[E]): void {
    const listeners = this.#listeners[event] as ReadonlyArray<BackgroundListener<E>>
    for (let index = 0; index < listeners.length; index += 1) {
      try {
        ;(listeners[index] as BackgroundListener<E>)(payload)
      } catch (error) {
        this.#onListenerError(event, error)
      }
    }
  }
}
