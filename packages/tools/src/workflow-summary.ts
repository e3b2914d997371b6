import { oneLine } from './text.js'

/** A shell (`run`) step of a workflow, as an approver is shown it. */
export interface ShellStepText {
  /** The step id, when known. */
  readonly id?: string
  /** The command as written: templates and secret references unresolved. */
  readonly command: string
}

/** How many commands an approval line shows, and how much of each. */
const SHOWN_COMMANDS = 3
const COMMAND_CHARACTERS = 100

/** ` — shell steps: [id] command; …; and N more`, or `''` when there are none. */
export function describeShellSteps(steps: readonly ShellStepText[]): string {
  if (steps.length === 0) return ''
  const shown = steps
    .slice(0, SHOWN_COMMANDS)
    .map(
      (step) => `${step.id === undefined ? '' : `[${step.id}] `}${oneLine(step.command, COMMAND_CHARACTERS)}`,
    )
  const more = steps.length > SHOWN_COMMANDS ? `; and ${steps.length - SHOWN_COMMANDS} more` : ''
  return ` — shell steps: ${shown.join('; ')}${more}`
}
