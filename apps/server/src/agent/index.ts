export {
  type AgentRunCallOptions,
  type AgentRunner,
  type AgentRunnerOptions,
  type AgentRunRequest,
  type AgentTurnResult,
  createAgentRunner,
  type SpendLimit,
  type TurnContext,
  type UsageRecord,
} from './agent-runner.js'
export { AgentError } from './errors.js'
export type { ConversationMemory } from './memory.js'
export { NO_MODEL_MESSAGE } from './no-model.js'
export { OBSERVER_SYSTEM_PROMPT } from './observer.js'
export { CHAT_SESSION, unattendedSession } from './session-kind.js'
export type { AgentTurnEvent } from './stream-turn.js'
