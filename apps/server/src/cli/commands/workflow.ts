import { readFile, stat } from 'node:fs/promises'
import { basename, resolve } from 'node:path'
import { Option } from 'commander'
import { formatIssue } from '../client.js'
import type { Outcome, Register } from '../command.js'
import type { CommandContext } from '../context.js'
import { CliError, EXIT } from '../errors.js'
import { formatTime, type Output, oneLine } from '../output.js'
import { durationOption, integerOption, waitFor } from '../wait.js'

/** A run's step as the API shows it (workflow_status's view). */
interface StepView {
  readonly step_id: string
  readonly status: string
  readonly result: string | null
  readonly error: string | null
  readonly attempt?: number
  readonly started_at?: string | null
  readonly completed_at?: string | null
  /** For a step a rerun reused: the run that produced its result. */
  readonly reused_from?: string | null
}

/** A run as the API shows it: `workflow_status` (with steps) or `workflow_list` (without). */
interface RunView {
  readonly run_id: string
  readonly workflow_name: string
  readonly status: string
  readonly total_steps?: number
  readonly completed_steps?: number
  readonly error?: string | null
  readonly started_at?: string | null
  readonly completed_at?: string | null
  /** The run this one reruns. */
  readonly rerun_of?: string | null
  readonly steps?: readonly StepView[]
}

/** What `POST /api/workflows/runs/:id/rerun` answers (workflow_rerun). */
interface RerunView extends RunView {
  readonly rerun_of: string
  readonly from_steps: readonly string[]
  readonly rerun_steps: readonly string[]
  readonly reused_steps: readonly string[]
}

const ENDED = new Set(['completed', 'failed', 'cancelled'])
const path = (id: string) => `/api/workflows/runs/${encodeURIComponent(id)}`

