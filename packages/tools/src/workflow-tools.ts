import { createHash } from 'node:crypto'
import * as v from 'valibot'
import { buildApprovalSummary } from './approval.js'
import {
  assertDeliverable,
  type DeliveryTargetCheck,
  deliversBeyond,
  resolveDeliveryTargets,
} from './delivery.js'
import { ToolError } from './errors.js'
import { ID_MAX_LENGTH, isoTime } from './format.js'
import { refuseUnknownKeys } from './option-keys.js'
import { mentionsSecret } from './persistence-risk.js'
import { decodeRunCursor, encodeRunCursor, runCursorParameter } from './run-cursor.js'
import {
  lookUpSpend,
  type RunSpend,
  type RunSpendLookup,
  SPEND_UNAVAILABLE,
  spendFields,
  spendOf,
  spendOutputEntries,
  usageUnavailableEntry,
} from './run-spend.js'
import { quoted, word } from './text.js'
import { type AnyTool, creatorOf, defineTool, nestingOf, type ToolContext, type ToolSafety } from './tool.js'
import {
  describeAgentSteps,
  describeDeliveries,
  describeShellSteps,
  type ShellStepText,
} from './workflow-summary.js'

/** Run statuses, as `@lango/workflow` names them. */
const RUN_STATUS_VALUES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const

/** A step of a run, as `@lango/workflow` snapshots it. */
export interface WorkflowStepView {
  readonly stepId: string
  readonly status: string
  readonly result: string | null
  readonly error: string | null
  readonly attempt: number
  readonly startedAt: number | null
  readonly completedAt: number | null
  /** Tokens the agent reported for a completed `prompt` step; null for `run` steps and steps without a count. */
  readonly inputTokens: number | null
  readonly outputTokens: number | null
  /** For a step a rerun reused: the run that produced its result (status `completed`); else null. */
  readonly reusedFrom?: string | null
}

/** A run without its steps, as `WorkflowEngine.listRuns` returns it. */
export interface WorkflowRunSummaryView {
  readonly runId: string
  readonly workflowName: string
  readonly status: string
  readonly totalSteps: number
  readonly completedSteps: number
  readonly error: string | null
  readonly startedAt: number | null
  readonly completedAt: number | null
  /** The run this one reruns (`workflow_rerun`), else null. */
  readonly rerunOf?: string | null
}

/** What a rerun will do (`WorkflowEngine.planRerun`): which steps run again and which results are reused. */
export interface WorkflowRerunPlanView {
  readonly runId: string
  readonly workflowName: string
  /** The definition the run used; its `run` steps that run again are shown in the approval line. */
  readonly workflow: WorkflowHandle
  readonly fromSteps: readonly string[]
  readonly rerunSteps: readonly string[]
  readonly reusedSteps: readonly string[]
}

/** A run with its steps, as `WorkflowEngine.getRun` / `waitForRun` return it. */
export interface WorkflowRunView extends WorkflowRunSummaryView {
  readonly steps: readonly WorkflowStepView[]
}

/** A loaded workflow file, passed back to the engine as is (`@lango/workflow`'s `LoadedWorkflow`). */
export interface WorkflowHandle {
  readonly source: string
  /** The parsed workflow; its `run` steps are shown in the approval line of `workflow_run`. */
  readonly definition?: {
    readonly name: string
    /** A saved workflow's cron schedule: the host runs it unattended. */
    readonly schedule?: string
    readonly timezone?: string
    /** What else starts a saved workflow: each webhook is an entry point for signed calls from outside. */
    readonly triggers?: ReadonlyArray<{ readonly webhook: string }>
    /** Where the run's results go (shown in the approval line). */
    readonly deliverTo?: readonly string[]
    readonly steps: ReadonlyArray<{
      readonly id: string
      readonly kind: string
      readonly text: string
      /** The step's `when` gate: a shell command run before the step decides whether it runs. */
      readonly when?: string
      /** Where this step's result goes (shown in the approval line). */
      readonly deliverTo?: readonly string[]
      /** The steps it runs after (shown, with the order steps run in). */
      readonly dependsOn?: readonly string[]
      /** Its attempts in all, when it is retried (shown). */
      readonly retry?: { readonly attempts: number }
      /** Whether the run goes on when it fails (shown). */
      readonly continueOnError?: boolean
    }>
  }
}

