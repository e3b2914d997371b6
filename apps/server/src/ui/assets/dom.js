// @ts-check
/**
 * DOM helpers of the dashboard: every text from the API goes in with `textContent` (the `h` helper),
 * never as HTML; statuses, times and durations as the pages show them.
 */

const announcer = /** @type {HTMLElement} */ (document.getElementById('announcer'))

/**
 * Characters that change how text around them is drawn while staying invisible: bidi embeddings,
 * overrides and isolates, marks, zero-width spaces, line and paragraph separators, and C0/C1
 * controls but tab, newline and carriage return. A command drawn with them can read differently from
 * what runs (`# …` seeming to comment out a pipeline that runs), so they are shown as `\u{202e}`,
 * as the CLI shows them.
 */
const INVISIBLE = /(?![\t\n\r])[\p{Cc}\u061c\u200b\u200e\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]/gu

/** `text` with every {@link INVISIBLE} character written out as `\u{…}`. */
function visible(text) {
  return text.replace(INVISIBLE, (character) => `\\u{${(character.codePointAt(0) || 0).toString(16)}}`)
}

/**
 * An element with attributes and children. Strings go in as text (never HTML), with invisible
 * characters written out ({@link visible}); a textarea's text stays as it is, since saving the form
 * writes it back.
 */
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
    element.append(
      child instanceof Node ? child : tag === 'textarea' ? String(child) : visible(String(child)),
    )
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
  // Waiting, not yet started: its own outlined badge, never running's.
  pending: 'wait',
  queued: 'wait',
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

// ---- times and their zones (issue 26) ---------------------------------------

/**
 * Which zone the page shows times in, chosen in the header and kept in `localStorage`: `job` (a
 * job's own zone; a time that belongs to no job is shown in the browser's zone), `utc` or `local`
 * (the browser's zone). Every time says which zone it is in.
 * @typedef {'job' | 'utc' | 'local'} TimeZoneMode
 */
/** @type {readonly TimeZoneMode[]} */
const TIME_ZONE_MODES = ['job', 'utc', 'local']
const TIME_ZONE_MODE_KEY = 'lango.timeZoneMode'

/** @returns {TimeZoneMode} */
function storedTimeZoneMode() {
  try {
    const stored = localStorage.getItem(TIME_ZONE_MODE_KEY)
    return TIME_ZONE_MODES.find((mode) => mode === stored) || 'job'
  } catch {
    return 'job'
  }
}

let zoneMode = storedTimeZoneMode()

export function timeZoneMode() {
  return zoneMode
}

/**
 * Shows every time in `mode` from now on, remembers it in this browser (nothing is written until
 * the operator picks one), redraws the times on the page and tells the `lango:timezonemode`
 * listeners (the health banner).
 * @param {string} mode
 */
export function setTimeZoneMode(mode) {
  const chosen = TIME_ZONE_MODES.find((known) => known === mode)
  if (chosen === undefined || chosen === zoneMode) return
  zoneMode = chosen
  try {
    localStorage.setItem(TIME_ZONE_MODE_KEY, chosen)
  } catch {
    // Storage refused (a private window's quota): the choice lasts until the page is reloaded.
  }
  for (const element of document.querySelectorAll('time[datetime]'))
    redrawTime(/** @type {HTMLElement} */ (element))
  document.dispatchEvent(new CustomEvent('lango:timezonemode'))
}

/**
 * One date formatter per time zone and style, made once: toLocaleString builds a new ICU formatter
 * on every call (about 0.15 ms each), which for a page of 1,000 jobs was most of its first render.
 * `null` for a zone this browser does not know.
 * @type {Map<string, Intl.DateTimeFormat | null>}
 */
const FORMATTERS = new Map()
/**
 * @param {string | undefined} zone
 * @param {boolean} clock only the time of day
 */
function formatterFor(zone, clock) {
  const key = `${clock ? 'clock' : 'date'}:${zone || ''}`
  let formatter = FORMATTERS.get(key)
  if (formatter === undefined) {
    /** @type {Intl.DateTimeFormatOptions} */
    const options = clock ? { timeStyle: 'short' } : { dateStyle: 'medium', timeStyle: 'short' }
    try {
      formatter = new Intl.DateTimeFormat(
        undefined,
        zone ? Object.assign({ timeZone: zone }, options) : options,
      )
    } catch {
      formatter = null
    }
    FORMATTERS.set(key, formatter)
  }
  return formatter
}

/**
 * A time as the page shows it in the chosen mode, and the zone's label: the job's zone by its
 * name, `UTC`, or `local` (the browser's, also where a time has no job or its zone is unknown here).
 * @param {Date} date
 * @param {string | undefined} jobZone
 * @param {boolean} clock only the time of day
 * @returns {{ text: string, zone: string }}
 */
