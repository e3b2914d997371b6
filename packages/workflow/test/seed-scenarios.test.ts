// Seed 000 ("Workflow agent tools") and seed 003 (design) scenarios, through the public API only:
// the same calls @lango/tools will make for workflow_run / status / list / cancel / save.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  type LoadedWorkflow,
  WorkflowDirectory,
  WorkflowEngine,
  WorkflowError,
  type WorkflowRunSnapshot,
} from '../src/index.js'
import { SqliteWorkflowStore } from '../src/sqlite/index.js'
import {
  ChildProcessShellRunner,
  RecordingAgentRunner,
  RecordingChannelSender,
} from '../src/testing/index.js'
import { createTestDatabase, type TestDatabase } from './__fixtures__/database.js'

/** What workflow_run returns (ARCHITECTURE.md §7), built from a snapshot the way @lango/tools will. */
function toolResult(snapshot: WorkflowRunSnapshot) {
  return {
    run_id: snapshot.runId,
    status: snapshot.status,
    steps: snapshot.steps.map((step) => ({
      step_id: step.stepId,
      status: step.status,
      result: step.result,
      error: step.error,
    })),
  }
}

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

let database: TestDatabase
let home: string
let engine: WorkflowEngine
let directory: WorkflowDirectory
let sender: RecordingChannelSender
let agent: RecordingAgentRunner

beforeEach(async () => {
  database = await createTestDatabase()
  home = await mkdtemp(join(tmpdir(), 'lango-home-'))
  directory = await WorkflowDirectory.open(join(home, 'workflows'))
  sender = new RecordingChannelSender()
  agent = new RecordingAgentRunner()
  engine = new WorkflowEngine({
    store: new SqliteWorkflowStore(database.db),
    agentRunner: agent,
    shellRunner: new ChildProcessShellRunner(),
    channelSender: sender,
  })
  await engine.start()
})
afterEach(async () => {
  await engine.stop()
  await database.cleanup()
  await rm(home, { recursive: true, force: true })
})

/** workflow_run as the tool will implement it: file_path or yaml_content, then wait up to wait_seconds. */
async function workflowRun(
  params: { file_path?: string; yaml_content?: string; wait_seconds?: number },
  deliverTo: string[] = [],
) {
  let workflow: string | LoadedWorkflow
  if (params.file_path !== undefined) workflow = (await directory.read(params.file_path)).workflow
  else workflow = params.yaml_content as string
  const { runId } = await engine.startRun(workflow, { deliverTo, originSession: 'telegram:123:456' })
  return toolResult(await engine.waitForRun(runId, { timeoutMs: (params.wait_seconds ?? 30) * 1000 }))
}

describe('seed 000: workflow agent tools', () => {
  it('Run a workflow from file path: parse, validate, execute, return run_id, status and step results', async () => {
    await directory.save('daily-report', REPORT)
    const result = await workflowRun({ file_path: join(directory.path, 'daily-report.flow.yaml') })
    expect(result).toEqual({
      run_id: expect.any(String),
      status: 'completed',
      steps: [
        { step_id: 'fetch', status: 'completed', result: 'result of fetch', error: null },
        { step_id: 'size', status: 'completed', result: '12M', error: null },
        { step_id: 'summary', status: 'completed', result: 'result of summary', error: null },
      ],
    })
    // Also by bare saved name.
    expect((await workflowRun({ file_path: 'daily-report' })).status).toBe('completed')
  })

  it('Run a workflow from inline YAML', async () => {
    const result = await workflowRun({
      yaml_content: 'name: inline\nsteps:\n  - { id: hello, run: "echo hello" }\n',
    })
    expect(result).toMatchObject({ status: 'completed', steps: [{ step_id: 'hello', result: 'hello' }] })
  })

  it('workflow_run waits at most wait_seconds and reports progress so far', async () => {
    const result = await workflowRun({
      yaml_content: 'name: slow\nsteps:\n  - { id: a, run: "sleep 0.5" }\n',
      wait_seconds: 0.05,
    })
    expect(result.status).toBe('running')
    expect((await engine.waitForRun(result.run_id)).status).toBe('completed')
  })

  it('Save a workflow definition: validated and written as <name>.flow.yaml', async () => {
    const saved = await directory.save('morning', REPORT)
    expect({ status: 'saved', name: saved.name, file_path: saved.filePath }).toEqual({
      status: 'saved',
      name: 'morning',
      file_path: join(directory.path, 'morning.flow.yaml'),
    })
    const invalid = await directory.save('broken', 'name: x\nsteps: []\n').catch((error: unknown) => error)
    expect(WorkflowError.is(invalid) && invalid.code).toBe('WORKFLOW_INVALID')
    expect(await directory.list()).toEqual(['morning'])
  })

  it('Cancel a running workflow: the run is cancelled and its status updated', async () => {
    const { runId } = await engine.startRun('name: long\nsteps:\n  - { id: wait, run: "sleep 5" }\n')
    await new Promise((resolve) => setTimeout(resolve, 100))
    const snapshot = await engine.cancelRun(runId)
    expect({ status: snapshot.status, run_id: snapshot.runId }).toEqual({
      status: 'cancelled',
      run_id: runId,
    })
    expect((await engine.getRun(runId))?.steps[0]?.status).toBe('cancelled')
  })

  it('workflow_status and workflow_list: a run with its steps; runs with saved names', async () => {
    await directory.save('daily-report', REPORT)
    const { run_id } = await workflowRun({ file_path: 'daily-report' })
    const status = await engine.getRun(run_id)
    expect(status).toMatchObject({
      runId: run_id,
      workflowName: 'daily-report',
      status: 'completed',
      totalSteps: 3,
      completedSteps: 3,
    })
    const runs = await engine.listRuns({ limit: 10, status: 'completed' })
    expect({ runs: runs.map((run) => run.runId), count: runs.length, saved: await directory.list() }).toEqual(
      {
        runs: [run_id],
        count: 1,
        saved: ['daily-report'],
      },
    )
  })

  it('Workflow prompt: deliver_to in YAML is optional and auto-detected from the caller', async () => {
    await workflowRun({ yaml_content: 'name: auto\nsteps:\n  - { id: a, run: "echo hi" }\n' }, [
      'telegram:123',
    ])
    expect(sender.to('telegram:123')[0]?.text).toContain('[Workflow] auto: completed')
  })
})

