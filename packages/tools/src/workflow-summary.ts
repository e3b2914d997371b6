import { wholeLine } from './text.js'

/** A shell (`run`) step of a workflow, as an approver is shown it. */
export interface ShellStepText {
  /** The step id, when known. */
  readonly id?: string
  /** The command as written: templates and secret references unresolved. */
  readonly command: string
}

/**
 * ` — N shell steps:` followed by every command, whole, one line each (`[id] command`), or `''`
 * when there are none. Line breaks inside a command show as `↵`, so each line is one step.
 */
export function describeShellSteps(steps: readonly ShellStepText[]): string {
  if (steps.length === 0) return ''
  const lines = steps.map(
    (step) => `${step.id === undefined ? '' : `[${step.id}] `}${wholeLine(step.command)}`,
  )
  return ` — ${steps.length} shell step${steps.length === 1 ? '' : 's'}:\n${lines.join('\n')}`
}
