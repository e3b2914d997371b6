/** Every error code `@lango/workflow` raises or records. Branch on these, never on messages. */
export type WorkflowErrorCode =
  /** The YAML failed to parse or validate; `issues` lists every problem, each with its path. Nothing was run or written. */
  | 'WORKFLOW_INVALID'
  /** An option of the engine or of a call is out of range or of the wrong type; `data.option` names it. Nothing was run or written. */
  | 'WORKFLOW_INVALID_OPTION'
  /** A save name breaks the name rules (`[A-Za-z0-9][A-Za-z0-9_-]{0,63}`, no device names). */
  | 'WORKFLOW_INVALID_NAME'
  /** A file path lies outside the workflows directory (and workspace), is a symlink, or does not end in `.flow.yaml`. */
  | 'WORKFLOW_PATH_NOT_ALLOWED'
  /** `save` without `overwrite: true` found an existing file of that name. */
  | 'WORKFLOW_FILE_EXISTS'
  /** No saved workflow or file at that name or path. */
  | 'WORKFLOW_FILE_NOT_FOUND'
  /** The workflows directory is a symlink, not a directory, or group/world-writable (SECURITY.md WF-3). */
  | 'WORKFLOW_DIRECTORY_UNSAFE'
  /** No run with this id. */
  | 'WORKFLOW_RUN_NOT_FOUND'
  /** `cancelRun` was asked for a run that already ended; `data.status` says how. */
  | 'WORKFLOW_RUN_ENDED'
  /** `rerunRun` was asked for a run that is still `pending` or `running`; wait for it to end or cancel it. */
  | 'WORKFLOW_RUN_ACTIVE'
  /** `rerunRun`'s `fromStep` names no step of the run; `data.steps` lists the run's step ids. */
  | 'WORKFLOW_STEP_NOT_FOUND'
  /** `rerunRun` without `fromStep` on a run whose steps all completed: name the step to rerun from. */
  | 'WORKFLOW_NOTHING_TO_RERUN'
  /** Starting the run would exceed `maxConcurrentRuns` or `maxRunsPerWorkflow`. */
  | 'WORKFLOW_TOO_MANY_RUNS'
  /** A run started from inside a run nests deeper than `maxNesting` (SECURITY.md WF-7). */
  | 'WORKFLOW_NESTING_TOO_DEEP'
  /** The engine is not started, or is stopping. */
  | 'WORKFLOW_ENGINE_STOPPED'
  /** The workflow has a step kind (`prompt` or `run`), or a `when` gate, for which no runner was configured. */
  | 'WORKFLOW_RUNNER_MISSING'
  /** A step's runner threw, its shell command exited non-zero, or its `when` gate failed (message `when: …`). */
  | 'WORKFLOW_STEP_FAILED'
  /** The ShellRunner's guard refused a step's command (`blocked: true`); the step fails with the runner's message, without retries. */
  | 'WORKFLOW_COMMAND_BLOCKED'
  /** A step attempt ran past its `timeout`. */
  | 'WORKFLOW_STEP_TIMEOUT'
  /** A step's rendered input exceeds `maxRenderedInputLength` (results spliced in made it too long). */
  | 'WORKFLOW_INPUT_TOO_LARGE'
  /** The run was cancelled on request; also the abort reason running steps see. */
  | 'WORKFLOW_RUN_CANCELLED'
  /** The run passed `runTimeoutMs`; also the abort reason running steps see. */
  | 'WORKFLOW_RUN_TIMEOUT'
  /** Another engine took over the run (its lease expired) or ended it, or the lease ran out unrenewed; this engine stopped working on it. */
  | 'WORKFLOW_OWNERSHIP_LOST'
  /** A stored row failed validation on read (a JSON column or an unknown status). */
  | 'WORKFLOW_STORE_CORRUPT'
  /** The store's database lacks the package's tables or columns: run `migrateWorkflow(db)` (`@lango/workflow/sqlite`) first. */
  | 'WORKFLOW_STORE_NOT_MIGRATED'
  /** A delivery through the `ChannelSender` rejected or timed out. The run's status is unaffected. */
  | 'WORKFLOW_DELIVERY_FAILED'

