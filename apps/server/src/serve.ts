import { setMaxListeners } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { constants } from 'node:os'
import { getRequestListener, RequestError } from '@hono/node-server'
import type { App } from './app/app.js'
import { createApp } from './app/create-app.js'
import type { ServerConfig } from './config/types.js'
import { ServerError } from './errors.js'
import { createHttpApp } from './http/app.js'
import { jsonRpcErrorBody } from './http/guards.js'
import { isLoopbackHost, isWildcardHost } from './http/host-policy.js'
import { openAiErrorBody } from './http/routes/openai.js'
import type { Logger } from './logger.js'
import type { McpHttpEndpoint } from './mcp/http.js'
import { routeWarnings } from './process-warnings.js'
import { VERSION } from './version.js'

/** A listening server: its URL (with the real port when `port` was 0), its services, and how to stop it. */
export interface RunningServer {
  /**
   * `http://<host>:<port>`, e.g. `http://127.0.0.1:7878`; for a wildcard bind (`0.0.0.0`, `::`)
   * the loopback address (`127.0.0.1`, `[::1]`), which this machine's clients use.
   */
  readonly url: string
  readonly app: App
  /** Stops accepting connections, lets requests in flight finish (briefly), then stops the services. Idempotent. */
  close(): Promise<void>
}

/** Options of {@link serve}. */
export interface ServeOptions {
  readonly config: ServerConfig
  readonly logger: Logger
  /** Opens the secrets vault; default `config.vault.passphrase` (`LANGO_PASSPHRASE`). */
  readonly passphrase?: string
  /** This machine's time in epoch milliseconds, fractions allowed; default `Date.now` (see `createApp`). */
  readonly localNow?: () => number
  /** How long `close()` waits for requests in flight before it cuts their connections. Default 2 s. */
  readonly closeGraceMs?: number
}

/**
 * `lango serve`: checks that the address is safe, binds it (so a taken port fails before anything
 * is opened or any job fires), opens and wires the services, starts them, and serves the HTTP API,
 * the dashboard and MCP Streamable HTTP at `/mcp` on `config.server.host:port`, every route behind
 * the one Host policy (src/http/host-policy.ts). `GET /healthz` answers 503 `starting` until the
 * services run.
 * Throws `SERVER_UNSAFE_BIND` for a non-loopback host without an API token, `SERVER_LISTEN_FAILED`
 * when the address cannot be bound, and whatever `createApp`/`start` throw; nothing stays open then.
 */
