import type { NewWorkflowRun } from '../ports.js'

let sequence = 0

/** A valid new run for store tests; override any field. */
export function createTestRun(overrides: Partial<NewWorkflowRun> = {}): NewWorkflowRun {
  sequence += 1
  return {
    id: `run-${sequence}`,
    workflowName: 'contract',
    definition: 'name: contract\nsteps:\n  - { id: a, run: "true" }\n',
    status: 'running',
    deliverTo: ['telegram:1'],
    originSession: 'telegram:1:2',
    owner: 'owner-a',
    startedAt: 1_000 + sequence,
    stepIds: ['a', 'b', 'c'],
    ...overrides,
  }
}