/** What the workflow tools need; `WorkflowEngine` and `WorkflowDirectory` from `@lango/workflow` fit as they are. */
export interface WorkflowToolsService {
  readonly engine: {
    startRun(
      workflow: string | WorkflowHandle,
      options: { deliverTo?: readonly string[]; originSession?: string; creator?: string; nesting?: number },
    ): Promise<{ runId: string; workflowName: string }>
    waitForRun(runId: string, options: { timeoutMs?: number; signal?: AbortSignal }): Promise<WorkflowRunView>
    getRun(runId: string): Promise<WorkflowRunView | undefined>
    listRuns(query: {
      limit?: number
      status?: (typeof RUN_STATUS_VALUES)[number]
      /** The page after the run of this `startedAt` and `id` (older runs, same order). */
      before?: { readonly startedAt: number; readonly id: string }
    }): Promise<readonly WorkflowRunSummaryView[]>
    cancelRun(runId: string): Promise<WorkflowRunView>
    /** What {@link rerunRun} would do, writing nothing; throws the same errors. */
    planRerun(runId: string, options: { fromStep?: string }): Promise<WorkflowRerunPlanView>
    /**
     * Starts a new run of the ended run's definition from `fromStep` (default: its first failed
     * steps): that step and its descendants run again, the other completed steps' results are reused.
     */
    rerunRun(
      runId: string,
      options: { fromStep?: string; originSession?: string; creator?: string; nesting?: number },
    ): Promise<{ runId: string; workflowName: string; plan: WorkflowRerunPlanView }>
    /**
     * Parses and validates YAML without running it (agent limits); throws on an invalid workflow.
     * The tools judge inline YAML by this parse, never by a second reading of the text, so what the
     * approver is shown and what runs are the same steps.
     */
    load(yaml: string): WorkflowHandle & { readonly definition: NonNullable<WorkflowHandle['definition']> }
  }
  readonly directory: {
    /**
     * Reads a saved workflow by name, or a `.flow.yaml` file in the workflows directory or the
     * workspace. `name` is present only for a file in the workflows directory (what
     * `workflow_save` writes, confirmed when it was saved); a file without it that has shell steps
     * or secret references is judged `dangerous`.
     */
    read(nameOrPath: string): Promise<{ name?: string; filePath: string; workflow: WorkflowHandle }>
    save(
      name: string,
      yaml: string,
      options: { overwrite?: boolean },
    ): Promise<{ name: string; filePath: string }>
    list(): Promise<readonly string[]>
  }
}

/** Options for {@link createWorkflowTools}. */
export interface WorkflowToolsOptions {
  readonly service: WorkflowToolsService
  /** Delivery targets when neither the YAML nor the session names one. */
  readonly defaultDeliverTo?: readonly string[]
  /** Refuses a workflow whose `deliver_to` names a target results could not reach, before it runs or is saved. */
  readonly checkTarget?: DeliveryTargetCheck
  /** Longest wait `workflow_run` accepts (default 300 s). */
  readonly maxWaitSeconds?: number
  /** How often `workflow_run` reports progress while it waits, when the caller listens (default 5 s). */
  readonly progressIntervalSeconds?: number
  /** What runs spent (model, cost), for `workflow_status`; without it no model or cost is shown. */
  readonly spend?: RunSpendLookup
}

const checkWorkflowKeys = refuseUnknownKeys(
  'createWorkflowTools options',
  Object.keys({
    service: true,
    defaultDeliverTo: true,
    checkTarget: true,
    maxWaitSeconds: true,
    progressIntervalSeconds: true,
    spend: true,
  } satisfies Record<keyof WorkflowToolsOptions, true>),
)

const runId = v.pipe(
  v.string('run_id must be a string'),
  v.minLength(1, 'run_id must not be empty'),
  v.maxLength(ID_MAX_LENGTH),
  v.description('The run id, as workflow_run returned it (also listed by workflow_list).'),
)
const MAX_YAML = 256 * 1024
const yamlText = v.pipe(
  v.string('yaml_content must be a string'),
  v.minLength(1, 'yaml_content must not be empty'),
  v.maxLength(MAX_YAML, `yaml_content must be at most ${MAX_YAML} characters`),
)
const YAML_FORMAT =
  'name, then steps: a list of {id, prompt (a task for an agent) or run (a shell command), depends_on: [step ids], when (optional gate: a shell command run once the dependencies completed; exit 0 runs the step, 1 skips it and every step after it without waking the model (continue_on_skip: true lets the steps after it run anyway), anything else fails it; JSON it prints is given to a prompt step as untrusted data)}; {{<step id>.result}} inserts the result of an earlier step.'
const TERMINAL_RUN_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled'])

type StepHandle = NonNullable<WorkflowHandle['definition']>['steps'][number]

/**
 * The steps in the order they can run: each after the steps it depends on, steps free at the same
 * time in the order written (an outside probe approved `[backup] cp` above `[wipe] rm -rf` and the
 * wipe ran first: `backup` depended on it). A cycle, which validation refuses, keeps the written order.
 */
