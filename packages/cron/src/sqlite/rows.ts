import * as v from 'valibot'
import { CronError } from '../errors.js'
import type { CronDelivery, CronJob, CronRun } from '../model.js'
import type { CronJobPatch, JobSchedule } from '../ports.js'
import type { CronJobsTable } from './schema.js'

/** PostgreSQL returns bigint as string; SQLite as number. */
const integer = v.pipe(
  v.union([v.number(), v.string(), v.bigint()]),
  v.transform((value) => Number(value)),
  v.number(),
  v.integer(),
)
const nullableInteger = v.nullable(integer)
const nullableString = v.nullable(v.string())

const RUN_STATUS = v.picklist([
  'running',
  'completed',
  'failed',
  'timed_out',
  'cancelled',
  'skipped',
  'interrupted',
])

const deliverToSchema = v.pipe(
  v.string(),
  v.parseJson(),
  v.array(v.pipe(v.string(), v.maxLength(200))),
  v.maxLength(50),
)

const jobRowSchema = v.object({
  id: v.string(),
  name: v.string(),
  kind: v.picklist(['ai', 'shell']),
  schedule_type: v.picklist(['cron', 'every', 'at', 'webhook']),
  schedule: v.string(),
  timezone: v.string(),
  prompt: nullableString,
  command: nullableString,
  cwd: nullableString,
  model: nullableString,
  session_mode: v.picklist(['isolated', 'main']),
  deliver_to: deliverToSchema,
  enabled: integer,
  timeout_ms: integer,
  overlap: v.picklist(['skip', 'queue_one', 'allow']),
  catchup: v.picklist(['latest', 'none']),
  created_at: integer,
  updated_at: integer,
  last_run_at: nullableInteger,
  next_run_at: nullableInteger,
  last_status: v.nullable(RUN_STATUS),
  consecutive_failures: integer,
  pause_reason: nullableString,
  created_by: nullableString,
  // Migration 0005; a row without the column reads as null (no pings).
  ping_url: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(4096))), null),
  notify: v.optional(v.picklist(['always', 'failure', 'state_changes', 'never']), 'always'),
  // Migration 0006; a row without the column reads as null (no gate).
  when_command: v.optional(nullableString, null),
  // Migration 0008; a row without the columns reads as null (no budget of its own).
  max_tokens_per_day: v.optional(nullableInteger, null),
  max_cost_per_day_nano_usd: v.optional(nullableInteger, null),
})

const SCHEDULE_TYPES: ReadonlySet<string> = new Set(jobRowSchema.entries.schedule_type.options)

const runRowSchema = v.object({
  id: v.string(),
  job_id: v.string(),
  job_name: v.string(),
  trigger: v.picklist(['schedule', 'manual', 'catchup', 'webhook']),
  status: RUN_STATUS,
  scheduled_for: integer,
  started_at: nullableInteger,
  completed_at: nullableInteger,
  duration_ms: nullableInteger,
  result: nullableString,
  error: nullableString,
  skip_reason: nullableString,
  delivery_status: v.picklist(['delivered', 'failed', 'pending', 'none']),
  delivery_error: nullableString,
  owner: nullableString,
  input_tokens: nullableInteger,
  output_tokens: nullableInteger,
})

function parseRow<TSchema extends v.GenericSchema>(
  schema: TSchema,
  row: unknown,
  table: string,
): v.InferOutput<TSchema> {
  const result = v.safeParse(schema, row)
  if (result.success) return result.output
  const issue = result.issues[0]
  const path = issue?.path?.map((item) => String(item.key)).join('.') ?? ''
  throw new CronError(
    'CRON_STORE_CORRUPT',
    `A row of ${table} failed validation at "${path}": ${issue?.message ?? 'invalid'}.`,
    {
      data: { table, id: (row as { id?: unknown } | undefined)?.id, path },
    },
  )
}

const deliveryRowSchema = v.object({
  id: v.string(),
  run_id: v.string(),
  job_id: v.string(),
  target: v.string(),
  status: v.picklist(['pending', 'sending', 'delivered', 'failed']),
  attempts: integer,
  next_attempt_at: nullableInteger,
  last_error: nullableString,
  text: v.string(),
  owner: nullableString,
  created_at: integer,
  updated_at: integer,
  delivered_at: nullableInteger,
})

/** Validates and maps a `cron_deliveries` row. */
export function deliveryFromRow(row: unknown): CronDelivery {
  const parsed = parseRow(deliveryRowSchema, row, 'cron_deliveries')
  return {
    id: parsed.id,
    runId: parsed.run_id,
    jobId: parsed.job_id,
    target: parsed.target,
    status: parsed.status,
    attempts: parsed.attempts,
    nextAttemptAt: parsed.next_attempt_at,
    lastError: parsed.last_error,
    text: parsed.text,
    owner: parsed.owner,
    createdAt: parsed.created_at,
    updatedAt: parsed.updated_at,
    deliveredAt: parsed.delivered_at,
  }
}

/** Validates and maps a `cron_jobs` row. */
export function jobFromRow(row: unknown): CronJob {
  const parsed = parseRow(jobRowSchema, row, 'cron_jobs')
  return {
    id: parsed.id,
    name: parsed.name,
    kind: parsed.kind,
    scheduleType: parsed.schedule_type,
    schedule: parsed.schedule,
    timezone: parsed.timezone,
    prompt: parsed.prompt,
    command: parsed.command,
    cwd: parsed.cwd,
    model: parsed.model,
    sessionMode: parsed.session_mode,
    deliverTo: parsed.deliver_to,
    enabled: parsed.enabled !== 0,
    timeoutMs: parsed.timeout_ms,
    overlap: parsed.overlap,
    catchup: parsed.catchup,
    createdAt: parsed.created_at,
    updatedAt: parsed.updated_at,
    lastRunAt: parsed.last_run_at,
    nextRunAt: parsed.next_run_at,
    lastStatus: parsed.last_status,
    consecutiveFailures: parsed.consecutive_failures,
    pauseReason: parsed.pause_reason,
    createdBy: parsed.created_by,
    pingUrl: parsed.ping_url,
    notify: parsed.notify,
    when: parsed.when_command,
    maxTokensPerDay: parsed.max_tokens_per_day,
    maxCostPerDay: parsed.max_cost_per_day_nano_usd === null ? null : parsed.max_cost_per_day_nano_usd / 1e9,
  }
}

