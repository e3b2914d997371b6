import type { IncomingMessage } from 'node:http'
import type { ToolCallOutcome } from '@lango/tools'
import type { Context, MiddlewareHandler } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { type ApiErrorCode, errorStatus, failureStatus, type HttpErrorCode } from './error-status.js'

/** The one error body of the API: `{ error: { code, message, issues?, reason?, data? } }`. */
export interface ErrorBody {
  readonly error: {
    readonly code: string
    readonly message: string
    readonly issues?: readonly unknown[]
    readonly reason?: string
    readonly data?: Readonly<Record<string, unknown>>
  }
}

/** An error body; `detail` adds `issues`, `reason` or `data` when given. */
function errorBody(
  code: string,
  message: string,
  detail: Omit<ErrorBody['error'], 'code' | 'message'> = {},
): ErrorBody {
  return { error: { code, message, ...detail } }
}

/**
 * Sends an error body with the status `ERROR_STATUS` (src/http/error-status.ts) gives its code; `status` only where the
 * framework decided it (`HTTP_ERROR`) or a resource route's failure is 404 (`failureStatus`).
 */
export function errorResponse(
  c: Context,
  code: ApiErrorCode,
  message: string,
  detail: Omit<ErrorBody['error'], 'code' | 'message'> = {},
  status: ContentfulStatusCode = errorStatus(code),
): Response {
  return c.json(errorBody(code, message, detail), status)
}

type Failure = Extract<ToolCallOutcome, { ok: false }>['error']

/**
 * Sends a failed tool call: its error (code, message and whichever of issues, reason, data it has)
 * with the status of {@link failureStatus}; `resource` as there.
 */
export function failureResponse(
  c: Context,
  error: Failure,
  options: { readonly resource?: boolean } = {},
): Response {
  const body = errorBody(error.code, error.message, {
    ...(error.issues === undefined ? {} : { issues: error.issues }),
    ...(error.reason === undefined ? {} : { reason: error.reason }),
    ...(error.data === undefined ? {} : { data: error.data }),
  })
  return c.json(body, failureStatus(error, options))
}

/** What {@link readJsonBody} gives: the body's JSON object, or the error response to send. */
export type JsonBody =
  | { readonly ok: true; readonly value: Record<string, unknown> }
  | { readonly ok: false; readonly response: Response }

/**
 * How deeply a request body may nest arrays and objects. Parameters and chat messages need a
 * handful of levels; a body of a million `[` costs the parser and every validator after it
 * (about a second of blocked event loop), so deeper bodies are refused before they are parsed.
 */
export const MAX_JSON_DEPTH = 64

/**
 * True when the JSON text in `bytes` opens more than `maxDepth` arrays or objects at once. One pass
 * over the bytes, strings skipped with `indexOf` (about 0.5 ms per MiB), stopping at the first
 * level too deep; malformed text is left to the parser.
 */
export function jsonNestingExceeds(bytes: Uint8Array, maxDepth: number): boolean {
  let depth = 0
  for (let index = 0; index < bytes.length; index++) {
    const byte = bytes[index]
    if (byte === 0x22) {
      // To the closing quote: the next one not escaped by an odd run of backslashes.
      for (;;) {
        index = bytes.indexOf(0x22, index + 1)
        if (index === -1) return false
        let backslashes = 0
        while (bytes[index - 1 - backslashes] === 0x5c) backslashes++
        if (backslashes % 2 === 0) break
      }
    } else if (byte === 0x5b || byte === 0x7b) {
      depth++
      if (depth > maxDepth) return true
    } else if (byte === 0x5d || byte === 0x7d) {
      depth--
    }
  }
  return false
}

/** True for `application/json` and `application/<something>+json`, parameters (charset) aside. */
function isJsonMediaType(contentType: string): boolean {
  return /^\s*application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i.test(contentType)
}

/** The `charset` a `Content-Type` declares (lower case, unquoted), or undefined when it declares none. */
function declaredCharset(contentType: string): string | undefined {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType)
  return match?.[1]?.toLowerCase()
}

/** Reads bytes as UTF-8, or undefined when they are not UTF-8 (no silent U+FFFD). */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/** An error response of the API's own shape, as {@link errorResponse} writes it. */
export interface ApiErrorBody {
  readonly code: string
  readonly message: string
  readonly issues?: readonly { readonly path?: string }[]
}

/**
 * A middleware that gives every error answer of the API's own shape (`{ error: { code, message } }`,
 * from any layer: guards, body checks, readiness, the route) another shape, for a protocol whose
 * clients read errors their own way (`/v1`: OpenAI's; `/mcp`: JSON-RPC's). `reshape` gets the error
 * and the status and returns the new body; status and headers stay.
 */
