// @ts-check
/**
 * Live updates: one `GET /api/events` stream per browser, shared by its tabs (issue 26). A browser
 * allows six connections per host over HTTP/1.1, so a stream per tab left the seventh tab without
 * one, and every tab's stream cost the server a subscriber.
 *
 * The tab that holds the Web Lock `lango-events` (the leader) reads the stream (fetch streaming:
 * EventSource cannot send the token header) and forwards each event over a BroadcastChannel; the
 * other tabs listen there. When the leader closes (or forgets its token), the lock passes to a
 * waiting tab, which connects from the last event id it saw (`?last_event_id=`), so the server
 * replays what fell between, or says `reset` when it cannot. Where Web Locks are missing (a page
 * served over plain HTTP beyond loopback is not a secure context), each tab reads its own stream.
 */
import { AuthError, authHeaders } from './api.js'

const NAME = 'lango-events'

/**
 * @typedef {'connecting' | 'on' | 'off'} LiveState
 * @typedef {object} LiveHandlers
 * @property {(type: string, data: any) => void} onEvent Every event, in order, once per tab.
 * @property {(state: LiveState, text: string) => void} onState The stream's state as this tab sees it.
 * @property {(message: string) => void} onAuthError The server refused this tab's token.
 * @typedef {{ kind: 'hello' } | { kind: 'state', state: LiveState, text: string, id?: string } | { kind: 'event', type: string, data: any, id: string }} Message
 */

/** @type {LiveHandlers | null} */
let handlers = null
/** @type {BroadcastChannel | null} */
let channel = null
/** Aborts the wait for the lock (stopLive while another tab leads). */
/** @type {AbortController | null} */
let lockWait = null
/** Releases the lock this tab holds as the leader. */
/** @type {(() => void) | null} */
let release = null
/** This tab's own stream (the leader's, or every tab's without Web Locks). */
/** @type {AbortController | null} */
let stream = null
let retryDelay = 1000
let retryTimer = 0
/** The newest event id this tab saw, from its stream or the leader's: where a new stream goes on from. */
let lastEventId = ''
/** @type {LiveState} */
let state = 'off'
let stateText = 'off'

/**
 * The newest event id of the live stream (its `ready` event's, then each event's), or '' while the
 * stream is not live: a read that carries this id missed nothing.
 */
export function liveEventId() {
  return state === 'on' ? lastEventId : ''
}

/** Whether the stream is shared between tabs (Web Locks and BroadcastChannel are there). */
function canShare() {
  return typeof BroadcastChannel === 'function' && typeof navigator.locks?.request === 'function'
}

/**
 * Starts live updates for this tab (again after {@link stopLive}); a second call while started only
 * swaps the handlers.
 * @param {LiveHandlers} next
 */
export function startLive(next) {
  handlers = next
  if (channel !== null || stream !== null || retryTimer !== 0) return
  if (!canShare()) {
    connect()
    return
  }
  const shared = new BroadcastChannel(NAME)
  channel = shared
  shared.onmessage = (message) => heard(/** @type {Message} */ (message.data))
  setState('connecting', 'connecting…')
  const waiting = new AbortController()
  lockWait = waiting
  navigator.locks
    .request(NAME, { signal: waiting.signal }, () => {
      lockWait = null
      return new Promise((resolve) => {
        release = () => resolve(undefined)
        connect()
      })
    })
    .catch(() => undefined) // the wait was aborted: this tab stopped before it led
  // A leader already streaming tells a new tab its state.
  shared.postMessage(/** @type {Message} */ ({ kind: 'hello' }))
}

/** Stops live updates in this tab; a leader hands the stream to another tab. */
export function stopLive() {
  lockWait?.abort()
  lockWait = null
  clearTimeout(retryTimer)
  retryTimer = 0
  const own = stream
  stream = null
  own?.abort()
  if (release !== null) {
    tell({ kind: 'state', state: 'connecting', text: 'connecting…' })
    release()
    release = null
  }
  channel?.close()
  channel = null
  setState('off', 'off')
}

/** @param {LiveState} next @param {string} text */
function setState(next, text) {
  state = next
  stateText = text
  handlers?.onState(next, text)
}

/** Sends to the other tabs when this tab leads. @param {Message} message */
function tell(message) {
  if (release !== null) channel?.postMessage(message)
}

/** A message from another tab. @param {Message} message */
function heard(message) {
  if (message.kind === 'hello') {
    tell({ kind: 'state', state, text: stateText, id: lastEventId })
    return
  }
  if (release !== null) return // this tab leads: no one else speaks
  if (message.kind === 'state') {
    if (message.id) lastEventId = message.id
    setState(message.state, message.state === 'on' ? 'on (shared with another tab)' : message.text)
  } else if (message.kind === 'event') {
    if (message.id) lastEventId = message.id
    handlers?.onEvent(message.type, message.data)
  }
}

function connect() {
  if (stream !== null) return
  clearTimeout(retryTimer)
  retryTimer = 0
  const controller = new AbortController()
  stream = controller
  setState('connecting', 'connecting…')
  tell({ kind: 'state', state: 'connecting', text: 'connecting…' })
  read(controller).then(
    () => ended(controller),
    (error) => {
      if (error instanceof AuthError) {
        if (stream === controller) stream = null
        handlers?.onAuthError(error.message)
        return
      }
      ended(controller)
    },
  )
}

/** @param {AbortController} controller */
function ended(controller) {
  if (stream === controller) stream = null
  if (controller.signal.aborted) return
  const text = `disconnected, retrying in ${Math.round(retryDelay / 1000)} s`
  setState('off', text)
  tell({ kind: 'state', state: 'off', text })
  retryTimer = setTimeout(() => {
    retryTimer = 0
    connect()
  }, retryDelay)
  retryDelay = Math.min(retryDelay * 2, 30000)
}

/** @param {AbortController} controller */
async function read(controller) {
  const from = lastEventId ? `?last_event_id=${encodeURIComponent(lastEventId)}` : ''
  const response = await fetch(`/api/events${from}`, {
    headers: Object.assign({ accept: 'text/event-stream' }, authHeaders()),
    signal: controller.signal,
    cache: 'no-store',
  })
  if (response.status === 401) throw new AuthError('The server refused this token.')
  if (!response.ok || response.body === null) throw new Error(`HTTP ${response.status}`)
  retryDelay = 1000
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return
    buffer = (buffer + value).replace(/\r\n?/g, '\n')
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      let type = 'message'
      let id = ''
      const data = []
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) type = line.slice(6).trim()
        else if (line.startsWith('id:')) id = line.slice(3).trim()
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
      }
      if (data.length === 0) continue
      let payload = null
      try {
        payload = JSON.parse(data.join('\n'))
      } catch {
        payload = null
      }
      if (id) lastEventId = id
      // Live from `ready` on (after the replay): its id is where the stream stands.
      if (type === 'ready') {
        setState('on', 'on')
        tell({ kind: 'state', state: 'on', text: 'on', id: lastEventId })
        continue
      }
      handlers?.onEvent(type, payload)
      tell({ kind: 'event', type, data: payload, id })
    }
  }
}
