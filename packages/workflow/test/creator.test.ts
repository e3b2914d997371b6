import { afterEach, describe, expect, it } from 'vitest'
import { createTestRun } from '../src/testing/create-test-run.js'
import { createHarness, type Harness } from './__fixtures__/harness.js'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
})

const SOURCE = 'name: spender\nsteps:\n  - { id: a, prompt: "Summarise the news" }\n'

// A host bounds each creator's daily spend by `AgentRunRequest.creator`: a run must pass on who
// started it to every prompt step, across a resume and a rerun, or its steps spend on no one's budget.
describe("a run's creator: who its spend counts against", () => {
  it('goes with each prompt step, is stored with the run, and is kept by a rerun unless it names its own', async () => {
    harness = await createHarness()
    const h = harness
    const { runId } = await h.engine.startRun(SOURCE, {
      originSession: 'cron:watch:r1',
      creator: 'telegram:1:7',
    })
    expect((await h.engine.waitForRun(runId)).status).toBe('completed')
    expect(h.agent.calls.map((call) => call.creator)).toEqual(['telegram:1:7'])
    expect((await h.store.getRun(runId))?.creator).toBe('telegram:1:7')

    const kept = await h.engine.rerunRun(runId, { fromStep: 'a' })
    await h.engine.waitForRun(kept.runId)
    const named = await h.engine.rerunRun(runId, { fromStep: 'a', creator: 'slack:C1:U2' })
    await h.engine.waitForRun(named.runId)
    expect(h.agent.calls.map((call) => call.creator)).toEqual(['telegram:1:7', 'telegram:1:7', 'slack:C1:U2'])

    const { runId: hosted } = await h.engine.startRun(SOURCE)
    await h.engine.waitForRun(hosted)
    expect(h.agent.calls.at(-1)).not.toHaveProperty('creator')
    expect((await h.store.getRun(hosted))?.creator).toBeNull()

    await expect(h.engine.startRun(SOURCE, { creator: 'x'.repeat(257) })).rejects.toThrow(
      /creator must be a string of at most 256 characters/,
    )
  })

  it('a run another engine resumes keeps its creator', async () => {
    harness = await createHarness()
    const h = harness
    const run = createTestRun({
      workflowName: 'spender',
      definition: SOURCE,
      stepIds: ['a'],
      owner: 'a-dead-engine',
      startedAt: Date.now(),
      leaseExpiresAt: 1,
      creator: 'telegram:1:7',
    })
    await h.store.insertRun(run)
    const resumer = h.engineWith()
    expect((await resumer.start()).resumed).toEqual([run.id])
    expect((await resumer.waitForRun(run.id)).status).toBe('completed')
    expect(h.agent.calls.map((call) => [call.runId, call.creator])).toEqual([[run.id, 'telegram:1:7']])
  })
})