export function reshapeErrors(reshape: (error: ApiErrorBody, status: number) => unknown): MiddlewareHandler {
  return async (c, next) => {
    await next()
    if (c.res.status < 400 || !(c.res.headers.get('content-type') ?? '').includes('application/json')) return
    const body = (await c.res
      .clone()
      .json()
      .catch(() => undefined)) as { jsonrpc?: unknown; error?: Record<string, unknown> } | undefined
    const error = body?.error
    // Not the API's shape (already the protocol's own, or not an error object): left as it is.
    if (
      error === undefined ||
      body?.jsonrpc !== undefined ||
      'type' in error ||
      typeof error.code !== 'string'
    )
      return
    const headers = new Headers(c.res.headers)
    headers.delete('content-length')
    c.res = new Response(
      JSON.stringify(
        reshape(
          {
            code: error.code,
            message: typeof error.message === 'string' ? error.message : error.code,
            ...(Array.isArray(error.issues) ? { issues: error.issues as { path?: string }[] } : {}),
          },
          c.res.status,
        ),
      ),
      { status: c.res.status, headers },
    )
  }
}

/** The 413 message for a body beyond `limit` bytes. */
export function bodyTooLarge(limit: number): string {
  return `the request body is larger than ${limit} bytes (server.body_limit in lango.yaml)`
}

/**
 * The request body's bytes, or undefined once more than `maxBytes` arrive (reading stops there).
 * Under @hono/node-server it reads the Node request directly: a web `Request` for the body (and
 * its stream) costs more than the rest of a small API call does.
 */
export async function readBounded(c: Context, maxBytes: number): Promise<Buffer | undefined> {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming
  const chunks: Buffer[] = []
  let size = 0
  if (incoming !== undefined && !incoming.readableDidRead) {
    return new Promise((resolve, reject) => {
      const settle = (value: Buffer | undefined, error?: unknown): void => {
        incoming.off('data', onData).off('end', onEnd).off('error', onError)
        if (error === undefined) resolve(value)
        else reject(error)
      }
      const onData = (chunk: Buffer): void => {
        size += chunk.length
        chunks.push(chunk)
        // Stop reading (not destroy: the 413 still goes out; Node discards the rest).
        if (size > maxBytes) {
          incoming.pause()
          settle(undefined)
        }
      }
      const onEnd = (): void => settle(Buffer.concat(chunks, size))
      const onError = (error: Error): void => settle(undefined, error)
      incoming.on('data', onData).on('end', onEnd).on('error', onError)
    })
  }
  const body = c.req.raw.body
  if (body === null) return Buffer.alloc(0)
  for await (const chunk of body as AsyncIterable<Uint8Array>) {
    size += chunk.length
    if (size > maxBytes) return undefined
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length))
  }
  return Buffer.concat(chunks, size)
}

/** Bytes of an over-limit body read and dropped before its 413, so the connection stays usable. */
const MAX_DISCARDED_BYTES = 64 * 1024 * 1024

/**
 * Reads and drops what is left of the request body (at most {@link MAX_DISCARDED_BYTES}), so that
 * a 413 goes out on a connection the client can go on using: answering while it still sends, the
 * HTTP adaptor gives the rest half a second and then closes the socket, and a keep-alive client
 * (or one on a loaded machine, still writing) gets a closed socket instead of the 413 (issue 21).
 * False when the body was longer than that: the answer then says `Connection: close`.
 */
async function discardBody(c: Context): Promise<boolean> {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming
  if (incoming === undefined || incoming.readableEnded || incoming.destroyed) return true
  return new Promise((resolve) => {
    let size = 0
    const settle = (whole: boolean): void => {
      incoming.off('data', onData).off('end', onEnd).off('error', onError)
      resolve(whole)
    }
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size > MAX_DISCARDED_BYTES) {
        incoming.pause()
        settle(false)
      }
    }
    const onEnd = (): void => settle(true)
    const onError = (): void => settle(false)
    incoming.on('data', onData).on('end', onEnd).on('error', onError)
    incoming.resume()
  })
}

/** The 413 for a body over `maxBytes`, once the rest of it was dropped ({@link discardBody}). */
export async function tooLargeResponse(c: Context, answer: () => Response): Promise<Response> {
  const whole = await discardBody(c)
  const response = answer()
  if (!whole) response.headers.set('connection', 'close')
  return response
}

/**
 * Reads the request body as a JSON object; an empty body is `{}`. A body beyond `maxBytes`
 * (declared or read) is 413 `BODY_TOO_LARGE`, one nested deeper than {@link MAX_JSON_DEPTH} 400
 * `BODY_TOO_DEEP` (checked before parsing), text that is not JSON 400 `INVALID_JSON`, and JSON that
 * is not an object (an array, a string, `null`) 400 `INVALID_REQUEST`. The parser's own message is
 * not passed on: it quotes the input, which may hold a secret. (`Content-Type` is
 * {@link jsonContentType}'s to check.)
 */
