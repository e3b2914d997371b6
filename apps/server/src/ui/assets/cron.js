// @ts-check
import { AuthError, api, post } from './api.js'
import { announce, badge, duration, durationText, field, h, heading, spend, time } from './dom.js'
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

/** The job's name after a button's visible text, for screen readers: "Pause" reads "Pause nightly". */
function hiddenName(job) {
  return h('span', { className: 'visually-hidden' }, ` ${job.name}`)
}

/**
 * @param {any} job
 * @param {PageContext} page
 * @param {(button: HTMLButtonElement) => void} [after] What follows the action instead of reading the page again.
 */
function jobActions(job, page, after) {
  const toggle = job.enabled
    ? h(
        'button',
        {
          type: 'button',
          'data-key': `toggle:${job.id}`,
          onclick: (event) =>
            page.act(
              event.currentTarget,
              () => post(`/api/cron/jobs/${encodeURIComponent(job.id)}/pause`),
              () => `Paused ${job.name}`,
              after,
            ),
        },
        'Pause',
        hiddenName(job),
      )
    : h(
        'button',
        {
          type: 'button',
          'data-key': `toggle:${job.id}`,
          onclick: (event) =>
            page.act(
              event.currentTarget,
              () => post(`/api/cron/jobs/${encodeURIComponent(job.id)}/resume`),
              () => `Resumed ${job.name}`,
              after,
            ),
        },
        'Resume',
        hiddenName(job),
      )
  const run = h(
    'button',
    {
      type: 'button',
      'data-key': `run:${job.id}`,
      onclick: (event) =>
        page.act(
          event.currentTarget,
          () => post(`/api/cron/jobs/${encodeURIComponent(job.id)}/trigger`),
          () => `Started ${job.name}`,
          after,
        ),
    },
    'Run now',
    hiddenName(job),
  )
  const edit = h(
    'a',
    { className: 'button', href: `#/cron/${encodeURIComponent(job.id)}/edit`, 'data-key': `edit:${job.id}` },
    'Edit',
    hiddenName(job),
  )
  const remove = h(
    'button',
    {
      type: 'button',
      className: 'deny',
      'data-key': `delete:${job.id}`,
      onclick: (event) => confirmDelete(job, /** @type {HTMLButtonElement} */ (event.currentTarget), page),
    },
    'Delete',
    hiddenName(job),
  )
  return h('div', { className: 'actions' }, toggle, run, edit, remove)
}

/**
 * Asks, in a modal `<dialog>` that names the job, before `DELETE /api/cron/jobs/:id`. Cancel (or
 * Escape) gives the focus back to the Delete button. Once deleted: in the list, the focus goes to
 * the next job's link (else the previous one's, else "New cron job"); on the job's own page, to the
 * list.
 * @param {any} job
 * @param {HTMLButtonElement} opener
 * @param {PageContext} page
 */