function inRunOrder(steps: readonly StepHandle[]): StepHandle[] {
  const done = new Set<string>()
  const ordered: StepHandle[] = []
  const left = [...steps]
  while (left.length > 0) {
    const index = left.findIndex((step) => (step.dependsOn ?? []).every((id) => done.has(id)))
    const [next] = left.splice(index === -1 ? 0 : index, 1)
    ordered.push(next as StepHandle)
    done.add((next as StepHandle).id)
  }
  return ordered
}

/**
 * `id` (`id when` for its gate), then what decides when and how often it runs: `backup; after wipe;
 * 3 attempts; continues on failure` (a step id holds no `;` or space).
 */
function stepLabel(step: StepHandle, part = ''): string {
  const notes = [
    ...((step.dependsOn ?? []).length > 0 ? [`after ${(step.dependsOn ?? []).join(', ')}`] : []),
    ...(step.retry !== undefined && step.retry.attempts > 1 ? [`${step.retry.attempts} attempts`] : []),
    ...(step.continueOnError === true ? ['continues on failure'] : []),
  ]
  return [`${step.id}${part}`, ...notes].join('; ')
}

/**
 * The shell commands of some steps, as the approval shows them, in the order they run: each `when`
 * gate (`[id when]`) and `run` command, whole, labelled with what it runs after, its attempts and
 * whether the run goes on when it fails.
 */
function shellCommandsOf(steps: readonly StepHandle[]): string {
  const commands: ShellStepText[] = []
  for (const step of inRunOrder(steps)) {
    if (step.when !== undefined) commands.push({ id: stepLabel(step, ' when'), command: step.when })
    if (step.kind === 'run') commands.push({ id: stepLabel(step), command: step.text })
  }
  return describeShellSteps(commands)
}

/**
 * What a loaded workflow will do, as the approval shows it: every shell command and `when` gate,
 * every agent step's prompt, whole, and where results go (SECURITY.md SEC-9: nobody approves what
 * they cannot see).
 */
function contentOf(workflow: WorkflowHandle): string {
  const steps = workflow.definition?.steps ?? []
  const sections = [
    shellCommandsOf(steps),
    describeAgentSteps(
      inRunOrder(steps)
        .filter((step) => step.kind === 'prompt')
        .map((step) => ({ id: stepLabel(step), prompt: step.text })),
    ),
    describeDeliveries(
      workflow.definition?.deliverTo,
      steps.map((step) => ({ id: step.id, targets: step.deliverTo ?? [] })),
    ),
  ]
  // Each section after a listing starts a line of its own, so no heading reads as part of a command.
  let text = ''
  for (const section of sections)
    if (section !== '') text += text.includes('\n') ? `\n${section.replace(/^ — /, '')}` : section
  return text
}

/** A step that runs a shell command (a `run` step or a `when` gate) or names a secret reference. */
function isDangerousStep(step: StepHandle): boolean {
  return step.kind === 'run' || step.when !== undefined || mentionsSecret(step.text, step.when)
}

/**
 * A parsed workflow that runs shell commands (`run` steps, `when` gates) or names secret references
 * (SECURITY.md WF-10): inline YAML like this runs commands nobody has reviewed, and a saved one runs
 * later with nobody watching.
 */
function isDangerousWorkflow(workflow: WorkflowHandle): boolean {
  return (workflow.definition?.steps ?? []).some(isDangerousStep)
}

/**
 * What a saved workflow starts on its own, for `workflow_save`'s approval line: ` — runs on
 * schedule: ⟦0 7 * * *⟧ (⟦Europe/Berlin⟧); starts on each signed POST /hooks/⟦issue⟧`, or `''`.
 */
function startersOf(workflow: WorkflowHandle): string {
  const definition = workflow.definition
  const starters = [
    ...(definition?.schedule === undefined
      ? []
      : [
          `runs on schedule: ${quoted(definition.schedule)}${definition.timezone === undefined ? '' : ` (${quoted(definition.timezone)})`}`,
        ]),
    ...(definition?.triggers ?? []).map(
      (trigger) => `starts on each signed POST /hooks/${quoted(trigger.webhook)}`,
    ),
  ]
  if (starters.length === 0) return ''
  // Its agent steps are listed after (contentOf): here only that they run with nobody watching.
  const prompts = (definition?.steps ?? []).filter((step) => step.kind === 'prompt').length
  return ` — ${starters.join('; ')}${prompts === 0 ? '' : ', unattended'}`
}

/**
 * A saved workflow that starts runs by itself (a schedule, a webhook trigger): they run later with
 * nobody watching, a webhook opens an entry point for calls from outside (as `cron_add` with a
 * webhook schedule does), and their agent steps' spend does not count against whoever saved it.
 */
