// @ts-check
import { api, post } from './api.js'
import { badge, h, heading, headline, oneLine, time } from './dom.js'

/** @import { View, PageContext } from './app.js' */

/** Approvals: what waits for a decision, with Approve and Deny, and below it what was decided. */

/** Decided approvals per page of the history. */
const HISTORY_PAGE = 25

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
  render(data, _route, page) {
    const approvals = data.approvals || []
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
                  h(
                    'button',
                    {
                      type: 'button',
                      className: 'approve',
                      'data-key': `approve:${approval.id}`,
                      'aria-describedby': `summary-${approval.id}`,
                      onclick: (event) =>
                        page.act(
                          event.currentTarget,
                          () =>
                            post(`/api/approvals/${encodeURIComponent(approval.id)}`, {
                              decision: 'approve',
                            }),
                          (answer) => `Approved: ${headline(approval.summary)} (${answer.status})`,
                        ),
                    },
                    'Approve',
                  ),
                  h(
                    'button',
                    {
                      type: 'button',
                      className: 'deny',
                      'data-key': `deny:${approval.id}`,
                      'aria-describedby': `summary-${approval.id}`,
                      onclick: (event) =>
                        page.act(
                          event.currentTarget,
                          () =>
                            post(`/api/approvals/${encodeURIComponent(approval.id)}`, { decision: 'deny' }),
                          (answer) => `Denied: ${headline(approval.summary)} (${answer.status})`,
                        ),
                    },
                    'Deny',
                  ),
                ),
              ),
            ),
          ),
      history(data),
    )
  },
}
