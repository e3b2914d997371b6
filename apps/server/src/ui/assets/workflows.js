// @ts-check
import { api, post } from './api.js'
import { badge, duration, field, h, heading, spend, time } from './dom.js'
import { scheduleCell } from './schedules.js'
import { stepGraphSection } from './workflow-graph.js'

/** @import { View, PageContext } from './app.js' */

/** Workflows: the runs and the saved workflows with their schedules, and one run's page with its step graph. */

/**
 * A saved workflow's Run button: starts a run now (`POST /api/workflows/runs` with its name, not
 * waiting for the end); the focus stays on the button and the new run is announced.
 * @param {string} name
 * @param {PageContext} page
 */
function runSaved(name, page) {
  return h(
    'button',
    {
      type: 'button',
      'data-key': `run-saved:${name}`,
      onclick: (event) =>
        page.act(
          event.currentTarget,
          () => post('/api/workflows/runs', { name, wait_seconds: 0 }),
          (answer) => `Started ${name}: run ${String(answer.run_id).slice(0, 8)}`,
        ),
    },
    'Run',
    h('span', { className: 'visually-hidden' }, ` ${name}`),
  )
}

/**
 * Saved workflows with their schedule (the cron job that runs each), its zone and next run.
 * @param {string[]} names
 * @param {Record<string, any>} schedules
 * @param {PageContext} page
 */
function savedWorkflows(names, schedules, page) {
  return h(
    'section',
    { 'aria-labelledby': 'saved-heading' },
    h('h2', { id: 'saved-heading' }, 'Saved workflows'),
    h(
      'table',
      { className: 'saved' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Workflow', 'Schedule', 'Time zone', 'Next run', 'State', 'Actions'].map((label) =>
            h('th', { scope: 'col' }, label),
          ),
        ),
      ),
      h(
        'tbody',
        {},
        names.map((name) => {
          const job = schedules[name]
          if (!job) {
            return h(
              'tr',
              { 'data-saved': name },
              h('th', { scope: 'row', 'data-label': 'Workflow' }, h('code', {}, name)),
              h(
                'td',
                { 'data-label': 'Schedule', colspan: '4' },
                h('span', { className: 'muted' }, 'not scheduled: runs when started'),
              ),
              h('td', { 'data-label': 'Actions' }, runSaved(name, page)),
            )
          }
          return h(
            'tr',
            { 'data-saved': name },
            h('th', { scope: 'row', 'data-label': 'Workflow' }, h('code', {}, name)),
            h(
              'td',
              { 'data-label': 'Schedule' },
              h('a', { href: `#/cron/${encodeURIComponent(job.job_id)}` }, scheduleCell(job)),
            ),
            h('td', { 'data-label': 'Time zone' }, job.timezone),
            h(
              'td',
              { 'data-label': 'Next run' },
              job.enabled ? time(job.next_run_at, job.timezone) : h('span', { className: 'muted' }, '—'),
            ),
            h(
              'td',
              { 'data-label': 'State', className: 'status' },
              job.enabled ? badge('enabled') : badge('paused'),
            ),
            h('td', { 'data-label': 'Actions' }, runSaved(name, page)),
          )
        }),
      ),
    ),
  )
}

/** Runs a page of the list holds. */
const RUNS_PAGE = 50

/** One run's row: its workflow (linked), state, progress, times and error. */
function runRow(run) {
  return h(
    'tr',
    { 'data-run': run.run_id },
    h(
      'th',
      { scope: 'row', 'data-label': 'Run' },
      h('a', { href: `#/workflows/${encodeURIComponent(run.run_id)}` }, run.workflow_name),
      h('span', { className: 'muted small' }, ` ${run.run_id.slice(0, 8)}`),
    ),
    h('td', { 'data-label': 'Status', className: 'status' }, badge(run.status)),
    h('td', { 'data-label': 'Steps done' }, `${run.completed_steps} of ${run.total_steps}`),
    h('td', { 'data-label': 'Started' }, time(run.started_at)),
    h('td', { 'data-label': 'Ended' }, time(run.completed_at)),
    h('td', { 'data-label': 'Error' }, run.error || ''),
  )
}

/**
 * "Show older runs": reads the next page of runs (the API's `next_cursor`) into `body` and moves the
 * focus to its first run's link.
 */
