// @ts-check
import { badge, duration, field, h, STATUS_TONE, svg, time } from './dom.js'

/** @import { View, PageContext } from './app.js' */

/** A workflow run's steps as a graph: topological layers, SVG edges. */

/** The step whose result is shown under a run's graph, per run id (kept across live re-renders). */
const selectedSteps = new Map()
/** @type {ResizeObserver | null} */
let graphObserver = null

/** Stops redrawing the edges of the graph on screen (the page is left). */
export function disconnectGraph() {
  if (graphObserver !== null) graphObserver.disconnect()
}

/**
 * Steps in layers: a step's layer is one more than its deepest dependency's. Within a layer, steps
 * sit near the mean position of their dependencies (fewer crossing edges), else in run order.
 */
function stepLayers(steps) {
  const byId = new Map(steps.map((step) => [step.step_id, step]))
  const depth = new Map()
  const visit = (id, trail) => {
    if (depth.has(id)) return depth.get(id)
    // The engine refuses cycles; this only keeps a bad answer from looping.
    if (trail.has(id)) return 0
    trail.add(id)
    let level = 0
    for (const dependency of byId.get(id).depends_on) {
      if (byId.has(dependency)) level = Math.max(level, visit(dependency, trail) + 1)
    }
    trail.delete(id)
    depth.set(id, level)
    return level
  }
  /** @type {any[][]} */
  const layers = []
  for (const step of steps) {
    const level = visit(step.step_id, new Set())
    if (!layers[level]) layers[level] = []
    layers[level].push(step)
  }
  const position = new Map()
  layers.forEach((layer, index) => {
    if (index > 0) {
      const order = /** @type {Map<string, number>} */ (new Map(layer.map((step, at) => [step.step_id, at])))
      const weight = (step) => {
        const placed = step.depends_on.filter((dependency) => position.has(dependency))
        return placed.length === 0
          ? Number.MAX_VALUE
          : placed.reduce((sum, dependency) => sum + position.get(dependency), 0) / placed.length
      }
      layer.sort(
        (a, b) =>
          weight(a) - weight(b) ||
          /** @type {number} */ (order.get(a.step_id)) - /** @type {number} */ (order.get(b.step_id)),
      )
    }
    layer.forEach((step, at) => {
      position.set(step.step_id, at)
    })
  })
  return layers
}

/**
 * @param {any} run
 * @param {PageContext} page
 */
export function stepGraphSection(run, page) {
  const steps = run.steps || []
  if (steps.length === 0) return null
  const heading = h('h2', { id: 'graph-heading' }, 'Step graph')
  if (!steps.every((step) => Array.isArray(step.depends_on))) {
    return [
      heading,
      h(
        'p',
        { className: 'muted' },
        'No graph: this run does not say which steps depend on which (its stored definition no longer parses).',
      ),
    ]
  }
  const byId = new Map(steps.map((step) => [step.step_id, step]))
  const chosen = byId.get(selectedSteps.get(run.run_id))
  const edges = []
  for (const step of steps) {
    for (const dependency of step.depends_on) {
      if (byId.has(dependency))
        edges.push({ from: dependency, to: step.step_id, status: byId.get(dependency).status })
    }
  }
  const lines = svg('svg', { class: 'edges', 'aria-hidden': 'true', focusable: 'false' })
  const graph = h(
    'div',
    {
      className: 'graph',
      role: 'group',
      'aria-labelledby': 'graph-heading',
      'aria-describedby': 'graph-help',
    },
    lines,
    stepLayers(steps).map((layer, index) =>
      h(
        'div',
        { className: 'layer', 'data-layer': index },
        layer.map((step) => stepNode(run, step, chosen, page)),
      ),
    ),
  )
  if (graphObserver !== null) graphObserver.disconnect()
  // Edges are drawn once the boxes have a place, and again whenever the graph changes size.
  graphObserver = new ResizeObserver(() => drawEdges(graph, lines, edges))
  graphObserver.observe(graph)
  return [
    heading,
    h(
      'p',
      { id: 'graph-help', className: 'muted small' },
      'Each box is a step and its state; lines lead from a step to the steps that wait for it. Choose a step to see its result or error.',
    ),
    graph,
    stepDetail(chosen),
  ]
}

/**
 * Each state a step's box shows, with its icon: the word and the icon say it, the colour only
 * repeats it. `reused`: a completed step a rerun took from an earlier run.
 * @type {Record<string, { icon: string, label: string, tone: string }>}
 */
const STEP_STATES = {
  pending: { icon: '○', label: 'pending', tone: STATUS_TONE.pending },
  running: { icon: '▶', label: 'running', tone: STATUS_TONE.running },
  completed: { icon: '✓', label: 'completed', tone: STATUS_TONE.completed },
  reused: { icon: '↺', label: 'reused', tone: STATUS_TONE.completed },
  failed: { icon: '✕', label: 'failed', tone: STATUS_TONE.failed },
  skipped: { icon: '↷', label: 'skipped', tone: STATUS_TONE.skipped },
  cancelled: { icon: '⊘', label: 'cancelled', tone: STATUS_TONE.cancelled },
}

/** A step's state as its box shows it: its status, or `reused` for a step a rerun reused. */
function stepState(step) {
  return step.status === 'completed' && step.reused_from ? 'reused' : step.status
}

/** A step's state badge: icon and word (`✓ completed`). */
function stateBadge(state) {
  const known = STEP_STATES[state]
  if (!known) return badge(state)
  return h(
    'span',
    { className: `badge state tone-${known.tone}`, 'data-status': state },
    h('span', { className: 'state-icon', 'aria-hidden': 'true' }, known.icon),
    known.label,
  )
}

