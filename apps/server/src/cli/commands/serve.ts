import { InvalidArgumentError } from 'commander'
import { credentialsIn, proxiesKeptInPlace, secretsIn } from '../../config/environment-credentials.js'
import type { ServerConfig } from '../../config/types.js'
import type { Logger } from '../../logger.js'
import type { Register } from '../command.js'

/**
 * What `serve` and `mcp` warn of as they start: deprecated forms in the configuration, and secrets
 * in the environment of pid 1 (a container's init is the parent of every orphan, so the supervisor
 * of src/cli/handover.ts cannot keep them away from the commands the server runs).
 */
/**
 * The ports the Fetch standard blocks (https://fetch.spec.whatwg.org/#bad-port): Node's `fetch`,
 * which the CLI uses, and every browser refuse them, so a server there is out of reach of both.
 */
const FETCH_BLOCKED_PORTS = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104,
  109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515,
  526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
  3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
])

function warnAtStart(config: ServerConfig, logger: Logger): void {
  if (FETCH_BLOCKED_PORTS.has(config.server.port))
    logger.warn('port blocked by fetch and browsers: the lango CLI and the dashboard cannot reach it', {
      port: config.server.port,
      hint: 'choose another port (server.port in lango.yaml, --port); browsers and fetch refuse the ports of the Fetch standard\'s "bad port" list',
    })
  const model = config.model.name
  if (model !== undefined && config.models[model]?.price === undefined) {
    const { turnBudget, dailyBudget, creatorDailyBudget } = config.agent
    const money = [
      turnBudget.maxCostUsd === undefined ? undefined : 'agent.budget.max_cost_per_turn',
      dailyBudget.maxCostUsd === undefined ? undefined : 'agent.budget.max_cost_per_day',
      creatorDailyBudget.maxCostUsd === undefined ? undefined : 'agent.budget.max_cost_per_creator_per_day',
    ].filter((setting) => setting !== undefined)
    // A money budget over a model without a price would count $0 for ever: said at once.
    if (money.length > 0)
      logger.warn('a money budget cannot bound the model: it has no price', {
        model,
        settings: money,
        fix: `give it a price in lango.yaml (models.${model}.price: { input, output }, US dollars per million tokens), or bound it with the max_tokens_* budgets`,
      })
  }
  for (const warning of config.warnings)
    logger.warn('configuration: deprecated form', {
      key: warning.key,
      line: warning.line,
      column: warning.column,
      message: warning.message,
    })
  const proxies = proxiesKeptInPlace(process.env)
  if (proxies.length > 0)
    logger.warn(
      "a proxy URL with a password stays in this server's environment block: Node reads it at start (NODE_USE_ENV_PROXY) and this Node cannot apply it later; the commands the server runs do not get it, but one that reads the server's /proc/<pid>/environ can",
      {
        variables: proxies,
        hint: 'run on Node 24.21 or later, which applies it after start, or use a proxy without a password in its URL',
      },
    )
  const variables = Object.keys({ ...secretsIn(process.env), ...credentialsIn(process.env) })
  if (process.pid === 1 && variables.length > 0)
    logger.warn(
      "secrets in the environment of pid 1 can be read by every command this server runs (a container's environment is its init's): give them as files instead (<VARIABLE>_FILE, e.g. Docker or Kubernetes secrets)",
      { variables },
    )
}

function portOption(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65_535)
    throw new InvalidArgumentError('expected a port from 0 to 65535 (0 picks a free one)')
  return Number(value)
}

/**
 * `lango serve` (HTTP API + MCP over HTTP + scheduler) and `lango mcp` (MCP over stdio). Both
 * keep running until a signal; logs are JSON lines on stderr. `serve` announces its address on
 * stderr (`lango listening on <url>`), or as one JSON document on stdout with `--json`; `mcp`
 * writes nothing on stdout but protocol messages.
 */
export const registerServe: Register = (program, action) => {
  program
    .command('serve')
    .description('run the server: HTTP API, /mcp, cron scheduler, workflows, background tasks')
    .option('--host <host>', 'address to bind (default 127.0.0.1; beyond loopback needs LANGO_API_TOKEN)')
    .option('--port <port>', 'port to listen on (default 7878; 0 picks a free one)', portOption)
    .action(
      action(async (context, _args, options) => {
        const env = {
          ...context.io.env,
          ...(options.host === undefined ? {} : { LANGO_HOST: options.host }),
          ...(options.port === undefined ? {} : { LANGO_PORT: String(options.port) }),
        }
        const [{ loadConfig }, { createLogger }, { serve, installShutdown }] = await Promise.all([
          import('../../config/load.js'),
          import('../../logger.js'),
          import('../../serve.js'),
        ])
        const config = await loadConfig({ env })
        const logger = createLogger({ level: config.logging.level })
        warnAtStart(config, logger)
        // serve() mounts /mcp itself, behind the same Host policy as every other route.
        const running = await serve({ config, logger })
        installShutdown(running, logger)
        const data = { status: 'listening', url: running.url }
        if (!context.out.json) {
          context.out.note(`lango listening on ${running.url}`)
          // A wildcard bind is announced by its loopback URL; say what else it listens on.
          if (new URL(running.url).hostname.replace(/^\[|\]$/g, '') !== config.server.host)
            context.out.note(
              `bound to ${config.server.host}: other machines reach it by the names listed in server.allowed_hosts`,
            )
        }
        return { data, keepRunning: true }
      }),
    )

  program
    .command('mcp')
    .description('serve every tool over MCP stdio, for Claude Desktop, IDEs and other MCP clients')
    .action(
      action(async (context) => {
        const [{ createLogger }, { serveMcpStdio }] = await Promise.all([
          import('../../logger.js'),
          import('../../mcp/stdio.js'),
        ])
        const config = await context.config()
        const logger = createLogger({ level: config.logging.level })
        warnAtStart(config, logger)
        await serveMcpStdio({ config, logger })
        // stdout belongs to the protocol: no document, even with --json.
        return { data: undefined, keepRunning: true, silent: true }
      }),
    )
}
