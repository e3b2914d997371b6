import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { StepSnapshot } from '../src/model.js'
import { createHarness, type Harness } from './__fixtures__/harness.js'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
})

/**
 * a → b → c, a → d. Each step appends a line to its own side-effect file (`<step>.log`), so the
 * files count how often each step really ran. c fails unless the file `c.ok` exists; its result
 * reads b's (a template), so a rerun of c proves it sees b's reused result.
 */
const FLOW = `name: rerun-flow
steps:
  - { id: a, run: "echo ran >> a.log && echo alpha" }
  - { id: b, run: "echo ran >> b.log && echo beta-{{a.result}}", depends_on: [a] }
  - id: c
    depends_on: [b]
    run: "echo ran >> c.log && test -f c.ok && echo gamma-{{b.result}}"
  - { id: d, run: "echo ran >> d.log && echo delta", depends_on: [a] }
`

/** How many times each step ran, from its side-effect file (0 when it never ran). */
async function runs(h: Harness): Promise<Record<string, number>> {
  const counts: Record<string, number> = {}
  for (const step of ['a', 'b', 'c', 'd']) {
    const text = await readFile(join(h.directory, `${step}.log`), 'utf8').catch(() => '')
    counts[step] = text.split('\n').filter((line) => line === 'ran').length
  }
  return counts
}

async function setup(): Promise<Harness> {
  harness = await createHarness()
  return harness
}

function view(steps: readonly StepSnapshot[]) {
  return steps.map((step) => [step.stepId, step.status, step.result, step.reusedFrom, step.attempt])
}

/** A run of FLOW that failed at c: a, b and d completed, each file written once. */
async function failedRun(h: Harness): Promise<string> {
  const { runId } = await h.engine.startRun(FLOW)
  const failed = await h.engine.waitForRun(runId)
  expect(failed.status).toBe('failed')
  expect(failed.steps.map((step) => [step.stepId, step.status])).toEqual([
    ['a', 'completed'],
    ['b', 'completed'],
    ['c', 'failed'],
    ['d', 'completed'],
  ])
  expect(await runs(h)).toEqual({ a: 1, b: 1, c: 1, d: 1 })
  return runId
}

