import { createHash, timingSafeEqual } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import { errorResponse } from './responses.js'

/** True for an address or name that only this machine reaches: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  const lower = bare.toLowerCase()
  return (
    lower === 'localhost' ||
    lower.endsWith('.localhost') ||
    lower === '::1' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(lower) ||
    /^::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(lower)
  )
}

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
        401,
        'AUTH_REQUIRED',
        'this server needs an API token: send Authorization: Bearer <LANGO_API_TOKEN>',
      )
    }
    const match = /^Bearer +(\S+) *$/i.exec(header)
    if (match?.[1] === undefined || !timingSafeEqual(digest(match[1]), expected)) {
      c.header('WWW-Authenticate', 'Bearer realm="lango", error="invalid_token"')
      return errorResponse(
        c,
        401,
        'AUTH_INVALID',
        'the API token is wrong: send Authorization: Bearer <LANGO_API_TOKEN>',
      )
    }
    return next()
  }
}

/**
 * Browser protections for the API. A page on another site could otherwise drive a server on
 * 127.0.0.1 with simple cross-origin POSTs (no preflight), or through DNS rebinding: an `Origin`
 * must be a loopback one, listed in `server.allowed_origins`, or this request's own
 * `scheme://Host` (the dashboard at `/ui` reached by a LAN address), and while the server listens
 * on loopback the `Host` must be a loopback name too.
 */
export function browserGuard(options: {
  readonly listenHost: string
  readonly allowedOrigins: readonly string[]
}): MiddlewareHandler {
  const allowed = new Set(options.allowedOrigins.map((origin) => origin.toLowerCase().replace(/\/+$/, '')))
  const checkHost = isLoopbackHost(options.listenHost)
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
        403,
        'ORIGIN_FORBIDDEN',
        'requests from this web origin are not allowed: add it to server.allowed_origins in lango.yaml',
      )
    }
    if (checkHost) {
      const host = c.req.header('host')
      if (host !== undefined && !isLoopbackHost(hostName(host))) {
        return errorResponse(
          c,
          403,
          'HOST_FORBIDDEN',
          'this server listens on loopback and answers only to a loopback Host',
        )
      }
    }
    return next()
  }
}

/** `host[:port]` or `[v6]:port` without the port. */
function hostName(host: string): string {
  if (host.startsWith('[')) {
    const end = host.indexOf(']')
    return end === -1 ? host : host.slice(0, end + 1)
  }
  const colon = host.lastIndexOf(':')
  return colon === -1 || host.indexOf(':') !== colon ? host : host.slice(0, colon)
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
 * attacker's name, which the loopback Host check refuses while the server listens on loopback.
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
