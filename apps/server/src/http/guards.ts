import { createHash, timingSafeEqual } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import type { Logger } from '../logger.js'
import { errorStatus } from './error-status.js'
import { type HostPolicy, isLoopbackHost } from './host-policy.js'
import { errorResponse } from './responses.js'

/** SHA-256 first, so both sides have one length and the comparison time says nothing about the token. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest()
}

/**
 * Requires `Authorization: Bearer <token>` on every request but `GET /healthz` (401 `AUTH_REQUIRED`
 * without it, `AUTH_INVALID` for a wrong one), compared in constant time. Neither the expected nor
 * the given token is ever echoed or logged.
 */
export function bearerGuard(token: string): MiddlewareHandler {
  const expected = digest(token)
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
    if (c.req.path === '/mcp') return jsonRpcForbidden('HOST_FORBIDDEN', problem)
    return errorResponse(c, 'HOST_FORBIDDEN', problem)
  }
}

/** A 403 as MCP clients read it (a JSON-RPC error), with the API's code in `data.code`. */
export function jsonRpcForbidden(code: 'HOST_FORBIDDEN' | 'ORIGIN_FORBIDDEN', message: string): Response {
  return Response.json(
    { jsonrpc: '2.0', id: null, error: { code: -32000, message, data: { code } } },
    { status: errorStatus(code) },
  )
}

/**
 * Browser protection for the API: a page on another site could otherwise drive the server with
 * simple cross-origin POSTs (no preflight). An `Origin` must be a loopback one, listed in
 * `server.allowed_origins`, or this request's own `scheme://Host` (the dashboard at `/ui` reached
 * by a name in `server.allowed_hosts`); the `Host` itself is {@link hostGuard}'s to check.
 */
export function browserGuard(options: { readonly allowedOrigins: readonly string[] }): MiddlewareHandler {
  const allowed = new Set(options.allowedOrigins.map((origin) => origin.toLowerCase().replace(/\/+$/, '')))
  return async (c, next) => {
    const origin = c.req.header('origin')
    if (
      origin !== undefined &&
      !allowed.has(origin.toLowerCase()) &&
      !isLoopbackOrigin(origin) &&
      !isSameOrigin(origin, c.req.url, c.req.header('host'))
    ) {
      return errorResponse(
        c,
        'ORIGIN_FORBIDDEN',
        'requests from this web origin are not allowed: add it to server.allowed_origins in lango.yaml',
      )
    }
    return next()
  }
}

function isLoopbackOrigin(origin: string): boolean {
  try {
    const url = new URL(origin)
    return (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.hostname)
  } catch {
    return false
  }
}

/**
 * True when `origin` is the request's own `scheme://host[:port]`: the page was served by this
 * server at the address the browser used. The scheme is the connection's (a server behind a TLS
 * proxy lists its public origin in `server.allowed_origins`). Under DNS rebinding the Host is the
 * attacker's name, which {@link hostGuard} refused before this runs.
 */
function isSameOrigin(origin: string, requestUrl: string, host: string | undefined): boolean {
  try {
    const own = new URL(requestUrl)
    const given = new URL(origin)
    if (given.origin === 'null' || given.protocol !== own.protocol) return false
    return given.host === (host === undefined ? own.host : new URL(`${own.protocol}//${host}`).host)
  } catch {
    return false
  }
}
