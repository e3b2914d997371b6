import { resolve } from 'node:path'
import { Option } from 'commander'
import type { Register } from '../command.js'
import { CliError, EXIT } from '../errors.js'
import { formatMs, formatTime, type Output, oneLine } from '../output.js'
import { durationOption, integerOption, readDurationOption, waitFor } from '../wait.js'

/** A job as `GET /api/cron/jobs` lists it (cron_list's view). */
interface JobView {
  readonly id: string
  readonly name: string
  readonly kind: string
  readonly schedule_type: string
  readonly schedule: string
  readonly timezone: string
  readonly enabled: boolean
  readonly next_run_at: string | null
  readonly last_run_at: string | null
  readonly last_status: string | null
  readonly deliver_to: readonly string[]
  readonly prompt: string | null
  readonly command: string | null
  readonly cwd?: string | null
  readonly overlap?: string
  readonly notify?: string
  readonly timeout_ms?: number
  readonly pause_reason: string | null
  readonly created_by?: string | null
  readonly ping_url?: string | null
  readonly when?: string | null
}

interface NextRun {
  readonly utc: string
  readonly local: string
  readonly timezone: string
}

/** A preview as `POST /api/cron/preview` answers it (the tools' `cronPreviewView`). */
interface PreviewView {
  readonly schedule_type: string
  readonly schedule: string
  readonly timezone: string
  readonly description: string
  readonly fires: readonly { readonly local: string; readonly utc: string }[]
  readonly dst_notes: readonly { readonly message: string }[]
  readonly clashes: readonly {
    readonly at: { readonly local: string }
    readonly job_name: string
    readonly other_at: { readonly local: string }
  }[]
  readonly clash_count: number
}

/** A ledger row as `GET /api/cron/runs` lists it (cron_history's view). */
interface RunView {
  readonly id: string
  readonly job_id: string
  readonly job_name: string
  readonly trigger: string
  readonly status: string
  readonly scheduled_for: string | null
  readonly started_at: string | null
  readonly completed_at: string | null
  readonly duration_ms: number | null
  readonly result: string | null
  readonly error: string | null
  readonly skip_reason: string | null
  readonly delivery_status: string
  /** Tokens the agent reported for an `ai` run; null for shell runs and runs without a count. */
  readonly input_tokens?: number | null
  readonly output_tokens?: number | null
}

/**
 * The trigger answer: manage_cron_jobs' `{ ok, message, run_id }` ("Job triggered" with the started
 * run's id, or "Job queued …"), or a `TriggerResult` (`status`, `run_id`, `reason`).
 */
interface TriggerView {
  readonly ok?: boolean
  readonly status?: string
  readonly run_id?: string
  readonly reason?: string
  readonly message?: string
}

/** Cron run statuses that are final and not a failure. */
const RUN_OK = new Set(['completed'])

const path = (id: string) => `/api/cron/jobs/${encodeURIComponent(id)}`

/**
 * `lango cron list|get|add|preview|pause|resume|trigger|remove|history`, over the server's API. `preview`
 * needs the server too: clashes are found against its jobs, and it knows the default zone.
 */
