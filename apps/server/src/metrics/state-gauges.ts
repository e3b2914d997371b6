import type { BackgroundManager } from '@lango/background'
import type { CronService } from '@lango/cron'
import type { WorkflowEngine } from '@lango/workflow'
import { Counter, Gauge, type Registry } from 'prom-client'
import { abortable, timeoutSignal } from '../abort.js'

/** What the gauges read at each scrape. */
export interface StateSources {
  readonly cron: CronService
  readonly engine: WorkflowEngine
  readonly background: BackgroundManager
  /** Pending approvals (not past expiry) of every process on the database. */
  readonly pendingApprovals: () => Promise<number>
  /** Every singleton duty this server competes for, and the leases it holds now. */
  readonly duties: {
    readonly names: readonly string[]
    held(): readonly { readonly name: string }[]
    /** The `duty` label of a lease: `telegram`, `retention`. */
    kindOf(name: string): string
  }
}

/**
 * Gauges read from the services' state when Prometheus scrapes, not kept up to date between
 * scrapes: queued and running work of cron, background and workflow, pending approvals, and the
 * singleton-duty leases this server holds.
 */
export function registerStateGauges(registry: Registry, sources: StateSources): void {
  const registers = [registry]
  const { cron, engine, background, duties } = sources
  new Gauge({
    name: 'lango_queue_depth',
    help: 'Work accepted but not started on this server: cron occurrences waiting for a run slot or queued behind their job, pending background tasks. (Workflows have no queue: a run beyond the limits is refused.)',
    labelNames: ['service'] as const,
    registers,
    collect() {
      this.set({ service: 'cron' }, cron.scheduler.waitingCount)
      this.set({ service: 'background' }, background.list({ status: 'pending' }).length)
    },
  })
  new Gauge({
    name: 'lango_running',
    help: 'Work running on this server now: cron runs, background tasks, workflow runs.',
    labelNames: ['service'] as const,
    registers,
    collect() {
      this.set({ service: 'cron' }, cron.scheduler.runningCount)
      this.set({ service: 'background' }, background.list({ status: 'running' }).length)
      this.set({ service: 'workflow' }, engine.runningCount)
    },
  })
  // Read from the database: a scrape waits for it at most PENDING_READ_MS, one read at a time. A
  // database that does not answer must not fail the whole scrape (the alert counters are the
  // operator's last resort then): the gauge keeps its last value until a read answers.
  let reading: Promise<void> | undefined
  new Gauge({
    name: 'lango_approvals_pending',
    help: 'Tool calls waiting for a person to approve or deny them, on every server sharing the database (the last value read while the database does not answer).',
    registers,
    async collect() {
      reading ??= sources
        .pendingApprovals()
        .then((count) => this.set(count))
        .catch(() => undefined)
        .finally(() => {
          reading = undefined
        })
      const deadline = timeoutSignal(PENDING_READ_MS)
      await abortable(reading, deadline.signal).catch(() => undefined)
      deadline.clear()
    },
  })
  // Counted by the scheduler (a failed ping is only logged and counted, never fails its run).
  new Counter({
    name: 'lango_cron_pings_total',
    help: "Dead-man pings (a cron job's ping_url) this server sent, by outcome: sent (the monitor answered in time) or failed (refused address, error status, timeout, network error).",
    labelNames: ['outcome'] as const,
    registers,
    collect() {
      const stats = cron.scheduler.pingStats()
      this.reset()
      this.inc({ outcome: 'sent' }, stats.sent)
      this.inc({ outcome: 'failed' }, stats.failed)
    },
  })
  new Gauge({
    name: 'lango_leases_held',
    help: 'Singleton-duty leases this server holds, by duty (retention, telegram, …); 0 while another server holds them.',
    labelNames: ['duty'] as const,
    registers,
    collect() {
      this.reset()
      for (const name of duties.names) this.set({ duty: duties.kindOf(name) }, 0)
      for (const lease of duties.held()) this.inc({ duty: duties.kindOf(lease.name) })
    },
  })
}

/** How long a scrape waits for the pending-approvals count from the database. */
const PENDING_READ_MS = 1500
