import type { IncomingMessage } from 'node:http'
import type { ToolCallOutcome } from '@lango/tools'
import type { Context } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'

/** Codes of the HTTP layer's own errors (tool and service codes pass through as they are). */
export type HttpErrorCode =
  /** `Authorization: Bearer <token>` is missing while `LANGO_API_TOKEN` is set. */
  | 'AUTH_REQUIRED'
  /** The bearer token is wrong, or the header is not `Bearer <token>`. */
  | 'AUTH_INVALID'
  /** A browser page from another origin called the API (not loopback, not in `server.allowed_origins`). */
  | 'ORIGIN_FORBIDDEN'
  /** The `Host` header names another host while the server listens on loopback (DNS rebinding). */
  | 'HOST_FORBIDDEN'
  /** The request body is larger than `server.body_limit` (`bodyLimitBytes`). */
  | 'BODY_TOO_LARGE'
  /** The request body is not JSON. */
  | 'INVALID_JSON'
  /** A body or query field has the wrong type or value; `issues` names each. */
  | 'INVALID_REQUEST'
  /** No such route (or method). */
  | 'NOT_FOUND'
  /** The server is starting or stopping. */
  | 'SERVER_NOT_READY'
  /** Another HTTP-level refusal by the framework (rare; the message says which). */
  | 'HTTP_ERROR'
  /** An unexpected failure; the log has its code and message, the response only this. */
  | 'INTERNAL_ERROR'

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

/** Sends an error body with a status. */
export function errorResponse(
  c: Context,
  status: ContentfulStatusCode,
  code: string,
  message: string,
  detail: Omit<ErrorBody['error'], 'code' | 'message'> = {},
): Response {
  return c.json(errorBody(code, message, detail), status)
}

type Failure = Extract<ToolCallOutcome, { ok: false }>['error']

/**
 * The HTTP status of a failed tool call (server-api.md): invalid parameters 400, unknown tool 404,
 * denied 403, canceled 409, any other failure 422. `notFoundAs404` (the operator REST routes, which
 * name a resource in the path) answers 404 when the service says the id names nothing.
 */
export function failureStatus(
  error: Failure,
  options: { readonly notFoundAs404?: boolean } = {},
): ContentfulStatusCode {
  switch (error.code) {
    case 'TOOL_INVALID_PARAMETERS':
      return 400
    case 'TOOL_NOT_FOUND':
      return 404
    case 'TOOL_DENIED':
      return 403
    case 'TOOL_CANCELED':
      return 409
    default:
      return options.notFoundAs404 === true && error.reason?.endsWith('_NOT_FOUND') === true ? 404 : 422
  }
}

/** A failed call's error body: code, message and whichever of issues, reason, data it has. */
export function failureBody(error: Failure): ErrorBody {
  return errorBody(error.code, error.message, {
    ...(error.issues === undefined ? {} : { issues: error.issues }),
    ...(error.reason === undefined ? {} : { reason: error.reason }),
    ...(error.data === undefined ? {} : { data: error.data }),
  })
}

/** What {@link readJsonBody} gives: the parsed value, or the 400 to send. */
export type JsonBody =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly response: Response }

/** The 413 message for a body beyond `limit` bytes. */
export function bodyTooLarge(limit: number): string {
  return `the request body is larger than ${limit} bytes (server.body_limit in lango.yaml)`
}

/**
 * The request body's bytes, or undefined once more than `maxBytes` arrive (reading stops there).
 * Under @hono/node-server it reads the Node request directly: a web `Request` for the body (and
 * its stream) costs more than the rest of a small API call does.
 */
async function readBounded(c: Context, maxBytes: number): Promise<Buffer | undefined> {
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

/**
 * Parses the request body as JSON; an empty body is `{}`; a body beyond `maxBytes` (declared or
 * read) is 413 `BODY_TOO_LARGE`. The parser's own message is not passed on: it quotes the input,
 * which may hold a secret.
 */
export async function readJsonBody(c: Context, maxBytes: number): Promise<JsonBody> {
  const tooLarge = (): JsonBody => ({
    ok: false,
    response: errorResponse(c, 413, 'BODY_TOO_LARGE', bodyTooLarge(maxBytes)),
  })
  const declared = Number(c.req.header('content-length') ?? 0)
  if (declared > maxBytes) return tooLarge()
  const bytes = await readBounded(c, maxBytes)
  if (bytes === undefined) return tooLarge()
  const text = bytes.toString('utf8')
  if (text.trim() === '') return { ok: true, value: {} }
  try {
    return { ok: true, value: JSON.parse(text) as unknown }
  } catch {
    return {
      ok: false,
      response: errorResponse(
        c,
        400,
        'INVALID_JSON',
        'the request body is not valid JSON: send a JSON object (or no body)',
      ),
    }
  }
}

/** True for a plain JSON object (not an array or null). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
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
