import { type AnyTool, toFunctionTool } from '@lango/tools'
import { Hono, type MiddlewareHandler } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { HTTPException } from 'hono/http-exception'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { sql } from 'kysely'
import type { App } from '../app/app.js'
import { ServerError } from '../errors.js'
import { registerUiRoutes } from '../ui/index.js'
import { VERSION } from '../version.js'
import { registerChatRoutes } from './chat.js'
import { eventStream } from './events.js'
import { bearerGuard, browserGuard, hostGuard } from './guards.js'
import { createHostPolicy } from './host-policy.js'
import { registerOperatorRoutes } from './operator.js'
import {
  bodyTooLarge,
  errorResponse,
  type HttpErrorCode,
  jsonContentType,
  jsonNestingExceeds,
  MAX_JSON_DEPTH,
  readJsonBody,
} from './responses.js'
import { callToolOverHttp } from './tool-call.js'

/** The MCP Streamable HTTP handler mounted at `/mcp` (src/mcp/http.ts). */
type McpRequestHandler = (request: Request) => Promise<Response>

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

/** One entry of `GET /api/tools`. */
function catalogueEntry(tool: AnyTool) {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    safety: tool.safety,
    worst_safety: tool.worstSafety ?? tool.safety,
    parameters: toFunctionTool(tool).function.parameters,
  }
}

/**
 * The server's HTTP API (apps/server/README.md, "HTTP API") over a wired {@link App}: `GET /healthz`,
 * the tool catalogue and tool calls under the approval policy, the operator REST routes,
 * server-sent events, the OpenAI-compatible `/v1`, the dashboard at `/ui`, and `/mcp` when a
 * handler is given. Every error is JSON `{error: {code, message}}`, never a stack trace. Every
 * route but `GET /healthz` answers only a `Host` the one Host policy accepts (src/http/host-policy.ts:
 * DNS rebinding) and, with `server.apiToken` set, only the bearer token; request bodies must be
 * JSON objects, declared `application/json`, within `server.bodyLimitBytes` (413) and
 * {@link MAX_JSON_DEPTH} levels.
 */
