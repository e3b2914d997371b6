import { lookup as dnsLookup } from 'node:dns'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import {
  type Clock,
  type PingDetails,
  type PingPhase,
  pingUrlFor,
  type RunMonitor,
  systemClock,
} from '@lango/cron'
import { type RetryPolicy, withRetry } from '../channels/retry.js'

/** Options of {@link HttpRunMonitor}. */
export interface HttpRunMonitorOptions {
  /**
   * Allow monitors on loopback, private (RFC 1918, CGNAT, IPv6 ULA) addresses, e.g. a self-hosted
   * healthchecks on the LAN. Default false. Link-local (cloud metadata at 169.254.169.254),
   * unspecified, multicast and reserved addresses are refused always.
   */
  readonly allowPrivateNetworks?: boolean
  /** One attempt's time limit. Default 3 s. */
  readonly attemptTimeoutMs?: number
  /** Retries of 429, 5xx and network errors. Default 3 attempts, 250 ms backoff, no `Retry-After` wait. */
  readonly retry?: RetryPolicy
  readonly clock?: Clock
  /** Host name resolution (default `dns.lookup`); tests may pin names. */
  readonly lookup?: LookupFunction
}

/** Addresses a ping never goes to: link-local (cloud metadata), unspecified, multicast, reserved. */
const ALWAYS_BLOCKED = new BlockList()
ALWAYS_BLOCKED.addSubnet('0.0.0.0', 8, 'ipv4')
ALWAYS_BLOCKED.addSubnet('169.254.0.0', 16, 'ipv4')
ALWAYS_BLOCKED.addSubnet('224.0.0.0', 4, 'ipv4')
ALWAYS_BLOCKED.addSubnet('240.0.0.0', 4, 'ipv4')
ALWAYS_BLOCKED.addAddress('::', 'ipv6')
ALWAYS_BLOCKED.addSubnet('fe80::', 10, 'ipv6')
ALWAYS_BLOCKED.addSubnet('ff00::', 8, 'ipv6')
ALWAYS_BLOCKED.addAddress('fd00:ec2::254', 'ipv6')

/** Loopback and private ranges, allowed only with `allowPrivateNetworks`. */
const PRIVATE = new BlockList()
PRIVATE.addSubnet('127.0.0.0', 8, 'ipv4')
PRIVATE.addSubnet('10.0.0.0', 8, 'ipv4')
PRIVATE.addSubnet('172.16.0.0', 12, 'ipv4')
PRIVATE.addSubnet('192.168.0.0', 16, 'ipv4')
PRIVATE.addSubnet('100.64.0.0', 10, 'ipv4')
PRIVATE.addAddress('::1', 'ipv6')
PRIVATE.addSubnet('fc00::', 7, 'ipv6')

/** Why an address is refused, or undefined when a ping may go there. */
function refusal(address: string, allowPrivateNetworks: boolean): string | undefined {
  // An IPv4-mapped IPv6 address (::ffff:127.0.0.1) is the IPv4 address.
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)?.[1]
  const plain = mapped ?? address
  const family = isIP(plain) === 6 ? 'ipv6' : 'ipv4'
  if (ALWAYS_BLOCKED.check(plain, family)) return 'a link-local, unspecified, multicast or reserved address'
  if (!allowPrivateNetworks && PRIVATE.check(plain, family)) {
    return 'a loopback or private address (set cron.ping_private_networks: true to allow)'
  }
  return undefined
}

/** A ping refused before any connection (the address policy) or answered with a status. */
class PingError extends Error {
  constructor(
    message: string,
    readonly retry: boolean,
  ) {
    super(message)
  }
}

/**
 * The server's {@link RunMonitor}: a healthchecks.io-style HTTP ping per run phase — `POST
 * <url>/start`, `POST <url>` (success), `POST <url>/fail` (failure) — with a short `text/plain` body
 * naming the job, the run, its status and exit code (never its output). Redirects are not
 * followed. The address is checked when the connection is made (after DNS, so a name that
 * resolves somewhere else later cannot slip through): link-local (cloud metadata), unspecified and
 * multicast addresses always fail, loopback and private ones unless `allowPrivateNetworks`. 429,
 * 5xx and network errors are retried a few times; the cron scheduler bounds the whole ping
 * (`pingTimeoutMs`) through `options.signal`. Errors never carry the URL (its path is the check's key).
 */
