// @ts-check
import { api, download, post } from './api.js'
import { h, heading, oneLine, STATUS_TONE, time } from './dom.js'

/** @import { View, PageContext } from './app.js' */

/**
 * Background processes: cards, running ones first, read again every 2 s while the page is open.
 * Each card's output box follows the end of the output (app.js keeps a `data-follow` box at its
 * end across redraws unless the reader scrolled up), and "Download whole output" saves all the
 * output the server still holds (`GET /api/processes/:id/output`).
 */

/**
 * @param {any} process
 * @param {PageContext} page
 */
function processCard(process, page) {
  const running = process.status === 'running'
  const label =
    process.status === 'exited' && process.exit_code !== null ? `exited ${process.exit_code}` : undefined
  const tone =
    process.status === 'exited' ? (process.exit_code === 0 ? 'completed' : 'failed') : process.status
  return h(
    'li',
    { className: 'card', 'data-process': process.id, 'data-status': process.status },
    h('h3', {}, h('code', { className: 'wrap command' }, process.command)),
    h(
      'p',
      {},
      h(
        'span',
        { className: `badge tone-${STATUS_TONE[tone] || 'muted'}`, 'data-status': process.status },
        label || process.status.replace(/_/g, ' '),
      ),
      h('span', { className: 'muted' }, ` · id ${process.id} · pid ${process.pid} · started `),
      time(process.started_at),
      process.ended_at ? [h('span', { className: 'muted' }, ' · ended '), time(process.ended_at)] : null,
    ),
    process.output_tail
      ? h(
          'details',
          {
            open: running,
            'data-key': `tail:${process.id}`,
            // Opened by the reader: the box shows the newest line, as it does when drawn open (a box
            // the redraw placed already, app.js restoreFollow, stays where it was put).
            ontoggle: (event) => {
              const details = /** @type {HTMLDetailsElement} */ (event.currentTarget)
              const box = /** @type {HTMLElement | null} */ (details.querySelector('[data-follow]'))
              if (!details.open || !box || box.dataset.placed === 'true') return
              box.scrollTop = box.scrollHeight
              box.dataset.placed = 'true'
            },
          },
          h('summary', {}, `Last output (${process.output_bytes} bytes in all)`),
          h(
            'pre',
            {
              className: 'tail',
              tabindex: 0,
              role: 'region',
              'aria-label': `Output of ${oneLine(process.command, 60)}`,
              'data-follow': `tail:${process.id}`,
            },
            process.output_tail,
          ),
        )
      : h('p', { className: 'muted' }, 'No output yet.'),
    h(
      'div',
      { className: 'actions' },
      process.output_bytes > 0
        ? h(
            'button',
            {
              type: 'button',
              'data-key': `download:${process.id}`,
              'aria-label': `Download whole output of ${oneLine(process.command, 60)}`,
              onclick: (event) =>
                page.act(
                  event.currentTarget,
                  () =>
                    download(`/api/processes/${encodeURIComponent(process.id)}/output`, `${process.id}.log`),
                  (saved) => `Downloaded ${saved.name} (${saved.bytes} bytes)`,
                  () => {},
                ),
            },
            'Download whole output',
          )
        : null,
      running
        ? h(
            'button',
            {
              type: 'button',
              className: 'deny',
              'data-key': `stop:${process.id}`,
              'aria-label': `Stop ${oneLine(process.command, 60)}`,
              onclick: (event) =>
                page.act(
                  event.currentTarget,
                  () => post(`/api/processes/${encodeURIComponent(process.id)}/stop`),
                  (answer) => `Stopped ${oneLine(process.command, 60)} (${answer.status})`,
                ),
            },
            'Stop',
          )
        : null,
    ),
  )
}

/** @type {View} */
export const processes = {
  title: 'Processes',
  // Output and exits of background processes come with no event: read them again every 2 s.
  pollMs: 2000,
  async load() {
    return api('/api/processes')
  },
  render(data, _route, page) {
    const processes = data.processes || []
    const running = processes.filter((process) => process.status === 'running')
    const ended = processes.filter((process) => process.status !== 'running')
    return h(
      'section',
      {},
      heading('Processes'),
      h('p', { className: 'notice', role: 'alert' }),
      h(
        'p',
        { className: 'muted small' },
        'Background commands started with exec_bg (by an agent or POST /api/tools/exec_bg). This page reads them again every 2 seconds while it is open.',
      ),
      h('h2', {}, 'Running'),
      running.length === 0
        ? h('p', { className: 'empty' }, 'No background process is running.')
        : h(
            'ul',
            { className: 'cards' },
            running.map((process) => processCard(process, page)),
          ),
      ended.length === 0
        ? null
        : [
            h('h2', {}, 'Ended'),
            h(
              'ul',
              { className: 'cards' },
              ended.map((process) => processCard(process, page)),
            ),
          ],
    )
  },
}