function startsByItself(workflow: WorkflowHandle): boolean {
  const definition = workflow.definition
  return definition?.schedule !== undefined || (definition?.triggers?.length ?? 0) > 0
}

/** Where a `workflow_run` or `workflow_save` call takes its workflow from. */
interface WorkflowSource {
  readonly yaml_content?: string | undefined
  readonly file_path?: string | undefined
}

/** A call's workflow as its preflight parsed or read it; `saved` when it comes from the workflows directory. */
interface PreparedWorkflow {
  readonly workflow: WorkflowHandle
  readonly saved: boolean
}

/** One line on a run in progress, for a progress notification. */
function progressLine(run: WorkflowRunView): string {
  const running = run.steps.filter((step) => step.status === 'running').map((step) => step.stepId)
  return `${run.completedSteps} of ${run.totalSteps} steps done${running.length === 0 ? '' : `; running: ${running.slice(0, 5).join(', ')}`}`
}

const textOrNull = v.nullable(v.string())

/** A step as `workflow_status` shows it. */
const stepOutput = v.strictObject({
  step_id: v.string(),
  status: v.string(),
  result: textOrNull,
  error: textOrNull,
  attempt: v.number(),
  started_at: textOrNull,
  completed_at: textOrNull,
  input_tokens: v.nullable(v.number()),
  output_tokens: v.nullable(v.number()),
  reused_from: textOrNull,
})

/** A run without its steps, as `workflow_list` shows it. */
const summaryOutput = v.strictObject({
  run_id: v.string(),
  workflow_name: v.string(),
  status: v.string(),
  total_steps: v.number(),
  completed_steps: v.number(),
  error: textOrNull,
  started_at: textOrNull,
  completed_at: textOrNull,
  rerun_of: textOrNull,
})

function stepView(step: WorkflowStepView): v.InferOutput<typeof stepOutput> {
  return {
    step_id: step.stepId,
    status: step.status,
    result: step.result,
    error: step.error,
    attempt: step.attempt,
    started_at: isoTime(step.startedAt),
    completed_at: isoTime(step.completedAt),
    input_tokens: step.inputTokens,
    output_tokens: step.outputTokens,
    reused_from: step.reusedFrom ?? null,
  }
}

function summaryView(run: WorkflowRunSummaryView): v.InferOutput<typeof summaryOutput> {
  return {
    run_id: run.runId,
    workflow_name: run.workflowName,
    status: run.status,
    total_steps: run.totalSteps,
    completed_steps: run.completedSteps,
    error: run.error,
    started_at: isoTime(run.startedAt),
    completed_at: isoTime(run.completedAt),
    rerun_of: run.rerunOf ?? null,
  }
}

function runView(run: WorkflowRunView) {
  return { ...summaryView(run), steps: run.steps.map(stepView) }
}

/** {@link runView} with the model and cost of the run and of each step that called the model. */
function spentRunView(run: WorkflowRunView, spends: readonly RunSpend[]) {
  const total = spendOf(spends, run.runId)
  return {
    ...summaryView(run),
    input_tokens: total?.inputTokens ?? null,
    output_tokens: total?.outputTokens ?? null,
    cost_usd: total?.costUsd ?? null,
    steps: run.steps.map((step) => ({
      ...stepView(step),
      ...spendFields(spendOf(spends, run.runId, step.stepId)),
    })),
  }
}

/** `{ fromStep }` when a step was named. */
function fromStepOption(fromStep: string | undefined): { fromStep?: string } {
  return fromStep === undefined ? {} : { fromStep }
}

/**
 * The workflow tools: the contract's five (`workflow_run`, `workflow_status`, `workflow_list`,
 * `workflow_cancel`, `workflow_save`) and `workflow_rerun` (issue 25).
 */
