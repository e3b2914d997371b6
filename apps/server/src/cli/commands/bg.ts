import { Option } from 'commander'
import type { Register } from '../command.js'
import { CliError, EXIT } from '../errors.js'
import { formatTime, type Output, oneLine } from '../output.js'
import { durationOption, waitFor } from '../wait.js'

/** A task as `GET /api/background/tasks` lists it (bg_status's view). */
interface TaskView {
  readonly task_id: string
  readonly status: string
  readonly prompt: string
  readonly result: string | null
  readonly error: string | null
  readonly origin_channel: string | null
  readonly created_at: string | null
  readonly started_at: string | null
  readonly completed_at: string | null
}

const ENDED = new Set(['done', 'failed', 'cancelled'])
const path = (id: string) => `/api/background/tasks/${encodeURIComponent(id)}`

/** `lango bg list|status|submit|cancel|result`, over the server's API. */
export const registerBackground: Register = (program, action) => {
  const bg = program.command('bg').description('background agent tasks of the running server')

  bg.command('list')
    .description('tasks, newest first')
    .addOption(
      new Option('--status <status>', 'only tasks in this state').choices([
        'pending',
        'running',
        'done',
        'failed',
        'cancelled',
      ]),
    )
    .action(
      action(async (context, _args, options) => {
        const client = await context.client()
        const data = await client.get<{ tasks: TaskView[]; count: number }>('/api/background/tasks', {
          query: { status: options.status },
        })
        return { data, render: (out) => renderTasks(out, data.tasks) }
      }),
    )

  bg.command('status')
    .description("one task's state, result or error")
    .argument('<id>', 'task id')
    .action(
      action(async (context, [id = '']) => {
        const client = await context.client()
        const data = await client.get<TaskView>(path(id))
        return { data, render: (out) => renderTask(out, data) }
      }),
    )

  bg.command('submit')
    .description('run a prompt as a background agent task; prints the task id at once')
    .argument('<prompt>', 'what the agent should do')
    .option('--channel <target>', 'where the result is announced, e.g. telegram:123')
    .option('--wait', 'wait for the task to end; exit 1 unless it is done')
    .option('--timeout <duration>', 'with --wait: give up after this long (the task goes on)', durationOption)
    .action(
      action(async (context, [prompt = ''], options) => {
        const client = await context.client()
        const submitted = await client.post<{ status: string; task_id: string; message?: string }>(
          '/api/background/tasks',
          {
            body: { prompt, ...(options.channel === undefined ? {} : { channel: options.channel }) },
          },
        )
        if (options.wait !== true)
          return {
            data: submitted,
            render: (out) => out.print(`${out.paint('green', 'submitted')} task ${submitted.task_id}`),
          }
        if (!context.out.json) context.out.note(`submitted task ${submitted.task_id}; waiting for it to end…`)
        const task = await waitFor(
          () => client.get<TaskView>(path(submitted.task_id)),
          (state) => ENDED.has(state.status),
          { timeoutMs: options.timeout, what: `background task ${submitted.task_id}` },
        )
        return {
          data: task,
          exitCode: task.status === 'done' ? EXIT.ok : EXIT.failure,
          render: (out) => renderTask(out, task),
        }
      }),
    )

  bg.command('cancel')
    .description('cancel a pending or running task')
    .argument('<id>', 'task id')
    .action(
      action(async (context, [id = '']) => {
        const client = await context.client()
        const data = await client.post<{ status: string; task_id: string }>(`${path(id)}/cancel`)
        return { data, render: (out) => out.print(`${out.paint('gray', data.status)} task ${data.task_id}`) }
      }),
    )

  bg.command('result')
    .description("a finished task's result text (exit 1 if it did not finish well)")
    .argument('<id>', 'task id')
    .action(
      action(async (context, [id = '']) => {
        const client = await context.client()
        const task = await client.get<TaskView>(path(id))
        if (task.status !== 'done')
          throw new CliError(
            'CLI_RUN_FAILED',
            `task ${task.task_id} has no result: it is ${task.status}${task.error ? ` (${task.error})` : ''}`,
            { data: { task_id: task.task_id, status: task.status } },
          )
        return {
          data: { task_id: task.task_id, status: task.status, result: task.result },
          render: (out) => out.print(task.result ?? ''),
        }
      }),
    )
}

function renderTasks(out: Output, tasks: readonly TaskView[]): void {
  out.table(
    ['ID', 'STATUS', 'CREATED', 'PROMPT', 'RESULT / ERROR'],
    tasks.map((task) => [
      task.task_id,
      out.status(task.status),
      formatTime(task.created_at),
      oneLine(task.prompt, 40),
      oneLine(task.error ?? task.result, 50),
    ]),
    'no background tasks',
  )
}

function renderTask(out: Output, task: TaskView): void {
  out.fields([
    ['task', task.task_id],
    ['status', out.status(task.status)],
    ['prompt', oneLine(task.prompt, 200)],
    ['channel', task.origin_channel],
    ['created', formatTime(task.created_at)],
    ['started', formatTime(task.started_at)],
    ['ended', formatTime(task.completed_at)],
    ...(task.error === null ? [] : [['error', task.error] as const]),
  ])
  if (task.result !== null && task.result !== '') out.print(`\n${task.result}`)
}
