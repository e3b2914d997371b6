export { AUTOMATION_PREFIX } from './automation-prefix.js'
export { BackgroundManager, type BackgroundManagerState } from './background-manager.js'
export type { BackgroundManagerOptions } from './background-manager-options.js'
export { BackgroundError, type BackgroundErrorCode, PermanentError } from './errors.js'
export type { BackgroundEventName, BackgroundEvents, BackgroundListener } from './events.js'
export type {
  AgentRunFailure,
  AgentRunner,
  AgentRunOptions,
  AgentRunRequest,
  AgentRunResult,
  ChannelNotifier,
  Clock,
  IdGenerator,
  LogFields,
  Logger,
  TimerHandle,
} from './ports.js'
export { silentLogger } from './silent-logger.js'
export { systemClock } from './system-clock.js'
export type { SubmitRequest, TaskId, TaskResult, TaskSnapshot, TaskStatus } from './task.js'
