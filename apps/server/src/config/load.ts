import { open, stat } from 'node:fs/promises'
import { homedir } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'
import * as v from 'valibot'
import { type Document, isMap, isNode, isScalar, isSeq, LineCounter, parseDocument } from 'yaml'
import { ConfigError, type ConfigIssue } from './errors.js'
import {
  boolean,
  chatId,
  databaseUrl,
  formatDuration,
  host,
  httpUrl,
  integer,
  invalidMessage,
  logLevel,
  milliseconds,
  name,
  otlpHeaderList,
  otlpProtocol,
  passphrase,
  path,
  type Rule,
  ratio,
  resourceAttributeList,
  secret,
  timezone,
  traceExporter,
  traceSampler,
  UNITS,
} from './rules.js'
import {
  deprecatedValues,
  type FileConfig,
  fileSchema,
  SECTIONS,
  unknownKeyMessage,
  unknownKeys,
} from './schema.js'
import { secretText } from './secret-sources.js'
import type { ServerConfig } from './types.js'

export { ConfigError, type ConfigErrorCode, type ConfigIssue } from './errors.js'
export { redactedConfig } from './redact.js'

/** Options of {@link loadConfig}; every one has a default from the running process. */
export interface LoadConfigOptions {
  /** Where `LANGO_*` variables are read (default `process.env`). Never modified. */
  readonly env?: NodeJS.ProcessEnv
  /** The user's home directory: the default `LANGO_HOME` is `<home>/.lango`, and `~/` in paths means it (default `os.homedir()`). */
  readonly home?: string
  /** What a relative `LANGO_HOME` resolves against, and the default `exec.cwd` (default `process.cwd()`). */
  readonly cwd?: string
}

/** Name of the configuration file inside `$LANGO_HOME`. */
const CONFIG_FILE_NAME = 'lango.yaml'
/** Larger configuration files are refused unread. */
const MAX_CONFIG_BYTES = UNITS.MIB
/** Alias budget for `yaml` (alias bombs); a hand-written configuration needs few. */
const MAX_ALIAS_COUNT = 100
/** Syntax errors reported at most (one mistake often produces several). */
const MAX_SYNTAX_ISSUES = 10

/**
 * `yaml` options. `prettyErrors: false` keeps source excerpts out of error messages (the line could
 * hold a token, SECURITY.md §3.2); positions come from the `LineCounter` instead.
 */
const YAML_OPTIONS = Object.freeze({
  prettyErrors: false,
  uniqueKeys: true,
  merge: false,
  schema: 'core',
  strict: true,
  // 'silent' would also drop the MULTIPLE_DOCS error; 'error' keeps errors and silences warnings.
  logLevel: 'error',
} as const)

/** Fixed messages per `yaml` error code: `yaml`'s own messages may quote the source. */
const YAML_MESSAGES: Readonly<Record<string, string>> = {
  ALIAS_PROPS: 'an alias cannot have an anchor or tag',
  BAD_ALIAS: 'invalid alias',
  BAD_DIRECTIVE: 'invalid directive',
  BAD_DQ_ESCAPE: 'invalid escape in a double-quoted string',
  BAD_INDENT: 'bad indentation',
  BAD_PROP_ORDER: 'anchors and tags must come before the value',
  BAD_SCALAR_START: 'a plain value cannot start here',
  BLOCK_AS_IMPLICIT_KEY: 'a block collection cannot be an implicit key',
  BLOCK_IN_FLOW: 'block collections are not allowed inside flow collections',
  DUPLICATE_KEY: 'duplicate key',
  IMPOSSIBLE: 'unparseable input',
  KEY_OVER_1024_CHARS: 'a key is longer than 1024 characters',
  MISSING_CHAR: 'a closing character is missing',
  MULTILINE_IMPLICIT_KEY: 'an implicit key cannot span lines',
  MULTIPLE_ANCHORS: 'a node has more than one anchor',
  MULTIPLE_DOCS: 'only one YAML document is allowed',
  MULTIPLE_TAGS: 'a node has more than one tag',
  NON_STRING_KEY: 'keys must be strings',
  TAB_AS_INDENT: 'tabs are not allowed as indentation',
  TAG_RESOLVE_FAILED: 'unknown tag',
  UNEXPECTED_TOKEN: 'unexpected token',
  BAD_COLLECTION_TYPE: 'unexpected collection type',
}

