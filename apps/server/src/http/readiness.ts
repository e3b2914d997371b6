import type { MiddlewareHandler } from 'hono'
import type { App } from '../app/app.js'
import { errorResponse } from './responses.js'

/** Whether the server's services run, as `GET /healthz` and the {@link Readiness.gate} see it. */
export interface Readiness {
  /** True while the services run; a server once ready that is not any more is `stopping`. */
  isReady(): boolean
  /** What a server that is not ready is doing: `starting` until it first was ready, then `stopping`. */
  notReadyStatus(): 'starting' | 'stopping'
  /** Answers 503 `SERVER_NOT_READY` (with `Retry-After: 1`) while the services do not run. */
  readonly gate: MiddlewareHandler
}

/** The {@link Readiness} of `app`; `signal` (server shutdown) aborted means `stopping`. */
export function createReadiness(app: Pick<App, 'ready'>, signal: AbortSignal | undefined): Readiness {
  let wasReady = false
  const isReady = (): boolean => {
    if (!app.ready) return false
    wasReady = true
    return true
  }
  const notReadyStatus = (): 'starting' | 'stopping' =>
    wasReady || signal?.aborted === true ? 'stopping' : 'starting'
  return {
    isReady,
    notReadyStatus,
    gate: async (c, next) => {
      if (!isReady()) {
        c.header('Retry-After', '1')
        return errorResponse(c, 'SERVER_NOT_READY', `the server is ${notReadyStatus()}; try again shortly`)
      }
      return next()
    },
  }
}
