// @ts-check
import { api } from './api.js'
import { badge, counter, duration, field, h, heading, time } from './dom.js'
/** @import { View, PageContext } from './app.js' */

/** Overview: counters, the server's health, instances and leases. */
/** @type {View} */
export const overview = {
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
    return h(
      'section',
      {},
      heading('Overview'),
      h(
        'div',
        { className: 'counters' },
        counter('failing cron jobs', failing, '#/cron', true),
        counter('running workflows', data.workflows.count || 0, '#/workflows', false),
        counter('pending approvals', data.approvals.count || 0, '#/approvals', true),
        counter('cron jobs', jobs.length, '#/cron', false),
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
                  health.scheduler_tick.last_stall.cause === 'clock' ? 'clock jump' : 'blocked or suspended'
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