/** `lango workflow …`: runs over the server's API; `validate` and `run --local` without a server. */
export const registerWorkflow: Register = (program, action) => {
  const workflow = program
    .command('workflow')
    .description('YAML workflows: validate, run, follow and save them')

  workflow
    .command('list')
    .description('recent runs, newest first, and the saved workflows')
    .addOption(
      new Option('--status <status>', 'only runs in this state').choices([
        'pending',
        'running',
        'completed',
        'failed',
        'cancelled',
      ]),
    )
    .option('--limit <n>', 'how many runs (1-200, default 20)', integerOption(200))
    .action(
      action(async (context, _args, options) => {
        const client = await context.client()
        const data = await client.get<{ runs: RunView[]; count: number; saved?: string[] }>(
          '/api/workflows/runs',
          {
            query: { status: options.status, limit: options.limit },
          },
        )
        return { data, render: (out) => renderRuns(out, data.runs) }
      }),
    )

  workflow
    .command('status')
    .description('one run with each step: status, result, error')
    .argument('<run-id>', 'run id')
    .action(
      action(async (context, [id = '']) => {
        const client = await context.client()
        const data = await client.get<RunView>(path(id))
        return { data, render: (out) => renderRun(out, data) }
      }),
    )

  workflow
    .command('run')
    .description(
      'start a run of a saved workflow (by name) or of a .flow.yaml file; prints the run id at once',
    )
    .argument('<name-or-file>', 'a saved workflow name, or a path to a workflow file')
    .option('--wait', 'follow the run to its end; exit 1 unless it completed')
    .option('--timeout <duration>', 'with --wait or --local: give up after this long', durationOption)
    .option('--local', 'run the file in this process, without a server (shell steps only: no model)')
    .action(
      action(async (context, [target = ''], options) => {
        if (options.local === true) return runLocal(context, target, options.timeout)
        const file = await localFile(target)
        const client = await context.client()
        const started = await client.post<RunView>('/api/workflows/runs', {
          body:
            file === undefined
              ? { name: target, wait_seconds: 0 }
              : { yaml_content: await readText(file), wait_seconds: 0 },
        })
        if (options.wait !== true)
          return {
            data: started,
            render: (out) =>
              out.print(`${out.paint('green', 'started')} run ${started.run_id} of ${started.workflow_name}`),
          }
        if (!context.out.json)
          context.out.note(`started run ${started.run_id} of ${started.workflow_name}; following it…`)
        return follow(context, client, started.run_id, options.timeout)
      }),
    )

  workflow
    .command('rerun')
    .description(
      'rerun an ended run from a step: that step and every step after it run again, the other completed steps keep their results; prints the new run id',
    )
    .argument('<run-id>', 'the run to rerun (failed, cancelled or completed)')
    .option(
      '--from <step>',
      'the step to run again, with the steps that depend on it (default: the failed step)',
    )
    .option('--wait', 'follow the new run to its end; exit 1 unless it completed')
    .option('--timeout <duration>', 'with --wait: give up after this long', durationOption)
    .action(
      action(async (context, [id = ''], options) => {
        const client = await context.client()
        const started = await client.post<RerunView>(`${path(id)}/rerun`, {
          body: { ...(options.from === undefined ? {} : { from_step: options.from }), wait_seconds: 0 },
        })
        const line = `run ${started.run_id} of ${started.workflow_name} reruns ${started.rerun_of}: runs again ${started.rerun_steps.join(', ')}${
          started.reused_steps.length === 0 ? '' : `; reuses ${started.reused_steps.join(', ')}`
        }`
        if (options.wait !== true)
          return { data: started, render: (out) => out.print(`${out.paint('green', 'started')} ${line}`) }
        if (!context.out.json) context.out.note(`started ${line}; following it…`)
        return follow(context, client, started.run_id, options.timeout)
      }),
    )

  workflow
    .command('cancel')
    .description('cancel a running workflow run')
    .argument('<run-id>', 'run id')
    .action(
      action(async (context, [id = '']) => {
        const client = await context.client()
        const data = await client.post<{ status: string; run_id: string }>(`${path(id)}/cancel`)
        return { data, render: (out) => out.print(`${out.paint('gray', data.status)} run ${data.run_id}`) }
      }),
    )

  workflow
    .command('saved')
    .description('names of the saved workflows')
    .action(
      action(async (context) => {
        const client = await context.client()
        const data = await client.get<{ saved: string[] }>('/api/workflows/saved')
        return {
          data,
          render: (out) =>
            out.table(
              ['NAME'],
              data.saved.map((name) => [name]),
              'no saved workflows (save one with `lango workflow save <file>`)',
            ),
        }
      }),
    )

  workflow
    .command('save')
    .description('save a workflow file on the server (its schedule, if any, is registered with cron)')
    .argument('<file>', 'a workflow file (.flow.yaml)')
    .option('--name <name>', "name to save under (default: the workflow's name)")
    .option('--overwrite', 'replace a saved workflow of the same name')
    .action(
      action(async (context, [file = ''], options) => {
        const source = await readText(file)
        const name: string =
          options.name ?? (await workflowName(source)) ?? basename(file).replace(/(\.flow)?\.ya?ml$/, '')
        const client = await context.client()
        const data = await client.put<{ status: string; name: string; file_path: string }>(
          `/api/workflows/saved/${encodeURIComponent(name)}`,
          { body: { yaml_content: source, overwrite: options.overwrite === true } },
        )
        return {
          data,
          render: (out) => out.print(`${out.paint('green', data.status)} ${data.name} (${data.file_path})`),
        }
      }),
    )

  workflow
    .command('validate')
    .description(
      'check a workflow file without running it: every problem with its line:column (exit 1 if any)',
    )
    .argument('<file>', 'a workflow file (.flow.yaml)')
    .action(
      action(async (_context, [file = '']) => {
        const source = await readText(file)
        const { parseWorkflow } = await import('@lango/workflow')
        const parsed = parseWorkflow(source)
        if (!parsed.ok) {
          const issues = parsed.issues.map((issue) => ({ ...issue }))
          return {
            data: { valid: false, file, issues },
            exitCode: EXIT.failure,
            render: (out) => {
              for (const issue of issues) out.print(formatIssue(issue, file))
              out.error(`${file} is not a valid workflow (${count(issues.length, 'problem')})`)
            },
          }
        }
        const { definition, plan } = parsed.workflow
        const data = {
          valid: true,
          file,
          name: definition.name,
          steps: definition.steps.map((step) => ({
            id: step.id,
            kind: step.kind,
            depends_on: [...step.dependsOn],
          })),
          layers: plan.layers.map((layer) => [...layer]),
          ...(definition.schedule === undefined ? {} : { schedule: definition.schedule }),
        }
        return {
          data,
          render: (out) =>
            out.print(
              `${out.paint('green', 'valid')} ${file}: workflow ${definition.name}, ${count(definition.steps.length, 'step')} in ${count(plan.layers.length, 'layer')}${
                definition.schedule === undefined ? '' : `, schedule ${definition.schedule}`
              }`,
            ),
        }
      }),
    )
}

/** Follows a run to its end, noting each step's change; exit code 1 unless it completed. */
async function follow(
  context: CommandContext,
  client: Awaited<ReturnType<CommandContext['client']>>,
  runId: string,
  timeoutMs: number | undefined,
): Promise<Outcome> {
  const seen = new Map<string, string>()
  const ended = await waitFor(
    () => client.get<RunView>(path(runId)),
    (run) => ENDED.has(run.status),
    {
      timeoutMs,
      what: `workflow run ${runId}`,
      onState: (run) => {
        for (const step of run.steps ?? []) {
          if (seen.get(step.step_id) === step.status || step.status === 'pending') continue
          seen.set(step.step_id, step.status)
          if (!context.out.json)
            context.out.note(`  ${step.step_id}: ${step.status}${step.reused_from ? ' (reused)' : ''}`)
        }
      },
    },
  )
  return {
    data: ended,
    exitCode: ended.status === 'completed' ? EXIT.ok : EXIT.failure,
    render: (out) => renderRun(out, ended),
  }
}

