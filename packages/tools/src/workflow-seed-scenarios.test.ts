// Seed 000, "Workflow agent tools": each scenario through the tool itself (invokeTool over
// createWorkflowTools, approval included), on a real WorkflowEngine, a real SQLite file, a real
// workflows directory and real shell commands behind the `lango` CLI guard.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { blockLangoExec } from '@lango/exec'
import { WorkflowDirectory, WorkflowEngine } from '@lango/workflow'
import { migrateWorkflow, SqliteWorkflowStore, type WorkflowDatabase } from '@lango/workflow/sqlite'
import { RecordingAgentRunner, RecordingChannelSender } from '@lango/workflow/testing'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { guardedShellRunner } from './__fixtures__/shell-runner.js'
import type { ApprovalRequest } from './approval.js'
import { invokeTool } from './invoke.js'
import type { AnyTool } from './tool.js'
import { createWorkflowTools } from './workflow-tools.js'

/** A host's ShellRunner: the `lango` guard on the rendered command, then @lango/exec. */
const shellRunner = guardedShellRunner({ killGraceMs: 200 })

const REPORT = `name: daily-report
description: Morning summary
steps:
  - id: fetch
    prompt: "Collect today's headlines"
  - id: size
    run: "echo 12M"
  - id: summary
    depends_on: [fetch, size]
    prompt: "Summarise {{fetch.result}} and note disk use {{size.result}}"
`

/** The conversation the calls come from; its chat is the auto-detected delivery target. */
const SESSION = 'telegram:123:456'

let home: string
let db: Kysely<WorkflowDatabase>
let engine: WorkflowEngine
let directory: WorkflowDirectory
let agent: RecordingAgentRunner
let sender: RecordingChannelSender
let tools: Map<string, AnyTool>
let approvals: ApprovalRequest[]

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'lango-tools-wf-seed-'))
  db = new Kysely<WorkflowDatabase>({
    dialect: new SqliteDialect({ database: new Database(join(home, 'lango.db')) }),
  })
  await migrateWorkflow(db)
  agent = new RecordingAgentRunner()
  sender = new RecordingChannelSender()
  engine = new WorkflowEngine({
    store: new SqliteWorkflowStore(db),
    agentRunner: agent,
    shellRunner,
    channelSender: sender,
  })
  await engine.start()
  directory = await WorkflowDirectory.open(join(home, 'workflows'))
  tools = new Map(createWorkflowTools({ service: { engine, directory } }).map((tool) => [tool.name, tool]))
  approvals = []
})
afterEach(async () => {
  await engine.stop()
  await db.destroy()
  await rm(home, { recursive: true, force: true })
})

/** Calls a tool as a host does: the default policy, with an approver who says yes and is recorded. */
async function call(name: string, params: unknown): Promise<unknown> {
  const outcome = await invokeTool(
    tools.get(name) as AnyTool,
    params,
    { sessionKey: SESSION },
    {
      gate: {
        async request(request) {
          approvals.push(request)
          return true
        },
      },
    },
  )
  if (!outcome.ok) throw new Error(`${name} failed: ${JSON.stringify(outcome.error)}`)
  return outcome.result
}

interface RunResult {
  run_id: string
  workflow_name: string
  status: string
  steps: Array<{ step_id: string; status: string; result: string | null; error: string | null }>
}

