import type { BackgroundManager } from '@lango/background'
import type { CronService } from '@lango/cron'
import type { WorkflowEngine } from '@lango/workflow'
import type { MiddlewareHandler } from 'hono'
import type { Registry } from 'prom-client'
import type { UsageRecord } from '../agent/index.js'
import { agentUsageMetrics } from './agent-metrics.js'
import { type AlertHooks, alertMetrics } from './alert-metrics.js'
import { recordAutomation } from './automation-metrics.js'
import {
  type DeliverySender,
  type DeliverySource,
  deliveryMetrics,
  observeCronDeliveries,
} from './delivery-metrics.js'
import { httpMetrics } from './http-metrics.js'
import { createMetricsRegistry } from './registry.js'
import { registerStateGauges, type StateSources } from './state-gauges.js'

/** One app's Prometheus metrics (`GET /metrics`) and the hooks the composition root wires them by. */
export interface ServerMetrics {
  /** This app's own registry (its `lango_*` metrics). */
  readonly registry: Registry
  /** What `GET /metrics` serves: this app's metrics and the process's (collected once per process). */
  scrape(): Registry
  /** Counts HTTP requests: the HTTP app's first middleware. */
  readonly http: MiddlewareHandler
  /** The agent runner's `onUsage`: turns, steps and tokens by model. */
  readonly onAgentUsage: (record: UsageRecord) => void
  /** The operator alerts' hooks: alerts raised by kind, batches sent or failed. */
  readonly alertHooks: AlertHooks
  /** `sender`, counting each send by `source`, channel and outcome. */
  countDeliveries(source: DeliverySource, sender: DeliverySender): DeliverySender
  /** Subscribes the counters to the services' events and reads the gauges from them at each scrape. */
  observe(
    services: {
      readonly cron: CronService
      readonly engine: WorkflowEngine
      readonly background: BackgroundManager
    } & StateSources,
  ): void
}

/**
 * The server's metrics (every name `lango_*`, plus prom-client's `process_*` and `nodejs_*`) in a
 * registry of their own. `channels` names the configured channels (deliveries to any other name
 * are counted as `unknown`).
 */
export function createServerMetrics(options: { readonly channels: () => readonly string[] }): ServerMetrics {
  const { app: registry, scrape } = createMetricsRegistry()
  return {
    registry,
    scrape,
    http: httpMetrics(registry),
    onAgentUsage: agentUsageMetrics(registry),
    alertHooks: alertMetrics(registry),
    countDeliveries: deliveryMetrics(registry, options.channels),
    observe(services) {
      recordAutomation(registry, services)
      observeCronDeliveries(registry, options.channels, services.cron)
      registerStateGauges(registry, services)
    },
  }
}
