import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import type { ServerConfig } from '../config/types.js'
import type { ApiClient } from './client.js'
import type { Register } from './command.js'
import type { CommandContext } from './context.js'
import { ApiError, CliError, EXIT } from './errors.js'
import type { Output } from './output.js'

/** How one check went: `fail` makes `lango doctor` exit 1; `warn` does not. */
type CheckStatus = 'ok' | 'warn' | 'fail'

/** One line of the doctor's report. Messages name files, URLs and counts, never a secret. */
interface CheckResult {
  readonly name: string
  readonly status: CheckStatus
  readonly message: string
  /** What to do about a `warn` or `fail`. */
  readonly fix?: string
  readonly details?: Readonly<Record<string, unknown>>
}

/** Network checks give up after this long: a doctor that hangs helps nobody. */
const NETWORK_TIMEOUT_MS = 3000
const PTY_TIMEOUT_MS = 5000

/** `lango doctor [--json]`: every check, what to do about each problem; exit 1 if any failed. */
export const registerDoctor: Register = (program, action) => {
  program
    .command('doctor')
    .description('check the configuration, database, native modules, server, model and channels')
    .action(
      action(async (context) => {
        const checks = await runChecks(context)
        const ok = checks.every((check) => check.status !== 'fail')
        return {
          data: { ok, checks },
          exitCode: ok ? EXIT.ok : EXIT.failure,
          render: (out) => renderChecks(out, checks),
        }
      }),
    )
}

/** Runs every check; never throws (a check that breaks is reported as failed). */
async function runChecks(context: CommandContext): Promise<CheckResult[]> {
  const { check: configCheck, config } = await checkConfig(context)
  const skipped = (name: string): CheckResult => ({
    name,
    status: 'warn',
    message: 'not checked: the configuration does not load',
    fix: 'fix the configuration first',
  })
  const guarded = (name: string, run: () => Promise<CheckResult | CheckResult[]>) =>
    run().catch(
      (error: unknown): CheckResult => ({
        name,
        status: 'fail',
        message: `the check itself failed: ${safeMessage(error)}`,
      }),
    )
  const results = await Promise.all([
    config === undefined ? skipped('database') : guarded('database', () => checkDatabase(config)),
    guarded('better-sqlite3', checkBetterSqlite),
    guarded('node-pty', checkPty),
    guarded('server', () => checkServer(context)),
    config === undefined ? skipped('model') : guarded('model', () => checkModel(config)),
    config === undefined ? skipped('channels') : guarded('channels', () => checkChannels(config)),
  ])
  return [configCheck, ...results.flat()]
}

function renderChecks(out: Output, checks: readonly CheckResult[]): void {
  const width = Math.max(...checks.map((check) => check.name.length))
  for (const check of checks) {
    const style = check.status === 'ok' ? 'green' : check.status === 'warn' ? 'yellow' : 'red'
    const [first = '', ...rest] = check.message.split('\n')
    out.print(`${out.paint(style, check.status.padEnd(4))}  ${check.name.padEnd(width)}  ${first}`)
    for (const line of rest) out.print(`      ${' '.repeat(width)}  ${line}`)
    if (check.fix !== undefined)
      out.print(`      ${' '.repeat(width)}  ${out.paint('dim', `→ ${check.fix}`)}`)
  }
  const failed = checks.filter((check) => check.status === 'fail').length
  const warned = checks.filter((check) => check.status === 'warn').length
  out.print(
    failed > 0
      ? out.paint('red', `\n${failed} check${failed === 1 ? '' : 's'} failed`)
      : `\n${out.paint('green', 'no problems')}${warned > 0 ? ` (${warned} warning${warned === 1 ? '' : 's'})` : ''}`,
  )
}

/** `~/…` for paths under the user's home: a report people paste into issues. */
function shortPath(path: string): string {
  const home = homedir()
  return home !== '/' && path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path
}

/** An error's code or a short message, never anything that could carry a URL with a token. */
function safeMessage(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string') return code
  return error instanceof Error ? (error.message.split('\n')[0]?.slice(0, 200) ?? 'error') : 'error'
}

