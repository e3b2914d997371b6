// @ts-check
import { api, post } from './api.js'
import { badge, duration, field, h, heading, time } from './dom.js'
import { describeSchedule, scheduleCell } from './schedules.js'

/** @import { View, PageContext } from './app.js' */

/** Cron: the jobs, and one job's page with its next fire times and history. */

function jobState(job) {
  if (job.enabled) return badge('enabled')
  return h(
    'span',
    {},
    badge('paused'),
    job.pause_reason ? h('span', { className: 'reason' }, ` ${job.pause_reason}`) : null,
  )
}

/**
 * @param {any} job
 * @param {PageContext} page
 */
function jobActions(job, page) {
  const toggle = job.enabled
    ? h(
        'button',
        {
          type: 'button',
          'data-key': `pause:${job.id}`,
          'aria-label': `Pause ${job.name}`,
          onclick: (event) =>
            page.act(
              event.currentTarget,
              () => post(`/api/cron/jobs/${encodeURIComponent(job.id)}/pause`),
              () => `Paused ${job.name}`,
            ),
        },
        'Pause',
      )
    : h(
        'button',
        {
          type: 'button',
          'data-key': `resume:${job.id}`,
          'aria-label': `Resume ${job.name}`,
          onclick: (event) =>
            page.act(
              event.currentTarget,
              () => post(`/api/cron/jobs/${encodeURIComponent(job.id)}/resume`),
              () => `Resumed ${job.name}`,
            ),
        },
        'Resume',
      )
  const run = h(
    'button',
    {
      type: 'button',
      'data-key': `run:${job.id}`,
      'aria-label': `Run ${job.name} now`,
      onclick: (event) =>
        page.act(
          event.currentTarget,
          () => post(`/api/cron/jobs/${encodeURIComponent(job.id)}/trigger`),
          () => `Started ${job.name}`,
        ),
    },
    'Run now',
  )
  return h('div', { className: 'actions' }, toggle, run)
}

/**
 * A job's last run on its own page: the job's last_run_at and last_status, or the newest run in its
 * history when that is newer (a manual run sets last_status but not last_run_at).
 */
function lastRunOf(job, entries) {
  const newest = entries.find((entry) => entry.started_at)
  if (newest && (!job.last_run_at || new Date(newest.started_at) >= new Date(job.last_run_at))) {
    return [
      badge(newest.status),
      ' ',
      time(newest.started_at),
      h('span', { className: 'muted' }, ` · ${newest.trigger}`),
    ]
  }
  return lastRun(job)
}

function lastRun(job) {
  if (!job.last_status && !job.last_run_at) return h('span', { className: 'muted' }, 'never')
  return h(
    'span',
    {},
    job.last_status ? badge(job.last_status) : null,
    job.last_run_at ? [' ', time(job.last_run_at)] : null,
  )
}

/**
 * A skipped occurrence the scheduler missed (it was down, stalled or late beyond the catch-up
 * window: its reason starts with `missed`), as opposed to one a policy skipped (overlap, budget…).
 */
function isMissed(entry) {
  return entry.status === 'skipped' && /^missed/i.test(entry.skip_reason || '')
}

function historyEntry(entry) {
  const reasons = []
  const missed = isMissed(entry)
  if (missed) reasons.push(`Missed: ${String(entry.skip_reason).replace(/^missed:?\s*/i, '')}`)
  else if (entry.status === 'skipped')
    reasons.push(`Skipped${entry.skip_reason ? `: ${entry.skip_reason}` : ''}`)
  if (entry.status === 'interrupted') reasons.push('Interrupted: the server stopped during the run')
  if (entry.error && entry.status !== 'interrupted') reasons.push(`Error: ${entry.error}`)
  else if (entry.error) reasons.push(entry.error)
  if (entry.delivery_status === 'failed') reasons.push('Delivery failed')
  else if (entry.delivery_status === 'pending') reasons.push('Delivery waiting for a retry')
  return h(
    'li',
    { className: 'entry', 'data-status': entry.status, 'data-run': entry.id, 'data-missed': String(missed) },
    h(
      'div',
      { className: 'entry-head' },
      missed ? badge('missed') : badge(entry.status),
      entry.delivery_status && entry.delivery_status !== 'none'
        ? [' ', badge(entry.delivery_status, `delivery ${entry.delivery_status}`)]
        : null,
      ' ',
      time(entry.started_at || entry.scheduled_for),
      h(
        'span',
        { className: 'muted' },
        ` · ${entry.trigger}${entry.duration_ms !== null ? ` · ${duration(entry.duration_ms)}` : ''}`,
      ),
    ),
    reasons.map((reason) => h('p', { className: 'reason' }, reason)),
    deliveryList(entry),
    entry.result
      ? h(
          'details',
          { 'data-key': `output:${entry.id}` },
          h('summary', {}, 'Output'),
          h('pre', {}, String(entry.result).slice(0, 4000)),
        )
      : null,
  )
}

/**
 * Where a run's result went, one line per target: delivered (when), waiting for a retry (attempt,
 * next try, last reason) or failed (the channel's reason).
 */