/** Machine-readable codes of validation issues. */
export type WorkflowIssueCode =
  /** The YAML does not parse; `line` and `column` say where (never the text itself). */
  | 'yaml_syntax'
  /** The YAML uses more aliases than `maxAliasCount` allows (alias bombs). */
  | 'yaml_alias_limit'
  /** The source is larger than `maxSourceBytes`. */
  | 'source_too_large'
  /** Collections nest deeper than `maxDepth`. */
  | 'too_deep'
  /** More than `maxSteps` steps. */
  | 'too_many_steps'
  /** A step has more than `maxDependencies` entries in `depends_on`. */
  | 'too_many_dependencies'
  /** A value has the wrong type (string, number, list, mapping…). */
  | 'invalid_type'
  /** A key the schema does not know (typos like `depend_on`, merge keys `<<`). */
  | 'unknown_key'
  /** A required key is missing. */
  | 'missing_key'
  /** A value has the right type but breaks a rule (pattern, range, length). */
  | 'invalid_value'
  /** A duration does not parse or is out of range. */
  | 'invalid_duration'
  /** A step has both `prompt` and `run`, or neither. */
  | 'step_kind'
  /** Two steps share an id. */
  | 'duplicate_id'
  /** `depends_on` names a step that does not exist. */
  | 'unknown_dependency'
  /** A step depends on itself. */
  | 'self_dependency'
  /** The dependencies form a cycle; the message lists it. */
  | 'cycle'
  /** `{{x.result}}` names a step that does not exist. */
  | 'template_unknown_step'
  /** `{{x.result}}` names a step that is not an ancestor through `depends_on`. */
  | 'template_not_ancestor'
  /** A `{{…}}` placeholder that looks like a step reference but is not `{{step-id.result}}`. */
  | 'template_invalid'
  /** A placeholder in a `run` command sits where shell quoting cannot protect it (inside quotes, `${…}`, after `$`, in a heredoc or backticks). */
  | 'template_unsafe_context'
  /** The host's check of a shell command (`WorkflowEngineOptions.checkCommand`) refused it; the message says why. */
  | 'command_refused'

/**
 * One validation problem. `path` is like `steps[2].depends_on[0]` (`''` for the whole document).
 * Messages carry key names and step ids at most: never source text or scalar values (SECURITY.md WF-6).
 */
export interface WorkflowIssue {
  readonly path: string
  readonly message: string
  readonly code: WorkflowIssueCode
  /** 1-based line of the offending node, when known. */
  readonly line?: number
  /** 1-based column of the offending node, when known. */
  readonly column?: number
}

const brand = Symbol.for('lango.error')

/**
 * The error class of `@lango/workflow`. Branch on `code`; check identity with `WorkflowError.is`.
 * `cause` is kept on the instance for logs and never serialised.
 */
export class WorkflowError extends Error {
  override readonly name = 'WorkflowError'
  readonly [brand] = true
  /** Machine-readable details (ids, statuses, limits). Never prompts, results or secrets. */
  readonly data?: Readonly<Record<string, unknown>>
  /** For `WORKFLOW_INVALID`: every problem found, each with its path. */
  readonly issues?: readonly WorkflowIssue[]

  constructor(
    readonly code: WorkflowErrorCode,
    message: string,
    options?: {
      cause?: unknown
      data?: Readonly<Record<string, unknown>>
      issues?: readonly WorkflowIssue[]
    },
  ) {
    super(message, { cause: options?.cause })
    this.data = options?.data
    this.issues = options?.issues
  }

  /** True for a `WorkflowError` from any copy of this package (pnpm may install two). */
  static is(value: unknown): value is WorkflowError {
    return (
      typeof value === 'object' &&
      value !== null &&
      brand in value &&
      (value as { name?: unknown }).name === 'WorkflowError'
    )
  }

  /** What a server may return to a caller: `name`, `code`, `message`, and `data`/`issues` when present. Never `cause` or `stack`. */
  toJSON(): {
    name: 'WorkflowError'
    code: WorkflowErrorCode
    message: string
    data?: Readonly<Record<string, unknown>>
    issues?: readonly WorkflowIssue[]
  } {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      ...(this.data === undefined ? {} : { data: this.data }),
      ...(this.issues === undefined ? {} : { issues: this.issues }),
    }
  }
}

/** Builds the `WORKFLOW_INVALID` error for a list of issues. */
export function invalidWorkflowError(issues: readonly WorkflowIssue[]): WorkflowError {
  const count = issues.length
  const first = issues[0]
  const head = first === undefined ? '' : `: ${first.path === '' ? '' : `${first.path}: `}${first.message}`
  return new WorkflowError(
    'WORKFLOW_INVALID',
    `Workflow is invalid (${count} problem${count === 1 ? '' : 's'})${head}${count > 1 ? ' …' : ''}`,
    { issues, data: { issueCount: count } },
  )
}

/**
 * The longest delay a Node timer takes (2^31 − 1 ms, about 24.8 days): a longer one fires after
 * about 1 ms. Every option that feeds a timer is checked against it, as in `@lango/cron`.
 */
export const MAX_TIMER_MS = 2_147_483_647

/** Builds the `WORKFLOW_INVALID_OPTION` error for `option`; `message` says what is accepted. */
export function invalidOptionError(
  option: string,
  message: string,
  data?: Readonly<Record<string, unknown>>,
): WorkflowError {
  return new WorkflowError('WORKFLOW_INVALID_OPTION', message, { data: { option, ...data } })
}

/** Normalises anything thrown into an `Error`, keeping the original as `cause` when it was not one. */
export function toError(value: unknown): Error {
  if (value instanceof Error) return value
  let text: string
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value))
  } catch {
    text = Object.prototype.toString.call(value)
  }
  return new Error(text, { cause: value })
}
