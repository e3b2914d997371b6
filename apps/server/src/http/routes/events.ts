import { type Context, Hono } from 'hono'
import { type SSEStreamingApi, streamSSE } from 'hono/streaming'
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
  const shutdown = shutdownWatch(options.signal)
  routes.get('/', (c) => eventStream(c, app.events, options, shutdown))
  return routes
}

/** The server's shutdown, watched once for every stream (no listener per client on one shared signal). */
interface ShutdownWatch {
  readonly aborted: () => boolean
  /** Calls `notify` on shutdown until the returned function is called. */
  readonly watch: (notify: () => void) => () => void
}

function shutdownWatch(signal: AbortSignal | undefined): ShutdownWatch {
  const waiting = new Set<() => void>()
  signal?.addEventListener(
    'abort',
    () => {
      for (const notify of waiting) notify()
    },
    { once: true },
  )
  return {
    aborted: () => signal?.aborted === true,
    watch(notify) {
      waiting.add(notify)
      return () => waiting.delete(notify)
    },
  }
}

/**
 * The events of the stream itself (not the hub's: `SERVER_EVENTS` in src/events.ts), with the fields of their
 * data: `reset` when the missed events cannot be replayed, `ready` once the stream is live.
 */
export const STREAM_EVENTS = {
  ready: ['replayed'],
  reset: ['reason', 'last_event_id'],
} as const satisfies Readonly<Record<string, readonly string[]>>

/** A `Last-Event-ID` longer than this is not one of ours (and is not echoed back). */
const MAX_LAST_EVENT_ID = 64

/**
 * `GET /api/events`: the hub's events as server-sent events, `id: <id>`, `event: <type>` and
 * `data: <the event's data as JSON>`. A client that sends `Last-Event-ID` (as EventSource does when
 * it reconnects; or `?last_event_id=`, which a page can set on its first connection) first gets the
 * events it missed, if the hub's ring still holds them all, or else one `reset` event saying they
 * were lost. Then, and on every connection, a `ready` event whose id is the newest: from there on
 * the stream is live. Each client has its own bounded queue: a client that reads too slowly is
 * dropped (its stream ends) instead of holding memory or slowing publishers.
 */
function eventStream(
  c: Context,
  events: EventHub,
  options: EventStreamOptions,
  shutdown: ShutdownWatch,
): Response {
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const maxQueued = options.maxQueued ?? 1000
  const asked = c.req.header('last-event-id') ?? c.req.query('last_event_id')
  const lastEventId =
    asked === undefined || asked.trim() === '' ? undefined : asked.trim().slice(0, MAX_LAST_EVENT_ID)
  return streamSSE(c, async (stream) => {
    // THE REPLAY AND THE SUBSCRIPTION HAPPEN IN ONE TURN (before the first await): no event falls
    // between them, none comes twice.
    const replay = lastEventId === undefined ? undefined : events.since(lastEventId)
    const queue: ServerEvent[] = replay?.ok === true ? [...replay.events] : []
    const limit = maxQueued + queue.length
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
      if (queue.length >= limit) {
        dropped = true
        queue.length = 0
        // Ends a write stuck on a client that does not read.
        stream.abort()
      } else {
        queue.push(event)
      }
      notify()
    })
    const request = c.req.raw.signal
    request.addEventListener('abort', notify)
    const unwatch = shutdown.watch(notify)
    stream.onAbort(notify)
    const ended = (): boolean =>
      dropped || stream.aborted || stream.closed || request.aborted || shutdown.aborted()
    const head = events.lastEventId
    try {
      await stream.write(`retry: 3000\n: connected\n\n`)
      if (replay?.ok === false) {
        await stream.writeSSE({
          id: head,
          event: 'reset',
          data: JSON.stringify({ reason: replay.reason, last_event_id: lastEventId }),
        })
      }
      // The replayed events (the head of the queue) come before `ready`, the live ones after.
      const replayed = replay?.ok === true ? replay.events.length : 0
      for (let index = 0; index < replayed && !ended(); index += 1) {
        const event = queue.shift()
        if (event !== undefined) await writeEvent(stream, event)
      }
      await stream.writeSSE({ id: head, event: 'ready', data: JSON.stringify({ replayed }) })
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
        await writeEvent(stream, event)
      }
    } finally {
      unsubscribe()
      request.removeEventListener('abort', notify)
      unwatch()
      notify()
    }
  })
}

/** Writes one event; one whose data is not JSON (a bigint, a cycle) is skipped. */
async function writeEvent(stream: SSEStreamingApi, event: ServerEvent): Promise<void> {
  let data: string
  try {
    data = JSON.stringify(event.data)
  } catch {
    return
  }
  await stream.writeSSE({ id: event.id, event: event.type, data })
}
