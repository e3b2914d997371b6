import { loadConfig } from '../config/load.js'
import type { ServerConfig } from '../config/types.js'
import { ApiClient } from './client.js'
import { CliError, EXIT } from './errors.js'
import type { CliIo, Output } from './output.js'

/** Options every command takes (declared on the program, accepted after any subcommand). */
export interface GlobalOptions {
  /** `--json`: stdout carries one JSON document and nothing else. */
  readonly json: boolean
  /** `--url`: the server's base URL (else `LANGO_URL`, else the configured host and port). */
  readonly url: string | undefined
}

/** What a command's action gets: its streams, its output, and the configuration and client, loaded on demand. */
export interface CommandContext {
  readonly io: CliIo
  readonly out: Output
  readonly options: GlobalOptions
  /** `lango.yaml` + `LANGO_*`, loaded once; a `ConfigError` ends the command with its message (exit 1). */
  config(): Promise<ServerConfig>
  /** The HTTP client of the running server. */
  client(): Promise<ApiClient>
}

/** Builds a command's context; the configuration is read only if the command needs it. */
export function createContext(io: CliIo, out: Output, options: GlobalOptions): CommandContext {
  let config: Promise<ServerConfig> | undefined
  let client: Promise<ApiClient> | undefined
  const context: CommandContext = {
    io,
    out,
    options,
    config() {
      config ??= loadConfig({ env: io.env })
      return config
    },
    client() {
      client ??= (async () => {
        const fromOptions = options.url ?? nonEmpty(io.env.LANGO_URL)
        const tokenFromEnv = nonEmpty(io.env.LANGO_API_TOKEN)
        // Only read lango.yaml when it has something the command needs: the address or the token.
        const loaded =
          fromOptions !== undefined && tokenFromEnv !== undefined ? undefined : await context.config()
        const baseUrl =
          fromOptions === undefined ? serverUrlOf(loaded as ServerConfig) : checkUrl(fromOptions)
        return new ApiClient({ baseUrl, token: tokenFromEnv ?? loaded?.server.apiToken })
      })()
      return client
    },
  }
  return context
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim()
}

function checkUrl(value: string): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new CliError(
      'CLI_INVALID_OPTION',
      'the server URL (--url or LANGO_URL) must look like http://127.0.0.1:7878',
      {
        exitCode: EXIT.usage,
      },
    )
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CliError(
      'CLI_INVALID_OPTION',
      'the server URL (--url or LANGO_URL) must start with http:// or https://',
      {
        exitCode: EXIT.usage,
      },
    )
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`
}

/**
 * The URL a client on this machine reaches the configured server at: a wildcard bind address
 * (`0.0.0.0`, `::`) is reached over loopback, IPv6 literals get brackets.
 */
function serverUrlOf(config: ServerConfig): string {
  if (config.server.port === 0)
    throw new CliError(
      'CLI_INVALID_OPTION',
      'the configured port is 0 (a free port picked at start): pass --url or set LANGO_URL to the address `lango serve` printed',
      { exitCode: EXIT.usage },
    )
  let host = config.server.host
  if (host === '0.0.0.0' || host === '') host = '127.0.0.1'
  else if (host === '::' || host === '[::]') host = '::1'
  if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`
  return `http://${host}:${config.server.port}`
}
