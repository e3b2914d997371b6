import type { BackgroundEventName, BackgroundEvents, BackgroundListener } from '../events.js'

/** Anything with the manager's `on` method. */
export interface EventSource {
  on<E extends BackgroundEventName>(event: E, listener: BackgroundListener<E>): () => void
}

/**
 * Resolves with the payload of the next `event` (that passes `filter`, if given); rejects with
 * `signal.reason` if `signal` aborts first. Subscribe before causing the event.
 *
 * @example
 * const ended = nextEvent(manager, 'task:end', { filter: (task) => task.id === id })
 * manager.cancel(id)
 * expect((await ended).status).toBe('cancelled')
 */
export function nextEvent<E extends BackgroundEventName>(
  source: EventSource,
  event: E,
  options?: { readonly filter?: (payload: BackgroundEvents[E]) => boolean; readonly signal?: AbortSignal },
): Promise<BackgroundEvents[E]> {
  const signal = options?.signal
  const filter = options?.filter
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason)
      return
    }
    const onAbort = (): void => {
      unsubscribe()
      reject(signal?.reason)
    }
    const unsubscribe = source.on(event, (payload) => {
      if (filter !== undefined && !filter(payload)) return
      unsubscribe()
      signal?.removeEventListener('abort', onAbort)
      resolve(payload)
    })
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