export function createWorkflowTools(options: WorkflowToolsOptions): AnyTool[] {
  checkWorkflowKeys(options)
  const { engine, directory } = options.service
  const maxWait = options.maxWaitSeconds ?? 300
  const progressIntervalMs = Math.max(50, (options.progressIntervalSeconds ?? 5) * 1000)
  // A call's workflow is parsed (inline YAML, by the engine) or read (a file) once, in the
  // preflight, before approval: its safety, the approval line and the run all come from it, so the
  // steps the approver was shown are the steps that run even if the file changes meanwhile (and an
  // invalid workflow fails before anyone is asked). Keyed by the validated parameters object
  // invokeTool hands to each.
  const prepared = new WeakMap<object, PreparedWorkflow>()
  const remember = (params: object, entry: PreparedWorkflow) => {
    prepared.set(params, entry)
    return entry
  }
  /** Inline YAML parsed: synchronous, since `safetyFor` may be asked before any preflight. */
  const inline = (params: WorkflowSource): PreparedWorkflow | undefined =>
    params.yaml_content === undefined
      ? undefined
      : (prepared.get(params) ??
        remember(params, { workflow: engine.load(params.yaml_content), saved: false }))
  /** The call's workflow: inline YAML parsed, or the file (`file_path`, when no YAML) read. */
  const prepare = async (params: WorkflowSource): Promise<PreparedWorkflow> => {
    const known = inline(params) ?? prepared.get(params)
    if (known !== undefined) return known
    const { name, workflow } = await directory.read(params.file_path as string)
    return remember(params, { workflow, saved: name !== undefined })
  }
  // The steps a person confirmed, by digest of the parsed workflow: what a confirmed workflow_save
  // stored, and what an approved workflow_run ran. A file in the workflows directory runs without
  // asking only while its steps are those (a file written or changed by anything else, a command
  // included, is unconfirmed content: an outside probe ran a hand-written file's shell steps
  // unasked). Held by this process, at most 1,024 (oldest forgotten first): after a restart, or on
  // another server, the first run of a saved file with shell steps asks again.
  const confirmed = new Set<string>()
  const digestOf = (workflow: WorkflowHandle): string =>
    createHash('sha256')
      .update(JSON.stringify(workflow.definition ?? null))
      .digest('hex')
  const confirm = (workflow: WorkflowHandle): void => {
    const digest = digestOf(workflow)
    confirmed.delete(digest)
    confirmed.add(digest)
    if (confirmed.size > 1024) confirmed.delete(confirmed.values().next().value as string)
  }
  // Inline YAML and files with shell steps or secret references run commands nobody has confirmed
  // (SECURITY.md WF-10), unless they are a saved file whose steps were confirmed (above). A file
  // not read yet, or YAML that does not parse (callSafety outside invokeTool), is unknown content:
  // its worst case.
  // A chat's call whose workflow delivers to another chat needs approval too (deliversBeyond): the
  // session of each call, remembered by its preflight.
  const sessions = new WeakMap<object, string | undefined>()
  /** Every target a workflow names: its own `deliver_to` and its steps'. */
  const targetsOf = (workflow: WorkflowHandle): string[] => [
    ...(workflow.definition?.deliverTo ?? []),
    ...(workflow.definition?.steps ?? []).flatMap((step) => step.deliverTo ?? []),
  ]
  const deliversElsewhere = (params: object, workflow: WorkflowHandle): boolean =>
    deliversBeyond(targetsOf(workflow), sessions.get(params), options.defaultDeliverTo)
  const safetyOf = (params: WorkflowSource): ToolSafety => {
    try {
      const entry = inline(params) ?? prepared.get(params)
      if (entry === undefined) return 'dangerous'
      // A confirmed file's approval showed where its results go.
      if (entry.saved && confirmed.has(digestOf(entry.workflow))) return 'moderate'
      if (deliversElsewhere(params, entry.workflow)) return 'dangerous'
      return isDangerousWorkflow(entry.workflow) ? 'dangerous' : 'moderate'
    } catch {
      return 'dangerous'
    }
  }

  // A rerun's plan (which steps run again) is worked out once, in the preflight, before approval:
  // its safety and approval line come from it. An ended run does not change, so the handler's own
  // plan is the same one.
  const plans = new WeakMap<object, WorkflowRerunPlanView>()
  const planOf = async (params: { run_id: string; from_step?: string | undefined }) => {
    const known = plans.get(params)
    if (known !== undefined) return known
    const plan = await engine.planRerun(params.run_id, fromStepOption(params.from_step))
    plans.set(params, plan)
    return plan
  }

  /** Waits for the run, in slices that each end with a progress report when the caller listens. */
  async function waitWithProgress(
    id: string,
    waitMs: number,
    context: ToolContext,
  ): Promise<WorkflowRunView> {
    const signal = context.signal === undefined ? {} : { signal: context.signal }
    const report = context.onProgress
    if (report === undefined) return engine.waitForRun(id, { timeoutMs: waitMs, ...signal })
    report({ progress: 0, total: waitMs / 1000, message: `run ${id} started` })
    let waited = 0
    for (;;) {
      const slice = Math.min(progressIntervalMs, waitMs - waited)
      const run = await engine.waitForRun(id, { timeoutMs: slice, ...signal })
      waited += slice
      if (TERMINAL_RUN_STATUSES.has(run.status) || waited >= waitMs) return run
      report({ progress: waited / 1000, total: waitMs / 1000, message: progressLine(run) })
    }
  }

  return [
    defineTool({
      name: 'workflow_run',
      title: 'Run workflow',
      description:
        "Run a YAML workflow, from file_path (a saved workflow name or a .flow.yaml file in the workflows directory) or from yaml_content. Waits up to wait_seconds (default 30) and returns run_id, status and each step's status and result; a run still going keeps running: follow it with workflow_status. deliver_to in the YAML is optional: results go to the current conversation when omitted.",
      safety: 'moderate',
      safetyFor: safetyOf,
      worstSafety: 'dangerous',
      async preflight(params, context) {
        sessions.set(params, context.sessionKey)
        const { workflow } = await prepare(params)
        assertDeliverable(targetsOf(workflow), options.checkTarget, 'deliver_to')
        return undefined
      },
      parameters: v.pipe(
        v.strictObject({
          file_path: v.optional(
            v.pipe(
              v.string('file_path must be a string'),
              v.minLength(1),
              v.maxLength(4096),
              v.description(
                'A saved workflow name (as workflow_list shows under saved) or the path of a .flow.yaml file in the workflows directory or the workspace (at most 4096 characters). Give this or yaml_content, not both.',
              ),
            ),
          ),
          yaml_content: v.optional(
            v.pipe(
              yamlText,
              v.description(
                `The workflow as YAML text, at most ${MAX_YAML} characters: ${YAML_FORMAT} Give this or file_path, not both.`,
              ),
            ),
          ),
          wait_seconds: v.optional(
            v.pipe(
              v.number('wait_seconds must be a number of seconds'),
              v.minValue(0, 'wait_seconds must be at least 0'),
              v.maxValue(maxWait, `wait_seconds must be at most ${maxWait}`),
              v.description(
                `Seconds to wait for the run to end before returning its current state: 0 to ${maxWait}, default 30. 0 returns the run_id at once.`,
              ),
            ),
          ),
        }),
        v.check(
          (params) => (params.file_path === undefined) !== (params.yaml_content === undefined),
          'exactly one of file_path or yaml_content is required',
        ),
      ),
      output: v.strictObject({
        run_id: v.string(),
        workflow_name: v.string(),
        status: v.string(),
        steps: v.array(
          v.strictObject({ step_id: v.string(), status: v.string(), result: textOrNull, error: textOrNull }),
        ),
      }),
      async approvalSummary(params) {
        const { workflow } = await prepare(params)
        const line =
          params.yaml_content === undefined
            ? buildApprovalSummary('workflow_run', params)
            : `Run inline workflow: ${workflow.definition?.name === undefined ? '(unnamed)' : quoted(workflow.definition.name)}`
        return `${line}${contentOf(workflow)}`
      },
      async handler(params, context) {
        const { workflow, saved } = await prepare(params)
        // Run after approval when it was needed: these steps are confirmed from now on.
        if (saved) confirm(workflow)
        const deliverTo = resolveDeliveryTargets(undefined, context.sessionKey, options.defaultDeliverTo)
        const { runId: id } = await engine.startRun(workflow, {
          ...(deliverTo.length === 0 ? {} : { deliverTo }),
          ...(context.sessionKey === undefined ? {} : { originSession: context.sessionKey }),
          ...creatorOf(context),
          nesting: nestingOf(context),
        })
        const run = await waitWithProgress(id, (params.wait_seconds ?? 30) * 1000, context)
        return {
          run_id: run.runId,
          workflow_name: run.workflowName,
          status: run.status,
          steps: run.steps.map((step) => ({
            step_id: step.stepId,
            status: step.status,
            result: step.result,
            error: step.error,
          })),
        }
      },
    }),
    defineTool({
      name: 'workflow_status',
      title: 'Workflow run status',
      description: 'A workflow run with its steps, their status, results and errors.',
      safety: 'safe',
      parameters: v.strictObject({ run_id: runId }),
      output: v.strictObject({
        ...summaryOutput.entries,
        input_tokens: v.optional(v.nullable(v.number())),
        output_tokens: v.optional(v.nullable(v.number())),
        cost_usd: v.optional(v.nullable(v.number())),
        ...usageUnavailableEntry,
        steps: v.array(v.strictObject({ ...stepOutput.entries, ...spendOutputEntries })),
      }),
      async handler(params) {
        const run = await engine.getRun(params.run_id)
        if (run === undefined)
          throw new ToolError('TOOL_FAILED', `no workflow run with id ${JSON.stringify(params.run_id)}`, {
            reason: 'WORKFLOW_RUN_NOT_FOUND',
            data: { runId: params.run_id },
          })
        if (options.spend === undefined) return runView(run)
        // The model and cost of each prompt step, and of the run (every attempt), from the ledger;
        // a ledger that cannot be read leaves the run as its engine recorded it.
        const spends = await lookUpSpend(options.spend, [run.runId])
        return spends === SPEND_UNAVAILABLE
          ? { ...runView(run), usage_unavailable: true as const }
          : spentRunView(run, spends)
      },
    }),
    defineTool({
      name: 'workflow_list',
      title: 'List workflow runs',
      description:
        'Recent workflow runs, newest first (optionally by status), and the names of saved workflows.',
      safety: 'safe',
      parameters: v.strictObject({
        limit: v.optional(
          v.pipe(
            v.number(),
            v.integer('limit must be a whole number'),
            v.minValue(1, 'limit must be at least 1'),
            v.maxValue(200, 'limit must be at most 200'),
            v.description('How many runs to return, newest first: 1 to 200, default 20.'),
          ),
        ),
        status: v.optional(
          v.pipe(
            v.picklist(RUN_STATUS_VALUES),
            v.description(
              'Only runs in this state: pending, running, completed, failed or cancelled. Default: all.',
            ),
          ),
        ),
        cursor: runCursorParameter('status'),
      }),
      output: v.strictObject({
        runs: v.array(summaryOutput),
        count: v.number(),
        /** Where the next (older) page starts; null when this page is the last. */
        next_cursor: v.nullable(v.string()),
        saved: v.array(v.string()),
      }),
      async handler(params) {
        const limit = params.limit ?? 20
        const cursor = params.cursor === undefined ? undefined : decodeRunCursor(params.cursor)
        const before = cursor === undefined ? undefined : { startedAt: cursor.key, id: cursor.id }
        const found = await engine.listRuns({
          limit,
          ...(params.status === undefined ? {} : { status: params.status }),
          ...(before === undefined ? {} : { before }),
        })
        const last = found.at(-1)
        const runs = found.map(summaryView)
        return {
          runs,
          count: runs.length,
          // A full page may have more behind it; a short one is the last.
          next_cursor:
            found.length === limit && last !== undefined
              ? encodeRunCursor(last.startedAt ?? 0, last.runId)
              : null,
          saved: [...(await directory.list())],
        }
      },
    }),
    defineTool({
      name: 'workflow_cancel',
      title: 'Cancel workflow run',
      idempotent: true,
      description: 'Cancel a running workflow: running steps are stopped and the run ends cancelled.',
      safety: 'moderate',
      parameters: v.strictObject({ run_id: runId }),
      output: v.strictObject({ status: v.string(), run_id: v.string() }),
      async handler(params) {
        const run = await engine.cancelRun(params.run_id)
        return { status: run.status, run_id: run.runId }
      },
    }),
    defineTool({
      name: 'workflow_rerun',
      title: 'Rerun workflow from a step',
      description:
        'Rerun an ended workflow run from a step: a new run of the same definition in which from_step (default: the step that failed) and every step that depends on it run again, while the other completed steps keep their earlier results (shown with reused_from) and {{step.result}} reads them. Waits up to wait_seconds like workflow_run. Refused while the run is still running, and for a step the run does not have.',
      safety: 'moderate',
      // Its run steps run again: dangerous when any of those runs a command or names a secret (WF-10),
      // as for workflow_run; a call not planned yet is judged by its worst case.
      safetyFor: (params) => {
        const plan = plans.get(params)
        if (plan === undefined) return 'dangerous'
        const again = new Set(plan.rerunSteps)
        const steps = (plan.workflow.definition?.steps ?? []).filter((step) => again.has(step.id))
        return steps.some(isDangerousStep) ? 'dangerous' : 'moderate'
      },
      worstSafety: 'dangerous',
      async preflight(params) {
        await planOf(params)
        return undefined
      },
      parameters: v.strictObject({
        run_id: runId,
        from_step: v.optional(
          v.pipe(
            v.string('from_step must be a string'),
            v.minLength(1, 'from_step must not be empty'),
            v.maxLength(ID_MAX_LENGTH),
            v.description(
              'The id of the step to run again, with every step that depends on it (workflow_status lists the steps). Default: the first step(s) that failed.',
            ),
          ),
        ),
        wait_seconds: v.optional(
          v.pipe(
            v.number('wait_seconds must be a number of seconds'),
            v.minValue(0, 'wait_seconds must be at least 0'),
            v.maxValue(maxWait, `wait_seconds must be at most ${maxWait}`),
            v.description(
              `Seconds to wait for the new run to end before returning its current state: 0 to ${maxWait}, default 30. 0 returns the run_id at once.`,
            ),
          ),
        ),
      }),
      output: v.strictObject({
        run_id: v.string(),
        rerun_of: v.string(),
        workflow_name: v.string(),
        status: v.string(),
        from_steps: v.array(v.string()),
        rerun_steps: v.array(v.string()),
        reused_steps: v.array(v.string()),
        steps: v.array(
          v.strictObject({
            step_id: v.string(),
            status: v.string(),
            result: textOrNull,
            error: textOrNull,
            reused_from: textOrNull,
          }),
        ),
      }),
      async approvalSummary(params) {
        const plan = await planOf(params)
        const again = new Set(plan.rerunSteps)
        const shell = (plan.workflow.definition?.steps ?? []).filter((step) => again.has(step.id))
        return `Rerun workflow ${quoted(plan.workflowName)} (run ${quoted(plan.runId)}): runs again ${plan.rerunSteps.map(word).join(', ')}${
          plan.reusedSteps.length === 0 ? '' : `; reuses ${plan.reusedSteps.map(word).join(', ')}`
        }${shellCommandsOf(shell)}`
      },
      async handler(params, context) {
        const started = await engine.rerunRun(params.run_id, {
          ...fromStepOption(params.from_step),
          ...(context.sessionKey === undefined ? {} : { originSession: context.sessionKey }),
          ...creatorOf(context),
          nesting: nestingOf(context),
        })
        const run = await waitWithProgress(started.runId, (params.wait_seconds ?? 30) * 1000, context)
        return {
          run_id: run.runId,
          rerun_of: params.run_id,
          workflow_name: run.workflowName,
          status: run.status,
          from_steps: [...started.plan.fromSteps],
          rerun_steps: [...started.plan.rerunSteps],
          reused_steps: [...started.plan.reusedSteps],
          steps: run.steps.map((step) => ({
            step_id: step.stepId,
            status: step.status,
            result: step.result,
            error: step.error,
            reused_from: step.reusedFrom ?? null,
          })),
        }
      },
    }),
    defineTool({
      name: 'workflow_save',
      title: 'Save workflow',
      description:
        'Validate a YAML workflow and save it as <name>.flow.yaml in the workflows directory (name: letters, digits, - and _). An existing file is replaced only with overwrite: true.',
      safety: 'moderate',
      // A saved workflow with shell steps or secret references runs later, possibly on a
      // schedule, with nobody watching (SECURITY.md WF-10): saving it needs confirmation. Without
      // YAML (a call invokeTool's validation refuses) there is nothing to save.
      // One that starts runs by itself (a schedule, a webhook trigger) needs it too.
      safetyFor: (params) => {
        if (params.yaml_content === undefined) return 'moderate'
        const safety = safetyOf(params)
        if (safety === 'dangerous') return safety
        try {
          const entry = inline(params)
          return entry === undefined || startsByItself(entry.workflow) ? 'dangerous' : safety
        } catch {
          return 'dangerous'
        }
      },
      worstSafety: 'dangerous',
      preflight(params, context) {
        sessions.set(params, context.sessionKey)
        const entry = inline(params)
        if (entry !== undefined)
          assertDeliverable(targetsOf(entry.workflow), options.checkTarget, 'deliver_to')
        return undefined
      },
      async approvalSummary(params) {
        const { workflow } = await prepare(params)
        return `${buildApprovalSummary('workflow_save', params)}${startersOf(workflow)}${contentOf(workflow)}`
      },
      parameters: v.strictObject({
        name: v.pipe(
          v.string('name must be a string'),
          v.minLength(1, 'name must not be empty'),
          v.maxLength(64, 'name must be at most 64 characters'),
          v.description(
            'Name to save under: 1-64 letters, digits, - and _, starting with a letter or digit; the file is <name>.flow.yaml. Run it later with workflow_run file_path: <name>.',
          ),
        ),
        yaml_content: v.pipe(
          yamlText,
          v.description(
            `The workflow as YAML text, validated before it is written (at most ${MAX_YAML} characters): ${YAML_FORMAT}`,
          ),
        ),
        overwrite: v.optional(
          v.pipe(
            v.boolean('overwrite must be true or false'),
            v.description(
              'true replaces a saved workflow of the same name; default false, where an existing name is an error.',
            ),
          ),
        ),
      }),
      output: v.strictObject({ status: v.literal('saved'), name: v.string(), file_path: v.string() }),
      async handler(params) {
        const saved = await directory.save(params.name, params.yaml_content, {
          overwrite: params.overwrite === true,
        })
        // Stored after approval when it was needed: running it later asks nobody again.
        confirm((await prepare(params)).workflow)
        return { status: 'saved' as const, name: saved.name, file_path: saved.filePath }
      },
    }),
  ]
}
