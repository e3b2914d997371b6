import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig, redactedConfig } from '../src/config/load.js'
import { configSecrets } from '../src/config/redact.js'
import type { ServerConfig } from '../src/config/types.js'

let root: string
/** The fake user home (`~`); `LANGO_HOME` defaults to `<userHome>/.lango`. */
let userHome: string
/** A `LANGO_HOME` set explicitly by most tests. */
let langoHome: string
/** The server's working directory. */
let cwd: string

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lango-config-'))
  userHome = join(root, 'user')
  langoHome = join(root, 'lango')
  cwd = join(root, 'cwd')
  await Promise.all([mkdir(userHome), mkdir(langoHome), mkdir(cwd)])
})

afterEach(async () => {
  await rm(root, { recursive: true, force: true })
})

function load(env: NodeJS.ProcessEnv = {}): Promise<ServerConfig> {
  return loadConfig({ env: { LANGO_HOME: langoHome, ...env }, home: userHome, cwd })
}

async function writeConfig(text: string | Buffer): Promise<string> {
  const file = join(langoHome, 'lango.yaml')
  await writeFile(file, text)
  return file
}

/** The ConfigError `load` throws for this file (and environment). */
async function failure(text: string | undefined, env: NodeJS.ProcessEnv = {}): Promise<ConfigError> {
  if (text !== undefined) await writeConfig(text)
  const error = await load(env).then(
    () => undefined,
    (reason: unknown) => reason,
  )
  if (!(error instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(error)}`)
  return error
}

const HOST_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone

function defaultsFor(home: string, file: string | undefined): ServerConfig {
  return {
    home,
    file,
    vault: { passphrase: undefined },
    warnings: [],
    server: {
      host: '127.0.0.1',
      port: 7878,
      apiToken: undefined,
      bodyLimitBytes: 1024 * 1024,
      allowedOrigins: [],
      allowedHosts: [],
    },
    database: { kind: 'sqlite', url: join(home, 'lango.db') },
    cluster: { leaseMs: 30_000 },
    model: { baseUrl: undefined, name: undefined, apiKey: undefined },
    agent: {
      maxSteps: 20,
      timeoutMs: 600_000,
      maxRetries: 2,
      usageMaxAgeMs: 400 * 86_400_000,
      turnBudget: {},
      dailyBudget: {},
      creatorDailyBudget: {},
    },
    models: {},
    sessions: {
      retentionMs: 30 * 86_400_000,
      maxSessions: 10_000,
      maxMessages: 500,
      observeAfterMessages: 50,
      keepRecentMessages: 12,
    },
    channels: {
      telegram: { token: undefined, apiUrl: undefined, allowedChats: [] },
      slack: { token: undefined, apiUrl: undefined, defaultChannel: undefined, allowedChannels: undefined },
      discord: { token: undefined, apiUrl: undefined, defaultChannel: undefined, allowedChannels: undefined },
      webhook: { url: undefined, secret: undefined },
      custom: [],
      defaultDeliverTo: [],
    },
    approvals: {
      policy: 'dangerous',
      mcpPolicy: 'none',
      timeoutMs: 5 * 60_000,
      unattendedAllowDangerous: false,
      unattendedAllowCronCreate: false,
    },
    cron: {
      enabled: true,
      timezone: HOST_ZONE,
      minIntervalMs: 60_000,
      minAgentIntervalMs: 60_000,
      maxConcurrentJobs: 5,
      maxConsecutiveFailures: 5,
      maxAiTokensPerDay: undefined,
      pingPrivateNetworks: false,
      webhookRateLimit: 30,
      webhookPromptLimitBytes: 16_384,
      historyMaxAgeMs: 30 * 86_400_000,
      historyMaxRuns: 1000,
    },
    background: { enabled: true, maxConcurrentTasks: 3, maxQueuedTasks: 100, taskTimeoutMs: 30 * 60_000 },
    workflow: {
      enabled: true,
      directory: join(home, 'workflows'),
      workspace: undefined,
      maxParallel: 4,
      historyMaxAgeMs: 30 * 86_400_000,
      historyMaxRuns: 1000,
    },
    exec: {
      timeoutMs: 30_000,
      maxTimeoutMs: 10 * 60_000,
      inherit: 'core',
      envAllow: [],
      envDeny: [],
      maxBackgroundProcesses: 16,
      maxCommands: 8,
      cwd,
    },
    logging: { level: 'info' },
    metrics: { enabled: true },
    alerts: { deliverTo: [] },
    telemetry: {
      enabled: true,
      exporter: 'otlp',
      serviceName: 'lango',
      resourceAttributes: {},
      sampler: 'parentbased_always_on',
      samplerArg: 1,
      timeoutMs: 10_000,
      protocol: 'http/json',
      tracesUrl: undefined,
      headers: {},
    },
  }
}

describe('loadConfig: nothing configured', () => {
  it('uses ~/.lango and every default when there is no file and no variable, and creates nothing', async () => {
    const config = await loadConfig({ env: {}, home: userHome, cwd })
    const home = join(userHome, '.lango')
    expect(config).toEqual(defaultsFor(home, undefined))
    expect(existsSync(home)).toBe(false)
  })

  it('treats an empty file, a comment-only file and a lone null as all defaults', async () => {
    for (const text of ['', '# nothing yet\n\n', '~\n', '---\n']) {
      const file = await writeConfig(text)
      expect(await load()).toEqual(defaultsFor(langoHome, file))
    }
  })

  it('treats an empty section as all defaults of that section', async () => {
    const file = await writeConfig('cron:\nserver: {}\n')
    expect(await load()).toEqual(defaultsFor(langoHome, file))
  })

  it('exec.max_commands: 8 by default, following cron.max_concurrent_jobs above it unless set; 1 to 256', async () => {
    await writeConfig('cron: { max_concurrent_jobs: 40 }\n')
    expect((await load()).exec.maxCommands).toBe(40)
    await writeConfig('cron: { max_concurrent_jobs: 40 }\nexec: { max_commands: 2 }\n')
    expect((await load()).exec.maxCommands).toBe(2)
    const error = await failure('exec: { max_commands: 0 }\n')
    expect(error.issues).toEqual([
      expect.objectContaining({
        key: 'exec.max_commands',
        message: expect.stringMatching(/^expected an integer from 1 to 256, got /),
      }),
    ])
  })

  it('cron.max_ai_tokens_per_day: unset or null means no token budget; otherwise a whole number of tokens', async () => {
    for (const text of ['cron: {}\n', 'cron: { max_ai_tokens_per_day: null }\n']) {
      await writeConfig(text)
      const config = await load()
      expect('maxAiTokensPerDay' in config.cron && config.cron.maxAiTokensPerDay).toBeUndefined()
    }
    await writeConfig('cron: { max_ai_tokens_per_day: 250000 }\n')
    expect((await load()).cron.maxAiTokensPerDay).toBe(250_000)
    for (const bad of ['0', '-5', '1.5', 'lots', '1000000000001']) {
      const error = await failure(`cron: { max_ai_tokens_per_day: ${bad} }\n`)
      expect(error.issues).toEqual([
        expect.objectContaining({
          key: 'cron.max_ai_tokens_per_day',
          message: expect.stringMatching(/^expected an integer from 1 to 1000000000000, got /),
        }),
      ])
    }
  })

  it('returns a frozen configuration', async () => {
    const config = await load()
    expect(Object.isFrozen(config)).toBe(true)
    expect(Object.isFrozen(config.cron)).toBe(true)
    expect(Object.isFrozen(config.server.allowedOrigins)).toBe(true)
  })
})

const FULL = `# every key
server:
  host: 0.0.0.0
  port: 9000
  api_token: file-api-token
  body_limit: 512KiB
  allowed_origins: [https://app.example.com, "http://localhost:5173/"]
  allowed_hosts: [Lango.example.com, "lango.example.com:9000", "[fd00::1]:9000"]
database:
  url: sqlite:data/main.db
cluster: { lease: 10s }
model:
  base_url: http://127.0.0.1:11434/v1
  name: llama3.1
  api_key: file-model-key
agent: { max_steps: 8, timeout: 2m, max_retries: 0, usage_max_age: 90d, budget: { max_tokens_per_turn: 50000, max_cost_per_turn: 0.25, max_tokens_per_day: 2000000, max_cost_per_creator_per_day: 1.5 } }
models:
  llama3.1: { price: { input: 0.15, output: 0.6 } }
  free-model: {}
sessions: { retention: 7d, max_sessions: 100, max_messages: 200, observe_after_messages: 40, keep_recent_messages: 10 }
channels:
  telegram: { token: tg-token, api_url: http://127.0.0.1:8081, allowed_chats: [123, "-1001234567890"] }
  slack: { token: slack-token, api_url: http://127.0.0.1:8082/api, default_channel: C0123ABCD, allowed_channels: [C0123ABCD, C0999ZZZZ, C0123ABCD] }
  discord: { token: discord-token, api_url: http://127.0.0.1:8083, default_channel: "123456789012345678" }
  webhook: { url: https://hooks.example.com/abc, secret: hook-secret }
  custom:
    - { name: line-chat, module: ./adapters/line-chat.mjs, options: { port: 7070, password: hunter2 } }
  default_deliver_to: [telegram:123, webhook]
approvals:
  policy: moderate
  mcp_policy: dangerous
  timeout: 90s
  unattended: { allow_dangerous: true, allow_cron_create: true }
cron:
  enabled: false
  timezone: Europe/Berlin
  min_interval: 5m
  min_agent_interval: 10m
  max_concurrent_jobs: 10
  max_consecutive_failures: 3
  max_ai_tokens_per_day: 2000000
  ping_private_networks: true
  webhook_prompt_limit: 32KiB
  history: { max_age: 7d, max_runs: 50 }
background:
  enabled: false
  max_concurrent_tasks: 2
  max_queued_tasks: 20
  task_timeout: 1h30m
workflow:
  enabled: false
  directory: flows
  workspace: ~/projects
  max_parallel: 8
  history: { max_age: 2d, max_runs: 10 }
exec:
  timeout: 45000
  max_timeout: 1h
  inherit: all
  env_allow: [MY_APP_*, GOPATH]
  env_deny: [AWS_*]
  max_background_processes: 4
  cwd: /srv/work
logging:
  level: debug
metrics:
  enabled: false
alerts:
  deliver_to: [telegram:42, webhook]
telemetry:
  service_name: lango-test
  otlp:
    endpoint: http://127.0.0.1:4318/
    headers:
      authorization: Bearer otlp-key
`

describe('loadConfig: the file', () => {
  it('reads every key, converting durations, sizes, origins and paths', async () => {
    const file = await writeConfig(FULL)
    expect(await load()).toEqual({
      home: langoHome,
      file,
      vault: { passphrase: undefined },
      // `timeout: 45000` is still milliseconds, with a deprecation warning (ADR 0013).
      warnings: [
        {
          key: 'exec.timeout',
          file,
          line: expect.any(Number),
          column: 12,
          message:
            'a number without a unit is read as milliseconds (45000 = 45s); write 45s: a duration without a unit is deprecated and will be refused (ADR 0013)',
        },
      ],
      server: {
        host: '0.0.0.0',
        port: 9000,
        apiToken: 'file-api-token',
        bodyLimitBytes: 512 * 1024,
        allowedOrigins: ['https://app.example.com', 'http://localhost:5173'],
        allowedHosts: ['lango.example.com', 'lango.example.com:9000', '[fd00::1]:9000'],
      },
      database: { kind: 'sqlite', url: join(langoHome, 'data/main.db') },
      cluster: { leaseMs: 10_000 },
      model: { baseUrl: 'http://127.0.0.1:11434/v1', name: 'llama3.1', apiKey: 'file-model-key' },
      agent: {
        maxSteps: 8,
        timeoutMs: 120_000,
        maxRetries: 0,
        usageMaxAgeMs: 90 * 86_400_000,
        turnBudget: { maxTokens: 50_000, maxCostUsd: 0.25 },
        dailyBudget: { maxTokens: 2_000_000 },
        creatorDailyBudget: { maxCostUsd: 1.5 },
      },
      models: {
        'llama3.1': { price: { inputPerMillion: 0.15, outputPerMillion: 0.6 } },
        'free-model': {},
      },
      sessions: {
        retentionMs: 7 * 86_400_000,
        maxSessions: 100,
        maxMessages: 200,
        observeAfterMessages: 40,
        keepRecentMessages: 10,
      },
      channels: {
        telegram: {
          token: 'tg-token',
          apiUrl: 'http://127.0.0.1:8081',
          allowedChats: ['123', '-1001234567890'],
        },
        slack: {
          token: 'slack-token',
          apiUrl: 'http://127.0.0.1:8082/api',
          defaultChannel: 'C0123ABCD',
          allowedChannels: ['C0123ABCD', 'C0999ZZZZ'],
        },
        discord: {
          token: 'discord-token',
          apiUrl: 'http://127.0.0.1:8083',
          defaultChannel: '123456789012345678',
          allowedChannels: undefined,
        },
        webhook: { url: 'https://hooks.example.com/abc', secret: 'hook-secret' },
        custom: [
          {
            name: 'line-chat',
            module: './adapters/line-chat.mjs',
            options: { port: 7070, password: 'hunter2' },
          },
        ],
        defaultDeliverTo: ['telegram:123', 'webhook'],
      },
      approvals: {
        policy: 'moderate',
        mcpPolicy: 'dangerous',
        timeoutMs: 90_000,
        unattendedAllowDangerous: true,
        unattendedAllowCronCreate: true,
      },
      cron: {
        enabled: false,
        timezone: 'Europe/Berlin',
        minIntervalMs: 300_000,
        minAgentIntervalMs: 600_000,
        maxConcurrentJobs: 10,
        maxConsecutiveFailures: 3,
        maxAiTokensPerDay: 2_000_000,
        pingPrivateNetworks: true,
        webhookRateLimit: 30,
        webhookPromptLimitBytes: 32_768,
        historyMaxAgeMs: 7 * 86_400_000,
        historyMaxRuns: 50,
      },
      background: { enabled: false, maxConcurrentTasks: 2, maxQueuedTasks: 20, taskTimeoutMs: 5_400_000 },
      workflow: {
        enabled: false,
        directory: join(langoHome, 'flows'),
        workspace: join(userHome, 'projects'),
        maxParallel: 8,
        historyMaxAgeMs: 2 * 86_400_000,
        historyMaxRuns: 10,
      },
      exec: {
        timeoutMs: 45_000,
        maxTimeoutMs: 3_600_000,
        inherit: 'all',
        envAllow: ['MY_APP_*', 'GOPATH'],
        envDeny: ['AWS_*'],
        maxBackgroundProcesses: 4,
        // Not set: cron.max_concurrent_jobs (10), being above the default 8.
        maxCommands: 10,
        cwd: '/srv/work',
      },
      logging: { level: 'debug' },
      metrics: { enabled: false },
      alerts: { deliverTo: ['telegram:42', 'webhook'] },
      telemetry: {
        enabled: true,
        exporter: 'otlp',
        serviceName: 'lango-test',
        resourceAttributes: {},
        sampler: 'parentbased_always_on',
        samplerArg: 1,
        timeoutMs: 10_000,
        protocol: 'http/json',
        tracesUrl: 'http://127.0.0.1:4318/v1/traces',
        headers: { authorization: 'Bearer otlp-key' },
      },
    } satisfies ServerConfig)
  })

  it.each([
    ['1s250ms', 1250],
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['2d', 172_800_000],
    ['1.5h', 5_400_000],
    ['120000', 120_000],
    [120000, 120_000],
  ])('accepts the duration %j', async (text, ms) => {
    await writeConfig(`approvals: { timeout: ${JSON.stringify(text)} }\n`)
    expect((await load()).approvals.timeoutMs).toBe(ms)
  })

  it.each([
    [2048, 2048],
    ['1MiB', 1024 * 1024],
    ['1mb', 1_000_000],
    ['64 KiB', 64 * 1024],
    ['2GiB', undefined],
  ])('reads the body limit %j', async (text, bytes) => {
    await writeConfig(`server: { body_limit: ${JSON.stringify(text)} }\n`)
    if (bytes === undefined) {
      const error = await failure(undefined)
      expect(error.issues[0]?.message).toBe(
        'expected a size from 1KiB to 1GiB in bytes or such as 512KiB or 1MiB, got "2GiB"',
      )
    } else {
      expect((await load()).server.bodyLimitBytes).toBe(bytes)
    }
  })

  it('canonicalises the time zone and reads a postgres URL', async () => {
    await writeConfig('cron: { timezone: utc }\ndatabase: { url: "postgresql://lango@db.internal/lango" }\n')
    const config = await load()
    expect(config.cron.timezone).toBe('UTC')
    expect(config.database).toEqual({ kind: 'postgres', url: 'postgresql://lango@db.internal/lango' })
  })
})

describe('loadConfig: environment overrides', () => {
  it('every variable wins over the file', async () => {
    await writeConfig(FULL)
    const config = await load({
      LANGO_DATABASE_URL: 'postgres://lango:pw@db:5432/lango',
      LANGO_MODEL_BASE_URL: 'https://api.example.com/v1',
      LANGO_MODEL: 'gpt-x',
      LANGO_MODEL_API_KEY: 'env-model-key',
      LANGO_API_TOKEN: 'env-api-token',
      LANGO_TELEGRAM_TOKEN: 'env-tg',
      LANGO_SLACK_TOKEN: 'env-slack',
      LANGO_DISCORD_TOKEN: 'env-discord',
      LANGO_TELEGRAM_API_URL: 'http://127.0.0.1:9001',
      LANGO_SLACK_API_URL: 'http://127.0.0.1:9002',
      LANGO_DISCORD_API_URL: 'http://127.0.0.1:9003',
      LANGO_WEBHOOK_URL: 'https://env.example.com/hook',
      LANGO_TELEGRAM_ALLOWED_CHATS: ' 42, -100777 ',
      LANGO_HOST: '::1',
      LANGO_PORT: '0',
      LANGO_LOG_LEVEL: 'WARN',
    })
    expect(config.database).toEqual({ kind: 'postgres', url: 'postgres://lango:pw@db:5432/lango' })
    expect(config.model).toEqual({
      baseUrl: 'https://api.example.com/v1',
      name: 'gpt-x',
      apiKey: 'env-model-key',
    })
    expect(config.server).toMatchObject({
      host: '::1',
      port: 0,
      apiToken: 'env-api-token',
      bodyLimitBytes: 512 * 1024,
    })
    expect(config.channels).toEqual({
      telegram: { token: 'env-tg', apiUrl: 'http://127.0.0.1:9001', allowedChats: ['42', '-100777'] },
      slack: {
        token: 'env-slack',
        apiUrl: 'http://127.0.0.1:9002',
        defaultChannel: 'C0123ABCD',
        allowedChannels: ['C0123ABCD', 'C0999ZZZZ'],
      },
      discord: {
        token: 'env-discord',
        apiUrl: 'http://127.0.0.1:9003',
        defaultChannel: '123456789012345678',
        allowedChannels: undefined,
      },
      webhook: { url: 'https://env.example.com/hook', secret: 'hook-secret' },
      custom: [
        {
          name: 'line-chat',
          module: './adapters/line-chat.mjs',
          options: { port: 7070, password: 'hunter2' },
        },
      ],
      defaultDeliverTo: ['telegram:123', 'webhook'],
    })
    expect(config.logging.level).toBe('warn')
  })

  it('an empty variable counts as unset', async () => {
    await writeConfig('server: { port: 9000 }\nmodel: { name: from-file }\n')
    const config = await load({ LANGO_PORT: '', LANGO_MODEL: '' })
    expect(config.server.port).toBe(9000)
    expect(config.model.name).toBe('from-file')
  })

  it.each([
    ['postgres://u@h/db', 'postgres', 'postgres://u@h/db'],
    ['postgresql://u@h/db', 'postgres', 'postgresql://u@h/db'],
    ['sqlite:state/x.db', 'sqlite', 'LANGO/state/x.db'],
    ['sqlite:///var/lib/lango.db', 'sqlite', '/var/lib/lango.db'],
    ['/var/lib/other.db', 'sqlite', '/var/lib/other.db'],
    ['relative.db', 'sqlite', 'LANGO/relative.db'],
    ['~/db/lango.db', 'sqlite', 'USER/db/lango.db'],
  ])('LANGO_DATABASE_URL=%s is %s', async (value, kind, url) => {
    const config = await load({ LANGO_DATABASE_URL: value })
    expect(config.database).toEqual({
      kind,
      url: url.replace('LANGO', langoHome).replace('USER', userHome),
    })
  })

  it('a relative LANGO_HOME is under the working directory, ~ under the user home', async () => {
    expect((await load({ LANGO_HOME: 'state' })).home).toBe(join(cwd, 'state'))
    expect((await load({ LANGO_HOME: '~/lango-state' })).home).toBe(join(userHome, 'lango-state'))
    const config = await load({ LANGO_HOME: 'state' })
    expect(config.database.url).toBe(join(cwd, 'state', 'lango.db'))
    expect(config.workflow.directory).toBe(join(cwd, 'state', 'workflows'))
  })

  it('a bad variable is an error naming it and what is accepted', async () => {
    const error = await failure(undefined, {
      LANGO_PORT: 'eighty',
      LANGO_LOG_LEVEL: 'loud',
      LANGO_HOST: 'bad host',
      LANGO_MODEL_BASE_URL: 'ftp://models.example.com',
    })
    expect(error.issues).toEqual([
      {
        key: 'LANGO_MODEL_BASE_URL',
        message: 'expected an http:// or https:// URL, got a value (not shown)',
      },
      {
        key: 'LANGO_HOST',
        message:
          'expected a host name or IP address such as 127.0.0.1, ::1, localhost or 0.0.0.0, got "bad host"',
      },
      { key: 'LANGO_PORT', message: 'expected an integer from 0 to 65535, got "eighty"' },
      {
        key: 'LANGO_LOG_LEVEL',
        message: 'expected one of trace, debug, info, warn, error, fatal, silent, got "loud"',
      },
    ])
    expect(error.message).toContain('\n  LANGO_PORT: expected an integer from 0 to 65535, got "eighty"')
  })

  it.each(['70000', '-1', '80.5'])('LANGO_PORT=%s is out of range', async (port) => {
    const error = await failure(undefined, { LANGO_PORT: port })
    expect(error.issues).toEqual([
      { key: 'LANGO_PORT', message: `expected an integer from 0 to 65535, got "${port}"` },
    ])
  })

  it('a LANGO_HOME that is a file is an error naming the variable', async () => {
    const file = join(root, 'plain-file')
    await writeFile(file, 'x')
    const error = await failure(undefined, { LANGO_HOME: file })
    expect(error.issues).toEqual([
      { key: 'LANGO_HOME', message: expect.stringContaining('is not a directory') },
    ])
  })
})

describe('loadConfig: errors in the file', () => {
  it('names the key, line and column, what was wrong and what is accepted', async () => {
    const lines = Array.from({ length: 10 }, (_, index) => `# line ${index + 1}`)
    const file = await writeConfig(`${lines.join('\n')}\ncron:\n  max_concurrent_jobs: five\n`)
    const error = await failure(undefined)
    expect(error.code).toBe('CONFIG_INVALID')
    expect(error.issues).toEqual([
      {
        key: 'cron.max_concurrent_jobs',
        file,
        line: 12,
        column: 24,
        message: 'expected an integer from 1 to 100, got "five"',
      },
    ])
    expect(error.message).toBe(
      `Invalid configuration (1 problem):\n  ${file}:12:24 cron.max_concurrent_jobs: expected an integer from 1 to 100, got "five"`,
    )
  })

  it('an unknown key names the accepted keys and the likely one', async () => {
    const error = await failure('cron:\n  enabled: true\n  max_concurent_jobs: 3\n')
    expect(error.issues).toEqual([
      expect.objectContaining({
        key: 'cron.max_concurent_jobs',
        line: 3,
        column: 3,
        message:
          'unknown key "max_concurent_jobs" (did you mean max_concurrent_jobs?); accepted keys: enabled, timezone, min_interval, min_agent_interval, max_concurrent_jobs, max_consecutive_failures, max_ai_tokens_per_day, ping_private_networks, webhook_rate_limit, webhook_prompt_limit, history',
      }),
    ])
  })

  it('unknown top-level keys, keys that JavaScript treats specially and merge keys are all unknown', async () => {
    const error = await failure(
      [
        'serve:',
        '  port: 1',
        'cron:',
        '  __proto__: { polluted: true }',
        '  constructor: 1',
        '  prototype: 2',
        'base: &base { enabled: true }',
        'background:',
        '  <<: *base',
      ].join('\n'),
    )
    expect(error.issues.map((issue) => `${issue.line}:${issue.column} ${issue.key}`)).toEqual([
      '1:1 serve',
      '4:3 cron.__proto__',
      '5:3 cron.constructor',
      '6:3 cron.prototype',
      '7:1 base',
      '9:3 background.<<',
    ])
    expect(error.issues[0]?.message).toBe(
      'unknown key "serve" (did you mean server?); accepted keys: server, database, cluster, model, agent, models, sessions, channels, approvals, cron, background, workflow, exec, logging, metrics, alerts, telemetry',
    )
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('checks custom channels: a name taken by a built-in, a missing module, duplicates, a bad chat id', async () => {
    const error = await failure(
      [
        'channels:',
        '  telegram: { allowed_chats: [12ab] }',
        '  custom:',
        '    - { name: telegram, module: ./x.mjs }',
        '    - { name: line }',
      ].join('\n'),
      { LANGO_TELEGRAM_ALLOWED_CHATS: '1,two' },
    )
    const messages = error.issues.map((issue) => `${issue.key}: ${issue.message}`)
    expect(messages).toEqual([
      expect.stringMatching(/^channels\.telegram\.allowed_chats\[0\]: expected a Telegram chat id/),
      expect.stringMatching(/^channels\.custom\[0\]\.name: expected a channel name/),
      expect.stringMatching(/^channels\.custom\[1\]\.module: /),
      expect.stringMatching(/^LANGO_TELEGRAM_ALLOWED_CHATS: expected a Telegram chat id .*"two"/),
    ])
    const twice = await failure('channels:\n  custom: [{ name: a, module: x }, { name: a, module: y }]\n')
    expect(twice.issues.map((issue) => issue.message)).toEqual(['custom channel names must be unique'])
  })

  it.each(['cron', 'bg', 'workflow', 'background'])(
    'refuses a custom channel named %s, saying the name is the server’s',
    async (name) => {
      const error = await failure(`channels:\n  custom: [{ name: ${name}, module: ./x.mjs }]\n`)
      expect(error.issues).toEqual([
        expect.objectContaining({
          key: 'channels.custom[0].name',
          message: expect.stringContaining(
            "other than the server's own (telegram, slack, discord, webhook, log, http, openai, cron, bg, background, workflow, cli, mcp)",
          ),
        }),
      ])
    },
  )

  it('reports every problem at once, in file order, in one message', async () => {
    const file = await writeConfig(
      [
        'server:',
        '  port: 99999',
        '  allowed_origins: [https://ok.example.com, https://x.example.com/path]',
        'approvals: { policy: sometimes, timeout: soon }',
        'cron: { timezone: Mars/Olympus_Mons, min_interval: 0s }',
        'channels: { default_deliver_to: [Email Me] }',
        'exec: { inherit: none, env_allow: ["A=B"] }',
        'workflow: 5',
        'logging: { level: [info] }',
      ].join('\n'),
    )
    const error = await failure(undefined, { LANGO_PORT: 'x' })
    const lines = error.message.split('\n')
    expect(lines).toEqual([
      'Invalid configuration (12 problems):',
      `  ${file}:2:9 server.port: expected an integer from 0 to 65535, got 99999`,
      `  ${file}:3:45 server.allowed_origins[1]: expected an origin such as https://app.example.com (scheme, host and port only), got "https://x.example.com/path"`,
      `  ${file}:4:22 approvals.policy: expected one of all, dangerous, moderate, none, got "sometimes"`,
      `  ${file}:4:42 approvals.timeout: expected a duration from 1s to 7d: a number with a unit (ms, s, m, h, d or w) such as 90s, 5m, 1h30m or 2d, got "soon"`,
      `  ${file}:5:19 cron.timezone: expected an IANA time zone such as UTC, Europe/Berlin or America/New_York, got "Mars/Olympus_Mons"`,
      `  ${file}:5:52 cron.min_interval: expected a duration from 1s to 1d: a number with a unit (ms, s, m, h, d or w) such as 90s, 5m or 1h30m, got "0s"`,
      `  ${file}:6:34 channels.default_deliver_to[0]: expected a delivery target such as telegram, telegram:<chat id>, slack:<channel>, discord:<channel>, webhook, log or <custom channel>:<id>, got "Email Me"`,
      `  ${file}:7:18 exec.inherit: expected one of core, all, got "none"`,
      `  ${file}:7:36 exec.env_allow[0]: expected a variable name or glob such as MY_APP_* (letters, digits, _ and *), got "A=B"`,
      `  ${file}:8:11 workflow: expected a mapping with the keys enabled, directory, workspace, max_parallel, history, got 5`,
      `  ${file}:9:19 logging.level: expected one of trace, debug, info, warn, error, fatal, silent, got a list`,
      '  LANGO_PORT: expected an integer from 0 to 65535, got "x"',
    ])
  })

  it('a section given as a list says a mapping is expected, not that its items are unknown keys', async () => {
    const error = await failure('cron: [1, 2]\nhistory_unused: 1\n')
    expect(error.issues.find((issue) => issue.key === 'cron')?.message).toBe(
      'expected a mapping with the keys enabled, timezone, min_interval, min_agent_interval, max_concurrent_jobs, max_consecutive_failures, max_ai_tokens_per_day, ping_private_networks, webhook_rate_limit, webhook_prompt_limit, history, got a list',
    )
    expect(error.issues.map((issue) => issue.key)).not.toContain('cron.0')
  })

  it('exec.timeout may not exceed exec.max_timeout', async () => {
    const error = await failure('exec:\n  timeout: 20m\n')
    expect(error.issues).toEqual([
      expect.objectContaining({
        key: 'exec.timeout',
        line: 2,
        column: 12,
        message: 'expected at most exec.max_timeout (10m), got 20m',
      }),
    ])
  })

  it('cron.min_agent_interval is at least cron.min_interval, and follows it when unset', async () => {
    const error = await failure('cron:\n  min_interval: 5m\n  min_agent_interval: 2m\n')
    expect(error.issues).toEqual([
      expect.objectContaining({
        key: 'cron.min_agent_interval',
        line: 3,
        column: 23,
        message:
          "expected at least cron.min_interval (5m): an ai job's floor is never below a shell job's, got 2m",
      }),
    ])
    await writeConfig('cron: { min_interval: 2m }\n')
    expect((await load()).cron).toMatchObject({
      minIntervalMs: 120_000,
      minAgentIntervalMs: 120_000,
    })
  })

  it('a Slack or Discord default_channel must be one of its allowed_channels, and the list may not be empty', async () => {
    const error = await failure(
      'channels:\n  slack:\n    default_channel: C0123ABCD\n    allowed_channels: [C0999ZZZZ]\n  discord:\n    allowed_channels: []\n',
    )
    expect(error.issues).toEqual([
      expect.objectContaining({
        key: 'channels.slack.default_channel',
        line: 3,
        message: 'expected one of channels.slack.allowed_channels (C0999ZZZZ), got C0123ABCD',
      }),
      expect.objectContaining({
        key: 'channels.discord.allowed_channels',
        line: 6,
        message: 'expected at least one channel id; leave the key out to let the bot post to any channel',
      }),
    ])
  })

  it('a lowered exec.max_timeout also lowers the default exec.timeout', async () => {
    await writeConfig('exec: { max_timeout: 10s }\n')
    expect((await load()).exec).toMatchObject({ timeoutMs: 10_000, maxTimeoutMs: 10_000 })
  })

  it('a YAML syntax error has its position and no source text', async () => {
    const file = await writeConfig('server:\n  port: 1\n  host: [127.0.0.1\nlogging: {}\n')
    const error = await failure(undefined)
    expect(error.issues[0]).toMatchObject({
      key: '',
      file,
      line: expect.any(Number),
      column: expect.any(Number),
    })
    expect(error.issues[0]?.message).toMatch(/^YAML syntax error: .+ \([A-Z_]+\)$/)
    expect(error.message).not.toContain('127.0.0.1')
  })

  it('a duplicate key and a second document are syntax errors at their position', async () => {
    const duplicate = await failure('cron:\n  enabled: true\n  enabled: false\n')
    expect(duplicate.issues).toEqual([
      expect.objectContaining({
        key: '',
        line: 3,
        column: 3,
        message: 'YAML syntax error: duplicate key (DUPLICATE_KEY)',
      }),
    ])
    const documents = await failure('cron: {}\n---\ncron: {}\n')
    expect(documents.issues).toEqual([
      expect.objectContaining({
        key: '',
        line: 2,
        message: 'YAML syntax error: only one YAML document is allowed (MULTIPLE_DOCS)',
      }),
    ])
  })

  it.each([
    ['- server\n- cron\n', 'a list'],
    ['just text\n', 'a single value'],
  ])('a top level that is not a mapping (%j) is an error', async (text, got) => {
    const file = await writeConfig(text)
    const error = await failure(undefined)
    expect(error.issues).toEqual([
      {
        key: '',
        file,
        line: 1,
        column: 1,
        message: `the top level must be a mapping of sections (server, database, cluster, model, agent, models, sessions, channels, approvals, cron, background, workflow, exec, logging, metrics, alerts, telemetry), got ${got}`,
      },
    ])
    expect(error.message).toBe(
      `Invalid configuration (1 problem):\n  ${file}:1:1: ${error.issues[0]?.message}`,
    )
  })

  it('a file over 1 MiB is refused', async () => {
    const file = await writeConfig(`# ${'x'.repeat(1024 * 1024)}\n`)
    const error = await failure(undefined)
    expect(error.issues).toEqual([
      { key: '', file, message: `is larger than 1 MiB (${1024 * 1024 + 3} bytes)` },
    ])
  })

  it('an alias bomb is refused', async () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
      'd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]',
      'cron: { history: { max_runs: *d } }',
    ].join('\n')
    const error = await failure(bomb)
    expect(error.issues).toEqual([
      expect.objectContaining({ key: '', message: 'the YAML uses more aliases than allowed (100)' }),
    ])
  })

  it('a lango.yaml that is a directory, or not UTF-8, is an error', async () => {
    await mkdir(join(langoHome, 'lango.yaml'))
    expect((await failure(undefined)).issues).toEqual([
      expect.objectContaining({ message: 'is not a regular file' }),
    ])
    await rm(join(langoHome, 'lango.yaml'), { recursive: true })
    await writeConfig(Buffer.from([0x63, 0x72, 0x6f, 0x6e, 0x3a, 0x20, 0xff, 0xfe, 0x0a]))
    expect((await failure(undefined)).issues).toEqual([
      expect.objectContaining({ message: 'is not UTF-8 text' }),
    ])
  })

  it('serialises to code, message and issues only, and is recognised across copies', async () => {
    const error = await failure('cron: { enabled: maybe }\n')
    expect(Object.keys(error.toJSON())).toEqual(['code', 'message', 'issues'])
    const json = JSON.stringify(error)
    expect(json).not.toContain('stack')
    expect(json).not.toContain('at ')
    expect(JSON.parse(json)).toEqual({ code: 'CONFIG_INVALID', message: error.message, issues: error.issues })
    expect(ConfigError.is(error)).toBe(true)
    expect(ConfigError.is(new Error('x'))).toBe(false)
    expect(error.name).toBe('ConfigError')
  })
})

describe('loadConfig: secrets stay out of errors', () => {
  const CANARY = 'canary-7f3a9c'

  it('never quotes a token, API key or URL, from the file or the environment', async () => {
    const error = await failure(
      [
        `server: { api_token: "${CANARY} with space" }`,
        `model: { api_key: "${CANARY}\\n", base_url: "ftp://${CANARY}.example.com" }`,
        `channels: { telegram: { token: "${CANARY} x" }, webhook: { url: "file:///${CANARY}" } }`,
        `database: { url: "mysql://lango:${CANARY}@db/lango" }`,
      ].join('\n'),
      {
        LANGO_API_TOKEN: `${CANARY} env`,
        LANGO_SLACK_TOKEN: `\t${CANARY}`,
        LANGO_DATABASE_URL: `mysql://u:${CANARY}@h/db`,
        LANGO_WEBHOOK_URL: `gopher://${CANARY}`,
      },
    )
    expect(error.issues.map((issue) => issue.key)).toEqual([
      'server.api_token',
      'model.api_key',
      'model.base_url',
      'channels.telegram.token',
      'channels.webhook.url',
      'database.url',
      'LANGO_DATABASE_URL',
      'LANGO_API_TOKEN',
      'LANGO_SLACK_TOKEN',
      'LANGO_WEBHOOK_URL',
    ])
    expect(error.issues[0]?.message).toBe(
      'expected a non-empty token without spaces or control characters, got a value (not shown)',
    )
    expect(error.message).not.toContain(CANARY)
    expect(JSON.stringify(error)).not.toContain(CANARY)
  })

  it('a mistyped PostgreSQL URL or an empty sqlite: path is refused, never opened as a new SQLite file (outside probe)', async () => {
    for (const url of ['postgres:/postgres@127.0.0.1/db', 'postgresql:db', 'sqlite:', 'sqlite://']) {
      const error = await failure('', { LANGO_DATABASE_URL: url })
      expect(error.issues, url).toEqual([
        expect.objectContaining({
          key: 'LANGO_DATABASE_URL',
          message: expect.stringContaining(
            'expected postgres://…, postgresql://…, sqlite:<path> or a SQLite file path',
          ),
        }),
      ])
    }
  })

  it('a syntax error on a line holding a token does not quote the line', async () => {
    const error = await failure(`server:\n  api_token: "${CANARY}\n  port: 1\n`)
    expect(error.issues.length).toBeGreaterThan(0)
    expect(JSON.stringify(error)).not.toContain(CANARY)
  })
})

describe('redactedConfig', () => {
  it('shows every token and key as [set], hides URL credentials and the webhook path, and keeps the rest', async () => {
    await writeConfig(FULL)
    const config = await load({
      LANGO_DATABASE_URL: 'postgres://lango:db-password@db:5432/lango?sslmode=require&sslpassword=cert-pass',
      LANGO_WEBHOOK_URL: 'https://discord.com/api/webhooks/123/webhook-secret',
      LANGO_MODEL_BASE_URL: 'https://user:model-url-password@llm.example.com/v1',
    })
    const redacted = redactedConfig(config) as ServerConfig
    const json = JSON.stringify(redacted)
    for (const secret of [
      'file-api-token',
      'file-model-key',
      'tg-token',
      'slack-token',
      'discord-token',
      'db-password',
      'cert-pass',
      'webhook-secret',
      'model-url-password',
    ]) {
      expect(json).not.toContain(secret)
    }
    expect(redacted.server).toEqual({ ...config.server, apiToken: '[set]' })
    expect(redacted.model).toEqual({
      baseUrl: 'https://user:[set]@llm.example.com/v1',
      name: 'llama3.1',
      apiKey: '[set]',
    })
    expect(redacted.channels).toEqual({
      telegram: { token: '[set]', apiUrl: 'http://127.0.0.1:8081', allowedChats: ['123', '-1001234567890'] },
      slack: {
        token: '[set]',
        apiUrl: 'http://127.0.0.1:8082/api',
        defaultChannel: 'C0123ABCD',
        allowedChannels: ['C0123ABCD', 'C0999ZZZZ'],
      },
      discord: {
        token: '[set]',
        apiUrl: 'http://127.0.0.1:8083',
        defaultChannel: '123456789012345678',
        allowedChannels: null,
      },
      webhook: { url: 'https://discord.com/[set]', secret: '[set]' },
      // A custom channel's options may be credentials: their names only.
      custom: [
        {
          name: 'line-chat',
          module: './adapters/line-chat.mjs',
          options: { port: '[set]', password: '[set]' },
        },
      ],
      defaultDeliverTo: ['telegram:123', 'webhook'],
    })
    expect(redacted.database).toEqual({
      kind: 'postgres',
      url: 'postgres://lango:[set]@db:5432/lango?sslmode=require&sslpassword=[set]',
    })
    expect(redacted.cron).toEqual(config.cron)
    expect(redacted.exec).toEqual(config.exec)
  })

  it('shows unset values as null and a SQLite path as is', async () => {
    const config = await load()
    const redacted = redactedConfig(config) as Record<string, Record<string, unknown>>
    expect(redacted.file).toBeNull()
    expect(redacted.server?.apiToken).toBeNull()
    expect(redacted.model).toEqual({ baseUrl: null, name: null, apiKey: null })
    expect(redacted.channels?.telegram).toEqual({ token: null, apiUrl: null, allowedChats: [] })
    expect(redacted.database).toEqual({ kind: 'sqlite', url: join(langoHome, 'lango.db') })
    expect(JSON.parse(JSON.stringify(redacted))).toEqual(redacted)
  })
})

describe('loadConfig: secrets from files (issue 21: *_FILE and systemd credentials)', () => {
  it('reads every secret from its _FILE, dropping one trailing newline', async () => {
    const secrets = join(root, 'secrets')
    await mkdir(secrets)
    const file = async (name: string, text: string) => {
      await writeFile(join(secrets, name), text)
      return join(secrets, name)
    }
    const config = await load({
      LANGO_PASSPHRASE_FILE: await file('passphrase', 'correct horse battery\n'),
      LANGO_API_TOKEN_FILE: await file('api', 'file-api-token\n'),
      LANGO_MODEL_API_KEY_FILE: await file('model', 'file-model-key'),
      LANGO_TELEGRAM_TOKEN_FILE: await file('telegram', '123:tg\r\n'),
      LANGO_SLACK_TOKEN_FILE: await file('slack', 'xoxb-1'),
      LANGO_DISCORD_TOKEN_FILE: await file('discord', 'discord-1'),
      LANGO_WEBHOOK_SECRET_FILE: await file('webhook', 'hook-secret'),
      LANGO_DATABASE_URL_FILE: await file('database', 'postgres://lango:pw@db:5432/lango\n'),
    })
    expect(config.vault.passphrase).toBe('correct horse battery')
    expect(config.server.apiToken).toBe('file-api-token')
    expect(config.model.apiKey).toBe('file-model-key')
    expect(config.channels.telegram.token).toBe('123:tg')
    expect(config.channels.slack.token).toBe('xoxb-1')
    expect(config.channels.discord.token).toBe('discord-1')
    expect(config.channels.webhook.secret).toBe('hook-secret')
    expect(config.database).toEqual({ kind: 'postgres', url: 'postgres://lango:pw@db:5432/lango' })
    expect(JSON.stringify(redactedConfig(config))).not.toMatch(
      /correct horse|file-api-token|hook-secret|:pw@/,
    )
  })

  it('reads OTEL_EXPORTER_OTLP_HEADERS and its traces form (or their _FILEs) as masked credentials', async () => {
    const secrets = join(root, 'otel')
    await mkdir(secrets)
    await writeFile(join(secrets, 'headers'), 'x-team=ops\n')
    await writeConfig('telemetry: { otlp: { headers: { x-team: yaml, x-keep: kept } } }\n')
    const config = await load({
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20otel-secret-1,x-tenant=acme',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS_FILE: join(secrets, 'headers'),
    })
    expect(config.telemetry.headers).toEqual({
      'x-keep': 'kept',
      authorization: 'Bearer otel-secret-1',
      'x-tenant': 'acme',
      'x-team': 'ops',
    })
    expect(configSecrets(config)).toContainEqual({
      label: 'config:telemetry.otlp.headers.authorization',
      value: 'Bearer otel-secret-1',
    })
    const wrong = await failure(undefined, { OTEL_EXPORTER_OTLP_HEADERS: 'no-equals-sign-secret' })
    expect(wrong.message).toContain('OTEL_EXPORTER_OTLP_HEADERS')
    expect(wrong.message).toContain('name=value pairs')
    expect(wrong.message).not.toContain('no-equals-sign-secret')
  })

  it("reads OpenTelemetry's SDK variables over the telemetry keys of the file", async () => {
    await writeConfig(
      [
        'telemetry:',
        '  enabled: false',
        '  service_name: from-file',
        '  resource_attributes: { team: yaml, region: eu, service.name: attribute-name }',
        '  exporter: none',
        '  sampler: traceidratio',
        '  sampler_arg: 0.5',
        '  otlp: { endpoint: "http://127.0.0.1:4318", timeout: 5s, protocol: http/json }',
        '',
      ].join('\n'),
    )
    const fromFile = await load()
    expect(fromFile.telemetry).toMatchObject({
      enabled: false,
      exporter: 'none',
      serviceName: 'from-file',
      resourceAttributes: { team: 'yaml', region: 'eu' },
      sampler: 'traceidratio',
      samplerArg: 0.5,
      timeoutMs: 5000,
      protocol: 'http/json',
    })
    const fromEnvironment = await load({
      OTEL_SDK_DISABLED: 'False',
      OTEL_TRACES_EXPORTER: 'OTLP',
      OTEL_RESOURCE_ATTRIBUTES: 'team=ops%2Fnight,service.name=attribute-wins-over-file',
      OTEL_TRACES_SAMPLER: 'ParentBased_Always_Off',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_EXPORTER_OTLP_TIMEOUT: '7000',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    })
    expect(fromEnvironment.telemetry).toMatchObject({
      enabled: true,
      exporter: 'otlp',
      serviceName: 'attribute-wins-over-file',
      resourceAttributes: { team: 'ops/night', region: 'eu' },
      sampler: 'parentbased_always_off',
      samplerArg: 0.25,
      timeoutMs: 7000,
    })
    const named = await load({
      OTEL_SERVICE_NAME: 'service-name-wins',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=loses',
      OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '300',
      OTEL_EXPORTER_OTLP_TIMEOUT: '7000',
    })
    expect(named.telemetry.serviceName).toBe('service-name-wins')
    expect(named.telemetry.resourceAttributes).toEqual({ team: 'yaml', region: 'eu' })
    expect(named.telemetry.timeoutMs).toBe(300)
    // `lango doctor` shows them (the redacted configuration).
    expect(redactedConfig(named)).toMatchObject({
      telemetry: { serviceName: 'service-name-wins', sampler: 'traceidratio', timeoutMs: 300 },
    })
  })

  it('refuses bad telemetry keys in the file, naming what is accepted', async () => {
    const wrong = await failure(
      'telemetry: { sampler: sometimes, sampler_arg: 2, exporter: zipkin, otlp: { protocol: grpc } }\n',
    )
    const keys = wrong.issues.map((issue) => issue.key)
    expect(keys).toEqual(
      expect.arrayContaining([
        'telemetry.sampler',
        'telemetry.sampler_arg',
        'telemetry.exporter',
        'telemetry.otlp.protocol',
      ]),
    )
    expect(wrong.message).toContain('parentbased_traceidratio')
    expect(wrong.message).toContain('expected http/json')
  })

  it('reads systemd credentials named as the variables, below the variables and their _FILEs', async () => {
    const credentials = join(root, 'credentials')
    await mkdir(credentials)
    await writeFile(join(credentials, 'LANGO_API_TOKEN'), 'credential-token\n')
    await writeFile(join(credentials, 'LANGO_PASSPHRASE'), 'credential passphrase')
    const config = await load({
      CREDENTIALS_DIRECTORY: credentials,
      LANGO_PASSPHRASE: 'from the environment',
    })
    expect(config.server.apiToken).toBe('credential-token')
    expect(config.vault.passphrase).toBe('from the environment')
  })

  it('refuses a value and a _FILE both, a relative path, a missing, empty or oversized file, without quoting', async () => {
    const empty = join(root, 'empty')
    await writeFile(empty, '\n')
    const large = join(root, 'large')
    await writeFile(large, 'x'.repeat(70_000))
    const error = await failure(undefined, {
      LANGO_API_TOKEN: 'canary-token',
      LANGO_API_TOKEN_FILE: empty,
      LANGO_MODEL_API_KEY_FILE: 'relative/key',
      LANGO_TELEGRAM_TOKEN_FILE: join(root, 'missing'),
      LANGO_SLACK_TOKEN_FILE: empty,
      LANGO_DISCORD_TOKEN_FILE: large,
    })
    expect(error.issues).toEqual([
      { key: 'LANGO_MODEL_API_KEY_FILE', message: 'expected an absolute path to a file holding the secret' },
      { key: 'LANGO_API_TOKEN_FILE', message: 'set LANGO_API_TOKEN or LANGO_API_TOKEN_FILE, not both' },
      { key: 'LANGO_TELEGRAM_TOKEN_FILE', message: `${join(root, 'missing')} cannot be read (ENOENT)` },
      { key: 'LANGO_SLACK_TOKEN_FILE', message: `${empty} is empty: expected the secret` },
      {
        key: 'LANGO_DISCORD_TOKEN_FILE',
        message: `${large} is larger than 64 KiB: expected a file holding one secret`,
      },
    ])
    expect(JSON.stringify(error)).not.toContain('canary-token')
  })
})
