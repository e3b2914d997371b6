export type {
  LoadedWorkflow,
  RetryPolicy,
  StepDefinition,
  StepKind,
  WorkflowDefinition,
  WorkflowPlan,
  WorkflowTrigger,
} from './definition.js'
export type { WorkflowErrorCode, WorkflowIssue, WorkflowIssueCode } from './errors.js'
export { WorkflowError } from './errors.js'
export type { WorkflowEventName, WorkflowEvents, WorkflowListener } from './events.js'
export type { WorkflowLimits } from './limits.js'
export { AGENT_WORKFLOW_LIMITS, TRUSTED_WORKFLOW_LIMITS } from './limits.js'
export type {
  RunStatus,
  StepRunRecord,
  StepSnapshot,
  StepStatus,
  WorkflowRunRecord,
  WorkflowRunSnapshot,
  WorkflowRunSummary,
} from './model.js'
export type { ParseWorkflowOptions, WorkflowParseResult } from './parse-workflow.js'
export { parseWorkflow } from './parse-workflow.js'
export type {
  AgentRunFailure,
  AgentRunner,
  AgentRunOptions,
  AgentRunRequest,
  AgentRunResult,
  ChannelSender,
  ClaimRunsRequest,
  Clock,
  LeasedRun,
  ListRunsQuery,
  LogFields,
  Logger,
  NewWorkflowRun,
  OwnedCallOptions,
  ReusedStep,
  RunCompletion,
  RunLease,
  ShellRunner,
  ShellRunRequest,
  ShellRunResult,
  StepPatch,
  StoreCallOptions,
  TimerHandle,
  WorkflowStore,
} from './ports.js'
export { silentLogger } from './silent-logger.js'
export { runIdOfStepSession, stepSessionKey } from './step-session.js'
export { systemClock } from './system-clock.js'
export type { WorkflowDirectoryOptions, WorkflowFile } from './workflow-directory.js'
export { WorkflowDirectory } from './workflow-directory.js'
export type {
  RerunOptions,
  RerunPlan,
  StartRunOptions,
  WaitForRunOptions,
  WorkflowEngineOptions,
} from './workflow-engine.js'
export { WorkflowEngine } from './workflow-engine.js'
