export {
  type AgentRunner,
  type AgentRunnerOptions,
  type AgentRunRequest,
  type AgentTurnResult,
  createAgentRunner,
  NO_MODEL_MESSAGE,
  type UsageRecord,
} from './agent-runner.js'
export { AgentError } from './errors.js'
export type { ConversationMemory } from './memory.js'
export { OBSERVER_SYSTEM_PROMPT } from './observer.js'
export { classifySession } from './session-kind.js'
