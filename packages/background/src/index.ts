export { AUTOMATION_PREFIX } from './automation-prefix.js'
export {
  BackgroundManager,
  type BackgroundManagerOptions,
  type BackgroundManagerState,
  DEFAULT_BACKGROUND_OPTIONS,
} from './background-manager.js'
export { BackgroundError, type BackgroundErrorCode, PermanentError, toError } from './errors.js'
export type { BackgroundEventName, BackgroundEvents, BackgroundListener } from './events.js'
export type {
  AgentRunner,
  AgentRunRequest,
  AgentRunResult,
  ChannelNotifier,
  Clock,
  LogFields,
  Logger,
  TimerHandle,
} from './ports.js'
export { silentLogger } from './silent-logger.js'
export { systemClock } from './system-clock.js'
export {
  isTerminalStatus,
  type SubmitRequest,
  TASK_STATUSES,
  type TaskId,
  type TaskResult,
  type TaskSnapshot,
  type TaskStatus,
  type TerminalTaskStatus,
} from './task.js'
