// @ts-check
/**
 * The operator dashboard's entry module (no framework, no bundler; ADR 0012): routes, live updates
 * over `GET /api/events`, the token prompt, and the pages (one module each) it draws. Every text from
 * the API goes in with `textContent` (the `h` helper of `dom.js`), never as HTML.
 *
 * @typedef {{ view: string, id?: string, query: URLSearchParams, data?: any, focusKey?: string }} Route
 *   `query`: what follows `?` in the hash (`#/cron?failing=1`): a list's filters, order and search.
 * @typedef {object} PageContext What a page may call while it draws.
 * @property {(button: HTMLButtonElement, work: () => Promise<any>, done: (result: any) => string, after?: (button: HTMLButtonElement) => void) => Promise<void>} act
 *   Runs an action of a button: disabled meanwhile, its outcome announced, then the page read again
 *   (or, with `after`, `after(button)` instead: the page updates what the action changed itself).
 * @property {() => void} rerender Draws the open page again from the data it last loaded.
 * @property {(message: string) => void} askForToken The server refused the token: ask for it again.
 * @property {(hash: string, focusKey?: string) => void} go Opens another page (`#/cron/…`); with
 *   `focusKey`, the focus goes to the control with that data-key once it is drawn (where an action
 *   that led there started), else to the page as after any navigation.
 * @typedef {object} View
 * @property {string} title
 * @property {number} [pollMs] Read the page again this often while it is open (no event tells of changes).
 * @property {(route: Route) => Promise<any>} load
 * @property {(data: any, route: Route, page: PageContext) => Node} render
 * @property {() => void} [drawn] Called each time what `render` returned is in place on the page,
 *   in the same task (no input event reaches the page in between): to measure what was drawn.
 * @property {(type: string, data: any, route: Route, page: PageContext) => boolean} [onEvent]
 *   Handles a live event in place (one row); false: read the whole page again as for other views.
 * @property {boolean} [drawOnce] A form: drawn once per visit, never read again while it is open
 *   (a redraw would drop what was typed, and a submit in flight would answer a form no longer shown).
 */
import { AuthError, forgetToken, hasToken, markReads, saveToken } from './api.js'
import { approvals } from './approvals.js'
import { background } from './background.js'
import { cron, job } from './cron.js'
import { jobEdit, jobNew } from './cron-form.js'
import { announce, h, headline, relative, setTimeZoneMode, timeZoneMode } from './dom.js'
import { startHealthBanner } from './health-banner.js'
import { liveEventId, startLive, stopLive } from './live.js'
import { overview } from './overview.js'
import { processes } from './processes.js'
import { disconnectGraph } from './workflow-graph.js'
import { run, workflows } from './workflows.js'

const tokenRequired = document.body.dataset.tokenRequired === 'true'
const main = /** @type {HTMLElement} */ (document.getElementById('main'))
const liveStatus = /** @type {HTMLElement} */ (document.getElementById('live'))
const forgetButton = /** @type {HTMLButtonElement} */ (document.getElementById('forget-token'))
const zoneSwitch = /** @type {HTMLFieldSetElement} */ (document.getElementById('zone-mode'))

/** @type {Record<string, View>} */
const VIEWS = { overview, cron, job, jobNew, jobEdit, workflows, run, background, processes, approvals }

/** @type {Route | null} */
let currentRoute = null
let refreshTimer = 0
let refreshing = false
let refreshAgain = false
let pollTimer = 0
/** The data-key of the control to focus once the next page is drawn (see PageContext.go). */
let focusAfterLoad = ''
/** The event stream is open: what changes from now on arrives as events. */
let streamOpen = false
/**
 * The event ids (`x-lango-event-id`) of the open view's last read, made while the stream was not
 * live, or null: once it is, the view is read again unless they all are the stream's first id
 * (nothing happened between the read and the stream). The first view is read at once, not after the
 * stream opens, so it draws sooner.
 * @type {string[] | null}
 */
let readWithoutStream = null

/** @type {PageContext} */
const PAGE = { act, rerender, go, askForToken }

function setLive(state, text) {
  liveStatus.dataset.state = state
  liveStatus.textContent = `Live updates: ${text}`
}

// ---- live updates: one GET /api/events stream per browser, shared by its tabs (live.js) ----

function connectEvents() {
  startLive({ onEvent, onState: liveState, onAuthError: askForToken })
}

function disconnectEvents() {
  stopLive()
}

/** @param {'connecting' | 'on' | 'off'} state @param {string} text */
function liveState(state, text) {
  setLive(state, text)
  streamOpen = state === 'on'
  if (!streamOpen || readWithoutStream === null) return
  // Events may have been missed while the view was read without the stream (its first open, a reconnect).
  const reads = readWithoutStream
  readWithoutStream = null
  if (!sameAsStream(reads)) scheduleRefresh()
}

