import { readDuration } from '@lango/duration'

/**
 * The dashboard's reading of `every` intervals, in words. It reads the stored text with the server's
 * own grammar: `readDuration` of @lango/duration, embedded by its source (ADR 0013), so the page can
 * never read a duration differently from the server. Kept between markers so a test can run exactly
 * this part of the served script.
 */
export const INTERVAL_SCRIPT: string = `// ---- intervals (ADR 0013) ----
const readDuration = (${String(readDuration)})
${String.raw`
const INTERVAL_UNITS = [['week', 604800000], ['day', 86400000], ['hour', 3600000], ['minute', 60000], ['second', 1000], ['millisecond', 1]]

/** 'every 1 hour 30 minutes' for the stored text of an every job; '' when it does not read. */
function describeEvery(text) {
  // Read as the server reads a stored interval: white space dropped, and a bare number (stored
  // before ADR 0013) is milliseconds.
  const compact = String(text).replace(/\s+/g, '').replace(/^@every/i, '')
  const reading = /^\d+$/.test(compact) ? { ok: true, milliseconds: Number(compact) } : readDuration(compact)
  if (!reading.ok || reading.milliseconds <= 0) return ''
  const parts = []
  let rest = reading.milliseconds
  for (const [name, size] of INTERVAL_UNITS) {
    const amount = Math.floor(rest / size)
    if (amount === 0) continue
    parts.push(amount + ' ' + name + (amount === 1 ? '' : 's'))
    rest -= amount * size
  }
  return 'every ' + (parts.length === 1 && parts[0].startsWith('1 ') ? parts[0].slice(2) : parts.join(' '))
}
`}// ---- end of intervals ----
`

/**
 * The dashboard's one hand-written ES module (no framework, no bundler), served as
 * `/ui/app.js`. It is plain browser JavaScript kept in raw template literals so tsup inlines it
 * into dist: they must contain no backtick and no dollar-brace ({@link INTERVAL_SCRIPT} is joined
 * in between). Every text from the API goes in with `textContent` (the `h` helper), never as HTML.
 */
