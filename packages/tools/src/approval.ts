import type { ToolCallOutcome } from './invoke.js'
import { quoted, wholeLine, word } from './text.js'
import type { ToolSafety } from './tool.js'

/** Which calls need a human's approval: every call, moderate and up, dangerous only, or none. */
export type ApprovalPolicy = 'all' | 'moderate' | 'dangerous' | 'none'

/** What an approver is shown. */
export interface ApprovalRequest {
  readonly toolName: string
  /**
   * What the call will do, whole (see {@link buildApprovalSummary}): a headline, then, for a
   * workflow, one line per command. Every command that will run is in it, never cut; secrets stay
   * as unresolved tokens. An approver must be shown all of it before it can approve.
   */
  readonly summary: string
  readonly safety: ToolSafety
  readonly params: unknown
  readonly sessionKey?: string
}

/**
 * Asks a human. Implemented by the server's channels (Telegram inline buttons, …) or by an MCP
 * host. `true` approves; `false`, `undefined`, a thrown error or no answer in time all deny. A gate
 * that cannot ask anyone (too many requests waiting, a request too long to show) rejects with a
 * `ToolError` `TOOL_DENIED` whose message says why: the call is refused with that reason instead
 * of "not approved", which would claim a person said no.
 */
export interface ApprovalGate {
  request(request: ApprovalRequest, options: { readonly signal: AbortSignal }): Promise<boolean | undefined>
  /**
   * Optional: told what became of a call once its approval was answered (`invokeTool` calls it with
   * the same `request` object it asked with): the call's outcome when approved and run, else its
   * `TOOL_DENIED` or `TOOL_CANCELED`. A host records it beside its approval, so the approval history
   * says how the call ended. Not called when the gate could ask nobody; what it throws is ignored.
   */
  settled?(request: ApprovalRequest, outcome: ToolCallOutcome): void
}

/** The approval policies, most asking first. */
export const APPROVAL_POLICIES: readonly ApprovalPolicy[] = ['all', 'moderate', 'dangerous', 'none']

/**
 * True when a call of this safety needs approval under `policy`. A value that is no policy (a
 * JavaScript caller's `'strict'`, `'Dangerous'`) needs approval for every call: never fails open.
 */
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
    default:
      return true
  }
}

type Params = Readonly<Record<string, unknown>>

/** The length of a YAML parameter, which the generic lines show instead of reading it. */
function yamlLength(yaml: unknown): number {
  return typeof yaml === 'string' ? yaml.length : 0
}

/** The `manage_cron_jobs` fields an update may change, besides `config`, in the order shown. */
const JOB_FIELDS = ['name', 'type', 'scheduleType', 'scheduleValue', 'enabled'] as const

/** Of {@link JOB_FIELDS}, those the caller writes freely (shown {@link quoted}); the others are choices. */
const FREE_TEXT_FIELDS: ReadonlySet<string> = new Set(['name', 'scheduleValue'])

/**
 * A job's dead-man ping URL for an approval line, whole: every run of the job will call it (an
 * outbound request nobody watches). `''` removes it. Nothing when the call does not set it.
 */
function pingDetails(url: unknown): string[] {
  if (url === undefined) return []
  return [url === '' ? 'ping: none (removed)' : `ping: ${quoted(url)}`]
}

/**
 * An `ai` job's `when` gate for an approval line, whole: a shell command that runs before every run
 * with nobody watching (SECURITY.md CRON-5). `''` removes it. Nothing when the call does not set it.
 */
function whenDetails(command: unknown): string[] {
  if (command === undefined) return []
  return [command === '' ? 'when: none (removed)' : `when: ${quoted(command)}`]
}

/**
 * What a cron job is now, for the approval line of a call that changes it (read by the cron tools
 * before approval): its daily budgets (null: none) and its schedule.
 */
export interface CurrentJob {
  readonly maxTokensPerDay?: number | null
  readonly maxCostPerDay?: number | null
  readonly schedule?: string
  /** Whose job it is (its runs' spend counts against them); shown when the caller is someone else. */
  readonly createdBy?: string | null
}

