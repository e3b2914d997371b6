import { type AgentRunner, BackgroundManager, type ChannelNotifier, type Logger } from '@lango/background'
import { CronService } from '@lango/cron'
import { checkSecretPlacement } from '@lango/exec'
import { WorkflowEngine } from '@lango/workflow'
import type { ServerConfig } from '../config/types.js'

type CronOptions = ConstructorParameters<typeof CronService>[0]
type EngineOptions = ConstructorParameters<typeof WorkflowEngine>[0]

/** The cron service over the host's ports, tuned by `config.cron`. */
export function createCron(
  config: ServerConfig,
  ports: Pick<
    CronOptions,
    'store' | 'ownerId' | 'clock' | 'shellRunner' | 'agentRunner' | 'channelSender' | 'logger' | 'runMonitor'
  >,
): CronService {
  return new CronService({
    ...ports,
    leaseMs: config.cluster.leaseMs,
    defaultTimezone: config.cron.timezone,
    minIntervalMs: config.cron.minIntervalMs,
    minAgentIntervalMs: config.cron.minAgentIntervalMs,
    maxConcurrentJobs: config.cron.maxConcurrentJobs,
    maxConsecutiveFailures: config.cron.maxConsecutiveFailures,
    // Unset: no token budget (the package's default).
    maxAiTokensPerDay: config.cron.maxAiTokensPerDay,
    maxPayloadInPromptBytes: config.cron.webhookPromptLimitBytes,
    retention: { maxAgeMs: config.cron.historyMaxAgeMs, maxRunsPerJob: config.cron.historyMaxRuns },
    // Pruning is a singleton duty of the cluster (the retention lease, ./retention-duty.ts).
    autoPrune: false,
    // A secret token where no run could bind it is refused when the job is written, not at 3 a.m.
    checkCommand: checkSecretPlacement,
  })
}

/** The workflow engine over the host's ports, tuned by `config.workflow`. */
export function createWorkflowEngine(
  config: ServerConfig,
  ports: Pick<
    EngineOptions,
    'store' | 'ownerId' | 'clock' | 'shellRunner' | 'agentRunner' | 'channelSender' | 'logger'
  >,
): WorkflowEngine {
  return new WorkflowEngine({
    ...ports,
    leaseMs: config.cluster.leaseMs,
    cwd: config.exec.cwd,
    defaultMaxParallel: config.workflow.maxParallel,
    // A webhook's body in a prompt step's {{trigger.payload}}: bounded as an ai job's prompt is.
    maxPayloadInPromptBytes: config.cron.webhookPromptLimitBytes,
    retention: { maxAgeMs: config.workflow.historyMaxAgeMs, maxRuns: config.workflow.historyMaxRuns },
    // Pruning is a singleton duty of the cluster (the retention lease, ./retention-duty.ts).
    autoPrune: false,
    checkCommand: checkSecretPlacement,
  })
}

/** The background task manager over the host's ports, tuned by `config.background`. */
export function createBackground(
  config: ServerConfig,
  ports: {
    readonly agentRunner: AgentRunner
    readonly channelSender: ChannelNotifier
    readonly logger: Logger
  },
): BackgroundManager {
  return new BackgroundManager({
    ...ports,
    maxConcurrentTasks: config.background.maxConcurrentTasks,
    maxQueuedTasks: config.background.maxQueuedTasks,
    taskTimeoutMs: config.background.taskTimeoutMs,
  })
}