export const registerCron: Register = (program, action) => {
  const cron = program
    .command('cron')
    .description('cron jobs of the running server: shell commands or agent prompts on a schedule')

  cron
    .command('list')
    .description('every job with its schedule, next run and last status')
    .action(
      action(async (context) => {
        const client = await context.client()
        const data = await client.get<{ jobs: JobView[]; count: number }>('/api/cron/jobs')
        return { data, render: (out) => renderJobs(out, data.jobs) }
      }),
    )

  cron
    .command('get')
    .description('one job (by id or name) and its next run times')
    .argument('<id>', 'job id or name')
    .action(
      action(async (context, [id = '']) => {
        const client = await context.client()
        const data = await client.get<{ job: JobView; next_runs: NextRun[] }>(path(id))
        return { data, render: (out) => renderJob(out, data.job, data.next_runs) }
      }),
    )

  cron
    .command('add')
    .description(
      'add a job, or update the job with that name: a shell job (--command) or an agent job (--prompt)',
    )
    .argument('<name>', 'unique job name: letters, digits, - _ .')
    .addOption(
      new Option('--schedule <cron>', 'a 5-field cron expression, e.g. "*/5 * * * *"').conflicts([
        'every',
        'at',
        'webhook',
      ]),
    )
    .addOption(
      new Option('--every <duration>', 'a fixed interval with a unit, e.g. 5m, 2h or 1h30m').conflicts([
        'at',
        'webhook',
      ]),
    )
    .addOption(
      new Option('--at <iso-time>', 'once, at an ISO 8601 date-time, e.g. 2026-03-01T09:00').conflicts(
        'webhook',
      ),
    )
    .option(
      '--webhook <hook>',
      'never by the clock: each POST /hooks/<hook> signed with the vault secret webhook.<hook> starts a run',
    )
    .addOption(new Option('--command <command>', 'shell command to run (a shell job)').conflicts('prompt'))
    .option('--prompt <text>', 'instruction for the agent (an agent job)')
    .option('--cwd <dir>', 'working directory of a shell job')
    .option('--timezone <zone>', "IANA zone the schedule is read in (default: the server's)")
    .option('--deliver-to <targets>', 'comma-separated delivery targets, e.g. telegram:123,log')
    .option('--timeout <duration>', 'how long one run may take, e.g. 90s or 10m (a bare number is seconds)')
    .option(
      '--ping-url <url>',
      'dead-man monitor (healthchecks.io style): each run requests <url>/start, then <url> or <url>/fail',
    )
    .option(
      '--when <command>',
      'agent jobs: a shell check run before each run; exit 0 runs the model (JSON stdout reaches the prompt), exit 1 skips',
    )
    .addOption(
      new Option('--overlap <policy>', 'when a run is due while one is still going').choices([
        'skip',
        'queue_one',
        'allow',
      ]),
    )
    .addOption(
      new Option('--notify <policy>', 'which runs are delivered (default always)').choices([
        'always',
        'failure',
        'state_changes',
        'never',
      ]),
    )
    .action(
      action(async (context, [name = ''], options) => {
        const schedule = scheduleOf(options)
        if (options.command === undefined && options.prompt === undefined)
          throw usage(
            'give --command "<shell command>" for a shell job or --prompt "<instruction>" for an agent job',
          )
        if (options.cwd !== undefined && options.command === undefined)
          throw usage('--cwd applies to shell jobs (--command) only')
        if (options.when !== undefined && options.command !== undefined)
          throw usage(
            '--when applies to agent jobs (--prompt) only: a shell job can test its condition itself',
          )
        const body = {
          name,
          schedule_type: schedule.type,
          schedule: schedule.value,
          ...(options.command === undefined
            ? { prompt: options.prompt, ...(options.when === undefined ? {} : { when: options.when }) }
            : {
                kind: 'shell',
                command: options.command,
                ...(options.cwd === undefined ? {} : { cwd: resolve(options.cwd) }),
              }),
          ...(options.timezone === undefined ? {} : { timezone: options.timezone }),
          ...(options.deliverTo === undefined ? {} : { deliver_to: listOf(options.deliverTo) }),
          // Sent as milliseconds with their unit: the server reads it exactly as checked here.
          ...(options.timeout === undefined ? {} : { timeout: `${runTimeout(options.timeout)}ms` }),
          ...(options.overlap === undefined ? {} : { overlap: options.overlap }),
          ...(options.pingUrl === undefined ? {} : { ping_url: options.pingUrl }),
          ...(options.notify === undefined ? {} : { notify: options.notify }),
        }
        const client = await context.client()
        const data = await client.post<{
          status: string
          job: JobView
          next_runs: NextRun[]
          message?: string
        }>('/api/cron/jobs', { body })
        return {
          data,
          render: (out) => {
            out.print(
              `${out.paint('green', data.status ?? 'saved')} cron job ${data.job.name} (${data.job.id})`,
            )
            const next = data.next_runs?.[0]
            if (next !== undefined) out.print(`next run: ${next.local} (${next.timezone})`)
          },
        }
      }),
    )

  cron
    .command('preview')
    .description(
      'what a schedule would do, storing nothing: next fire times (zone and UTC) in words, DST notes, clashes with other jobs',
    )
    .argument(
      '<schedule>',
      'a cron expression ("30 2 * * *"), an interval (--type every: 2h) or a date-time (--type at)',
    )
    .addOption(
      new Option('--type <type>', 'how to read the schedule (default cron)').choices(['cron', 'every', 'at']),
    )
    .option('--tz <zone>', "IANA zone the schedule is read in (default: the server's)")
    .option('--count <n>', 'how many fire times (1-50, default 5)', integerOption(50))
    .action(
      action(async (context, [schedule = ''], options) => {
        const body = {
          schedule_type: options.type ?? 'cron',
          schedule,
          ...(options.tz === undefined ? {} : { timezone: options.tz }),
          ...(options.count === undefined ? {} : { count: options.count }),
        }
        const client = await context.client()
        const data = await client.post<{ preview: PreviewView }>('/api/cron/preview', { body })
        return { data, render: (out) => renderPreview(out, data.preview) }
      }),
    )

  for (const verb of ['pause', 'resume'] as const)
    cron
      .command(verb)
      .description(
        verb === 'pause'
          ? 'stop a job from firing (a run in progress is cancelled)'
          : 'let a paused job fire again',
      )
      .argument('<id>', 'job id or name')
      .action(
        action(async (context, [id = '']) => {
          const client = await context.client()
          const data = await client.post<{
            status: string
            id: string
            name: string
            next_run_at?: string | null
          }>(`${path(id)}/${verb}`)
          return {
            data,
            render: (out) =>
              out.print(
                `${out.paint(verb === 'pause' ? 'yellow' : 'green', data.status)} ${data.name}${
                  data.next_run_at ? `; next run ${formatTime(data.next_run_at)}` : ''
                }`,
              ),
          }
        }),
      )

  cron
    .command('trigger')
    .description('run a job now; prints the run id at once (--wait follows the run to its end)')
    .argument('<id>', 'job id or name')
    .option('--wait', 'wait for the run to end; exit 1 unless it completed')
    .option('--timeout <duration>', 'with --wait: give up after this long (the run goes on)', durationOption)
    .action(
      action(async (context, [id = ''], options) => {
        const client = await context.client()
        const triggeredAt = Date.now()
        const answer = await client.post<TriggerView>(`${path(id)}/trigger`)
        const status =
          answer.status ?? (answer.message?.startsWith('Job queued') === true ? 'queued' : 'started')
        if (status === 'skipped')
          throw new CliError('CLI_RUN_FAILED', `job ${id} was not triggered: ${answer.reason ?? 'skipped'}`, {
            data: { ...answer },
          })
        const history = async () =>
          (await client.get<{ entries: RunView[] }>('/api/cron/runs', { query: { job: id, limit: 50 } }))
            .entries
        // A started run's id comes with the answer; a queued one has none until it starts.
        const runId = answer.run_id
        const started = { ...answer, status, run_id: runId ?? null }
        if (options.wait !== true)
          return {
            data: started,
            render: (out) =>
              out.print(
                `${out.paint(status === 'queued' ? 'yellow' : 'green', status)} ${
                  runId === undefined ? `cron job ${id}` : `run ${runId}`
                }${answer.reason === undefined ? '' : ` (${answer.reason})`}`,
              ),
          }
        if (!context.out.json)
          context.out.note(`${status} ${runId ?? `cron job ${id}`}; waiting for the run to end…`)
        const run = await waitFor(
          async () => findRun(await history(), runId, triggeredAt),
          (found) => found !== undefined && found.status !== 'running',
          { timeoutMs: options.timeout, what: `the run of cron job ${id}` },
        )
        const ended = run as RunView
        const ok = RUN_OK.has(ended.status)
        return {
          // With --wait the answer is the run's end: `status` is the run's, as `workflow run --wait` says;
          // `triggered` keeps how the trigger went (started or queued).
          data: { ...started, ok, status: ended.status, triggered: status, run_id: ended.id, run: ended },
          exitCode: ok ? EXIT.ok : EXIT.failure,
          render: (out) => renderRunEnd(out, ended),
        }
      }),
    )

  cron
    .command('remove')
    .description('delete a job and its run history')
    .argument('<id>', 'job id or name')
    .action(
      action(async (context, [id = '']) => {
        const client = await context.client()
        const data = await client.delete<{ status: string; id: string; name: string }>(path(id))
        return {
          data,
          render: (out) => out.print(`${out.paint('gray', data.status ?? 'removed')} ${data.name ?? id}`),
        }
      }),
    )

  cron
    .command('history')
    .description('recent runs, newest first: status, tokens of ai runs (in/out), skip and delivery reasons')
    .argument('[id]', 'only runs of this job (id or name)')
    .option('--limit <n>', 'how many runs (1-200, default 20)', integerOption(200))
    .option(
      '--status <status>',
      'only runs with this status: running, completed, failed, timed_out, cancelled, skipped or interrupted',
    )
    .action(
      action(async (context, [id], options) => {
        const client = await context.client()
        const data = await client.get<{ entries: RunView[]; count: number }>('/api/cron/runs', {
          query: { job: id, limit: options.limit, status: options.status },
        })
        return { data, render: (out) => renderHistory(out, data.entries) }
      }),
    )
}

