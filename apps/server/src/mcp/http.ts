import { createMcpHandler } from '@modelcontextprotocol/server'
import type { App } from '../app/app.js'
import { jsonRpcForbidden } from '../http/guards.js'
import { createHostPolicy, type HostPolicyOptions } from '../http/host-policy.js'
import { createOriginPolicy } from '../http/origin-policy.js'
import { McpApprovals } from './approval.js'
import { createMcpServer } from './server.js'

/** Options for {@link createMcpHttpHandler}. */
export interface McpHttpHandlerOptions extends HostPolicyOptions {
  /**
   * Browser origins allowed besides the request's own, as `scheme://host[:port]`
   * (`config.server.allowedOrigins`). Default none.
   */
  readonly allowedOrigins?: readonly string[]
  /** The second approval step over MCP. Default one on `config.approvals.mcp_policy`. */
  readonly approval?: McpApprovals
  /** Request bodies beyond this are answered 413. Default `config.server.bodyLimitBytes`. */
  readonly maxRequestBodySize?: number
  /**
   * The server stopping: every call in flight is cancelled and answered while its stream is still
   * open, instead of the stream being cut with no answer.
   */
  readonly signal?: AbortSignal
}

/** A web-standard MCP endpoint: `(request) => response`, and `close()` for in-flight exchanges. */
export interface McpHttpEndpoint {
  (request: Request): Promise<Response>
  /** Aborts in-flight exchanges and denies what is still pending approval. */
  close(): Promise<void>
}

/**
 * MCP Streamable HTTP, stateless (a fresh server per request from {@link createMcpServer}; both
 * protocol eras; GET and DELETE answer 405), for `/mcp` (mount it on any path: it does not read
 * the path). Before anything is parsed, a DNS-rebinding guard: the `Host` must pass the server's
 * one Host policy (src/http/host-policy.ts: a loopback name on `port`, the bound `listenHost`, or
 * what `allowedHosts` lists); an `Origin`, when present, the API's one Origin policy
 * (src/http/origin-policy.ts: the request's own origin, or listed in `allowedOrigins`). Anything else is answered 403 with a JSON-RPC error whose `data.code`
 * is `HOST_FORBIDDEN` or `ORIGIN_FORBIDDEN`. Bearer tokens are the HTTP layer's job, in front.
 */
export function createMcpHttpHandler(app: App, options: McpHttpHandlerOptions = {}): McpHttpEndpoint {
  const approval = options.approval ?? new McpApprovals(app)
  const hosts = createHostPolicy(options)
  const origins = createOriginPolicy({ allowedOrigins: options.allowedOrigins ?? [] })
  const { signal } = options
  const handler = createMcpHandler(
    () => createMcpServer(app, { approval, ...(signal === undefined ? {} : { signal }) }),
    {
      maxRequestBodySize: options.maxRequestBodySize ?? app.config.server.bodyLimitBytes,
      onerror: (error) => app.logger.debug('mcp http request rejected', { error }),
    },
  )
  const refuse = (code: 'HOST_FORBIDDEN' | 'ORIGIN_FORBIDDEN', message: string): Response => {
    app.logger.warn('mcp request refused', { code })
    return jsonRpcForbidden(code, message)
  }
  const endpoint = async (request: Request): Promise<Response> => {
    const hostProblem = hosts.problem(request.headers.get('host'))
    if (hostProblem !== undefined) return refuse('HOST_FORBIDDEN', hostProblem)
    const originProblem = origins.problem(
      request.headers.get('origin'),
      request.url,
      request.headers.get('host'),
    )
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