/**
 * A step id that wraps only between its words: after a `_` or `-`, and between a lower-case
 * letter and a capital (`fetchUserData`); never inside one (step ids have no spaces).
 * @param {string} id
 */
function wrappableId(id) {
  const parts = id.split(/(?<=[_-])|(?<=[a-z0-9])(?=[A-Z])/)
  return parts.flatMap((part, index) => (index === 0 ? [part] : [h('wbr', {}), part]))
}

/**
 * @param {any} run
 * @param {any} step
 * @param {any} chosen
 * @param {PageContext} page
 */
function stepNode(run, step, chosen, page) {
  const after =
    step.depends_on.length > 0
      ? ['after ', step.depends_on.map((id, index) => [index > 0 ? ', ' : '', wrappableId(id)])]
      : 'starts first'
  return h(
    'button',
    {
      type: 'button',
      className: 'node',
      'data-step': step.step_id,
      'data-status': step.status,
      'data-state': stepState(step),
      'data-key': `node:${step.step_id}`,
      'aria-pressed': chosen === step ? 'true' : 'false',
      'aria-controls': 'step-detail',
      onclick: () => {
        selectedSteps.set(run.run_id, chosen === step ? undefined : step.step_id)
        page.rerender()
      },
    },
    h('span', { className: 'node-id' }, wrappableId(step.step_id)),
    stateBadge(stepState(step)),
    h('span', { className: 'node-after' }, after),
  )
}

function stepDetail(step) {
  if (!step) return h('p', { id: 'step-detail', className: 'step-detail muted' }, 'No step chosen.')
  const ended =
    step.started_at && step.completed_at
      ? duration(new Date(step.completed_at).getTime() - new Date(step.started_at).getTime())
      : ''
  const waiting = step.status === 'pending' || step.status === 'running'
  return h(
    'section',
    {
      id: 'step-detail',
      className: 'step-detail',
      'data-step': step.step_id,
      'aria-labelledby': 'step-detail-heading',
    },
    h('h3', { id: 'step-detail-heading' }, `Step ${step.step_id} `, stateBadge(stepState(step))),
    h(
      'dl',
      { className: 'facts' },
      field('Depends on', step.depends_on.length > 0 ? step.depends_on.join(', ') : 'nothing'),
      field('Attempt', String(step.attempt || 0)),
      field('Started', time(step.started_at)),
      field('Ended', [
        time(step.completed_at),
        ended ? h('span', { className: 'muted' }, ` · ${ended}`) : null,
      ]),
    ),
    step.error ? h('p', { className: 'reason' }, `Error: ${step.error}`) : null,
    step.result
      ? [h('h4', {}, 'Result'), h('pre', { className: 'result' }, String(step.result).slice(0, 4000))]
      : step.error
        ? null
        : h('p', { className: 'muted' }, waiting ? 'No result yet.' : 'No result.'),
  )
}

/** Lines from each step to the steps that wait for it: left to right, or top to bottom on a phone. */
function drawEdges(graph, lines, edges) {
  if (!graph.isConnected) return
  lines.setAttribute('width', '0')
  lines.setAttribute('height', '0')
  const width = graph.scrollWidth
  const height = graph.scrollHeight
  lines.setAttribute('width', String(width))
  lines.setAttribute('height', String(height))
  lines.setAttribute('viewBox', `0 0 ${width} ${height}`)
  const frame = graph.getBoundingClientRect()
  const boxes = new Map()
  for (const node of graph.querySelectorAll('.node')) {
    const rect = node.getBoundingClientRect()
    const left = rect.left - frame.left + graph.scrollLeft
    const top = rect.top - frame.top + graph.scrollTop
    boxes.set(node.dataset.step, { left, top, right: left + rect.width, bottom: top + rect.height })
  }
  const downward = getComputedStyle(graph).flexDirection === 'column'
  const round = (value) => Math.round(value * 10) / 10
  // One arrow head per state, coloured like its line (a marker cannot take the line's colour).
  const states = [...new Set(edges.map((edge) => edge.status))]
  const arrows = states.map((status) =>
    svg(
      'marker',
      {
        id: `edge-arrow-${status}`,
        'data-status': status,
        viewBox: '0 0 10 10',
        refX: '9',
        refY: '5',
        markerWidth: '7',
        markerHeight: '7',
        orient: 'auto-start-reverse',
      },
      svg('path', { d: 'M0 0 L10 5 L0 10 z' }),
    ),
  )
  const paths = []
  for (const edge of edges) {
    const from = boxes.get(edge.from)
    const to = boxes.get(edge.to)
    if (!from || !to) continue
    let d
    if (downward) {
      const x1 = round((from.left + from.right) / 2)
      const y1 = round(from.bottom)
      const x2 = round((to.left + to.right) / 2)
      const y2 = round(to.top)
      const middle = round((y1 + y2) / 2)
      d = `M${x1} ${y1} C${x1} ${middle} ${x2} ${middle} ${x2} ${y2}`
    } else {
      const x1 = round(from.right)
      const y1 = round((from.top + from.bottom) / 2)
      const x2 = round(to.left)
      const y2 = round((to.top + to.bottom) / 2)
      const middle = round((x1 + x2) / 2)
      d = `M${x1} ${y1} C${middle} ${y1} ${middle} ${y2} ${x2} ${y2}`
    }
    paths.push(
      svg('path', {
        class: 'edge',
        d,
        'data-from': edge.from,
        'data-to': edge.to,
        'data-status': edge.status,
        'marker-end': `url(#edge-arrow-${edge.status})`,
      }),
    )
  }
  lines.replaceChildren(svg('defs', {}, ...arrows), ...paths)
}
