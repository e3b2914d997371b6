// @ts-check
import { clockTime, duration, h } from './dom.js'

/**
 * The banner above every page: what an operator must see whatever page is open — the scheduler is
 * stalled (`/healthz` 503 `stalled`), the database does not answer, the operator's alerts do not get
 * through (`alerts.failing`), or the scheduler stalled within the last hour (`scheduler_tick.last_stall`:
 * a process that was stopped or blocked says so once it runs again). Read from `/healthz`, which
 * needs no token, every {@link POLL_MS} and when the tab comes back.
 */

const POLL_MS = 10_000
/** A stall this recent is still shown. */
const RECENT_STALL_MS = 3_600_000

/**
 * What the banner says for one `/healthz` answer: a list of `{ tone, text }`, empty when all is well.
 * @param {any} health
 * @param {number} now epoch ms
 * @returns {{ tone: 'bad' | 'warn', key: string, text: string }[]}
 */
function bannerItems(health, now) {
  /** @type {{ tone: 'bad' | 'warn', key: string, text: string }[]} */
  const items = []
  if (!health || typeof health !== 'object') return items
  const tick = health.scheduler_tick || {}
  if (health.status === 'stalled') {
    const since = tick.last_tick_at ? Date.parse(tick.last_tick_at) : Number.NaN
    items.push({
      tone: 'bad',
      key: 'stalled',
      text: `The scheduler is stalled: it last ticked ${
        Number.isFinite(since) ? `at ${clockTime(new Date(since))}` : 'too long ago'
      }, and nothing fires until it ticks again. Check the server's log and its database.`,
    })
  }
  if (health.status === 'unavailable')
    items.push({
      tone: 'bad',
      key: 'database',
      text: 'The database does not answer: nothing is scheduled or recorded.',
    })
  if (health.alerts?.failing)
    items.push({
      tone: 'bad',
      key: 'alerts',
      text: 'Alerts are not getting through to alerts.deliver_to: the last one was refused (GET /api/alerts says why).',
    })
  const stall = tick.last_stall
  if (stall && health.status !== 'stalled') {
    const resumed = Date.parse(stall.resumed_at)
    if (Number.isFinite(resumed) && now - resumed <= RECENT_STALL_MS)
      items.push({
        tone: 'warn',
        key: 'last-stall',
        text: `The scheduler stalled for ${duration(stall.stalled_ms)} until ${clockTime(new Date(resumed))} (${
          stall.cause === 'clock'
            ? 'the clock jumped forward or the host was suspended'
            : 'the process was blocked or suspended'
        }): what came due meanwhile ran or is recorded as missed in each job's history.`,
      })
  }
  return items
}

/**
 * Keeps `element` (the page's `#banner`) up to date; it is hidden while there is nothing to say.
 * @param {HTMLElement} element
 */
export function startHealthBanner(element) {
  let timer = 0
  /** The last `/healthz` answer, drawn again when the operator picks another time zone mode. */
  let health = null
  async function check() {
    clearTimeout(timer)
    try {
      const response = await fetch('/healthz', { headers: { accept: 'application/json' }, cache: 'no-store' })
      health = await response.json()
      show(element, bannerItems(health, Date.now()))
    } catch {
      show(element, [{ tone: 'bad', key: 'unreachable', text: 'The server does not answer.' }])
    }
    timer = setTimeout(check, POLL_MS)
  }
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) check()
  })
  document.addEventListener('lango:timezonemode', () => {
    if (health !== null) show(element, bannerItems(health, Date.now()))
  })
  check()
}

/**
 * @param {HTMLElement} element
 * @param {{ tone: string, key: string, text: string }[]} items
 */
function show(element, items) {
  // The same words are not put in again (a screen reader would read them out at every poll).
  const signature = JSON.stringify(items)
  if (element.dataset.signature === signature) return
  element.dataset.signature = signature
  element.replaceChildren(
    ...items.map((item) =>
      h('p', { className: `banner-item tone-${item.tone}`, 'data-banner': item.key }, item.text),
    ),
  )
  element.hidden = items.length === 0
}
