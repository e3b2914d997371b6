import type { CronService } from '@lango/cron'
import type { WorkflowEngine } from '@lango/workflow'
import type { Duty } from '../cluster/leases.js'
import type { Logger } from '../logger.js'

/** How often the holder of the retention lease prunes cron and workflow history. */
const PRUNE_EVERY_MS = 3_600_000

/**
 * Pruning cron and workflow history, on one server of the cluster at a time (the `retention`
 * lease): at once when taken, then hourly while held.
 */
export function retentionDuty(cron: CronService, engine: WorkflowEngine, logger: Logger): Duty {
  let timer: ReturnType<typeof setInterval> | undefined
  let pruning: Promise<void> = Promise.resolve()
  const prune = async (): Promise<void> => {
    const [runs, workflowRuns] = await Promise.allSettled([
      cron.scheduler.pruneHistory(),
      engine.pruneHistory(),
    ])
    for (const result of [runs, workflowRuns])
      if (result.status === 'rejected') logger.warn('history not pruned', { error: result.reason })
    const pruned = [runs, workflowRuns].map((result) => (result.status === 'fulfilled' ? result.value : 0))
    if (pruned.some((count) => count > 0))
      logger.info('history pruned', { cron_runs: pruned[0], workflow_runs: pruned[1] })
  }
  return {
    name: 'retention',
    // Not awaited: a large history never holds up start-up.
    async start() {
      timer = setInterval(() => {
        pruning = prune()
      }, PRUNE_EVERY_MS)
      timer.unref()
      pruning = prune()
    },
    async stop() {
      clearInterval(timer)
      timer = undefined
      await pruning
    },
  }
}