/**
 * A job's daily budgets as a call sets them, for an approval line: `max_tokens_per_day: 2500 →
 * 10000` (with the job as it is now) or `max_tokens_per_day: 10000` (a new job, or the job is not
 * known); `null` shows `none (removed)`. Nothing for a budget the call leaves alone.
 */
function budgetDetails(
  budgets: readonly (readonly [field: string, value: unknown, now: number | null | undefined])[],
  current: CurrentJob | undefined,
): string[] {
  return budgets
    .filter(([, value]) => value !== undefined)
    .map(([field, value, now]) => {
      const next = value === null ? 'none (removed)' : word(value)
      return current === undefined
        ? `${field}: ${next}`
        : `${field}: ${now == null ? 'none' : word(now)} → ${next}`
    })
}

/**
 * A `webhook` schedule for an approval line: the hook it opens to calls from outside (each signed
 * `POST /hooks/<hook>` starts a run). Nothing for another schedule type.
 */
function webhookDetails(scheduleType: unknown, hook: unknown): string[] {
  if (String(scheduleType) !== 'webhook') return []
  const name = quoted(hook)
  return [`webhook hook: ${name} (each signed POST /hooks/${name} starts a run)`]
}

/**
 * How a job's runs go, for an approval line, as the call sets them (the field names the tool takes):
 * the session its agent runs in (`main`: runs share one and see earlier runs), how long a run may
 * take, what happens to a run due while one still goes, and which runs are delivered. Each changes
 * what runs, when, or who reads it; nothing for a field the call leaves alone (a new job then has
 * the default the tool describes, an updated one keeps what it has).
 */
function runDetails(fields: {
  readonly session_mode?: unknown
  readonly timeout?: unknown
  readonly overlap?: unknown
  readonly notify?: unknown
}): string[] {
  const { session_mode: sessionMode, timeout, overlap, notify } = fields
  return [
    ...(sessionMode === undefined ? [] : [`session_mode: ${word(sessionMode)}`]),
    // A number is seconds (the tool's unit); a text carries its own unit.
    ...(timeout === undefined ? [] : [`timeout: ${word(timeout)}${typeof timeout === 'number' ? ' s' : ''}`]),
    ...(overlap === undefined ? [] : [`overlap: ${word(overlap)}`]),
    ...(notify === undefined ? [] : [`notify: ${word(notify)}`]),
  ]
}

/**
 * Where a job's results go, for an approval line: the call's `deliver_to` when it names targets,
 * else `resolved` (what the call would store: the chat it came from, or the configured default),
 * shown as `nowhere` when that is empty. Nothing when the call names none and `resolved` is not known.
 */
function deliveryDetails(explicit: unknown, resolved: readonly string[] | undefined): string[] {
  const targets = Array.isArray(explicit) && explicit.length > 0 ? explicit : resolved
  if (targets === undefined) return []
  return [
    targets.length === 0
      ? 'results go to: nowhere (kept only in the run history)'
      : `results go to: ${targets.map(quoted).join(', ')}`,
  ]
}

/**
 * `cron_add`'s approval line; `current` is the job of that name when the call updates one (the
 * line then says Update and shows each budget it changes as old → new). Every field the call sets
 * that changes what runs, when, or where its results go is shown: the schedule and its time zone,
 * the prompt and `when` gate whole, the session mode, timeout, overlap and notify policies, the ping
 * URL, the delivery targets (`deliverTo`: the ones the call will store, found from its session when
 * it names none) and the daily budgets.
 */
export function cronAddSummary(
  p: Params,
  current?: CurrentJob,
  caller?: string,
  deliverTo?: readonly string[],
): string {
  const owner = current?.createdBy
  const details = [
    ...(owner === undefined || owner === caller || (owner === null && caller === undefined)
      ? []
      : [`a job created by ${owner === null ? 'the host' : quoted(owner)}, whose budget its runs spend`]),
    ...(p.prompt === undefined ? [] : [`prompt: ${quoted(p.prompt)}`]),
    ...whenDetails(p.when),
    ...runDetails(p),
    ...pingDetails(p.ping_url),
    ...webhookDetails(p.schedule_type, p.schedule),
    ...deliveryDetails(p.deliver_to, deliverTo),
    ...budgetDetails(
      [
        ['max_tokens_per_day', p.max_tokens_per_day, current?.maxTokensPerDay],
        ['max_cost_per_day', p.max_cost_per_day, current?.maxCostPerDay],
      ],
      current,
    ),
  ]
  const zone = p.timezone === undefined ? '' : `; timezone=${quoted(p.timezone)}`
  return `${current === undefined ? 'Create' : 'Update'} cron job: ${quoted(p.name)} (${word(p.schedule_type)}=${quoted(p.schedule)}${zone})${
    details.length === 0 ? '' : ` — ${details.join('; ')}`
  }`
}