/**
 * Validates and maps the schedule columns of a `cron_jobs` row (see {@link CronStore.enabledSchedules}),
 * with the errors {@link jobFromRow} gives. Checked by hand rather than with valibot: a create or
 * update reads this for every enabled job, and valibot's parse of these seven columns allocated about
 * 1.3 KB per row, most of a create's garbage at 500 jobs (ADR 0014, 2026-11-28).
 */
export function scheduleFromRow(row: unknown): JobSchedule {
  const columns = (typeof row === 'object' && row !== null ? row : {}) as Record<string, unknown>
  const scheduleType = textColumn(columns, 'schedule_type')
  if (!SCHEDULE_TYPES.has(scheduleType))
    corruptColumn(columns, 'schedule_type', [...SCHEDULE_TYPES].join(', '))
  const enabled = integerColumn(columns, 'enabled')
  return {
    id: textColumn(columns, 'id'),
    name: textColumn(columns, 'name'),
    scheduleType: scheduleType as JobSchedule['scheduleType'],
    schedule: textColumn(columns, 'schedule'),
    timezone: textColumn(columns, 'timezone'),
    enabled: enabled === null ? corruptColumn(columns, 'enabled', 'an integer') : enabled !== 0,
    nextRunAt: integerColumn(columns, 'next_run_at'),
  }
}

function corruptColumn(columns: Record<string, unknown>, column: string, expected: string): never {
  const value = columns[column]
  const got =
    typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : value === null ? 'null' : typeof value
  throw new CronError(
    'CRON_STORE_CORRUPT',
    `A row of cron_jobs failed validation at "${column}": expected ${expected}, got ${got}.`,
    { data: { table: 'cron_jobs', id: columns.id, path: column } },
  )
}

function textColumn(columns: Record<string, unknown>, column: string): string {
  const value = columns[column]
  return typeof value === 'string' ? value : corruptColumn(columns, column, 'a string')
}

/** A whole number or null (PostgreSQL returns bigint as text). */
function integerColumn(columns: Record<string, unknown>, column: string): number | null {
  const value = columns[column]
  if (value === null) return null
  const number =
    typeof value === 'number' || typeof value === 'string' || typeof value === 'bigint'
      ? Number(value)
      : Number.NaN
  return Number.isInteger(number) ? number : corruptColumn(columns, column, 'an integer')
}

/** Validates and maps a `cron_runs` row. */
export function runFromRow(row: unknown): CronRun {
  const parsed = parseRow(runRowSchema, row, 'cron_runs')
  return {
    id: parsed.id,
    jobId: parsed.job_id,
    jobName: parsed.job_name,
    trigger: parsed.trigger,
    status: parsed.status,
    scheduledFor: parsed.scheduled_for,
    startedAt: parsed.started_at,
    completedAt: parsed.completed_at,
    durationMs: parsed.duration_ms,
    result: parsed.result,
    error: parsed.error,
    skipReason: parsed.skip_reason,
    deliveryStatus: parsed.delivery_status,
    deliveryError: parsed.delivery_error,
    inputTokens: parsed.input_tokens,
    outputTokens: parsed.output_tokens,
    owner: parsed.owner,
  }
}

const JOB_COLUMNS: Readonly<Record<keyof CronJobPatch, keyof CronJobsTable>> = {
  name: 'name',
  kind: 'kind',
  scheduleType: 'schedule_type',
  schedule: 'schedule',
  timezone: 'timezone',
  prompt: 'prompt',
  command: 'command',
  cwd: 'cwd',
  model: 'model',
  sessionMode: 'session_mode',
  deliverTo: 'deliver_to',
  enabled: 'enabled',
  timeoutMs: 'timeout_ms',
  overlap: 'overlap',
  catchup: 'catchup',
  updatedAt: 'updated_at',
  lastRunAt: 'last_run_at',
  nextRunAt: 'next_run_at',
  lastStatus: 'last_status',
  consecutiveFailures: 'consecutive_failures',
  pauseReason: 'pause_reason',
  createdBy: 'created_by',
  pingUrl: 'ping_url',
  notify: 'notify',
  when: 'when_command',
  maxTokensPerDay: 'max_tokens_per_day',
  maxCostPerDay: 'max_cost_per_day_nano_usd',
}

/** Maps a patch to column values (a fixed allowlist of columns; SECURITY.md SQL-2). */
export function patchToRow(patch: CronJobPatch): Partial<CronJobsTable> {
  const row: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue
    const column = JOB_COLUMNS[key as keyof CronJobPatch]
    if (column === undefined) continue
    if (key === 'deliverTo') row[column] = JSON.stringify(value)
    else if (key === 'enabled') row[column] = value ? 1 : 0
    // Dollars are stored as whole nano-dollars: every number column is an integer.
    else if (key === 'maxCostPerDay')
      row[column] = value === null ? null : Math.round((value as number) * 1e9)
    else row[column] = value
  }
  return row as Partial<CronJobsTable>
}

/** Maps a job to a full row. */
export function jobToRow(job: CronJob): CronJobsTable {
  return { id: job.id, created_at: job.createdAt, ...patchToRow(job) } as CronJobsTable
}
