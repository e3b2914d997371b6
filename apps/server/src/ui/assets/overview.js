// @ts-check
import { api } from './api.js'
import { badge, counter, duration, field, h, heading, headline, time } from './dom.js'

/** @import { View, PageContext } from './app.js' */

/** How many names each kind of trouble lists on the overview; its link leads to all of them. */
const TRIAGE_NAMES = 10
const DAY_MS = 24 * 60 * 60 * 1000

/**
 * What needs a person, by name, each linked to where it is fixed: failing jobs, jobs whose last
 * delivery failed, runs missed in the last 24 h (among the 200 newest skipped runs), pending approvals. A
 * stalled scheduler is the health banner's (health-banner.js), above every page.
 */
function triage(data) {
  const since = Date.now() - DAY_MS
  const missed = (data.runs.entries || []).filter(
    (entry) =>
      entry.status === 'skipped' &&
      /^missed/i.test(entry.skip_reason || '') &&
      new Date(entry.scheduled_for).getTime() >= since,
  )
  const approvals = data.approvals.approvals || []
  const groups = [
    troubleGroup('Failing jobs', data.failing, '#/cron?failing=1&sort=failures', (job) => [
      h('a', { href: `#/cron/${encodeURIComponent(job.id)}` }, job.name),
      ` ${job.consecutive_failures} failures in a row`,
    ]),
    troubleGroup('Last delivery failed', data.deliveryFailed, '#/cron?delivery_failed=1', (job) => [
      h('a', { href: `#/cron/${encodeURIComponent(job.id)}` }, job.name),
    ]),
    missed.length === 0
      ? null
      : [
          h('h3', {}, `Missed runs in the last 24 h (${missed.length})`),
          h(
            'ul',
            { className: 'trouble', 'data-trouble': 'missed' },
            missed
              .slice(0, TRIAGE_NAMES)
              .map((entry) =>
                h(
                  'li',
                  {},
                  h('a', { href: `#/cron/${encodeURIComponent(entry.job_id)}` }, entry.job_name),
                  ' ',
                  time(entry.scheduled_for),
                ),
              ),
          ),
        ],
    approvals.length === 0
      ? null
      : [
          h('h3', {}, `Pending approvals (${approvals.length})`),
          h(
            'ul',
            { className: 'trouble', 'data-trouble': 'approvals' },
            approvals
              .slice(0, TRIAGE_NAMES)
              .map((approval) =>
                h(
                  'li',
                  {},
                  h('a', { href: '#/approvals' }, `${approval.tool}: ${headline(approval.summary || '')}`),
                ),
              ),
          ),
        ],
  ].filter((group) => group !== null)
  return h(
    'section',
    { className: 'triage', 'aria-labelledby': 'triage-heading' },
    h('h2', { id: 'triage-heading' }, 'Needs attention'),
    groups.length === 0 ? h('p', { className: 'muted' }, 'Nothing needs you now.') : groups,
  )
}

/** One kind of job trouble: its first names and a link to the filtered list when there are more. */
function troubleGroup(title, page, href, item) {
  const jobs = page.jobs || []
  if (jobs.length === 0) return null
  const total = page.total || jobs.length
  return [
    h('h3', {}, `${title} (${total})`),
    h(
      'ul',
      { className: 'trouble', 'data-trouble': title },
      jobs.map((job) => h('li', {}, item(job))),
      total > jobs.length ? h('li', {}, h('a', { href }, `All ${total} …`)) : null,
    ),
  ]
}