export class HttpRunMonitor implements RunMonitor {
  readonly #allowPrivate: boolean
  readonly #attemptTimeoutMs: number
  readonly #retry: RetryPolicy
  readonly #clock: Clock
  readonly #lookup: LookupFunction

  constructor(options: HttpRunMonitorOptions = {}) {
    this.#allowPrivate = options.allowPrivateNetworks ?? false
    this.#attemptTimeoutMs = options.attemptTimeoutMs ?? 3000
    this.#retry = { maxAttempts: 3, baseDelayMs: 250, maxDelayMs: 2000, maxRetryAfterMs: 0, ...options.retry }
    this.#clock = options.clock ?? systemClock
    this.#lookup = options.lookup ?? (dnsLookup as LookupFunction)
  }

  async ping(
    url: string,
    phase: PingPhase,
    options: { readonly signal: AbortSignal; readonly details: PingDetails },
  ): Promise<void> {
    const { signal } = options
    signal.throwIfAborted()
    const target = new URL(pingUrlFor(url, phase))
    const body = pingBody(phase, options.details)
    let attempts = 0
    try {
      await withRetry(
        async () => {
          attempts += 1
          await this.#post(target, body, signal)
        },
        {
          ...this.#retry,
          clock: this.#clock,
          signal,
          classify: (error) => ({ retry: !(error instanceof PingError) || error.retry }),
        },
      )
    } catch (error) {
      if (signal.aborted) throw signal.reason
      const what =
        error instanceof PingError ? error.message : `could not reach ${target.host}: ${networkCode(error)}`
      throw new Error(`ping ${phase} failed after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${what}`)
    }
  }

  /** One POST; resolves on a 2xx status, without reading the body. */
  #post(target: URL, body: string, signal: AbortSignal): Promise<void> {
    const attempt = AbortSignal.any([signal, AbortSignal.timeout(this.#attemptTimeoutMs)])
    const allowPrivate = this.#allowPrivate
    const resolve = this.#lookup
    // Checked after resolution, on the address the socket connects to.
    const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
      resolve(hostname, lookupOptions, (error, address, family) => {
        if (error !== null) return callback(error, address, family)
        const addresses = Array.isArray(address) ? address : [{ address, family: family ?? 4 }]
        for (const entry of addresses) {
          const why = refusal(entry.address, allowPrivate)
          if (why !== undefined) {
            return callback(new PingError(`${target.hostname} resolves to ${why}`, false), address, family)
          }
        }
        callback(null, address, family)
      })
    }
    // A literal IP address is not looked up: check it here.
    const literal = target.hostname.replace(/^\[|\]$/g, '')
    if (isIP(literal) !== 0) {
      const why = refusal(literal, allowPrivate)
      if (why !== undefined) return Promise.reject(new PingError(`${target.host} is ${why}`, false))
    }
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest
    return new Promise<void>((done, fail) => {
      const request = send(
        target,
        {
          method: 'POST',
          signal: attempt,
          lookup,
          headers: {
            'content-type': 'text/plain; charset=utf-8',
            'content-length': Buffer.byteLength(body),
            'user-agent': 'lango-cron-ping/1',
          },
        },
        (response: IncomingMessage) => {
          const status = response.statusCode ?? 0
          // The body is not needed (healthchecks answers "OK"): drop the connection's rest.
          response.destroy()
          if (status >= 200 && status < 300) return done()
          fail(new PingError(`HTTP ${status}`, status === 429 || status >= 500))
        },
      )
      request.on('error', fail)
      request.end(body)
    })
  }
}

/** The ping's body: who and what, never output or error text (they may hold secrets). */
function pingBody(phase: PingPhase, details: PingDetails): string {
  const what =
    phase === 'start'
      ? 'started'
      : `${details.status ?? (phase === 'success' ? 'completed' : 'failed')}${
          details.exitCode === undefined ? '' : ` (exit code ${details.exitCode})`
        }${details.durationMs === undefined ? '' : ` in ${details.durationMs} ms`}`
  return `lango cron job ${details.jobName}, run ${details.runId}: ${what}\n`
}

/** A network error's code (ECONNREFUSED, ETIMEDOUT …) or its name; never a URL. */
function networkCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string' && /^[A-Z_]{2,40}$/.test(code)) return code
  return error instanceof Error ? error.name : 'error'
}
