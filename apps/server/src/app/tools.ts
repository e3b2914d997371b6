import type { BackgroundManager } from '@lango/background'
import type { CronService } from '@lango/cron'
import { blockLangoExec, run } from '@lango/exec'
import { runWithPty } from '@lango/exec/pty'
import {
  type AnyTool,
  createBackgroundTools,
  createCronTools,
  createExecTools,
  createManageCronJobsTool,
  createWorkflowTools,
  type DeliveryTargetCheck,
} from '@lango/tools'
import type { WorkflowDirectory, WorkflowEngine } from '@lango/workflow'
import type { ServerConfig } from '../config/types.js'
import { ServerError } from '../errors.js'
import type { Logger } from '../logger.js'
import { scheduledJobRemovalProblem, scheduleProblems } from '../scheduled-workflows/sync.js'
import type { UsageLedger } from '../usage/usage-ledger.js'
import { createSecretsTools } from '../vault/secrets-tool.js'
import { automationOf } from './automation.js'
import type { HostExec } from './host-exec.js'
import type { LazyVault } from './lazy-vault.js'

/** The services the agent tools drive. */
export interface ToolServices {
  readonly exec: Pick<HostExec, 'defaults' | 'processes' | 'checkEnv'>
  readonly cron: CronService
  readonly background: BackgroundManager
  readonly engine: WorkflowEngine
  readonly directory: WorkflowDirectory
  readonly vault: LazyVault['vault']
  /** Brings the cron jobs of scheduled workflows in step (the server's `syncSchedules()`). */
  readonly syncSchedules: () => Promise<void>
  /** The usage ledger: the model and cost of runs, for cron_history, bg_result and workflow_status. */
  readonly usage: UsageLedger
  /** Why results could not reach a delivery target (its channel is not configured), or undefined. */
  readonly checkTarget: DeliveryTargetCheck
}

/**
 * Every agent tool, in a stable order (`tools/list`, `GET /api/tools`): exec always, cron,
 * background and workflow when enabled, then the secrets tools.
 */
export function createTools(config: ServerConfig, services: ToolServices, logger: Logger): AnyTool[] {
  const { exec, cron, background, engine, directory } = services
  // workflow_save re-registers the saved workflow's schedule at once. A workflow whose schedule or
  // webhook triggers cron could not register (a name too long for a job, a job of that name that is
  // not the server's, a schedule cron refuses) is refused before anything is written: answering
  // `saved` for a workflow that never runs, or whose old schedule keeps firing, would hide it.
  const savingDirectory = {
    read: directory.read.bind(directory),
    list: directory.list.bind(directory),
    async save(...args: Parameters<WorkflowDirectory['save']>) {
      const [name, source] = args
      let workflow: ReturnType<WorkflowEngine['load']> | undefined
      try {
        workflow = engine.load(source)
      } catch {
        // Invalid: directory.save refuses it with every issue.
      }
      const problems = workflow === undefined ? [] : await scheduleProblems(cron, name, workflow)
      if (problems.length > 0)
        throw new ServerError(
          'SERVER_SCHEDULE_FAILED',
          `The workflow ${name} was not saved: cron cannot register what starts it (${problems.join('; ')}).`,
          { data: { workflow: name, problems } },
        )
      const saved = await directory.save(...args)
      await services
        .syncSchedules()
        .catch((error) => logger.warn('schedule sync after save failed', { error }))
      return saved
    },
  }
  // The cron job of a saved workflow's schedule is made from its file: removing it while the file
  // still declares it is refused (the next sync would make it again), saying how to unschedule it.
  const cronService = new Proxy(cron, {
    get(target, property) {
      if (property === 'remove')
        return async (idOrName: string, options?: { readonly signal?: AbortSignal }) => {
          const problem = await scheduledJobRemovalProblem(target, directory, idOrName)
          if (problem !== undefined)
            throw new ServerError('SERVER_SCHEDULED_WORKFLOW_JOB', problem.message, {
              data: { job: problem.job, workflow: problem.workflow },
            })
          return target.remove(idOrName, options)
        }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  const defaultDeliverTo = config.channels.defaultDeliverTo
  const { checkTarget } = services
  // A ledger read error is logged here; the tools then answer without model and cost
  // (`usage_unavailable: true`): showing spend is secondary to showing the run.
  const spend = (runIds: readonly string[]) =>
    services.usage.ofRuns(runIds).catch((error: unknown) => {
      logger.warn('usage ledger not read: runs are shown without their model and cost', {
        error,
        runs: runIds.length,
      })
      throw error
    })
  return [
    ...createExecTools({
      backend: {
        run: (command, options) => run(command, { ...exec.defaults, ...options }),
        runWithPty: (command, options) => runWithPty(command, { ...exec.defaults, ...options }),
        registry: exec.processes,
        blockLangoExec,
        checkEnv: exec.checkEnv,
      },
      automationAvailable: automationOf(config),
      defaultTimeoutSeconds: Math.round(config.exec.timeoutMs / 1000),
      maxTimeoutSeconds: Math.round(config.exec.maxTimeoutMs / 1000),
    }),
    ...(config.cron.enabled
      ? [
          ...createCronTools({ service: cronService, defaultDeliverTo, spend, checkTarget }),
          createManageCronJobsTool({ service: cronService, defaultDeliverTo }),
        ]
      : []),
    ...(config.background.enabled
      ? createBackgroundTools({
          service: background,
          spend,
          checkTarget,
          ...(defaultDeliverTo[0] === undefined ? {} : { defaultChannel: defaultDeliverTo[0] }),
        })
      : []),
    ...(config.workflow.enabled
      ? createWorkflowTools({
          service: { engine, directory: savingDirectory },
          defaultDeliverTo,
          maxWaitSeconds: 50,
          spend,
          checkTarget,
        })
      : []),
    ...createSecretsTools({ vault: services.vault }),
  ]
}