function deliveryList(entry) {
  const rows = Array.isArray(entry.deliveries) ? entry.deliveries : []
  if (rows.length === 0) return null
  return h(
    'ul',
    { className: 'deliveries', 'aria-label': 'Deliveries' },
    rows.map((row) =>
      h(
        'li',
        { 'data-target': row.target, 'data-delivery': row.status },
        h('code', {}, row.target),
        ' ',
        badge(row.status),
        row.status === 'delivered' && row.delivered_at ? [' ', time(row.delivered_at)] : null,
        row.status === 'pending' || row.status === 'sending'
          ? h(
              'span',
              { className: 'muted' },
              ` attempt ${row.attempts}${row.next_attempt_at ? ', next try ' : ''}`,
              row.next_attempt_at ? time(row.next_attempt_at) : null,
            )
          : null,
        row.last_error && row.status !== 'delivered'
          ? h('span', { className: 'reason' }, ` ${row.last_error}`)
          : null,
      ),
    ),
  )
}

/** @type {View} */
export const cron = {
  title: 'Cron',
  async load() {
    const jobs = await api('/api/cron/jobs')
    return { jobs: jobs.jobs || [] }
  },
  render(data, _route, page) {
    if (data.jobs.length === 0)
      return h(
        'section',
        {},
        heading('Cron'),
        h('p', {}, 'No cron jobs yet. Create one with lango cron add, POST /api/cron/jobs, or ask an agent.'),
      )
    return h(
      'section',
      {},
      heading('Cron'),
      h('p', { className: 'notice', role: 'alert' }),
      h(
        'table',
        { className: 'jobs' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            [
              'Job',
              'Schedule',
              'Time zone',
              'Next run',
              'Last run',
              'Failures in a row',
              'Deliver to',
              'State',
              'Actions',
            ].map((label) => h('th', { scope: 'col' }, label)),
          ),
        ),
        h(
          'tbody',
          {},
          data.jobs.map((job) =>
            h(
              'tr',
              { 'data-job': job.name },
              h(
                'th',
                { scope: 'row', 'data-label': 'Job' },
                h('a', { href: `#/cron/${encodeURIComponent(job.id)}` }, job.name),
                h('span', { className: 'muted kind' }, ` ${job.kind}`),
              ),
              h('td', { 'data-label': 'Schedule' }, scheduleCell(job)),
              h('td', { 'data-label': 'Time zone' }, job.timezone),
              h(
                'td',
                { 'data-label': 'Next run', className: 'next-run' },
                job.enabled
                  ? time(job.next_run_at, job.timezone)
                  : h('span', { className: 'muted' }, 'paused'),
              ),
              h('td', { 'data-label': 'Last run' }, lastRun(job)),
              h(
                'td',
                { 'data-label': 'Failures in a row', className: 'streak' },
                String(job.consecutive_failures || 0),
              ),
              h(
                'td',
                { 'data-label': 'Deliver to' },
                job.deliver_to && job.deliver_to.length > 0
                  ? job.deliver_to.join(', ')
                  : h('span', { className: 'muted' }, 'nowhere'),
              ),
              h('td', { 'data-label': 'State', className: 'state' }, jobState(job)),
              h('td', { 'data-label': 'Actions' }, jobActions(job, page)),
            ),
          ),
        ),
      ),
    )
  },
}

/** @type {View} */
export const job = {
  title: 'Cron job',
  async load(route) {
    const id = encodeURIComponent(/** @type {string} */ (route.id))
    const [one, runs] = await Promise.all([
      api(`/api/cron/jobs/${id}`),
      api(`/api/cron/runs?job=${id}&limit=50`),
    ])
    return { job: one.job, nextRuns: one.next_runs || [], entries: runs.entries || [] }
  },
  render(data, _route, page) {
    const job = data.job
    if (!job)
      return h(
        'section',
        {},
        heading('Cron job'),
        h('p', {}, 'This job no longer exists.'),
        h('a', { href: '#/cron' }, 'Back to all jobs'),
      )
    const words = describeSchedule(job)
    return h(
      'section',
      {},
      h('p', {}, h('a', { href: '#/cron' }, '← All cron jobs')),
      heading(job.name),
      h('p', { className: 'notice', role: 'alert' }),
      jobActions(job, page),
      h(
        'dl',
        { className: 'facts' },
        field('State', jobState(job)),
        field('Last run', h('span', { className: 'last-run' }, lastRunOf(job, data.entries))),
        field('Failures in a row', h('span', { className: 'streak' }, String(job.consecutive_failures || 0))),
        field('Kind', job.kind),
        field('Schedule', [
          h('code', {}, `${job.schedule_type} ${job.schedule}`),
          words ? ` — ${words}` : '',
        ]),
        field('Time zone', job.timezone),
        field(
          job.kind === 'shell' ? 'Command' : 'Prompt',
          h('code', { className: 'wrap' }, job.command || job.prompt || ''),
        ),
        field(
          'Deliver to',
          job.deliver_to && job.deliver_to.length > 0 ? job.deliver_to.join(', ') : 'nowhere',
        ),
        field('Overlap', job.overlap),
        field('Time-out', duration(job.timeout_ms)),
      ),
      h('h2', {}, 'Next fire times'),
      job.enabled && data.nextRuns.length > 0
        ? h(
            'ol',
            { className: 'next-runs' },
            data.nextRuns.map((run) =>
              h('li', {}, time(run.utc, run.timezone), ' ', h('span', { className: 'muted' }, run.local)),
            ),
          )
        : h('p', { className: 'muted' }, job.enabled ? 'None scheduled.' : 'None while paused.'),
      h('h2', { id: 'history-heading' }, 'History'),
      data.entries.length === 0
        ? h('p', { className: 'muted' }, 'No runs yet.')
        : h(
            'ol',
            { className: 'timeline', 'aria-labelledby': 'history-heading' },
            data.entries.map(historyEntry),
          ),
    )
  },
}
