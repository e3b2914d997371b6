import { oneLine, wholeLine } from './text.js'
import type { ToolSafety } from './tool.js'

/** Which calls need a human's approval: every call, moderate and up, dangerous only, or none. */
export type ApprovalPolicy = 'all' | 'moderate' | 'dangerous' | 'none'

/** What an approver is shown. */
export interface ApprovalRequest {
  readonly toolName: string
  /** One human line (see {@link buildApprovalSummary}); secrets stay as unresolved tokens. */
  readonly summary: string
  readonly safety: ToolSafety
  readonly params: unknown
  readonly sessionKey?: string
}

/**
 * Asks a human. Implemented by the server's channels (Telegram inline buttons, …) or by an MCP
 * host. `true` approves; `false`, `undefined`, a thrown error or no answer in time all deny.
 */
export interface ApprovalGate {
  request(request: ApprovalRequest, options: { readonly signal: AbortSignal }): Promise<boolean | undefined>
}

/** True when a call of this safety needs approval under `policy`. */
export function requiresApproval(policy: ApprovalPolicy, safety: ToolSafety): boolean {
  switch (policy) {
    case 'all':
      return true
    case 'moderate':
      return safety !== 'safe'
    case 'dangerous':
      return safety === 'dangerous'
    case 'none':
      return false
  }
}

type Params = Readonly<Record<string, unknown>>

/** The length of a YAML parameter, which the generic lines show instead of reading it. */
function yamlLength(yaml: unknown): number {
  return typeof yaml === 'string' ? yaml.length : 0
}

/** The `manage_cron_jobs` fields an update may change, besides `config`, in the order shown. */
const JOB_FIELDS = ['name', 'type', 'scheduleType', 'scheduleValue', 'enabled'] as const

/**
 * What a cron job's `config` persists, for an approval line: model and cwd, then the command or
 * prompt whole (head and tail past 2000 characters), since it runs later with nobody watching
 * (SECURITY.md CRON-5).
 */
function configDetails(config: Params): string[] {
  return [
    ...(config.model === undefined ? [] : [`model: ${oneLine(config.model, 128)}`]),
    ...(config.cwd === undefined ? [] : [`cwd: ${wholeLine(config.cwd)}`]),
    ...(config.command === undefined ? [] : [`command: ${wholeLine(config.command)}`]),
    ...(config.prompt === undefined ? [] : [`prompt: "${wholeLine(config.prompt)}"`]),
  ]
}

const SUMMARIES: Readonly<Record<string, (params: Params) => string>> = {
  cron_add: (p) =>
    `Create cron job: ${oneLine(p.name, 64)} (${oneLine(p.schedule_type, 16)}=${oneLine(p.schedule, 80)})${p.prompt === undefined ? '' : ` — prompt: "${wholeLine(p.prompt)}"`}`,
  cron_pause: (p) => `Pause cron job: ${oneLine(p.id, 64)}`,
  cron_resume: (p) => `Resume cron job: ${oneLine(p.id, 64)}`,
  cron_remove: (p) => `Remove cron job and its history: ${oneLine(p.id, 64)}`,
  bg_submit: (p) => `Submit background task: "${oneLine(p.prompt, 160)}"`,
  bg_cancel: (p) => `Cancel background task: ${oneLine(p.task_id, 64)}`,
  // The YAML is not read here: the name and the commands come from the engine's parse, in the
  // workflow tools' own approval lines (Tool.approvalSummary), which invokeTool shows.
  workflow_run: (p) =>
    p.file_path !== undefined
      ? `Run workflow: ${oneLine(p.file_path, 200)}`
      : `Run inline workflow (${yamlLength(p.yaml_content)} characters of YAML)`,
  workflow_cancel: (p) => `Cancel workflow run: ${oneLine(p.run_id, 64)}`,
  workflow_save: (p) =>
    `Save workflow: ${oneLine(p.name, 64)}${p.overwrite === true ? ' (overwrite)' : ''} (${yamlLength(p.yaml_content)} characters of YAML)`,
  manage_cron_jobs: (p) => {
    const config = (typeof p.config === 'object' && p.config !== null ? p.config : {}) as Params
    const job = oneLine(p.id ?? p.name, 64)
    switch (p.action) {
      case 'create': {
        const details = configDetails(config)
        return `Create cron job: ${oneLine(p.name, 64)} (${oneLine(p.scheduleType, 16)}=${oneLine(p.scheduleValue, 80)})${
          p.enabled === false ? ' disabled' : ''
        }${details.length === 0 ? '' : ` — ${details.join('; ')}`}`
      }
      case 'update': {
        const changes = [
          ...JOB_FIELDS.filter((field) => p[field] !== undefined).map(
            (field) => `${field}: ${oneLine(p[field], 80)}`,
          ),
          ...configDetails(config),
        ]
        return `Update cron job: ${job}${changes.length === 0 ? ' (no changes)' : ` — ${changes.join('; ')}`}`
      }
      case 'delete':
        return `Delete cron job: ${job}`
      case 'trigger':
        return `Trigger cron job now: ${job}`
      default:
        return `Cron jobs: ${oneLine(p.action, 16)}`
    }
  },
  exec: (p) => `Execute: ${oneLine(p.command, 200)}`,
  exec_bg: (p) => `Execute in background: ${oneLine(p.command, 200)}`,
  exec_write: (p) => `Send input to process ${oneLine(p.id, 64)}: ${oneLine(p.input, 80)}`,
  exec_stop: (p) => `Stop process ${oneLine(p.id, 64)}`,
}

/**
 * One human line describing a call, for an approval prompt: `Create cron job: backup (cron=0 3
 * * * *)`, `Run workflow: flows/report.flow.yaml`, `Execute: <command, first 200 chars>`. Secret
 * references appear as written (unresolved); cron prompts and commands are shown whole up to 2000
 * characters. It reads only the parameters: for `workflow_run` and `workflow_save` it does not
 * read the YAML or the file, so inline YAML shows as `Run inline workflow (N characters of YAML)`.
 * The workflow's name and shell commands come from the workflow tools' own approval lines
 * (`Tool.approvalSummary`, built from the engine's parse or the file), which `invokeTool` shows:
 * call tools through `invokeTool` to get them.
 */
export function buildApprovalSummary(toolName: string, params: unknown): string {
  const summary = SUMMARIES[toolName]
  const record = (typeof params === 'object' && params !== null ? params : {}) as Params
  return summary === undefined ? `Call ${toolName}` : summary(record)
}
