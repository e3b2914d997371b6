import { isUtf8 } from 'node:buffer'
import { type Context, Hono, type MiddlewareHandler } from 'hono'
import { errorStatus } from '../error-status.js'
import { jsonRpcErrorBody } from '../guards.js'
import {
  bodyTooLarge,
  jsonNestingExceeds,
  MAX_JSON_DEPTH,
  readBounded,
  reshapeErrors,
  tooLargeResponse,
} from '../responses.js'

/** The MCP Streamable HTTP handler mounted at `/mcp` (src/mcp/http.ts). */
export type McpRequestHandler = (request: Request) => Promise<Response>

/**
 * Every error of the layers in front of `/mcp` (the Host guard, the bearer token, readiness) as a
 * JSON-RPC error, the API's code in `data.code`, as MCP clients read errors (an outside probe got
 * the API's shape).
 */
export function jsonRpcErrors(): MiddlewareHandler {
  return reshapeErrors((error) => jsonRpcErrorBody(error.message, error.code))
}

/**
 * MCP over Streamable HTTP, mounted at `/mcp` (every method): `mcp` answers. A body beyond
 * `maxBytes` is answered 413 as a JSON-RPC error once the rest is dropped (the connection stays
 * usable), one nested deeper than {@link MAX_JSON_DEPTH} or not UTF-8 400, before the MCP
 * SDK parses anything.
 */
export function mcpRoutes(mcp: McpRequestHandler, maxBytes: number): Hono {
  const routes = new Hono()
  routes.all('/', (c) => mcpWithinLimits(c, mcp, maxBytes))
  return routes
}

async function mcpWithinLimits(c: Context, mcp: McpRequestHandler, maxBytes: number): Promise<Response> {
  const request = c.req.raw
  // Methods without a body (GET and DELETE answer 405 anyway): nothing to bound. The body is read
  // from the Node request itself, which `request.body` would turn into a web stream first.
  if (request.method === 'GET' || request.method === 'HEAD' || request.method === 'DELETE')
    return mcp(request)
  const tooLarge = () =>
    tooLargeResponse(c, () =>
      Response.json(jsonRpcErrorBody(bodyTooLarge(maxBytes), 'BODY_TOO_LARGE', -32600), {
        status: errorStatus('BODY_TOO_LARGE'),
      }),
    )
  if (Number(c.req.header('content-length') ?? 0) > maxBytes) return tooLarge()
  const bytes = await readBounded(c, maxBytes)
  if (bytes === undefined) return tooLarge()
  if (jsonNestingExceeds(bytes, MAX_JSON_DEPTH)) {
    const message = `the request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`
    return Response.json(jsonRpcErrorBody(message, 'BODY_TOO_DEEP', -32700), {
      status: errorStatus('BODY_TOO_DEEP'),
    })
  }
  // The SDK would read bytes that are not UTF-8 with U+FFFD in their place: a tool would run other
  // text than was sent (a command with another byte). Refused as the API refuses them.
  if (!isUtf8(bytes)) {
    const message = 'the request body is not valid UTF-8: send JSON encoded as UTF-8'
    return Response.json(jsonRpcErrorBody(message, 'INVALID_JSON', -32700), {
      status: errorStatus('INVALID_JSON'),
    })
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
