import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { MiddlewareHandler } from 'hono'
import type { Logger } from '../logger.js'
import { errorStatus } from './error-status.js'
import type { HostPolicy } from './host-policy.js'
import type { OriginPolicy } from './origin-policy.js'
import { errorResponse } from './responses.js'

/** SHA-256 first, so both sides have one length and the comparison time says nothing about the token. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest()
}

/** How often at most a wrong API token is logged: the first at once, then one line a minute with a count. */
const WRONG_TOKEN_LOG_MS = 60_000

/**
 * Requires `Authorization: Bearer <token>` on every request but `GET /healthz` (401 `AUTH_REQUIRED`
 * without it, `AUTH_INVALID` for a wrong one), compared in constant time. Neither the expected nor
 * the given token is ever echoed or logged. A wrong token is logged (a guess, or a client holding an
 * old token): the first at once, then at most one line per `logEveryMs` saying how many were
 * refused since, so a flood of guesses is one line a minute.
 */
export function bearerGuard(
  token: string,
  options: { readonly logger?: Logger; readonly logEveryMs?: number; readonly now?: () => number } = {},
): MiddlewareHandler {
  const expected = digest(token)
  const logEveryMs = options.logEveryMs ?? WRONG_TOKEN_LOG_MS
  let lastLoggedAt = Number.NEGATIVE_INFINITY
  let unlogged = 0
  const wrongToken = (method: string, path: string, from: string | undefined): void => {
    unlogged += 1
    const now = (options.now ?? performance.now.bind(performance))()
    if (options.logger === undefined || now - lastLoggedAt < logEveryMs) return
    options.logger.warn('request refused: wrong API token', {
      code: 'AUTH_INVALID',
      method,
      path,
      ...(from === undefined ? {} : { from }),
      refused: unlogged,
    })
    lastLoggedAt = now
    unlogged = 0
  }
  return async (c, next) => {
    if ((c.req.method === 'GET' || c.req.method === 'HEAD') && c.req.path === '/healthz') return next()
    const header = c.req.header('authorization')
    if (header === undefined || header.trim() === '') {
      c.header('WWW-Authenticate', 'Bearer realm="lango"')
      return errorResponse(
        c,
        'AUTH_REQUIRED',
        'this server needs an API token: send Authorization: Bearer <LANGO_API_TOKEN>',
      )
    }
    const match = /^Bearer +(\S+) *$/i.exec(header)
    if (match?.[1] === undefined || !timingSafeEqual(digest(match[1]), expected)) {
      const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming
      wrongToken(c.req.method, c.req.path, incoming?.socket.remoteAddress)
      c.header('WWW-Authenticate', 'Bearer realm="lango", error="invalid_token"')
      return errorResponse(
        c,
        'AUTH_INVALID',
        'the API token is wrong: send Authorization: Bearer <LANGO_API_TOKEN>',
      )
    }
    return next()
  }
}

/**
 * The `Host` check of every route but `GET /healthz` (which load balancers and probes call by
 * whatever address they have, and which holds nothing to steal): a request whose `Host` the
 * {@link HostPolicy} refuses is answered 403 `HOST_FORBIDDEN` before anything else runs, on
 * `/mcp` as a JSON-RPC error with the code in `data.code`.
 */
export function hostGuard(policy: HostPolicy, logger?: Logger): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.path === '/healthz') return next()
    const problem = policy.problem(c.req.header('host'))
    if (problem === undefined) return next()
    logger?.warn('request refused', { code: 'HOST_FORBIDDEN', method: c.req.method, path: c.req.path })
    // On `/mcp`, `jsonRpcErrors` (src/http/routes/mcp.ts) gives it JSON-RPC's shape, as every refusal there.
    return errorResponse(c, 'HOST_FORBIDDEN', problem)
  }
}

/** A JSON-RPC error as MCP clients read it (no request id known), with the API's code in `data.code`. */
export function jsonRpcErrorBody(message: string, apiCode: string, rpcCode = -32000) {
  return { jsonrpc: '2.0', id: null, error: { code: rpcCode, message, data: { code: apiCode } } } as const
}

/** A 403 as MCP clients read it (a JSON-RPC error), with the API's code in `data.code`. */
export function jsonRpcForbidden(code: 'HOST_FORBIDDEN' | 'ORIGIN_FORBIDDEN', message: string): Response {
  return Response.json(jsonRpcErrorBody(message, code), { status: errorStatus(code) })
}

/**
 * Browser protection for the API and `/v1`: a page on another site, or on another port of this
 * machine, could otherwise drive the server with cross-origin requests that need no preflight (a
 * POST without a body). An `Origin`, when present, must pass the {@link OriginPolicy}: this
 * request's own `scheme://Host` (the dashboard) or listed in `server.allowed_origins`; the `Host`
 * itself is {@link hostGuard}'s to check.
 */
export function browserGuard(policy: OriginPolicy, logger?: Logger): MiddlewareHandler {
  return async (c, next) => {
    const problem = policy.problem(c.req.header('origin'), c.req.url, c.req.header('host'))
    if (problem === undefined) return next()
    logger?.warn('request refused', { code: 'ORIGIN_FORBIDDEN', method: c.req.method, path: c.req.path })
    return errorResponse(c, 'ORIGIN_FORBIDDEN', problem)
  }
}
