import { CronError } from '@lango/cron'
import {
  type AnyTool,
  assertDeliverable,
  cronDeliveryView,
  cronDeliveryViewSchema,
  cronJobView,
  cronJobViewSchema,
  cronPreviewView,
  cronPreviewViewSchema,
  cronRunView,
  cronRunViewSchema,
  defineTool,
} from '@lango/tools'
import { Hono } from 'hono'
import * as v from 'valibot'
import type { App } from '../../app/app.js'
import { undeliverableBecause } from '../../channels/target.js'
import { createOperator } from '../operate.js'
import { defined, errorResponse, knownQuery, queryNumber } from '../responses.js'

/** A view of a cron fire time, as the cron tools show them. */
function nextRunView(run: { readonly utc: string; readonly local: string; readonly timezone: string }) {
  return { utc: run.utc, local: run.local, timezone: run.timezone }
}

const nextRunOutput = v.strictObject({ utc: v.string(), local: v.string(), timezone: v.string() })

const previewCount = v.optional(
  v.pipe(
    v.number('count must be a number'),
    v.integer('count must be a whole number'),
    v.minValue(1, 'count must be at least 1'),
    v.maxValue(50, 'count must be at most 50'),
  ),
)

/** A shell job's command, as `cron_add_shell` and `cron_update` take it. */
const commandField = v.pipe(
  v.string('command must be a string'),
  v.minLength(1, 'command must not be empty'),
  v.maxLength(8_000, 'command must be at most 8000 characters'),
)

const deliverToField = v.optional(
  v.pipe(
    v.array(v.pipe(v.string(), v.minLength(1), v.maxLength(256)), 'deliver_to must be a list of targets'),
    v.maxLength(10),
  ),
)

/** cron_add's rule: a duration text, or a number of seconds. */
const timeoutField = v.optional(
  v.union(
    [v.pipe(v.string(), v.maxLength(32)), v.pipe(v.number(), v.minValue(1))],
    'timeout must be a duration such as 90s or a number of seconds',
  ),
)

const overlapField = v.optional(
  v.picklist(['skip', 'queue_one', 'allow'], 'overlap must be one of skip, queue_one, allow'),
)

const notifyField = v.optional(
  v.picklist(
    ['always', 'failure', 'state_changes', 'never'],
    'notify must be one of always, failure, state_changes, never',
  ),
)

/** What a create or update answers: its dry-run preview, or the stored job with its next runs. */
function jobSaveOutput<const Status extends v.GenericSchema<unknown, 'created' | 'updated'>>(status: Status) {
  return v.union([
    v.strictObject({
      status: v.literal('preview'),
      dry_run: v.literal(true),
      preview: cronPreviewViewSchema,
    }),
    v.strictObject({
      status,
      job: cronJobViewSchema,
      next_runs: v.array(nextRunOutput),
      message: v.string(),
      preview: v.optional(cronPreviewViewSchema),
    }),
  ])
}

/**
 * The operator routes' own operations that no agent tool offers: reading one cron job with its
 * next fire times, and creating a shell cron job (cron_add is for agent jobs only). They are tools
 * that are never published, so they get the same validation and error results as the rest.
 */