/**
 * `--timeout` of `cron add` in milliseconds; a bad value is a usage error (exit 2). Its range is
 * the server's (cron's limit), which answers with it.
 */
function runTimeout(value: string): number {
  try {
    return readDurationOption(value)
  } catch (error) {
    throw usage(`--timeout: ${(error as Error).message}`)
  }
}

function usage(message: string): CliError {
  return new CliError('CLI_INVALID_OPTION', message, { exitCode: EXIT.usage })
}

function scheduleOf(options: { schedule?: string; every?: string; at?: string; webhook?: string }): {
  type: string
  value: string
} {
  if (options.schedule !== undefined) return { type: 'cron', value: options.schedule }
  if (options.every !== undefined) return { type: 'every', value: options.every }
  if (options.at !== undefined) return { type: 'at', value: options.at }
  if (options.webhook !== undefined) return { type: 'webhook', value: options.webhook }
  throw usage(
    'give one of --schedule "<cron expression>", --every <duration>, --at <ISO date-time> or --webhook <hook name>',
  )
}

function listOf(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
}

/** The run a trigger started: by id, else the newest manual run recorded since the trigger. */
function findRun(entries: readonly RunView[], runId: string | undefined, since: number): RunView | undefined {
  if (runId !== undefined) return entries.find((entry) => entry.id === runId)
  return entries.find(
    (entry) =>
      entry.trigger === 'manual' && Date.parse(entry.scheduled_for ?? entry.started_at ?? '') >= since - 1000,
  )
}

