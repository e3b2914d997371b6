import { formatDuration } from './rules.js'
import { fileSchema } from './schema.js'
import type { ServerConfig } from './types.js'

/** What the reference says about one key of `lango.yaml` beyond what the schema knows. */
interface KeyNote {
  /** One or two sentences: what the key does. */
  readonly description: string
  /** Where its value ends up in the loaded configuration: the default is read from there. */
  readonly value?: (config: ServerConfig) => unknown
  /** The default in words, where it is not one value (it depends on the host, or on another key). */
  readonly default?: string
  /** The variables that override it (the environment wins over the file). */
  readonly env?: readonly string[]
  /** What it accepts, for a key whose schema has no rule text (a mapping, a list of mappings). */
  readonly accepted?: string
}

/** Variables that can also come from `<NAME>_FILE` or a systemd credential (src/config/secret-sources.ts). */
const SECRET_VARIABLES = new Set([
  'LANGO_DATABASE_URL',
  'LANGO_PASSPHRASE',
  'LANGO_MODEL_API_KEY',
  'LANGO_API_TOKEN',
  'LANGO_TELEGRAM_TOKEN',
  'LANGO_SLACK_TOKEN',
  'LANGO_DISCORD_TOKEN',
  'LANGO_WEBHOOK_SECRET',
])

/**
 * Every key of `lango.yaml` (dotted), described. The configuration test fails when a key of the
 * schema has no note or a note names no key, so a new key cannot go undocumented.
 */
