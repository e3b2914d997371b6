// @ts-check
import { api } from './api.js'
import { announce, badge, h, heading, headline, oneLine, time } from './dom.js'

/** @import { View, PageContext } from './app.js' */

/**
 * Approvals: what waits for a decision, with Approve and Deny, and below it what was decided.
 *
 * The page never asks a person to approve what they cannot see. A redraw keeps the focus, but not
 * the pointer: a click aimed at one approval's button must not land on another's that slid under
 * it. So pending approvals are listed oldest first (a new one is added at the end, moving nothing),
 * and whenever the decision buttons move on the page (a card added, removed or moved, anything
 * above them growing), they all ignore activation for {@link SETTLE_MS}, shown as disabled.
 */

/** Decided approvals per page of the history. */
const HISTORY_PAGE = 25

/** How long (ms) the decision buttons ignore activation after they moved: about the time to see it. */
const SETTLE_MS = 1000

/** Where the decision buttons were last seen: `<data-key>@<x>,<y>` each, page coordinates. */
let layout = ''
/** The timer that ends the settling, or 0 when the buttons take activation. */
let settleTimer = 0
/** Whether the page's pointer and size watchers are installed (once, on the first draw). */
let watching = false

/** @returns {HTMLButtonElement[]} */
function decisionButtons() {
  return [...document.querySelectorAll('button[data-decision]')].map(
    (button) => /** @type {HTMLButtonElement} */ (button),
  )
}

/**
 * Marks the buttons settling (ignoring activation) or not. `aria-disabled`, not `disabled`: a
 * disabled button loses the keyboard focus, and a keyboard user's place must survive a redraw.
 * @param {HTMLButtonElement[]} buttons
 * @param {boolean} settling
 */
function markSettling(buttons, settling) {
  for (const button of buttons) {
    if (settling) button.setAttribute('aria-disabled', 'true')
    else button.removeAttribute('aria-disabled')
  }
}

/**
 * Compares where the decision buttons are with where they were last seen; when any of them moved,
 * appeared or went, every one of them settles for {@link SETTLE_MS} (again, when already settling).
 * Runs after each draw (`drawn`: before any input can reach the new buttons), when the page
 * changes size, and on every pointerdown (what moved since is caught before the click it starts).
 */
function checkLayout() {
  const buttons = decisionButtons()
  const seen = buttons
    .map((button) => {
      const box = button.getBoundingClientRect()
      return `${button.dataset.key}@${Math.round(box.left + scrollX)},${Math.round(box.top + scrollY)}`
    })
    .join(' ')
  if (seen === layout) return
  layout = seen
  if (buttons.length === 0) return
  clearTimeout(settleTimer)
  markSettling(buttons, true)
  settleTimer = setTimeout(() => {
    settleTimer = 0
    markSettling(decisionButtons(), false)
  }, SETTLE_MS)
}

/** Installs the watchers of {@link checkLayout}, once. */
function watchLayout() {
  if (watching) return
  watching = true
  document.addEventListener('pointerdown', checkLayout, true)
  new ResizeObserver(checkLayout).observe(document.body)
}

/**
 * What became of a decision, for the announcement: the approval as the server answered it, which
 * may have expired, or been decided by someone else, before this answer arrived.
 */
function decided(approval, approve, answer) {
  const wanted = approve ? 'approved' : 'denied'
  const what = headline(approval.summary)
  const status = answer && typeof answer.status === 'string' ? answer.status : 'unknown'
  if (status === wanted) return `${approve ? 'Approved' : 'Denied'}: ${what}`
  const why =
    status === 'expired'
      ? 'it had already expired'
      : status === 'cancelled'
        ? 'it had already been cancelled'
        : status === 'pending'
          ? 'it is still pending'
          : `it was already decided: ${status.replace(/_/g, ' ')}`
  return `Not ${wanted}: ${what} (${why})`
}

/**
 * A decision button's action: ignored while the buttons settle (announced, so that a person who
 * clicked knows why nothing happened), else the answer sent and what became of it announced.
 * @param {PageContext} page
 */
function decide(event, approval, approve, page) {
  const button = /** @type {HTMLButtonElement} */ (event.currentTarget)
  checkLayout()
  if (settleTimer !== 0) {
    announce('Not decided: the list of approvals just changed. Check the request, then try again.')
    return
  }
  page.act(
    button,
    () =>
      api(`/api/approvals/${encodeURIComponent(approval.id)}`, {
        method: 'POST',
        json: { decision: approve ? 'approve' : 'deny' },
        // 409: no longer pending (decided elsewhere, expired); the approval as it stands is in `data`.
        accept: [409],
      }),
    (answer) => decided(approval, approve, answer?.error?.data?.approval ?? answer),
  )
}

/**
 * An Approve or Deny button, settling as the others are when drawn while they settle.
 * @param {PageContext} page
 */
function decisionButton(approval, approve, page) {
  return h(
    'button',
    {
      type: 'button',
      className: approve ? 'approve' : 'deny',
      'data-key': `${approve ? 'approve' : 'deny'}:${approval.id}`,
      'data-decision': approve ? 'approve' : 'deny',
      'aria-describedby': `summary-${approval.id}`,
      'aria-disabled': settleTimer !== 0 ? 'true' : undefined,
      onclick: (event) => decide(event, approval, approve, page),
    },
    approve ? 'Approve' : 'Deny',
  )
}