function confirmDelete(job, opener, page) {
  const key = `delete:${job.id}`
  const row = opener.closest('tr[data-job-id]')
  const neighbour = row
    ? /** @type {HTMLElement | null} */ (row.nextElementSibling || row.previousElementSibling)
    : null
  const neighbourId = neighbour ? neighbour.getAttribute('data-job-id') : null
  const error = h('p', { className: 'error', role: 'alert' })
  const cancel = h('button', { type: 'button', autofocus: true, onclick: () => dialog.close() }, 'Cancel')
  const confirm = h(
    'button',
    {
      type: 'button',
      className: 'deny',
      onclick: async () => {
        confirm.disabled = true
        cancel.disabled = true
        error.textContent = ''
        try {
          await api(`/api/cron/jobs/${encodeURIComponent(job.id)}`, { method: 'DELETE' })
        } catch (failure) {
          if (failure instanceof AuthError) {
            dialog.close()
            page.askForToken(failure.message)
            return
          }
          error.textContent = `Not deleted: ${String(failure.message || failure)}`
          confirm.disabled = false
          cancel.disabled = false
          confirm.focus()
          return
        }
        deleted = true
        dialog.close()
      },
    },
    `Delete ${job.name}`,
  )
  let deleted = false
  const dialog = /** @type {HTMLDialogElement} */ (
    h(
      'dialog',
      {
        className: 'confirm',
        'aria-labelledby': 'confirm-heading',
        'aria-describedby': 'confirm-text',
        onclose: () => {
          dialog.remove()
          if (!deleted) {
            const again = opener.isConnected
              ? opener
              : /** @type {HTMLElement | null} */ (document.querySelector(`[data-key="${CSS.escape(key)}"]`))
            if (again) again.focus()
            return
          }
          announce(`Deleted ${job.name}`)
          if (!row) {
            page.go('#/cron')
            return
          }
          const current = document.querySelector(`tr[data-job-id="${CSS.escape(job.id)}"]`)
          if (current) current.remove()
          const next = neighbourId
            ? document.querySelector(`tr[data-job-id="${CSS.escape(neighbourId)}"] th a`)
            : null
          const fallback = document.querySelector('[data-key="new-job"]')
          const target = /** @type {HTMLElement | null} */ (next || fallback)
          if (target) target.focus()
        },
      },
      h('h2', { id: 'confirm-heading' }, `Delete cron job ${job.name}?`),
      h(
        'p',
        { id: 'confirm-text' },
        'This removes the job and its run history, and cancels a run in progress. It cannot be undone.',
      ),
      error,
      h('div', { className: 'actions' }, confirm, cancel),
    )
  )
  document.body.append(dialog)
  // Another page opened (the browser's Back) closes the question with it.
  const leave = () => dialog.close()
  window.addEventListener('hashchange', leave, { once: true })
  dialog.addEventListener('close', () => window.removeEventListener('hashchange', leave))
  dialog.showModal()
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
      time(newest.started_at, job.timezone),
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
    job.last_run_at ? [' ', time(job.last_run_at, job.timezone)] : null,
  )
}

/**
 * A skipped occurrence the scheduler missed (it was down, stalled or late beyond the catch-up
 * window: its reason starts with `missed`), as opposed to one a policy skipped (overlap, budget…).
 */
function isMissed(entry) {
  return entry.status === 'skipped' && /^missed/i.test(entry.skip_reason || '')
}

/** Run statuses a person may want to try again at once. */
const RETRYABLE = new Set(['failed', 'timed_out', 'interrupted', 'cancelled'])

/**
 * @param {any} entry
 * @param {any} job
 * @param {PageContext} page
 */
function historyEntry(entry, job, page) {
  const zone = job.timezone
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
      time(entry.started_at || entry.scheduled_for, zone),
      h(
        'span',
        { className: 'muted' },
        ` · ${entry.trigger}${entry.duration_ms !== null ? ` · ${duration(entry.duration_ms)}` : ''}${spend(entry)}`,
      ),
    ),
    reasons.map((reason) => h('p', { className: 'reason' }, reason)),
    // A failed run is retried as a manual run of the job, now (`POST /api/cron/jobs/:id/trigger`).
    RETRYABLE.has(entry.status)
      ? h(
          'div',
          { className: 'actions' },
          h(
            'button',
            {
              type: 'button',
              'data-key': `retry:${entry.id}`,
              onclick: (event) =>
                page.act(
                  event.currentTarget,
                  () => post(`/api/cron/jobs/${encodeURIComponent(job.id)}/trigger`),
                  (answer) => `Retried ${job.name}: ${answer.message || 'run started'}`,
                ),
            },
            'Retry',
            h(
              'span',
              { className: 'visually-hidden' },
              ` the ${entry.status.replace(/_/g, ' ')} run of ${job.name}`,
            ),
          ),
        )
      : null,
    deliveryList(entry, zone),
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
function deliveryList(entry, zone) {
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
        row.status === 'delivered' && row.delivered_at ? [' ', time(row.delivered_at, zone)] : null,
        row.status === 'pending' || row.status === 'sending'
          ? h(
              'span',
              { className: 'muted' },
              ` attempt ${row.attempts}${row.next_attempt_at ? ', next try ' : ''}`,
              row.next_attempt_at ? time(row.next_attempt_at, zone) : null,
            )
          : null,
        row.last_error && row.status !== 'delivered'
          ? h('span', { className: 'reason' }, ` ${row.last_error}`)
          : null,
      ),
    ),
  )
}

/** Jobs per page of the list: the first screen reads and draws this many, whatever the total. */
const PAGE_SIZE = 50

/** The list's filters, order and search as URL parameters (the hash's query) and the API's. */
const LIST_PARAMS = ['q', 'status', 'kind', 'zone', 'paused', 'failing', 'delivery_failed', 'sort']