/**
 * Loads the server configuration: `$LANGO_HOME/lango.yaml` (if there is one), then the `LANGO_*`
 * environment overrides of ARCHITECTURE.md §9 (the environment wins), then defaults. Relative paths
 * resolve against `LANGO_HOME`; an empty variable counts as unset. Creates nothing on disk.
 *
 * @throws {ConfigError} `CONFIG_INVALID` listing every problem found in the file and the
 *   environment at once, each with its key and, in the file, line and column.
 * @example
 * const config = await loadConfig()
 * logger.info({ config: redactedConfig(config) }, 'configuration loaded')
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<ServerConfig> {
  const env = options.env ?? process.env
  const cwd = resolve(options.cwd ?? process.cwd())
  const userHome = resolve(cwd, options.home ?? homedir())
  const issues: ConfigIssue[] = []
  const environmentIssues: ConfigIssue[] = []

  const overrides = readEnvironment(env, environmentIssues)
  const home =
    overrides.home === undefined ? join(userHome, '.lango') : resolvePath(overrides.home, cwd, userHome)
  const file = join(home, CONFIG_FILE_NAME)
  const source = await readConfigFile(file, overrides.home !== undefined, issues)
  const warnings: ConfigIssue[] = []
  const config = source === undefined ? {} : parseConfigFile(source, file, issues, warnings)
  issues.push(...environmentIssues)
  if (issues.length > 0 || config === undefined) throw new ConfigError(issues)

  return deepFreeze({
    ...buildConfig(config, overrides, {
      home,
      file: source === undefined ? undefined : file,
      cwd,
      userHome,
    }),
    warnings,
  })
}

/** The `LANGO_*` overrides, checked; bad values become issues naming the variable. */
type Overrides = ReturnType<typeof readEnvironment>

function readEnvironment(env: NodeJS.ProcessEnv, issues: ConfigIssue[]) {
  const read = <T>(variable: string, rule: Rule<T>, convert?: (text: string) => unknown): T | undefined => {
    const text = env[variable]
    if (text === undefined || text === '') return undefined
    const parsed = rule.parse(convert === undefined ? text : convert(text))
    if (parsed === undefined) issues.push({ key: variable, message: invalidMessage(rule, text) })
    return parsed
  }
  /** A comma-separated list, each item checked by `rule`. */
  const readList = <T>(variable: string, rule: Rule<T>): T[] | undefined => {
    const text = env[variable]
    if (text === undefined || text.trim() === '') return undefined
    const items: T[] = []
    for (const part of text.split(',')) {
      const parsed = rule.parse(part.trim())
      if (parsed === undefined) {
        issues.push({ key: variable, message: invalidMessage(rule, part.trim()) })
        return undefined
      }
      items.push(parsed)
    }
    return items
  }
  /** A secret variable: its value, its `_FILE`, or systemd's credential of its name (secret-sources.ts). */
  const readSecret = <T>(variable: string, rule: Rule<T>): T | undefined => {
    const found = secretText(env, variable, issues)
    if (found === undefined) return undefined
    const parsed = rule.parse(found.text)
    if (parsed === undefined) issues.push({ key: found.key, message: invalidMessage(rule, found.text) })
    return parsed
  }
  return {
    home: read('LANGO_HOME', path),
    database: readSecret('LANGO_DATABASE_URL', databaseUrl),
    modelBaseUrl: read('LANGO_MODEL_BASE_URL', httpUrl),
    model: read('LANGO_MODEL', name),
    passphrase: readSecret('LANGO_PASSPHRASE', passphrase),
    modelApiKey: readSecret('LANGO_MODEL_API_KEY', secret),
    apiToken: readSecret('LANGO_API_TOKEN', secret),
    telegramToken: readSecret('LANGO_TELEGRAM_TOKEN', secret),
    slackToken: readSecret('LANGO_SLACK_TOKEN', secret),
    discordToken: readSecret('LANGO_DISCORD_TOKEN', secret),
    webhookSecret: readSecret('LANGO_WEBHOOK_SECRET', secret),
    telegramApiUrl: read('LANGO_TELEGRAM_API_URL', httpUrl),
    slackApiUrl: read('LANGO_SLACK_API_URL', httpUrl),
    discordApiUrl: read('LANGO_DISCORD_API_URL', httpUrl),
    webhookUrl: read('LANGO_WEBHOOK_URL', httpUrl),
    telegramAllowedChats: readList('LANGO_TELEGRAM_ALLOWED_CHATS', chatId),
    host: read('LANGO_HOST', host),
    port: read('LANGO_PORT', integer(0, 65_535), (text) => (/^\d{1,5}$/.test(text) ? Number(text) : text)),
    logLevel: read('LANGO_LOG_LEVEL', logLevel, (text) => text.toLowerCase()),
    // OpenTelemetry's own variables. The headers are read here, not left to the exporter: they are
    // credentials, masked in output and handed over like the other secrets (issue 21).
    otlpTracesEndpoint: read('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', httpUrl),
    otlpEndpoint: read('OTEL_EXPORTER_OTLP_ENDPOINT', httpUrl),
    otlpHeaders: readSecret('OTEL_EXPORTER_OTLP_HEADERS', otlpHeaderList),
    otlpTracesHeaders: readSecret('OTEL_EXPORTER_OTLP_TRACES_HEADERS', otlpHeaderList),
    // The rest of the SDK's variables the traces use, with the specification's meaning (an
    // enumeration is read case-insensitively); a bad value is an issue, never ignored.
    otelSdkDisabled: read('OTEL_SDK_DISABLED', boolean, booleanText),
    otelServiceName: read('OTEL_SERVICE_NAME', name),
    otelResourceAttributes: read('OTEL_RESOURCE_ATTRIBUTES', resourceAttributeList),
    otelTracesExporter: read('OTEL_TRACES_EXPORTER', traceExporter, word),
    otelTracesSampler: read('OTEL_TRACES_SAMPLER', traceSampler, word),
    otelTracesSamplerArg: read('OTEL_TRACES_SAMPLER_ARG', ratio, numberText),
    otlpTimeout: read('OTEL_EXPORTER_OTLP_TIMEOUT', milliseconds(1, OTLP_MAX_TIMEOUT_MS), numberText),
    otlpTracesTimeout: read(
      'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT',
      milliseconds(1, OTLP_MAX_TIMEOUT_MS),
      numberText,
    ),
    otlpProtocol: read('OTEL_EXPORTER_OTLP_PROTOCOL', otlpProtocol, word),
    otlpTracesProtocol: read('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', otlpProtocol, word),
  }
}

