export { DURATION_FORMS, formatDuration, parseDuration } from './duration.js'
export type { CronErrorCode } from './errors.js'
export { CronError, toError } from './errors.js'
export type { Unsubscribe } from './events.js'
export { TypedEmitter } from './events.js'
export type { ExecutionOutcome } from './executor.js'
export { buildAgentPrompt, DEFAULT_AUTOMATION_PREFIX, deliveryText, sessionKeyFor } from './executor.js'
export type {
  CatchupPolicy,
  CronJob,
  CronJobKind,
  CronRun,
  CronRunStatus,
  DeliveryStatus,
  NextRun,
  OverlapPolicy,
  RunTrigger,
  ScheduleType,
  SessionMode,
} from './model.js'
export { RUN_STATUSES } from './model.js'
export type { CompiledSchedule } from './next-fire-time.js'
export { CRON_MACROS, compileSchedule, nextFireTime } from './next-fire-time.js'
export type {
  AgentRunner,
  AgentRunRequest,
  AgentRunResult,
  ChannelSender,
  Clock,
  CronJobPatch,
  CronStore,
  IdGenerator,
  JobScheduleUpdate,
  ListRunsOptions,
  LogFields,
  Logger,
  NewCronRun,
  RunCompletion,
  ShellRunner,
  ShellRunRequest,
  ShellRunResult,
  StoreCallOptions,
  TimerHandle,
} from './ports.js'
export { silentLogger, systemClock } from './ports.js'
export type { ScheduleInput, ValidatedSchedule } from './schedule.js'
export {
  compileJobSchedule,
  DEFAULT_MIN_INTERVAL_MS,
  MIN_INTERVAL_CHECKED_FIRES,
  normalizeScheduleType,
  parseAtTime,
  upcomingRuns,
  validateSchedule,
} from './schedule.js'
export type { TriggerResult } from './scheduler.js'
export { CronScheduler } from './scheduler.js'
export type { CronSchedulerEvents } from './scheduler-events.js'
export type { CronSchedulerOptions } from './scheduler-options.js'
export type {
  AddJobResult,
  CronJobInput,
  CronJobUpdate,
  CronServiceOptions,
  HistoryOptions,
  JobWithNextRuns,
} from './service.js'
export { CronService, nextRunsOf } from './service.js'
export type { WallTimeResolution } from './time-zone.js'
export { hostTimeZone, resolveTimeZone, ZoneCalendar } from './time-zone.js'
