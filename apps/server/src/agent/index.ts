export {
  type AgentRunner,
  type AgentRunnerOptions,
  type AgentRunRequest,
  type AgentTurnResult,
  type ChatOptions,
  createAgentRunner,
  NO_MODEL_MESSAGE,
  type ObserveOptions,
  type TokenUsage,
  type UsageRecord,
} from './agent-runner.js'
export { AgentError, type AgentErrorCode } from './errors.js'
export type { ConversationMemory } from './memory.js'
export { OBSERVER_SYSTEM_PROMPT } from './observer.js'
export { classifySession, type SessionKind, type SessionSource } from './session-kind.js'
export type { UnattendedPermissions } from './system-prompt.js'
export type { DenialReason, ToolDenial } from './turn-tools.js'