const STATUS_CHOICES = [
  ['', 'any'],
  ['completed', 'completed'],
  ['failed', 'failed'],
  ['timed_out', 'timed out'],
  ['cancelled', 'cancelled'],
  ['interrupted', 'interrupted'],
  ['skipped', 'skipped'],
  ['running', 'running'],
  ['never', 'never ran'],
]
const SORT_CHOICES = [
  ['name', 'name'],
  ['next_run', 'next run, soonest first'],
  ['last_run', 'last run, newest first'],
  ['failures', 'failures in a row, most first'],
]

/** The API query of the list for the hash's query (only the known parameters, empty ones left out). */
function listQuery(query) {
  const out = new URLSearchParams()
  for (const name of LIST_PARAMS) {
    const value = query.get(name)
    if (value) out.set(name, value)
  }
  return out
}

/** A labelled `<select>` of `choices` ([value, text]), the current value chosen. */
function choice(name, label, choices, current) {
  const id = `filter-${name}`
  return h(
    'div',
    { className: 'filter' },
    h('label', { for: id }, label),
    h(
      'select',
      { id, name },
      choices.map(([value, text]) => h('option', { value, selected: value === (current || '') }, text)),
    ),
  )
}

function checkbox(name, label, checked) {
  const id = `filter-${name}`
  return h(
    'div',
    { className: 'filter check' },
    h('input', { id, name, type: 'checkbox', value: '1', checked }),
    h('label', { for: id }, label),
  )
}

/** The search and filter form; Apply puts its state in the URL (`#/cron?…`), which reads the list. */
function filterForm(query) {
  const search = h('input', {
    id: 'filter-q',
    name: 'q',
    type: 'search',
    value: query.get('q') || '',
    maxlength: '64',
    autocomplete: 'off',
  })
  return h(
    'form',
    {
      className: 'filters',
      role: 'search',
      'aria-label': 'Filter cron jobs',
      onsubmit: (event) => {
        event.preventDefault()
        const form = /** @type {HTMLFormElement} */ (event.currentTarget)
        const next = new URLSearchParams()
        for (const [name, value] of new FormData(form)) {
          const text = String(value).trim()
          if (text && !(name === 'sort' && text === 'name')) next.set(name, text)
        }
        const hash = next.size === 0 ? '#/cron' : `#/cron?${next}`
        if (location.hash === hash) reloadList()
        else location.hash = hash
      },
    },
    h('div', { className: 'filter' }, h('label', { for: 'filter-q' }, 'Name contains'), search),
    choice('status', 'Last status', STATUS_CHOICES, query.get('status')),
    choice(
      'kind',
      'Kind',
      [
        ['', 'any'],
        ['ai', 'ai'],
        ['shell', 'shell'],
      ],
      query.get('kind'),
    ),
    h(
      'div',
      { className: 'filter' },
      h('label', { for: 'filter-zone' }, 'Time zone'),
      h('input', {
        id: 'filter-zone',
        name: 'zone',
        value: query.get('zone') || '',
        placeholder: 'any, e.g. Europe/Berlin',
        maxlength: '64',
        autocomplete: 'off',
      }),
    ),
    choice(
      'paused',
      'State',
      [
        ['', 'any'],
        ['1', 'paused'],
        ['0', 'enabled'],
      ],
      query.get('paused'),
    ),
    checkbox('failing', 'Failing', query.get('failing') === '1'),
    checkbox('delivery_failed', 'Last delivery failed', query.get('delivery_failed') === '1'),
    choice('sort', 'Sort by', SORT_CHOICES, query.get('sort') || 'name'),
    h(
      'div',
      { className: 'filter buttons' },
      h('button', { type: 'submit' }, 'Apply'),
      h('a', { href: '#/cron' }, 'Clear'),
    ),
  )
}

/** The way to the form of a new job. */
function newJobLink() {
  return h(
    'p',
    {},
    h('a', { className: 'button', href: '#/cron/new', 'data-key': 'new-job' }, 'New cron job'),
  )
}

/** Reads the list again at the same URL (Apply without a change). */
function reloadList() {
  window.dispatchEvent(new HashChangeEvent('hashchange'))
}