function cronOperatorTools(app: App): AnyTool[] {
  /** A job as cron_list shows it (one shape for every route), read alone. */
  const jobView = async (id: string) => cronJobView(await app.cron.get(id))
  // As cron_add: a target nothing can be delivered to is refused before anything is stored.
  const deliverable = (targets: readonly string[] | undefined): undefined => {
    assertDeliverable(targets ?? [], (target) => undeliverableBecause(target, app.channels), 'deliver_to')
    return undefined
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
      output: v.strictObject({ job: cronJobViewSchema, next_runs: v.array(nextRunOutput) }),
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
        schedule_type: v.picklist(
          ['cron', 'every', 'at', 'webhook'],
          'schedule_type must be one of cron, every, at, webhook',
        ),
        schedule: v.pipe(
          v.string('schedule must be a string'),
          v.minLength(1, 'schedule must not be empty'),
          v.maxLength(200),
        ),
        command: commandField,
        cwd: v.optional(v.pipe(v.string('cwd must be a string'), v.minLength(1), v.maxLength(4096))),
        timezone: v.optional(v.pipe(v.string('timezone must be a string'), v.minLength(1), v.maxLength(64))),
        deliver_to: deliverToField,
        timeout: timeoutField,
        overlap: overlapField,
        // Checked in full by the cron service (http/https, no credentials, at most 2048 characters).
        ping_url: v.optional(
          v.pipe(
            v.string('ping_url must be a string'),
            v.maxLength(2048, 'ping_url must be at most 2048 characters'),
          ),
        ),
        notify: notifyField,
        enabled: v.optional(v.boolean('enabled must be true or false')),
        dry_run: v.optional(v.boolean('dry_run must be true or false')),
        preview_count: previewCount,
      }),
      output: jobSaveOutput(v.picklist(['created', 'updated'])),
      preflight: async (params) => deliverable(params.deliver_to),
      async handler(params, context) {
        const input = {
          name: params.name,
          kind: 'shell' as const,
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
          ...(params.ping_url === undefined ? {} : { pingUrl: params.ping_url }),
          ...(params.notify === undefined ? {} : { notify: params.notify }),
          ...(params.enabled === undefined ? {} : { enabled: params.enabled }),
        }
        const signal = context.signal === undefined ? {} : { signal: context.signal }
        if (params.dry_run === true) {
          const preview = await app.cron.preview(input, {
            ...signal,
            ...(params.preview_count === undefined ? {} : { count: params.preview_count }),
          })
          return { status: 'preview' as const, dry_run: true as const, preview: cronPreviewView(preview) }
        }
        const result = await app.cron.add(input, signal)
        const { job } = result
        const next = result.nextRuns[0]
        return {
          status: result.status,
          job: await jobView(job.id),
          next_runs: result.nextRuns.map(nextRunView),
          message: `Cron job "${job.name}" ${result.status} (${job.scheduleType} ${job.schedule}, ${job.timezone}).${
            next === undefined ? '' : ` Next run: ${next.local}.`
          }`,
          ...(result.preview === undefined ? {} : { preview: cronPreviewView(result.preview) }),
        }
      },
    }),
    defineTool({
      name: 'cron_update',
      title: 'Update cron job',
      description:
        'Change fields of a cron job (by id or name); fields left out keep their value. The kind cannot change.',
      safety: 'dangerous',
      parameters: v.strictObject({
        id: idOrName,
        name: v.optional(
          v.pipe(
            v.string('name must be a string'),
            v.minLength(1, 'name must not be empty'),
            v.maxLength(64),
          ),
        ),
        schedule_type: v.optional(
          v.picklist(
            ['cron', 'every', 'at', 'webhook'],
            'schedule_type must be one of cron, every, at, webhook',
          ),
        ),
        schedule: v.optional(
          v.pipe(
            v.string('schedule must be a string'),
            v.minLength(1, 'schedule must not be empty'),
            v.maxLength(200),
          ),
        ),
        timezone: v.optional(v.pipe(v.string('timezone must be a string'), v.minLength(1), v.maxLength(64))),
        prompt: v.optional(
          v.pipe(
            v.string('prompt must be a string'),
            v.minLength(1, 'prompt must not be empty'),
            v.maxLength(16_000, 'prompt must be at most 16000 characters'),
          ),
        ),
        command: v.optional(commandField),
        deliver_to: deliverToField,
        timeout: timeoutField,
        overlap: overlapField,
        notify: notifyField,
        // Checked in full by the cron service; '' removes it.
        ping_url: v.optional(
          v.pipe(
            v.string('ping_url must be a string'),
            v.maxLength(2048, 'ping_url must be at most 2048 characters'),
          ),
        ),
        enabled: v.optional(v.boolean('enabled must be true or false')),
        dry_run: v.optional(v.boolean('dry_run must be true or false')),
        preview_count: previewCount,
      }),
      output: jobSaveOutput(v.literal('updated')),
      preflight: async (params) => deliverable(params.deliver_to),
      async handler(params, context) {
        const signal = context.signal === undefined ? {} : { signal: context.signal }
        const current = await app.cron.get(params.id, signal)
        if (params.prompt !== undefined && current.kind !== 'ai')
          throw new CronError('CRON_INVALID_INPUT', 'a shell job has a command, not a prompt', {
            data: { field: 'prompt' },
          })
        if (params.command !== undefined && current.kind !== 'shell')
          throw new CronError('CRON_INVALID_INPUT', 'an ai job has a prompt, not a command', {
            data: { field: 'command' },
          })
        const changes = {
          ...(params.name === undefined ? {} : { name: params.name }),
          ...(params.schedule_type === undefined ? {} : { scheduleType: params.schedule_type }),
          ...(params.schedule === undefined ? {} : { schedule: params.schedule }),
          ...(params.timezone === undefined ? {} : { timezone: params.timezone }),
          ...(params.prompt === undefined ? {} : { prompt: params.prompt }),
          ...(params.command === undefined ? {} : { command: params.command }),
          ...(params.deliver_to === undefined ? {} : { deliverTo: params.deliver_to }),
          // cron_add's rule: a number is seconds.
          ...(params.timeout === undefined
            ? {}
            : {
                timeout:
                  typeof params.timeout === 'number' ? Math.round(params.timeout * 1000) : params.timeout,
              }),
          ...(params.overlap === undefined ? {} : { overlap: params.overlap }),
          ...(params.notify === undefined ? {} : { notify: params.notify }),
          ...(params.ping_url === undefined ? {} : { pingUrl: params.ping_url }),
          ...(params.enabled === undefined ? {} : { enabled: params.enabled }),
        }
        if (params.dry_run === true) {
          const preview = await app.cron.previewUpdate(current.id, changes, {
            ...signal,
            ...(params.preview_count === undefined ? {} : { count: params.preview_count }),
          })
          return { status: 'preview' as const, dry_run: true as const, preview: cronPreviewView(preview) }
        }
        const result = await app.cron.update(current.id, changes, signal)
        const { job } = result
        const next = result.nextRuns[0]
        return {
          status: 'updated' as const,
          job: await jobView(job.id),
          next_runs: result.nextRuns.map(nextRunView),
          message: `Cron job "${job.name}" updated (${job.scheduleType} ${job.schedule}, ${job.timezone}).${
            next === undefined ? '' : ` Next run: ${next.local}.`
          }`,
          ...(result.preview === undefined ? {} : { preview: cronPreviewView(result.preview) }),
        }
      },
    }),
    defineTool({
      name: 'cron_preview',
      title: 'Preview a cron schedule',
      description:
        'What a schedule (or a whole job definition) would do, storing nothing: the next fire times, the schedule in words, DST notes, clashes with other jobs, the delivery route and, for ai jobs, a prompt token estimate.',
      safety: 'safe',
      parameters: v.strictObject({
        schedule_type: v.optional(
          v.picklist(
            ['cron', 'every', 'at', 'webhook'],
            'schedule_type must be one of cron, every, at, webhook',
          ),
        ),
        schedule: v.pipe(
          v.string('schedule must be a string'),
          v.minLength(1, 'schedule must not be empty'),
          v.maxLength(200),
        ),
        timezone: v.optional(v.pipe(v.string('timezone must be a string'), v.minLength(1), v.maxLength(64))),
        count: previewCount,
        name: v.optional(v.pipe(v.string('name must be a string'), v.minLength(1), v.maxLength(64))),
        kind: v.optional(v.picklist(['ai', 'shell'], 'kind must be ai or shell')),
        prompt: v.optional(v.pipe(v.string('prompt must be a string'), v.maxLength(16_000))),
        command: v.optional(v.pipe(v.string('command must be a string'), v.maxLength(8_000))),
        deliver_to: deliverToField,
        notify: notifyField,
      }),
      output: v.strictObject({ preview: cronPreviewViewSchema }),
      async handler(params, context) {
        const definition =
          params.name !== undefined || params.prompt !== undefined || params.command !== undefined
        const preview = await app.cron.preview(
          {
            scheduleType: params.schedule_type ?? 'cron',
            schedule: params.schedule,
            ...(params.timezone === undefined ? {} : { timezone: params.timezone }),
            ...(params.name === undefined ? {} : { name: params.name }),
            ...(params.kind === undefined ? {} : { kind: params.kind }),
            ...(params.prompt === undefined ? {} : { prompt: params.prompt }),
            ...(params.command === undefined ? {} : { command: params.command }),
            ...(params.notify === undefined ? {} : { notify: params.notify }),
            // As POST /api/cron/jobs would store it: the given targets, else the configured default.
            ...(definition ? { deliverTo: params.deliver_to ?? app.config.channels.defaultDeliverTo } : {}),
          },
          {
            ...(params.count === undefined ? {} : { count: params.count }),
            ...(context.signal === undefined ? {} : { signal: context.signal }),
          },
        )
        return { preview: cronPreviewView(preview) }
      },
    }),
    defineTool({
      name: 'cron_run_get',
      title: 'Get cron run',
      description: 'One cron run (by run id) as cron_history shows it, with its delivery to every target.',
      safety: 'safe',
      parameters: v.strictObject({ id: idOrName }),
      output: v.strictObject({
        ...cronRunViewSchema.entries,
        delivery_error: v.nullable(v.string()),
        deliveries: v.array(
          v.strictObject({
            id: v.string(),
            ...cronDeliveryViewSchema.entries,
            created_at: v.nullable(v.string()),
          }),
        ),
      }),
      async handler(params, context) {
        const options = context.signal === undefined ? {} : { signal: context.signal }
        const run = await app.cron.getRun(params.id, options)
        const deliveries = await app.cron.deliveries([run.id], options)
        // cron_history's view of the run, with the run's delivery error and each row's id and creation.
        return {
          ...cronRunView(run),
          delivery_error: run.deliveryError,
          deliveries: deliveries.map((delivery) => ({
            id: delivery.id,
            ...cronDeliveryView(delivery),
            created_at: isoTime(delivery.createdAt),
          })),
        }
      },
    }),
  ]
}

