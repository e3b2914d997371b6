import { SqliteCronStore } from '@lango/cron/sqlite'
import { ensureOrphanReaper, MIN_SECRET_LENGTH } from '@lango/exec'
import { WorkflowDirectory } from '@lango/workflow'
import { SqliteWorkflowStore } from '@lango/workflow/sqlite'
import type { Kysely } from 'kysely'
import { withDeadline } from '../abort.js'
import type { AgentRunner } from '../agent/index.js'
import { Alerts } from '../alerts/alerts.js'
import { DatabaseOutage } from '../alerts/database-outage.js'
import { budgetAlert, stoppingAlert, watchForAlerts } from '../alerts/sources.js'
import { ApprovalStore, Approvals } from '../approvals.js'
import { cronDeliverySender } from '../channels/delivery-error.js'
import { ChannelRouter } from '../channels/router.js'
import { undeliverableBecause } from '../channels/target.js'
import { credentialsIn } from '../config/environment-credentials.js'
import { configSecrets, environmentSecrets, tooShortToMask } from '../config/redact.js'
import type { ServerConfig } from '../config/types.js'
import { EventHub } from '../events.js'
import { claimHostRun } from '../host-runs.js'
import type { Logger } from '../logger.js'
import { createServerMetrics } from '../metrics/server-metrics.js'
import { dispatchScheduledWorkflows } from '../scheduled-workflows/dispatch.js'
import { takeOverResumedRuns } from '../scheduled-workflows/resumed.js'
import { scheduleSync } from '../scheduled-workflows/sync.js'
import { loadTracer } from '../telemetry/load.js'
import { type UsageDatabase, UsageLedger } from '../usage/usage-ledger.js'
import { createAgent, createSessions, unattendedRunner } from './agent.js'
import { type App, assembleApp } from './app.js'
import { automationInstructions } from './automation.js'
import { automationNesting } from './automation-nesting.js'
import { channelAdapters } from './channel-adapters.js'
import { chatsPart } from './chats.js'
import { joinCluster } from './cluster.js'
import { openServerDatabase } from './database-features.js'
import { forwardEvents } from './forward-events.js'
import { createHostExec } from './host-exec.js'
import { HttpRunMonitor } from './http-run-monitor.js'
import { lazyVault } from './lazy-vault.js'
import { Lifecycle } from './lifecycle.js'
import { retentionDuty } from './retention-duty.js'
import { createBackground, createCron, createWorkflowEngine } from './services.js'
import { createTools } from './tools.js'
import { appTracing } from './tracing.js'

/** Options of {@link createApp}. */
export interface CreateAppOptions {
  /** Opens the secrets vault; default `config.vault.passphrase` (`LANGO_PASSPHRASE`). */
  readonly passphrase?: string
  /** This machine's time in epoch milliseconds, fractions allowed (the cluster clock corrects it); default `Date.now`. */
  readonly localNow?: () => number
}

/**
 * Opens the database (migrations included) and wires every package through its ports (ADR 0006):
 * one shell runner (the `lango` guard, the vault, the env policy, a run limiter) for cron, workflow
 * and the exec tools; one agent runner; one channel sender. Nothing runs until `start()`.
 */
