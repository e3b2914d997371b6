// @ts-check
import { api, post } from './api.js'
import { badge, h, heading, headline, time } from './dom.js'
/** @import { View, PageContext } from './app.js' */

/** Approvals: what waits for a decision, with Approve and Deny. */
/** @type {View} */
export const approvals = {
  title: 'Approvals',
  async load() {
    return api('/api/approvals?status=pending')
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
    )
  },
}
