export { type FunctionToolDefinition, toFunctionTool } from './adapters.js'
export {
  type ApprovalGate,
  type ApprovalPolicy,
  type ApprovalRequest,
  buildApprovalSummary,
  requiresApproval,
} from './approval.js'
export {
  type BackgroundTaskView,
  type BackgroundToolsOptions,
  type BackgroundToolsService,
  createBackgroundTools,
} from './background-tools.js'
export {
  CRON_RUN_STATUSES,
  type CronDeliveryView,
  type CronJobFilter,
  type CronJobPagePosition,
  type CronJobView,
  type CronPreviewView,
  type CronRunStatusName,
  type CronRunView,
  type CronToolJobInput,
  type CronToolsOptions,
  type CronToolsService,
  createCronTools,
  createManageCronJobsTool,
  cronDeliveryView,
  cronDeliveryViewSchema,
  cronJobView,
  cronJobViewSchema,
  cronPreviewView,
  cronPreviewViewSchema,
  cronRunView,
  cronRunViewSchema,
  type NextRunView,
} from './cron-tools.js'
export {
  assertDeliverable,
  type DeliveryTargetCheck,
  deliversBeyond,
  deliveryTargetFromSession,
} from './delivery.js'
export { ToolError, type ToolErrorCode } from './errors.js'
export {
  createExecTools,
  type ExecBackgroundProcess,
  type ExecRunOutcome,
  type ExecRunRequest,
  type ExecToolsBackend,
  type ExecToolsOptions,
} from './exec-tools.js'
export {
  describeIssues,
  type InvokeOptions,
  invokeTool,
  type ParameterIssue,
  type ToolCallOutcome,
} from './invoke.js'
export {
  type AnyTool,
  callSafety,
  defineTool,
  type JsonSchema,
  type Tool,
  type ToolContext,
  type ToolOutputSchema,
  type ToolProgress,
  type ToolSafety,
} from './tool.js'
export {
  createWorkflowTools,
  type WorkflowHandle,
  type WorkflowRerunPlanView,
  type WorkflowRunSummaryView,
  type WorkflowRunView,
  type WorkflowStepView,
  type WorkflowToolsOptions,
  type WorkflowToolsService,
} from './workflow-tools.js'