/**
 * One job's row. Its buttons keep their keys (`toggle:<id>`, `run:<id>`) whatever the job's state,
 * so focus can return to the control acted on when the row is drawn again.
 * @param {any} job
 * @param {PageContext} page
 */
function jobRow(job, page) {
  const after = (button) => {
    refreshRow(job.id, page, button.getAttribute('data-key'))
  }
  return h(
    'tr',
    { 'data-job': job.name, 'data-job-id': job.id },
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
      job.enabled ? time(job.next_run_at, job.timezone) : h('span', { className: 'muted' }, 'paused'),
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
    h('td', { 'data-label': 'Actions' }, jobActions(job, page, after)),
  )
}

/** Reads in flight per job id: a burst of events for one job reads it once more at most. */
const rowReads = new Map()

/**
 * Reads one job again (`GET /api/cron/jobs/:id`) and redraws its row alone. Focus never moves: if
 * it was in the row, it goes to the control with the same key in the new row; `focusKey` (after an
 * action) puts it on that control, where the action started. A job removed loses its row.
 * @param {string} id
 * @param {PageContext} page
 * @param {string | null} [focusKey]
 */
function refreshRow(id, page, focusKey) {
  const pending = rowReads.get(id)
  if (pending) {
    pending.again = true
    if (focusKey) pending.focusKey = focusKey
    return
  }
  const state = { again: false, focusKey: focusKey || null }
  rowReads.set(id, state)
  api(`/api/cron/jobs/${encodeURIComponent(id)}`, { accept: [404] })
    .then((answer) => {
      const row = document.querySelector(`tr[data-job-id="${CSS.escape(id)}"]`)
      if (!row) return
      const focused = document.activeElement
      const keepKey =
        state.focusKey || (focused && row.contains(focused) ? focused.getAttribute('data-key') : null)
      if (!answer?.job) {
        row.remove()
        return
      }
      const fresh = jobRow(answer.job, page)
      row.replaceWith(fresh)
      if (keepKey) {
        const control = /** @type {HTMLElement | null} */ (
          fresh.querySelector(`[data-key="${CSS.escape(keepKey)}"]`)
        )
        if (control) control.focus()
      }
    })
    .catch(() => {})
    .finally(() => {
      rowReads.delete(id)
      if (state.again) refreshRow(id, page, state.focusKey)
    })
}

/** "Showing 50 of 1,234 jobs" with the filters in words. */
function summary(shown, total) {
  return `Showing ${shown.toLocaleString()} of ${Number(total).toLocaleString()} ${total === 1 ? 'job' : 'jobs'}`
}

/** @type {View} */
export const cron = {
  title: 'Cron',
  async load(route) {
    const query = listQuery(route.query)
    query.set('limit', String(PAGE_SIZE))
    const page = await api(`/api/cron/jobs?${query}`)
    return { jobs: page.jobs || [], next: page.next_cursor || null, total: page.total || 0 }
  },
  render(data, route, page) {
    const filtered = listQuery(route.query).size > 0
    if (data.jobs.length === 0 && !filtered)
      return h(
        'section',
        {},
        heading('Cron'),
        h(
          'p',
          {},
          'No cron jobs yet. Create one here, with lango cron add, POST /api/cron/jobs, or ask an agent.',
        ),
        newJobLink(),
      )
    const body = h(
      'tbody',
      {},
      data.jobs.map((job) => jobRow(job, page)),
    )
    const count = h('p', { className: 'list-count', role: 'status' }, summary(data.jobs.length, data.total))
    const more = h(
      'button',
      {
        type: 'button',
        className: 'load-more',
        'data-key': 'load-more',
        hidden: data.next === null,
        onclick: async (event) => {
          const button = /** @type {HTMLButtonElement} */ (event.currentTarget)
          if (data.next === null) return
          button.disabled = true
          try {
            const query = listQuery(route.query)
            query.set('limit', String(PAGE_SIZE))
            query.set('cursor', data.next)
            const next = await api(`/api/cron/jobs?${query}`)
            const jobs = next.jobs || []
            data.jobs.push(...jobs)
            data.next = next.next_cursor || null
            data.total = next.total ?? data.total
            body.append(...jobs.map((job) => jobRow(job, page)))
            count.textContent = summary(data.jobs.length, data.total)
            button.hidden = data.next === null
            // The first new row's link, so the keyboard goes on where the list grew.
            const first = jobs[0] ? body.querySelector(`tr[data-job-id="${CSS.escape(jobs[0].id)}"] a`) : null
            if (first instanceof HTMLElement) first.focus()
          } finally {
            button.disabled = false
          }
        },
      },
      `Show ${PAGE_SIZE} more`,
    )
    return h(
      'section',
      {},
      heading('Cron'),
      newJobLink(),
      filterForm(route.query),
      h('p', { className: 'notice', role: 'alert' }),
      count,
      data.jobs.length === 0
        ? h('p', { className: 'muted' }, 'No job matches these filters.')
        : h(
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
            body,
          ),
      more,
    )
  },
  onEvent(type, data, _route, page) {
    if (!type.startsWith('cron.')) return false
    // A new job may belong anywhere in the list: read the page again (its first page).
    if (type === 'cron.job.created' || type === 'cron.jobs.changed') return false
    if (data && typeof data.job_id === 'string') refreshRow(data.job_id, page)
    return true
  },
}

