import { type AnyTool, defineTool, invokeTool } from '@lango/tools'
import { parseWorkflow, TRUSTED_WORKFLOW_LIMITS } from '@lango/workflow'
import { SqliteWorkflowStore } from '@lango/workflow/sqlite'
import type { Context, Hono } from 'hono'
import * as v from 'valibot'
import type { App } from '../app/app.js'
import { APPROVAL_STATUSES, type ApprovalStatus } from '../approvals.js'
import { ServerError } from '../errors.js'
import { savedWorkflowSchedules } from '../scheduled-workflows/schedules.js'
import { defined, errorResponse, failureBody, failureStatus, queryNumber, readJsonBody } from './responses.js'
import { callSignal } from './tool-call.js'

/** Which configuration switch a tool depends on, for the message when it is off. */
function featureOf(toolName: string): string {
  if (toolName.startsWith('cron') || toolName === 'manage_cron_jobs') return 'cron'
  if (toolName.startsWith('workflow')) return 'workflow'
  if (toolName.startsWith('bg_')) return 'background'
  return 'exec'
}

const decisionSchema = v.strictObject({
  decision: v.picklist(['approve', 'deny'], 'decision must be approve or deny'),
})

/** A view of a cron fire time, as the cron tools show them. */
function nextRunView(run: { readonly utc: string; readonly local: string; readonly timezone: string }) {
  return { utc: run.utc, local: run.local, timezone: run.timezone }
}

/**
 * The operator routes' own operations that no agent tool offers: reading one cron job with its
 * next fire times, and creating a shell cron job (cron_add is for agent jobs only). They are tools
 * that are never published, so they get the same validation and error results as the rest.
 */
function operatorTools(app: App, cronList: AnyTool): AnyTool[] {
  /** A job as cron_list shows it (one shape for every route). */
  const jobView = async (id: string): Promise<unknown> => {
    const listed = (await cronList.handler({}, {})) as { jobs: Array<{ id: string }> }
    return listed.jobs.find((job) => job.id === id) ?? null
  }
  const idOrName = v.pipe(
    v.string('id must be a string'),
    v.minLength(1, 'id must not be empty'),
    v.maxLength(128, 'id must be at most 128 characters'),
  )
  return [
    defineTool({
      name: 'cron_get',
      title: 'Get cron job',
      description: 'One cron job (by id or name) with its next fire times.',
      safety: 'safe',
      parameters: v.strictObject({ id: idOrName }),
      async handler(params, context) {
        const options = context.signal === undefined ? {} : { signal: context.signal }
        const job = await app.cron.get(params.id, options)
        const nextRuns = await app.cron.nextRuns(job.id, 3, options)
        return { job: await jobView(job.id), next_runs: nextRuns.map(nextRunView) }
      },
    }),
    defineTool({
      name: 'cron_add_shell',
      title: 'Add or update shell cron job',
      description: 'Create a shell cron job, or update the job with the same name.',
      safety: 'dangerous',
      parameters: v.strictObject({
        kind: v.literal('shell', 'kind must be ai or shell'),
        name: v.pipe(
          v.string('name must be a string'),
          v.minLength(1, 'name must not be empty'),
          v.maxLength(64),
        ),
        schedule_type: v.picklist(['cron', 'every', 'at'], 'schedule_type must be one of cron, every, at'),
        schedule: v.pipe(
          v.string('schedule must be a string'),
          v.minLength(1, 'schedule must not be empty'),
          v.maxLength(200),
        ),
        command: v.pipe(
          v.string('command must be a string'),
          v.minLength(1, 'command must not be empty'),
          v.maxLength(8_000, 'command must be at most 8000 characters'),
        ),
        cwd: v.optional(v.pipe(v.string('cwd must be a string'), v.minLength(1), v.maxLength(4096))),
        timezone: v.optional(v.pipe(v.string('timezone must be a string'), v.minLength(1), v.maxLength(64))),
        deliver_to: v.optional(
          v.pipe(
            v.array(
              v.pipe(v.string(), v.minLength(1), v.maxLength(256)),
              'deliver_to must be a list of targets',
            ),
            v.maxLength(10),
          ),
        ),
        timeout: v.optional(
          v.union(
            [v.pipe(v.string(), v.maxLength(32)), v.pipe(v.number(), v.minValue(1))],
            'timeout must be a duration such as 90s or a number of seconds',
          ),
        ),
        overlap: v.optional(
          v.picklist(['skip', 'queue_one', 'allow'], 'overlap must be one of skip, queue_one, allow'),
        ),
        enabled: v.optional(v.boolean('enabled must be true or false')),
      }),
      async handler(params, context) {
        const result = await app.cron.add(
          {
            name: params.name,
            kind: 'shell',
            scheduleType: params.schedule_type,
            schedule: params.schedule,
            command: params.command,
            ...(params.cwd === undefined ? {} : { cwd: params.cwd }),
            ...(params.timezone === undefined ? {} : { timezone: params.timezone }),
            deliverTo: params.deliver_to ?? app.config.channels.defaultDeliverTo,
            // cron_add's rule: a number is seconds.
            ...(params.timeout === undefined
              ? {}
              : {
                  timeout:
                    typeof params.timeout === 'number' ? Math.round(params.timeout * 1000) : params.timeout,
                }),
            ...(params.overlap === undefined ? {} : { overlap: params.overlap }),
            ...(params.enabled === undefined ? {} : { enabled: params.enabled }),
          },
          context.signal === undefined ? {} : { signal: context.signal },
        )
        const { job } = result
        const next = result.nextRuns[0]
        return {
          status: result.status,
          job: await jobView(job.id),
          next_runs: result.nextRuns.map(nextRunView),
          message: `Cron job "${job.name}" ${result.status} (${job.scheduleType} ${job.schedule}, ${job.timezone}).${
            next === undefined ? '' : ` Next run: ${next.local}.`
          }`,
        }
      },
    }),
  ]
}

