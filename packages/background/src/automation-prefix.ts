/**
 * The default text put before every background task's prompt. It tells the agent that it runs
 * unattended, so it must not wait for answers or approvals. Override it with the manager's
 * `automationPrefix` option (an empty string sends the prompt unchanged).
 */
export const AUTOMATION_PREFIX =
  '[Automated background task] You are running unattended as a background task. ' +
  'No one is watching this conversation: do not ask questions or wait for confirmation. ' +
  'Work on your own until the task is complete, then reply with the final result only; ' +
  'it will be sent to the user who asked for it.'

/** Joins the automation prefix and a prompt the way the manager sends it to the runner. */
export function applyAutomationPrefix(prefix: string, prompt: string): string {
  return prefix === '' ? prompt : `${prefix}\n\n${prompt}`
}