/** The longest OTLP export timeout accepted (10 minutes). */
const OTLP_MAX_TIMEOUT_MS = 10 * UNITS.MINUTE

/** An enumeration's value as OpenTelemetry reads it: case-insensitive, spaces around ignored. */
function word(text: string): string {
  return text.trim().toLowerCase()
}

/** `true`/`false` in any case become booleans; anything else stays text (and is an issue). */
function booleanText(text: string): unknown {
  const lower = word(text)
  return lower === 'true' ? true : lower === 'false' ? false : text
}

/** A decimal number becomes a number; anything else stays text (and is an issue). */
function numberText(text: string): unknown {
  const trimmed = text.trim()
  return /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(trimmed) ? Number(trimmed) : text
}

/**
 * Where traces go: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, else the base endpoint of
 * `OTEL_EXPORTER_OTLP_ENDPOINT` or `telemetry.otlp.endpoint` plus `/v1/traces` (as the SDK reads them).
 */
function otlpTracesUrl(env: Overrides, file: FileConfig): string | undefined {
  if (env.otlpTracesEndpoint !== undefined) return env.otlpTracesEndpoint
  const base = env.otlpEndpoint ?? file.telemetry?.otlp?.endpoint ?? undefined
  return base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`
}

/** The file's text; `undefined` when there is no file. Problems reading it become issues. */
async function readConfigFile(
  file: string,
  homeFromEnv: boolean,
  issues: ConfigIssue[],
): Promise<string | undefined> {
  const fail = (message: string): undefined => {
    issues.push({ key: '', file, message })
    return undefined
  }
  let info: Awaited<ReturnType<typeof stat>>
  try {
    info = await stat(file)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return undefined
    if (code === 'ENOTDIR') {
      issues.push({
        key: homeFromEnv ? 'LANGO_HOME' : '',
        message: `${join(file, '..')} is not a directory (or a parent of it is a file)`,
      })
      return undefined
    }
    return fail(`cannot be read (${code ?? 'unknown error'})`)
  }
  if (!info.isFile()) return fail('is not a regular file')
  if (info.size > MAX_CONFIG_BYTES) return fail(`is larger than 1 MiB (${info.size} bytes)`)

  let bytes: Buffer
  try {
    const handle = await open(file, 'r')
    try {
      // Read one byte more than allowed: the file may have grown since stat.
      const buffer = Buffer.alloc(MAX_CONFIG_BYTES + 1)
      let length = 0
      for (;;) {
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length)
        length += bytesRead
        if (bytesRead === 0 || length === buffer.length) break
      }
      bytes = buffer.subarray(0, length)
    } finally {
      await handle.close()
    }
  } catch (error) {
    return fail(`cannot be read (${(error as NodeJS.ErrnoException).code ?? 'unknown error'})`)
  }
  if (bytes.length > MAX_CONFIG_BYTES) return fail('is larger than 1 MiB')
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    return fail('is not UTF-8 text')
  }
}

type Segment = string | number

/**
 * Parses and validates the file; issues carry key, line and column. `undefined` when it has issues.
 * Values in a deprecated form (a duration without a unit) become `warnings`.
 */
function parseConfigFile(
  source: string,
  file: string,
  issues: ConfigIssue[],
  warnings: ConfigIssue[],
): FileConfig | undefined {
  const lineCounter = new LineCounter()
  const at = (offset: number | undefined): { line?: number; column?: number } => {
    if (offset === undefined) return {}
    const { line, col } = lineCounter.linePos(offset)
    return { line, column: col }
  }
  const before = issues.length
  const report = (key: string, message: string, offset?: number) =>
    issues.push({ key, file, ...at(offset), message })

  let document: Document.Parsed
  try {
    document = parseDocument(source, { ...YAML_OPTIONS, lineCounter })
  } catch (error) {
    // The parser's own recursion can overflow on pathological nesting: report it, never crash.
    report('', error instanceof RangeError ? 'the YAML nests too deeply' : 'the YAML could not be parsed')
    return undefined
  }
  if (document.errors.length > 0) {
    for (const error of document.errors.slice(0, MAX_SYNTAX_ISSUES)) {
      report(
        '',
        `YAML syntax error: ${YAML_MESSAGES[error.code] ?? 'invalid YAML'} (${error.code})`,
        error.pos[0],
      )
    }
    return undefined
  }

  const contents = document.contents
  if (contents === null || (isScalar(contents) && contents.value === null)) return {}
  if (!isMap(contents)) {
    report(
      '',
      `the top level must be a mapping of sections (${SECTIONS.join(', ')}), got ${isSeq(contents) ? 'a list' : 'a single value'}`,
      contents.range?.[0],
    )
    return undefined
  }

  let value: unknown
  try {
    value = document.toJS({ maxAliasCount: MAX_ALIAS_COUNT })
  } catch (error) {
    report(
      '',
      error instanceof ReferenceError
        ? `the YAML uses more aliases than allowed (${MAX_ALIAS_COUNT})`
        : error instanceof RangeError
          ? 'the YAML nests too deeply'
          : 'the YAML could not be converted',
    )
    return undefined
  }

  const checked = v.safeParse(fileSchema, value, { abortEarly: false })
  if (!checked.success) {
    for (const issue of checked.issues) {
      const segments: Segment[] = (issue.path ?? []).map((item) => item.key as Segment)
      const onKey = issue.path?.at(-1)?.origin === 'key'
      report(dottedKey(segments), issue.message, locate(document, segments, onKey))
    }
  }
  // valibot reports the first unknown key of each mapping itself.
  const reported = new Set(issues.slice(before).map((issue) => issue.key))
  for (const unknown of unknownKeys(value)) {
    const key = dottedKey(unknown.path)
    if (reported.has(key)) continue
    report(
      key,
      unknownKeyMessage(unknown.path.at(-1) as string, unknown.accepted),
      locate(document, unknown.path, true),
    )
  }
  if (checked.success && checked.output !== null && checked.output !== undefined) {
    const exec = checked.output.exec
    const maxTimeout = exec?.max_timeout ?? DEFAULTS.execMaxTimeoutMs
    if (exec?.timeout != null && exec.timeout > maxTimeout) {
      report(
        'exec.timeout',
        `expected at most exec.max_timeout (${formatDuration(maxTimeout)}), got ${formatDuration(exec.timeout)}`,
        locate(document, ['exec', 'timeout'], false),
      )
    }
    const cron = checked.output.cron
    const minInterval = cron?.min_interval ?? DEFAULTS.cronMinIntervalMs
    if (cron?.min_agent_interval != null && cron.min_agent_interval < minInterval) {
      report(
        'cron.min_agent_interval',
        `expected at least cron.min_interval (${formatDuration(minInterval)}): an ai job's floor is never below a shell job's, got ${formatDuration(cron.min_agent_interval)}`,
        locate(document, ['cron', 'min_agent_interval'], false),
      )
    }
  }
  if (checked.success && checked.output?.channels != null) {
    for (const name of ['slack', 'discord'] as const) {
      const channel = checked.output.channels[name]
      const allowed = channel?.allowed_channels
      if (allowed == null) continue
      const path = ['channels', name, 'allowed_channels']
      if (allowed.length === 0)
        report(
          path.join('.'),
          'expected at least one channel id; leave the key out to let the bot post to any channel',
          locate(document, path, false),
        )
      else if (channel?.default_channel != null && !allowed.includes(channel.default_channel))
        report(
          `channels.${name}.default_channel`,
          `expected one of channels.${name}.allowed_channels (${allowed.join(', ')}), got ${channel.default_channel}`,
          locate(document, ['channels', name, 'default_channel'], false),
        )
    }
  }
  if (issues.length > before || !checked.success) {
    // In the order of the file, so the message reads top to bottom.
    const found = issues
      .splice(before)
      .sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0))
    issues.push(...found)
    return undefined
  }
  for (const found of deprecatedValues(value)) {
    warnings.push({
      key: dottedKey(found.path),
      file,
      ...at(locate(document, found.path, false)),
      message: found.message,
    })
  }
  return checked.output ?? {}
}

/** `server.allowed_origins[1]` from `['server', 'allowed_origins', 1]`. */
function dottedKey(segments: readonly Segment[]): string {
  return segments.reduce<string>(
    (key, segment) =>
      typeof segment === 'number' ? `${key}[${segment}]` : key === '' ? segment : `${key}.${segment}`,
    '',
  )
}

/**
 * The source offset of the node at `segments` (of its key when `onKey`); when the path stops early
 * (an alias, a missing key), the deepest node found.
 */
function locate(document: Document, segments: readonly Segment[], onKey: boolean): number | undefined {
  let node: unknown = document.contents
  let found = isNode(node) ? node.range?.[0] : undefined
  for (const [index, segment] of segments.entries()) {
    if (isMap(node)) {
      const pair = node.items.find((candidate) =>
        isScalar(candidate.key) ? String(candidate.key.value) === String(segment) : false,
      )
      if (pair === undefined || !isScalar(pair.key)) return found
      found = pair.key.range?.[0] ?? found
      if (onKey && index === segments.length - 1) return found
      node = pair.value
    } else if (isSeq(node) && typeof segment === 'number') {
      node = node.items[segment]
    } else {
      return found
    }
    if (isNode(node)) found = node.range?.[0] ?? found
  }
  return found
}

/** Defaults that are not derived from `LANGO_HOME` or the process. */
const DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  port: 7878,
  bodyLimitBytes: UNITS.MIB,
  approvalTimeoutMs: 5 * UNITS.MINUTE,
  cronMinIntervalMs: UNITS.MINUTE,
  cronMaxConcurrentJobs: 5,
  cronMaxConsecutiveFailures: 5,
  cronWebhookRateLimit: 30,
  cronWebhookPromptLimitBytes: 16 * UNITS.KIB,
  historyMaxAgeMs: 30 * UNITS.DAY,
  usageMaxAgeMs: 400 * UNITS.DAY,
  historyMaxRuns: 1000,
  backgroundMaxConcurrentTasks: 3,
  backgroundMaxQueuedTasks: 100,
  backgroundTaskTimeoutMs: 30 * UNITS.MINUTE,
  workflowMaxParallel: 4,
  execTimeoutMs: 30 * UNITS.SECOND,
  execMaxTimeoutMs: 10 * UNITS.MINUTE,
  execMaxBackgroundProcesses: 16,
  execMaxCommands: 8,
  clusterLeaseMs: 30 * UNITS.SECOND,
  agentMaxSteps: 20,
  agentTimeoutMs: 10 * UNITS.MINUTE,
  agentMaxRetries: 2,
  sessionRetentionMs: 30 * UNITS.DAY,
  sessionMaxSessions: 10_000,
  sessionMaxMessages: 500,
  sessionObserveAfterMessages: 50,
  sessionKeepRecentMessages: 12,
  otlpTimeoutMs: 10 * UNITS.SECOND,
})

function buildConfig(
  file: FileConfig,
  env: Overrides,
  context: { home: string; file: string | undefined; cwd: string; userHome: string },
): Omit<ServerConfig, 'warnings'> {
  const { home, userHome } = context
  const local = (value: string) => resolvePath(value, home, userHome)
  const database = env.database ?? file.database?.url ?? { kind: 'sqlite' as const, url: 'lango.db' }
  const {
    server,
    cluster,
    model,
    agent,
    sessions,
    channels,
    approvals,
    cron,
    background,
    workflow,
    exec,
    telemetry,
  } = file
  return {
    home,
    file: context.file,
    vault: { passphrase: env.passphrase },
    server: {
      host: env.host ?? server?.host ?? DEFAULTS.host,
      port: env.port ?? server?.port ?? DEFAULTS.port,
      apiToken: env.apiToken ?? server?.api_token ?? undefined,
      bodyLimitBytes: server?.body_limit ?? DEFAULTS.bodyLimitBytes,
      allowedOrigins: [...new Set(server?.allowed_origins ?? [])],
      allowedHosts: [...new Set(server?.allowed_hosts ?? [])],
    },
    database: {
      kind: database.kind,
      url: database.kind === 'sqlite' ? local(database.url) : database.url,
    },
    cluster: { leaseMs: cluster?.lease ?? DEFAULTS.clusterLeaseMs },
    model: {
      baseUrl: env.modelBaseUrl ?? model?.base_url ?? undefined,
      name: env.model ?? model?.name ?? undefined,
      apiKey: env.modelApiKey ?? model?.api_key ?? undefined,
    },
    agent: {
      maxSteps: agent?.max_steps ?? DEFAULTS.agentMaxSteps,
      timeoutMs: agent?.timeout ?? DEFAULTS.agentTimeoutMs,
      maxRetries: agent?.max_retries ?? DEFAULTS.agentMaxRetries,
      usageMaxAgeMs: agent?.usage_max_age ?? DEFAULTS.usageMaxAgeMs,
      turnBudget: {
        ...(agent?.budget?.max_tokens_per_turn == null
          ? {}
          : { maxTokens: agent.budget.max_tokens_per_turn }),
        ...(agent?.budget?.max_cost_per_turn == null ? {} : { maxCostUsd: agent.budget.max_cost_per_turn }),
      },
      dailyBudget: {
        ...(agent?.budget?.max_tokens_per_day == null ? {} : { maxTokens: agent.budget.max_tokens_per_day }),
        ...(agent?.budget?.max_cost_per_day == null ? {} : { maxCostUsd: agent.budget.max_cost_per_day }),
      },
      creatorDailyBudget: {
        ...(agent?.budget?.max_tokens_per_creator_per_day == null
          ? {}
          : { maxTokens: agent.budget.max_tokens_per_creator_per_day }),
        ...(agent?.budget?.max_cost_per_creator_per_day == null
          ? {}
          : { maxCostUsd: agent.budget.max_cost_per_creator_per_day }),
      },
    },
    models: modelPrices(file.models),
    sessions: {
      retentionMs: sessions?.retention ?? DEFAULTS.sessionRetentionMs,
      maxSessions: sessions?.max_sessions ?? DEFAULTS.sessionMaxSessions,
      maxMessages: sessions?.max_messages ?? DEFAULTS.sessionMaxMessages,
      observeAfterMessages: sessions?.observe_after_messages ?? DEFAULTS.sessionObserveAfterMessages,
      keepRecentMessages: sessions?.keep_recent_messages ?? DEFAULTS.sessionKeepRecentMessages,
    },
    channels: {
      telegram: {
        token: env.telegramToken ?? channels?.telegram?.token ?? undefined,
        apiUrl: env.telegramApiUrl ?? channels?.telegram?.api_url ?? undefined,
        allowedChats: [...new Set(env.telegramAllowedChats ?? channels?.telegram?.allowed_chats ?? [])],
      },
      slack: {
        token: env.slackToken ?? channels?.slack?.token ?? undefined,
        apiUrl: env.slackApiUrl ?? channels?.slack?.api_url ?? undefined,
        defaultChannel: channels?.slack?.default_channel ?? undefined,
        allowedChannels: allowedList(channels?.slack?.allowed_channels),
      },
      discord: {
        token: env.discordToken ?? channels?.discord?.token ?? undefined,
        apiUrl: env.discordApiUrl ?? channels?.discord?.api_url ?? undefined,
        defaultChannel: channels?.discord?.default_channel ?? undefined,
        allowedChannels: allowedList(channels?.discord?.allowed_channels),
      },
      webhook: {
        url: env.webhookUrl ?? channels?.webhook?.url ?? undefined,
        secret: env.webhookSecret ?? channels?.webhook?.secret ?? undefined,
      },
      custom: (channels?.custom ?? []).map((entry) => ({
        name: entry.name,
        module: entry.module,
        options: entry.options ?? {},
      })),
      defaultDeliverTo: channels?.default_deliver_to ?? [],
    },
    approvals: {
      policy: approvals?.policy ?? 'dangerous',
      mcpPolicy: approvals?.mcp_policy ?? 'none',
      timeoutMs: approvals?.timeout ?? DEFAULTS.approvalTimeoutMs,
      unattendedAllowDangerous: approvals?.unattended?.allow_dangerous ?? false,
      unattendedAllowCronCreate: approvals?.unattended?.allow_cron_create ?? false,
    },
    cron: {
      enabled: cron?.enabled ?? true,
      timezone: cron?.timezone ?? hostTimezone(),
      minIntervalMs: cron?.min_interval ?? DEFAULTS.cronMinIntervalMs,
      minAgentIntervalMs: cron?.min_agent_interval ?? cron?.min_interval ?? DEFAULTS.cronMinIntervalMs,
      maxConcurrentJobs: cron?.max_concurrent_jobs ?? DEFAULTS.cronMaxConcurrentJobs,
      maxConsecutiveFailures: cron?.max_consecutive_failures ?? DEFAULTS.cronMaxConsecutiveFailures,
      maxAiTokensPerDay: cron?.max_ai_tokens_per_day ?? undefined,
      pingPrivateNetworks: cron?.ping_private_networks ?? false,
      webhookRateLimit: cron?.webhook_rate_limit ?? DEFAULTS.cronWebhookRateLimit,
      webhookPromptLimitBytes: cron?.webhook_prompt_limit ?? DEFAULTS.cronWebhookPromptLimitBytes,
      historyMaxAgeMs: cron?.history?.max_age ?? DEFAULTS.historyMaxAgeMs,
      historyMaxRuns: cron?.history?.max_runs ?? DEFAULTS.historyMaxRuns,
    },
    background: {
      enabled: background?.enabled ?? true,
      maxConcurrentTasks: background?.max_concurrent_tasks ?? DEFAULTS.backgroundMaxConcurrentTasks,
      maxQueuedTasks: background?.max_queued_tasks ?? DEFAULTS.backgroundMaxQueuedTasks,
      taskTimeoutMs: background?.task_timeout ?? DEFAULTS.backgroundTaskTimeoutMs,
    },
    workflow: {
      enabled: workflow?.enabled ?? true,
      directory: local(workflow?.directory ?? 'workflows'),
      workspace: workflow?.workspace == null ? undefined : local(workflow.workspace),
      maxParallel: workflow?.max_parallel ?? DEFAULTS.workflowMaxParallel,
      historyMaxAgeMs: workflow?.history?.max_age ?? DEFAULTS.historyMaxAgeMs,
      historyMaxRuns: workflow?.history?.max_runs ?? DEFAULTS.historyMaxRuns,
    },
    exec: {
      // A lowered max_timeout also lowers the default timeout (an explicit timeout above it is an issue).
      timeoutMs:
        exec?.timeout ?? Math.min(DEFAULTS.execTimeoutMs, exec?.max_timeout ?? DEFAULTS.execMaxTimeoutMs),
      maxTimeoutMs: exec?.max_timeout ?? DEFAULTS.execMaxTimeoutMs,
      inherit: exec?.inherit ?? 'core',
      envAllow: exec?.env_allow ?? [],
      envDeny: exec?.env_deny ?? [],
      maxBackgroundProcesses: exec?.max_background_processes ?? DEFAULTS.execMaxBackgroundProcesses,
      // Raising cron's concurrency raises this with it, unless it is set: the runs are its commands.
      maxCommands:
        exec?.max_commands ??
        Math.max(DEFAULTS.execMaxCommands, cron?.max_concurrent_jobs ?? DEFAULTS.cronMaxConcurrentJobs),
      cwd: exec?.cwd == null ? context.cwd : local(exec.cwd),
    },
    logging: { level: env.logLevel ?? file.logging?.level ?? 'info' },
    metrics: { enabled: file.metrics?.enabled ?? true },
    alerts: { deliverTo: file.alerts?.deliver_to ?? [] },
    telemetry: {
      enabled: env.otelSdkDisabled === undefined ? (telemetry?.enabled ?? true) : !env.otelSdkDisabled,
      exporter: env.otelTracesExporter ?? telemetry?.exporter ?? 'otlp',
      // OTEL_SERVICE_NAME wins over a service.name in OTEL_RESOURCE_ATTRIBUTES (the specification),
      // and each variable over the file.
      serviceName:
        env.otelServiceName ??
        env.otelResourceAttributes?.['service.name'] ??
        telemetry?.service_name ??
        telemetry?.resource_attributes?.['service.name'] ??
        'lango',
      resourceAttributes: withoutServiceName({
        ...(telemetry?.resource_attributes ?? {}),
        ...(env.otelResourceAttributes ?? {}),
      }),
      sampler: env.otelTracesSampler ?? telemetry?.sampler ?? 'parentbased_always_on',
      samplerArg: env.otelTracesSamplerArg ?? telemetry?.sampler_arg ?? 1,
      timeoutMs:
        env.otlpTracesTimeout ?? env.otlpTimeout ?? telemetry?.otlp?.timeout ?? DEFAULTS.otlpTimeoutMs,
      protocol: env.otlpTracesProtocol ?? env.otlpProtocol ?? telemetry?.otlp?.protocol ?? 'http/json',
      tracesUrl: otlpTracesUrl(env, file),
      // lango.yaml's, then the environment's (as the exporter reads them: the traces-specific last).
      headers: {
        ...(file.telemetry?.otlp?.headers ?? {}),
        ...(env.otlpHeaders ?? {}),
        ...(env.otlpTracesHeaders ?? {}),
      },
    },
  }
}

/** Resource attributes without `service.name`: that one is `telemetry.serviceName`. */
function withoutServiceName(attributes: Readonly<Record<string, string>>): Record<string, string> {
  const { 'service.name': _serviceName, ...rest } = attributes
  return rest
}

/** `models` of the file, with each price in the runner's terms. */
function modelPrices(models: FileConfig['models']): ServerConfig['models'] {
  const table: Record<string, { price?: { inputPerMillion: number; outputPerMillion: number } }> = {}
  for (const [name, entry] of Object.entries(models ?? {})) {
    const price = entry?.price
    table[name] =
      price?.input == null || price.output == null
        ? {}
        : { price: { inputPerMillion: price.input, outputPerMillion: price.output } }
  }
  return table
}

/** An allow-list from the file, duplicates dropped; absent: undefined (nothing restricted). */
function allowedList(items: readonly string[] | null | undefined): readonly string[] | undefined {
  return items == null ? undefined : [...new Set(items)]
}

/** `~` and `~/x` are under the user's home; other relative paths resolve against `base`. */
function resolvePath(value: string, base: string, userHome: string): string {
  if (value === '~') return resolve(userHome)
  if (value.startsWith('~/')) return resolve(userHome, value.slice(2))
  return isAbsolute(value) ? resolve(value) : resolve(base, value)
}

/** The host's IANA zone, or `UTC` when the runtime does not know it. */
function hostTimezone(): string {
  return timezone.parse(Intl.DateTimeFormat().resolvedOptions().timeZone) ?? 'UTC'
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const child of Object.values(value)) deepFreeze(child)
  }
  return value
}