export async function serve(options: ServeOptions): Promise<RunningServer> {
  const { config, logger } = options
  const { host, port } = config.server
  if (!isLoopbackHost(host) && (config.server.apiToken === undefined || config.server.apiToken === '')) {
    throw new ServerError(
      'SERVER_UNSAFE_BIND',
      `refusing to listen on ${formatAddress(host, port)} without an API token: anyone who can reach that address could run commands on this machine. Set LANGO_API_TOKEN (or server.api_token in lango.yaml) to a long random value, or listen on 127.0.0.1`,
      { data: { host, port } },
    )
  }
  const shutdown = new AbortController()
  // Every call in flight listens to it (one listener each, removed when the call ends; a call
  // waiting for approval keeps its own): any number is normal, not a leak for Node to warn about.
  setMaxListeners(0, shutdown.signal)
  // Until the services run, every request is answered here: 503 `starting`.
  const startedAt = performance.now()
  // `env` is @hono/node-server's `{ incoming, outgoing }`: handlers read small bodies from the Node
  // request without building a web Request (src/http/responses.ts).
  let handle: (request: Request, env: unknown) => Response | Promise<Response> = (request) =>
    starting(request, startedAt)
  const server = createServer(
    getRequestListener((request: Request, env: unknown) => handle(request, env), {
      hostname: host,
      // A request the adaptor cannot turn into a URL (a Host with userinfo or a trailing dot after
      // its port, a backslash in the path) was answered an empty 400 and logged nowhere (issue 21).
      errorHandler: (error: unknown) => unreadableRequest(error, logger),
    }),
  )
  await listen(server, host, port)
  const address = server.address() as AddressInfo
  const url = `http://${formatHost(reachableHost(host))}:${address.port}`

  let app: App | undefined
  const mcp = lazyMcp(config, logger, address.port, shutdown.signal)
  // stderr carries JSON lines only: the AI SDK's and Node's warnings go through the logger too.
  const restoreWarnings = routeWarnings(logger)
  try {
    app = await createApp(config, logger, {
      ...(options.passphrase === undefined ? {} : { passphrase: options.passphrase }),
      ...(options.localNow === undefined ? {} : { localNow: options.localNow }),
    })
    const wired = app
    const http = createHttpApp(wired, {
      signal: shutdown.signal,
      port: address.port,
      mcp: (request) => mcp.handle(wired, request),
    })
    handle = (request, env) => http.fetch(request, env)
    await wired.start()
  } catch (error) {
    shutdown.abort()
    await closeServer(server, 0)
    await mcp.close()
    try {
      await app?.stop()
    } finally {
      restoreWarnings()
    }
    throw error
  }
  const running = app
  logger.info('listening', { url, bound: formatAddress(host, address.port) })

  let closing: Promise<void> | undefined
  return {
    url,
    app: running,
    close() {
      closing ??= (async () => {
        // Ends event streams and calls still running (a 202 left them waiting for approval).
        shutdown.abort()
        await closeServer(server, options.closeGraceMs ?? 2_000)
        await mcp.close()
        try {
          await running.stop()
        } finally {
          restoreWarnings()
        }
      })()
      return closing
    },
  }
}

/**
 * The answer to a request that could not be read as a URL (the adaptor's `RequestError`: an invalid
 * `Host`, a backslash in the path), as JSON like every other refusal, and logged; anything else
 * thrown before the app answered is a 500 `INTERNAL_ERROR`.
 */
function unreadableRequest(error: unknown, logger: Logger): Response {
  if (error instanceof RequestError) {
    logger.warn('request refused', { code: 'INVALID_REQUEST', reason: error.message })
    return Response.json(
      { error: { code: 'INVALID_REQUEST', message: `the request could not be read: ${error.message}` } },
      { status: 400 },
    )
  }
  logger.error('request failed before the app answered', { error })
  return Response.json({ error: { code: 'INTERNAL_ERROR', message: 'internal error' } }, { status: 500 })
}

/** How long a stop may take before the process exits anyway (a database that does not answer). */
const STOP_DEADLINE_MS = 30_000

/**
 * Stops the server on SIGINT, SIGTERM or SIGHUP (a closed terminal, a `kill -HUP` from a log
 * rotation or a reload: there is no config reload, so it stops as cleanly as for SIGTERM rather
 * than dying at once): `close()` (stop accepting, stop the scheduler, cancel
 * background tasks, kill exec process groups, close the database), then exit 0 (1 if closing
 * failed, or did not end within `deadlineMs`, default 30 s: a database that does not answer must
 * not keep a stopped server alive). A second signal exits at once, with the shell's code for it
 * (128 + its number: 143 for SIGTERM, 130 for SIGINT). Returns a function that removes the handlers.
 */
export function installShutdown(
  running: Pick<RunningServer, 'close'>,
  logger: Logger,
  options: { readonly deadlineMs?: number } = {},
): () => void {
  let stopping = false
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn('second signal: exiting now', { signal })
      process.exit(128 + (constants.signals[signal] ?? 0))
    }
    stopping = true
    logger.info('shutting down', { signal })
    const deadlineMs = options.deadlineMs ?? STOP_DEADLINE_MS
    const deadline = setTimeout(() => {
      logger.error('shutdown did not finish in time: exiting without it', { deadlineMs })
      process.exit(1)
    }, deadlineMs)
    deadline.unref()
    running.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error('shutdown failed', { error })
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  process.on('SIGHUP', onSignal)
  return () => {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    process.off('SIGHUP', onSignal)
  }
}