describe('seed 000 "Workflow agent tools", through the tools', () => {
  it('Run a workflow from file path: workflow_run parses, validates and executes it, returning run_id, status and step results', async () => {
    await directory.save('daily-report', REPORT)
    const expected = {
      run_id: expect.any(String),
      workflow_name: 'daily-report',
      status: 'completed',
      steps: [
        { step_id: 'fetch', status: 'completed', result: 'result of fetch', error: null },
        { step_id: 'size', status: 'completed', result: '12M', error: null },
        { step_id: 'summary', status: 'completed', result: 'result of summary', error: null },
      ],
    }
    const byPath = await call('workflow_run', { file_path: join(directory.path, 'daily-report.flow.yaml') })
    expect(byPath).toEqual(expected)
    expect(await call('workflow_run', { file_path: 'daily-report' })).toEqual(expected)
    // The template carried the earlier results into the last prompt.
    expect(agent.calls.find((request) => request.stepId === 'summary')?.prompt).toContain('12M')
  })

  it('Run a workflow from inline YAML: workflow_run parses yaml_content and executes it', async () => {
    const result = (await call('workflow_run', {
      yaml_content: `name: inline
steps:
  - id: a
    run: "echo 41"
  - id: b
    depends_on: [a]
    run: "expr {{a.result}} + 1"
`,
    })) as RunResult
    expect(result).toMatchObject({
      workflow_name: 'inline',
      status: 'completed',
      steps: [
        { step_id: 'a', status: 'completed', result: '41' },
        { step_id: 'b', status: 'completed', result: '42' },
      ],
    })
    // Inline shell steps run commands nobody reviewed: the call went through approval (WF-10).
    expect(approvals.map((request) => [request.toolName, request.safety])).toEqual([
      ['workflow_run', 'dangerous'],
    ])
  })

  it('Save a workflow definition: workflow_save validates the YAML and saves it as <name>.flow.yaml', async () => {
    expect(await call('workflow_save', { name: 'morning', yaml_content: REPORT })).toEqual({
      status: 'saved',
      name: 'morning',
      file_path: join(directory.path, 'morning.flow.yaml'),
    })
    expect(await readFile(join(directory.path, 'morning.flow.yaml'), 'utf8')).toBe(REPORT)
    await expect(
      call('workflow_save', { name: 'broken', yaml_content: 'name: broken\nsteps: []\n' }),
    ).rejects.toThrow(/WORKFLOW_INVALID/)
    expect(await directory.list()).toEqual(['morning'])
  })

  it('Cancel a running workflow: workflow_cancel cancels it and workflow_status shows the update', async () => {
    const started = (await call('workflow_run', {
      yaml_content:
        'name: long\nsteps:\n  - { id: wait, run: "sleep 30" }\n  - { id: after, depends_on: [wait], run: "echo never" }\n',
      wait_seconds: 0.3,
    })) as RunResult
    expect(started.status).toBe('running')
    expect(await call('workflow_cancel', { run_id: started.run_id })).toEqual({
      status: 'cancelled',
      run_id: started.run_id,
    })
    expect(await call('workflow_status', { run_id: started.run_id })).toMatchObject({
      run_id: started.run_id,
      status: 'cancelled',
      steps: [
        { step_id: 'wait', status: 'cancelled' },
        { step_id: 'after', status: 'cancelled' },
      ],
    })
  })

  it('workflow_status and workflow_list: a run with its steps; recent runs and the saved workflows', async () => {
    await call('workflow_save', { name: 'daily-report', yaml_content: REPORT })
    const { run_id } = (await call('workflow_run', { file_path: 'daily-report' })) as RunResult
    expect(await call('workflow_status', { run_id })).toMatchObject({
      run_id,
      workflow_name: 'daily-report',
      status: 'completed',
      total_steps: 3,
      completed_steps: 3,
      steps: [
        { step_id: 'fetch', status: 'completed', attempt: 1 },
        { step_id: 'size', status: 'completed', result: '12M', attempt: 1 },
        { step_id: 'summary', status: 'completed', attempt: 1 },
      ],
    })
    expect(await call('workflow_list', { status: 'completed' })).toMatchObject({
      runs: [{ run_id, workflow_name: 'daily-report', status: 'completed' }],
      count: 1,
      saved: ['daily-report'],
    })
  })

  it('workflow_run waits at most wait_seconds and returns the run as it stands; workflow_status follows it to the end', async () => {
    // The step runs until the test opens its gate, so the run is still going when the wait ends;
    // the wait is long enough for the step to have started on a loaded machine.
    const gate = join(home, 'slow-gate')
    const started = (await call('workflow_run', {
      yaml_content: `name: slow\nsteps:\n  - { id: a, run: "while [ ! -f '${gate}' ]; do sleep 0.02; done; echo done" }\n`,
      wait_seconds: 1,
    })) as RunResult
    expect(started).toMatchObject({ status: 'running', steps: [{ step_id: 'a', status: 'running' }] })
    await writeFile(gate, '')
    await engine.waitForRun(started.run_id)
    expect(await call('workflow_status', { run_id: started.run_id })).toMatchObject({
      status: 'completed',
      steps: [{ step_id: 'a', result: 'done' }],
    })
  })

  it('deliver_to in the YAML is optional: workflow_run delivers to the conversation it came from', async () => {
    await call('workflow_run', { yaml_content: 'name: auto\nsteps:\n  - { id: a, run: "echo hi" }\n' })
    expect(sender.messages.map((message) => message.target)).toEqual(['telegram:123'])
    expect(sender.messages[0]?.text).toContain('[Workflow] auto: completed')
  })

  it('a step that runs a lango command is refused by the guard: the step fails with its message, nothing else runs after it', async () => {
    const result = (await call('workflow_run', {
      yaml_content:
        'name: sneaky\nsteps:\n  - { id: cli, run: "lango cron list", retry: { attempts: 3, backoff: 10ms } }\n  - { id: next, depends_on: [cli], run: "echo never" }\n',
    })) as RunResult
    const guard = blockLangoExec('lango cron list', { automationAvailable: true })
    expect(guard).not.toBe('')
    expect(result).toMatchObject({
      status: 'failed',
      steps: [
        { step_id: 'cli', status: 'failed', result: null, error: guard },
        { step_id: 'next', status: 'skipped' },
      ],
    })
    expect(await call('workflow_status', { run_id: result.run_id })).toMatchObject({
      steps: [{ step_id: 'cli', attempt: 1 }, { step_id: 'next' }],
    })
  })
})