async function checkConfig(context: CommandContext): Promise<{ check: CheckResult; config?: ServerConfig }> {
  try {
    const config = await context.config()
    const { redactedConfig } = await import('../config/redact.js')
    const where =
      config.file === undefined
        ? `no lango.yaml in ${shortPath(config.home)}: defaults apply`
        : shortPath(config.file)
    const details = { file: config.file ?? null, home: config.home, config: redactedConfig(config) }
    if (config.warnings.length > 0) {
      const first = config.warnings[0] as (typeof config.warnings)[number]
      return {
        config,
        check: {
          name: 'config',
          status: 'warn',
          message: `${where}: ${config.warnings.length} value(s) in a deprecated form, e.g. ${first.key}${first.line === undefined ? '' : ` (line ${first.line})`}: ${first.message}`,
          fix: 'write each duration with its unit (30s, 5m, 1h30m), as the warnings say',
          details: { ...details, warnings: config.warnings },
        },
      }
    }
    return { config, check: { name: 'config', status: 'ok', message: where, details } }
  } catch (error) {
    const { ConfigError } = await import('../config/errors.js')
    if (!ConfigError.is(error)) throw error
    return {
      check: {
        name: 'config',
        status: 'fail',
        message: error.message,
        fix: 'correct the keys named above (in lango.yaml or the LANGO_* variables); the server will not start until then',
        details: { issues: error.issues },
      },
    }
  }
}

async function checkDatabase(config: ServerConfig): Promise<CheckResult[]> {
  if (config.database.kind === 'postgres') return [await checkPostgres(config.database.url)]
  const path = config.database.url
  if (!existsSync(path))
    return [
      {
        name: 'database',
        status: 'warn',
        message: `no database yet at ${shortPath(path)}`,
        fix: '`lango serve` creates it (with every migration) at start',
      },
    ]
  const [
    { default: Database },
    { cronMigrations, CRON_MIGRATION_TABLE },
    { workflowMigrations, WORKFLOW_MIGRATION_TABLE },
    vault,
  ] = await Promise.all([
    import('better-sqlite3'),
    import('@lango/cron/sqlite'),
    import('@lango/workflow/sqlite'),
    import('../vault/vault.js'),
  ])
  let database: import('better-sqlite3').Database
  try {
    // Read-write, though only read: the last connection to close tidies the WAL files away, where a
    // read-only one would leave them behind. Nothing is written (no migration runs here).
    database = new Database(path, { fileMustExist: true })
    database.pragma('busy_timeout = 2000')
    database.prepare('select 1').get()
  } catch (error) {
    return [
      {
        name: 'database',
        status: 'fail',
        message: `cannot open ${shortPath(path)}: ${safeMessage(error)}`,
        fix: 'check the file and its directory are readable and writable by you; if it is damaged, move it aside (the server starts a new one)',
      },
    ]
  }
  try {
    const packages = [
      { name: 'cron', table: CRON_MIGRATION_TABLE, known: Object.keys(cronMigrations) },
      { name: 'workflow', table: WORKFLOW_MIGRATION_TABLE, known: Object.keys(workflowMigrations) },
      { name: 'vault', table: vault.VAULT_MIGRATION_TABLE, known: Object.keys(vault.vaultMigrations) },
    ]
    const pending: string[] = []
    const unknown: string[] = []
    for (const { name, table, known } of packages) {
      const applied = appliedMigrations(database, table)
      pending.push(
        ...known
          .filter((migration) => !applied.includes(migration))
          .map((migration) => `${name}/${migration}`),
      )
      unknown.push(
        ...applied
          .filter((migration) => !known.includes(migration))
          .map((migration) => `${name}/${migration}`),
      )
    }
    const secrets = countSecrets(database)
    const results: CheckResult[] = []
    if (unknown.length > 0)
      results.push({
        name: 'database',
        status: 'fail',
        message: `${shortPath(path)} was migrated by a newer lango (unknown migrations: ${unknown.join(', ')})`,
        fix: 'upgrade lango, or point LANGO_DATABASE_URL at another file',
      })
    else if (pending.length > 0)
      results.push({
        name: 'database',
        status: 'warn',
        message: `${shortPath(path)} opens; ${pending.length} migration${pending.length === 1 ? '' : 's'} pending (${pending.join(', ')})`,
        fix: '`lango serve` applies them at start',
        details: { path, pending },
      })
    else
      results.push({
        name: 'database',
        status: 'ok',
        message: `${shortPath(path)} opens; migrations current`,
        details: { path },
      })
    if (secrets > 0 && config.vault.passphrase === undefined)
      results.push({
        name: 'secrets',
        status: 'warn',
        message: `${secrets} secret${secrets === 1 ? '' : 's'} stored, but LANGO_PASSPHRASE is not set`,
        fix: 'set LANGO_PASSPHRASE for the server: commands using {{secret:NAME}} fail without it',
      })
    else
      results.push({
        name: 'secrets',
        status: 'ok',
        message:
          secrets === 0
            ? 'no secrets stored'
            : `${secrets} secret${secrets === 1 ? '' : 's'} stored; LANGO_PASSPHRASE is set (\`lango secrets list\` checks it)`,
      })
    return results
  } finally {
    database.close()
  }
}