describe('WorkflowEngine.rerunRun (real SQLite, real shell steps)', () => {
  it('reruns from the failed step by default: a, b and d reused (their files written once), c runs again with b’s result', async () => {
    const h = await setup()
    const original = await failedRun(h)
    await writeFile(join(h.directory, 'c.ok'), '')

    const plan = await h.engine.planRerun(original)
    expect([plan.fromSteps, plan.rerunSteps, plan.reusedSteps]).toEqual([['c'], ['c'], ['a', 'b', 'd']])
    const { runId } = await h.engine.rerunRun(original)
    expect(runId).not.toBe(original)
    const rerun = await h.engine.waitForRun(runId)
    expect(rerun).toMatchObject({
      status: 'completed',
      rerunOf: original,
      totalSteps: 4,
      completedSteps: 4,
      error: null,
    })
    expect(view(rerun.steps)).toEqual([
      ['a', 'completed', 'alpha', original, 0],
      ['b', 'completed', 'beta-alpha', original, 0],
      ['c', 'completed', 'gamma-beta-alpha', null, 1],
      ['d', 'completed', 'delta', original, 0],
    ])
    expect(rerun.steps[2]?.input).toBe("echo ran >> c.log && test -f c.ok && echo gamma-'beta-alpha'")
    // The side effects: only c ran again.
    expect(await runs(h)).toEqual({ a: 1, b: 1, c: 2, d: 1 })
    // The original run is left as it was.
    const before = await h.engine.getRun(original)
    expect(before).toMatchObject({ status: 'failed', rerunOf: null })
    expect(before?.steps.map((step) => step.reusedFrom)).toEqual([null, null, null, null])
    // Events: the rerun started and ended; only c started a step.
    const started = h.events
      .filter((event) => event.name === 'step:start')
      .map((event) => event.payload as { runId: string; stepId: string })
      .filter((payload) => payload.runId === runId)
    expect(started.map((payload) => payload.stepId)).toEqual(['c'])
  })

  it('with fromStep b reruns b and c, not a or d; a rerun of a rerun points at the run that produced each result', async () => {
    const h = await setup()
    const original = await failedRun(h)
    await writeFile(join(h.directory, 'c.ok'), '')

    const { runId, plan } = await h.engine.rerunRun(original, { fromStep: 'b' })
    expect([plan.fromSteps, plan.rerunSteps, plan.reusedSteps]).toEqual([['b'], ['b', 'c'], ['a', 'd']])
    const rerun = await h.engine.waitForRun(runId)
    expect(rerun.status).toBe('completed')
    expect(view(rerun.steps)).toEqual([
      ['a', 'completed', 'alpha', original, 0],
      ['b', 'completed', 'beta-alpha', null, 1],
      ['c', 'completed', 'gamma-beta-alpha', null, 1],
      ['d', 'completed', 'delta', original, 0],
    ])
    expect(await runs(h)).toEqual({ a: 1, b: 2, c: 2, d: 1 })

    // Rerunning the completed rerun from d: a still comes from the original, b and c from the rerun.
    const again = await h.engine.rerunRun(runId, { fromStep: 'd' })
    const third = await h.engine.waitForRun(again.runId)
    expect(third).toMatchObject({ status: 'completed', rerunOf: runId })
    expect(view(third.steps)).toEqual([
      ['a', 'completed', 'alpha', original, 0],
      ['b', 'completed', 'beta-alpha', runId, 0],
      ['c', 'completed', 'gamma-beta-alpha', runId, 0],
      ['d', 'completed', 'delta', null, 1],
    ])
    expect(await runs(h)).toEqual({ a: 1, b: 2, c: 2, d: 2 })
  })

  it('a rerun that fails again is a failed run like any other; its failed step is the next default', async () => {
    const h = await setup()
    const original = await failedRun(h)
    const { runId } = await h.engine.rerunRun(original)
    const rerun = await h.engine.waitForRun(runId)
    expect(rerun.status).toBe('failed')
    expect(rerun.error).toContain('Step "c" failed')
    expect(rerun.completedSteps).toBe(3)
    expect(await runs(h)).toEqual({ a: 1, b: 1, c: 2, d: 1 })
    expect((await h.engine.planRerun(runId)).fromSteps).toEqual(['c'])
  })

  it('refuses with typed errors: an unknown step, a running run, an unknown run, nothing to rerun', async () => {
    const h = await setup()
    const original = await failedRun(h)
    await expect(h.engine.rerunRun(original, { fromStep: 'zz' })).rejects.toMatchObject({
      name: 'WorkflowError',
      code: 'WORKFLOW_STEP_NOT_FOUND',
      data: { runId: original, stepId: 'zz', steps: ['a', 'b', 'c', 'd'] },
    })
    await expect(h.engine.rerunRun('no-such-run')).rejects.toMatchObject({ code: 'WORKFLOW_RUN_NOT_FOUND' })

    await writeFile(join(h.directory, 'gate'), '')
    const slow = await h.engine.startRun(`name: slow
steps:
  - { id: wait, run: "while test -f gate; do sleep 0.05; done" }
`)
    await expect(h.engine.rerunRun(slow.runId)).rejects.toMatchObject({
      code: 'WORKFLOW_RUN_ACTIVE',
      data: { runId: slow.runId, status: 'running' },
    })
    await writeFile(join(h.directory, 'c.ok'), '')
    const done = await h.engine.waitForRun((await h.engine.rerunRun(original)).runId)
    expect(done.status).toBe('completed')
    await expect(h.engine.rerunRun(done.runId)).rejects.toMatchObject({ code: 'WORKFLOW_NOTHING_TO_RERUN' })
    // Nothing was stored for any refused rerun: the two runs of FLOW and the slow one.
    expect((await h.engine.listRuns({ limit: 50 })).length).toBe(3)
    await h.engine.cancelRun(slow.runId)
  })
})
