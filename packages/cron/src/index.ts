export { describeSchedule } from './describe-schedule.js'
export type { CronErrorCode } from './errors.js'
export { CronError, DeliveryError } from './errors.js'
export type { Stall, StallCause } from './maintenance.js'
export type {
  CatchupPolicy,
  CronDelivery,
  CronDeliveryStatus,
  CronJob,
  CronJobKind,
  CronRun,
  CronRunStatus,
  DeliveryStatus,
  NextRun,
  NotifyPolicy,
  OverlapPolicy,
  RunTrigger,
  ScheduleType,
  SessionMode,
} from './model.js'
export type { CompiledSchedule } from './next-fire-time.js'
export { compileSchedule, nextFireTime } from './next-fire-time.js'
export type { PingUrlProblem } from './ping-url.js'
export { MAX_PING_URL_CHARS, pingUrlFor } from './ping-url.js'
export type {
  AgentRunFailure,
  AgentRunner,
  AgentRunOptions,
  AgentRunRequest,
  AgentRunResult,
  ChannelSender,
  Clock,
  CompletionWithOutcome,
  CronJobPatch,
  CronStore,
  DeliveryUpdate,
  IdGenerator,
  JobCountFilter,
  JobListFilter,
  JobSchedule,
  JobScheduleUpdate,
  JobSort,
  JobVersion,
  ListRunsOptions,
  LogFields,
  Logger,
  NewCronDelivery,
  NewCronRun,
  OccurrenceKey,
  PingDetails,
  PingPhase,
  RunCompletion,
  RunInsertResult,
  RunMonitor,
  RunOutcome,
  RunScope,
  RunScopeInfo,
  ShellRunner,
  ShellRunRequest,
  ShellRunResult,
  StoreCallOptions,
  TimerHandle,
  TokenTotal,
} from './ports.js'
export { silentLogger, systemClock } from './ports.js'
export type {
  CronPreview,
  DstNote,
  PreviewClash,
  PreviewDelivery,
  PromptEstimate,
} from './preview.js'
export { DEFAULT_PREVIEW_COUNT, MAX_PREVIEW_COUNT } from './preview.js'
export type { PingStats } from './run-pings.js'
export type { ScheduleInput, ValidatedSchedule } from './schedule.js'
export { validateSchedule, WEBHOOK_NAME_PATTERN } from './schedule.js'
export type { SchedulerHealth, TriggerOptions, TriggerResult } from './scheduler.js'
export { CronScheduler } from './scheduler.js'
export type { CronSchedulerEvents } from './scheduler-events.js'
export type { CronSchedulerOptions } from './scheduler-options.js'
export type {
  AddJobResult,
  CronJobInput,
  CronJobUpdate,
  CronPreviewInput,
  CronPreviewOptions,
  CronServiceOptions,
  HistoryOptions,
  JobPagePosition,
  JobWithNextRuns,
} from './service.js'
export { CronService } from './service.js'