export async function readJsonBody(c: Context, maxBytes: number): Promise<JsonBody> {
  const refuse = (code: HttpErrorCode, message: string): JsonBody => ({
    ok: false,
    response: errorResponse(c, code, message),
  })
  const tooLarge = async (): Promise<JsonBody> => ({
    ok: false,
    response: await tooLargeResponse(c, () => errorResponse(c, 'BODY_TOO_LARGE', bodyTooLarge(maxBytes))),
  })
  const declared = Number(c.req.header('content-length') ?? 0)
  if (declared > maxBytes) return tooLarge()
  const bytes = await readBounded(c, maxBytes)
  if (bytes === undefined) return tooLarge()
  if (jsonNestingExceeds(bytes, MAX_JSON_DEPTH))
    return refuse(
      'BODY_TOO_DEEP',
      `the request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`,
    )
  let text: string
  try {
    text = strictUtf8.decode(bytes)
  } catch {
    // Replacing what is not UTF-8 with U+FFFD would hand a command or a model other text than sent.
    return refuse('INVALID_JSON', 'the request body is not valid UTF-8: send JSON encoded as UTF-8')
  }
  if (text.trim() === '') return { ok: true, value: {} }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return refuse('INVALID_JSON', 'the request body is not valid JSON: send a JSON object (or no body)')
  }
  if (!isJsonObject(value))
    return refuse(
      'INVALID_REQUEST',
      `the request body must be a JSON object, not ${Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`}`,
    )
  return { ok: true, value }
}

/**
 * Refuses a request body that is not declared JSON with 415 `UNSUPPORTED_MEDIA_TYPE`: a body
 * (POST, PUT, PATCH) must come with `Content-Type: application/json` (or `…+json`). A request
 * without a body (`/pause`, `/cancel`) needs none. A `text/plain` body is what a page on another
 * site can send without a CORS preflight, so it is never read as JSON.
 */
export function jsonContentType(): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method !== 'POST' && c.req.method !== 'PUT' && c.req.method !== 'PATCH') return next()
    const type = c.req.header('content-type')
    const hasBody =
      c.req.header('transfer-encoding') !== undefined || Number(c.req.header('content-length') ?? 0) > 0
    if (!hasBody) return next()
    if (type !== undefined && isJsonMediaType(type)) {
      // JSON is UTF-8 (RFC 8259); a body declared otherwise would be read as something it is not.
      const charset = declaredCharset(type)
      if (charset === undefined || charset === 'utf-8' || charset === 'utf8') return next()
      return errorResponse(
        c,
        'UNSUPPORTED_MEDIA_TYPE',
        'request bodies must be JSON encoded as UTF-8: send Content-Type: application/json (charset=utf-8 or none)',
      )
    }
    return errorResponse(
      c,
      'UNSUPPORTED_MEDIA_TYPE',
      'request bodies must be JSON sent with Content-Type: application/json',
    )
  }
}

/** True for a plain JSON object (not an array or null). */
function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * A query parameter as a tool parameter: a decimal number becomes a number, anything else stays
 * text (so the tool's validation names the field and what it accepts); absent is undefined.
 */
export function queryNumber(value: string | undefined): number | string | undefined {
  if (value === undefined || value === '') return undefined
  return /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value
}

/** The fields of `entries` whose value is not undefined. */
export function defined(entries: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined))
}

/**
 * Refuses a query parameter the route does not read, naming it and the ones it does (400 `code`,
 * one issue per unknown name): a misspelt filter (`?stauts=failed`) would otherwise be ignored and
 * answer as if no filter were given. Tool-backed routes answer `TOOL_INVALID_PARAMETERS`, as their
 * tool does for a bad value; the others `INVALID_REQUEST`.
 */
export function knownQuery(
  known: readonly string[],
  code: 'INVALID_REQUEST' | 'TOOL_INVALID_PARAMETERS' = 'INVALID_REQUEST',
): MiddlewareHandler {
  const accepted = known.length === 0 ? 'none' : known.join(', ')
  return async (c, next) => {
    const unknown = Object.keys(c.req.query()).filter((name) => !known.includes(name))
    if (unknown.length === 0) return next()
    const message = `unknown query parameter; known: ${accepted}`
    return errorResponse(
      c,
      code,
      `invalid parameters: ${unknown.join(', ')}: unknown query parameter (known: ${accepted})`,
      { issues: unknown.map((name) => ({ path: name, message })) },
    )
  }
}