function zoned(date, jobZone, clock) {
  if (zoneMode === 'utc')
    return { text: /** @type {Intl.DateTimeFormat} */ (formatterFor('UTC', clock)).format(date), zone: 'UTC' }
  const formatter = zoneMode === 'job' && jobZone ? formatterFor(jobZone, clock) : null
  if (formatter) return { text: formatter.format(date), zone: /** @type {string} */ (jobZone) }
  return {
    text: /** @type {Intl.DateTimeFormat} */ (formatterFor(undefined, clock)).format(date),
    zone: 'local',
  }
}

/** The browser's own zone, for the `local` label's tooltip. */
function localZoneName() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'unknown'
}

/**
 * A time with its zone (`28 Nov 2026, 02:30 Europe/Berlin (in 15 h)`). `zone`: the job's zone when
 * the time belongs to a job (used in the `job` mode). Its `datetime` is ISO UTC whatever is shown.
 * @param {string | null | undefined} iso
 * @param {string} [zone]
 */
export function time(iso, zone) {
  if (iso === null || iso === undefined || iso === '') return h('span', { className: 'muted' }, '—')
  const date = new Date(iso)
  const element = h(
    'time',
    { datetime: date.toISOString(), title: date.toISOString(), 'data-job-zone': zone || undefined },
    h('span', { className: 'when' }),
    ' ',
    h('span', { className: 'zone' }),
    h('span', { className: 'relative' }, ` (${relative(date)})`),
  )
  redrawTime(element)
  return element
}

/** @param {HTMLElement} element a `<time>` drawn by {@link time} */
function redrawTime(element) {
  const when = element.querySelector('.when')
  const label = element.querySelector('.zone')
  if (when === null || label === null) return
  const shown = zoned(
    new Date(/** @type {string} */ (element.getAttribute('datetime'))),
    element.getAttribute('data-job-zone') || undefined,
    false,
  )
  when.textContent = shown.text
  label.textContent = shown.zone
  if (shown.zone === 'local') label.setAttribute('title', `this browser's zone, ${localZoneName()}`)
  else label.removeAttribute('title')
}

/**
 * A time of day with its zone in the chosen mode, as text (`10:42 UTC`), for sentences such as
 * the health banner's; it belongs to no job, so the `job` mode shows it in the browser's zone.
 * @param {Date} date
 */
export function clockTime(date) {
  const shown = zoned(date, undefined, true)
  return `${shown.text} ${shown.zone}`
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
  // Two units from the largest, never rounded into another length (90 s was "2 min", 1 d "1440 min").
  const seconds = Math.round(ms / 1000)
  /** @type {[number, string][]} */
  const units = [
    [Math.floor(seconds / 86400), 'd'],
    [Math.floor((seconds % 86400) / 3600), 'h'],
    [Math.floor((seconds % 3600) / 60), 'min'],
    [seconds % 60, 's'],
  ]
  const first = units.findIndex(([count]) => count > 0)
  return units
    .slice(first, first + 2)
    .filter(([count]) => count > 0)
    .map(([count, unit]) => `${count} ${unit}`)
    .join(' ')
}

/**
 * A duration as the one grammar writes it (ADR 0013), exactly, in the largest unit that holds it
 * whole: `1d`, `10m`, `90s`, `5430s`, `1500ms`. What a stored setting is, and what the form takes back.
 * @param {number | null | undefined} ms
 */
export function durationText(ms) {
  if (typeof ms !== 'number' || !(ms > 0)) return ''
  /** @type {[number, string][]} */
  const units = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'm'],
    [1000, 's'],
  ]
  for (const [size, unit] of units) if (ms % size === 0) return `${ms / size}${unit}`
  return `${ms}ms`
}

/**
 * What a run or step spent, for its head line: ` · 3,300 tokens · $0.0060 · gpt-4o-mini`, or '' when
 * it used no model (a shell run). Tokens, model and cost come from the run's tool view.
 * @param {{ input_tokens?: number | null, output_tokens?: number | null, cost_usd?: number | null, model?: string | null }} entry
 */
export function spend(entry) {
  const tokens = (entry.input_tokens ?? 0) + (entry.output_tokens ?? 0)
  if (entry.input_tokens == null && entry.output_tokens == null && !entry.model) return ''
  const cost = typeof entry.cost_usd === 'number' ? ` · $${entry.cost_usd.toFixed(4)}` : ''
  return ` · ${tokens.toLocaleString('en-US')} tokens${cost}${entry.model ? ` · ${entry.model}` : ''}`
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
