import type { AnyTool } from '@lango/tools'
import { parseWorkflow, TRUSTED_WORKFLOW_LIMITS } from '@lango/workflow'
import { SqliteWorkflowStore } from '@lango/workflow/sqlite'
import { Hono } from 'hono'
import type { App } from '../../app/app.js'
import { savedWorkflowSchedules } from '../../scheduled-workflows/schedules.js'
import { createOperator } from '../operate.js'
import { defined, errorResponse, knownQuery, queryNumber } from '../responses.js'

/** `tool` with its result passed through `after` (same name, parameters and safety). */
function withResult(tool: AnyTool, after: (result: unknown) => unknown): AnyTool {
  return {
    ...tool,
    async handler(params, context) {
      return after(await tool.handler(params, context))
    },
  }
}

/** How many runs' step dependencies {@link workflowViews} keeps (a run's definition never changes). */
const DEPENDENCY_CACHE_SIZE = 200

/**
 * What the operator routes add to the agent tools' answers, for the dashboard: a workflow run's view
 * gives each step its `depends_on`, read from the run's stored definition (`null` when it no longer
 * parses). (Job changes reach the event hub from the cron service itself, whoever made them.)
 */
function workflowViews(app: App): AnyTool[] {
  const views: AnyTool[] = []
  const status = app.tools.findLast((tool) => tool.name === 'workflow_status')
  if (status !== undefined) {
    const store = new SqliteWorkflowStore(app.database.db)
    const known = new Map<string, ReadonlyMap<string, readonly string[]> | null>()
    const dependencies = async (runId: string) => {
      const cached = known.get(runId)
      if (cached !== undefined) return cached
      const run = await store.getRun(runId)
      if (run === undefined) return null
      const parsed = parseWorkflow(run.definition, { limits: TRUSTED_WORKFLOW_LIMITS })
      const graph = parsed.ok
        ? new Map(parsed.workflow.definition.steps.map((step) => [step.id, step.dependsOn]))
        : null
      if (known.size >= DEPENDENCY_CACHE_SIZE) known.delete(known.keys().next().value as string)
      known.set(runId, graph)
      return graph
    }
    views.push(
      withResult(status, async (result) => {
        const view = result as { run_id: string; steps: ReadonlyArray<{ step_id: string }> }
        const graph = await dependencies(view.run_id)
        return {
          ...view,
          steps: view.steps.map((step) => ({ ...step, depends_on: graph?.get(step.step_id) ?? null })),
        }
      }),
    )
  }
  return views
}

/**
 * Workflow runs and saved workflows, mounted at `/api/workflows`: `GET|POST /api/workflows/runs`,
 * `GET /api/workflows/runs/:id`, `POST /api/workflows/runs/:id/cancel`,
 * `POST /api/workflows/runs/:id/rerun` (`{ from_step?, wait_seconds? }`), `GET /api/workflows/saved`,
 * `PUT /api/workflows/saved/:name` (operator calls: src/http/operate.ts).
 */
export function workflowRoutes(app: App, shutdown: AbortSignal | undefined): Hono {
  const { operate, bodyObject } = createOperator(app, shutdown, workflowViews(app))
  const routes = new Hono()

  routes.get('/runs', knownQuery(['status', 'limit', 'cursor'], 'TOOL_INVALID_PARAMETERS'), (c) =>
    operate(
      c,
      'workflow_list',
      defined({
        status: c.req.query('status') || undefined,
        limit: queryNumber(c.req.query('limit')),
        cursor: c.req.query('cursor') || undefined,
      }),
    ),
  )
  routes.get('/runs/:id', (c) => operate(c, 'workflow_status', { run_id: c.req.param('id') }))
  routes.post('/runs', async (c) => {
    const body = await bodyObject(c)
    if ('response' in body) return body.response
    const { name, ...rest } = body.value
    if (name === undefined) return operate(c, 'workflow_run', rest)
    if (rest.file_path !== undefined || rest.yaml_content !== undefined) {
      return errorResponse(c, 'TOOL_INVALID_PARAMETERS', 'give one of name, file_path or yaml_content', {
        issues: [{ path: 'name', message: 'give one of name, file_path or yaml_content' }],
      })
    }
    // A saved workflow's name is what workflow_run's file_path accepts.
    return operate(c, 'workflow_run', { ...rest, file_path: name })
  })
  routes.post('/runs/:id/cancel', (c) => operate(c, 'workflow_cancel', { run_id: c.req.param('id') }))
  // Body (optional): { from_step?, wait_seconds? }; workflow_rerun validates it.
  routes.post('/runs/:id/rerun', async (c) => {
    const body = await bodyObject(c)
    if ('response' in body) return body.response
    return operate(c, 'workflow_rerun', { ...body.value, run_id: c.req.param('id') })
  })

  // Saved workflows, and for those with a schedule the cron job that runs them.
  routes.get('/saved', async (c) => {
    const [saved, schedules] = await Promise.all([app.directory.list(), savedWorkflowSchedules(app.cron)])
    return c.json({ saved: [...saved], schedules })
  })
  routes.put('/saved/:name', async (c) => {
    const body = await bodyObject(c)
    if ('response' in body) return body.response
    return operate(c, 'workflow_save', { ...body.value, name: c.req.param('name') })
  })

  return routes
}