/** Whether reads (their event ids) saw every event before the live stream's first: nothing was missed. */
function sameAsStream(reads) {
  const head = liveEventId()
  return head !== '' && reads.every((id) => id === head)
}

/** Which views an event changes; those refresh once per burst (no polling). */
function onEvent(type, data) {
  if (currentRoute === null) return
  const view = currentRoute.view
  if (type === 'approval.pending' && data && typeof data.summary === 'string')
    announce(`New approval request: ${headline(data.summary)}`)
  // The server could not replay what this browser missed: read the page again.
  if (type === 'reset') {
    scheduleRefresh()
    return
  }
  const handler = VIEWS[view].onEvent
  if (handler && currentRoute.data !== undefined && handler(type, data, currentRoute, PAGE)) return
  if (type.startsWith('cron.') && (view === 'cron' || view === 'job' || view === 'overview'))
    scheduleRefresh()
  else if (type.startsWith('approval.') && (view === 'approvals' || view === 'overview')) scheduleRefresh()
  else if (type.startsWith('workflow.run.') && view === 'overview') scheduleRefresh()
  else if (type.startsWith('workflow.') && view === 'workflows') scheduleRefresh()
  else if (type.startsWith('workflow.') && view === 'run' && data && data.run_id === currentRoute.id)
    scheduleRefresh()
  else if (type.startsWith('background.') && (view === 'background' || view === 'overview')) scheduleRefresh()
}

// ---- views -----------------------------------------------------------------

function scheduleRefresh() {
  if (refreshTimer !== 0) return
  refreshTimer = setTimeout(() => {
    refreshTimer = 0
    refresh()
  }, 250)
}

async function refresh() {
  if (currentRoute === null) return
  if (refreshing) {
    refreshAgain = true
    return
  }
  const route = currentRoute
  if (route.data !== undefined && VIEWS[route.view].drawOnce) return
  refreshing = true
  const withoutStream = !streamOpen
  const reads = markReads()
  try {
    const data = await VIEWS[route.view].load(route)
    if (route !== currentRoute) return
    if (withoutStream) {
      // The stream went live during the read (its liveState call saw no read yet): compare now.
      if (streamOpen) {
        if (!sameAsStream(reads)) scheduleRefresh()
      } else readWithoutStream = reads
    }
    route.data = data
    draw(route, data)
    if (route.focusKey) {
      const target = /** @type {HTMLElement | null} */ (
        main.querySelector(`[data-key="${CSS.escape(route.focusKey)}"]`)
      )
      route.focusKey = undefined
      if (target) target.focus()
    }
    schedulePoll(route)
  } catch (error) {
    if (error instanceof AuthError) askForToken(error.message)
    else if (route === currentRoute)
      render(
        h(
          'section',
          { className: 'error' },
          h('h1', {}, 'Could not load this page'),
          h('p', { role: 'alert' }, String(error.message || error)),
          h('button', { type: 'button', onclick: () => refresh() }, 'Try again'),
        ),
      )
  } finally {
    refreshing = false
    if (refreshAgain) {
      refreshAgain = false
      scheduleRefresh()
    }
  }
}

/** Draws the open view again from the data it last loaded (a local change such as a selected step). */
function rerender() {
  const route = currentRoute
  if (route !== null && route.data !== undefined) draw(route, route.data)
}

/** Draws the route's view from `data`, then tells the view it is in place. */
function draw(route, data) {
  const view = VIEWS[route.view]
  render(view.render(data, route, PAGE))
  if (view.drawn) view.drawn()
}

/**
 * A view whose data changes without an event (a background process's output) asks to be read
 * again every few seconds, while it is open and the tab is visible.
 */
function schedulePoll(route) {
  clearTimeout(pollTimer)
  const every = VIEWS[route.view].pollMs || 0
  if (every === 0) return
  pollTimer = setTimeout(() => {
    if (route === currentRoute && !document.hidden) scheduleRefresh()
  }, every)
}

/** How close to its end (px) a `data-follow` box counts as at the end. */
const FOLLOW_SLACK = 8

/**
 * Keeps each output box (`data-follow="<key>"`) where the reader left it across a redraw: at its end
 * (newest line in view) when it was there or is new, else at the same scroll position (the reader
 * scrolled up to read).
 * @param {Map<string, number | null>} before scrollTop per key, or null where the box was at its end
 */
