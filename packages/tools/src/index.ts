export { type FunctionToolDefinition, type McpToolDefinition, toFunctionTool, toMcpTool } from './adapters.js'
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
  TASK_STATUS_VALUES,
} from './background-tools.js'
export {
  type CronJobView,
  type CronRunView,
  type CronToolJobInput,
  type CronToolsOptions,
  type CronToolsService,
  createCronTools,
  createManageCronJobsTool,
  type NextRunView,
} from './cron-tools.js'
export { deliveryTargetFromSession, resolveDeliveryTargets } from './delivery.js'
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
  type ToolSafety,
} from './tool.js'