function scheduleText(job: JobView): string {
  return job.schedule_type === 'cron' ? job.schedule : `${job.schedule_type} ${job.schedule}`
}

function stateOf(out: Output, job: JobView) {
  if (job.enabled) return out.status('enabled')
  return {
    text: job.pause_reason ? `paused (${oneLine(job.pause_reason, 40)})` : 'paused',
    style: 'yellow' as const,
  }
}

function renderPreview(out: Output, preview: PreviewView): void {
  out.print(`${preview.description} (${preview.timezone}): ${preview.schedule_type} ${preview.schedule}`)
  if (preview.fires.length === 0) out.print(out.paint('yellow', 'it never fires again'))
  for (const fire of preview.fires) out.print(`  ${fire.local}  ${out.paint('gray', fire.utc)}`)
  for (const note of preview.dst_notes) out.print(`${out.paint('yellow', 'DST')} ${note.message}`)
  for (const clash of preview.clashes)
    out.print(
      `${out.paint('yellow', 'clash')} ${clash.at.local} with ${clash.job_name} (${clash.other_at.local})`,
    )
  if (preview.clash_count > preview.clashes.length)
    out.print(`… ${preview.clash_count - preview.clashes.length} more clashes`)
}

function renderJobs(out: Output, jobs: readonly JobView[]): void {
  out.table(
    ['NAME', 'KIND', 'SCHEDULE', 'NEXT RUN', 'LAST', 'STATE', 'ID'],
    jobs.map((job) => [
      job.name,
      job.kind,
      scheduleText(job),
      formatTime(job.next_run_at),
      out.status(job.last_status),
      stateOf(out, job),
      job.id,
    ]),
    'no cron jobs (add one with `lango cron add <name> --schedule "*/5 * * * *" --command "…"`)',
  )
}

