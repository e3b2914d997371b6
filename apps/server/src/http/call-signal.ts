/**
 * A signal for one call that aborts with the request (the client went away) or the server's
 * shutdown signal; `detachRequest` lets the call outlive its request (a pending approval).
 */
export function callSignal(
  request: AbortSignal,
  shutdown: AbortSignal | undefined,
): { readonly signal: AbortSignal; detachRequest(): void; dispose(): void } {
  const controller = new AbortController()
  const onRequestAbort = (): void => controller.abort(request.reason)
  const onShutdown = (): void => controller.abort(shutdown?.reason)
  if (request.aborted) onRequestAbort()
  else request.addEventListener('abort', onRequestAbort, { once: true })
  if (shutdown?.aborted === true) onShutdown()
  else shutdown?.addEventListener('abort', onShutdown, { once: true })
  const detachRequest = (): void => request.removeEventListener('abort', onRequestAbort)
  return {
    signal: controller.signal,
    detachRequest,
    dispose() {
      detachRequest()
      shutdown?.removeEventListener('abort', onShutdown)
    },
  }
}
