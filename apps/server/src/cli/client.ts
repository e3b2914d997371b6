import { ApiError, CliError, type CliIssue, EXIT } from './errors.js'

/** Options of {@link ApiClient}. */
export interface ApiClientOptions {
  /** e.g. `http://127.0.0.1:7878`, no trailing slash needed. */
  readonly baseUrl: string
  /** Sent as `Authorization: Bearer …` when set. */
  readonly token?: string | undefined
  /** Per request (default 30 s). */
  readonly timeoutMs?: number
}

/** Query values; `undefined` ones are left out. */
type Query = Readonly<Record<string, string | number | undefined>>

/** One call: its query, JSON body and timeout. */
export interface RequestOptions {
  readonly query?: Query
  readonly body?: unknown
  readonly timeoutMs?: number
  readonly signal?: AbortSignal
}

const DEFAULT_TIMEOUT_MS = 30_000

/**
 * The `lango` CLI's client of the server's JSON API (apps/server/README.md, "HTTP API"). Every failure is a
 * typed error: `CliError` `CLI_SERVER_NOT_RUNNING` (exit 3) when nothing listens at the URL,
 * `ApiError` for the server's `{ error: { code, message, issues } }`. The token never appears
 * in a message.
 */
export class ApiClient {
  readonly baseUrl: string
  readonly #token: string | undefined
  readonly #timeoutMs: number

  constructor(options: ApiClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.#token = options.token === '' ? undefined : options.token
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  }

  get<T>(path: string, options?: RequestOptions): Promise<T> {
    return this.request<T>('GET', path, options)
  }

  post<T>(path: string, options?: RequestOptions): Promise<T> {
    return this.request<T>('POST', path, { body: {}, ...options })
  }

  put<T>(path: string, options?: RequestOptions): Promise<T> {
    return this.request<T>('PUT', path, options)
  }

  delete<T>(path: string, options?: RequestOptions): Promise<T> {
    return this.request<T>('DELETE', path, options)
  }

  /** One request; resolves with the parsed JSON of a 2xx answer. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const url = new URL(`${this.baseUrl}${path}`)
    for (const [key, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) url.searchParams.set(key, String(value))
    const headers: Record<string, string> = { accept: 'application/json' }
    if (this.#token !== undefined) headers.authorization = `Bearer ${this.#token}`
    if (options.body !== undefined) headers['content-type'] = 'application/json'
    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.#timeoutMs)
    const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout])
    let response: Response
    try {
      response = await fetch(url, {
        method,
        headers,
        signal,
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      })
    } catch (error) {
      options.signal?.throwIfAborted()
      throw this.#networkError(error, timeout.aborted)
    }
    const text = await response.text()
    let json: unknown
    try {
      json = text === '' ? {} : JSON.parse(text)
    } catch (error) {
      throw new CliError(
        'CLI_BAD_RESPONSE',
        `${this.baseUrl} answered ${response.status} with something other than JSON; is it a lango server?`,
        { cause: error, data: { url: this.baseUrl, status: response.status } },
      )
    }
    if (!response.ok) throw apiErrorOf(response.status, json, this.baseUrl)
    return json as T
  }

  #networkError(error: unknown, timedOut: boolean): CliError {
    if (timedOut)
      return new CliError(
        'CLI_SERVER_UNREACHABLE',
        `the lango server at ${this.baseUrl} did not answer in time`,
        {
          cause: error,
          data: { url: this.baseUrl },
        },
      )
    // fetch refuses the Fetch standard's "bad ports" before connecting (a server on 6667 is
    // running, but out of reach of fetch and of browsers).
    if ((error as { cause?: { message?: unknown } } | null)?.cause?.message === 'bad port')
      return new CliError(
        'CLI_INVALID_OPTION',
        `${this.baseUrl} uses a port that fetch and browsers refuse to connect to (the Fetch standard's "bad ports"): run the server on another port (server.port in lango.yaml, --port) and point the CLI there (--url, LANGO_URL)`,
        { cause: error, exitCode: EXIT.usage, data: { url: this.baseUrl } },
      )
    const code = networkCode(error)
    if (code === 'ECONNREFUSED')
      return new CliError(
        'CLI_SERVER_NOT_RUNNING',
        `lango server is not running at ${this.baseUrl}; start it with \`lango serve\``,
        { cause: error, data: { url: this.baseUrl } },
      )
    return new CliError(
      'CLI_SERVER_UNREACHABLE',
      `cannot reach the lango server at ${this.baseUrl}${code === undefined ? '' : ` (${code})`}`,
      { cause: error, data: { url: this.baseUrl, ...(code === undefined ? {} : { code }) } },
    )
  }
}

/** The system error code under fetch's `TypeError: fetch failed` (also inside an `AggregateError`). */
function networkCode(error: unknown): string | undefined {
  let current: unknown = error
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const { code, errors, cause } = current as { code?: unknown; errors?: unknown; cause?: unknown }
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code
    if (Array.isArray(errors) && errors.length > 0) current = errors[0]
    else current = cause
  }
  return undefined
}

function apiErrorOf(status: number, json: unknown, baseUrl: string): ApiError {
  const error = (json as { error?: unknown } | null)?.error
  if (typeof error === 'object' && error !== null) {
    const { code, message, issues, reason, data } = error as {
      code?: unknown
      message?: unknown
      issues?: unknown
      reason?: unknown
      data?: unknown
    }
    return new ApiError(
      status,
      typeof code === 'string' ? code : `HTTP_${status}`,
      typeof message === 'string' ? message : `the server answered ${status}`,
      Array.isArray(issues) ? issues.map(issueOf) : undefined,
      {
        ...(typeof reason === 'string' ? { reason } : {}),
        ...(typeof data === 'object' && data !== null && !Array.isArray(data)
          ? { data: data as Record<string, unknown> }
          : {}),
      },
    )
  }
  return new ApiError(status, `HTTP_${status}`, `${baseUrl} answered ${status}`)
}

function issueOf(value: unknown): CliIssue {
  if (typeof value === 'object' && value !== null && typeof (value as CliIssue).message === 'string') {
    const { path, message, line, column, key, file } = value as CliIssue
    return {
      message,
      ...(typeof path === 'string' ? { path } : {}),
      ...(typeof key === 'string' ? { key } : {}),
      ...(typeof file === 'string' ? { file } : {}),
      ...(typeof line === 'number' ? { line } : {}),
      ...(typeof column === 'number' ? { column } : {}),
    }
  }
  return { message: typeof value === 'string' ? value : JSON.stringify(value) }
}

/** `file:line:col path: message`, leaving out what an issue does not have. */
export function formatIssue(issue: CliIssue, file?: string): string {
  let where = issue.file ?? file ?? ''
  if (issue.line !== undefined) where += `${where === '' ? 'line ' : ':'}${issue.line}`
  if (issue.line !== undefined && issue.column !== undefined) where += `:${issue.column}`
  const path = issue.path ?? issue.key ?? ''
  const parts = [where, path].filter((part) => part !== '')
  return parts.length === 0 ? issue.message : `${parts.join(' ')}: ${issue.message}`
}