/**
 * `manage_cron_jobs`' approval line; `current` is the job an `update` changes, when it was read
 * (each budget it changes then shows as old → new); `deliverTo`, the targets a `create` will store
 * (found from the call's session), when known.
 */
export function manageCronJobsSummary(
  p: Params,
  current?: CurrentJob,
  deliverTo?: readonly string[],
): string {
  const config = (typeof p.config === 'object' && p.config !== null ? p.config : {}) as Params
  const job = quoted(p.id ?? p.name)
  const budgets = (known: CurrentJob | undefined) =>
    budgetDetails(
      [
        ['maxTokensPerDay', config.maxTokensPerDay, known?.maxTokensPerDay],
        ['maxCostPerDay', config.maxCostPerDay, known?.maxCostPerDay],
      ],
      known,
    )
  switch (p.action) {
    case 'create': {
      const details = [
        ...configDetails(config),
        ...runDetails({ notify: p.notify }),
        ...pingDetails(p.pingUrl),
        ...webhookDetails(p.scheduleType, p.scheduleValue),
        ...deliveryDetails(undefined, deliverTo),
        ...budgets(undefined),
      ]
      return `Create cron job: ${quoted(p.name)} (${word(p.scheduleType)}=${quoted(p.scheduleValue)})${
        p.enabled === false ? ' disabled' : ''
      }${details.length === 0 ? '' : ` — ${details.join('; ')}`}`
    }
    case 'update': {
      const changes = [
        ...JOB_FIELDS.filter((field) => p[field] !== undefined).map(
          (field) => `${field}: ${FREE_TEXT_FIELDS.has(field) ? quoted(p[field]) : word(p[field])}`,
        ),
        ...configDetails(config),
        ...runDetails({ notify: p.notify }),
        ...pingDetails(p.pingUrl),
        ...webhookDetails(p.scheduleType, p.scheduleValue ?? current?.schedule),
        ...budgets(current),
      ]
      return `Update cron job: ${job}${changes.length === 0 ? ' (no changes)' : ` — ${changes.join('; ')}`}`
    }
    case 'delete':
      return `Delete cron job: ${job}`
    case 'trigger':
      return `Trigger cron job now: ${job}`
    default:
      return `Cron jobs: ${word(p.action)}`
  }
}

/**
 * What a cron job's `config` persists, for an approval line: model and cwd, then the command or
 * prompt whole, since it runs later with nobody watching (SECURITY.md CRON-5).
 */
function configDetails(config: Params): string[] {
  return [
    ...(config.model === undefined ? [] : [`model: ${quoted(config.model)}`]),
    ...(config.cwd === undefined ? [] : [`cwd: ${quoted(config.cwd)}`]),
    ...(config.command === undefined ? [] : [`command: ${quoted(config.command)}`]),
    ...whenDetails(config.when),
    ...(config.prompt === undefined ? [] : [`prompt: ${quoted(config.prompt)}`]),
  ]
}

/**
 * What else shapes an `exec` or `exec_bg` run, whole: ` — cwd: ⟦/srv⟧; env: NAME=⟦value⟧, …` (an
 * environment variable can change what a command does), or `''` when neither is given.
 */
function execDetails(p: Params): string {
  const env = typeof p.env === 'object' && p.env !== null ? Object.entries(p.env as Params) : []
  // Everything the call sets is shown: two calls that read alike ask for the same thing.
  const details = [
    ...(p.cwd === undefined ? [] : [`cwd: ${quoted(p.cwd)}`]),
    ...(env.length === 0
      ? []
      : [`env: ${env.map(([name, value]) => `${word(name)}=${quoted(value)}`).join(', ')}`]),
    ...(typeof p.timeout === 'number' ? [`timeout: ${p.timeout} s`] : []),
    ...(p.pty === true ? ['in a terminal (pty)'] : []),
  ]
  return details.length === 0 ? '' : ` — ${details.join('; ')}`
}

