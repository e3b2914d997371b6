import { randomUUID } from 'node:crypto'
import type { NewWorkflowRun } from '../ports.js'

/**
 * A valid new run for store tests, with a fresh random id and a definition whose steps are the
 * run's `stepIds`; override any field (a `stepIds` override keeps the default definition).
 */
export function createTestRun(overrides: Partial<NewWorkflowRun> = {}): NewWorkflowRun {
  return {
    id: `run-${randomUUID()}`,
    workflowName: 'contract',
    definition:
      'name: contract\nsteps:\n  - { id: a, run: "true" }\n  - { id: b, run: "true", depends_on: [a] }\n  - { id: c, run: "true", depends_on: [b] }\n',
    status: 'running',
    deliverTo: ['telegram:1'],
    originSession: 'telegram:1:2',
    owner: 'owner-a',
    startedAt: 1_000,
    leaseExpiresAt: 31_000,
    stepIds: ['a', 'b', 'c'],
    ...overrides,
  }
}