/**
 * `/mcp`, built on its first request: the MCP SDK (about 20 MiB resident) loads then, not at
 * start. Its own Host check is the server's policy too (the bound address, the real port,
 * `server.allowed_hosts`), so it agrees with the guard in front of it.
 */
function lazyMcp(config: ServerConfig, logger: Logger, port: number, signal: AbortSignal) {
  let endpoint: Promise<McpHttpEndpoint> | undefined
  return {
    async handle(app: App, request: Request): Promise<Response> {
      endpoint ??= import('./mcp/http.js').then(({ createMcpHttpHandler }) =>
        createMcpHttpHandler(app, {
          listenHost: config.server.host,
          port,
          allowedHosts: config.server.allowedHosts,
          allowedOrigins: config.server.allowedOrigins,
          signal,
        }),
      )
      return (await endpoint)(request)
    },
    /**
     * Ends exchanges in flight and denies what still waits for approval over MCP. Never rejects: a
     * failure is logged, and stopping the rest of the server goes on.
     */
    async close(): Promise<void> {
      try {
        await (await endpoint)?.close()
      } catch (error) {
        logger.warn('closing /mcp failed', { error })
      }
    },
  }
}

/** The address this machine's clients use for `host`: loopback for a wildcard bind. */
function reachableHost(host: string): string {
  if (!isWildcardHost(host)) return host
  return host.includes(':') ? '::1' : '127.0.0.1'
}

/** The answer to every request until the services run: `/healthz` in its own shape, the rest an error. */
function starting(request: Request, startedAt: number): Response {
  const headers = { 'Retry-After': '1' }
  if (new URL(request.url).pathname === '/healthz') {
    const uptime = Math.round(performance.now() - startedAt)
    return Response.json(
      { status: 'starting', version: VERSION, database: 'unknown', scheduler: 'stopped', uptime_ms: uptime },
      { status: 503, headers },
    )
  }
  // In the shape each route's clients read, as the app answers once it runs (OpenAI's under /v1,
  // JSON-RPC's at /mcp).
  const path = new URL(request.url).pathname
  const message = 'the server is starting; try again shortly'
  const body =
    path === '/v1' || path.startsWith('/v1/')
      ? openAiErrorBody('SERVER_NOT_READY', message, 503)
      : path === '/mcp'
        ? jsonRpcErrorBody(message, 'SERVER_NOT_READY')
        : { error: { code: 'SERVER_NOT_READY', message } }
  return Response.json(body, { status: 503, headers })
}

/** Binds the address; a taken or forbidden one is a `SERVER_LISTEN_FAILED` naming it. */
function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      server.off('listening', onListening)
      const address = formatAddress(host, port)
      const why =
        error.code === 'EADDRINUSE'
          ? `${address} is already in use (is another lango serve running?): stop that process or choose another port (LANGO_PORT, or server.port in lango.yaml)`
          : error.code === 'EACCES'
            ? `permission denied to listen on ${address}: choose a port above 1023`
            : error.code === 'EADDRNOTAVAIL'
              ? `${address} is not an address of this machine: check LANGO_HOST, or server.host in lango.yaml`
              : `cannot listen on ${address}: ${error.message}`
      reject(
        new ServerError('SERVER_LISTEN_FAILED', why, {
          cause: error,
          data: { host, port, errno: error.code ?? null },
        }),
      )
    }
    const onListening = (): void => {
      server.off('error', onError)
      resolve()
    }
    server.once('error', onError)
    server.once('listening', onListening)
    server.listen(port, host)
  })
}

/**
 * Stops accepting, closes idle keep-alive connections at once, and after `graceMs` cuts the
 * connections of requests still in flight (a long `workflow_run` wait, an event stream).
 */
function closeServer(server: Server, graceMs: number): Promise<void> {
  if (!server.listening) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), graceMs)
    server.close(() => {
      clearTimeout(timer)
      resolve()
    })
    server.closeIdleConnections()
  })
}

function formatHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}

function formatAddress(host: string, port: number): string {
  return `${formatHost(host)}:${port}`
}
