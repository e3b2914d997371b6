import { Hono, type MiddlewareHandler } from 'hono'
import { cors } from 'hono/cors'
import { HTTPException } from 'hono/http-exception'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import type { App } from '../app/app.js'
import { ServerError } from '../errors.js'
import { registerUiRoutes } from '../ui/index.js'
import { allowedMethods } from './allowed-methods.js'
import { bearerGuard, browserGuard, hostGuard } from './guards.js'
import { createHostPolicy } from './host-policy.js'
import { createOriginPolicy, type OriginPolicy } from './origin-policy.js'
import { createReadiness } from './readiness.js'
import { bodyTooLarge, errorResponse, jsonContentType } from './responses.js'
import { approvalRoutes } from './routes/approvals.js'
import { backgroundRoutes } from './routes/background.js'
import { chatRoutes } from './routes/chat.js'
import { costRoutes } from './routes/cost.js'
import { cronRoutes } from './routes/cron.js'
import { eventRoutes } from './routes/events.js'
import { healthRoutes } from './routes/health.js'
import { hookRoutes } from './routes/hooks.js'
import { jsonRpcErrors, type McpRequestHandler, mcpRoutes } from './routes/mcp.js'
import { metricsRoutes } from './routes/metrics.js'
import { openAiErrors, openAiRoutes } from './routes/openai.js'
import { processRoutes } from './routes/processes.js'
import { toolRoutes } from './routes/tools.js'
import { workflowRoutes } from './routes/workflows.js'

/** Options of {@link createHttpApp}. */
export interface HttpAppOptions {
  /** Serves `/mcp` (every method) when given. */
  readonly mcp?: McpRequestHandler
  /**
   * The port the server listens on (a function for one known only once listening): a loopback or
   * bound `Host` must name it. Default: any port. `serve()` passes the real one.
   */
  readonly port?: number | (() => number | undefined)
  /**
   * Aborts on server shutdown: ends event streams and cancels calls still running, including those
   * a 202 left waiting for approval.
   */
  readonly signal?: AbortSignal
  /** Heartbeat interval of `GET /api/events`. Default 15 s. */
  readonly heartbeatMs?: number
  /** Events queued for one slow `GET /api/events` client before it is dropped. Default 1000. */
  readonly maxQueuedEvents?: number
}

/**
 * The server's HTTP API (apps/server/README.md, "HTTP API") over a wired {@link App}: `GET /healthz`,
 * the tool catalogue and tool calls under the approval policy, the operator REST routes,
 * server-sent events, the OpenAI-compatible `/v1`, the dashboard at `/ui`, `/mcp` when a
 * handler is given, and `GET /metrics` (Prometheus) unless `metrics.enabled` is false; each resource's routes are in src/http/routes/. Every error is JSON
 * `{error: {code, message}}` with the status of its code (src/http/error-status.ts), never a stack
 * trace. Every route but `GET /healthz` answers only a `Host` the one Host policy accepts
 * (src/http/host-policy.ts: DNS rebinding) and, with `server.apiToken` set, only the bearer token;
 * request bodies must be JSON objects, declared `application/json`, within `server.bodyLimitBytes`
 * (413) and `MAX_JSON_DEPTH` levels (src/http/responses.ts).
 */
