// @ts-check
import { api, post } from './api.js'
import { badge, duration, h, heading, oneLine, time } from './dom.js'
/** @import { View, PageContext } from './app.js' */

/** Background tasks: a table, refreshed by the background.task.* events; Cancel while pending or running. */
/** @type {View} */
export const background = {
  title: 'Background tasks',
  async load() {
    return api('/api/background/tasks')
  },
  render(data, _route, page) {
    const tasks = data.tasks || []
    return h(
      'section',
      {},
      heading('Background tasks'),
      h('p', { className: 'notice', role: 'alert' }),
      tasks.length === 0
        ? h(
            'p',
            { className: 'empty' },
            'No background tasks. An agent starts one with bg_submit, and POST /api/background/tasks submits one; either needs a configured model to run.',
          )
        : h(
            'table',
            { className: 'tasks' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Task', 'Status', 'Submitted', 'Started', 'Took', 'Result', 'Actions'].map((label) =>
                  h('th', { scope: 'col' }, label),
                ),
              ),
            ),
            h(
              'tbody',
              {},
              tasks.map((task) => {
                const active = task.status === 'pending' || task.status === 'running'
                const took =
                  task.started_at && task.completed_at
                    ? duration(new Date(task.completed_at).getTime() - new Date(task.started_at).getTime())
                    : ''
                return h(
                  'tr',
                  { 'data-task': task.task_id },
                  h(
                    'th',
                    { scope: 'row', 'data-label': 'Task' },
                    h('span', { className: 'wrap' }, oneLine(task.prompt, 160)),
                    h('span', { className: 'muted small' }, ` ${task.task_id.slice(0, 8)}`),
                  ),
                  h('td', { 'data-label': 'Status', className: 'status' }, badge(task.status)),
                  h('td', { 'data-label': 'Submitted' }, time(task.created_at)),
                  h('td', { 'data-label': 'Started' }, time(task.started_at)),
                  h(
                    'td',
                    { 'data-label': 'Took' },
                    took || h('span', { className: 'muted' }, active ? 'still going' : '—'),
                  ),
                  h(
                    'td',
                    { 'data-label': 'Result', className: 'result' },
                    task.error ? h('p', { className: 'reason' }, `Error: ${task.error}`) : null,
                    task.result
                      ? h(
                          'details',
                          { 'data-key': `result:${task.task_id}` },
                          h('summary', {}, 'Result'),
                          h('pre', {}, String(task.result).slice(0, 4000)),
                        )
                      : null,
                    !task.error && !task.result
                      ? h('span', { className: 'muted' }, active ? 'not yet' : 'none')
                      : null,
                  ),
                  h(
                    'td',
                    { 'data-label': 'Actions' },
                    active
                      ? h(
                          'button',
                          {
                            type: 'button',
                            className: 'deny',
                            'data-key': `cancel-task:${task.task_id}`,
                            'aria-label': `Cancel task ${task.task_id.slice(0, 8)}`,
                            onclick: (event) =>
                              page.act(
                                event.currentTarget,
                                () =>
                                  post(`/api/background/tasks/${encodeURIComponent(task.task_id)}/cancel`),
                                (answer) => `Cancelled task ${task.task_id.slice(0, 8)} (${answer.status})`,
                              ),
                          },
                          'Cancel',
                        )
                      : h('span', { className: 'muted' }, '—'),
                  ),
                )
              }),
            ),
          ),
    )
  },
}