export function createHttpApp(app: App, options: HttpAppOptions = {}): Hono {
  const { config, logger } = app
  const http = new Hono()
  const createdAt = performance.now()
  const tools = new Map(app.tools.map((tool) => [tool.name, tool]))
  const catalogue = app.tools.map(catalogueEntry)
  let wasReady = false
  const notReadyStatus = (): 'starting' | 'stopping' =>
    wasReady || options.signal?.aborted === true ? 'stopping' : 'starting'

  http.onError((error, c) => {
    if (error instanceof HTTPException) {
      const status = error.status as ContentfulStatusCode
      if (status === 413)
        return errorResponse(c, 413, 'BODY_TOO_LARGE', bodyTooLarge(config.server.bodyLimitBytes))
      const code: HttpErrorCode = status === 400 ? 'INVALID_REQUEST' : 'HTTP_ERROR'
      return errorResponse(c, status, code, error.message || 'request failed')
    }
    if (error instanceof ServerError) {
      const status = error.code === 'SERVER_APPROVAL_NOT_FOUND' ? 404 : 500
      logger.warn('request failed', { method: c.req.method, path: c.req.path, error })
      return errorResponse(c, status, error.code, error.message)
    }
    // The log gets the code and message (the logger drops stacks and causes); the caller nothing more.
    logger.error('request failed', { method: c.req.method, path: c.req.path, error })
    return errorResponse(
      c,
      500,
      'INTERNAL_ERROR',
      'the server failed to handle this request; its log has the details',
    )
  })
  http.notFound((c) =>
    errorResponse(c, 404, 'NOT_FOUND', `no route ${c.req.method} ${c.req.path}; ${API_DOCS}`),
  )

  // First of all, on every route (the dashboard's too): a Host this server answers to.
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
  // Before the token: the dashboard's page and assets hold no data; its API calls send the token.
  registerUiRoutes(http, {
    tokenRequired: config.server.apiToken !== undefined && config.server.apiToken !== '',
  })
  if (config.server.apiToken !== undefined && config.server.apiToken !== '') {
    http.use('*', bearerGuard(config.server.apiToken))
  }
  const guard = browserGuard({ allowedOrigins: config.server.allowedOrigins })
  const json = jsonContentType()
  for (const path of ['/api/*', '/v1/*']) {
    http.use(path, guard)
    http.use(path, json)
  }
  // API bodies are bounded where they are read (readJsonBody); /mcp's web Request here.
  http.use(
    '/mcp',
    bodyLimit({
      maxSize: config.server.bodyLimitBytes,
      onError: (c) => errorResponse(c, 413, 'BODY_TOO_LARGE', bodyTooLarge(config.server.bodyLimitBytes)),
    }),
  )

  http.get('/healthz', async (c) => {
    const base = {
      version: VERSION,
      instance: app.instances.id,
      scheduler: !config.cron.enabled ? 'disabled' : app.cron.scheduler.isRunning ? 'running' : 'stopped',
      uptime_ms: Math.round(performance.now() - createdAt),
      /** The singleton duties' leases this instance holds (Telegram polling, retention). */
      leases: app.duties.held(),
      /** This instance's time against the database's (PostgreSQL), which every lease is compared on. */
      clock: app.clock.reading(),
    }
    if (!app.ready) return c.json({ status: notReadyStatus(), database: 'unknown', ...base }, 503)
    wasReady = true
    try {
      await sql`select 1`.execute(app.database.db)
    } catch (error) {
      logger.warn('health check: the database does not answer', { error })
      return c.json({ status: 'unavailable', database: 'unavailable', ...base }, 503)
    }
    return c.json({
      status: 'ok',
      version: VERSION,
      instance: base.instance,
      database: 'ok',
      database_kind: config.database.kind,
      scheduler: base.scheduler,
      uptime_ms: base.uptime_ms,
      leases: base.leases,
      clock: base.clock,
    })
  })

  // Past this point the services must be running: before start() or after stop() nothing is served.
  const readyGate: MiddlewareHandler = async (c, next) => {
    if (!app.ready) {
      const status = notReadyStatus()
      c.header('Retry-After', '1')
      return errorResponse(c, 503, 'SERVER_NOT_READY', `the server is ${status}; try again shortly`)
    }
    wasReady = true
    return next()
  }
  http.use('/api/*', readyGate)
  http.use('/v1/*', readyGate)
  http.use('/mcp', readyGate)

  http.get('/api/tools', (c) => c.json({ tools: catalogue, count: catalogue.length }))
  http.post('/api/tools/:name', async (c) => {
    const tool = tools.get(c.req.param('name'))
    if (tool === undefined) {
      return errorResponse(c, 404, 'TOOL_NOT_FOUND', 'no tool with that name; GET /api/tools lists the tools')
    }
    const body = await readJsonBody(c, config.server.bodyLimitBytes)
    if (!body.ok) return body.response
    return callToolOverHttp(c, app, tool, body.value, options.signal)
  })

  registerOperatorRoutes(http, app, options.signal)
  registerChatRoutes(http, app, options.signal)

  http.get('/api/events', (c) =>
    eventStream(c, app.events, {
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
      ...(options.maxQueuedEvents === undefined ? {} : { maxQueued: options.maxQueuedEvents }),
    }),
  )

  const mcp = options.mcp
  if (mcp !== undefined) http.all('/mcp', (c) => mcpWithinDepth(c.req.raw, mcp))

  return http
}

/** Where 404s and the CLI send readers for the routes: a document that is in the repository. */
const API_DOCS = 'see the HTTP API section of apps/server/README.md'

/**
 * Passes an MCP request on unless its body nests deeper than {@link MAX_JSON_DEPTH} (answered 400
 * as a JSON-RPC parse error, before the MCP SDK parses it). The body was bounded by `bodyLimit`.
 */
async function mcpWithinDepth(request: Request, mcp: McpRequestHandler): Promise<Response> {
  if (request.body === null) return mcp(request)
  const bytes = new Uint8Array(await request.arrayBuffer())
  if (jsonNestingExceeds(bytes, MAX_JSON_DEPTH)) {
    const message = `the request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`
    return Response.json(
      { jsonrpc: '2.0', id: null, error: { code: -32700, message, data: { code: 'BODY_TOO_DEEP' } } },
      { status: 400 },
    )
  }
  return mcp(
    new Request(request.url, {
      method: request.method,
      headers: request.headers,
      body: bytes,
      signal: request.signal,
    }),
  )
}
