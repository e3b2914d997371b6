import { describe, expect, it } from 'vitest'
import { createBackgroundTools } from './background-tools.js'
import { createCronTools, createManageCronJobsTool } from './cron-tools.js'
import { createExecTools } from './exec-tools.js'
import { invokeTool } from './invoke.js'
import type { AnyTool } from './tool.js'
import { createWorkflowTools } from './workflow-tools.js'

/** Services that must never be reached: validation stops every call below first. */
const unreachable = new Proxy(
  {},
  {
    get(_target, property) {
      if (property === 'then') return undefined
      return () => {
        throw new Error(`service.${String(property)} was called although the parameters were invalid`)
      }
    },
  },
) as never

const tools = new Map<string, AnyTool>(
  [
    ...createExecTools({ backend: { run: unreachable, registry: unreachable, blockLangoExec: unreachable } }),
    ...createBackgroundTools({ service: unreachable }),
    ...createCronTools({ service: unreachable }),
    createManageCronJobsTool({ service: unreachable }),
    ...createWorkflowTools({ service: unreachable }),
  ].map((tool) => [tool.name, tool]),
)

const HUGE = 'x'.repeat(300_000)

/** [tool, params, the field the error must name] */
const CASES: ReadonlyArray<readonly [string, unknown, string]> = [
  ['exec', {}, 'command'],
  ['exec', { command: 42 }, 'command'],
  ['exec', { command: '' }, 'command'],
  ['exec', { command: HUGE }, 'command'],
  ['exec', { command: 'ls', timeout: 'soon' }, 'timeout'],
  ['exec', { command: 'ls', timeout: 100_000 }, 'timeout'],
  ['exec', { command: 'ls', env: { A: 1 } }, 'env'],
  ['exec', { command: 'ls', bogus: true }, 'bogus'],
  ['exec_bg', {}, 'command'],
  ['exec_bg', { command: 'ls', pty: 'yes' }, 'pty'],
  ['exec_status', {}, 'id'],
  ['exec_status', { id: 'p', offset: -1 }, 'offset'],
  ['exec_write', { id: 'p' }, 'input'],
  ['exec_write', { id: 'p', input: HUGE }, 'input'],
  ['exec_stop', { id: 7 }, 'id'],
  ['bg_submit', {}, 'prompt'],
  ['bg_submit', { prompt: HUGE }, 'prompt'],
  ['bg_submit', { prompt: 'p', channel: 5 }, 'channel'],
  ['bg_status', {}, 'task_id'],
  ['bg_list', { status: 'sleeping' }, 'status'],
  ['bg_result', { task_id: '' }, 'task_id'],
  ['bg_cancel', { task_id: null }, 'task_id'],
  ['cron_add', { schedule_type: 'cron', schedule: '0 3 * * *', prompt: 'p' }, 'name'],
  ['cron_add', { name: 'n', schedule_type: 'hourly', schedule: '1h', prompt: 'p' }, 'schedule_type'],
  ['cron_add', { name: 'n', schedule_type: 'cron', prompt: 'p' }, 'schedule'],
  ['cron_add', { name: 'n', schedule_type: 'cron', schedule: '0 3 * * *' }, 'prompt'],
  ['cron_add', { name: 'n', schedule_type: 'cron', schedule: '0 3 * * *', prompt: HUGE }, 'prompt'],
  [
    'cron_add',
    { name: 'n', schedule_type: 'cron', schedule: '0 3 * * *', prompt: 'p', overlap: 'maybe' },
    'overlap',
  ],
  [
    'cron_add',
    { name: 'n', schedule_type: 'cron', schedule: '0 3 * * *', prompt: 'p', deliver_to: 'telegram' },
    'deliver_to',
  ],
  ['cron_list', { extra: 1 }, 'extra'],
  ['cron_pause', {}, 'id'],
  ['cron_resume', { id: 3 }, 'id'],
  ['cron_remove', { id: '' }, 'id'],
  ['cron_history', { limit: 500 }, 'limit'],
  ['cron_history', { limit: 2.5 }, 'limit'],
  ['manage_cron_jobs', {}, 'action'],
  ['manage_cron_jobs', { action: 'explode' }, 'action'],
  ['manage_cron_jobs', { action: 'create', type: 'python' }, 'type'],
  ['manage_cron_jobs', { action: 'create', scheduleType: 'weekly' }, 'scheduleType'],
  ['manage_cron_jobs', { action: 'create', config: { shell: 'rm -rf /' } }, 'config'],
  ['manage_cron_jobs', { action: 'update', enabled: 'no' }, 'enabled'],
  ['workflow_run', { wait_seconds: 'long', yaml_content: 'name: x' }, 'wait_seconds'],
  ['workflow_run', { yaml_content: HUGE }, 'yaml_content'],
  ['workflow_status', {}, 'run_id'],
  ['workflow_list', { limit: 0 }, 'limit'],
  ['workflow_list', { status: 'asleep' }, 'status'],
  ['workflow_cancel', { run_id: 1 }, 'run_id'],
  ['workflow_rerun', {}, 'run_id'],
  ['workflow_rerun', { run_id: 'r', from_step: '' }, 'from_step'],
  ['workflow_rerun', { run_id: 'r', wait_seconds: -1 }, 'wait_seconds'],
  ['workflow_save', { yaml_content: 'name: x' }, 'name'],
  ['workflow_save', { name: 'x' }, 'yaml_content'],
  ['workflow_save', { name: 'x', yaml_content: 'name: x', overwrite: 'yes' }, 'overwrite'],
]