export const UI_SCRIPT: string =
  String.raw`// Lango dashboard (apps/server/src/ui/script.ts)
const TOKEN_KEY = 'lango.apiToken'
const tokenRequired = document.body.dataset.tokenRequired === 'true'
const main = document.getElementById('main')
const liveStatus = document.getElementById('live')
const announcer = document.getElementById('announcer')
const forgetButton = document.getElementById('forget-token')

let token = sessionStorage.getItem(TOKEN_KEY) || ''
let currentRoute = null
let refreshTimer = 0
let refreshing = false
let refreshAgain = false
let stream = null
let retryDelay = 1000
let retryTimer = 0
let pollTimer = 0
let graphObserver = null
/** The event stream is open: what changes from now on arrives as events. */
let streamOpen = false
/** A view was read while the stream was not open: events in between may be missed, so read again once it opens. */
let loadedWithoutStream = false
/** Called when the stream opens (navigate() waits briefly for it before the first read). */
const onStreamOpen = []
/** The step whose result is shown under a run's graph, per run id (kept across live re-renders). */
const selectedSteps = new Map()

class AuthError extends Error {}

// ---- DOM helpers ----------------------------------------------------------

function h(tag, attributes, ...children) {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue
    if (name.startsWith('on') && typeof value === 'function') element.addEventListener(name.slice(2), value)
    else if (name === 'className') element.className = value
    else element.setAttribute(name, value === true ? '' : String(value))
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue
    element.append(child instanceof Node ? child : String(child))
  }
  return element
}

function announce(text) {
  announcer.textContent = ''
  // A fresh text node so screen readers read a repeated message again.
  setTimeout(() => {
    announcer.textContent = text
  }, 30)
}

/**
 * An approval's first line, at most 160 characters (…when cut), for announcements only: the
 * approvals page always shows the whole summary next to its buttons.
 */
function headline(summary) {
  const first = String(summary).split('\n')[0]
  return first.length > 160 ? first.slice(0, 160) + '…' : first
}

function setLive(state, text) {
  liveStatus.dataset.state = state
  liveStatus.textContent = 'Live updates: ' + text
}

const STATUS_TONE = {
  ok: 'good', running: 'info', completed: 'good', delivered: 'good', approved: 'good', alive: 'good',
  enabled: 'good', failed: 'bad', timed_out: 'bad', interrupted: 'warn', cancelled: 'warn',
  skipped: 'warn', denied: 'bad', expired: 'warn', pending: 'info', paused: 'warn', stopped: 'bad',
  unavailable: 'bad', dead: 'bad', disabled: 'muted', none: 'muted', starting: 'warn', stopping: 'warn',
  done: 'good', killed: 'warn', exited: 'muted',
}

/** A status as text with a colour; the colour is never the only signal. */
function badge(status, label) {
  const text = String(status)
  return h('span', { className: 'badge tone-' + (STATUS_TONE[text] || 'muted'), 'data-status': text }, label || text.replace(/_/g, ' '))
}

/**
 * One date formatter per time zone, made once: toLocaleString builds a new ICU formatter on every
 * call (about 0.15 ms each), which for a page of 1,000 jobs was most of its first render.
 */
const FORMATTERS = new Map()
function formatterFor(zone) {
  const key = zone || ''
  let formatter = FORMATTERS.get(key)
  if (formatter === undefined) {
    const options = { dateStyle: 'medium', timeStyle: 'short' }
    try {
      formatter = new Intl.DateTimeFormat(undefined, zone ? Object.assign({ timeZone: zone }, options) : options)
    } catch {
      formatter = new Intl.DateTimeFormat(undefined, options)
    }
    FORMATTERS.set(key, formatter)
  }
  return formatter
}

function time(iso, zone) {
  if (iso === null || iso === undefined || iso === '') return h('span', { className: 'muted' }, '—')
  const date = new Date(iso)
  const text = formatterFor(zone).format(date)
  return h('time', { datetime: date.toISOString(), title: date.toISOString() }, text, h('span', { className: 'relative' }, ' (' + relative(date) + ')'))
}

function relative(date) {
  const seconds = Math.round((date.getTime() - Date.now()) / 1000)
  const abs = Math.abs(seconds)
  if (abs < 5) return 'just now'
  let amount
  if (abs < 60) amount = abs + ' s'
  else if (abs < 3600) amount = Math.round(abs / 60) + ' min'
  else if (abs < 172800) amount = Math.round(abs / 3600) + ' h'
  else amount = Math.round(abs / 86400) + ' days'
  return seconds >= 0 ? 'in ' + amount : amount + ' ago'
}

function duration(ms) {
  if (ms === null || ms === undefined) return ''
  if (ms < 1000) return ms + ' ms'
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s'
  return Math.round(ms / 60000) + ' min'
}

` +
  INTERVAL_SCRIPT +
  String.raw`// ---- schedules in words (common forms only; the raw text is always shown) --

const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday']

function describeSchedule(job) {
  if (job.schedule_type === 'every') return describeEvery(job.schedule)
  if (job.schedule_type === 'at') return 'once'
  return describeCron(job.schedule)
}

function isNumber(field) {
  return /^\d+$/.test(field)
}

function clock(hour, minute) {
  return String(hour).padStart(2, '0') + ':' + String(minute).padStart(2, '0')
}

function describeCron(expression) {
  const text = String(expression).trim()
  const macros = { '@hourly': 'every hour', '@daily': 'every day at 00:00', '@midnight': 'every day at 00:00', '@weekly': 'every Sunday at 00:00', '@monthly': 'on day 1 of every month at 00:00', '@yearly': 'every 1 January at 00:00', '@annually': 'every 1 January at 00:00' }
  if (macros[text]) return macros[text]
  const fields = text.split(/\s+/)
  if (fields.length !== 5) return ''
  const [minute, hour, dayOfMonth, month, dayOfWeek] = fields
  if (month !== '*') return ''
  if (minute === '*' && hour === '*' && dayOfMonth === '*' && dayOfWeek === '*') return 'every minute'
  const step = /^\*\/(\d+)$/
  if (step.test(minute) && hour === '*' && dayOfMonth === '*' && dayOfWeek === '*') return 'every ' + minute.match(step)[1] + ' minutes'
  if (!isNumber(minute)) return ''
  if (hour === '*' && dayOfMonth === '*' && dayOfWeek === '*') return 'every hour at minute ' + Number(minute)
  if (step.test(hour) && dayOfMonth === '*' && dayOfWeek === '*') return 'every ' + hour.match(step)[1] + ' hours at minute ' + Number(minute)
  const hours = hour.split(',')
  if (!hours.every(isNumber)) return ''
  const at = 'at ' + hours.map((value) => clock(value, minute)).join(' and ')
  if (dayOfMonth === '*' && dayOfWeek === '*') return 'every day ' + at
  if (dayOfMonth === '*') {
    if (dayOfWeek === '1-5' || dayOfWeek.toUpperCase() === 'MON-FRI') return 'weekdays ' + at
    if (dayOfWeek === '0,6' || dayOfWeek === '6,0' || dayOfWeek.toUpperCase() === 'SAT,SUN') return 'weekends ' + at
    const days = dayOfWeek.split(',')
    if (days.every((day) => isNumber(day) && Number(day) <= 7)) return 'every ' + days.map((day) => DAY_NAMES[Number(day)]).join(', ') + ' ' + at
    return ''
  }
  if (dayOfWeek === '*' && isNumber(dayOfMonth)) return 'on day ' + Number(dayOfMonth) + ' of every month ' + at
  return ''
}

// ---- API -------------------------------------------------------------------

function authHeaders() {
  return token ? { authorization: 'Bearer ' + token } : {}
}

async function api(path, init) {
  const options = init || {}
  const headers = Object.assign({ accept: 'application/json' }, authHeaders())
  let body
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(options.json)
  }
  const sent = token
  const response = await fetch(path, { method: options.method || (body === undefined ? 'GET' : 'POST'), headers, body, cache: 'no-store' })
  if (response.status === 401) throw new AuthError(sent ? 'The server refused this token.' : 'This server needs its API token.')
  const data = await response.json().catch(() => null)
  if (!response.ok && !(options.accept || []).includes(response.status)) {
    const message = data && data.error && data.error.message ? data.error.message : 'HTTP ' + response.status
    throw new Error(message)
  }
  return data
}

function post(path, json) {
  return api(path, { method: 'POST', json: json === undefined ? {} : json })
}

// ---- live updates: GET /api/events over fetch() streaming (EventSource cannot send headers) ----

function connectEvents() {
  if (stream !== null) return
  clearTimeout(retryTimer)
  const controller = new AbortController()
  stream = controller
  setLive('connecting', 'connecting…')
  readEvents(controller).then(
    () => afterStream(controller),
    (error) => {
      if (error instanceof AuthError) {
        if (stream === controller) stream = null
        askForToken(error.message)
        return
      }
      afterStream(controller)
    },
  )
}

function afterStream(controller) {
  if (stream === controller) stream = null
  streamOpen = false
  if (controller.signal.aborted) return
  setLive('off', 'disconnected, retrying in ' + Math.round(retryDelay / 1000) + ' s')
  retryTimer = setTimeout(connectEvents, retryDelay)
  retryDelay = Math.min(retryDelay * 2, 30000)
}

function disconnectEvents() {
  clearTimeout(retryTimer)
  if (stream !== null) stream.abort()
  stream = null
  streamOpen = false
  setLive('off', 'off')
}

async function readEvents(controller) {
  const response = await fetch('/api/events', { headers: Object.assign({ accept: 'text/event-stream' }, authHeaders()), signal: controller.signal, cache: 'no-store' })
  if (response.status === 401) throw new AuthError('The server refused this token.')
  if (!response.ok || response.body === null) throw new Error('HTTP ' + response.status)
  setLive('on', 'on')
  retryDelay = 1000
  streamOpen = true
  for (const resolve of onStreamOpen.splice(0)) resolve()
  // Events may have been missed while the view was read without the stream (a reconnect, a slow open).
  if (loadedWithoutStream) scheduleRefresh()
  loadedWithoutStream = false
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
      const data = []
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) type = line.slice(6).trim()
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
      }
      if (data.length > 0) {
        let payload = null
        try {
          payload = JSON.parse(data.join('\n'))
        } catch {
          payload = null
        }
        onEvent(type, payload)
      }
    }
  }
}

/** Which views an event changes; those refresh once per burst (no polling). */
function onEvent(type, data) {
  if (currentRoute === null) return
  const view = currentRoute.view
  if (type === 'approval.pending' && data && typeof data.summary === 'string') announce('New approval request: ' + headline(data.summary))
  if (type.startsWith('cron.') && (view === 'cron' || view === 'job' || view === 'overview')) scheduleRefresh()
  else if (type.startsWith('approval.') && (view === 'approvals' || view === 'overview')) scheduleRefresh()
  else if (type.startsWith('workflow.run.') && view === 'overview') scheduleRefresh()
  else if (type.startsWith('workflow.') && view === 'workflows') scheduleRefresh()
  else if (type.startsWith('workflow.') && view === 'run' && data && data.run_id === currentRoute.id) scheduleRefresh()
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
  refreshing = true
  if (!streamOpen) loadedWithoutStream = true
  const route = currentRoute
  try {
    const data = await VIEWS[route.view].load(route)
    if (route !== currentRoute) return
    route.data = data
    render(VIEWS[route.view].render(data, route))
    schedulePoll(route)
  } catch (error) {
    if (error instanceof AuthError) askForToken(error.message)
    else if (route === currentRoute) render(h('section', { className: 'error' }, h('h1', {}, 'Could not load this page'), h('p', { role: 'alert' }, String(error.message || error)), h('button', { type: 'button', onclick: () => refresh() }, 'Try again')))
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
  if (route !== null && route.data !== undefined) render(VIEWS[route.view].render(route.data, route))
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

/** Replaces the view, keeping keyboard focus on the control with the same data-key, and opened details open. */
function render(node) {
  const focused = document.activeElement && main.contains(document.activeElement) ? document.activeElement.getAttribute('data-key') : null
  const opened = [...main.querySelectorAll('details[open][data-key]')].map((details) => details.getAttribute('data-key'))
  main.replaceChildren(node)
  for (const key of opened) {
    const again = main.querySelector('details[data-key="' + CSS.escape(key) + '"]')
    if (again) again.open = true
  }
  if (focused) {
    const again = main.querySelector('[data-key="' + CSS.escape(focused) + '"]')
    if (again && !again.disabled) again.focus()
  }
}

function routeFromHash() {
  const hash = location.hash || '#/overview'
  const parts = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent)
  if (parts[0] === 'cron' && parts[1]) return { view: 'job', id: parts[1] }
  if (parts[0] === 'cron') return { view: 'cron' }
  if (parts[0] === 'workflows' && parts[1]) return { view: 'run', id: parts[1] }
  if (parts[0] === 'workflows') return { view: 'workflows' }
  if (parts[0] === 'approvals') return { view: 'approvals' }
  if (parts[0] === 'background') return { view: 'background' }
  if (parts[0] === 'processes') return { view: 'processes' }
  return { view: 'overview' }
}

function navigate() {
  if (tokenRequired && !token) {
    askForToken('')
    return
  }
  clearTimeout(pollTimer)
  if (graphObserver !== null) graphObserver.disconnect()
  currentRoute = routeFromHash()
  const section = currentRoute.view === 'job' ? 'cron' : currentRoute.view === 'run' ? 'workflows' : currentRoute.view
  for (const link of document.querySelectorAll('nav a')) {
    if (link.getAttribute('href') === '#/' + section) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
  document.title = VIEWS[currentRoute.view].title + ' · Lango dashboard'
  main.replaceChildren(h('p', { className: 'muted' }, 'Loading…'))
  main.focus({ preventScroll: true })
  connectEvents()
  // Read the view once the stream is open (a few ms), so nothing falls between the read and the
  // first event and the view is read once, not again on connect; a slow stream waits 300 ms at most.
  if (streamOpen) refresh()
  else
    new Promise((resolve) => {
      onStreamOpen.push(resolve)
      setTimeout(resolve, 300)
    }).then(() => refresh())
}

async function act(button, work, done) {
  button.disabled = true
  try {
    const result = await work()
    announce(done(result))
  } catch (error) {
    if (error instanceof AuthError) {
      askForToken(error.message)
      return
    }
    announce('Failed: ' + String(error.message || error))
    showNotice(String(error.message || error))
  } finally {
    button.disabled = false
  }
  scheduleRefresh()
}

function showNotice(text) {
  const notice = main.querySelector('.notice')
  if (notice) notice.textContent = text
}

function heading(text) {
  return h('h1', {}, text)
}

function counter(label, value, href, bad) {
  return h('a', { className: 'counter' + (bad && value > 0 ? ' tone-bad' : ''), href }, h('span', { className: 'count' }, String(value)), h('span', {}, label))
}

function field(label, value) {
  return [h('dt', {}, label), h('dd', {}, value)]
}

function jobState(job) {
  if (job.enabled) return badge('enabled')
  return h('span', {}, badge('paused'), job.pause_reason ? h('span', { className: 'reason' }, ' ' + job.pause_reason) : null)
}


function jobActions(job) {
  const toggle = job.enabled
    ? h('button', { type: 'button', 'data-key': 'pause:' + job.id, 'aria-label': 'Pause ' + job.name, onclick: (event) => act(event.currentTarget, () => post('/api/cron/jobs/' + encodeURIComponent(job.id) + '/pause'), () => 'Paused ' + job.name) }, 'Pause')
    : h('button', { type: 'button', 'data-key': 'resume:' + job.id, 'aria-label': 'Resume ' + job.name, onclick: (event) => act(event.currentTarget, () => post('/api/cron/jobs/' + encodeURIComponent(job.id) + '/resume'), () => 'Resumed ' + job.name) }, 'Resume')
  const run = h('button', { type: 'button', 'data-key': 'run:' + job.id, 'aria-label': 'Run ' + job.name + ' now', onclick: (event) => act(event.currentTarget, () => post('/api/cron/jobs/' + encodeURIComponent(job.id) + '/trigger'), () => 'Started ' + job.name) }, 'Run now')
  return h('div', { className: 'actions' }, toggle, run)
}

/** Saved workflows with their schedule (the cron job that runs each), its zone and next run. */
function savedWorkflows(names, schedules) {
  return h('section', { 'aria-labelledby': 'saved-heading' },
    h('h2', { id: 'saved-heading' }, 'Saved workflows'),
    h('table', { className: 'saved' },
      h('thead', {}, h('tr', {}, ['Workflow', 'Schedule', 'Time zone', 'Next run', 'State'].map((label) => h('th', { scope: 'col' }, label)))),
      h('tbody', {}, names.map((name) => {
        const job = schedules[name]
        if (!job) {
          return h('tr', { 'data-saved': name },
            h('th', { scope: 'row', 'data-label': 'Workflow' }, h('code', {}, name)),
            h('td', { 'data-label': 'Schedule', colspan: '4' }, h('span', { className: 'muted' }, 'not scheduled: runs when started')))
        }
        return h('tr', { 'data-saved': name },
          h('th', { scope: 'row', 'data-label': 'Workflow' }, h('code', {}, name)),
          h('td', { 'data-label': 'Schedule' }, h('a', { href: '#/cron/' + encodeURIComponent(job.job_id) }, scheduleCell(job))),
          h('td', { 'data-label': 'Time zone' }, job.timezone),
          h('td', { 'data-label': 'Next run' }, job.enabled ? time(job.next_run_at, job.timezone) : h('span', { className: 'muted' }, '—')),
          h('td', { 'data-label': 'State', className: 'status' }, job.enabled ? badge('enabled') : badge('paused')))
      }))))
}

function scheduleCell(job) {
  const words = describeSchedule(job)
  return h('span', {}, h('code', {}, job.schedule_type + ' ' + job.schedule), words ? h('span', { className: 'words' }, words) : null)
}

/**
 * A job's last run on its own page: the job's last_run_at and last_status, or the newest run in its
 * history when that is newer (a manual run sets last_status but not last_run_at).
 */
function lastRunOf(job, entries) {
  const newest = entries.find((entry) => entry.started_at)
  if (newest && (!job.last_run_at || new Date(newest.started_at) >= new Date(job.last_run_at))) {
    return [badge(newest.status), ' ', time(newest.started_at), h('span', { className: 'muted' }, ' · ' + newest.trigger)]
  }
  return lastRun(job)
}

function lastRun(job) {
  if (!job.last_status && !job.last_run_at) return h('span', { className: 'muted' }, 'never')
  return h('span', {}, job.last_status ? badge(job.last_status) : null, job.last_run_at ? [' ', time(job.last_run_at)] : null)
}

const VIEWS = {
  overview: {
    title: 'Overview',
    async load() {
      const [health, instances, jobs, workflows, approvals, tasks, processes] = await Promise.all([
        api('/healthz', { accept: [503] }),
        api('/api/instances'),
        api('/api/cron/jobs'),
        api('/api/workflows/runs?status=running&limit=200'),
        api('/api/approvals?status=pending'),
        // A server with background tasks or exec switched off answers 404: show no counter then.
        api('/api/background/tasks?status=running', { accept: [404] }),
        api('/api/processes', { accept: [404] }),
      ])
      return { health, instances, jobs, workflows, approvals, tasks, processes }
    },
    render(data) {
      const jobs = data.jobs.jobs || []
      const failing = jobs.filter((job) => job.consecutive_failures > 0).length
      const health = data.health || {}
      return h('section', {},
        heading('Overview'),
        h('div', { className: 'counters' },
          counter('failing cron jobs', failing, '#/cron', true),
          counter('running workflows', data.workflows.count || 0, '#/workflows', false),
          counter('pending approvals', data.approvals.count || 0, '#/approvals', true),
          counter('cron jobs', jobs.length, '#/cron', false),
          data.tasks && data.tasks.tasks ? counter('running background tasks', data.tasks.tasks.length, '#/background', false) : null,
          data.processes && data.processes.processes ? counter('running processes', data.processes.processes.filter((process) => process.status === 'running').length, '#/processes', false) : null,
        ),
        h('h2', {}, 'Server'),
        h('dl', { className: 'facts' },
          field('Status', badge(health.status || 'unknown')),
          field('Database', [badge(health.database || 'unknown'), health.database_kind ? ' ' + health.database_kind : '']),
          field('Scheduler', badge(health.scheduler || 'unknown')),
          field('Version', health.version || '—'),
          field('This instance', h('code', {}, health.instance || '—')),
        ),
        h('h2', {}, 'Instances'),
        h('table', {},
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Instance'), h('th', { scope: 'col' }, 'Host'), h('th', { scope: 'col' }, 'Version'), h('th', { scope: 'col' }, 'Heartbeat'), h('th', { scope: 'col' }, 'State'))),
          h('tbody', {}, (data.instances.instances || []).map((instance) => h('tr', {},
            h('td', { 'data-label': 'Instance' }, h('code', {}, instance.id), instance.self ? ' (this one)' : ''),
            h('td', { 'data-label': 'Host' }, instance.host + ' pid ' + instance.pid),
            h('td', { 'data-label': 'Version' }, instance.version),
            h('td', { 'data-label': 'Heartbeat' }, time(instance.heartbeat_at)),
            h('td', { 'data-label': 'State' }, badge(instance.alive ? 'alive' : 'dead')),
          ))),
        ),
        (data.instances.leases || []).length === 0 ? null : [
          h('h2', {}, 'Leases'),
          h('ul', {}, data.instances.leases.map((lease) => h('li', {}, h('strong', {}, lease.name), ' held by ', h('code', {}, lease.owner || '—'), ' until ', time(lease.expires_at)))),
        ],
      )
    },
  },
  cron: {
    title: 'Cron',
    async load() {
      const jobs = await api('/api/cron/jobs')
      return { jobs: jobs.jobs || [] }
    },
    render(data) {
      if (data.jobs.length === 0) return h('section', {}, heading('Cron'), h('p', {}, 'No cron jobs yet. Create one with lango cron add, POST /api/cron/jobs, or ask an agent.'))
      return h('section', {},
        heading('Cron'),
        h('p', { className: 'notice', role: 'alert' }),
        h('table', { className: 'jobs' },
          h('thead', {}, h('tr', {}, ['Job', 'Schedule', 'Time zone', 'Next run', 'Last run', 'Failures in a row', 'Deliver to', 'State', 'Actions'].map((label) => h('th', { scope: 'col' }, label)))),
          h('tbody', {}, data.jobs.map((job) => h('tr', { 'data-job': job.name },
            h('th', { scope: 'row', 'data-label': 'Job' }, h('a', { href: '#/cron/' + encodeURIComponent(job.id) }, job.name), h('span', { className: 'muted kind' }, ' ' + job.kind)),
            h('td', { 'data-label': 'Schedule' }, scheduleCell(job)),
            h('td', { 'data-label': 'Time zone' }, job.timezone),
            h('td', { 'data-label': 'Next run', className: 'next-run' }, job.enabled ? time(job.next_run_at, job.timezone) : h('span', { className: 'muted' }, 'paused')),
            h('td', { 'data-label': 'Last run' }, lastRun(job)),
            h('td', { 'data-label': 'Failures in a row', className: 'streak' }, String(job.consecutive_failures || 0)),
            h('td', { 'data-label': 'Deliver to' }, job.deliver_to && job.deliver_to.length > 0 ? job.deliver_to.join(', ') : h('span', { className: 'muted' }, 'nowhere')),
            h('td', { 'data-label': 'State', className: 'state' }, jobState(job)),
            h('td', { 'data-label': 'Actions' }, jobActions(job)),
          ))),
        ),
      )
    },
  },
  job: {
    title: 'Cron job',
    async load(route) {
      const id = encodeURIComponent(route.id)
      const [one, runs] = await Promise.all([api('/api/cron/jobs/' + id), api('/api/cron/runs?job=' + id + '&limit=50')])
      return { job: one.job, nextRuns: one.next_runs || [], entries: runs.entries || [] }
    },
    render(data) {
      const job = data.job
      if (!job) return h('section', {}, heading('Cron job'), h('p', {}, 'This job no longer exists.'), h('a', { href: '#/cron' }, 'Back to all jobs'))
      const words = describeSchedule(job)
      return h('section', {},
        h('p', {}, h('a', { href: '#/cron' }, '← All cron jobs')),
        heading(job.name),
        h('p', { className: 'notice', role: 'alert' }),
        jobActions(job),
        h('dl', { className: 'facts' },
          field('State', jobState(job)),
          field('Last run', h('span', { className: 'last-run' }, lastRunOf(job, data.entries))),
          field('Failures in a row', h('span', { className: 'streak' }, String(job.consecutive_failures || 0))),
          field('Kind', job.kind),
          field('Schedule', [h('code', {}, job.schedule_type + ' ' + job.schedule), words ? ' — ' + words : '']),
          field('Time zone', job.timezone),
          field(job.kind === 'shell' ? 'Command' : 'Prompt', h('code', { className: 'wrap' }, job.command || job.prompt || '')),
          field('Deliver to', job.deliver_to && job.deliver_to.length > 0 ? job.deliver_to.join(', ') : 'nowhere'),
          field('Overlap', job.overlap),
          field('Time-out', duration(job.timeout_ms)),
        ),
        h('h2', {}, 'Next fire times'),
        job.enabled && data.nextRuns.length > 0
          ? h('ol', { className: 'next-runs' }, data.nextRuns.map((run) => h('li', {}, time(run.utc, run.timezone), ' ', h('span', { className: 'muted' }, run.local))))
          : h('p', { className: 'muted' }, job.enabled ? 'None scheduled.' : 'None while paused.'),
        h('h2', { id: 'history-heading' }, 'History'),
        data.entries.length === 0
          ? h('p', { className: 'muted' }, 'No runs yet.')
          : h('ol', { className: 'timeline', 'aria-labelledby': 'history-heading' }, data.entries.map(historyEntry)),
      )
    },
  },
  workflows: {
    title: 'Workflows',
    async load() {
      const [runs, saved] = await Promise.all([api('/api/workflows/runs?limit=50'), api('/api/workflows/saved')])
      return { runs: runs.runs || [], saved: saved.saved || [], schedules: saved.schedules || {} }
    },
    render(data) {
      const runs = data.runs
      return h('section', {},
        heading('Workflows'),
        runs.length === 0
          ? h('p', {}, 'No workflow runs yet. Start one with lango workflow run or POST /api/workflows/runs.')
          : h('table', { className: 'runs' },
              h('thead', {}, h('tr', {}, ['Run', 'Status', 'Steps done', 'Started', 'Ended', 'Error'].map((label) => h('th', { scope: 'col' }, label)))),
              h('tbody', {}, runs.map((run) => h('tr', { 'data-run': run.run_id },
                h('th', { scope: 'row', 'data-label': 'Run' }, h('a', { href: '#/workflows/' + encodeURIComponent(run.run_id) }, run.workflow_name), h('span', { className: 'muted small' }, ' ' + run.run_id.slice(0, 8))),
                h('td', { 'data-label': 'Status', className: 'status' }, badge(run.status)),
                h('td', { 'data-label': 'Steps done' }, run.completed_steps + ' of ' + run.total_steps),
                h('td', { 'data-label': 'Started' }, time(run.started_at)),
                h('td', { 'data-label': 'Ended' }, time(run.completed_at)),
                h('td', { 'data-label': 'Error' }, run.error || ''),
              ))),
            ),
        data.saved.length > 0 ? savedWorkflows(data.saved, data.schedules) : null,
      )
    },
  },
  run: {
    title: 'Workflow run',
    async load(route) {
      return api('/api/workflows/runs/' + encodeURIComponent(route.id))
    },
    render(run) {
      const active = run.status === 'running' || run.status === 'pending'
      return h('section', {},
        h('p', {}, h('a', { href: '#/workflows' }, '← All workflow runs')),
        heading(run.workflow_name),
        h('p', { className: 'notice', role: 'alert' }),
        h('dl', { className: 'facts' },
          field('Status', h('span', { className: 'run-status' }, badge(run.status))),
          field('Run', h('code', {}, run.run_id)),
          field('Steps done', run.completed_steps + ' of ' + run.total_steps),
          field('Started', time(run.started_at)),
          field('Ended', time(run.completed_at)),
          run.error ? field('Error', run.error) : null,
        ),
        active
          ? h('div', { className: 'actions' }, h('button', { type: 'button', className: 'deny', 'data-key': 'cancel:' + run.run_id, onclick: (event) => act(event.currentTarget, () => post('/api/workflows/runs/' + encodeURIComponent(run.run_id) + '/cancel'), (answer) => 'Cancelled ' + run.workflow_name + ' (' + answer.status + ')') }, 'Cancel run'))
          : null,
        stepGraphSection(run),
        h('h2', { id: 'steps-heading' }, 'Steps in order'),
        h('ol', { className: 'steps', 'aria-labelledby': 'steps-heading' }, (run.steps || []).map((step) => h('li', { className: 'step', 'data-step': step.step_id, 'data-status': step.status },
          h('div', { className: 'entry-head' },
            h('strong', {}, step.step_id), ' ', badge(step.status),
            step.attempt > 1 ? h('span', { className: 'muted' }, ' · attempt ' + step.attempt) : null,
            step.started_at ? [' ', time(step.started_at)] : null,
            step.started_at && step.completed_at ? h('span', { className: 'muted' }, ' · ' + duration(new Date(step.completed_at) - new Date(step.started_at))) : null,
          ),
          step.error ? h('p', { className: 'reason' }, 'Error: ' + step.error) : null,
          step.result ? h('details', { 'data-key': 'step-result:' + step.step_id }, h('summary', {}, 'Result'), h('pre', {}, String(step.result).slice(0, 4000))) : null,
        ))),
      )
    },
  },
  background: {
    title: 'Background tasks',
    async load() {
      return api('/api/background/tasks')
    },
    render(data) {
      const tasks = data.tasks || []
      return h('section', {},
        heading('Background tasks'),
        h('p', { className: 'notice', role: 'alert' }),
        tasks.length === 0
          ? h('p', { className: 'empty' }, 'No background tasks. An agent starts one with bg_submit, and POST /api/background/tasks submits one; either needs a configured model to run.')
          : h('table', { className: 'tasks' },
              h('thead', {}, h('tr', {}, ['Task', 'Status', 'Submitted', 'Started', 'Took', 'Result', 'Actions'].map((label) => h('th', { scope: 'col' }, label)))),
              h('tbody', {}, tasks.map((task) => {
                const active = task.status === 'pending' || task.status === 'running'
                const took = task.started_at && task.completed_at ? duration(new Date(task.completed_at) - new Date(task.started_at)) : ''
                return h('tr', { 'data-task': task.task_id },
                  h('th', { scope: 'row', 'data-label': 'Task' }, h('span', { className: 'wrap' }, oneLine(task.prompt, 160)), h('span', { className: 'muted small' }, ' ' + task.task_id.slice(0, 8))),
                  h('td', { 'data-label': 'Status', className: 'status' }, badge(task.status)),
                  h('td', { 'data-label': 'Submitted' }, time(task.created_at)),
                  h('td', { 'data-label': 'Started' }, time(task.started_at)),
                  h('td', { 'data-label': 'Took' }, took || h('span', { className: 'muted' }, active ? 'still going' : '—')),
                  h('td', { 'data-label': 'Result', className: 'result' },
                    task.error ? h('p', { className: 'reason' }, 'Error: ' + task.error) : null,
                    task.result ? h('details', { 'data-key': 'result:' + task.task_id }, h('summary', {}, 'Result'), h('pre', {}, String(task.result).slice(0, 4000))) : null,
                    !task.error && !task.result ? h('span', { className: 'muted' }, active ? 'not yet' : 'none') : null,
                  ),
                  h('td', { 'data-label': 'Actions' }, active
                    ? h('button', { type: 'button', className: 'deny', 'data-key': 'cancel-task:' + task.task_id, 'aria-label': 'Cancel task ' + task.task_id.slice(0, 8), onclick: (event) => act(event.currentTarget, () => post('/api/background/tasks/' + encodeURIComponent(task.task_id) + '/cancel'), (answer) => 'Cancelled task ' + task.task_id.slice(0, 8) + ' (' + answer.status + ')') }, 'Cancel')
                    : h('span', { className: 'muted' }, '—')),
                )
              })),
            ),
      )
    },
  },
  processes: {
    title: 'Processes',
    // Output and exits of background processes come with no event: read them again every 2 s.
    pollMs: 2000,
    async load() {
      return api('/api/processes')
    },
    render(data) {
      const processes = data.processes || []
      const running = processes.filter((process) => process.status === 'running')
      const ended = processes.filter((process) => process.status !== 'running')
      return h('section', {},
        heading('Processes'),
        h('p', { className: 'notice', role: 'alert' }),
        h('p', { className: 'muted small' }, 'Background commands started with exec_bg (by an agent or POST /api/tools/exec_bg). This page reads them again every 2 seconds while it is open.'),
        h('h2', {}, 'Running'),
        running.length === 0 ? h('p', { className: 'empty' }, 'No background process is running.') : h('ul', { className: 'cards' }, running.map(processCard)),
        ended.length === 0 ? null : [h('h2', {}, 'Ended'), h('ul', { className: 'cards' }, ended.map(processCard))],
      )
    },
  },
  approvals: {
    title: 'Approvals',
    async load() {
      return api('/api/approvals?status=pending')
    },
    render(data) {
      const approvals = data.approvals || []
      return h('section', {},
        heading('Approvals'),
        h('p', { className: 'notice', role: 'alert' }),
        approvals.length === 0
          ? h('p', {}, 'Nothing is waiting for approval.')
          : h('ul', { className: 'cards' }, approvals.map((approval) => h('li', { className: 'card', 'data-approval': approval.id },
              h('h2', {}, approval.tool, ' ', badge(approval.safety || 'pending')),
              h('pre', { className: 'summary', id: 'summary-' + approval.id }, approval.summary),
              h('p', { className: 'muted' }, 'Asked ', time(approval.created_at), '; expires ', time(approval.expires_at), approval.session_key ? '; session ' + approval.session_key : ''),
              h('div', { className: 'actions' },
                h('button', { type: 'button', className: 'approve', 'data-key': 'approve:' + approval.id, 'aria-describedby': 'summary-' + approval.id, onclick: (event) => act(event.currentTarget, () => post('/api/approvals/' + encodeURIComponent(approval.id), { decision: 'approve' }), (answer) => 'Approved: ' + headline(approval.summary) + ' (' + answer.status + ')') }, 'Approve'),
                h('button', { type: 'button', className: 'deny', 'data-key': 'deny:' + approval.id, 'aria-describedby': 'summary-' + approval.id, onclick: (event) => act(event.currentTarget, () => post('/api/approvals/' + encodeURIComponent(approval.id), { decision: 'deny' }), (answer) => 'Denied: ' + headline(approval.summary) + ' (' + answer.status + ')') }, 'Deny'),
              ),
            ))),
      )
    },
  },
}

// ---- a workflow run's steps as a graph: topological layers, SVG edges ---------

const SVG_NS = 'http://www.w3.org/2000/svg'

function svg(tag, attributes, ...children) {
  const element = document.createElementNS(SVG_NS, tag)
  for (const [name, value] of Object.entries(attributes || {})) element.setAttribute(name, String(value))
  element.append(...children)
  return element
}

/**
 * Steps in layers: a step's layer is one more than its deepest dependency's. Within a layer, steps
 * sit near the mean position of their dependencies (fewer crossing edges), else in run order.
 */
function stepLayers(steps) {
  const byId = new Map(steps.map((step) => [step.step_id, step]))
  const depth = new Map()
  const visit = (id, trail) => {
    if (depth.has(id)) return depth.get(id)
    // The engine refuses cycles; this only keeps a bad answer from looping.
    if (trail.has(id)) return 0
    trail.add(id)
    let level = 0
    for (const dependency of byId.get(id).depends_on) {
      if (byId.has(dependency)) level = Math.max(level, visit(dependency, trail) + 1)
    }
    trail.delete(id)
    depth.set(id, level)
    return level
  }
  const layers = []
  for (const step of steps) {
    const level = visit(step.step_id, new Set())
    if (!layers[level]) layers[level] = []
    layers[level].push(step)
  }
  const position = new Map()
  layers.forEach((layer, index) => {
    if (index > 0) {
      const order = new Map(layer.map((step, at) => [step.step_id, at]))
      const weight = (step) => {
        const placed = step.depends_on.filter((dependency) => position.has(dependency))
        return placed.length === 0 ? Number.MAX_VALUE : placed.reduce((sum, dependency) => sum + position.get(dependency), 0) / placed.length
      }
      layer.sort((a, b) => weight(a) - weight(b) || order.get(a.step_id) - order.get(b.step_id))
    }
    layer.forEach((step, at) => position.set(step.step_id, at))
  })
  return layers
}

function stepGraphSection(run) {
  const steps = run.steps || []
  if (steps.length === 0) return null
  const heading = h('h2', { id: 'graph-heading' }, 'Step graph')
  if (!steps.every((step) => Array.isArray(step.depends_on))) {
    return [heading, h('p', { className: 'muted' }, 'No graph: this run does not say which steps depend on which (its stored definition no longer parses).')]
  }
  const byId = new Map(steps.map((step) => [step.step_id, step]))
  const chosen = byId.get(selectedSteps.get(run.run_id))
  const edges = []
  for (const step of steps) {
    for (const dependency of step.depends_on) {
      if (byId.has(dependency)) edges.push({ from: dependency, to: step.step_id, status: byId.get(dependency).status })
    }
  }
  const lines = svg('svg', { class: 'edges', 'aria-hidden': 'true', focusable: 'false' })
  const graph = h('div', { className: 'graph', role: 'group', 'aria-labelledby': 'graph-heading', 'aria-describedby': 'graph-help' },
    lines,
    stepLayers(steps).map((layer, index) => h('div', { className: 'layer', 'data-layer': index }, layer.map((step) => stepNode(run, step, chosen)))),
  )
  if (graphObserver !== null) graphObserver.disconnect()
  // Edges are drawn once the boxes have a place, and again whenever the graph changes size.
  graphObserver = new ResizeObserver(() => drawEdges(graph, lines, edges))
  graphObserver.observe(graph)
  return [
    heading,
    h('p', { id: 'graph-help', className: 'muted small' }, 'Each box is a step and its state; lines lead from a step to the steps that wait for it. Choose a step to see its result or error.'),
    graph,
    stepDetail(chosen),
  ]
}

function stepNode(run, step, chosen) {
  const after = step.depends_on.length > 0 ? 'after ' + step.depends_on.join(', ') : 'starts first'
  return h('button', {
    type: 'button',
    className: 'node',
    'data-step': step.step_id,
    'data-status': step.status,
    'data-key': 'node:' + step.step_id,
    'aria-pressed': chosen === step ? 'true' : 'false',
    'aria-controls': 'step-detail',
    onclick: () => {
      selectedSteps.set(run.run_id, chosen === step ? undefined : step.step_id)
      rerender()
    },
  },
  h('span', { className: 'node-id' }, step.step_id),
  badge(step.status),
  h('span', { className: 'node-after' }, after))
}

function stepDetail(step) {
  if (!step) return h('p', { id: 'step-detail', className: 'step-detail muted' }, 'No step chosen.')
  const ended = step.started_at && step.completed_at ? duration(new Date(step.completed_at) - new Date(step.started_at)) : ''
  const waiting = step.status === 'pending' || step.status === 'running'
  return h('section', { id: 'step-detail', className: 'step-detail', 'data-step': step.step_id, 'aria-labelledby': 'step-detail-heading' },
    h('h3', { id: 'step-detail-heading' }, 'Step ' + step.step_id + ' ', badge(step.status)),
    h('dl', { className: 'facts' },
      field('Depends on', step.depends_on.length > 0 ? step.depends_on.join(', ') : 'nothing'),
      field('Attempt', String(step.attempt || 0)),
      field('Started', time(step.started_at)),
      field('Ended', [time(step.completed_at), ended ? h('span', { className: 'muted' }, ' · ' + ended) : null]),
    ),
    step.error ? h('p', { className: 'reason' }, 'Error: ' + step.error) : null,
    step.result
      ? [h('h4', {}, 'Result'), h('pre', { className: 'result' }, String(step.result).slice(0, 4000))]
      : step.error ? null : h('p', { className: 'muted' }, waiting ? 'No result yet.' : 'No result.'),
  )
}

/** Lines from each step to the steps that wait for it: left to right, or top to bottom on a phone. */
function drawEdges(graph, lines, edges) {
  if (!graph.isConnected) return
  lines.setAttribute('width', '0')
  lines.setAttribute('height', '0')
  const width = graph.scrollWidth
  const height = graph.scrollHeight
  lines.setAttribute('width', String(width))
  lines.setAttribute('height', String(height))
  lines.setAttribute('viewBox', '0 0 ' + width + ' ' + height)
  const frame = graph.getBoundingClientRect()
  const boxes = new Map()
  for (const node of graph.querySelectorAll('.node')) {
    const rect = node.getBoundingClientRect()
    const left = rect.left - frame.left + graph.scrollLeft
    const top = rect.top - frame.top + graph.scrollTop
    boxes.set(node.dataset.step, { left, top, right: left + rect.width, bottom: top + rect.height })
  }
  const downward = getComputedStyle(graph).flexDirection === 'column'
  const round = (value) => Math.round(value * 10) / 10
  // One arrow head per state, coloured like its line (a marker cannot take the line's colour).
  const states = [...new Set(edges.map((edge) => edge.status))]
  const arrows = states.map((status) => svg('marker', { id: 'edge-arrow-' + status, 'data-status': status, viewBox: '0 0 10 10', refX: '9', refY: '5', markerWidth: '7', markerHeight: '7', orient: 'auto-start-reverse' }, svg('path', { d: 'M0 0 L10 5 L0 10 z' })))
  const paths = []
  for (const edge of edges) {
    const from = boxes.get(edge.from)
    const to = boxes.get(edge.to)
    if (!from || !to) continue
    let d
    if (downward) {
      const x1 = round((from.left + from.right) / 2)
      const y1 = round(from.bottom)
      const x2 = round((to.left + to.right) / 2)
      const y2 = round(to.top)
      const middle = round((y1 + y2) / 2)
      d = 'M' + x1 + ' ' + y1 + ' C' + x1 + ' ' + middle + ' ' + x2 + ' ' + middle + ' ' + x2 + ' ' + y2
    } else {
      const x1 = round(from.right)
      const y1 = round((from.top + from.bottom) / 2)
      const x2 = round(to.left)
      const y2 = round((to.top + to.bottom) / 2)
      const middle = round((x1 + x2) / 2)
      d = 'M' + x1 + ' ' + y1 + ' C' + middle + ' ' + y1 + ' ' + middle + ' ' + y2 + ' ' + x2 + ' ' + y2
    }
    paths.push(svg('path', { class: 'edge', d, 'data-from': edge.from, 'data-to': edge.to, 'data-status': edge.status, 'marker-end': 'url(#edge-arrow-' + edge.status + ')' }))
  }
  lines.replaceChildren(svg('defs', {}, ...arrows), ...paths)
}

function oneLine(text, limit) {
  const line = String(text || '').replace(/\s+/g, ' ').trim()
  return line.length > limit ? line.slice(0, limit - 1) + '…' : line
}

function processCard(process) {
  const running = process.status === 'running'
  const label = process.status === 'exited' && process.exit_code !== null ? 'exited ' + process.exit_code : undefined
  const tone = process.status === 'exited' ? (process.exit_code === 0 ? 'completed' : 'failed') : process.status
  return h('li', { className: 'card', 'data-process': process.id, 'data-status': process.status },
    h('h3', {}, h('code', { className: 'wrap' }, oneLine(process.command, 200))),
    h('p', {}, h('span', { className: 'badge tone-' + (STATUS_TONE[tone] || 'muted'), 'data-status': process.status }, label || process.status.replace(/_/g, ' ')),
      h('span', { className: 'muted' }, ' · id ' + process.id + ' · pid ' + process.pid + ' · started '), time(process.started_at),
      process.ended_at ? [h('span', { className: 'muted' }, ' · ended '), time(process.ended_at)] : null,
    ),
    process.output_tail
      ? h('details', { open: running, 'data-key': 'tail:' + process.id }, h('summary', {}, 'Last output (' + process.output_bytes + ' bytes in all)'), h('pre', { className: 'tail' }, process.output_tail))
      : h('p', { className: 'muted' }, 'No output yet.'),
    running
      ? h('div', { className: 'actions' }, h('button', { type: 'button', className: 'deny', 'data-key': 'stop:' + process.id, 'aria-label': 'Stop ' + oneLine(process.command, 60), onclick: (event) => act(event.currentTarget, () => post('/api/processes/' + encodeURIComponent(process.id) + '/stop'), (answer) => 'Stopped ' + oneLine(process.command, 60) + ' (' + answer.status + ')') }, 'Stop'))
      : null,
  )
}

function historyEntry(entry) {
  const reasons = []
  if (entry.status === 'skipped') reasons.push('Skipped' + (entry.skip_reason ? ': ' + entry.skip_reason : ''))
  if (entry.status === 'interrupted') reasons.push('Interrupted: the server stopped during the run')
  if (entry.error && entry.status !== 'interrupted') reasons.push('Error: ' + entry.error)
  else if (entry.error) reasons.push(entry.error)
  if (entry.delivery_status === 'failed') reasons.push('Delivery failed')
  return h('li', { className: 'entry', 'data-status': entry.status, 'data-run': entry.id },
    h('div', { className: 'entry-head' },
      badge(entry.status),
      entry.delivery_status && entry.delivery_status !== 'none' ? [' ', badge(entry.delivery_status, 'delivery ' + entry.delivery_status)] : null,
      ' ', time(entry.started_at || entry.scheduled_for),
      h('span', { className: 'muted' }, ' · ' + entry.trigger + (entry.duration_ms !== null ? ' · ' + duration(entry.duration_ms) : '')),
    ),
    reasons.map((reason) => h('p', { className: 'reason' }, reason)),
    entry.result ? h('details', { 'data-key': 'output:' + entry.id }, h('summary', {}, 'Output'), h('pre', {}, String(entry.result).slice(0, 4000))) : null,
  )
}

// ---- token prompt ------------------------------------------------------------

function askForToken(message) {
  disconnectEvents()
  currentRoute = null
  token = ''
  sessionStorage.removeItem(TOKEN_KEY)
  forgetButton.hidden = true
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false', 'aria-describedby': 'token-help' })
  const form = h('form', { className: 'token-form', onsubmit: (event) => {
    event.preventDefault()
    const value = input.value.trim()
    if (!value) return
    token = value
    sessionStorage.setItem(TOKEN_KEY, token)
    forgetButton.hidden = false
    navigate()
  } },
    h('h1', {}, 'API token'),
    h('p', { id: 'token-help' }, 'This server needs its API token (LANGO_API_TOKEN). It is kept in this browser tab only, until you close it.'),
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
    element.textContent = ' (' + relative(new Date(element.parentElement.getAttribute('datetime'))) + ')'
  }
}, 30000)

document.addEventListener('visibilitychange', () => {
  if (!document.hidden && currentRoute !== null && VIEWS[currentRoute.view].pollMs) scheduleRefresh()
})
forgetButton.addEventListener('click', () => askForToken(''))
forgetButton.hidden = !token
window.addEventListener('hashchange', navigate)
navigate()
`
