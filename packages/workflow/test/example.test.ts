import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.cleanup()
})

it('examples/workflows/daily-report.flow.yaml validates and runs with shell steps only', async () => {
  harness = await createHarness({ agentRunner: undefined })
  const source = await readFile(
    join(import.meta.dirname, '..', '..', '..', 'examples', 'workflows', 'daily-report.flow.yaml'),
    'utf8',
  )
  const { runId } = await harness.engine.startRun(source)
  const run = await harness.engine.waitForRun(runId, { timeoutMs: 30_000 })
  expect(run.status).toBe('completed')
  expect(run.steps.find((step) => step.stepId === 'summary')?.result).toMatch(
    /^Host: .+\nLoad: .+\nDisk: .+ used$/,
  )
  expect(harness.sender.to('log')[0]?.text).toContain('[Workflow] daily-report › summary: completed')
})
