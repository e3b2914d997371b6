import { type Context, Hono } from 'hono'
import { streamSSE } from 'hono/streaming'
import type { App } from '../../app/app.js'
import type { EventHub, ServerEvent } from '../../events.js'

/** Options of {@link eventStream}. */
export interface EventStreamOptions {
  /** A comment line is sent after this much silence, so proxies and clients see a live stream. Default 15 s. */
  readonly heartbeatMs?: number
  /** Events waiting for a slow client at most; one more and the client is cut off. Default 1000. */
  readonly maxQueued?: number
  /** Ends the stream (server shutdown). */
  readonly signal?: AbortSignal
}

/**
 * Server-sent events, mounted at `/api/events`: `GET /api/events` ({@link eventStream}) over the
 * app's event hub.
 */
export function eventRoutes(app: App, options: EventStreamOptions = {}): Hono {
  const routes = new Hono()
  routes.get('/', (c) => eventStream(c, app.events, options))
  return routes
}

/**
 * `GET /api/events`: the hub's events as server-sent events, `event: <type>` and `data: <the
 * event's data as JSON>`. Each client has its own bounded queue: a client that reads too slowly
 * is dropped (its stream ends) instead of holding memory or slowing publishers.
 */
function eventStream(c: Context, events: EventHub, options: EventStreamOptions = {}): Response {
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const maxQueued = options.maxQueued ?? 1000
  return streamSSE(c, async (stream) => {
    const queue: ServerEvent[] = []
    let wake: (() => void) | undefined
    const notify = (): void => {
      const resolve = wake
      wake = undefined
      resolve?.()
    }
    let dropped = false
    // Subscribed before the first await: nothing published after the response starts is missed.
    const unsubscribe = events.subscribe((event) => {
      if (dropped) return
      if (queue.length >= maxQueued) {
        dropped = true
        queue.length = 0
        // Ends a write stuck on a client that does not read.
        stream.abort()
      } else {
        queue.push(event)
      }
      notify()
    })
    const signals = [c.req.raw.signal, ...(options.signal === undefined ? [] : [options.signal])]
    for (const signal of signals) signal.addEventListener('abort', notify)
    stream.onAbort(notify)
    const ended = (): boolean =>
      dropped || stream.aborted || stream.closed || signals.some((signal) => signal.aborted)
    try {
      await stream.write(`retry: 3000\n: connected\n\n`)
      while (!ended()) {
        const event = queue.shift()
        if (event === undefined) {
          const silent = await new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => resolve(true), heartbeatMs)
            wake = () => {
              clearTimeout(timer)
              resolve(false)
            }
          })
          if (silent && !ended()) await stream.write(': heartbeat\n\n')
          continue
        }
        const data = serialize(event)
        if (data !== undefined) await stream.writeSSE({ event: event.type, data })
      }
    } finally {
      unsubscribe()
      for (const signal of signals) signal.removeEventListener('abort', notify)
      notify()
    }
  })
}

/** The event's data as one line of JSON; an event that is not JSON (a bigint, a cycle) is skipped. */
function serialize(event: ServerEvent): string | undefined {
  try {
    return JSON.stringify(event.data)
  } catch {
    return undefined
  }
}
