import type { Clock } from '@lango/cron'

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

/**
 * A signal that aborts with a `TimeoutError` after `ms`, and `clear()` to drop its timer. Use it
 * instead of `AbortSignal.timeout(ms)` inside `AbortSignal.any([...])`: on Node 20 the composite
 * holds its sources weakly, so a timeout signal nothing else references can be garbage-collected
 * and never fire (nodejs/node#57736) — a start that should give up after 30 s then waits for ever.
 * Here the timer holds the controller.
 */
export function timeoutSignal(ms: number): { readonly signal: AbortSignal; clear(): void } {
  const controller = new AbortController()
  const timer = setTimeout(
    () => controller.abort(new DOMException(`the operation timed out after ${ms} ms`, 'TimeoutError')),
    ms,
  )
  timer.unref()
  return { signal: controller.signal, clear: () => clearTimeout(timer) }
}

/** `promise`, or a rejection once `ms` have passed without an answer (the operation itself goes on). */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer))
}
