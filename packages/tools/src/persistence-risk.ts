const SECRET_REFERENCE = /\{\{(?:secret|decrypt):[^}]+\}\}/
const SHELL_STEP = /^[ \t-]*["']?run["']?[ \t]*:/m

/** True when text names a secret reference (`{{secret:…}}` / `{{decrypt:…}}`). */
export function mentionsSecret(...texts: ReadonlyArray<unknown>): boolean {
  return texts.some((text) => typeof text === 'string' && SECRET_REFERENCE.test(text))
}

/** True when workflow YAML declares a shell (`run:`) step. A heuristic that errs towards "yes". */
export function declaresShellStep(yaml: unknown): boolean {
  return typeof yaml === 'string' && SHELL_STEP.test(yaml)
}
