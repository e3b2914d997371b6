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

/** True for a bind address that listens on every interface: `0.0.0.0`, `::` (however spelled). */
export function isWildcardHost(host: string): boolean {
  const name = parseHost(host.includes(':') && !host.startsWith('[') ? `[${host}]` : host)?.name
  return name === '0.0.0.0' || name === '[::]'
}

/** Options of {@link createHostPolicy}. */
export interface HostPolicyOptions {
  /**
   * The address the server is bound to (`server.host`). A loopback one adds no name of its own, a
   * wildcard (`0.0.0.0`, `::`) none either (which names reach it only the operator knows), any
   * other address or name is accepted on `port`. Default none.
   */
  readonly listenHost?: string
  /**
   * The port the server listens on: a loopback or bound name must come with it (a page served on
   * another local port cannot borrow the name). A function for a port known only once listening
   * (port 0). Default: any port.
   */
  readonly port?: number | (() => number | undefined)
  /**
   * `server.allowed_hosts`: the names clients use besides those, as `name` (any port: a proxy in
   * front may use its own) or `name:port`. Default none.
   */
  readonly allowedHosts?: readonly string[]
}

/** Which `Host` headers the server answers: its defence against DNS rebinding. */
export interface HostPolicy {
  /** Why a request with this `Host` header must not be answered, or undefined when it may be. */
  problem(header: string | null | undefined): string | undefined
}

/** A `Host` header's name (lowercase, an IPv6 address in brackets) and port (80 when absent). */
interface ParsedHost {
  readonly name: string
  readonly port: number | undefined
}

/** `name[:port]` as the `Host` header spells it; anything more (a path, credentials, a query) is not a Host. */
function parseHost(value: string): ParsedHost | undefined {
  if (value === '' || /[\s/\\@?#]/.test(value)) return undefined
  const url = URL.parse(`http://${value}`)
  if (url === null || url.hostname === '') return undefined
  return { name: url.hostname.toLowerCase(), port: url.port === '' ? undefined : Number(url.port) }
}

/**
 * The one `Host` check of every route the server answers (the API, `/v1`, `/ui` and `/mcp`): a
 * browser tricked by DNS rebinding sends the attacker's name as `Host`, so only names this server
 * is known by pass. Accepted: loopback names (`localhost`, `*.localhost`, `127.0.0.0/8`, `[::1]`)
 * on the server's port; the bound address on that port when it is neither loopback nor a wildcard;
 * and what `allowedHosts` lists. A server bound to a wildcard (`0.0.0.0`, `::`) therefore answers
 * loopback names and the listed names only: the names its LAN or proxy clients use must be listed
 * in `server.allowed_hosts`. A request without a `Host` is refused.
 */
export function createHostPolicy(options: HostPolicyOptions = {}): HostPolicy {
  const allowed = (options.allowedHosts ?? []).flatMap((entry) => parseHost(entry.toLowerCase()) ?? [])
  const listen = options.listenHost
  const bound =
    listen === undefined || isLoopbackHost(listen) || isWildcardHost(listen)
      ? undefined
      : parseHost(listen.includes(':') && !listen.startsWith('[') ? `[${listen}]` : listen)?.name
  const portOf = typeof options.port === 'function' ? options.port : () => options.port as number | undefined
  const describe = (port: number | undefined): string => {
    const on = port === undefined ? '' : ` on port ${port}`
    const names = [
      `localhost, 127.0.0.1 or [::1]${on}`,
      ...(bound === undefined ? [] : [`${bound}${on}`]),
      ...allowed.map((entry) => (entry.port === undefined ? entry.name : `${entry.name}:${entry.port}`)),
    ]
    return `accepted: ${names.join(', ')}`
  }
  return {
    problem(header) {
      const port = portOf()
      if (header === null || header === undefined || header === '')
        return `a Host header is required (${describe(port)})`
      const quoted = JSON.stringify(header.slice(0, 100))
      const given = parseHost(header)
      if (given === undefined) return `the Host header ${quoted} is not a host name (${describe(port)})`
      const givenPort = given.port ?? 80
      if (allowed.some((entry) => entry.name === given.name && (entry.port ?? givenPort) === givenPort))
        return undefined
      const onPort = port === undefined || givenPort === port
      if (onPort && (isLoopbackHost(given.name) || given.name === bound)) return undefined
      return `the Host ${quoted} is not one this server answers to (${describe(port)}); a web page must not reach it through a name the page controls. Add the name clients use to server.allowed_hosts in lango.yaml`
    },
  }
}
