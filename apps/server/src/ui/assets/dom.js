// @ts-check
/**
 * DOM helpers of the dashboard: every text from the API goes in with `textContent` (the `h` helper),
 * never as HTML; statuses, times and durations as the pages show them.
 */

const announcer = /** @type {HTMLElement} */ (document.getElementById('announcer'))

export function h(tag, attributes, ...children) {
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

export function announce(text) {
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
export function headline(summary) {
  const first = String(summary).split('\n')[0]
  return first.length > 160 ? `${first.slice(0, 160)}…` : first
}

export const STATUS_TONE = {
  ok: 'good',
  running: 'info',
  completed: 'good',
  delivered: 'good',
  approved: 'good',
  alive: 'good',
  enabled: 'good',
  failed: 'bad',
  timed_out: 'bad',
  interrupted: 'warn',
  cancelled: 'warn',
  skipped: 'warn',
  missed: 'bad',
  stalled: 'bad',
  denied: 'bad',
  expired: 'warn',
  pending: 'info',
  sending: 'info',
  paused: 'warn',
  stopped: 'bad',
  unavailable: 'bad',
  dead: 'bad',
  disabled: 'muted',
  none: 'muted',
  starting: 'warn',
  stopping: 'warn',
  done: 'good',
  killed: 'warn',
  exited: 'muted',
}

/** A status as text with a colour; the colour is never the only signal. */
export function badge(status, label) {
  const text = String(status)
  return h(
    'span',
    { className: `badge tone-${STATUS_TONE[text] || 'muted'}`, 'data-status': text },
    label || text.replace(/_/g, ' '),
  )
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
    /** @type {Intl.DateTimeFormatOptions} */
    const options = { dateStyle: 'medium', timeStyle: 'short' }
    try {
      formatter = new Intl.DateTimeFormat(
        undefined,
        zone ? Object.assign({ timeZone: zone }, options) : options,
      )
    } catch {
      formatter = new Intl.DateTimeFormat(undefined, options)
    }
    FORMATTERS.set(key, formatter)
  }
  return formatter
}

export function time(iso, zone) {
  if (iso === null || iso === undefined || iso === '') return h('span', { className: 'muted' }, '—')
  const date = new Date(iso)
  const text = formatterFor(zone).format(date)
  return h(
    'time',
    { datetime: date.toISOString(), title: date.toISOString() },
    text,
    h('span', { className: 'relative' }, ` (${relative(date)})`),
  )
}

export function relative(date) {
  const seconds = Math.round((date.getTime() - Date.now()) / 1000)
  const abs = Math.abs(seconds)
  if (abs < 5) return 'just now'
  let amount
  if (abs < 60) amount = `${abs} s`
  else if (abs < 3600) amount = `${Math.round(abs / 60)} min`
  else if (abs < 172800) amount = `${Math.round(abs / 3600)} h`
  else amount = `${Math.round(abs / 86400)} days`
  return seconds >= 0 ? `in ${amount}` : `${amount} ago`
}

export function duration(ms) {
  if (ms === null || ms === undefined) return ''
  if (ms < 1000) return `${ms} ms`
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`
  return `${Math.round(ms / 60000)} min`
}

export function heading(text) {
  return h('h1', {}, text)
}

export function counter(label, value, href, bad) {
  return h(
    'a',
    { className: `counter${bad && value > 0 ? ' tone-bad' : ''}`, href },
    h('span', { className: 'count' }, String(value)),
    h('span', {}, label),
  )
}

export function field(label, value) {
  return [h('dt', {}, label), h('dd', {}, value)]
}

const SVG_NS = 'http://www.w3.org/2000/svg'

export function svg(tag, attributes, ...children) {
  const element = document.createElementNS(SVG_NS, tag)
  for (const [name, value] of Object.entries(attributes || {})) element.setAttribute(name, String(value))
  element.append(...children)
  return element
}

export function oneLine(text, limit) {
  const line = String(text || '')
    .replace(/\s+/g, ' ')
    .trim()
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line
}