/** Overview: what needs a person, counters, the server's health, instances and leases. */
/** @type {View} */
export const overview = {
  title: 'Overview',
  async load() {
    const [health, instances, jobs, failing, deliveryFailed, runs, workflows, approvals, tasks, processes] =
      await Promise.all([
        api('/healthz', { accept: [503] }),
        api('/api/instances'),
        // Counts and the first names only: the overview stays one small read at 10,000 jobs.
        api('/api/cron/jobs?limit=1'),
        api(`/api/cron/jobs?failing=1&sort=failures&limit=${TRIAGE_NAMES}`),
        api(`/api/cron/jobs?delivery_failed=1&limit=${TRIAGE_NAMES}`),
        api('/api/cron/runs?status=skipped&limit=200'),
        api('/api/workflows/runs?status=running&limit=200'),
        api('/api/approvals?status=pending'),
        // A server with background tasks or exec switched off answers 404: show no counter then.
        api('/api/background/tasks?status=running', { accept: [404] }),
        api('/api/processes', { accept: [404] }),
      ])
    return { health, instances, jobs, failing, deliveryFailed, runs, workflows, approvals, tasks, processes }
  },
  render(data) {
    const failing = data.failing.total || 0
    const health = data.health || {}
    return h(
      'section',
      {},
      heading('Overview'),
      triage(data),
      h(
        'div',
        { className: 'counters' },
        counter('failing cron jobs', failing, '#/cron?failing=1', true),
        counter('running workflows', data.workflows.count || 0, '#/workflows', false),
        counter('pending approvals', data.approvals.count || 0, '#/approvals', true),
        counter('cron jobs', data.jobs.total || 0, '#/cron', false),
        data.tasks?.tasks
          ? counter('running background tasks', data.tasks.tasks.length, '#/background', false)
          : null,
        data.processes?.processes
          ? counter(
              'running processes',
              data.processes.processes.filter((process) => process.status === 'running').length,
              '#/processes',
              false,
            )
          : null,
      ),
      h('h2', {}, 'Server'),
      h(
        'dl',
        { className: 'facts' },
        field('Status', badge(health.status || 'unknown')),
        field('Database', [
          badge(health.database || 'unknown'),
          health.database_kind ? ` ${health.database_kind}` : '',
        ]),
        field('Scheduler', [
          badge(health.scheduler || 'unknown'),
          health.scheduler_tick?.last_tick_at
            ? [' last tick ', time(health.scheduler_tick.last_tick_at)]
            : '',
        ]),
        field(
          'Last stall',
          health.scheduler_tick?.last_stall
            ? [
                time(health.scheduler_tick.last_stall.since),
                ` for ${duration(health.scheduler_tick.last_stall.stalled_ms)} (${
                  health.scheduler_tick.last_stall.cause === 'clock'
                    ? 'clock jump or host suspended'
                    : 'process blocked or stopped'
                })`,
              ]
            : h('span', { className: 'muted' }, 'none since start'),
        ),
        field(
          'Alerts',
          !health.alerts?.configured
            ? h('span', { className: 'muted' }, 'logged only (no alerts.deliver_to)')
            : badge(
                health.alerts.failing ? 'failed' : 'ok',
                health.alerts.failing ? 'failing' : 'getting through',
              ),
        ),
        field('Version', health.version || '—'),
        field('This instance', h('code', {}, health.instance || '—')),
      ),
      h('h2', {}, 'Instances'),
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Instance'),
            h('th', { scope: 'col' }, 'Host'),
            h('th', { scope: 'col' }, 'Version'),
            h('th', { scope: 'col' }, 'Heartbeat'),
            h('th', { scope: 'col' }, 'State'),
          ),
        ),
        h(
          'tbody',
          {},
          (data.instances.instances || []).map((instance) =>
            h(
              'tr',
              {},
              h(
                'td',
                { 'data-label': 'Instance' },
                h('code', {}, instance.id),
                instance.self ? ' (this one)' : '',
              ),
              h('td', { 'data-label': 'Host' }, `${instance.host} pid ${instance.pid}`),
              h('td', { 'data-label': 'Version' }, instance.version),
              h('td', { 'data-label': 'Heartbeat' }, time(instance.heartbeat_at)),
              h('td', { 'data-label': 'State' }, badge(instance.alive ? 'alive' : 'dead')),
            ),
          ),
        ),
      ),
      (data.instances.leases || []).length === 0
        ? null
        : [
            h('h2', {}, 'Leases'),
            h(
              'ul',
              {},
              data.instances.leases.map((lease) =>
                h(
                  'li',
                  {},
                  h('strong', {}, lease.name),
                  ' held by ',
                  h('code', {}, lease.owner || '—'),
                  ' until ',
                  time(lease.expires_at),
                ),
              ),
            ),
          ],
    )
  },
}