/** Who decided, in words: the deciding process (or the caller's label); an expiry has nobody. */
function decider(approval) {
  if (approval.decided_by) return approval.decided_by
  return h('span', { className: 'muted' }, approval.status === 'expired' ? 'nobody (expired)' : 'unknown')
}

/** The call's outcome once it ran: ok, or its error's code. */
function outcome(approval) {
  const result = approval.outcome
  if (!result) return h('span', { className: 'muted' }, '—')
  return result.ok ? badge('completed', 'ran') : badge('failed', result.error?.code || 'failed')
}

/** One decided approval: when, what (the first line, the whole request under it), decision, who. */
function historyRow(approval) {
  return h(
    'tr',
    { 'data-decided': approval.id },
    h('td', { 'data-label': 'Decided' }, time(approval.answered_at)),
    h(
      'th',
      { scope: 'row', 'data-label': 'Request' },
      h('code', {}, approval.tool),
      ' ',
      oneLine(headline(approval.summary), 120),
      approval.summary.includes('\n') || approval.summary.length > 120
        ? h(
            'details',
            { 'data-key': `history-summary:${approval.id}` },
            h('summary', {}, 'Whole request'),
            h('pre', {}, approval.summary),
          )
        : null,
    ),
    h('td', { 'data-label': 'Decision' }, badge(approval.status)),
    h('td', { 'data-label': 'Decided by' }, decider(approval)),
    h('td', { 'data-label': 'Outcome' }, outcome(approval)),
  )
}

/**
 * The history of decided approvals, newest first, a page at a time ("Show older" reads the next
 * and moves the focus to its first row's request).
 */
function history(data) {
  const body = h('tbody', {}, data.history.map(historyRow))
  const older = h(
    'button',
    {
      type: 'button',
      'data-key': 'history-older',
      hidden: data.historyNext === null,
      onclick: async (event) => {
        const button = /** @type {HTMLButtonElement} */ (event.currentTarget)
        if (data.historyNext === null) return
        button.disabled = true
        try {
          const next = await api(
            `/api/approvals?status=decided&limit=${HISTORY_PAGE}&cursor=${encodeURIComponent(data.historyNext)}`,
          )
          const rows = next.approvals || []
          data.history.push(...rows)
          data.historyNext = next.next_cursor || null
          body.append(...rows.map(historyRow))
          button.hidden = data.historyNext === null
          const first = rows[0] ? body.querySelector(`tr[data-decided="${CSS.escape(rows[0].id)}"] th`) : null
          if (first instanceof HTMLElement) {
            first.tabIndex = -1
            first.focus()
          }
        } finally {
          button.disabled = false
        }
      },
    },
    'Show older',
  )
  return h(
    'section',
    { 'aria-labelledby': 'history-heading' },
    h('h2', { id: 'history-heading' }, 'Decided'),
    data.history.length === 0
      ? h('p', { className: 'muted' }, 'Nothing decided yet.')
      : h(
          'table',
          { className: 'history' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['Decided', 'Request', 'Decision', 'Decided by', 'Outcome'].map((label) =>
                h('th', { scope: 'col' }, label),
              ),
            ),
          ),
          body,
        ),
    older,
  )
}

/** @type {View} */
export const approvals = {
  title: 'Approvals',
  async load(route) {
    // A visit's first draw counts as a move: nothing was seen of it yet.
    if (route.data === undefined) layout = ''
    // Read again (an event), the history keeps as many rows as were shown, up to the API's 200.
    const shown = route.data?.history?.length || 0
    const limit = Math.min(200, Math.max(HISTORY_PAGE, shown))
    const [pending, decided] = await Promise.all([
      api('/api/approvals?status=pending'),
      api(`/api/approvals?status=decided&limit=${limit}`),
    ])
    return {
      approvals: pending.approvals || [],
      history: decided.approvals || [],
      historyNext: decided.next_cursor || null,
    }
  },
  drawn() {
    watchLayout()
    checkLayout()
  },
  render(data, _route, page) {
    // Oldest first (the API lists newest first): a new request goes at the end, moving nothing.
    const approvals = [...(data.approvals || [])].reverse()
    return h(
      'section',
      {},
      heading('Approvals'),
      h('p', { className: 'notice', role: 'alert' }),
      approvals.length === 0
        ? h('p', {}, 'Nothing is waiting for approval.')
        : h(
            'ul',
            { className: 'cards' },
            approvals.map((approval) =>
              h(
                'li',
                { className: 'card', 'data-approval': approval.id },
                h('h2', {}, approval.tool, ' ', badge(approval.safety || 'pending')),
                h('pre', { className: 'summary', id: `summary-${approval.id}` }, approval.summary),
                h(
                  'p',
                  { className: 'muted' },
                  'Asked ',
                  time(approval.created_at),
                  '; expires ',
                  time(approval.expires_at),
                  approval.session_key ? `; session ${approval.session_key}` : '',
                ),
                h(
                  'div',
                  { className: 'actions' },
                  decisionButton(approval, true, page),
                  decisionButton(approval, false, page),
                ),
              ),
            ),
          ),
      history(data),
    )
  },
}
