import { Hono } from 'hono'
import { errorStatus } from '../error-status.js'
import { jsonNestingExceeds, MAX_JSON_DEPTH } from '../responses.js'

/** The MCP Streamable HTTP handler mounted at `/mcp` (src/mcp/http.ts). */
export type McpRequestHandler = (request: Request) => Promise<Response>

/** MCP over Streamable HTTP, mounted at `/mcp` (every method): `mcp` answers. */
export function mcpRoutes(mcp: McpRequestHandler): Hono {
  const routes = new Hono()
  routes.all('/', (c) => mcpWithinDepth(c.req.raw, mcp))
  return routes
}

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
      { status: errorStatus('BODY_TOO_DEEP') },
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