const NOTES: Readonly<Record<string, KeyNote>> = {
  'server.host': {
    description:
      'The address `lango serve` listens on. Beyond loopback it refuses to start without an API token.',
    value: (c) => c.server.host,
    env: ['LANGO_HOST'],
  },
  'server.port': {
    description: 'The port `lango serve` listens on; 0 picks a free one.',
    value: (c) => c.server.port,
    env: ['LANGO_PORT'],
  },
  'server.api_token': {
    description:
      'The bearer token every route but `GET /healthz` then needs (`Authorization: Bearer <token>`); required to bind beyond loopback.',
    value: (c) => c.server.apiToken,
    env: ['LANGO_API_TOKEN'],
  },
  'server.body_limit': {
    description: 'The largest request body the HTTP API and `/mcp` read (413 beyond).',
    value: (c) => c.server.bodyLimitBytes,
  },
  'server.allowed_origins': {
    description:
      'Browser origins (besides the server’s own pages) that may call the API, `/v1` and `/mcp`; a page on another local port is another origin.',
    value: (c) => c.server.allowedOrigins,
  },
  'server.allowed_hosts': {
    description:
      'Names clients reach the server by, besides loopback names and the bound address (DNS rebinding guard): `name` on any port or `name:port`.',
    value: (c) => c.server.allowedHosts,
  },
  'database.url': {
    description:
      'The database: a SQLite file (relative to `LANGO_HOME`), `sqlite:<path>`, or `postgres://…` to share one PostgreSQL among several servers.',
    default: '`lango.db` in `LANGO_HOME` (SQLite)',
    env: ['LANGO_DATABASE_URL'],
  },
  'cluster.lease': {
    description:
      'How long a singleton duty’s lease (Telegram polling, retention) lasts without renewal; the scheduler is stale after this long without a tick. Every server on one database must have the same value (a server warns when another differs).',
    value: (c) => c.cluster.leaseMs,
  },
  'model.base_url': {
    description: 'The OpenAI-compatible chat-completions server the agent uses (OpenAI, Ollama, vLLM, …).',
    value: (c) => c.model.baseUrl,
    env: ['LANGO_MODEL_BASE_URL'],
  },
  'model.name': {
    description:
      'The model name sent to it. Without a base URL and a name, agent runs fail with `AGENT_NO_MODEL`.',
    value: (c) => c.model.name,
    env: ['LANGO_MODEL'],
  },
  'model.api_key': {
    description: 'The model server’s API key, sent as a bearer token.',
    value: (c) => c.model.apiKey,
    env: ['LANGO_MODEL_API_KEY'],
  },
  'agent.max_steps': {
    description: 'Model calls in one agent turn at most (the tool loop).',
    value: (c) => c.agent.maxSteps,
  },
  'agent.timeout': {
    description: 'How long one agent turn may take.',
    value: (c) => c.agent.timeoutMs,
  },
  'agent.max_retries': {
    description: 'Retries of a model call that failed with a network error, 429 or 5xx.',
    value: (c) => c.agent.maxRetries,
  },
  'agent.usage_max_age': {
    description:
      'How long the usage ledger (`agent_usage`: tokens, model and cost of every agent turn) keeps a row; older rows are deleted hourly by the retention duty, so `lango cost` reports over this window at most.',
    value: (c) => c.agent.usageMaxAgeMs,
  },
  'agent.budget.max_tokens_per_turn': {
    description:
      'Tokens (input and output, over its steps) one agent turn may use: past it the turn makes no further model call and fails `AGENT_BUDGET_EXHAUSTED` if the model still wanted tools.',
    value: (c) => c.agent.turnBudget.maxTokens,
  },
  'agent.budget.max_cost_per_turn': {
    description:
      'US dollars one agent turn may cost, for models with a price under `models`: past it the turn stops as for `max_tokens_per_turn`.',
    value: (c) => c.agent.turnBudget.maxCostUsd,
  },
  'agent.budget.max_tokens_per_day': {
    description:
      "Tokens all agent turns of the server may use per UTC day (what the usage ledger recorded today plus the turn so far): past it a turn stops before its next model call with `budget_exhausted`, and the day's next turns make no model call. A cron ai job's own `max_tokens_per_day` bounds that job alone; `lango cost` shows the spend.",
    value: (c) => c.agent.dailyBudget.maxTokens,
  },
  'agent.budget.max_cost_per_day': {
    description:
      'US dollars all agent turns of the server may cost per UTC day, for models with a price under `models`: as `max_tokens_per_day`.',
    value: (c) => c.agent.dailyBudget.maxCostUsd,
  },
  'agent.budget.max_tokens_per_creator_per_day': {
    description:
      'Tokens per UTC day for the turns of one creator: a chat (its session key) or the person who created a cron job (its `created_by`), with the background tasks and workflow runs their agents start; jobs and runs the host made have no creator. As `max_tokens_per_day` otherwise.',
    value: (c) => c.agent.creatorDailyBudget.maxTokens,
  },
  'agent.budget.max_cost_per_creator_per_day': {
    description:
      'US dollars per UTC day for the turns of one creator, for models with a price: as `max_tokens_per_creator_per_day`.',
    value: (c) => c.agent.creatorDailyBudget.maxCostUsd,
  },
  models: {
    description:
      'Prices of models, for the cost of each turn (`lango_agent_cost_usd_total`) and `agent.budget.max_cost_per_turn`: `models: { gpt-4o-mini: { price: { input: 0.15, output: 0.60 } } }`.',
    value: (c) => c.models,
    accepted:
      'a mapping (at most 100) of model names to `{ price: { input, output } }`, each an amount of US dollars per million tokens from 0 to 100000',
  },
  'sessions.retention': {
    description: 'Chat sessions not used for this long are deleted.',
    value: (c) => c.sessions.retentionMs,
  },
  'sessions.max_sessions': {
    description: 'Sessions kept at most; the least recently used go first.',
    value: (c) => c.sessions.maxSessions,
  },
  'sessions.max_messages': {
    description: 'Messages kept per session at most.',
    value: (c) => c.sessions.maxMessages,
  },
  'sessions.observe_after_messages': {
    description: 'Once a session has this many messages, the oldest are condensed into observations.',
    value: (c) => c.sessions.observeAfterMessages,
  },
  'sessions.keep_recent_messages': {
    description: 'Messages kept as they are when a session is condensed.',
    value: (c) => c.sessions.keepRecentMessages,
  },
  'channels.telegram.token': {
    description: 'The Telegram bot token: the server chats on Telegram and delivers to `telegram:<chat>`.',
    value: (c) => c.channels.telegram.token,
    env: ['LANGO_TELEGRAM_TOKEN'],
  },
  'channels.telegram.api_url': {
    description: 'The Bot API server (a local Bot API server, or an emulator in tests).',
    default: 'unset: `https://api.telegram.org`',
    env: ['LANGO_TELEGRAM_API_URL'],
  },
  'channels.telegram.allowed_chats': {
    description: 'The chats the bot answers; messages from any other are ignored.',
    value: (c) => c.channels.telegram.allowedChats,
    env: ['LANGO_TELEGRAM_ALLOWED_CHATS'],
  },
  'channels.slack.token': {
    description: 'The Slack bot token: deliveries to `slack:<channel>`.',
    value: (c) => c.channels.slack.token,
    env: ['LANGO_SLACK_TOKEN'],
  },
  'channels.slack.api_url': {
    description: 'The Slack Web API base URL.',
    default: 'unset: `https://slack.com/api`',
    env: ['LANGO_SLACK_API_URL'],
  },
  'channels.slack.default_channel': {
    description: 'Where a bare `slack` target delivers.',
    value: (c) => c.channels.slack.defaultChannel,
  },
  'channels.slack.allowed_channels': {
    description:
      'The only Slack channels the bot posts to: a job, task or workflow delivering anywhere else is refused when it is made, and a delivery is refused at send. At least one; `default_channel` must be one of them.',
    default: 'unset: any channel the bot can post in',
    value: (c) => c.channels.slack.allowedChannels,
  },
  'channels.discord.token': {
    description: 'The Discord bot token: deliveries to `discord:<channel>`.',
    value: (c) => c.channels.discord.token,
    env: ['LANGO_DISCORD_TOKEN'],
  },
  'channels.discord.api_url': {
    description: 'The Discord REST API base URL.',
    default: 'unset: Discord’s own',
    env: ['LANGO_DISCORD_API_URL'],
  },
  'channels.discord.default_channel': {
    description: 'Where a bare `discord` target delivers.',
    value: (c) => c.channels.discord.defaultChannel,
  },
  'channels.discord.allowed_channels': {
    description:
      'The only Discord channels the bot posts to: a job, task or workflow delivering anywhere else is refused when it is made, and a delivery is refused at send. At least one; `default_channel` must be one of them.',
    default: 'unset: any channel the bot can post in',
    value: (c) => c.channels.discord.allowedChannels,
  },
  'channels.webhook.url': {
    description: 'Where the `webhook` target POSTs each delivery (JSON).',
    value: (c) => c.channels.webhook.url,
    env: ['LANGO_WEBHOOK_URL'],
  },
  'channels.webhook.secret': {
    description: 'Signs each webhook delivery with HMAC-SHA256.',
    value: (c) => c.channels.webhook.secret,
    env: ['LANGO_WEBHOOK_SECRET'],
  },
  'channels.custom': {
    description:
      'Channel adapters loaded from modules at start (a default-exported factory of a `ChannelAdapter`).',
    value: (c) => c.channels.custom,
    accepted:
      'a list (at most 20) of `{ name, module, options? }`: a unique channel name (lowercase letters, digits, _ or -, not a built-in one), the module to load (relative to `LANGO_HOME`) and the options given to its factory',
  },
  'channels.default_deliver_to': {
    description: 'Where jobs deliver that name no target and were not created in a chat.',
    value: (c) => c.channels.defaultDeliverTo,
  },
  'approvals.policy': {
    description:
      'Which tool calls over HTTP and chat wait for a person’s approval: `dangerous` ones, `moderate` and dangerous ones, `all`, or `none`.',
    value: (c) => c.approvals.policy,
  },
  'approvals.mcp_policy': {
    description: 'The same for `lango mcp` and `/mcp`, whose host asks the user itself.',
    value: (c) => c.approvals.mcpPolicy,
  },
  'approvals.timeout': {
    description: 'An approval not answered within this is denied (expired).',
    value: (c) => c.approvals.timeoutMs,
  },
  'approvals.unattended.allow_dangerous': {
    description: 'Lets unattended runs (cron, background tasks, workflows) call dangerous tools.',
    value: (c) => c.approvals.unattendedAllowDangerous,
  },
  'approvals.unattended.allow_cron_create': {
    description:
      'Lets unattended runs create, change or resume cron jobs, and save workflows that start by themselves (a schedule or a webhook trigger).',
    value: (c) => c.approvals.unattendedAllowCronCreate,
  },
  'cron.enabled': {
    description: 'Runs the cron scheduler and offers the cron tools and routes.',
    value: (c) => c.cron.enabled,
  },
  'cron.timezone': {
    description: 'The time zone of jobs that name none.',
    default: 'the host’s time zone (UTC when unknown)',
  },
  'cron.min_interval': {
    description: 'The shortest interval a job may fire at.',
    value: (c) => c.cron.minIntervalMs,
  },
  'cron.min_agent_interval': {
    description:
      'The shortest interval an `ai` job may fire at: each fire is a model run that spends tokens (5m is a sensible floor, with 1m for shell jobs). At least `cron.min_interval`; a job made an `ai` job, or resumed, is checked against it too.',
    default: '`cron.min_interval`',
  },
  'cron.max_concurrent_jobs': {
    description: 'Job runs at the same time at most; more wait.',
    value: (c) => c.cron.maxConcurrentJobs,
  },
  'cron.max_consecutive_failures': {
    description: 'A job that fails this many times in a row is paused (`cron.job.paused` with a reason).',
    value: (c) => c.cron.maxConsecutiveFailures,
  },
  'cron.max_ai_tokens_per_day': {
    description:
      'Tokens (input plus output) `ai` jobs may use in any 24 hours; beyond it their runs are skipped with the reason.',
    default: 'unset: no limit',
  },
  'cron.ping_private_networks': {
    description:
      'Lets dead-man pings (`ping_url`) reach loopback and private addresses; link-local stays refused.',
    value: (c) => c.cron.pingPrivateNetworks,
  },
  'cron.webhook_rate_limit': {
    description:
      'Signed calls one hook (`POST /hooks/<name>`, the trigger of `webhook` jobs and workflows) may take per minute; beyond it 429 with `Retry-After`. Calls that do not verify never count.',
    value: (c) => c.cron.webhookRateLimit,
  },
  'cron.webhook_prompt_limit': {
    description:
      "How much of a hook call's body reaches a prompt: an `ai` job's, or a workflow `prompt` step's `{{trigger.payload}}`. The rest is cut, with a line after the data saying how many bytes were cut; a shell job gets the whole body on its stdin, a workflow `run` step as `{{trigger.payload}}`.",
    value: (c) => c.cron.webhookPromptLimitBytes,
  },
  'cron.history.max_age': {
    description: 'Cron runs older than this are deleted.',
    value: (c) => c.cron.historyMaxAgeMs,
  },
  'cron.history.max_runs': {
    description:
      'Cron runs kept per job at most, after each retention pass (when a server takes the retention lease, then hourly): between passes a busy job may hold up to an hour of runs more.',
    value: (c) => c.cron.historyMaxRuns,
  },
  'background.enabled': {
    description: 'Offers background agent tasks (`bg_*` tools, `/api/background`).',
    value: (c) => c.background.enabled,
  },
  'background.max_concurrent_tasks': {
    description: 'Background tasks running at the same time at most.',
    value: (c) => c.background.maxConcurrentTasks,
  },
  'background.max_queued_tasks': {
    description: 'Tasks waiting at most; more are refused.',
    value: (c) => c.background.maxQueuedTasks,
  },
  'background.task_timeout': {
    description: 'How long one background task may run.',
    value: (c) => c.background.taskTimeoutMs,
  },
  'workflow.enabled': {
    description: 'Offers workflows (`workflow_*` tools, `/api/workflows`).',
    value: (c) => c.workflow.enabled,
  },
  'workflow.directory': {
    description: 'Where saved workflows live (`<name>.flow.yaml`), relative to `LANGO_HOME`.',
    default: '`workflows` in `LANGO_HOME`',
  },
  'workflow.workspace': {
    description: 'A directory whose `.flow.yaml` files may be run by path, besides the saved ones.',
    value: (c) => c.workflow.workspace,
  },
  'workflow.max_parallel': {
    description: 'Steps of one run at the same time at most.',
    value: (c) => c.workflow.maxParallel,
  },
  'workflow.history.max_age': {
    description: 'Workflow runs older than this are deleted.',
    value: (c) => c.workflow.historyMaxAgeMs,
  },
  'workflow.history.max_runs': {
    description:
      'Workflow runs kept at most, after each retention pass (when a server takes the retention lease, then hourly).',
    value: (c) => c.workflow.historyMaxRuns,
  },
  'exec.timeout': {
    description: 'The timeout of a command that names none.',
    default: '`30s`, or `exec.max_timeout` when that is lower',
  },
  'exec.max_timeout': {
    description: 'The longest timeout a command may ask for.',
    value: (c) => c.exec.maxTimeoutMs,
  },
  'exec.inherit': {
    description:
      'Which of the server’s environment variables commands get: `core` (PATH, HOME, locale, …) or `all` (the deny list still applies).',
    value: (c) => c.exec.inherit,
  },
  'exec.env_allow': {
    description: 'More variables commands may inherit.',
    value: (c) => c.exec.envAllow,
  },
  'exec.env_deny': {
    description: 'Variables commands never get (besides the built-in deny list, which always wins).',
    value: (c) => c.exec.envDeny,
  },
  'exec.max_background_processes': {
    description: 'Background processes (`exec_bg`) at the same time at most.',
    value: (c) => c.exec.maxBackgroundProcesses,
  },
  'exec.max_commands': {
    description:
      'Foreground commands running at once across the server: `exec` calls, cron shell runs, workflow `run` steps and `when` gates. More wait (their timeout starts when they run), up to eight times as many; beyond that a command is refused with `EXEC_TOO_MANY_PROCESSES`.',
    value: (c) => c.exec.maxCommands,
    default: '`8`, or `cron.max_concurrent_jobs` when that is higher',
  },
  'exec.cwd': {
    description: 'The working directory of commands that name none, relative to `LANGO_HOME`.',
    default: 'the directory `lango serve` was started in',
  },
  'logging.level': {
    description: 'The least severe log lines written (to stderr, as JSON lines).',
    value: (c) => c.logging.level,
    env: ['LANGO_LOG_LEVEL'],
  },
  'metrics.enabled': {
    description: 'Serves `GET /metrics` (Prometheus).',
    value: (c) => c.metrics.enabled,
  },
  'alerts.deliver_to': {
    description:
      'Where the operator’s alerts go: a stalled scheduler, missed runs, failed deliveries, a job paused after failures, a lost lease, an exhausted budget, a database failing and recovered.',
    value: (c) => c.alerts.deliverTo,
  },
  'telemetry.enabled': {
    description:
      'Whether the server makes traces at all; `false` (or `OTEL_SDK_DISABLED=true`) turns them off even with an endpoint, and then no OpenTelemetry module is loaded. `OTEL_SDK_DISABLED=false` turns them back on over the file.',
    value: (c) => c.telemetry.enabled,
    env: ['OTEL_SDK_DISABLED'],
  },
  'telemetry.service_name': {
    description:
      'The `service.name` of exported traces. `OTEL_SERVICE_NAME` wins over it, and so does a `service.name` in `OTEL_RESOURCE_ATTRIBUTES` (below `OTEL_SERVICE_NAME`).',
    value: (c) => c.telemetry.serviceName,
    env: ['OTEL_SERVICE_NAME'],
  },
  'telemetry.resource_attributes': {
    description:
      'Resource attributes of every exported span (`deployment.environment.name: prod`), besides `service.name` and `service.version`. `OTEL_RESOURCE_ATTRIBUTES` (`key=value,…`, values percent-encoded) adds to them, its values winning; a `service.name` there names the service unless `OTEL_SERVICE_NAME` is set.',
    value: (c) => c.telemetry.resourceAttributes,
    env: ['OTEL_RESOURCE_ATTRIBUTES'],
    accepted:
      'a mapping (at most 64) of attribute keys (printable ASCII without spaces, commas or `=`) to text of at most 255 characters',
  },
  'telemetry.exporter': {
    description:
      'Where spans go: `otlp` (to the endpoint below) or `none` (no tracer is made and nothing is exported, even with an endpoint).',
    value: (c) => c.telemetry.exporter,
    env: ['OTEL_TRACES_EXPORTER'],
  },
  'telemetry.sampler': {
    description:
      'Which traces are kept, as OpenTelemetry names its samplers: `always_on`, `always_off`, `traceidratio` (a share of traces, by trace ID), and the `parentbased_` forms that follow a parent span’s decision and apply the named one to a root.',
    value: (c) => c.telemetry.sampler,
    env: ['OTEL_TRACES_SAMPLER'],
  },
  'telemetry.sampler_arg': {
    description:
      'The share of traces `traceidratio` and `parentbased_traceidratio` keep, from 0 to 1; the other samplers ignore it.',
    value: (c) => c.telemetry.samplerArg,
    env: ['OTEL_TRACES_SAMPLER_ARG'],
  },
  'telemetry.otlp.endpoint': {
    description:
      'Exports traces over OTLP/HTTP to `<endpoint>/v1/traces`; `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` gives the whole traces URL instead.',
    default: 'unset: no traces',
    env: ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'],
  },
  'telemetry.otlp.headers': {
    description:
      'Headers sent with each export (credentials, masked in output). `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (`name=value,…`, values percent-encoded; also as `_FILE` or a systemd credential) add to them, the traces-specific last.',
    value: (c) => c.telemetry.headers,
    env: ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'],
    accepted: 'a mapping (at most 20) of HTTP header names to values of 1 to 4096 characters',
  },
  'telemetry.otlp.protocol': {
    description:
      'How spans are encoded: OTLP as JSON over HTTP, the one protocol the exporter speaks. The variables are read so that `grpc` or `http/protobuf` is an error rather than ignored.',
    value: (c) => c.telemetry.protocol,
    env: ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'],
  },
  'telemetry.otlp.timeout': {
    description:
      'How long one export may take before it counts as failed. The variables give whole milliseconds (`5000`), the traces-specific one first.',
    value: (c) => c.telemetry.timeoutMs,
    env: ['OTEL_EXPORTER_OTLP_TIMEOUT', 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT'],
  },
}

/** Variables that are no key of the file. */
const OTHER_VARIABLES: readonly (readonly [string, string])[] = [
  ['LANGO_HOME', 'The state directory: `lango.yaml`, the SQLite database, `workflows/`. Default `~/.lango`.'],
  [
    'LANGO_PASSPHRASE',
    'Opens the secrets vault (`lango secrets`); never in the file. Also from `LANGO_PASSPHRASE_FILE` or a systemd credential.',
  ],
  [
    'LANGO_URL',
    'The server the CLI talks to (`--url`), such as `http://127.0.0.1:7878`. Default: `http://<server.host>:<server.port>`.',
  ],
]

interface SchemaNode {
  readonly type: string
  readonly wrapped?: SchemaNode
  readonly entries?: Readonly<Record<string, SchemaNode>>
  readonly rule?: { readonly expected: string }
  readonly expected?: string
}

/** A key of `lango.yaml` (a value, not a section) and what its schema says it accepts. */
export interface SchemaKey {
  readonly key: string
  readonly expected: string | undefined
}

/** Every key of `lango.yaml` that holds a value, in the schema's order (walked as `unknownKeys` does). */
export function schemaKeys(
  schema: SchemaNode = fileSchema as SchemaNode,
  at: readonly string[] = [],
): SchemaKey[] {
  const expected = schema.rule?.expected ?? schema.expected
  const node = schema.type === 'nullish' && schema.wrapped !== undefined ? schema.wrapped : schema
  if (expected !== undefined || node.entries === undefined) return [{ key: at.join('.'), expected }]
  return Object.entries(node.entries).flatMap(([key, child]) => schemaKeys(child, [...at, key]))
}

/** The keys {@link configurationReference} has a note for. */
export function documentedKeys(): readonly string[] {
  return Object.keys(NOTES)
}

/** `1048576` → `1MiB`. */
function formatSize(bytes: number): string {
  for (const [unit, size] of [
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`
  }
  return `${bytes}`
}

/** A default as `lango.yaml` would spell it. */
function formatDefault(value: unknown, expected: string | undefined): string {
  if (value === undefined || value === null) return 'unset'
  if (Array.isArray(value)) return value.length === 0 ? 'none (`[]`)' : `\`${JSON.stringify(value)}\``
  if (typeof value === 'number' && expected?.startsWith('expected a duration'))
    return `\`${formatDuration(value)}\``
  if (typeof value === 'number' && expected?.startsWith('expected a size')) return `\`${formatSize(value)}\``
  if (typeof value === 'object') return Object.keys(value).length === 0 ? 'none (`{}`)' : 'set'
  return `\`${String(value)}\``
}

/** What a rule's `expected` says, as the reference shows it: `expected an integer …` → `an integer …`. */
function accepted(expected: string): string {
  return expected.replace(/^expected /, '')
}

/** A Markdown table with its columns padded, as the formatter (biome) writes them. */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((cell, index) =>
    Math.max(cell.length, ...rows.map((row) => (row[index] ?? '').length), 3),
  )
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, index) => cell.padEnd(widths[index] ?? 0)).join(' | ')} |`
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n')
}

/**
 * `docs/configuration.md`: every key of `lango.yaml` with what it accepts (the schema's own text),
 * its default (read from `defaults`, the configuration loaded from no file and no variables) and
 * the variables that override it. Generated: `pnpm docs:config` writes it, and the configuration
 * test fails when the committed file differs.
 */
export function configurationReference(defaults: ServerConfig): string {
  const keys = schemaKeys()
  const missing = keys.filter((entry) => NOTES[entry.key] === undefined).map((entry) => entry.key)
  if (missing.length > 0) throw new Error(`no note for the configuration keys ${missing.join(', ')}`)
  const variables = keys.flatMap((entry) => (NOTES[entry.key]?.env ?? []).map((name) => [name, entry.key]))
  const out: string[] = [
    '# Configuration reference',
    '',
    '<!-- Generated from apps/server/src/config/schema.ts by `pnpm docs:config` (apps/server/src/config/reference.ts); do not edit. -->',
    '',
    'The reference server reads `$LANGO_HOME/lango.yaml` (`~/.lango/lango.yaml` by default). Every key is',
    'optional; a bad value stops start-up with one message naming the key, its line and what is accepted,',
    'and an unknown key is an error that names the keys accepted there. Environment variables win over',
    'the file; an empty variable counts as unset. Every secret variable can also come from a file',
    '(`<NAME>_FILE=/run/secrets/…`) or a systemd credential of its name. Durations are a number with a',
    'unit (`250ms`, `90s`, `5m`, `1h30m`, `2d`, `1w`); sizes are bytes or `512KiB`, `1MiB`. Relative',
    'paths resolve against `LANGO_HOME`, and `~/` is the home directory.',
    '',
    '## Environment variables',
    '',
    table(
      ['variable', 'key'],
      [
        ...variables.map(([name, key]) => [
          `\`${name}\`${SECRET_VARIABLES.has(name as string) ? ' (secret)' : ''}`,
          `\`${key}\``,
        ]),
        ...OTHER_VARIABLES.map(([name]) => [
          `\`${name}\`${SECRET_VARIABLES.has(name) ? ' (secret)' : ''}`,
          'none: see below',
        ]),
      ],
    ),
    '',
    ...OTHER_VARIABLES.flatMap(([name, text]) => [`- \`${name}\`: ${text}`]),
    '',
  ]
  let section = ''
  for (const entry of keys) {
    const note = NOTES[entry.key] as KeyNote
    const top = entry.key.split('.')[0] as string
    if (top !== section) {
      section = top
      out.push(`## ${section}`, '')
    }
    const what = note.accepted ?? (entry.expected === undefined ? undefined : accepted(entry.expected))
    if (what === undefined) throw new Error(`no accepted values for ${entry.key}`)
    const fallback =
      note.default ??
      formatDefault(note.value === undefined ? undefined : note.value(defaults), entry.expected)
    out.push(
      `### \`${entry.key}\``,
      '',
      note.description,
      '',
      `- accepted: ${what}`,
      `- default: ${fallback}`,
    )
    if (note.env !== undefined) {
      const names = note.env.map(
        (name) => `\`${name}\`${SECRET_VARIABLES.has(name) ? ' (or its `_FILE`)' : ''}`,
      )
      out.push(`- environment: ${names.join(', ')}`)
    }
    out.push('')
  }
  return `${out.join('\n').trimEnd()}\n`
}
