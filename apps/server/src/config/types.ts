import type { ApprovalPolicy } from '@lango/tools'
import type { ConfigIssue } from './errors.js'

/**
 * The server's resolved configuration: `$LANGO_HOME/lango.yaml` with the `LANGO_*` environment
 * overrides of ARCHITECTURE.md §9 applied, defaults filled in, durations in milliseconds, paths
 * absolute. Produced only by `loadConfig` (validated); everything else reads this shape.
 */
export interface ServerConfig {
  /** `$LANGO_HOME` (default `~/.lango`), absolute. */
  readonly home: string
  /** The file it was read from, or undefined when there is none (every default applies). */
  readonly file: string | undefined
  readonly vault: {
    /** Opens the secrets vault (`LANGO_PASSPHRASE`, its `_FILE` or systemd credential); undefined: no vault. */
    readonly passphrase: string | undefined
  }
  /**
   * Values still read but in a deprecated form (a duration without a unit, read as milliseconds;
   * ADR 0013), each with what to write instead. `lango serve` logs them; `lango doctor` shows them.
   */
  readonly warnings: readonly ConfigIssue[]
  readonly server: {
    /** Default `127.0.0.1`. */
    readonly host: string
    /** Default 7878; 0 picks a free port. */
    readonly port: number
    /** Bearer token (`LANGO_API_TOKEN` or `server.api_token`); required beyond loopback. */
    readonly apiToken: string | undefined
    /** Request bodies beyond this get 413. Default 1 MiB. */
    readonly bodyLimitBytes: number
    /** Extra `Origin`s allowed on `/mcp` and the API besides loopback ones. Default none. */
    readonly allowedOrigins: readonly string[]
    /**
     * Names a `Host` header may carry besides loopback ones and the bound address (`name` on any
     * port, or `name:port`), on every route but `/healthz`: the names clients use for a server
     * bound to 0.0.0.0 or behind a proxy (src/http/host-policy.ts). Default none.
     */
    readonly allowedHosts: readonly string[]
  }
  readonly database: {
    /** `sqlite` (default) or `postgres` (when `LANGO_DATABASE_URL`/`database.url` is `postgres://…`). */
    readonly kind: 'sqlite' | 'postgres'
    /** SQLite: absolute file path (default `$LANGO_HOME/lango.db`). Postgres: the URL. */
    readonly url: string
  }
  readonly cluster: {
    /**
     * How long a claim on shared work stays valid without a heartbeat: workflow runs, singleton
     * duties (Telegram polling, retention), the cron owner lease and the instance registry. Another
     * server takes the work over once it expires; heartbeats come every third of it. Default 30 s.
     */
    readonly leaseMs: number
  }
  readonly model: {
    /** OpenAI-compatible base URL (`LANGO_MODEL_BASE_URL`); undefined = no model configured. */
    readonly baseUrl: string | undefined
    /** Model name (`LANGO_MODEL`). */
    readonly name: string | undefined
    /** API key (`LANGO_MODEL_API_KEY`); never logged. */
    readonly apiKey: string | undefined
  }
  /** The agent's tool-calling loop (issue 13). */
  readonly agent: {
    /** Model calls per turn at most. Default 20. */
    readonly maxSteps: number
    /** A whole turn (every step and tool call) at most. Default 10 min. */
    readonly timeoutMs: number
    /** Retries of a failed model call (429, 5xx, network), honouring `Retry-After`. Default 2. */
    readonly maxRetries: number
    /**
     * Bounds on one turn (`agent.budget`): tokens (input and output over its steps) and cost (for
     * models with a price in `models`). A turn past one stops before its next model call with
     * `AGENT_BUDGET_EXHAUSTED`. Default none.
     */
    readonly turnBudget: { readonly maxTokens?: number; readonly maxCostUsd?: number }
    /**
     * Bounds on the whole server's agent turns per UTC day (`agent.budget.max_tokens_per_day`,
     * `max_cost_per_day`), over what the usage ledger recorded today. Default none.
     */
    readonly dailyBudget: { readonly maxTokens?: number; readonly maxCostUsd?: number }
    /**
     * Bounds per creator per UTC day (`agent.budget.max_tokens_per_creator_per_day`,
     * `max_cost_per_creator_per_day`): a chat's session, or whoever created the cron job. Default none.
     */
    readonly creatorDailyBudget: { readonly maxTokens?: number; readonly maxCostUsd?: number }
    /**
     * How long the usage ledger keeps a turn's row (`agent.usage_max_age`, default 400 days):
     * `lango cost` reports over what is kept; older rows are deleted by the retention duty.
     */
    readonly usageMaxAgeMs: number
  }
  /** Prices of models in US dollars per million tokens (`models.<name>.price`). Default none. */
  readonly models: Readonly<
    Record<
      string,
      { readonly price?: { readonly inputPerMillion: number; readonly outputPerMillion: number } }
    >
  >
  /** Conversation memory per session, with observational compaction (seed 003). */
  readonly sessions: {
    /** A session idle this long is deleted. Default 30 days. */
    readonly retentionMs: number
    /** Sessions kept (least recently used deleted beyond). Default 10,000. */
    readonly maxSessions: number
    /** Messages kept per session before the oldest are dropped. Default 500. */
    readonly maxMessages: number
    /** Compaction observes the oldest messages once a session holds more than this. Default 50. */
    readonly observeAfterMessages: number
    /** …keeping at least this many recent ones as they are. Default 12. */
    readonly keepRecentMessages: number
  }
  readonly channels: {
    readonly telegram: {
      readonly token: string | undefined
      readonly apiUrl: string | undefined
      /** Chats the bot answers and delivers to (`LANGO_TELEGRAM_ALLOWED_CHATS`); none: it receives nothing. */
      readonly allowedChats: readonly string[]
    }
    readonly slack: {
      readonly token: string | undefined
      readonly apiUrl: string | undefined
      /** Where a bare `slack` target goes. */
      readonly defaultChannel: string | undefined
      /** The only channels deliveries may go to (`allowed_channels`); undefined: any channel. */
      readonly allowedChannels: readonly string[] | undefined
    }
    readonly discord: {
      readonly token: string | undefined
      readonly apiUrl: string | undefined
      /** Where a bare `discord` target goes. */
      readonly defaultChannel: string | undefined
      /** The only channels deliveries may go to (`allowed_channels`); undefined: any channel. */
      readonly allowedChannels: readonly string[] | undefined
    }
    readonly webhook: {
      readonly url: string | undefined
      /** Signs each POST (HMAC-SHA256, `X-Lango-Signature`) when set. */
      readonly secret: string | undefined
    }
    /** Adapters loaded from modules (`channels.custom`): `<name>:<id>` targets, chats in, approvals. */
    readonly custom: readonly {
      readonly name: string
      /** A module path, absolute or relative to `$LANGO_HOME`, or a package name. */
      readonly module: string
      readonly options: Readonly<Record<string, unknown>>
    }[]
    /** Where results go when a job names no target and the session names no chat. Default `[]`. */
    readonly defaultDeliverTo: readonly string[]
  }
  readonly approvals: {
    /** Which HTTP tool calls need approval. Default `dangerous`. */
    readonly policy: ApprovalPolicy
    /** MCP's own second approval (the host approves first). Default `none`. */
    readonly mcpPolicy: ApprovalPolicy
    /** A pending approval expires (denied) after this. Default 5 min. */
    readonly timeoutMs: number
    /** Unattended runs (cron, background, workflow agents) may use dangerous tools. Default false. */
    readonly unattendedAllowDangerous: boolean
    /** Unattended runs may create cron jobs. Default false. */
    readonly unattendedAllowCronCreate: boolean
  }
  readonly cron: {
    /** Default true. */
    readonly enabled: boolean
    /** IANA zone for jobs that name none. Default the host's zone, else `UTC`. */
    readonly timezone: string
    /** Default 60 s. */
    readonly minIntervalMs: number
    /** The floor of `ai` jobs, never below `minIntervalMs`. Default `minIntervalMs`. */
    readonly minAgentIntervalMs: number
    /** Default 5. */
    readonly maxConcurrentJobs: number
    /** Default 5. */
    readonly maxConsecutiveFailures: number
    /**
     * Most tokens (input plus output, as the model reports them) `ai` jobs may use in any 24 hours;
     * beyond it their runs are recorded skipped with the reason (SECURITY.md CRON-3). Unset: no
     * token budget.
     */
    readonly maxAiTokensPerDay: number | undefined
    /**
     * Jobs' dead-man pings (`ping_url`) may go to loopback and private addresses (a self-hosted
     * monitor on the LAN). Default false; link-local addresses (cloud metadata) are refused always.
     */
    readonly pingPrivateNetworks: boolean
    /** Signed calls one hook (`POST /hooks/<name>`) may take per minute; beyond it 429. Default 30. */
    readonly webhookRateLimit: number
    /**
     * How much of a hook call's body (bytes of UTF-8) reaches a prompt: an `ai` job's, or a workflow
     * `prompt` step's `{{trigger.payload}}`; the rest is cut with a line saying so. Default 16 KiB.
     */
    readonly webhookPromptLimitBytes: number
    /** History kept per job: default 30 days / 1000 rows. */
    readonly historyMaxAgeMs: number
    readonly historyMaxRuns: number
  }
  readonly background: {
    /** Default true. */
    readonly enabled: boolean
    /** Default 3. */
    readonly maxConcurrentTasks: number
    /** Default 100. */
    readonly maxQueuedTasks: number
    /** Default 30 min. */
    readonly taskTimeoutMs: number
  }
  readonly workflow: {
    /** Default true. */
    readonly enabled: boolean
    /** Saved workflows, absolute. Default `$LANGO_HOME/workflows`. */
    readonly directory: string
    /** `workflow_run` `file_path` may also name files inside this directory. Default none. */
    readonly workspace: string | undefined
    /** Default 4. */
    readonly maxParallel: number
    /** Finished runs kept: default 30 days / the newest 1000 runs in all (not per workflow). */
    readonly historyMaxAgeMs: number
    readonly historyMaxRuns: number
  }
  readonly exec: {
    /** Default timeout of a command. Default 30 s. */
    readonly timeoutMs: number
    /** Upper bound for a call's `timeout`. Default 10 min (MCP waits are capped at 50 s anyway). */
    readonly maxTimeoutMs: number
    /** Default `core`. */
    readonly inherit: 'core' | 'all'
    /** Extra variable globs passed through / always removed. Default none. */
    readonly envAllow: readonly string[]
    readonly envDeny: readonly string[]
    /** Running background processes at most. Default 16. */
    readonly maxBackgroundProcesses: number
    /**
     * Foreground commands (exec calls, cron shell runs, workflow `run` steps, `when` gates) running
     * at once across the server; more wait, up to eight times as many, then are refused
     * (`EXEC_TOO_MANY_PROCESSES`). Default 8, or `cron.maxConcurrentJobs` when that is higher.
     */
    readonly maxCommands: number
    /** Default working directory of commands, absolute (a relative `exec.cwd` is under `$LANGO_HOME`). Default the server's working directory. */
    readonly cwd: string
  }
  readonly logging: {
    /** pino level. Default `info`; `LANGO_LOG_LEVEL` overrides. */
    readonly level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent'
  }
  readonly metrics: {
    /** Serve `GET /metrics` (Prometheus text format, behind the API token). Default true. */
    readonly enabled: boolean
  }
  readonly alerts: {
    /**
     * Where the operator's alerts go (missed runs, auto-paused jobs, deliveries that failed for good,
     * a stalled scheduler, a lost lease): targets as in `deliver_to`. Default none (alerts are logged).
     */
    readonly deliverTo: readonly string[]
  }
  readonly telemetry: {
    /**
     * Whether traces are on at all (`telemetry.enabled`; `OTEL_SDK_DISABLED=true` turns them off).
     * Off: no tracer, and no OpenTelemetry module is loaded, whatever the endpoint. Default true.
     */
    readonly enabled: boolean
    /** `OTEL_TRACES_EXPORTER` / `telemetry.exporter`: `none` exports no span (no tracer is made). Default `otlp`. */
    readonly exporter: 'otlp' | 'none'
    /**
     * `service.name` of the traces: `OTEL_SERVICE_NAME`, else `service.name` of
     * `OTEL_RESOURCE_ATTRIBUTES`, else `telemetry.service_name`, else `service.name` of
     * `telemetry.resource_attributes`. Default `lango`.
     */
    readonly serviceName: string
    /**
     * Further resource attributes of every span (`telemetry.resource_attributes`, then
     * `OTEL_RESOURCE_ATTRIBUTES` over them); `service.name` is {@link serviceName}, never here.
     */
    readonly resourceAttributes: Readonly<Record<string, string>>
    /** Which spans are kept (`OTEL_TRACES_SAMPLER`). Default `parentbased_always_on`. */
    readonly sampler: TraceSampler
    /** The ratio of the trace-ID ratio samplers (`OTEL_TRACES_SAMPLER_ARG`), 0 to 1. Default 1. */
    readonly samplerArg: number
    /** How long one export may take (`OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, `OTEL_EXPORTER_OTLP_TIMEOUT`). Default 10 s. */
    readonly timeoutMs: number
    /** The OTLP encoding: JSON over HTTP, the only one the exporter speaks. */
    readonly protocol: 'http/json'
    /**
     * Where traces go (OTLP over HTTP, JSON), or undefined: no tracing, and no OpenTelemetry module
     * is loaded. `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as is), else `OTEL_EXPORTER_OTLP_ENDPOINT`
     * (plus `/v1/traces`), else `telemetry.otlp.endpoint` of `lango.yaml` (plus `/v1/traces`).
     */
    readonly tracesUrl: string | undefined
    /** Headers sent with every export (`telemetry.otlp.headers`; values may be credentials). Default none. */
    readonly headers: Readonly<Record<string, string>>
  }
}

/** The samplers of `OTEL_TRACES_SAMPLER` (the OpenTelemetry SDK's built-in ones). */
export type TraceSampler =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio'
