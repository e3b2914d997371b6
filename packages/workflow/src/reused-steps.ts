import type { NewWorkflowRun, ReusedStep } from './ports.js'

/** A new run's reused steps by id; throws for an id that is not one of its steps, or given twice. */
export function reusedById(run: NewWorkflowRun): Map<string, ReusedStep> {
  const byId = new Map<string, ReusedStep>()
  const ids = new Set(run.stepIds)
  for (const step of run.reusedSteps ?? []) {
    if (!ids.has(step.stepId) || byId.has(step.stepId))
      throw new Error(`Reused step ${step.stepId} is not a step of run ${run.id}, or is given twice`)
    byId.set(step.stepId, step)
  }
  return byId
}