function appliedMigrations(database: import('better-sqlite3').Database, table: string): string[] {
  const exists = database.prepare("select 1 from sqlite_master where type = 'table' and name = ?").get(table)
  if (exists === undefined) return []
  // `table` is one of the packages' fixed migration-table constants, never input.
  return (database.prepare(`select name from "${table}"`).all() as { name: string }[]).map((row) => row.name)
}

function countSecrets(database: import('better-sqlite3').Database): number {
  const exists = database
    .prepare("select 1 from sqlite_master where type = 'table' and name = 'vault_secrets'")
    .get()
  if (exists === undefined) return 0
  return (database.prepare('select count(*) as n from vault_secrets').get() as { n: number }).n
}

async function checkBetterSqlite(): Promise<CheckResult> {
  try {
    const { default: Database } = await import('better-sqlite3')
    const database = new Database(':memory:')
    const { version } = database.prepare('select sqlite_version() as version').get() as { version: string }
    database.close()
    return {
      name: 'better-sqlite3',
      status: 'ok',
      message: `loads (SQLite ${version}, Node ${process.versions.node})`,
    }
  } catch (error) {
    return {
      name: 'better-sqlite3',
      status: 'fail',
      message: `does not load: ${safeMessage(error)}`,
      fix: 'rebuild it for this Node (`pnpm rebuild better-sqlite3`); on Node 22+ it needs better-sqlite3 13.x',
    }
  }
}

async function checkPty(): Promise<CheckResult> {
  const fix = 'rebuild it for this Node (`pnpm rebuild node-pty`); until then exec with pty: true fails'
  try {
    const pty = await import('node-pty')
    const child = pty.spawn('/bin/sh', ['-c', 'printf ok'], {
      cols: 20,
      rows: 2,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    })
    let output = ''
    child.onData((data) => {
      output += data
    })
    const exitCode = await new Promise<number | undefined>((resolve) => {
      const timer = setTimeout(() => {
        child.kill()
        resolve(undefined)
      }, PTY_TIMEOUT_MS)
      child.onExit(({ exitCode: code }) => {
        clearTimeout(timer)
        resolve(code)
      })
    })
    if (exitCode === 0 && output.includes('ok'))
      return { name: 'node-pty', status: 'ok', message: 'spawns a terminal' }
    return {
      name: 'node-pty',
      status: 'fail',
      message:
        exitCode === undefined
          ? 'a terminal did not start within 5 s'
          : `a terminal's shell exited ${exitCode}`,
      fix,
    }
  } catch (error) {
    return { name: 'node-pty', status: 'fail', message: `does not load: ${safeMessage(error)}`, fix }
  }
}

