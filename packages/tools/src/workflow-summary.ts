import { quoted } from './text.js'

/** A shell (`run`) step of a workflow, as an approver is shown it. */
export interface ShellStepText {
  /** The step id, when known. */
  readonly id?: string
  /** The command as written: templates and secret references unresolved. */
  readonly command: string
}

/**
 * ` — N shell steps:` followed by every command, whole, one line each (`[id] ⟦command⟧`), or `''`
 * when there are none. Line breaks inside a command show as `↵`, so each line is one step.
 */
export function describeShellSteps(steps: readonly ShellStepText[]): string {
  if (steps.length === 0) return ''
  const lines = steps.map((step) => `${step.id === undefined ? '' : `[${step.id}] `}${quoted(step.command)}`)
  return ` — ${steps.length} shell step${steps.length === 1 ? '' : 's'}:\n${lines.join('\n')}`
}

/** An agent (`prompt`) step of a workflow, as an approver is shown it. */
export interface AgentStepText {
  readonly id: string
  /** The prompt as written: templates unresolved. */
  readonly prompt: string
}

/**
 * ` — N agent steps:` followed by every prompt, whole, one line each (`[id] ⟦prompt⟧`), or `''` when
 * there are none: what the model will be asked to do, unattended or not.
 */
export function describeAgentSteps(steps: readonly AgentStepText[]): string {
  if (steps.length === 0) return ''
  const lines = steps.map((step) => `[${step.id}] ${quoted(step.prompt)}`)
  return ` — ${steps.length} agent step${steps.length === 1 ? '' : 's'}:\n${lines.join('\n')}`
}

/**
 * ` — results go to: ⟦a⟧, ⟦b⟧; [step] ⟦c⟧` for a workflow's own delivery targets and its steps', or `''`
 * when it names none (its results then go where the call came from).
 */
export function describeDeliveries(
  workflowTargets: readonly string[] | undefined,
  stepTargets: readonly { readonly id: string; readonly targets: readonly string[] }[],
): string {
  const parts = [
    ...(workflowTargets === undefined || workflowTargets.length === 0
      ? []
      : [workflowTargets.map(quoted).join(', ')]),
    ...stepTargets
      .filter((step) => step.targets.length > 0)
      .map((step) => `[${step.id}] ${step.targets.map(quoted).join(', ')}`),
  ]
  return parts.length === 0 ? '' : ` — results go to: ${parts.join('; ')}`
}