/** The query parameters of `GET /api/cron/jobs` (cron_list's parameters). */
const LIST_QUERY = [
  'limit',
  'cursor',
  'q',
  'status',
  'kind',
  'zone',
  'paused',
  'failing',
  'delivery_failed',
  'sort',
]

/** A yes/no query parameter: `1`/`true` and `0`/`false`; anything else goes on for the tool to refuse. */
function queryFlag(value: string | undefined): boolean | string | undefined {
  if (value === undefined || value === '') return undefined
  if (value === '1' || value === 'true') return true
  if (value === '0' || value === 'false') return false
  return value
}

/** Epoch milliseconds as ISO 8601 (UTC), or null. */
function isoTime(at: number | null): string | null {
  return at === null ? null : new Date(at).toISOString()
}

/**
 * Cron jobs and runs, mounted at `/api/cron`: `GET|POST /api/cron/jobs`, `GET|PATCH|DELETE
 * /api/cron/jobs/:id`, `POST /api/cron/jobs/:id/{pause,resume,trigger}`, `GET /api/cron/runs`,
 * `GET /api/cron/runs/:id` (one run with its per-target deliveries), `POST /api/cron/preview` (what a
 * schedule or job would do, storing nothing; `dry_run: true` on `POST /api/cron/jobs` does the same
 * for a full job)
 * (operator calls: src/http/operate.ts).
 */
