/**
 * Which browser origins may call the server: its defence against cross-site requests that need no
 * preflight (a POST without a body, a form post), which a page on any site, or on another port of
 * this machine, could otherwise send. One policy for the API, `/v1` and `/mcp`.
 */
export interface OriginPolicy {
  /**
   * Why a request with this `Origin` must not be answered, or undefined when it may be (no
   * `Origin`: not a browser's cross-origin request). `requestUrl` is the URL the request reached
   * (its scheme is the connection's); `host` its `Host` header, already checked by the host policy.
   */
  problem(
    origin: string | null | undefined,
    requestUrl: string,
    host: string | null | undefined,
  ): string | undefined
}

/** `scheme://host[:port]` as `URL.origin` spells it (lowercase, no default port), or undefined. */
function normalise(origin: string): string | undefined {
  const url = URL.parse(origin)
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) return undefined
  return url.origin
}

/**
 * Accepted: the request's own origin (`scheme://Host`: the dashboard, reached by whatever name the
 * host policy let through) and what `allowedOrigins` lists (`server.allowed_origins`). A page on
 * another port is another origin, loopback or not (a dev server, another tool's UI): it must be
 * listed. `null` (a sandboxed frame, a file) and any other scheme are refused.
 */
export function createOriginPolicy(
  options: { readonly allowedOrigins?: readonly string[] } = {},
): OriginPolicy {
  const allowed = new Set((options.allowedOrigins ?? []).flatMap((origin) => normalise(origin) ?? []))
  return {
    problem(origin, requestUrl, host) {
      if (origin === undefined || origin === null || origin === '') return undefined
      const given = normalise(origin)
      if (given !== undefined && (allowed.has(given) || given === ownOrigin(requestUrl, host)))
        return undefined
      return `requests from the web origin ${JSON.stringify(origin.slice(0, 200))} are not allowed: only this server's own pages may call it, and the origins listed in server.allowed_origins in lango.yaml (add it there, as scheme://host:port)`
    },
  }
}

/** The origin a page served by this server at the address the browser used has. */
function ownOrigin(requestUrl: string, host: string | null | undefined): string | undefined {
  const own = URL.parse(requestUrl)
  if (own === null) return undefined
  if (host === undefined || host === null || host === '') return own.origin
  return URL.parse(`${own.protocol}//${host}`)?.origin ?? undefined
}
