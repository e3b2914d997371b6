import type { CronService } from '@lango/cron'
import type { WorkflowEngine } from '@lango/workflow'
import type { Logger } from '../logger.js'
import { scheduledWorkflowOf } from './jobs.js'

/** The cron job whose run started a workflow run, from the run's `originSession` (`cron:<job>:<run>`). */
function cronJobOf(originSession: string | null): string | undefined {
  return /^cron:(workflow\.[^:]+):[^:]+$/.exec(originSession ?? '')?.[1]
}

/**
 * Ties a scheduled workflow's run that the engine resumed (after a crash or a restart, here or
 * taken over from another server) to a cron run again: the cron run that started it was recorded
 * `interrupted`, so the job is triggered once and its new run takes the workflow run over
 * (./dispatch.ts) — waiting for it, reporting and delivering its outcome, and holding the job's
 * overlap policy while it runs, so no second run starts beside it. Only for jobs that run one
 * occurrence at a time (overlap `skip`, `queue_one`). Runs resumed before `start()` (the engine
 * starts before cron) are taken over once it is called.
 */
export function takeOverResumedRuns(
  engine: Pick<WorkflowEngine, 'on' | 'getRun'>,
  cron: Pick<CronService, 'get' | 'trigger'>,
  logger: Logger,
): { start(): Promise<void>; stop(): void } {
  let started = false
  const waiting: string[] = []
  const takeOver = async (runId: string): Promise<void> => {
    try {
      const run = await engine.getRun(runId)
      const jobName = cronJobOf(run?.originSession ?? null)
      if (run === undefined || jobName === undefined) return
      const job = await cron.get(jobName).catch(() => undefined)
      if (job === undefined || scheduledWorkflowOf(job) === undefined || job.overlap === 'allow') return
      const triggered = await cron.trigger(job.id)
      logger.info('resumed workflow run taken over by a run of its cron job', {
        runId,
        job: job.name,
        status: triggered.status,
        ...(triggered.runId === undefined ? {} : { cronRunId: triggered.runId }),
      })
    } catch (error) {
      logger.warn('resumed workflow run not taken over by its cron job', { runId, error })
    }
  }
  const unsubscribe = engine.on('run:start', ({ runId, resumed }) => {
    if (!resumed) return
    if (started) void takeOver(runId)
    else waiting.push(runId)
  })
  return {
    async start() {
      started = true
      for (const runId of waiting.splice(0)) await takeOver(runId)
    },
    stop() {
      started = false
      unsubscribe()
    },
  }
}