function olderRuns(data, body) {
  return h(
    'button',
    {
      type: 'button',
      'data-key': 'workflow-runs-older',
      hidden: data.runsNext === null,
      onclick: async (event) => {
        const button = /** @type {HTMLButtonElement} */ (event.currentTarget)
        if (data.runsNext === null) return
        button.disabled = true
        try {
          const next = await api(
            `/api/workflows/runs?limit=${RUNS_PAGE}&cursor=${encodeURIComponent(data.runsNext)}`,
          )
          const runs = next.runs || []
          data.runs.push(...runs)
          data.runsNext = next.next_cursor || null
          body.append(...runs.map(runRow))
          button.hidden = data.runsNext === null
          const first = runs[0] ? body.querySelector(`tr[data-run="${CSS.escape(runs[0].run_id)}"] a`) : null
          if (first instanceof HTMLElement) first.focus()
        } finally {
          button.disabled = false
        }
      },
    },
    'Show older runs',
  )
}

/** @type {View} */
export const workflows = {
  title: 'Workflows',
  async load(route) {
    // Read again (an event), the list keeps as many runs as were shown, up to the API's 200.
    const shown = route.data?.runs?.length || 0
    const limit = Math.min(200, Math.max(RUNS_PAGE, shown))
    const [runs, saved] = await Promise.all([
      api(`/api/workflows/runs?limit=${limit}`),
      api('/api/workflows/saved'),
    ])
    return {
      runs: runs.runs || [],
      runsNext: runs.next_cursor || null,
      saved: saved.saved || [],
      schedules: saved.schedules || {},
    }
  },
  render(data, _route, page) {
    const runs = data.runs
    const runsBody = h('tbody', {}, runs.map(runRow))
    return h(
      'section',
      {},
      heading('Workflows'),
      h('p', { className: 'notice', role: 'alert' }),
      runs.length === 0
        ? h('p', {}, 'No workflow runs yet. Start one with lango workflow run or POST /api/workflows/runs.')
        : h(
            'table',
            { className: 'runs' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Run', 'Status', 'Steps done', 'Started', 'Ended', 'Error'].map((label) =>
                  h('th', { scope: 'col' }, label),
                ),
              ),
            ),
            runsBody,
          ),
      runs.length === 0 ? null : olderRuns(data, runsBody),
      data.saved.length > 0 ? savedWorkflows(data.saved, data.schedules, page) : null,
    )
  },
}

/** Per run: the step chosen in its "Rerun from" list ('' for the failed steps), kept across redraws. */
const rerunFrom = new Map()
/** Per run: the last rerun started from its page, linked next to the button. */
const reruns = new Map()

/**
 * The rerun control of an ended run: a "Rerun from" list (the failed steps by default, when some
 * step did not complete, or any step) and a button. The button keeps the focus after the action
 * (its data-key), and the outcome is announced.
 */
function rerunControl(run, page) {
  const steps = run.steps || []
  const unfinished = steps.some((step) => step.status !== 'completed')
  const chosen = rerunFrom.has(run.run_id)
    ? rerunFrom.get(run.run_id)
    : unfinished
      ? ''
      : steps[0]
        ? steps[0].step_id
        : ''
  const selectId = `rerun-from-${run.run_id}`
  const latest = reruns.get(run.run_id)
  return h(
    'div',
    { className: 'actions rerun' },
    h('label', { for: selectId }, 'Rerun from'),
    h(
      'select',
      {
        id: selectId,
        'data-key': `rerun-from:${run.run_id}`,
        onchange: (event) => rerunFrom.set(run.run_id, event.currentTarget.value),
      },
      unfinished
        ? h('option', { value: '', selected: chosen === '' }, 'the failed step (and what depends on it)')
        : null,
      steps.map((step) =>
        h('option', { value: step.step_id, selected: chosen === step.step_id }, `step ${step.step_id}`),
      ),
    ),
    h(
      'button',
      {
        type: 'button',
        'data-key': `rerun:${run.run_id}`,
        onclick: (event) => {
          const from = rerunFrom.has(run.run_id) ? rerunFrom.get(run.run_id) : chosen
          return page.act(
            event.currentTarget,
            () =>
              post(`/api/workflows/runs/${encodeURIComponent(run.run_id)}/rerun`, {
                ...(from ? { from_step: from } : {}),
                wait_seconds: 0,
              }),
            (answer) => {
              reruns.set(run.run_id, answer.run_id)
              const reused =
                answer.reused_steps.length === 0 ? '' : `; reuses ${answer.reused_steps.join(', ')}`
              return `Started rerun ${answer.run_id.slice(0, 8)} of ${run.workflow_name}: runs again ${answer.rerun_steps.join(', ')}${reused}`
            },
          )
        },
      },
      'Rerun',
    ),
    latest
      ? h(
          'a',
          { href: `#/workflows/${encodeURIComponent(latest)}`, 'data-key': `rerun-link:${run.run_id}` },
          `Open the rerun ${latest.slice(0, 8)}`,
        )
      : null,
  )
}