export function cronRoutes(app: App, shutdown: AbortSignal | undefined): Hono {
  const cronList = app.tools.findLast((tool) => tool.name === 'cron_list')
  const { operate, bodyObject } = createOperator(
    app,
    shutdown,
    cronList === undefined ? [] : cronOperatorTools(app),
  )
  const routes = new Hono()

  routes.get('/jobs', knownQuery(LIST_QUERY, 'TOOL_INVALID_PARAMETERS'), (c) => {
    const query = c.req.query()
    return operate(
      c,
      'cron_list',
      defined({
        limit: queryNumber(query.limit),
        cursor: query.cursor || undefined,
        q: query.q || undefined,
        status: query.status || undefined,
        kind: query.kind || undefined,
        zone: query.zone || undefined,
        paused: queryFlag(query.paused),
        failing: queryFlag(query.failing),
        delivery_failed: queryFlag(query.delivery_failed),
        sort: query.sort || undefined,
      }),
    )
  })
  routes.get('/jobs/:id', (c) => operate(c, 'cron_get', { id: c.req.param('id') }))
  routes.post('/jobs', async (c) => {
    const body = await bodyObject(c)
    if ('response' in body) return body.response
    const { kind, ...rest } = body.value
    if (kind === 'shell') return operate(c, 'cron_add_shell', body.value)
    if (kind !== undefined && kind !== 'ai') {
      return errorResponse(
        c,
        'TOOL_INVALID_PARAMETERS',
        'invalid parameters: kind: kind must be ai or shell',
        {
          issues: [{ path: 'kind', message: 'kind must be ai or shell' }],
        },
      )
    }
    return operate(c, 'cron_add', rest)
  })
  routes.post('/preview', async (c) => {
    const body = await bodyObject(c)
    if ('response' in body) return body.response
    return operate(c, 'cron_preview', body.value)
  })
  routes.patch('/jobs/:id', async (c) => {
    const body = await bodyObject(c)
    if ('response' in body) return body.response
    return operate(c, 'cron_update', { ...body.value, id: c.req.param('id') })
  })
  routes.post('/jobs/:id/pause', (c) => operate(c, 'cron_pause', { id: c.req.param('id') }))
  routes.post('/jobs/:id/resume', (c) => operate(c, 'cron_resume', { id: c.req.param('id') }))
  routes.post('/jobs/:id/trigger', (c) =>
    operate(c, 'manage_cron_jobs', { action: 'trigger', id: c.req.param('id') }),
  )
  routes.delete('/jobs/:id', (c) => operate(c, 'cron_remove', { id: c.req.param('id') }))
  routes.get('/runs/:id', (c) => operate(c, 'cron_run_get', { id: c.req.param('id') }))
  routes.get('/runs', knownQuery(['job', 'limit', 'status', 'cursor'], 'TOOL_INVALID_PARAMETERS'), (c) =>
    operate(
      c,
      'cron_history',
      defined({
        job_id: c.req.query('job') || undefined,
        limit: queryNumber(c.req.query('limit')),
        status: c.req.query('status') || undefined,
        cursor: c.req.query('cursor') || undefined,
      }),
    ),
  )

  return routes
}