async function checkServer(context: CommandContext): Promise<CheckResult> {
  let client: ApiClient
  try {
    client = await context.client()
  } catch (error) {
    return {
      name: 'server',
      status: 'warn',
      message: `not checked: ${CliError.is(error) ? error.message : 'no server address (the configuration does not load)'}`,
    }
  }
  try {
    const health = await client.get<{ status?: string; version?: string; scheduler?: string }>('/healthz', {
      timeoutMs: NETWORK_TIMEOUT_MS,
    })
    // The cluster: every server registered on the same database (issue 14).
    const cluster = await client
      .get<{
        instances: { id: string; host: string; pid: number; alive: boolean; heartbeat_at: string }[]
        leases?: { name: string; owner: string; expires_at: string }[]
      }>('/api/instances', { timeoutMs: NETWORK_TIMEOUT_MS })
      .catch(() => undefined)
    const instances = cluster?.instances ?? []
    const silent = instances.filter((instance) => !instance.alive)
    const clusterLine =
      cluster === undefined
        ? ''
        : `; ${instances.length} instance${instances.length === 1 ? '' : 's'} on its database${
            silent.length === 0
              ? ''
              : `, ${silent.length} not answering (${silent.map((instance) => `${instance.host}:${instance.pid}`).join(', ')})`
          }${leaseLine(cluster.leases ?? [])}`
    return {
      name: 'server',
      status: silent.length === 0 ? 'ok' : 'warn',
      message: `running at ${client.baseUrl} (version ${health.version ?? '?'}, scheduler ${health.scheduler ?? '?'})${clusterLine}`,
      ...(silent.length === 0
        ? {}
        : {
            fix: 'an instance stopped without deregistering (killed?); the next server to start removes it',
          }),
      details: { url: client.baseUrl, health, instances, leases: cluster?.leases ?? [] },
    }
  } catch (error) {
    if (CliError.is(error) && error.code === 'CLI_SERVER_NOT_RUNNING')
      return {
        name: 'server',
        status: 'warn',
        message: `not running at ${client.baseUrl}`,
        fix: 'start it with `lango serve`',
      }
    if (ApiError.is(error) && error.status === 503)
      return {
        name: 'server',
        status: 'warn',
        message: `answers at ${client.baseUrl} but is not ready (${error.message})`,
        fix: 'wait for start-up to finish; if it stays so, read its log (stderr)',
      }
    return {
      name: 'server',
      status: 'fail',
      message: `${client.baseUrl}: ${CliError.is(error) || ApiError.is(error) ? error.message : safeMessage(error)}`,
      fix: 'check --url / LANGO_URL, and that LANGO_API_TOKEN matches the server',
    }
  }
}

/** A URL as shown: no user, password, query or fragment. */
function shownUrl(text: string): string {
  try {
    const url = new URL(text)
    return `${url.origin}${url.pathname.replace(/\/+$/, '')}`
  } catch {
    return '(not a URL)'
  }
}

async function getJson(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: unknown }> {
  const response = await fetch(url, {
    headers: { accept: 'application/json', ...headers },
    signal: AbortSignal.timeout(NETWORK_TIMEOUT_MS),
  })
  const text = await response.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, json }
}

function networkProblem(error: unknown): string {
  if ((error as { name?: string } | null)?.name === 'TimeoutError')
    return `no answer within ${NETWORK_TIMEOUT_MS / 1000} s`
  let current: unknown = error
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const { code, errors, cause } = current as { code?: unknown; errors?: unknown[]; cause?: unknown }
    if (typeof code === 'string') return code
    current = Array.isArray(errors) && errors.length > 0 ? errors[0] : cause
  }
  return 'unreachable'
}

