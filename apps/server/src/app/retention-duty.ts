import type { CronService } from '@lango/cron'
import type { WorkflowEngine } from '@lango/workflow'
import type { Duty } from '../cluster/leases.js'
import type { Logger } from '../logger.js'
import type { UsageLedger } from '../usage/usage-ledger.js'

/** How often the holder of the retention lease prunes cron and workflow history. */
const PRUNE_EVERY_MS = 3_600_000

/** The usage ledger and how long it keeps a row (`agent.usage_max_age`). */
interface UsageRetention {
  readonly ledger: UsageLedger
  readonly maxAgeMs: number
}

/**
 * Pruning cron and workflow history and the usage ledger, on one server of the cluster at a time
 * (the `retention` lease): at once when taken, then hourly while held.
 */
export function retentionDuty(
  cron: CronService,
  engine: WorkflowEngine,
  usage: UsageRetention,
  logger: Logger,
): Duty {
  let timer: ReturnType<typeof setInterval> | undefined
  let pruning: Promise<void> = Promise.resolve()
  const prune = async (): Promise<void> => {
    const results = await Promise.allSettled([
      cron.scheduler.pruneHistory(),
      engine.pruneHistory(),
      usage.ledger.prune(usage.maxAgeMs),
    ])
    for (const result of results)
      if (result.status === 'rejected') logger.warn('history not pruned', { error: result.reason })
    const pruned = results.map((result) => (result.status === 'fulfilled' ? result.value : 0))
    if (pruned.some((count) => count > 0))
      logger.info('history pruned', {
        cron_runs: pruned[0],
        workflow_runs: pruned[1],
        agent_usage: pruned[2],
      })
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