/** `workflow run <file> --local`: in this process, exit code from the run's outcome. */
async function runLocal(
  context: CommandContext,
  file: string,
  timeoutMs: number | undefined,
): Promise<Outcome> {
  const source = await readText(file)
  const { runLocalWorkflow } = await import('../local-workflow.js')
  const { WorkflowError } = await import('@lango/workflow')
  const usesSecrets = source.includes('{{secret:')
  const vault = usesSecrets ? await (await import('./secrets.js')).openVault(context) : undefined
  // The configuration's secrets, and other tools' credentials in this process's environment, are
  // masked in the steps' output as the server masks them.
  const { configSecrets, environmentSecrets } = await import('../../config/redact.js')
  const { credentialsIn } = await import('../../config/environment-credentials.js')
  const configured = [
    ...(await context.config().then(configSecrets, () => [])),
    ...environmentSecrets(credentialsIn(process.env)),
  ]
  const controller = new AbortController()
  const interrupt = () => controller.abort()
  process.once('SIGINT', interrupt)
  const { out } = context
  try {
    const ended = await runLocalWorkflow(source, {
      cwd: process.cwd(),
      timeoutMs,
      refStore: {
        resolve: (token) => vault?.vault.resolve(token),
        *heldValues() {
          yield* configured
          if (vault !== undefined) yield* vault.vault.heldValues()
        },
      },
      signal: controller.signal,
      onStep: (step) => {
        if (!out.json)
          out.note(`  ${step.stepId}: ${step.status}${step.error ? ` (${oneLine(step.error, 80)})` : ''}`)
      },
      onDelivery: (target, text) => out.note(`[deliver to ${target}] ${text}`),
    })
    const run = snapshotView(ended)
    return {
      data: run,
      exitCode: run.status === 'completed' ? EXIT.ok : EXIT.failure,
      render: (output) => renderRun(output, run),
    }
  } catch (error) {
    if (WorkflowError.is(error) && error.issues !== undefined)
      throw new CliError(
        'CLI_INVALID_WORKFLOW',
        `${file} is not a valid workflow (${count(error.issues.length, 'problem')})`,
        {
          issues: error.issues.map((issue) => ({ ...issue, file })),
        },
      )
    throw error
  } finally {
    process.removeListener('SIGINT', interrupt)
    await vault?.close()
  }
}

function snapshotView(run: import('@lango/workflow').WorkflowRunSnapshot): RunView {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
  return {
    run_id: run.runId,
    workflow_name: run.workflowName,
    status: run.status,
    total_steps: run.totalSteps,
    completed_steps: run.completedSteps,
    error: run.error,
    started_at: iso(run.startedAt),
    completed_at: iso(run.completedAt),
    steps: run.steps.map((step) => ({
      step_id: step.stepId,
      status: step.status,
      result: step.result,
      error: step.error,
      attempt: step.attempt,
      started_at: iso(step.startedAt),
      completed_at: iso(step.completedAt),
    })),
  }
}

/** The file's text; a missing or unreadable file is one clear error. */
async function readText(file: string): Promise<string> {
  try {
    return await readFile(resolve(file), 'utf8')
  } catch (error) {
    const code = (error as { code?: string }).code
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (code ?? 'unreadable')
    throw new CliError('CLI_FILE_UNREADABLE', `cannot read ${file}: ${why}`, { cause: error, data: { file } })
  }
}

/** `target` as a local file path when one exists, else undefined (a saved workflow's name). */
async function localFile(target: string): Promise<string | undefined> {
  try {
    return (await stat(target)).isFile() ? target : undefined
  } catch {
    return undefined
  }
}

async function workflowName(source: string): Promise<string | undefined> {
  const { parseWorkflow } = await import('@lango/workflow')
  const parsed = parseWorkflow(source)
  return parsed.ok ? parsed.workflow.definition.name : undefined
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`
}

function renderRuns(out: Output, runs: readonly RunView[]): void {
  out.table(
    ['RUN ID', 'WORKFLOW', 'STATUS', 'STEPS', 'STARTED', 'ENDED', 'ERROR'],
    runs.map((run) => [
      run.run_id,
      run.workflow_name,
      out.status(run.status),
      run.total_steps === undefined ? '-' : `${run.completed_steps ?? 0}/${run.total_steps}`,
      formatTime(run.started_at),
      formatTime(run.completed_at),
      oneLine(run.error, 50),
    ]),
    'no workflow runs',
  )
}

function renderRun(out: Output, run: RunView): void {
  out.print(
    `${out.paint('bold', run.workflow_name)}  run ${run.run_id}  ${out.paint(run.status === 'completed' ? 'green' : ENDED.has(run.status) ? 'red' : 'yellow', run.status)}`,
  )
  if (run.rerun_of) out.print(`rerun of: ${run.rerun_of}`)
  if (run.error) out.print(`error: ${run.error}`)
  out.table(
    ['STEP', 'STATUS', 'RESULT / ERROR'],
    (run.steps ?? []).map((step) => [
      step.step_id,
      step.reused_from
        ? { text: `${step.status} (reused from ${step.reused_from})`, style: 'gray' as const }
        : out.status(step.status),
      oneLine(step.error ?? step.result, 80),
    ]),
    'no steps',
  )
}
