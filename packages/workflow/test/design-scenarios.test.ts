// Seed 003 (design): the decisions and risks it names, as behaviour of the engine itself.
// The workflow_* tool scenarios of seed 000 run through the tools, in
// packages/tools/src/workflow-seed-scenarios.test.ts.
import { writeFile } from 'node:fs/promises'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { WorkflowEngine } from '../src/index.js'
import { SqliteWorkflowStore } from '../src/sqlite/index.js'
import { ChildProcessShellRunner, RecordingChannelSender } from '../src/testing/index.js'
import { createTestDatabase, type TestDatabase } from './__fixtures__/database.js'

let database: TestDatabase
let engine: WorkflowEngine

beforeEach(async () => {
  database = await createTestDatabase()
  engine = new WorkflowEngine({
    store: new SqliteWorkflowStore(database.db),
    shellRunner: new ChildProcessShellRunner(),
  })
  await engine.start()
})
afterEach(async () => {
  await engine.stop()
  await database.cleanup()
})

/** Starts a run and waits for its end. */
async function runToEnd(yaml: string) {
  const { runId } = await engine.startRun(yaml)
  return engine.waitForRun(runId, { timeoutMs: 30_000 })
}

describe('WorkflowEngine: the seed 003 design decisions and risks', () => {
  it('Decision 5 (revised): independent steps run at the same time, not one after another', async () => {
    // Each step marks that it started, then waits until all three have: run one after another,
    // the first would wait for ever (and the run not complete in time), however fast the machine.
    const dir = database.directory
    const step = (id: string) =>
      `  - { id: ${id}, run: "touch '${dir}/started-${id}'; while [ $(ls '${dir}' | grep -c '^started-') -lt 3 ]; do sleep 0.02; done" }`
    const run = await runToEnd(`name: parallel\nsteps:\n${['a', 'b', 'c'].map(step).join('\n')}\n`)
    expect(run.status).toBe('completed')
    // All three ran at once: each started before any other ended.
    const starts = run.steps.map((step) => step.startedAt as number)
    const ends = run.steps.map((step) => step.completedAt as number)
    expect(Math.max(...starts)).toBeLessThan(Math.min(...ends))
  })

  it('Decision 6: {{step-id.result}} in a run step arrives as one quoted word', async () => {
    const run = await runToEnd(
      'name: t\nsteps:\n  - { id: a, run: "echo 41" }\n  - { id: b, run: "expr {{a.result}} + 1", depends_on: [a] }\n',
    )
    expect(run.steps[1]).toMatchObject({ status: 'completed', result: '42', input: "expr '41' + 1" })
  })

  it('Risk "workflow state consistency": each step state is saved, and a restart resumes from the last completed step', async () => {
    // b runs until the gate opens, after the stop: the stop always finds a done and b running.
    const gate = `${database.directory}/restart-gate`
    const bStarted = new Promise<void>((resolve) => {
      const off = engine.on('step:start', (payload) => {
        if (payload.stepId !== 'b') return
        off()
        resolve()
      })
    })
    const { runId } = await engine.startRun(
      `name: restart\nsteps:\n  - { id: a, run: "echo A" }\n  - { id: b, run: "while [ ! -f '${gate}' ]; do sleep 0.02; done; echo B", depends_on: [a] }\n`,
    )
    await bStarted
    await engine.stop()
    await writeFile(gate, '')
    const next = new WorkflowEngine({
      store: new SqliteWorkflowStore(database.db),
      shellRunner: new ChildProcessShellRunner(),
    })
    try {
      expect((await next.start()).resumed).toEqual([runId])
      const snapshot = await next.waitForRun(runId)
      expect(snapshot.steps.map((step) => [step.stepId, step.status, step.result])).toEqual([
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
