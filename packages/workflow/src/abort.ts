import type { Clock } from './ports.js'

/**
 * Settles with `promise`, or rejects with `signal.reason` as soon as `signal` aborts, whichever is
 * first (the work itself is not stopped; a late rejection of `promise` is swallowed, the caller has
 * moved on). Without a signal, `promise` itself. Removes its listener.
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise
  if (signal.aborted) {
    promise.catch(() => {})
    return Promise.reject(signal.reason)
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      promise.catch(() => {})
      reject(signal.reason)
    }
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}

/** Waits `ms` on `clock`; rejects with `signal.reason` (and clears the timer) if `signal` aborts first. */
export function sleep(
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  signal?.throwIfAborted()
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clock.clearTimeout(handle)
      reject(signal?.reason)
    }
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** An AbortController that also aborts when `parent` does; `dispose()` detaches it. */
export function childController(parent: AbortSignal): { controller: AbortController; dispose(): void } {
  const controller = new AbortController()
  if (parent.aborted) {
    controller.abort(parent.reason)
    return { controller, dispose: () => {} }
  }
  const onAbort = () => controller.abort(parent.reason)
  parent.addEventListener('abort', onAbort, { once: true })
  return { controller, dispose: () => parent.removeEventListener('abort', onAbort) }
}