/** Runs a page of a job's history holds. */
const HISTORY_PAGE = 50

/** @type {View} */
export const job = {
  title: 'Cron job',
  async load(route) {
    const id = encodeURIComponent(/** @type {string} */ (route.id))
    // Read again (an event), the history keeps as many runs as were shown, up to the API's 200.
    const shown = route.data?.entries?.length || 0
    const limit = Math.min(200, Math.max(HISTORY_PAGE, shown))
    const [one, runs] = await Promise.all([
      api(`/api/cron/jobs/${id}`),
      api(`/api/cron/runs?job=${id}&limit=${limit}`),
    ])
    return {
      job: one.job,
      nextRuns: one.next_runs || [],
      entries: runs.entries || [],
      entriesNext: runs.next_cursor || null,
    }
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
        // Where the command runs decides what a relative command (./job.sh) runs.
        job.cwd ? field('Working directory', h('code', { className: 'wrap' }, job.cwd)) : '',
        // An ai job's gate: the shell check run before each run (exit 0 runs, 1 skips).
        job.when ? field('When', h('code', { className: 'wrap' }, job.when)) : '',
        field(
          'Deliver to',
          job.deliver_to && job.deliver_to.length > 0 ? job.deliver_to.join(', ') : 'nowhere',
        ),
        field('Overlap', job.overlap),
        field('Time-out', durationText(job.timeout_ms)),
        // The address every run calls (its dead-man monitor), shown whole.
        job.ping_url ? field('Ping URL', h('code', { className: 'wrap' }, job.ping_url)) : '',
        field('Created by', job.created_by || 'the operator (API, CLI or dashboard)'),
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
      data.entries.length === 0 ? h('p', { className: 'muted' }, 'No runs yet.') : olderRuns(data, job, page),
    )
  },
}

/**
 * A job's runs, newest first, a page at a time: "Show older runs" reads the next page (the API's
 * `next_cursor`) and moves the focus to its first run.
 * @param {PageContext} page
 */
function olderRuns(data, job, page) {
  const list = h(
    'ol',
    { className: 'timeline', 'aria-labelledby': 'history-heading' },
    data.entries.map((entry) => historyEntry(entry, job, page)),
  )
  const older = h(
    'button',
    {
      type: 'button',
      'data-key': 'runs-older',
      hidden: data.entriesNext === null,
      onclick: async (event) => {
        const button = /** @type {HTMLButtonElement} */ (event.currentTarget)
        if (data.entriesNext === null) return
        button.disabled = true
        try {
          const next = await api(
            `/api/cron/runs?job=${encodeURIComponent(job.id)}&limit=${HISTORY_PAGE}&cursor=${encodeURIComponent(data.entriesNext)}`,
          )
          const entries = next.entries || []
          data.entries.push(...entries)
          data.entriesNext = next.next_cursor || null
          list.append(...entries.map((entry) => historyEntry(entry, job, page)))
          button.hidden = data.entriesNext === null
          const first = entries[0] ? list.querySelector(`[data-run="${CSS.escape(entries[0].id)}"]`) : null
          if (first instanceof HTMLElement) {
            first.tabIndex = -1
            first.focus()
          }
        } finally {
          button.disabled = false
        }
      },
    },
    'Show older runs',
  )
  return [list, older]
}
