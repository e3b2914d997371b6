/** Which automation features the host has enabled. */
export interface AutomationFeatures {
  readonly cron?: boolean
  readonly background?: boolean
  readonly workflow?: boolean
}

const SUBCOMMANDS = [
  'cron',
  'bg',
  'background',
  'workflow',
  'graph',
  'memory',
  'p2p',
  'security',
  'payment',
  'config',
  'doctor',
  'settings',
  'serve',
  'onboard',
  'agent',
]

/**
 * The prohibition on running the `lango` CLI through exec (seed 000): every subcommand, why it
 * fails (passphrase at bootstrap), and what to do instead.
 */
export const LANGO_EXEC_PROHIBITION = [
  '### Never run the lango CLI through exec',
  '',
  `NEVER use \`exec\` or \`exec_bg\` to run ANY \`lango\` CLI command — this covers every subcommand, including ${SUBCOMMANDS.map((name) => `\`lango ${name}\``).join(', ')}, and any other or future one, however it is wrapped (a path, \`sudo\`, \`env\`, \`sh -c\`, a pipe).`,
  'Spawning a new lango process requires passphrase authentication during bootstrap; a subprocess is non-interactive and has no terminal to ask for it, so the command hangs or fails.',
  'Use the built-in tools instead: cron_*, bg_*, workflow_*, and, where your host gives you them, its graph, memory, p2p, security and payment tools (use only tools you actually have). When no built-in tool does what is needed, tell the user and ask them to run the command directly in their own terminal.',
].join('\n')

const CRON_PART = [
  '### Scheduled jobs (cron)',
  '',
  'You can schedule work with cron_add (schedule_type: cron, every or at), and manage it with cron_list, cron_pause, cron_resume, cron_remove and cron_history.',
  "deliver_to is optional: when you omit it, results are delivered to the current session's channel, which is auto-detected.",
  "Confirm the next run times from cron_add's result with the user.",
].join('\n')

const BACKGROUND_PART = [
  '### Background tasks',
  '',
  'Long-running requests can run as background tasks: bg_submit returns a task id at once; check with bg_status or bg_list, read the answer with bg_result, stop with bg_cancel.',
  "channel is optional: when you omit it, the completion notice goes to the current session's channel, which is auto-detected.",
].join('\n')

const WORKFLOW_PART = [
  '### Workflows',
  '',
  "Multi-step work can be written as a YAML workflow (steps with id, prompt or run, depends_on; {{step-id.result}} inserts an earlier step's result) and run with workflow_run, saved with workflow_save, and followed with workflow_status, workflow_list and workflow_cancel; workflow_rerun reruns a failed run from the step that failed.",
  "deliver_to in the YAML is optional: when you omit it, results are delivered to the current session's channel, which is auto-detected.",
].join('\n')

/**
 * The automation part of the system prompt: one part per enabled feature, each noting that the
 * delivery target is auto-detected, plus the exec prohibition. `''` when nothing is enabled.
 * @example
 * const section = buildAutomationPromptSection({ cron: true, workflow: true })
 */
export function buildAutomationPromptSection(features: AutomationFeatures): string {
  const parts: string[] = []
  if (features.cron === true) parts.push(CRON_PART)
  if (features.background === true) parts.push(BACKGROUND_PART)
  if (features.workflow === true) parts.push(WORKFLOW_PART)
  if (parts.length === 0) return ''
  return ['## Automation', '', ...parts.flatMap((part) => [part, '']), LANGO_EXEC_PROHIBITION, ''].join('\n')
}
