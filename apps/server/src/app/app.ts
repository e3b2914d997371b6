import type { BackgroundManager } from '@lango/background'
import type { CronService } from '@lango/cron'
import type { ProcessRegistry } from '@lango/exec'
import type { AnyTool } from '@lango/tools'
import type { WorkflowDirectory, WorkflowEngine } from '@lango/workflow'
import type { AgentRunner } from '../agent/index.js'
import type { Alerts } from '../alerts/alerts.js'
import type { Approvals } from '../approvals.js'
import type { ChannelRouter } from '../channels/router.js'
import type { ClusterClock } from '../cluster/clock.js'
import type { InstanceRegistry } from '../cluster/instances.js'
import type { SingletonDuties } from '../cluster/leases.js'
import type { ServerConfig } from '../config/types.js'
import type { EventHub } from '../events.js'
import type { Logger } from '../logger.js'
import type { ServerMetrics } from '../metrics/server-metrics.js'
import type { UsageLedger } from '../usage/usage-ledger.js'
import type { Vault } from '../vault/vault.js'
import { VERSION } from '../version.js'
import type { ServerDatabase } from './database-features.js'
import type { Lifecycle } from './lifecycle.js'

/** Every wired service of a running server, for the HTTP API, MCP and tests. */
export interface App {
  readonly config: ServerConfig
  readonly logger: Logger
  readonly database: ServerDatabase
  readonly cron: CronService
  readonly engine: WorkflowEngine
  readonly directory: WorkflowDirectory
  readonly background: BackgroundManager
  readonly processes: ProcessRegistry
  readonly approvals: Approvals
  readonly events: EventHub
  /** The LLM agent (chat turns and the runs of cron, background and workflow); `configured` false without a model. */
  readonly agent: AgentRunner
  /** The chat channels: deliveries out, chats in (started by `start()`). */
  readonly channels: ChannelRouter
  /** The servers sharing this database, this one included (registered by `start()`). */
  readonly instances: InstanceRegistry
  /** The cluster's one clock: the database's time on PostgreSQL (leases, heartbeats, fire times). */
  readonly clock: ClusterClock
  /** Singleton duties (Telegram polling per bot token, retention) and the leases this server holds. */
  readonly duties: SingletonDuties
  /** Every agent tool, in a stable order (`tools/list`, `GET /api/tools`). */
  readonly tools: readonly AnyTool[]
  /** The Prometheus metrics `GET /metrics` serves; undefined with `metrics.enabled: false`. */
  readonly metrics: ServerMetrics | undefined
  /** The operator's alerts (`alerts.deliver_to`): raised by the scheduler's watchdog, missed runs, auto-pauses, lost leases. */
  readonly alerts: Alerts
  /**
   * The secrets vault, opened on first use; rejects with `VAULT_NO_PASSPHRASE` without
   * `LANGO_PASSPHRASE`. Webhooks read their signing secrets from it (`webhook.<name>`).
   */
  readonly vault: () => Promise<Vault>
  /** Every agent turn's tokens, model and cost; the daily budgets and `lango cost` read it. */
  readonly usage: UsageLedger
  /** The MCP server's `instructions`. */
  readonly instructions: string
  /** True between a finished `start()` and `stop()`. */
  readonly ready: boolean
  /** Re-reads the workflows directory and brings the cron jobs of scheduled workflows in step. */
  syncSchedules(): Promise<void>
  start(): Promise<void>
  /** Stops the scheduler, cancels background tasks, kills exec process groups, leaves workflow runs resumable, closes the database. */
  stop(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/** The wired services an {@link App} holds; its `ready`, `start` and `stop` come from its lifecycle. */
export type AppServices = Omit<App, 'ready' | 'start' | 'stop' | typeof Symbol.asyncDispose>

/**
 * The {@link App} over `services`: `start()` starts the lifecycle's parts in order, `stop()` stops
 * them in reverse, once however often it is called (./lifecycle.ts).
 */
export function assembleApp(services: AppServices, lifecycle: Lifecycle): App {
  const { logger, database } = services
  let ready = false
  let stopping: Promise<void> | undefined
  const app: App = {
    ...services,
    get ready() {
      return ready
    },
    async start() {
      await lifecycle.start()
      ready = true
      logger.info('server ready', { database: database.path, version: VERSION })
    },
    stop() {
      stopping ??= (async () => {
        ready = false
        try {
          await lifecycle.stop()
        } finally {
          logger.info('server stopped')
        }
      })()
      return stopping
    },
    [Symbol.asyncDispose]() {
      return app.stop()
    },
  }
  return app
}