async function checkModel(config: ServerConfig): Promise<CheckResult> {
  const { baseUrl, name, apiKey } = config.model
  if (baseUrl === undefined)
    return {
      name: 'model',
      status: 'warn',
      message:
        'no model configured: agent runs (ai cron jobs, background tasks, prompt steps) fail with "no model configured"',
      fix: 'set LANGO_MODEL_BASE_URL and LANGO_MODEL (and LANGO_MODEL_API_KEY), or model: in lango.yaml',
    }
  const shown = shownUrl(baseUrl)
  const url = `${baseUrl.replace(/\/+$/, '')}/models`
  let answer: { status: number; json: unknown }
  try {
    answer = await getJson(url, apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` })
  } catch (error) {
    return {
      name: 'model',
      status: 'fail',
      message: `${shown}/models: ${networkProblem(error)}`,
      fix: 'check LANGO_MODEL_BASE_URL and that the model server is running',
    }
  }
  if (answer.status === 401 || answer.status === 403)
    return {
      name: 'model',
      status: 'fail',
      message: `${shown} refused the API key (${answer.status})`,
      fix: 'check LANGO_MODEL_API_KEY',
    }
  if (answer.status < 200 || answer.status > 299)
    return {
      name: 'model',
      status: 'fail',
      message: `${shown}/models answered ${answer.status}`,
      fix: 'LANGO_MODEL_BASE_URL must be an OpenAI-compatible base URL (usually ending in /v1)',
    }
  const models = ((answer.json as { data?: unknown } | undefined)?.data ?? []) as { id?: unknown }[]
  const ids = Array.isArray(models)
    ? models.map((model) => model.id).filter((id): id is string => typeof id === 'string')
    : []
  if (name === undefined)
    return {
      name: 'model',
      status: 'warn',
      message: `${shown} reachable (${ids.length} models) but no model name is set`,
      fix: 'set LANGO_MODEL (or model.name in lango.yaml)',
    }
  if (ids.length > 0 && !ids.includes(name))
    return {
      name: 'model',
      status: 'warn',
      message: `${shown} reachable, but it does not list ${name} (${ids.length} models)`,
      fix: `check LANGO_MODEL against the server's models: ${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}`,
    }
  return { name: 'model', status: 'ok', message: `${name} at ${shown} reachable` }
}

async function checkChannels(config: ServerConfig): Promise<CheckResult[]> {
  const { telegram, slack, discord, webhook } = config.channels
  const configured = [
    telegram.token === undefined ? undefined : 'telegram',
    slack.token === undefined ? undefined : 'slack',
    discord.token === undefined ? undefined : 'discord',
    webhook.url === undefined ? undefined : 'webhook',
  ].filter((name): name is string => name !== undefined)
  const results: CheckResult[] = [
    configured.length === 0
      ? {
          name: 'channels',
          status: 'ok',
          message: 'none configured: results go to the server log only',
          details: { configured },
        }
      : {
          name: 'channels',
          status: 'ok',
          message: `configured: ${configured.join(', ')}`,
          details: { configured },
        },
  ]
  if (telegram.token !== undefined) results.push(await checkTelegram(telegram.token, telegram.apiUrl))
  return results
}

async function checkTelegram(token: string, apiUrl: string | undefined): Promise<CheckResult> {
  const base = (apiUrl ?? 'https://api.telegram.org').replace(/\/+$/, '')
  try {
    const { status, json } = await getJson(`${base}/bot${token}/getMe`)
    const result = (json as { ok?: unknown; result?: { username?: unknown } } | undefined) ?? {}
    if (status === 200 && result.ok === true)
      return {
        name: 'telegram',
        status: 'ok',
        message: `token accepted${typeof result.result?.username === 'string' ? ` (bot @${result.result.username})` : ''}`,
      }
    if (status === 401 || status === 404)
      return {
        name: 'telegram',
        status: 'fail',
        message: `the Bot API refused the token (${status})`,
        fix: 'check LANGO_TELEGRAM_TOKEN (from @BotFather)',
      }
    return {
      name: 'telegram',
      status: 'fail',
      message: `getMe answered ${status}`,
      fix: 'try again later; check LANGO_TELEGRAM_API_URL if set',
    }
  } catch (error) {
    return {
      name: 'telegram',
      status: 'fail',
      message: `${shownUrl(base)}: ${networkProblem(error)}`,
      fix: 'check the network (or LANGO_TELEGRAM_API_URL)',
    }
  }
}

/** PostgreSQL answers a query at the configured URL (the server migrates it at start). */
async function checkPostgres(url: string): Promise<CheckResult> {
  const parsed = URL.parse(url)
  const where =
    parsed === null ? 'postgres://(unparsable URL)' : `postgres://${parsed.host}${parsed.pathname}`
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 })
  try {
    await client.connect()
    const { rows } = await client.query<{ version: string }>('select version() as version')
    return {
      name: 'database',
      status: 'ok',
      message: `${where} answers (${(rows[0]?.version ?? 'PostgreSQL').split(' ').slice(0, 2).join(' ')}); \`lango serve\` applies migrations at start`,
      details: { database: where },
    }
  } catch (error) {
    const password = parsed?.password
    const message = safeMessage(error)
    return {
      name: 'database',
      status: 'fail',
      message: `cannot connect to ${where}: ${password ? message.replaceAll(decodeURIComponent(password), '[hidden]') : message}`,
      fix: 'check LANGO_DATABASE_URL (host, port, database, user, password) and that PostgreSQL accepts connections from this machine',
      details: { database: where },
    }
  } finally {
    await client.end().catch(() => {})
  }
}

/** `; leases: retention on host:pid, …`: who runs each singleton duty (owner ids start with host:pid). */
function leaseLine(leases: readonly { readonly name: string; readonly owner: string }[]): string {
  if (leases.length === 0) return ''
  const holder = (owner: string) => owner.split(':').slice(0, 2).join(':')
  return `; leases: ${leases.map((lease) => `${lease.name} on ${holder(lease.owner)}`).join(', ')}`
}