function renderJob(out: Output, job: JobView, nextRuns: readonly NextRun[]): void {
  out.fields([
    ['name', job.name],
    ['id', job.id],
    ['kind', job.kind],
    ['schedule', `${scheduleText(job)} (${job.timezone})`],
    ['state', stateOf(out, job)],
    [
      job.kind === 'shell' ? 'command' : 'prompt',
      job.kind === 'shell' ? job.command : oneLine(job.prompt, 200),
    ],
    ...(job.cwd === undefined || job.cwd === null ? [] : [['cwd', job.cwd] as [string, string]]),
    ['deliver to', job.deliver_to.length === 0 ? '-' : job.deliver_to.join(', ')],
    ['overlap', job.overlap],
    ...(job.when === undefined || job.when === null ? [] : [['when', job.when] as [string, string]]),
    ['ping url', job.ping_url ?? '-'],
    ['notify', job.notify],
    ['timeout', job.timeout_ms === undefined ? undefined : formatMs(job.timeout_ms)],
    ['created by', job.created_by ?? '-'],
    [
      'last run',
      job.last_run_at === null
        ? (job.last_status ?? '-')
        : `${formatTime(job.last_run_at)} ${job.last_status ?? ''}`.trim(),
    ],
    ['next runs', nextRuns.length === 0 ? '-' : nextRuns.map((run) => run.local).join(', ')],
  ])
}

function detailOf(run: RunView): string {
  return oneLine(run.error ?? run.skip_reason ?? run.result, 60)
}

/** An `ai` run's tokens as `in/out` (`1200/345`); `—` when the run has no count (shell runs). */
function tokensOf(run: RunView): string {
  const input = run.input_tokens ?? null
  const output = run.output_tokens ?? null
  if (input === null && output === null) return '—'
  return `${input ?? '—'}/${output ?? '—'}`
}

function renderHistory(out: Output, entries: readonly RunView[]): void {
  out.table(
    ['STARTED', 'JOB', 'TRIGGER', 'STATUS', 'TOOK', 'TOKENS', 'DELIVERY', 'DETAIL', 'RUN ID'],
    entries.map((run) => [
      formatTime(run.started_at ?? run.scheduled_for),
      run.job_name,
      run.trigger,
      out.status(run.status),
      formatMs(run.duration_ms),
      tokensOf(run),
      run.delivery_status,
      detailOf(run),
      run.id,
    ]),
    'no runs yet',
  )
}

function renderRunEnd(out: Output, run: RunView): void {
  out.print(
    `${out.paint(RUN_OK.has(run.status) ? 'green' : 'red', run.status)} run ${run.id} of ${run.job_name} (${formatMs(run.duration_ms)})`,
  )
  if (run.result) out.print(run.result.replace(/\n+$/, ''))
  if (run.error) out.note(`error: ${run.error}`)
  if (run.skip_reason) out.note(`skipped: ${run.skip_reason}`)
}
