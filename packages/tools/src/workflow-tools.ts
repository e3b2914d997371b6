import * as v from 'valibot'
import { resolveDeliveryTargets } from './delivery.js'
import { ToolError } from './errors.js'
import { ID_MAX_LENGTH, isoTime } from './format.js'
import { declaresShellStep, mentionsSecret } from './persistence-risk.js'
import { type AnyTool, defineTool } from './tool.js'

/** Run statuses, as `@lango/workflow` names them. */
export const RUN_STATUS_VALUES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const

/** A step of a run, as `@lango/workflow` snapshots it. */
export interface WorkflowStepView {
  readonly stepId: string
  readonly status: string
  readonly result: string | null
  readonly error: string | null
  readonly attempt: number
  readonly startedAt: number | null
  readonly completedAt: number | null
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
}

/** A run with its steps, as `WorkflowEngine.getRun` / `waitForRun` return it. */
export interface WorkflowRunView extends WorkflowRunSummaryView {
  readonly steps: readonly WorkflowStepView[]
}

/** A loaded workflow file, passed back to the engine as is. */
export interface WorkflowHandle {
  readonly source: string
}

/** What the workflow tools need; `WorkflowEngine` and `WorkflowDirectory` from `@lango/workflow` fit as they are. */
export interface WorkflowToolsService {
  readonly engine: {
    startRun(
      workflow: string | WorkflowHandle,
      options: { deliverTo?: readonly string[]; originSession?: string; nesting?: number },
    ): Promise<{ runId: string; workflowName: string }>
    waitForRun(runId: string, options: { timeoutMs?: number; signal?: AbortSignal }): Promise<WorkflowRunView>
    getRun(runId: string): Promise<WorkflowRunView | undefined>
    listRuns(query: {
      limit?: number
      status?: (typeof RUN_STATUS_VALUES)[number]
    }): Promise<readonly WorkflowRunSummaryView[]>
    cancelRun(runId: string): Promise<WorkflowRunView>
  }
  readonly directory: {
    read(nameOrPath: string): Promise<{ filePath: string; workflow: WorkflowHandle }>
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
  /** Longest wait `workflow_run` accepts (default 300 s). */
  readonly maxWaitSeconds?: number
}

const runId = v.pipe(
  v.string('run_id must be a string'),
  v.minLength(1, 'run_id must not be empty'),
  v.maxLength(ID_MAX_LENGTH),
)
const MAX_YAML = 256 * 1024
const yamlContent = v.pipe(
  v.string('yaml_content must be a string'),
  v.minLength(1, 'yaml_content must not be empty'),
  v.maxLength(MAX_YAML, `yaml_content must be at most ${MAX_YAML} characters`),
)

function stepView(step: WorkflowStepView) {
  return {
    step_id: step.stepId,
    status: step.status,
    result: step.result,
    error: step.error,
    attempt: step.attempt,
    started_at: isoTime(step.startedAt),
    completed_at: isoTime(step.completedAt),
  }
}

function summaryView(run: WorkflowRunSummaryView) {
  return {
    run_id: run.runId,
    workflow_name: run.workflowName,
    status: run.status,
    total_steps: run.totalSteps,
    completed_steps: run.completedSteps,
    error: run.error,
    started_at: isoTime(run.startedAt),
    completed_at: isoTime(run.completedAt),
  }
}

function runView(run: WorkflowRunView) {
  return { ...summaryView(run), steps: run.steps.map(stepView) }
}

/** Nesting depth of a call made from inside an automation run (`workflow:…` session keys count one level). */
function nestingOf(sessionKey: string | undefined): number {
  return sessionKey?.startsWith('workflow:') === true ? 1 : 0
}

/** The five workflow tools of the contract: `workflow_run`, `workflow_status`, `workflow_list`, `workflow_cancel`, `workflow_save`. */
export function createWorkflowTools(options: WorkflowToolsOptions): AnyTool[] {
  const { engine, directory } = options.service
  const maxWait = options.maxWaitSeconds ?? 300

  return [
    defineTool({
      name: 'workflow_run',
      description:
        "Run a YAML workflow, from file_path (a saved workflow name or a .flow.yaml file in the workflows directory) or from yaml_content. Waits up to wait_seconds (default 30) and returns run_id, status and each step's status and result; poll workflow_status for runs still going. deliver_to in the YAML is optional: results go to the current conversation when omitted.",
      safety: 'moderate',
      // Inline YAML with shell steps or secret references runs commands nobody has reviewed
      // (SECURITY.md WF-10); a saved file was confirmed when it was saved.
      safetyFor: (params) =>
        declaresShellStep(params.yaml_content) || mentionsSecret(params.yaml_content)
          ? 'dangerous'
          : 'moderate',
      parameters: v.pipe(
        v.strictObject({
          file_path: v.optional(
            v.pipe(v.string('file_path must be a string'), v.minLength(1), v.maxLength(4096)),
          ),
          yaml_content: v.optional(yamlContent),
          wait_seconds: v.optional(
            v.pipe(
              v.number('wait_seconds must be a number of seconds'),
              v.minValue(0, 'wait_seconds must be at least 0'),
              v.maxValue(maxWait, `wait_seconds must be at most ${maxWait}`),
            ),
          ),
        }),
        v.check(
          (params) => (params.file_path === undefined) !== (params.yaml_content === undefined),
          'exactly one of file_path or yaml_content is required',
        ),
      ),
      async handler(params, context) {
        const workflow =
          params.file_path !== undefined
            ? (await directory.read(params.file_path)).workflow
            : (params.yaml_content as string)
        const deliverTo = resolveDeliveryTargets(undefined, context.sessionKey, options.defaultDeliverTo)
        const { runId: id } = await engine.startRun(workflow, {
          ...(deliverTo.length === 0 ? {} : { deliverTo }),
          ...(context.sessionKey === undefined ? {} : { originSession: context.sessionKey }),
          nesting: nestingOf(context.sessionKey),
        })
        const run = await engine.waitForRun(id, {
          timeoutMs: (params.wait_seconds ?? 30) * 1000,
          ...(context.signal === undefined ? {} : { signal: context.signal }),
        })
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
      description: 'A workflow run with its steps, their status, results and errors.',
      safety: 'safe',
      parameters: v.strictObject({ run_id: runId }),
      async handler(params) {
        const run = await engine.getRun(params.run_id)
        if (run === undefined)
          throw new ToolError('TOOL_FAILED', `no workflow run with id ${JSON.stringify(params.run_id)}`)
        return runView(run)
      },
    }),
    defineTool({
      name: 'workflow_list',
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
          ),
        ),
        status: v.optional(v.picklist(RUN_STATUS_VALUES)),
      }),
      async handler(params) {
        const runs = (
          await engine.listRuns({
            limit: params.limit ?? 20,
            ...(params.status === undefined ? {} : { status: params.status }),
          })
        ).map(summaryView)
        return { runs, count: runs.length, saved: [...(await directory.list())] }
      },
    }),
    defineTool({
      name: 'workflow_cancel',
      description: 'Cancel a running workflow: running steps are stopped and the run ends cancelled.',
      safety: 'moderate',
      parameters: v.strictObject({ run_id: runId }),
      async handler(params) {
        const run = await engine.cancelRun(params.run_id)
        return { status: run.status, run_id: run.runId }
      },
    }),
    defineTool({
      name: 'workflow_save',
      description:
        'Validate a YAML workflow and save it as <name>.flow.yaml in the workflows directory (name: letters, digits, - and _). An existing file is replaced only with overwrite: true.',
      safety: 'moderate',
      // A saved workflow with shell steps or secret references runs later, possibly on a
      // schedule, with nobody watching (SECURITY.md WF-10): saving it needs confirmation.
      safetyFor: (params) =>
        declaresShellStep(params.yaml_content) || mentionsSecret(params.yaml_content)
          ? 'dangerous'
          : 'moderate',
      parameters: v.strictObject({
        name: v.pipe(
          v.string('name must be a string'),
          v.minLength(1, 'name must not be empty'),
          v.maxLength(64, 'name must be at most 64 characters'),
        ),
        yaml_content: yamlContent,
        overwrite: v.optional(v.boolean('overwrite must be true or false')),
      }),
      async handler(params) {
        const saved = await directory.save(params.name, params.yaml_content, {
          overwrite: params.overwrite === true,
        })
        return { status: 'saved', name: saved.name, file_path: saved.filePath }
      },
    }),
  ]
}