describe('every tool rejects invalid parameters with an error naming the field', () => {
  it('covers every tool', () => {
    expect(new Set(CASES.map(([name]) => name))).toEqual(new Set(tools.keys()))
  })

  const shown = (params: unknown) => {
    const text = JSON.stringify(params)
    return text.length > 80 ? `${text.slice(0, 60)}…(${text.length} chars)` : text
  }
  it.each(CASES.map(([name, params, field]) => [name, shown(params), field, params] as const))(
    '%s %s → names %s',
    async (name, _shown, field, params) => {
      const outcome = await invokeTool(tools.get(name) as AnyTool, params, {}, { policy: 'none' })
      expect(outcome.ok).toBe(false)
      if (outcome.ok) return
      expect(outcome.error.code).toBe('TOOL_INVALID_PARAMETERS')
      const paths = outcome.error.issues?.map((issue) => issue.path) ?? []
      expect(paths.some((path) => path === field || path.startsWith(`${field}.`))).toBe(true)
      expect(outcome.error.message).toContain(field)
      expect(outcome.error.message.length).toBeLessThan(2_000)
    },
  )

  it('rejects a non-object parameter list', async () => {
    for (const tool of tools.values()) {
      const outcome = await invokeTool(tool, 'not an object', {}, { policy: 'none' })
      expect(outcome).toMatchObject({ ok: false, error: { code: 'TOOL_INVALID_PARAMETERS' } })
    }
  })
})

describe('the messages are plain words, not the validation library’s defaults (outside probe)', () => {
  const issuesOf = async (name: string, params: unknown) => {
    const outcome = await invokeTool(tools.get(name) as AnyTool, params, {}, { policy: 'none' })
    if (outcome.ok) throw new Error(`${name} accepted ${JSON.stringify(params)}`)
    return outcome.error.issues ?? []
  }

  it('no case reads "Invalid …: Expected … but received …"', async () => {
    for (const [name, params] of CASES)
      for (const issue of await issuesOf(name, params))
        expect(issue.message, `${name} ${issue.path}`).not.toMatch(/Invalid \w+: Expected|but received/)
  })

  it('says an unknown field, a missing one, a choice and a type plainly', async () => {
    expect(await issuesOf('exec', { command: 'ls', bogus: true })).toContainEqual({
      path: 'bogus',
      message: 'unknown field (not one this accepts)',
    })
    expect(
      await issuesOf('cron_add', { schedule_type: 'cron', schedule: '0 3 * * *', prompt: 'p' }),
    ).toContainEqual({ path: 'name', message: 'is required' })
    const [choice] = await issuesOf('bg_list', { status: 'sleeping' })
    expect(choice?.message).toMatch(/^must be one of "\w+"(, "\w+")+ \(got "sleeping"\)$/)
    expect(await issuesOf('manage_cron_jobs', { action: 'update', enabled: 'no' })).toContainEqual(
      expect.objectContaining({ path: 'enabled', message: 'must be true or false (got "no")' }),
    )
  })
})
