import { type AnyTool, type ApprovalGate, type ApprovalPolicy, buildApprovalSummary } from '@lango/tools'
import { toAiSdkTools } from '@lango/tools/ai-sdk'
import type { Tool, ToolExecutionOptions } from 'ai'
import { parse as parseYaml } from 'yaml'
import type { SessionKind } from './session-kind.js'
import type { UnattendedPermissions } from './system-prompt.js'

/** Why a tool call was not run. */
type DenialReason =
  /** A person's approval was needed and not given: denied, no answer in time, or no gate to ask. */
  | 'not_approved'
  /** Nobody could be asked (too many approvals waiting, a request too long to show whole): nobody's decision. */
  | 'not_asked'
  /** A dangerous call in an unattended run, which nobody can approve (unless `allowDangerous`). */
  | 'unattended_dangerous'
  /** An unattended run tried to create or change a cron job (unless `allowCronCreate`). */
  | 'unattended_cron_create'

/** A tool call that was refused, as collected in a turn's result. */
export interface ToolDenial {
  readonly toolName: string
  readonly reason: DenialReason
  /** The call's one human line (`Remove cron job and its history: nightly`); secrets stay unresolved. */
  readonly summary: string
}

/** How a turn's tools are built. */
export interface TurnToolsOptions {
  readonly tools: readonly AnyTool[]
  readonly sessionKey: string
  /** Who the turn counts against, passed on to what its tools start (`ToolContext.creator`); default the session key. */
  readonly creator?: string
  readonly session: SessionKind
  readonly permissions: UnattendedPermissions
  /** The approval policy of attended turns; unattended turns use their own rule. */
  readonly policy: ApprovalPolicy
  /** Who approves in attended turns; none denies what the policy selects. */
  readonly gate: ApprovalGate | undefined
  readonly approvalTimeoutMs: number
  /** A result whose JSON is longer is cut to its head and tail (SECURITY.md RES-3). */
  readonly maxResultChars: number
  /** Called for every refused call, before its refusal goes back to the model. */
  readonly onDenial: (denial: ToolDenial) => void
  /** Runs each call (refusals included) inside the caller's span (the tracing); must call `work` once. */
  readonly traceTool?: (toolName: string, work: () => Promise<unknown>) => Promise<unknown>
}

const NOT_APPROVED = 'not approved: '

/** The tools of a turn that would create or change a cron job, given their validated input. */
function changesSchedule(toolName: string, input: unknown): boolean {
  const params = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>
  switch (toolName) {
    case 'cron_add':
    // Resuming undoes an operator's (or the scheduler's) pause: the job runs unattended again.
    case 'cron_resume':
      return true
    case 'manage_cron_jobs':
      return params.action === 'create' || params.action === 'update'
    case 'workflow_save':
      return startsByItself(params.yaml_content)
    default:
      return false
  }
}

/**
 * True when workflow YAML has a top-level `schedule` (the server then registers a cron job for it)
 * or `triggers` (a webhook starts it): either way it starts runs by itself. YAML that does not
 * parse counts as such: the refusal fails closed, and the save would fail anyway.
 */
function startsByItself(yaml: unknown): boolean {
  if (typeof yaml !== 'string') return false
  try {
    const document = parseYaml(yaml, { maxAliasCount: 100 }) as unknown
    return (
      typeof document === 'object' && document !== null && ('schedule' in document || 'triggers' in document)
    )
  } catch {
    return true
  }
}

/** A refusal in the shape every tool failure has (`toAiSdkTools`), so the model reads it as a tool error. */
function refusal(message: string): { error: { code: 'TOOL_DENIED'; message: string } } {
  return { error: { code: 'TOOL_DENIED', message } }
}

const DO_NOT_RETRY = 'Do not retry or work around it; say in your reply that this was not done.'

/** A `TOOL_DENIED` failure returned by `toAiSdkTools`, if the output is one. */
function deniedMessage(output: unknown): string | undefined {
  const error = (output as { error?: { code?: unknown; message?: unknown } } | null)?.error
  return error?.code === 'TOOL_DENIED' && typeof error.message === 'string' ? error.message : undefined
}

