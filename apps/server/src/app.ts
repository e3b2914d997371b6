import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { BackgroundManager } from '@lango/background'
import { CronService } from '@lango/cron'
import { SqliteCronStore } from '@lango/cron/sqlite'
import {
  blockLangoExec,
  type EnvPolicy,
  ensureOrphanReaper,
  ProcessRegistry,
  type RefStore,
  RunLimiter,
  type RunOptions,
  run,
} from '@lango/exec'
import { nodePtyDriver, runWithPty } from '@lango/exec/pty'
import { buildAutomationPromptSection } from '@lango/prompts'
import {
  type AnyTool,
  createBackgroundTools,
  createCronTools,
  createExecTools,
  createManageCronJobsTool,
  createWorkflowTools,
} from '@lango/tools'
import { WorkflowDirectory, WorkflowEngine } from '@lango/workflow'
import { SqliteWorkflowStore } from '@lango/workflow/sqlite'
import { type AgentRunner, type AgentRunRequest, unattendedSession } from './agent/index.js'
import { NO_MODEL_MESSAGE, noModelRunner } from './agent/no-model.js'
import { ApprovalStore, Approvals } from './approvals.js'
import { loadChannelAdapter } from './channels/loader.js'
import { ChannelRouter } from './channels/router.js'
import type { ChannelAdapter } from './channels/types.js'
import { ClusterClock } from './cluster/clock.js'
import { InstanceRegistry } from './cluster/instances.js'
import { type Duty, LeaseTable, SingletonDuties } from './cluster/leases.js'
import { type ConfigSecret, configSecrets } from './config/redact.js'
import type { ServerConfig } from './config/types.js'
import { type OpenDatabase, openDatabase } from './db/database.js'
import { EventHub } from './events.js'
import { claimHostRun, type HostRun } from './host-runs.js'
import { Lifecycle } from './lifecycle.js'
import type { Logger } from './logger.js'
import {
  dispatchScheduledWorkflows,
  type HostShellRunner,
  syncScheduledWorkflows,
} from './scheduled-workflows.js'
import { SessionStore } from './sessions/index.js'
import { createSecretsTools } from './vault/secrets-tool.js'
import { Vault, VaultError } from './vault/vault.js'
import { VERSION } from './version.js'

/** The server's version, reported by `/healthz` and MCP (src/version.ts). */
export { VERSION }

