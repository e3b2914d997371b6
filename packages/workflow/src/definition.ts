/** `prompt` steps go to the `AgentRunner`, `run` steps to the `ShellRunner`. */
export type StepKind = 'prompt' | 'run'

/** How often a step is tried and how long to wait in between. */
export interface RetryPolicy {
  /** Attempts in total, including the first (1 = no retry). */
  readonly attempts: number
  /** Delay before the second attempt; doubled after each further failure, capped at 10 minutes. */
  readonly backoffMs: number
}

/** One validated step. */
export interface StepDefinition {
  readonly id: string
  readonly kind: StepKind
  /** The `prompt` or `run` text as written, templates not yet substituted. */
  readonly text: string
  /** The `agent` routing hint of a prompt step. */
  readonly agent?: string
  readonly dependsOn: readonly string[]
  readonly timeoutMs?: number
  readonly retry?: RetryPolicy
  /** When true, a failure of this step neither fails the run nor skips its dependents. */
  readonly continueOnError: boolean
  /** Per-step delivery targets, told when this step ends (completed or failed). */
  readonly deliverTo?: readonly string[]
  /**
   * The step's `when` gate as written: a shell command run through the `ShellRunner` once the
   * step's dependencies completed, before its own work. Exit 0 runs the step (a prompt step gets
   * JSON stdout as untrusted data), 1 records it `skipped` (its dependents are skipped too),
   * anything else fails it.
   */
  readonly when?: string
  /**
   * When true (only with `when`), a skip by the gate does not skip the dependents: they run, and
   * `{{id.result}}` of this step is empty.
   */
  readonly continueOnSkip: boolean
  /** Step ids referenced as `{{id.result}}` in `text` or `when`, each once, in order of appearance. */
  readonly references: readonly string[]
  /** True when `text` uses `{{trigger.payload}}`, the payload of the call that started the run. */
  readonly usesTrigger?: boolean
}

/** What starts a saved workflow from outside: `{ webhook: <name> }`, a signed `POST /hooks/<name>` to the host. */
export interface WorkflowTrigger {
  readonly webhook: string
}

/** A validated workflow (the YAML's keys in camelCase, durations in milliseconds). */
export interface WorkflowDefinition {
  readonly name: string
  readonly description?: string
  /** A cron expression: saved workflows with a schedule are run by `@lango/cron` (not by this package). */
  readonly schedule?: string
  /**
   * What else starts the saved workflow (the host wires them; not this package): each run gets the
   * call's payload as `{{trigger.payload}}`.
   */
  readonly triggers?: readonly WorkflowTrigger[]
  readonly timezone?: string
  /** Run-level delivery targets; when absent, the caller's auto-detected targets are used. */
  readonly deliverTo?: readonly string[]
  readonly maxParallel?: number
  readonly steps: readonly StepDefinition[]
}

/** The dependency structure, for display and validation. */
export interface WorkflowPlan {
  /** A topological order of step ids (ties keep file order). */
  readonly order: readonly string[]
  /** Topological layers: each step sits one layer below its deepest dependency. For display only; execution uses a ready queue. */
  readonly layers: readonly (readonly string[])[]
}

/** A parsed, fully validated workflow with its source text and plan. */
export interface LoadedWorkflow {
  /** The YAML text; stored with each run so resume re-reads exactly what ran. */
  readonly source: string
  readonly definition: WorkflowDefinition
  readonly plan: WorkflowPlan
}