/** `data.asked` of a refusal: false when the gate could ask nobody (`invokeTool`). */
function wasAsked(output: unknown): boolean | undefined {
  const asked = (output as { error?: { data?: { asked?: unknown } } } | null)?.error?.data?.asked
  return typeof asked === 'boolean' ? asked : undefined
}

/** Cuts a result whose JSON exceeds `max` characters to its head and tail, saying how much was dropped. */
function capToolResult(output: unknown, max: number): unknown {
  let json: string | undefined
  try {
    json = JSON.stringify(output)
  } catch {
    return output // the SDK reports an unserialisable result itself
  }
  if (json === undefined || json.length <= max) return output
  const half = Math.floor(max / 2)
  return {
    truncated: true,
    original_chars: json.length,
    partial_json: `${json.slice(0, half)} … [${json.length - 2 * half} characters dropped] … ${json.slice(-half)}`,
  }
}

/**
 * The AI SDK tools of one turn: `toAiSdkTools` from `@lango/tools` (validation, preflight, approval
 * inside `execute`) with three additions around each `execute`:
 *
 * - unattended turns (`session.unattended`) run under policy `dangerous` with no gate, so every
 *   dangerous call is refused (`allowDangerous` lifts it: policy `none`); the refusal is reworded
 *   for the model, since nobody could have approved it;
 * - unattended turns without `allowCronCreate` are refused `cron_add`, `cron_resume`,
 *   `manage_cron_jobs` create and update, and `workflow_save` of YAML with a `schedule` or
 *   `triggers`, before anything runs;
 * - every refusal is reported through `onDenial`, and results are capped at `maxResultChars`.
 */
export function buildTurnTools(options: TurnToolsOptions): Record<string, Tool> {
  const unattended = options.session.unattended
  const base = toAiSdkTools(options.tools, {
    sessionKey: options.sessionKey,
    ...(options.creator === undefined ? {} : { creator: options.creator }),
    // What the turn's tools start is one level down the chain of runs (SECURITY.md WF-7).
    ...(options.session.nesting === undefined ? {} : { nesting: options.session.nesting }),
    approvalTimeoutMs: options.approvalTimeoutMs,
    ...(unattended
      ? { policy: options.permissions.allowDangerous ? 'none' : 'dangerous' }
      : { policy: options.policy, ...(options.gate === undefined ? {} : { gate: options.gate }) }),
  })
  const wrapped = Object.entries(base).map(([name, tool]): [string, Tool] => {
    const execute = tool.execute as
      | ((input: unknown, execution: ToolExecutionOptions) => Promise<unknown>)
      | undefined
    if (execute === undefined) return [name, tool]
    const call = async (input: unknown, execution: ToolExecutionOptions): Promise<unknown> => {
      if (unattended && !options.permissions.allowCronCreate && changesSchedule(name, input)) {
        const summary = buildApprovalSummary(name, input)
        options.onDenial({ toolName: name, reason: 'unattended_cron_create', summary })
        return refusal(
          `refused: unattended runs cannot create or change scheduled jobs (${summary}). ${DO_NOT_RETRY}`,
        )
      }
      const output = await execute(input, execution)
      const denied = deniedMessage(output)
      if (denied !== undefined && !unattended && wasAsked(output) === false) {
        options.onDenial({ toolName: name, reason: 'not_asked', summary: denied })
        return output
      }
      if (denied !== undefined) {
        const summary = denied.startsWith(NOT_APPROVED) ? denied.slice(NOT_APPROVED.length) : denied
        if (unattended) {
          options.onDenial({ toolName: name, reason: 'unattended_dangerous', summary })
          return refusal(
            `refused: dangerous tools cannot run in unattended runs, where nobody can approve them (${summary}). ${DO_NOT_RETRY}`,
          )
        }
        options.onDenial({ toolName: name, reason: 'not_approved', summary })
        return output
      }
      return capToolResult(output, options.maxResultChars)
    }
    const { traceTool } = options
    return [
      name,
      {
        ...tool,
        execute:
          traceTool === undefined
            ? call
            : (input: unknown, execution: ToolExecutionOptions) =>
                traceTool(name, () => call(input, execution)),
      } as Tool,
    ]
  })
  return Object.fromEntries(wrapped)
}