/** @type {View} */
export const run = {
  title: 'Workflow run',
  async load(route) {
    return api(`/api/workflows/runs/${encodeURIComponent(/** @type {string} */ (route.id))}`)
  },
  render(run, _route, page) {
    const active = run.status === 'running' || run.status === 'pending'
    return h(
      'section',
      {},
      h('p', {}, h('a', { href: '#/workflows' }, '← All workflow runs')),
      heading(run.workflow_name),
      h('p', { className: 'notice', role: 'alert' }),
      h(
        'dl',
        { className: 'facts' },
        field('Status', h('span', { className: 'run-status' }, badge(run.status))),
        field('Run', h('code', {}, run.run_id)),
        field('Steps done', `${run.completed_steps} of ${run.total_steps}`),
        field('Started', time(run.started_at)),
        field('Ended', time(run.completed_at)),
        run.rerun_of
          ? field(
              'Rerun of',
              h(
                'a',
                { href: `#/workflows/${encodeURIComponent(run.rerun_of)}` },
                h('code', {}, run.rerun_of),
              ),
            )
          : null,
        run.error ? field('Error', run.error) : null,
      ),
      active
        ? h(
            'div',
            { className: 'actions' },
            h(
              'button',
              {
                type: 'button',
                className: 'deny',
                'data-key': `cancel:${run.run_id}`,
                onclick: (event) =>
                  page.act(
                    event.currentTarget,
                    () => post(`/api/workflows/runs/${encodeURIComponent(run.run_id)}/cancel`),
                    (answer) => `Cancelled ${run.workflow_name} (${answer.status})`,
                  ),
              },
              'Cancel run',
            ),
          )
        : rerunControl(run, page),
      stepGraphSection(run, page),
      h('h2', { id: 'steps-heading' }, 'Steps in order'),
      h(
        'ol',
        { className: 'steps', 'aria-labelledby': 'steps-heading' },
        (run.steps || []).map((step) =>
          h(
            'li',
            { className: 'step', 'data-step': step.step_id, 'data-status': step.status },
            h(
              'div',
              { className: 'entry-head' },
              h('strong', {}, step.step_id),
              ' ',
              badge(step.status),
              spend(step) === '' ? null : h('span', { className: 'muted spend' }, spend(step)),
              step.reused_from
                ? h(
                    'span',
                    { className: 'muted reused' },
                    ' · reused from ',
                    h(
                      'a',
                      { href: `#/workflows/${encodeURIComponent(step.reused_from)}` },
                      step.reused_from.slice(0, 8),
                    ),
                  )
                : null,
              step.attempt > 1 ? h('span', { className: 'muted' }, ` · attempt ${step.attempt}`) : null,
              step.started_at ? [' ', time(step.started_at)] : null,
              step.started_at && step.completed_at
                ? h(
                    'span',
                    { className: 'muted' },
                    ' · ' +
                      duration(new Date(step.completed_at).getTime() - new Date(step.started_at).getTime()),
                  )
                : null,
            ),
            step.error ? h('p', { className: 'reason' }, `Error: ${step.error}`) : null,
            step.result
              ? h(
                  'details',
                  { 'data-key': `step-result:${step.step_id}` },
                  h('summary', {}, 'Result'),
                  h('pre', {}, String(step.result).slice(0, 4000)),
                )
              : null,
          ),
        ),
      ),
    )
  },
}