/** Every wired service of a running server, for the HTTP API, MCP and tests. */
export interface App {
  readonly config: ServerConfig
  readonly logger: Logger
  readonly database: OpenDatabase
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

/**
 * Opens the database (migrations included) and wires every package through its ports (ADR 0006):
 * one shell runner (the `lango` guard, the vault, the env policy, a run limiter) for cron, workflow
 * and the exec tools; one agent runner; one channel sender. Nothing runs until `start()`.
 */
export async function createApp(
  config: ServerConfig,
  logger: Logger,
  options: {
    /** Opens the secrets vault; default `config.vault.passphrase` (`LANGO_PASSPHRASE`). */
    readonly passphrase?: string
    /** This machine's time in epoch milliseconds, fractions allowed (the cluster clock corrects it); default `Date.now`. */
    readonly localNow?: () => number
  } = {},
): Promise<App> {
  const database = await openDatabase(config, logger)
  const events = new EventHub()
  let hostRun: HostRun | undefined
  // One owner id for this process's scheduler and engine (their leases and claims).
  const ownerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  const leaseMs = config.cluster.leaseMs
  const clock = new ClusterClock(
    config.database.kind === 'postgres' ? database.db : undefined,
    logger,
    Math.max(100, leaseMs / 10),
    options.localNow === undefined ? {} : { localNow: options.localNow },
  )
  const now = (): number => clock.nowMs()
  try {
    // Commands a previous server on this home left when it was killed die before anything starts,
    // and this server's own die with it, however it ends (a workflow step of a server killed with
    // SIGKILL does not go on beside the server that takes the run over).
    hostRun = await claimHostRun(config.home, ownerId, logger)
    ensureOrphanReaper()
    const directory = await WorkflowDirectory.open(config.workflow.directory, {
      ...(config.workflow.workspace === undefined ? {} : { allowedRoots: [config.workflow.workspace] }),
    })
    const refStore = lazyVault(
      database,
      options.passphrase ?? config.vault.passphrase,
      logger,
      configSecrets(config),
    )
    const envPolicy: EnvPolicy = {
      inherit: config.exec.inherit,
      allow: config.exec.envAllow,
      deny: config.exec.envDeny,
    }
    // Foreground commands from every source share one cap; more wait (bounded), then are refused.
    const limiter = new RunLimiter({ maxRunning: 8, maxWaiting: 64 })
    const execDefaults = { refStore, envPolicy, limiter, cwd: config.exec.cwd } satisfies Partial<RunOptions>
    const processes = new ProcessRegistry({
      ptyDriver: nodePtyDriver(),
      refStore,
      envPolicy,
      maxRunning: config.exec.maxBackgroundProcesses,
      logger,
    })
    let engine: WorkflowEngine | undefined
    const guardedShell: HostShellRunner = {
      async run(request, { signal }) {
        const message = blockLangoExec(request.command, { automationAvailable: automationOf(config) })
        if (message !== '') return { exitCode: null, stdout: '', stderr: '', blocked: true, message }
        return run(request.command, {
          ...execDefaults,
          ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
          timeoutMs: request.timeoutMs,
          signal,
          envSource: 'trusted',
          logger,
        })
      },
    }
    // One runner for cron jobs and workflow steps (ADR 0006); a saved workflow's schedule runs the workflow.
    const shellRunner = dispatchScheduledWorkflows({
      jobs: { get: (name, options) => cron.get(name, options) },
      engine: () => engine,
      directory,
      next: guardedShell,
    })
    // The agent runner needs the tools, which need the services, which need a runner: they get
    // this forwarder, bound to the real runner once the tools exist (below).
    let agent: AgentRunner | undefined
    // Each package's runs carry who started them (unattended; isolated unless a cron job shares
    // one session across runs), never read back from the session key.
    const agentRunnerFor = (
      source: 'cron' | 'background' | 'workflow',
      isolated: (request: AgentRunRequest & { readonly jobName?: string }) => boolean = () => true,
    ) => ({
      run: (
        request: AgentRunRequest & { readonly jobName?: string },
        options: { readonly signal: AbortSignal },
      ) =>
        agent === undefined
          ? Promise.reject(new Error(NO_MODEL_MESSAGE))
          : agent.run(
              { ...request, session: unattendedSession(source, { isolated: isolated(request) }) },
              options,
            ),
    })
    // Every delivery (cron results, background notices, workflow results) and every chat in goes
    // through one router: the configured channels, custom adapters, and `log`.
    const channels = new ChannelRouter({ adapters: await channelAdapters(config, logger), logger })
    const channelSender = channels
    const cronStore = new SqliteCronStore(database.db)
    const workflowStore = new SqliteWorkflowStore(database.db)
    const cron: CronService = new CronService({
      store: cronStore,
      ownerId,
      clock,
      leaseMs,
      shellRunner,
      // `session_mode: main` jobs send `cron:<name>`; isolated runs add the run id.
      agentRunner: agentRunnerFor('cron', (request) => request.sessionKey !== `cron:${request.jobName}`),
      channelSender,
      logger,
      defaultTimezone: config.cron.timezone,
      minIntervalMs: config.cron.minIntervalMs,
      maxConcurrentJobs: config.cron.maxConcurrentJobs,
      maxConsecutiveFailures: config.cron.maxConsecutiveFailures,
      // Unset: no token budget (the package's default).
      maxAiTokensPerDay: config.cron.maxAiTokensPerDay,
      retention: { maxAgeMs: config.cron.historyMaxAgeMs, maxRunsPerJob: config.cron.historyMaxRuns },
      // Pruning is a singleton duty of the cluster (the retention lease below).
      autoPrune: false,
    })
    engine = new WorkflowEngine({
      store: workflowStore,
      ownerId,
      clock,
      leaseMs,
      shellRunner,
      agentRunner: agentRunnerFor('workflow'),
      channelSender,
      logger,
      cwd: config.exec.cwd,
      defaultMaxParallel: config.workflow.maxParallel,
      retention: { maxAgeMs: config.workflow.historyMaxAgeMs, maxRuns: config.workflow.historyMaxRuns },
      autoPrune: false,
    })
    const background = new BackgroundManager({
      agentRunner: agentRunnerFor('background'),
      channelSender,
      logger,
      maxConcurrentTasks: config.background.maxConcurrentTasks,
      maxQueuedTasks: config.background.maxQueuedTasks,
      taskTimeoutMs: config.background.taskTimeoutMs,
    })
    const approvals = new Approvals({
      store: new ApprovalStore(database.db),
      timeoutMs: config.approvals.timeoutMs,
      events,
      logger,
      origin: ownerId,
    })
    forwardEvents(events, cron, engine, background)

    const sync = async (): Promise<void> => {
      const { registered, removed } = await syncScheduledWorkflows(cron, directory, logger)
      if (registered.length + removed.length > 0) {
        logger.info('workflow schedules updated', { registered, removed })
        events.publish('cron.jobs.changed', { registered, removed })
      }
    }
    // workflow_save re-registers the saved workflow's schedule at once.
    const savingDirectory = {
      read: directory.read.bind(directory),
      list: directory.list.bind(directory),
      async save(...args: Parameters<WorkflowDirectory['save']>) {
        const saved = await directory.save(...args)
        await sync().catch((error) => logger.warn('schedule sync after save failed', { error }))
        return saved
      },
    }
    const defaultDeliverTo = config.channels.defaultDeliverTo
    const automation = automationOf(config)
    const tools: AnyTool[] = [
      ...createExecTools({
        backend: {
          run: (command, options) => run(command, { ...execDefaults, ...options }),
          runWithPty: (command, options) => runWithPty(command, { ...execDefaults, ...options }),
          registry: processes,
          blockLangoExec,
        },
        automationAvailable: automation,
        defaultTimeoutSeconds: Math.round(config.exec.timeoutMs / 1000),
        maxTimeoutSeconds: Math.round(config.exec.maxTimeoutMs / 1000),
      }),
      ...(config.cron.enabled
        ? [
            ...createCronTools({ service: cron, defaultDeliverTo }),
            createManageCronJobsTool({ service: cron, defaultDeliverTo }),
          ]
        : []),
      ...(config.background.enabled
        ? createBackgroundTools({
            service: background,
            ...(defaultDeliverTo[0] === undefined ? {} : { defaultChannel: defaultDeliverTo[0] }),
          })
        : []),
      ...(config.workflow.enabled
        ? createWorkflowTools({
            service: { engine, directory: savingDirectory },
            defaultDeliverTo,
            maxWaitSeconds: 50,
          })
        : []),
      ...createSecretsTools({ vault: refStore.vault }),
    ]
    // Conversation memory with observational compaction; the observer is the model itself.
    const sessions = new SessionStore(database.db, {
      ...(config.model.baseUrl !== undefined && config.model.name !== undefined
        ? { observer: { observe: (messages, options) => (agent as AgentRunner).observe(messages, options) } }
        : {}),
      limits: {
        retentionMs: config.sessions.retentionMs,
        maxSessions: config.sessions.maxSessions,
        maxMessages: config.sessions.maxMessages,
        observeAfterMessages: config.sessions.observeAfterMessages,
        keepRecentMessages: config.sessions.keepRecentMessages,
      },
      logger,
    })
    // The AI SDK loads only for a server with a model (a shell-only server never pays for it).
    const modelConfigured = config.model.baseUrl !== undefined && config.model.name !== undefined
    const { createAgentRunner } = modelConfigured
      ? await import('./agent/agent-runner.js')
      : { createAgentRunner: () => noModelRunner() }
    agent = createAgentRunner({
      memory: sessions,
      baseUrl: config.model.baseUrl,
      model: config.model.name,
      apiKey: config.model.apiKey,
      tools,
      maxSteps: config.agent.maxSteps,
      timeoutMs: config.agent.timeoutMs,
      maxRetries: config.agent.maxRetries,
      // Attended turns without a gate of their own (HTTP chat): pending approvals, answered over
      // the API, the CLI or the dashboard.
      approvalPolicy: config.approvals.policy,
      approvalGate: approvals.gate(),
      approvalTimeoutMs: config.approvals.timeoutMs,
      unattended: {
        allowDangerous: config.approvals.unattendedAllowDangerous,
        allowCronCreate: config.approvals.unattendedAllowCronCreate,
      },
      logger,
    })
    const instructions = buildAutomationPromptSection({
      cron: config.cron.enabled,
      background: config.background.enabled,
      workflow: config.workflow.enabled,
    })

    const chatAgent = agent
    const instances = new InstanceRegistry(database.db, {
      id: ownerId,
      host: hostname(),
      pid: process.pid,
      version: VERSION,
      logger,
      heartbeatMs: leaseMs / 3,
      now,
    })
    const duties = new SingletonDuties({
      leases: new LeaseTable(database.db, now, {
        dialect: config.database.kind,
        statementTimeoutMs: Math.floor(leaseMs / 3),
      }),
      owner: ownerId,
      ttlMs: leaseMs,
      now,
      logger,
    })
    const workflowEngine = engine
    duties.add(retentionDuty(cron, workflowEngine, logger))
    let ready = false
    // Started in this order, stopped in reverse, each stop guarded (src/lifecycle.ts).
    const lifecycle = new Lifecycle(logger)
    lifecycle.add({ name: 'database', stop: () => database.close() }, { held: true })
    lifecycle.add({ name: 'host run', stop: () => hostRun?.release() }, { held: true })
    lifecycle.add({
      name: 'dead servers',
      async start() {
        // A dead server's runs: cron marks them interrupted and the engine resumes them now, not
        // after their owner's lease runs out.
        for (const owner of hostRun?.deadOwners ?? []) {
          await cronStore.removeOwner(owner)
          await workflowStore.releaseOwner(owner)
        }
        // Calls a dead server was waiting on cannot run: their approvals are cancelled.
        await approvals.cancelOrigins(hostRun?.deadOwners ?? [])
      },
    })
    lifecycle.add({ name: 'clock', start: () => clock.start(), stop: () => clock.stop() })
    lifecycle.add({ name: 'instances', start: () => instances.start(), stop: () => instances.stop() })
    // Exec process groups die after everything that could start one has stopped.
    lifecycle.add({ name: 'processes', stop: () => processes.stop() }, { held: true })
    lifecycle.add({ name: 'sessions', start: () => sessions.start(), stop: () => sessions.stop() })
    // The engine stops after cron and background: its runs stay resumable (shell steps aborted, not failed).
    lifecycle.add({
      name: 'workflow engine',
      start: () => workflowEngine.start(),
      stop: () => workflowEngine.stop(),
    })
    lifecycle.add({ name: 'background', start: () => background.start(), stop: () => background.stop() })
    if (config.cron.enabled)
      lifecycle.add({
        name: 'cron',
        async start() {
          await cron.start()
          await sync().catch((error) => logger.warn('workflow schedules not synced', { error }))
        },
        stop: () => cron.stop(),
      })
    lifecycle.add({
      name: 'channels',
      async start() {
        // Chats in: each message is an agent turn in the session <channel>:<chat>:<user>, whose
        // approvals are asked in that chat. A channel that cannot start (a bad token, another
        // process polling the same bot) is logged; the server runs without it.
        const receiving = await channels.start(
          async (message, { sessionKey, signal }) => {
            const turn = await chatAgent.chat(sessionKey, message.text, {
              signal,
              approvalGate: { request: (request, options) => channels.requestApproval(request, options) },
            })
            return turn.text
          },
          // One poller per Telegram bot token in the whole cluster: the holder of its lease.
          { exclusive: (receiver) => duties.add({ name: `receive:${receiver.key}`, ...receiver }) },
        )
        for (const { channel, error } of receiving.failed) {
          logger.error('channel not started', { channel, error })
        }
      },
      // No more chats in; turns in flight are aborted.
      stop: () => channels.stop(),
    })
    // Singleton duties end and their leases go back at once (another server takes them now).
    lifecycle.add({ name: 'duties', start: () => duties.start(), stop: () => duties.stop() })
    // Calls waiting for a person are cancelled first.
    lifecycle.add({ name: 'approvals', stop: () => approvals.cancelAll() }, { held: true })
    let stopping: Promise<void> | undefined
    const app: App = {
      config,
      logger,
      database,
      cron,
      engine: workflowEngine,
      directory,
      background,
      processes,
      approvals,
      events,
      tools,
      agent,
      channels,
      instances,
      clock,
      duties,
      instructions,
      get ready() {
        return ready
      },
      syncSchedules: sync,
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
  } catch (error) {
    await database.close()
    await hostRun?.release()
    throw error
  }
}

/** Which automation features the guard names as available. */
function automationOf(config: ServerConfig) {
  return {
    cron: config.cron.enabled,
    background: config.background.enabled,
    workflow: config.workflow.enabled,
  }
}

/**
 * The vault as the exec `RefStore`, opened in the background: scrypt takes 1–2 s, which start-up
 * does not wait for. Without `LANGO_PASSPHRASE` there is no vault and tokens pass through
 * literally; with a wrong one a command naming `{{secret:…}}` fails with the vault's clear error.
 * Its held values, which exec masks in all output, include the configuration's own secrets.
 */
function lazyVault(
  database: OpenDatabase,
  passphrase: string | undefined,
  logger: Logger,
  configured: readonly ConfigSecret[],
): RefStore & { readonly vault: () => Promise<Vault> } {
  let opened: Vault | undefined
  const opening =
    passphrase === undefined || passphrase === ''
      ? undefined
      : Vault.open(database.db, { passphrase }).then((vault) => {
          opened = vault
          return vault
        })
  opening?.catch((error) => logger.error('secrets vault unavailable', { error }))
  const vault = async (): Promise<Vault> => {
    if (opening === undefined)
      throw new VaultError('VAULT_NO_PASSPHRASE', 'no secrets vault: set LANGO_PASSPHRASE for the server')
    return opening
  }
  return {
    vault,
    async resolve(token) {
      if (opening === undefined || !token.startsWith('{{secret:')) return undefined
      return (await opening).resolve(token)
    },
    // The configuration's own secrets are masked too, vault or not: a command that reads one
    // (lango.yaml, a _FILE, another process's environment) never shows it.
    *heldValues() {
      yield* configured
      if (opened !== undefined) yield* opened.heldValues()
    },
  }
}

/** Publishes the packages' state changes on the hub (`GET /api/events`). */
function forwardEvents(
  events: EventHub,
  cron: CronService,
  engine: WorkflowEngine,
  background: BackgroundManager,
): void {
  const on = cron.scheduler.events
  on.on('run:start', ({ job, run: started }) =>
    events.publish('cron.run.start', {
      job_id: job.id,
      job_name: job.name,
      run_id: started.id,
      trigger: started.trigger,
    }),
  )
  on.on('run:end', ({ job, run: ended }) =>
    events.publish('cron.run.end', {
      job_id: job.id,
      job_name: job.name,
      run_id: ended.id,
      status: ended.status,
      delivery_status: ended.deliveryStatus,
    }),
  )
  on.on('schedule:fire', (fire) => {
    if (fire.outcome === 'skipped')
      events.publish('cron.run.skipped', {
        job_id: fire.jobId,
        job_name: fire.jobName,
        reason: fire.reason ?? null,
      })
  })
  on.on('job:pause', ({ job, reason }) =>
    events.publish('cron.job.paused', { job_id: job.id, job_name: job.name, reason }),
  )
  // Jobs created, changed, paused, resumed or removed by anyone (API, CLI, chat, MCP, agents).
  on.on('job:change', ({ job, change }) =>
    events.publish(`cron.job.${change}`, { job_id: job.id, job_name: job.name }),
  )
  engine.on('run:start', (e) =>
    events.publish('workflow.run.start', { run_id: e.runId, workflow: e.workflowName, resumed: e.resumed }),
  )
  engine.on('run:end', (e) =>
    events.publish('workflow.run.end', {
      run_id: e.runId,
      workflow: e.workflowName,
      status: e.status,
      error: e.error,
    }),
  )
  engine.on('step:start', (e) =>
    events.publish('workflow.step.start', { run_id: e.runId, step_id: e.stepId, attempt: e.attempt }),
  )
  engine.on('step:end', (e) =>
    events.publish('workflow.step.end', {
      run_id: e.runId,
      step_id: e.stepId,
      status: e.status,
      error: e.error,
    }),
  )
  for (const name of ['task:submit', 'task:start', 'task:end'] as const)
    background.on(name, (task) =>
      events.publish(`background.${name.replace(':', '.')}`, { task_id: task.id, status: task.status }),
    )
}

/**
 * The channel adapters the configuration asks for: Telegram, Slack, Discord and the webhook when
 * their token or URL is set, then each `channels.custom` module (a module that cannot be loaded
 * stops start-up with its error: the operator asked for it).
 */
async function channelAdapters(config: ServerConfig, logger: Logger): Promise<ChannelAdapter[]> {
  const { telegram, slack, discord, webhook, custom } = config.channels
  const adapters: ChannelAdapter[] = []
  // Each channel's client library loads only when that channel is configured.
  if (telegram.token !== undefined) {
    const { TelegramChannel } = await import('./channels/telegram.js')
    adapters.push(
      new TelegramChannel({
        token: telegram.token,
        ...(telegram.apiUrl === undefined ? {} : { apiRoot: telegram.apiUrl }),
        allowedChats: telegram.allowedChats,
        approvalTimeoutMs: config.approvals.timeoutMs,
        logger,
      }),
    )
  }
  if (slack.token !== undefined) {
    const { SlackChannel } = await import('./channels/slack.js')
    adapters.push(
      new SlackChannel({
        token: slack.token,
        ...(slack.apiUrl === undefined ? {} : { apiUrl: slack.apiUrl }),
        ...(slack.defaultChannel === undefined ? {} : { defaultChannel: slack.defaultChannel }),
        logger,
      }),
    )
  }
  if (discord.token !== undefined) {
    const { DiscordChannel } = await import('./channels/discord.js')
    adapters.push(
      new DiscordChannel({
        token: discord.token,
        ...(discord.apiUrl === undefined ? {} : { apiUrl: discord.apiUrl }),
        ...(discord.defaultChannel === undefined ? {} : { defaultChannel: discord.defaultChannel }),
      }),
    )
  }
  if (webhook.url !== undefined) {
    const { WebhookChannel } = await import('./channels/webhook.js')
    adapters.push(
      new WebhookChannel({
        url: webhook.url,
        ...(webhook.secret === undefined ? {} : { secret: webhook.secret }),
        logger,
      }),
    )
  }
  for (const spec of custom) {
    adapters.push(await loadChannelAdapter(spec, { home: config.home, logger }))
  }
  return adapters
}

/** How often the holder of the retention lease prunes cron and workflow history. */
const PRUNE_EVERY_MS = 3_600_000

/**
 * Pruning cron and workflow history, on one server of the cluster at a time (the `retention`
 * lease): at once when taken, then hourly while held.
 */
function retentionDuty(cron: CronService, engine: WorkflowEngine, logger: Logger): Duty {
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