describe('seed 003: design', () => {
  it('Decision 5 (revised): steps run in parallel as soon as their dependencies finish', async () => {
    const started = Date.now()
    const result = await workflowRun({
      yaml_content:
        'name: parallel\nsteps:\n  - { id: a, run: "sleep 0.3" }\n  - { id: b, run: "sleep 0.3" }\n  - { id: c, run: "sleep 0.3" }\n',
    })
    expect(result.status).toBe('completed')
    expect(Date.now() - started).toBeLessThan(800)
  })

  it('Decision 6: {{step-id.result}} in a run step arrives as one quoted word', async () => {
    const result = await workflowRun({
      yaml_content:
        'name: t\nsteps:\n  - { id: a, run: "echo 41" }\n  - { id: b, run: "expr {{a.result}} + 1", depends_on: [a] }\n',
    })
    expect(result.steps[1]).toMatchObject({ status: 'completed', result: '42' })
  })

  it('Risk "workflow state consistency": each step state is saved, and a restart resumes from the last completed step', async () => {
    const { runId } = await engine.startRun(
      'name: restart\nsteps:\n  - { id: a, run: "echo A" }\n  - { id: b, run: "sleep 0.4; echo B", depends_on: [a] }\n',
    )
    await new Promise((resolve) => setTimeout(resolve, 200))
    await engine.stop()
    const next = new WorkflowEngine({
      store: new SqliteWorkflowStore(database.db),
      shellRunner: new ChildProcessShellRunner(),
    })
    try {
      expect((await next.start()).resumed).toEqual([runId])
      const snapshot = await next.waitForRun(runId)
      expect(toolResult(snapshot).steps.map((step) => [step.step_id, step.status, step.result])).toEqual([
        ['a', 'completed', 'A'],
        ['b', 'completed', 'B'],
      ])
    } finally {
      await next.stop()
    }
  })

  it('Risk "channel delivery failures": a failing channel is reported, and a failed run is still delivered', async () => {
    const flaky = new RecordingChannelSender({ failTargets: ['discord:1'] })
    const local = new WorkflowEngine({
      store: new SqliteWorkflowStore(database.db),
      shellRunner: new ChildProcessShellRunner(),
      channelSender: flaky,
    })
    await local.start()
    try {
      const failures: string[] = []
      local.on('delivery:error', (event) => failures.push(event.target))
      const { runId } = await local.startRun(
        'name: down\ndeliver_to: [discord:1, slack:C1]\nsteps:\n  - { id: a, run: "exit 1" }\n',
      )
      expect((await local.waitForRun(runId)).status).toBe('failed')
      expect(failures).toEqual(['discord:1'])
      expect(flaky.to('slack:C1')[0]?.text).toContain('[Workflow] down: failed')
    } finally {
      await local.stop()
    }
  })
})