function restoreFollow(before) {
  for (const box of main.querySelectorAll('[data-follow]')) {
    const element = /** @type {HTMLElement} */ (box)
    const kept = before.get(/** @type {string} */ (element.getAttribute('data-follow')))
    element.scrollTop = kept === undefined || kept === null ? element.scrollHeight : kept
    // Placed: the `toggle` event that opening its details queues leaves it where it is.
    if (element.clientHeight > 0) element.dataset.placed = 'true'
  }
}

/** @returns {Map<string, number | null>} */
function followState() {
  const state = new Map()
  for (const box of main.querySelectorAll('[data-follow]')) {
    const element = /** @type {HTMLElement} */ (box)
    // A box not drawn (in closed details) has no position to keep.
    if (element.clientHeight === 0) continue
    const atEnd = element.scrollTop + element.clientHeight >= element.scrollHeight - FOLLOW_SLACK
    state.set(element.getAttribute('data-follow'), atEnd ? null : element.scrollTop)
  }
  return state
}

/**
 * Replaces the view, keeping keyboard focus on the control with the same data-key, opened details
 * open, and output boxes at their end or where the reader scrolled them ({@link restoreFollow}).
 */
function render(node) {
  const focused =
    document.activeElement && main.contains(document.activeElement)
      ? document.activeElement.getAttribute('data-key')
      : null
  // Where the focused control sits among its kind (`approve:<id>` among the Approve buttons): when
  // it is gone (its approval decided), the focus goes to the one that took its place.
  const kind = focused ? `${focused.split(':')[0]}:` : null
  const place = kind ? keyedControls(kind).indexOf(/** @type {Element} */ (document.activeElement)) : -1
  const opened = [...main.querySelectorAll('details[open][data-key]')].map(
    (details) => /** @type {string} */ (details.getAttribute('data-key')),
  )
  const follow = followState()
  main.replaceChildren(node)
  for (const key of opened) {
    const again = /** @type {HTMLDetailsElement | null} */ (
      main.querySelector(`details[data-key="${CSS.escape(key)}"]`)
    )
    if (again) again.open = true
  }
  restoreFollow(follow)
  if (focused) {
    const again = /** @type {HTMLButtonElement | null} */ (
      main.querySelector(`[data-key="${CSS.escape(focused)}"]`)
    )
    if (again && !again.disabled) again.focus()
    else if (!again) keepFocusInMain(kind, place)
  }
}

/** The controls whose data-key starts with `kind`, in page order. */
function keyedControls(kind) {
  return [...main.querySelectorAll(`[data-key^="${CSS.escape(kind)}"]`)]
}

/**
 * The focused control went with the redraw: the focus goes to the control of its kind now at its
 * place (or the last one), else to the page's heading, never to the top of the document, where a
 * keyboard user would start again.
 */
function keepFocusInMain(kind, place) {
  const peers = kind && place >= 0 ? keyedControls(kind) : []
  const next = /** @type {HTMLElement | undefined} */ (peers[Math.min(place, peers.length - 1)])
  if (next && !(/** @type {HTMLButtonElement} */ (next).disabled)) {
    next.focus()
    return
  }
  const title = /** @type {HTMLElement | null} */ (main.querySelector('h1'))
  if (!title) return
  title.tabIndex = -1
  title.focus()
}

