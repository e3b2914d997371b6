import { createMcpHandler } from '@modelcontextprotocol/server'
import type { App } from '../app.js'
import { McpApprovals } from './approval.js'
import { createMcpServer } from './server.js'

/** Options for {@link createMcpHttpHandler}. */
export interface McpHttpHandlerOptions {
  /**
   * Hosts a `Host` header may name besides loopback ones: `name` (any port) or `name:port`. For a
   * server bound beyond loopback, list the names clients use to reach it. Default none.
   */
  readonly allowedHosts?: readonly string[]
  /**
   * Browser origins allowed besides loopback ones, as `scheme://host[:port]`
   * (`config.server.allowedOrigins`). Default none.
   */
  readonly allowedOrigins?: readonly string[]
  /**
   * The port the server listens on: a loopback `Host` must name it (a page on another local port
   * cannot borrow the name). A function for a port known only once listening (port 0). Default:
   * any port.
   */
  readonly port?: number | (() => number | undefined)
  /** The second approval step over MCP. Default one on `config.approvals.mcp_policy`. */
  readonly approval?: McpApprovals
  /** Request bodies beyond this are answered 413. Default `config.server.bodyLimitBytes`. */
  readonly maxRequestBodySize?: number
}

/** A web-standard MCP endpoint: `(request) => response`, and `close()` for in-flight exchanges. */
export interface McpHttpEndpoint {
  (request: Request): Promise<Response>
  /** Aborts in-flight exchanges and denies what is still pending approval. */
  close(): Promise<void>
}

/** Names that reach only this machine, as the `Host` header and `URL.hostname` spell them. */
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * MCP Streamable HTTP, stateless (a fresh server per request from {@link createMcpServer}; both
 * protocol eras; GET and DELETE answer 405), for `/mcp` (mount it on any path: it does not read
 * the path). Before anything is parsed, a DNS-rebinding guard: the `Host` must be a loopback name
 * on the bound port, or listed in `allowedHosts`; an `Origin`, when present, must be a loopback one
 * or listed in `allowedOrigins`. Anything else is answered 403 with a JSON-RPC error whose `data.code`
 * is `HOST_FORBIDDEN` or `ORIGIN_FORBIDDEN`. Bearer tokens are the HTTP layer's job, in front.
 */
export function createMcpHttpHandler(app: App, options: McpHttpHandlerOptions = {}): McpHttpEndpoint {
  const approval = options.approval ?? new McpApprovals(app)
  const hosts = new Set((options.allowedHosts ?? []).map((host) => host.toLowerCase()))
  const origins = new Set((options.allowedOrigins ?? []).flatMap((origin) => URL.parse(origin)?.origin ?? []))
  const port = options.port
  const handler = createMcpHandler(() => createMcpServer(app, { approval }), {
    maxRequestBodySize: options.maxRequestBodySize ?? app.config.server.bodyLimitBytes,
    onerror: (error) => app.logger.debug('mcp http request rejected', { error }),
  })
  const refuse = (code: 'HOST_FORBIDDEN' | 'ORIGIN_FORBIDDEN', message: string): Response => {
    app.logger.warn('mcp request refused', { code })
    return forbidden(code, message)
  }
  const endpoint = async (request: Request): Promise<Response> => {
    const hostProblem = checkHost(
      request.headers.get('host'),
      hosts,
      typeof port === 'function' ? port() : port,
    )
    if (hostProblem !== undefined) return refuse('HOST_FORBIDDEN', hostProblem)
    const originProblem = checkOrigin(request.headers.get('origin'), origins)
    if (originProblem !== undefined) return refuse('ORIGIN_FORBIDDEN', originProblem)
    return handler.fetch(request)
  }
  return Object.assign(endpoint, {
    async close() {
      approval.close()
      await handler.close()
    },
  })
}

/** What is wrong with the `Host` header, or undefined when it may pass. */
function checkHost(
  header: string | null,
  allowed: ReadonlySet<string>,
  port: number | undefined,
): string | undefined {
  const accepted = `accepted: localhost, 127.0.0.1 or [::1]${port === undefined ? '' : ` on port ${port}`}${
    allowed.size === 0 ? '' : `, or ${[...allowed].join(', ')}`
  }`
  if (header === null || header === '') return `a Host header is required (${accepted})`
  // Only `name[:port]`: anything more (a path, credentials, a query) is not a Host.
  const url = /[\s/\\@?#]/.test(header) ? null : URL.parse(`http://${header}`)
  if (url === null)
    return `the Host header ${JSON.stringify(header.slice(0, 100))} is not a host name (${accepted})`
  const name = url.hostname.toLowerCase()
  const hostPort = url.port === '' ? 80 : Number(url.port)
  if (allowed.has(name) || allowed.has(`${name}:${hostPort}`)) return undefined
  if (LOOPBACK_NAMES.has(name) && (port === undefined || hostPort === port)) return undefined
  return `the Host ${JSON.stringify(header.slice(0, 100))} is not allowed (${accepted}); a web page must not reach this server through a name it controls`
}

/** What is wrong with the `Origin` header, or undefined when there is none or it may pass. */
function checkOrigin(header: string | null, allowed: ReadonlySet<string>): string | undefined {
  if (header === null || header === '') return undefined
  const url = URL.parse(header)
  if (url !== null && allowed.has(url.origin)) return undefined
  if (
    url !== null &&
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    LOOPBACK_NAMES.has(url.hostname)
  )
    return undefined
  return `requests from the web origin ${JSON.stringify(header.slice(0, 200))} are not allowed: add it to server.allowed_origins in lango.yaml`
}

/** A 403 as MCP clients read it (a JSON-RPC error), with the API's code in `data.code`. */
function forbidden(code: 'HOST_FORBIDDEN' | 'ORIGIN_FORBIDDEN', message: string): Response {
  return Response.json(
    { jsonrpc: '2.0', id: null, error: { code: -32000, message, data: { code } } },
    { status: 403 },
  )
}
