import { type ChildProcess, spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { SqliteWorkflowStore } from '../src/sqlite/index.js'
import { ChildProcessShellRunner } from '../src/testing/child-process-shell-runner.js'
import { WorkflowEngine } from '../src/workflow-engine.js'
import { ensureBuilt } from './__fixtures__/build.js'
import { createTestDatabase, type TestDatabase } from './__fixtures__/database.js'

// Each step appends its id to runs.log when it starts, so the log counts executions. s5 and s6 wait
// for a gate the test opens after the kill: the process dies while they run, however slow it is.
const STEPS = ['s1', 's2', 's3', 's4', 's5', 's6', 's7', 's8']
const WORKFLOW = `name: crashy
max_parallel: 2
steps:
  - { id: s1, run: "echo s1 >> runs.log; sleep 0.15; echo one" }
  - { id: s2, run: "echo s2 >> runs.log; sleep 0.15; echo two", depends_on: [s1] }
  - { id: s3, run: "echo s3 >> runs.log; sleep 0.15; echo three", depends_on: [s1] }
  - { id: s4, run: "echo s4 >> runs.log; sleep 0.15; echo {{s2.result}}-{{s3.result}}", depends_on: [s2, s3] }
  - { id: s5, run: "echo s5 >> runs.log; while [ ! -f gate ]; do sleep 0.02; done; echo five", depends_on: [s4] }
  - { id: s6, run: "echo s6 >> runs.log; while [ ! -f gate ]; do sleep 0.02; done; echo six", depends_on: [s4] }
  - { id: s7, run: "echo s7 >> runs.log; sleep 0.15; echo seven", depends_on: [s5, s6] }
  - { id: s8, run: "echo s8 >> runs.log; echo {{s1.result}}+{{s7.result}}", depends_on: [s7] }
`

let database: TestDatabase
let child: ChildProcess | undefined

beforeAll(() => ensureBuilt(), 120_000)
afterAll(async () => {
  child?.kill('SIGKILL')
  await database?.cleanup()
})

it('SIGKILL mid-run: a new engine on the same file keeps completed steps, finishes the rest, and runs nothing completed twice', async () => {
  database = await createTestDatabase()
  const workflowPath = join(database.directory, 'crashy.flow.yaml')
  await writeFile(workflowPath, WORKFLOW)
  child = spawn(
    process.execPath,
    [
      join(import.meta.dirname, 'fixtures', 'crash-child.mjs'),
      database.path,
      workflowPath,
      database.directory,
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const { runId } = await waitFor(
    () =>
      output.includes('\n') ? (JSON.parse(output.split('\n')[0] as string) as { runId: string }) : undefined,
    { intervalMs: 20, what: 'the child to print its run id' },
  )

  const store = new SqliteWorkflowStore(database.db)
  // Wait until s4 has completed (4 of 8 steps), then kill the process while s5/s6 run.
  await waitFor(async () => ((await store.getRun(runId))?.completedSteps ?? 0) >= 4, {
    intervalMs: 20,
    what: 's4 to complete',
  })
  const exited = new Promise((resolve) => child?.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
  const atCrash = await store.listSteps(runId)
  const completedAtCrash = atCrash.filter((step) => step.status === 'completed')
  expect(completedAtCrash.map((step) => step.stepId)).toEqual(
    expect.arrayContaining(['s1', 's2', 's3', 's4']),
  )
  expect(completedAtCrash.length).toBeLessThan(STEPS.length)
  expect((await store.getRun(runId))?.status).toBe('running')
  await writeFile(join(database.directory, 'gate'), '')

  const shell = new ChildProcessShellRunner({ cwd: database.directory })
  const engine = new WorkflowEngine({ store, shellRunner: shell, leaseMs: 1_500 })
  try {
    await engine.start()
    // The dead process's lease runs out within leaseMs; the new engine takes the run over then.
    const snapshot = await engine.waitForRun(runId, { timeoutMs: 15_000 })
    expect(snapshot.status).toBe('completed')
    expect(snapshot.completedSteps).toBe(STEPS.length)
    for (const before of completedAtCrash) {
      const now = snapshot.steps.find((step) => step.stepId === before.stepId)
      expect(now).toMatchObject({
        status: 'completed',
        result: before.result,
        attempt: before.attempt,
        completedAt: before.completedAt,
      })
    }
    expect(snapshot.steps.find((step) => step.stepId === 's8')?.result).toBe('one+seven')
    expect(snapshot.steps.find((step) => step.stepId === 's4')?.result).toBe('two-three')

    const log = (await readFile(join(database.directory, 'runs.log'), 'utf8')).split('\n').filter(Boolean)
    const count = (id: string) => log.filter((line) => line === id).length
    for (const step of completedAtCrash) expect(count(step.stepId), step.stepId).toBe(1)
    for (const id of STEPS) expect(count(id), id).toBeGreaterThanOrEqual(1)
    // The new engine ran exactly the steps that had not completed.
    const notCompleted = STEPS.filter((id) => !completedAtCrash.some((step) => step.stepId === id))
    expect(shell.calls.map((call) => call.stepId).sort()).toEqual(notCompleted.sort())
  } finally {
    await engine.stop()
  }
}, 60_000)