const SUMMARIES: Readonly<Record<string, (params: Params) => string>> = {
  cron_add: (p) => cronAddSummary(p),
  cron_pause: (p) => `Pause cron job: ${quoted(p.id)}`,
  cron_resume: (p) => `Resume cron job: ${quoted(p.id)}`,
  cron_remove: (p) => `Remove cron job and its history: ${quoted(p.id)}`,
  bg_submit: (p) =>
    `Submit background task: ${quoted(p.prompt)}${p.channel === undefined ? '' : ` — result goes to: ${quoted(p.channel)}`}`,
  bg_cancel: (p) => `Cancel background task: ${quoted(p.task_id)}`,
  // The YAML is not read here: the name and the commands come from the engine's parse, in the
  // workflow tools' own approval lines (Tool.approvalSummary), which invokeTool shows.
  workflow_run: (p) =>
    p.file_path !== undefined
      ? `Run workflow: ${quoted(p.file_path)}`
      : `Run inline workflow (${yamlLength(p.yaml_content)} characters of YAML)`,
  workflow_cancel: (p) => `Cancel workflow run: ${quoted(p.run_id)}`,
  workflow_rerun: (p) =>
    `Rerun workflow run: ${quoted(p.run_id)}${p.from_step === undefined ? ' from its failed step' : ` from step ${word(p.from_step)}`}`,
  workflow_save: (p) =>
    `Save workflow: ${quoted(p.name)}${p.overwrite === true ? ' (overwrite)' : ''} (${yamlLength(p.yaml_content)} characters of YAML)`,
  manage_cron_jobs: (p) => manageCronJobsSummary(p),
  exec: (p) => `Execute: ${quoted(p.command)}${execDetails(p)}`,
  exec_bg: (p) => `Execute in background: ${quoted(p.command)}${execDetails(p)}`,
  // Quoted as JSON: a line end (`\r`) is what makes a shell run the line, so it must show (and
  // JSON escapes its own `"`, so the input cannot end early either).
  exec_write: (p) =>
    `Send input to process ${quoted(p.id)}: ${wholeLine(JSON.stringify(String(p.input ?? '')))}`,
  exec_stop: (p) => `Stop process ${quoted(p.id)}`,
}

/**
 * What a call will do, for an approval prompt: `Create cron job: ⟦backup⟧ (cron=⟦0 3 * * *⟧)`,
 * `Run workflow: ⟦flows/report.flow.yaml⟧`, `Execute: ⟦<the whole command>⟧ — cwd: ⟦…⟧; env: …`.
 * Nothing is cut: every command, prompt and value is shown whole (SECURITY.md SEC-9, CRON-5), on
 * one line with line breaks shown as `↵` and hiding characters escaped. Every value the caller
 * wrote (a command, a prompt, a path, a name, a URL, a schedule, a target) is between `⟦` and `⟧`,
 * which it cannot hold unescaped, so none can end early and read as a detail of its own
 * (`command: ⟦make; results go to: nowhere⟧` is one command); what is outside the marks (labels,
 * separators, a tool's fixed choices such as `notify: failure`) is the code's. Secret references appear as written
 * (unresolved). It reads only the parameters: for `workflow_run` and `workflow_save` it does not
 * read the YAML or the file, so inline YAML shows as `Run inline workflow (N characters of YAML)`.
 * The workflow's name and shell commands come from the workflow tools' own approval lines
 * (`Tool.approvalSummary`, built from the engine's parse or the file), which `invokeTool` shows:
 * call tools through `invokeTool` to get them.
 */
export function buildApprovalSummary(toolName: string, params: unknown): string {
  const summary = SUMMARIES[toolName]
  const record = (typeof params === 'object' && params !== null ? params : {}) as Params
  if (summary !== undefined) return summary(record)
  // A tool without its own line shows every parameter, so nothing it was given is hidden.
  return Object.keys(record).length === 0
    ? `Call ${toolName}`
    : `Call ${toolName} with ${wholeLine(JSON.stringify(record))}`
}
