import { Counter, type Registry } from 'prom-client'
import { ALERT_KINDS, type AlertKind } from '../alerts/alerts.js'

/** The {@link Alerts} hooks that count alerts raised by kind and batches sent or failed. */
export interface AlertHooks {
  readonly onAlert: (kind: AlertKind) => void
  readonly onBatch: (status: 'sent' | 'failed') => void
}

/**
 * `lango_alerts_total{kind}`: alerts raised (each, before batching), and
 * `lango_alert_batches_total{status}`: messages to `alerts.deliver_to` that every target took
 * (`sent`) or one refused (`failed`): alert on `increase(lango_alert_batches_total{status="failed"}[15m]) > 0`.
 */
export function alertMetrics(registry: Registry): AlertHooks {
  const registers = [registry]
  const alerts = new Counter({
    name: 'lango_alerts_total',
    help: 'Operator alerts raised, by kind (scheduler_stalled, missed_runs, job_paused, delivery_failed, lease_lost, budget_exhausted, database_failing, database_recovered, server_lost, runs_interrupted).',
    labelNames: ['kind'] as const,
    registers,
  })
  const batches = new Counter({
    name: 'lango_alert_batches_total',
    help: 'Alert messages sent to alerts.deliver_to, by status (sent: every target took it; failed: one refused).',
    labelNames: ['status'] as const,
    registers,
  })
  // Every series from the first scrape, at 0: Prometheus' `increase()` reads a series that first
  // appears at 1 as no increase, so the first alert (or failed batch) after a start went unseen.
  for (const kind of ALERT_KINDS) alerts.inc({ kind }, 0)
  for (const status of ['sent', 'failed'] as const) batches.inc({ status }, 0)
  return {
    onAlert: (kind) => alerts.inc({ kind }),
    onBatch: (status) => batches.inc({ status }),
  }
}
