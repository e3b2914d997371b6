/**
 * The dashboard's one hand-written ES module (no framework, no bundler), served as
 * `/ui/app.js`. It is plain browser JavaScript kept in a raw template literal so tsup inlines it
 * into dist: it must contain no backtick and no dollar-brace. Every text from the API goes in with
 * `textContent` (the `h` helper), never as HTML.
 */
export const UI_SCRIPT = String.raw`// Lango dashboard (apps/server/src/ui/script.ts)
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

function setLive(state, text) {
  liveStatus.dataset.state = state
  liveStatus.textContent = 'Live updates: ' + text
}

const STATUS_TONE = {
  ok: 'good', running: 'info', completed: 'good', delivered: 'good', approved: 'good', alive: 'good',
  enabled: 'good', failed: 'bad', timed_out: 'bad', interrupted: 'warn', cancelled: 'warn',
  skipped: 'warn', denied: 'bad', expired: 'warn', pending: 'info', paused: 'warn', stopped: 'bad',
  unavailable: 'bad', dead: 'bad', disabled: 'muted', none: 'muted', starting: 'warn', stopping: 'warn',
}

/** A status as text with a colour; the colour is never the only signal. */
function badge(status, label) {
  const text = String(status)
  return h('span', { className: 'badge tone-' + (STATUS_TONE[text] || 'muted'), 'data-status': text }, label || text.replace(/_/g, ' '))
}

function time(iso, zone) {
  if (iso === null || iso === undefined || iso === '') return h('span', { className: 'muted' }, '—')
  const date = new Date(iso)
  const options = { dateStyle: 'medium', timeStyle: 'short' }
  let text
  try {
    text = date.toLocaleString(undefined, zone ? Object.assign({ timeZone: zone }, options) : options)
  } catch {
    text = date.toLocaleString(undefined, options)
  }
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

// ---- schedules in words (common forms only; the raw text is always shown) --

const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday']
const UNIT_NAMES = { ms: 'millisecond', s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week' }

function describeSchedule(job) {
  if (job.schedule_type === 'every') return describeEvery(job.schedule)
  if (job.schedule_type === 'at') return 'once'
  return describeCron(job.schedule)
}

function describeEvery(text) {
  const parts = []
  const pattern = /(\d+)\s*(ms|s|m|h|d|w)/gi
  let consumed = ''
  for (const match of String(text).matchAll(pattern)) {
    consumed += match[0]
    const amount = Number(match[1])
    const unit = UNIT_NAMES[match[2].toLowerCase()]
    parts.push(amount === 1 ? unit : amount + ' ' + unit + 's')
  }
  if (parts.length === 0 || consumed.replace(/\s/g, '') !== String(text).replace(/\s/g, '')) return ''
  return 'every ' + parts.join(' ')
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
  if (controller.signal.aborted) return
  setLive('off', 'disconnected, retrying in ' + Math.round(retryDelay / 1000) + ' s')
  retryTimer = setTimeout(connectEvents, retryDelay)
  retryDelay = Math.min(retryDelay * 2, 30000)
}

function disconnectEvents() {
  clearTimeout(retryTimer)
  if (stream !== null) stream.abort()
  stream = null
  setLive('off', 'off')
}

async function readEvents(controller) {
  const response = await fetch('/api/events', { headers: Object.assign({ accept: 'text/event-stream' }, authHeaders()), signal: controller.signal, cache: 'no-store' })
  if (response.status === 401) throw new AuthError('The server refused this token.')
  if (!response.ok || response.body === null) throw new Error('HTTP ' + response.status)
  setLive('on', 'on')
  retryDelay = 1000
  // Events may have been missed while disconnected.
  scheduleRefresh()
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
  if (type === 'approval.pending' && data && typeof data.summary === 'string') announce('New approval request: ' + data.summary)
  if (type.startsWith('cron.') && (view === 'cron' || view === 'job' || view === 'overview')) scheduleRefresh()
  else if (type.startsWith('approval.') && (view === 'approvals' || view === 'overview')) scheduleRefresh()
  else if (type.startsWith('workflow.run.') && view === 'overview') scheduleRefresh()
  else if (type.startsWith('workflow.') && view === 'workflows') scheduleRefresh()
  else if (type.startsWith('workflow.') && view === 'run' && data && data.run_id === currentRoute.id) scheduleRefresh()
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
  const route = currentRoute
  try {
    const data = await VIEWS[route.view].load(route)
    if (route !== currentRoute) return
    render(VIEWS[route.view].render(data, route))
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

/** Replaces the view, keeping keyboard focus on the control with the same data-key. */
function render(node) {
  const focused = document.activeElement && main.contains(document.activeElement) ? document.activeElement.getAttribute('data-key') : null
  main.replaceChildren(node)
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
  return { view: 'overview' }
}

function navigate() {
  if (tokenRequired && !token) {
    askForToken('')
    return
  }
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
  refresh()
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

const FAILURES = new Set(['failed', 'timed_out'])

/** Failures in a row per job id, from the newest runs (the job list does not carry the count). */
function failureStreaks(entries) {
  const streaks = new Map()
  const settled = new Set()
  for (const entry of entries) {
    if (settled.has(entry.job_id) || entry.status === 'running' || entry.status === 'skipped') continue
    if (FAILURES.has(entry.status)) streaks.set(entry.job_id, (streaks.get(entry.job_id) || 0) + 1)
    else settled.add(entry.job_id)
  }
  return streaks
}

function jobActions(job) {
  const toggle = job.enabled
    ? h('button', { type: 'button', 'data-key': 'pause:' + job.id, 'aria-label': 'Pause ' + job.name, onclick: (event) => act(event.currentTarget, () => post('/api/cron/jobs/' + encodeURIComponent(job.id) + '/pause'), () => 'Paused ' + job.name) }, 'Pause')
    : h('button', { type: 'button', 'data-key': 'resume:' + job.id, 'aria-label': 'Resume ' + job.name, onclick: (event) => act(event.currentTarget, () => post('/api/cron/jobs/' + encodeURIComponent(job.id) + '/resume'), () => 'Resumed ' + job.name) }, 'Resume')
  const run = h('button', { type: 'button', 'data-key': 'run:' + job.id, 'aria-label': 'Run ' + job.name + ' now', onclick: (event) => act(event.currentTarget, () => post('/api/cron/jobs/' + encodeURIComponent(job.id) + '/trigger'), () => 'Started ' + job.name) }, 'Run now')
  return h('div', { className: 'actions' }, toggle, run)
}

function scheduleCell(job) {
  const words = describeSchedule(job)
  return h('span', {}, h('code', {}, job.schedule_type + ' ' + job.schedule), words ? h('span', { className: 'words' }, words) : null)
}

function lastRun(job) {
  if (!job.last_status && !job.last_run_at) return h('span', { className: 'muted' }, 'never')
  return h('span', {}, job.last_status ? badge(job.last_status) : null, job.last_run_at ? [' ', time(job.last_run_at)] : null)
}

const VIEWS = {
  overview: {
    title: 'Overview',
    async load() {
      const [health, instances, jobs, workflows, approvals] = await Promise.all([
        api('/healthz', { accept: [503] }),
        api('/api/instances'),
        api('/api/cron/jobs'),
        api('/api/workflows/runs?status=running&limit=200'),
        api('/api/approvals?status=pending'),
      ])
      return { health, instances, jobs, workflows, approvals }
    },
    render(data) {
      const jobs = data.jobs.jobs || []
      const failing = jobs.filter((job) => FAILURES.has(job.last_status)).length
      const health = data.health || {}
      return h('section', {},
        heading('Overview'),
        h('div', { className: 'counters' },
          counter('failing cron jobs', failing, '#/cron', true),
          counter('running workflows', data.workflows.count || 0, '#/workflows', false),
          counter('pending approvals', data.approvals.count || 0, '#/approvals', true),
          counter('cron jobs', jobs.length, '#/cron', false),
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
      const [jobs, runs] = await Promise.all([api('/api/cron/jobs'), api('/api/cron/runs?limit=200')])
      return { jobs: jobs.jobs || [], streaks: failureStreaks(runs.entries || []) }
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
            h('td', { 'data-label': 'Failures in a row', className: 'streak' }, String(data.streaks.get(job.id) || 0)),
            h('td', { 'data-label': 'Deliver to' }, job.deliver_to && job.deliver_to.length > 0 ? job.deliver_to.join(', ') : h('span', { className: 'muted' }, 'nowhere')),
            h('td', { 'data-label': 'State', className: 'state' }, jobState(job)),
            h('td', { 'data-label': 'Actions' }, jobActions(job)),
          ))),
        ),
        h('p', { className: 'muted small' }, 'Failures in a row are counted from the last 200 runs of all jobs.'),
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
      return api('/api/workflows/runs?limit=50')
    },
    render(data) {
      const runs = data.runs || []
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
        data.saved && data.saved.length > 0 ? [h('h2', {}, 'Saved workflows'), h('ul', {}, data.saved.map((name) => h('li', {}, h('code', {}, String(name)))))] : null,
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
        h('h2', { id: 'steps-heading' }, 'Steps'),
        h('ol', { className: 'steps', 'aria-labelledby': 'steps-heading' }, (run.steps || []).map((step) => h('li', { className: 'step', 'data-step': step.step_id, 'data-status': step.status },
          h('div', { className: 'entry-head' },
            h('strong', {}, step.step_id), ' ', badge(step.status),
            step.attempt > 1 ? h('span', { className: 'muted' }, ' · attempt ' + step.attempt) : null,
            step.started_at ? [' ', time(step.started_at)] : null,
            step.started_at && step.completed_at ? h('span', { className: 'muted' }, ' · ' + duration(new Date(step.completed_at) - new Date(step.started_at))) : null,
          ),
          step.error ? h('p', { className: 'reason' }, 'Error: ' + step.error) : null,
          step.result ? h('details', {}, h('summary', {}, 'Result'), h('pre', {}, String(step.result).slice(0, 4000))) : null,
        ))),
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
                h('button', { type: 'button', className: 'approve', 'data-key': 'approve:' + approval.id, 'aria-describedby': 'summary-' + approval.id, onclick: (event) => act(event.currentTarget, () => post('/api/approvals/' + encodeURIComponent(approval.id), { decision: 'approve' }), (answer) => 'Approved: ' + approval.summary + ' (' + answer.status + ')') }, 'Approve'),
                h('button', { type: 'button', className: 'deny', 'data-key': 'deny:' + approval.id, 'aria-describedby': 'summary-' + approval.id, onclick: (event) => act(event.currentTarget, () => post('/api/approvals/' + encodeURIComponent(approval.id), { decision: 'deny' }), (answer) => 'Denied: ' + approval.summary + ' (' + answer.status + ')') }, 'Deny'),
              ),
            ))),
      )
    },
  },
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
    entry.result ? h('details', {}, h('summary', {}, 'Output'), h('pre', {}, String(entry.result).slice(0, 4000))) : null,
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

forgetButton.addEventListener('click', () => askForToken(''))
forgetButton.hidden = !token
window.addEventListener('hashchange', navigate)
navigate()
`