export function createHttpApp(app: App, options: HttpAppOptions = {}): Hono {
  const { config, logger } = app
  const shutdown = options.signal
  const http = new Hono()
  const readiness = createReadiness(app, shutdown)

  http.onError((error, c) => {
    if (error instanceof HTTPException) {
      const status = error.status as ContentfulStatusCode
      if (status === 413)
        return errorResponse(c, 'BODY_TOO_LARGE', bodyTooLarge(config.server.bodyLimitBytes))
      if (status === 400) return errorResponse(c, 'INVALID_REQUEST', error.message || 'request failed')
      return errorResponse(c, 'HTTP_ERROR', error.message || 'request failed', {}, status)
    }
    if (error instanceof ServerError) {
      logger.warn('request failed', { method: c.req.method, path: c.req.path, error })
      return errorResponse(c, error.code, error.message)
    }
    // The log gets the code and message (the logger drops stacks and causes); the caller nothing more.
    logger.error('request failed', { method: c.req.method, path: c.req.path, error })
    return errorResponse(
      c,
      'INTERNAL_ERROR',
      'the server failed to handle this request; its log has the details',
    )
  })
  // A path that has routes, asked with a method it has none for: 405 with the methods it takes.
  const allowed = allowedMethods(http)
  http.notFound((c) => {
    const methods = allowed(c.req.path)
    if (methods.length === 0)
      return errorResponse(c, 'NOT_FOUND', `no route ${c.req.method} ${c.req.path}; ${API_DOCS}`)
    c.header('Allow', methods.join(', '))
    return errorResponse(
      c,
      'METHOD_NOT_ALLOWED',
      `${c.req.path} does not take ${c.req.method}; it takes ${methods.join(', ')}; ${API_DOCS}`,
    )
  })

  // Middleware applies to the routes mounted after it (Hono runs handlers in registration order).
  // Before anything else, so that refusals are counted too: the request metrics.
  if (app.metrics !== undefined) http.use('*', app.metrics.http)
  // First of all, on every route (the dashboard's too): a Host this server answers to.
  // Before every guard, so each of their refusals under /v1 takes OpenAI's shape too, and under
  // /mcp JSON-RPC's.
  http.use('/v1/*', openAiErrors(app))
  http.use('/mcp', jsonRpcErrors())
  http.use(
    '*',
    hostGuard(
      createHostPolicy({
        listenHost: config.server.host,
        allowedHosts: config.server.allowedHosts,
        ...(options.port === undefined ? {} : { port: options.port }),
      }),
      logger,
    ),
  )
  // Before the token: a hook call's signature is its authentication (src/http/routes/hooks.ts); the
  // services must run.
  http.use('/hooks/*', readiness.gate)
  http.route('/hooks', hookRoutes(app))
  // Before the token: the dashboard's page and assets hold no data; its API calls send the token.
  registerUiRoutes(http, {
    tokenRequired: config.server.apiToken !== undefined && config.server.apiToken !== '',
  })
  const origins = createOriginPolicy({ allowedOrigins: config.server.allowedOrigins })
  // Before the token: a page of an origin `server.allowed_origins` lists may read what it asked for
  // (CORS), and its preflight, which a browser sends without the token, is answered here.
  if (config.server.allowedOrigins.length > 0) {
    const listed = listedOriginsCors(origins)
    for (const path of ['/api/*', '/v1/*', '/mcp']) http.use(path, listed)
  }
  if (config.server.apiToken !== undefined && config.server.apiToken !== '') {
    http.use('*', bearerGuard(config.server.apiToken, { logger }))
  }
  const guard = browserGuard(origins, logger)
  const json = jsonContentType()
  for (const path of ['/api/*', '/v1/*']) {
    http.use(path, guard)
    http.use(path, json)
  }
  // Bodies are bounded where they are read: the API's by readJsonBody, /mcp's by its route.
  // Past this point the services must be running: before start() or after stop() nothing is served
  // (`GET /healthz` says which).
  http.use('/api/*', readiness.gate)
  http.use('/v1/*', readiness.gate)
  http.use('/mcp', readiness.gate)
  // A read's place in the event stream (`X-Lango-Event-Id`: the newest event when the read began): a
  // client that read before its stream was live reads again only when the stream's first id differs.
  http.use('/api/*', async (c, next) => {
    const head = c.req.method === 'GET' && c.req.path !== '/api/events' ? app.events.lastEventId : undefined
    await next()
    if (head !== undefined) c.res.headers.set('x-lango-event-id', head)
  })

  http.route('/', healthRoutes(app, readiness))
  http.route('/api/tools', toolRoutes(app, shutdown))
  http.route('/api/cron', cronRoutes(app, shutdown))
  http.route('/api/workflows', workflowRoutes(app, shutdown))
  http.route('/api/background', backgroundRoutes(app, shutdown))
  http.route('/api/processes', processRoutes(app, shutdown))
  http.route('/api/approvals', approvalRoutes(app))
  http.route('/api/cost', costRoutes(app))
  http.route('/api/chat', chatRoutes(app, shutdown))
  http.route('/v1', openAiRoutes(app, shutdown))
  http.route(
    '/api/events',
    eventRoutes(app, {
      ...(shutdown === undefined ? {} : { signal: shutdown }),
      ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
      ...(options.maxQueuedEvents === undefined ? {} : { maxQueued: options.maxQueuedEvents }),
    }),
  )
  if (options.mcp !== undefined) http.route('/mcp', mcpRoutes(options.mcp, config.server.bodyLimitBytes))
  // Behind the Host and token guards above; served while starting and stopping too (no readiness gate).
  if (app.metrics !== undefined) http.route('/metrics', metricsRoutes(app.metrics.scrape))

  return http
}

/** Where 404s and the CLI send readers for the routes: a document that is in the repository. */
const API_DOCS = 'see the HTTP API section of apps/server/README.md'

/**
 * CORS for pages of the origins the policy accepts (those `server.allowed_origins` lists; the
 * server's own pages are same-origin and need none): their preflight is answered at once (204, for the methods and headers the API, `/v1`
 * and `/mcp` use) and their answers carry `Access-Control-Allow-Origin`. A request from any other
 * origin goes on untouched, to be refused by the origin guard (`ORIGIN_FORBIDDEN`).
 */
function listedOriginsCors(origins: OriginPolicy): MiddlewareHandler {
  const handler = cors({
    origin: (origin) => origin,
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowHeaders: [
      'authorization',
      'content-type',
      'last-event-id',
      'mcp-protocol-version',
      'mcp-session-id',
    ],
    exposeHeaders: ['retry-after', 'www-authenticate', 'x-lango-event-id', 'mcp-session-id'],
    maxAge: 600,
  })
  return (c, next) => {
    const origin = c.req.header('origin')
    if (origin === undefined || origin === '') return next()
    if (origins.problem(origin, c.req.url, c.req.header('host')) !== undefined) return next()
    return handler(c, next)
  }
}