export async function createApp(
  config: ServerConfig,
  logger: Logger,
  options: CreateAppOptions = {},
): Promise<App> {
  const database = await openServerDatabase(config, logger)
  // Every part, started in the order added and stopped in reverse, each stop guarded
  // (./lifecycle.ts). What is `held` is open already and closed however this ends.
  const lifecycle = new Lifecycle(logger)
  lifecycle.add({ name: 'database', stop: () => database.close() }, { held: true })
  try {
    const { ownerId, clock, instances, duties } = joinCluster(config, database, logger, options)
    // Commands a previous server on this home left when it was killed die before anything starts,
    // and this server's own die with it, however it ends (a workflow step of a server killed with
    // SIGKILL does not go on beside the server that takes the run over).
    const hostRun = await claimHostRun(config.home, ownerId, logger)
    lifecycle.add({ name: 'host run', stop: () => hostRun.release() }, { held: true })
    ensureOrphanReaper()
    const events = new EventHub()
    const directory = await WorkflowDirectory.open(config.workflow.directory, {
      ...(config.workflow.workspace === undefined ? {} : { allowedRoots: [config.workflow.workspace] }),
    })
    // The configuration's secrets, and other tools' credentials the server's environment holds.
    const secrets = [...configSecrets(config), ...environmentSecrets(credentialsIn(process.env))]
    // Too short to mask without revealing them (SECURITY.md SEC-4): said once, by name, never value.
    // `setting`, not `secret`: the logger redacts fields named like secrets.
    for (const setting of tooShortToMask(secrets))
      logger.warn('secret too short to mask', {
        setting,
        minLength: MIN_SECRET_LENGTH,
        hint: 'commands the server runs that print it show it in clear: use a longer value',
      })
    const refStore = lazyVault(database, options.passphrase ?? config.vault.passphrase, logger, secrets)
    const exec = createHostExec(config, refStore, logger)
    // Every delivery (cron results, background notices, workflow results) and every chat in goes
    // through one router: the configured channels, custom adapters, and `log`.
    const channels = new ChannelRouter({ adapters: await channelAdapters(config, logger), logger })
    // `GET /metrics`: counters fed by the services' events and the deliveries they send, gauges read
    // from them at each scrape, in a registry of this app's own.
    const metrics = config.metrics.enabled
      ? createServerMetrics({ channels: () => channels.channels })
      : undefined
    // Traces over OTLP when an endpoint is configured (the SDK is loaded only then); flushed at stop.
    const tracer = await loadTracer(config, logger)
    if (tracer !== undefined) lifecycle.add({ name: 'traces', stop: () => tracer.shutdown() }, { held: true })
    const tracing = appTracing(tracer)
    const sender = (source: 'cron' | 'background' | 'workflow') =>
      tracing.sender(metrics?.countDeliveries(source, channels) ?? channels)
    const shell = tracing.shell(exec.shell)
    // The agent needs the tools, which need the services, which need an agent runner: theirs read
    // the agent (made below, once the tools exist) at each run, and nothing runs before start().
    const theAgent = (): AgentRunner => agent
    const cronStore = new SqliteCronStore(database.db)
    const workflowStore = new SqliteWorkflowStore(database.db)
    // How deep a run is in a chain of tasks and workflow runs started from inside runs (WF-7).
    const nestingOf = automationNesting({
      task: (taskId) => background.snapshot(taskId),
      run: (runId) => workflowStore.getRun(runId),
    })
    const engine = createWorkflowEngine(config, {
      store: workflowStore,
      ownerId,
      clock,
      shellRunner: shell,
      agentRunner: tracing.agent('workflow', unattendedRunner(theAgent, 'workflow', nestingOf)),
      channelSender: sender('workflow'),
      logger,
    })
    const cron = createCron(config, {
      store: cronStore,
      ownerId,
      clock,
      // One runner for cron jobs and workflow steps (ADR 0006); a saved workflow's schedule runs
      // the workflow. Whether a job is one is read back from cron itself when its run starts.
      shellRunner: dispatchScheduledWorkflows({
        jobs: { get: (name, options) => cron.get(name, options) },
        engine: () => engine,
        directory,
        next: shell,
      }),
      // `session_mode: main` jobs send `cron:<name>`; isolated runs add the run id.
      agentRunner: unattendedRunner(
        theAgent,
        'cron',
        nestingOf,
        (request) => request.sessionKey !== `cron:${request.jobName}`,
      ),
      // Failures as cron's DeliveryError (Retry-After, permanent), so its delivery ledger retries well.
      channelSender: cronDeliverySender(sender('cron'), channels),
      // Jobs' dead-man pings (ping_url): healthchecks.io-style HTTP, never holding a run.
      runMonitor: new HttpRunMonitor({ allowPrivateNetworks: config.cron.pingPrivateNetworks, clock }),
      ...(tracing.cronRunScope === undefined ? {} : { runScope: tracing.cronRunScope }),
      logger,
    })
    const background = createBackground(config, {
      agentRunner: tracing.agent('background', unattendedRunner(theAgent, 'background', nestingOf)),
      channelSender: sender('background'),
      logger,
    })
    const approvals = new Approvals({
      store: new ApprovalStore(database.db),
      timeoutMs: config.approvals.timeoutMs,
      events,
      logger,
      origin: ownerId,
    })
    forwardEvents(events, cron, engine, background)
    // Results of jobs that name no target go to channels.default_deliver_to: one that no channel
    // can deliver to fails every such delivery, so say so at start (as alerts.deliver_to does).
    const unservedDefaults = undeliverableTargets(config.channels.defaultDeliverTo, channels)
    if (unservedDefaults.size > 0)
      logger.error(
        'channels.default_deliver_to names targets no channel here can deliver to: deliveries there fail',
        {
          targets: Object.fromEntries(unservedDefaults),
        },
      )
    // The operator's channel: what must not go unnoticed, batched, to `alerts.deliver_to`.
    const alerts = new Alerts({
      targets: config.alerts.deliverTo,
      unreachable: undeliverableTargets(config.alerts.deliverTo, channels),
      sender: channels,
      clock,
      logger,
      ...(metrics === undefined ? {} : metrics.alertHooks),
    })
    const stopAlerts = watchForAlerts(alerts, {
      cron,
      engine,
      duties,
      instances,
      // Ends once the heartbeat is written and nothing failed for a lease (three heartbeats).
      outage: new DatabaseOutage(alerts, { clock, logger, quietMs: config.cluster.leaseMs }),
    })
    tracing.observe({ cron, engine })
    metrics?.observe({
      cron,
      engine,
      background,
      pendingApprovals: () => approvals.countPending(),
      duties,
    })
    const syncSchedules = scheduleSync(cron, directory, events, logger, {
      shared: config.database.kind === 'postgres',
      checkTarget: (target) => undeliverableBecause(target, channels),
    })
    // Every turn's spend, and the daily budgets read from it (per cron job, creator, server).
    const usage = new UsageLedger(database.db as unknown as Kysely<UsageDatabase>, {
      server: config.agent.dailyBudget,
      creator: config.agent.creatorDailyBudget,
      // By id (what a cron turn names), which a rename keeps.
      job: async (idOrName) => {
        const job = await cron.get(idOrName).catch(() => undefined)
        return job === undefined
          ? undefined
          : { maxTokensPerDay: job.maxTokensPerDay, maxCostPerDay: job.maxCostPerDay }
      },
      logger,
    })
    // Rows being written land before the database closes.
    lifecycle.add({ name: 'usage ledger', stop: () => usage.flush() }, { held: true })
    const tools = createTools(
      config,
      {
        exec,
        cron,
        background,
        engine,
        directory,
        vault: refStore.vault,
        syncSchedules,
        usage,
        // A target whose channel this server does not have, or whose chat its adapter refuses (not
        // an allowed chat, no default chat), fails every delivery: refused at once.
        checkTarget: (target) => undeliverableBecause(target, channels),
      },
      logger,
    )
    const sessions = createSessions(config, database, theAgent, logger)
    const agent = tracing.chats(
      await createAgent(config, {
        memory: sessions,
        tools,
        approvals,
        logger,
        // Usage feeds the ledger and the metrics; a turn its budget stopped is an alert.
        onUsage: (record) => {
          usage.record(record)
          metrics?.onAgentUsage(record)
          if (record.budgetExhausted === true) alerts.raise(budgetAlert(record))
        },
        spendLimits: (turn) => usage.spendLimits(turn),
        ...(tracer === undefined ? {} : { tracer }),
      }),
    )
    duties.add(retentionDuty(cron, engine, { ledger: usage, maxAgeMs: config.agent.usageMaxAgeMs }, logger))

    lifecycle.add({
      name: 'dead servers',
      async start() {
        // A dead server's runs: cron marks them interrupted and the engine resumes them now, not
        // after their owner's lease runs out.
        for (const owner of hostRun.deadOwners) {
          await cronStore.removeOwner(owner)
          await workflowStore.releaseOwner(owner)
        }
        // Calls a dead server was waiting on cannot run: their approvals are cancelled.
        await approvals.cancelOrigins(hostRun.deadOwners)
      },
    })
    lifecycle.add({ name: 'clock', start: () => clock.start(), stop: () => clock.stop() })
    lifecycle.add({ name: 'instances', start: () => instances.start(), stop: () => instances.stop() })
    // Exec process groups die after everything that could start one has stopped.
    lifecycle.add({ name: 'processes', stop: () => exec.processes.stop() }, { held: true })
    lifecycle.add({ name: 'sessions', start: () => sessions.start(), stop: () => sessions.stop() })
    // The engine stops after cron and background: its runs stay resumable (shell steps aborted, not failed).
    lifecycle.add({ name: 'workflow engine', start: () => engine.start(), stop: () => engine.stop() })
    lifecycle.add({ name: 'background', start: () => background.start(), stop: () => background.stop() })
    // A scheduled workflow's run resumed without its cron run (interrupted by a crash or a stop)
    // is taken over by a new run of its job, so it is reported once and counts for the overlap policy.
    const resumedRuns = takeOverResumedRuns(engine, cron, logger)
    if (config.cron.enabled)
      lifecycle.add({
        name: 'cron',
        async start() {
          await cron.start()
          await syncSchedules().catch((error) => logger.warn('workflow schedules not synced', { error }))
          await resumedRuns.start()
        },
        stop: () => {
          resumedRuns.stop()
          return cron.stop()
        },
      })
    lifecycle.add(chatsPart(channels, agent, duties, logger, approvals))
    // Alerts stop before the channels they go through (what is waiting is sent), after the duties.
    lifecycle.add(
      {
        name: 'alerts',
        async stop() {
          // The cron runs this stop will cut off (cron stops after the alerts and the channels):
          // said now, while a message still goes out, not only logged. Bounded: a database that
          // does not answer does not hold the stop.
          if (config.cron.enabled) {
            const running = await withDeadline(
              cronStore.listRuns({ status: 'running', limit: 500 }),
              2_000,
            ).catch((error: unknown) => {
              logger.warn('cron runs this stop cuts off not read: no alert about them', { error })
              return []
            })
            const mine = running.filter((run) => run.owner === ownerId)
            if (mine.length > 0) alerts.raise(stoppingAlert(mine, ownerId))
          }
          stopAlerts()
          await alerts.stop()
        },
      },
      { held: true },
    )
    // Singleton duties end and their leases go back at once (another server takes them now).
    lifecycle.add({ name: 'duties', start: () => duties.start(), stop: () => duties.stop() })
    // Calls waiting for a person are cancelled first.
    lifecycle.add({ name: 'approvals', stop: () => approvals.cancelAll() }, { held: true })
    return assembleApp(
      {
        config,
        logger,
        database,
        cron,
        engine,
        directory,
        background,
        processes: exec.processes,
        approvals,
        events,
        tools,
        agent,
        channels,
        instances,
        clock,
        duties,
        metrics,
        alerts,
        vault: refStore.vault,
        usage,
        instructions: automationInstructions(config),
        syncSchedules,
      },
      lifecycle,
    )
  } catch (error) {
    // What was opened (the host run, the database) closes; a failure there is logged by the lifecycle.
    await lifecycle.stop().catch(() => {})
    throw error
  }
}

/** The targets nothing can be delivered to (`slack:C1` with no Slack configured, a chat not allowed), with the reason. */
function undeliverableTargets(
  targets: readonly string[],
  channels: ChannelRouter,
): ReadonlyMap<string, string> {
  const unreachable = new Map<string, string>()
  for (const target of targets) {
    const why = undeliverableBecause(target, channels)
    if (why !== undefined) unreachable.set(target, why)
  }
  return unreachable
}