/** `tool` with its result passed through `after` (same name, parameters and safety). */
function withResult(tool: AnyTool, after: (result: unknown) => unknown): AnyTool {
  return {
    ...tool,
    async handler(params, context) {
      return after(await tool.handler(params, context))
    },
  }
}

/** How many runs' step dependencies {@link operatorViews} keeps (a run's definition never changes). */
const DEPENDENCY_CACHE_SIZE = 200

/**
 * What the operator routes add to the agent tools' answers, for the dashboard: a workflow run's view
 * gives each step its `depends_on`, read from the run's stored definition (`null` when it no longer
 * parses). (Job changes reach the event hub from the cron service itself, whoever made them.)
 */
function operatorViews(app: App, tools: ReadonlyMap<string, AnyTool>): AnyTool[] {
  const views: AnyTool[] = []
  const status = tools.get('workflow_status')
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
 * The operator REST API (apps/server/README.md, "HTTP API"): cron jobs and runs, workflow runs and saved workflows,
 * background tasks, background processes and approvals. The bearer token is the operator, so
 * these calls need no approval: each runs the same tool an agent would, with policy `none` and
 * session `cli`, and answers with the tool's result as it is (a failure as `{error}` with the
 * status of `failureStatus`; an id that names nothing is 404).
 */
export function registerOperatorRoutes(http: Hono, app: App, shutdown: AbortSignal | undefined): void {
  const tools = new Map<string, AnyTool>(app.tools.map((tool) => [tool.name, tool]))
  const cronList = tools.get('cron_list')
  if (cronList !== undefined) for (const tool of operatorTools(app, cronList)) tools.set(tool.name, tool)
  for (const tool of operatorViews(app, tools)) tools.set(tool.name, tool)

  const operate = async (
    c: Context,
    toolName: string,
    params: Record<string, unknown>,
  ): Promise<Response> => {
    const tool = tools.get(toolName)
    if (tool === undefined) {
      return errorResponse(
        c,
        404,
        'TOOL_NOT_FOUND',
        `${featureOf(toolName)} is disabled in this server's configuration (${featureOf(toolName)}.enabled in lango.yaml)`,
      )
    }
    const link = callSignal(c.req.raw.signal, shutdown)
    try {
      const outcome = await invokeTool(
        tool,
        params,
        { sessionKey: 'cli', signal: link.signal },
        { policy: 'none' },
      )
      if (!outcome.ok)
        return c.json(failureBody(outcome.error), failureStatus(outcome.error, { notFoundAs404: true }))
      if (tool.isFailure?.(outcome.result) === true) {
        // manage_cron_jobs reports failures in its result (`{error: "Job not found"}`), as seed 002 does.
        const message = String((outcome.result as { error?: unknown } | null)?.error ?? `${toolName} failed`)
        return message === 'Job not found'
          ? errorResponse(c, 404, 'TOOL_FAILED', 'no cron job with that id or name', {
              reason: 'CRON_JOB_NOT_FOUND',
            })
          : errorResponse(c, 422, 'TOOL_FAILED', message)
      }
      return c.json(outcome.result ?? null, 200)
    } finally {
      link.dispose()
    }
  }

  /** The JSON object of the request body, or the error response to send. */
  const bodyObject = async (
    c: Context,
  ): Promise<{ value: Record<string, unknown> } | { response: Response }> => {
    const body = await readJsonBody(c, app.config.server.bodyLimitBytes)
    return body.ok ? { value: body.value } : { response: body.response }
  }

  // Cron
  http.get('/api/cron/jobs', (c) => operate(c, 'cron_list', {}))
  http.get('/api/cron/jobs/:id', (c) => operate(c, 'cron_get', { id: c.req.param('id') }))
  http.post('/api/cron/jobs', async (c) => {
    const body = await bodyObject(c)
    if ('response' in body) return body.response
    const { kind, ...rest } = body.value
    if (kind === 'shell') return operate(c, 'cron_add_shell', body.value)
    if (kind !== undefined && kind !== 'ai') {
      return errorResponse(
        c,
        400,
        'TOOL_INVALID_PARAMETERS',
        'invalid parameters: kind: kind must be ai or shell',
        {
          issues: [{ path: 'kind', message: 'kind must be ai or shell' }],
        },
      )
    }
    return operate(c, 'cron_add', rest)
  })
  http.post('/api/cron/jobs/:id/pause', (c) => operate(c, 'cron_pause', { id: c.req.param('id') }))
  http.post('/api/cron/jobs/:id/resume', (c) => operate(c, 'cron_resume', { id: c.req.param('id') }))
  http.post('/api/cron/jobs/:id/trigger', (c) =>
    operate(c, 'manage_cron_jobs', { action: 'trigger', id: c.req.param('id') }),
  )
  http.delete('/api/cron/jobs/:id', (c) => operate(c, 'cron_remove', { id: c.req.param('id') }))
  http.get('/api/cron/runs', (c) =>
    operate(
      c,
      'cron_history',
      defined({ job_id: c.req.query('job') || undefined, limit: queryNumber(c.req.query('limit')) }),
    ),
  )

  // Workflows
  http.get('/api/workflows/runs', (c) =>
    operate(
      c,
      'workflow_list',
      defined({ status: c.req.query('status') || undefined, limit: queryNumber(c.req.query('limit')) }),
    ),
  )
  http.get('/api/workflows/runs/:id', (c) => operate(c, 'workflow_status', { run_id: c.req.param('id') }))
  http.post('/api/workflows/runs', async (c) => {
    const body = await bodyObject(c)
    if ('response' in body) return body.response
    const { name, ...rest } = body.value
    if (name === undefined) return operate(c, 'workflow_run', rest)
    if (rest.file_path !== undefined || rest.yaml_content !== undefined) {
      return errorResponse(c, 400, 'TOOL_INVALID_PARAMETERS', 'give one of name, file_path or yaml_content', {
        issues: [{ path: 'name', message: 'give one of name, file_path or yaml_content' }],
      })
    }
    // A saved workflow's name is what workflow_run's file_path accepts.
    return operate(c, 'workflow_run', { ...rest, file_path: name })
  })
  http.post('/api/workflows/runs/:id/cancel', (c) =>
    operate(c, 'workflow_cancel', { run_id: c.req.param('id') }),
  )
  // The servers sharing this database (issue 14): id, host, pid, version, heartbeat, alive; and
  // who holds each singleton duty's lease.
  http.get('/api/instances', async (c) => {
    const [instances, leases] = await Promise.all([app.instances.list(), app.duties.all()])
    return c.json({ instances, count: instances.length, leases })
  })

  // Saved workflows, and for those with a schedule the cron job that runs them.
  http.get('/api/workflows/saved', async (c) => {
    const [saved, schedules] = await Promise.all([app.directory.list(), savedWorkflowSchedules(app.cron)])
    return c.json({ saved: [...saved], schedules })
  })
  http.put('/api/workflows/saved/:name', async (c) => {
    const body = await bodyObject(c)
    if ('response' in body) return body.response
    return operate(c, 'workflow_save', { ...body.value, name: c.req.param('name') })
  })

  // Background tasks
  http.get('/api/background/tasks', (c) =>
    operate(c, 'bg_list', defined({ status: c.req.query('status') || undefined })),
  )
  http.get('/api/background/tasks/:id', (c) => operate(c, 'bg_status', { task_id: c.req.param('id') }))
  http.post('/api/background/tasks', async (c) => {
    const body = await bodyObject(c)
    if ('response' in body) return body.response
    return operate(c, 'bg_submit', body.value)
  })
  http.post('/api/background/tasks/:id/cancel', (c) =>
    operate(c, 'bg_cancel', { task_id: c.req.param('id') }),
  )

  // Background processes
  http.get('/api/processes', (c) => {
    const processes = app.processes.list().map((process) => ({
      id: process.id,
      pid: process.pid,
      command: process.command,
      status: process.status,
      exit_code: process.exitCode,
      started_at: new Date(process.startedAt).toISOString(),
      ended_at: process.endedAt === null ? null : new Date(process.endedAt).toISOString(),
      output_bytes: process.outputBytes,
      output_tail: outputTail(app, process.id, process.outputBytes),
    }))
    return c.json({ processes, count: processes.length })
  })
  http.get('/api/processes/:id', (c) =>
    operate(c, 'exec_status', defined({ id: c.req.param('id'), offset: queryNumber(c.req.query('offset')) })),
  )
  http.post('/api/processes/:id/stop', (c) => operate(c, 'exec_stop', { id: c.req.param('id') }))

  // Approvals of every process on the database (a `lango mcp` on the same home included)
  http.get('/api/approvals', async (c) => {
    const status = c.req.query('status') || undefined
    if (status !== undefined && !APPROVAL_STATUSES.includes(status as ApprovalStatus)) {
      const message = `status must be one of ${APPROVAL_STATUSES.join(', ')}`
      return errorResponse(c, 400, 'INVALID_REQUEST', message, { issues: [{ path: 'status', message }] })
    }
    const approvals = await app.approvals.list(
      status === undefined ? {} : { status: status as ApprovalStatus },
      { signal: c.req.raw.signal },
    )
    return c.json({ approvals, count: approvals.length })
  })
  http.get('/api/approvals/:id', (c) => approvalResponse(c, () => app.approvals.get(c.req.param('id'))))
  http.post('/api/approvals/:id', async (c) => {
    const body = await readJsonBody(c, app.config.server.bodyLimitBytes)
    if (!body.ok) return body.response
    const parsed = v.safeParse(decisionSchema, body.value)
    if (!parsed.success) {
      const issues = parsed.issues.map((issue) => ({
        path: issue.path?.map((item) => String(item.key)).join('.') || '(body)',
        message: issue.message,
      }))
      return errorResponse(
        c,
        400,
        'INVALID_REQUEST',
        `invalid approval answer: ${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')} (send {"decision": "approve"} or {"decision": "deny"})`,
        { issues },
      )
    }
    return approvalResponse(c, () =>
      app.approvals.answer(c.req.param('id'), parsed.output.decision === 'approve'),
    )
  })
}

/** How much of a background process's output `GET /api/processes` shows: its last 2 KiB. */
const OUTPUT_TAIL_BYTES = 2048

/** The end of a process's buffered output (a character cut by the start of the window is left out). */
function outputTail(app: App, id: string, outputBytes: number): string {
  const process = app.processes.get(id)
  if (process === undefined) return ''
  return process.read(Math.max(0, outputBytes - OUTPUT_TAIL_BYTES)).output.replace(/^\uFFFD+/, '')
}

/** The approval `read` returns, or 404 `SERVER_APPROVAL_NOT_FOUND`. */
async function approvalResponse(c: Context, read: () => Promise<unknown>): Promise<Response> {
  try {
    return c.json(await read(), 200)
  } catch (error) {
    if (error instanceof ServerError && error.code === 'SERVER_APPROVAL_NOT_FOUND') {
      return errorResponse(
        c,
        404,
        error.code,
        error.message,
        error.data === undefined ? {} : { data: error.data },
      )
    }
    throw error
  }
}