/** @returns {Route} */
function routeFromHash() {
  const hash = location.hash || '#/overview'
  const [path, search] = hash.replace(/^#\/?/, '').split('?', 2)
  const query = new URLSearchParams(search || '')
  const parts = path.split('/').map(decodeURIComponent)
  if (parts[0] === 'cron' && parts[1] === 'new' && parts.length === 2) return { view: 'jobNew', query }
  if (parts[0] === 'cron' && parts[1] && parts[2] === 'edit') return { view: 'jobEdit', id: parts[1], query }
  if (parts[0] === 'cron' && parts[1]) return { view: 'job', id: parts[1], query }
  if (parts[0] === 'cron') return { view: 'cron', query }
  if (parts[0] === 'workflows' && parts[1]) return { view: 'run', id: parts[1], query }
  if (parts[0] === 'workflows') return { view: 'workflows', query }
  if (parts[0] === 'approvals') return { view: 'approvals', query }
  if (parts[0] === 'background') return { view: 'background', query }
  if (parts[0] === 'processes') return { view: 'processes', query }
  return { view: 'overview', query }
}

/** @param {string} hash @param {string} [focusKey] */
function go(hash, focusKey) {
  focusAfterLoad = focusKey || ''
  if (location.hash === hash) navigate()
  else location.hash = hash
}

function navigate() {
  if (tokenRequired && !hasToken()) {
    askForToken('')
    return
  }
  clearTimeout(pollTimer)
  // A refresh asked for by the page being left is not one for the page being opened (read below).
  clearTimeout(refreshTimer)
  refreshTimer = 0
  disconnectGraph()
  currentRoute = routeFromHash()
  if (focusAfterLoad) currentRoute.focusKey = focusAfterLoad
  focusAfterLoad = ''
  const section =
    currentRoute.view === 'job' || currentRoute.view === 'jobNew' || currentRoute.view === 'jobEdit'
      ? 'cron'
      : currentRoute.view === 'run'
        ? 'workflows'
        : currentRoute.view
  for (const link of document.querySelectorAll('nav a')) {
    if (link.getAttribute('href') === `#/${section}`) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
  document.title = `${VIEWS[currentRoute.view].title} · Lango dashboard`
  main.replaceChildren(h('p', { className: 'muted' }, 'Loading…'))
  main.focus({ preventScroll: true })
  readWithoutStream = null
  connectEvents()
  // Read at once; if the stream was not live yet, liveState() reads again only when events came
  // between the read and the stream (their ids differ).
  refresh()
}

async function act(button, work, done, after) {
  const key = button.getAttribute('data-key')
  const hadFocus = document.activeElement === button
  button.disabled = true
  try {
    const result = await work()
    announce(done(result))
  } catch (error) {
    if (error instanceof AuthError) {
      askForToken(error.message)
      return
    }
    announce(`Failed: ${String(error.message || error)}`)
    showNotice(String(error.message || error))
  } finally {
    button.disabled = false
    if (hadFocus) refocus(button, key)
  }
  if (after) after(button)
  else scheduleRefresh()
}

/**
 * Gives the focus back to an action's button after it ran: disabling a focused button blurs it,
 * and the page may have been drawn again meanwhile (then the control with the same data-key). Only
 * when nothing else took the focus.
 */
function refocus(button, key) {
  const active = document.activeElement
  if (active !== null && active !== document.body && main.contains(active)) return
  const target = /** @type {HTMLButtonElement | null} */ (
    button.isConnected ? button : key ? main.querySelector(`[data-key="${CSS.escape(key)}"]`) : null
  )
  if (target && !target.disabled) target.focus()
}

function showNotice(text) {
  const notice = main.querySelector('.notice')
  if (notice) notice.textContent = text
}

// ---- token prompt ------------------------------------------------------------

function askForToken(message) {
  disconnectEvents()
  currentRoute = null
  forgetToken()
  forgetButton.hidden = true
  const input = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    required: true,
    spellcheck: 'false',
    'aria-describedby': 'token-help',
  })
  const form = h(
    'form',
    {
      className: 'token-form',
      onsubmit: (event) => {
        event.preventDefault()
        const value = input.value.trim()
        if (!value) return
        saveToken(value)
        forgetButton.hidden = false
        navigate()
      },
    },
    h('h1', {}, 'API token'),
    h(
      'p',
      { id: 'token-help' },
      'This server needs its API token (LANGO_API_TOKEN). It is kept in this browser tab only, until you close it.',
    ),
    message ? h('p', { className: 'error', role: 'alert' }, message) : null,
    h('label', { for: 'token' }, 'API token'),
    input,
    h('button', { type: 'submit' }, 'Continue'),
  )
  document.title = 'API token · Lango dashboard'
  main.replaceChildren(form)
  input.focus()
}

// Relative times ("in 5 min") age on screen; they are recomputed here, without asking the server.
setInterval(() => {
  for (const element of main.querySelectorAll('time[datetime] .relative')) {
    element.textContent =
      ' (' +
      relative(
        new Date(
          /** @type {string} */ (/** @type {HTMLElement} */ (element.parentElement).getAttribute('datetime')),
        ),
      ) +
      ')'
  }
}, 30000)

document.addEventListener('visibilitychange', () => {
  if (!document.hidden && currentRoute !== null && VIEWS[currentRoute.view].pollMs) scheduleRefresh()
})
// The header's time zone switch: the mode this browser last chose, applied to every page at once.
for (const input of zoneSwitch.querySelectorAll('input[name="zone-mode"]')) {
  const radio = /** @type {HTMLInputElement} */ (input)
  radio.checked = radio.value === timeZoneMode()
  radio.addEventListener('change', () => {
    if (!radio.checked) return
    setTimeZoneMode(radio.value)
    const label = radio.value === 'job' ? "each job's own zone" : radio.value === 'utc' ? 'UTC' : 'local time'
    announce(`Times now in ${label}`)
  })
}
forgetButton.addEventListener('click', () => askForToken(''))
forgetButton.hidden = !hasToken()
window.addEventListener('hashchange', navigate)
navigate()
startHealthBanner(/** @type {HTMLElement} */ (document.getElementById('banner')))
