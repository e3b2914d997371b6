import {
  APICallError,
  EmptyResponseBodyError,
  InvalidResponseDataError,
  JSONParseError,
  NoContentGeneratedError,
  RetryError,
  TypeValidationError,
} from 'ai'
import { formatDuration } from '../config/rules.js'
import { AgentError, type AgentErrorCode } from './errors.js'
import { RetryWaitTooLong } from './model-retry.js'
import { displayUrl } from './model-url.js'

/** Replaces every occurrence of `secret` (when there is one) in `text`. */
function redact(text: string, secret: string | undefined): string {
  return secret === undefined || secret === '' ? text : text.split(secret).join('[redacted]')
}

/** One line of at most `max` characters, secret removed. */
function shortLine(text: string, max: number, secret: string | undefined): string {
  const line = redact(text, secret).replace(/\s+/g, ' ').trim()
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`
}

/**
 * A copy of an error that is safe to keep as `cause`: name, message and status, the secret removed,
 * and no request body, headers or nested causes (which may carry prompts or credentials).
 */
function redactedCause(error: unknown, secret: string | undefined): Error {
  const source = error instanceof Error ? error : new Error(String(error))
  const copy = new Error(redact(source.message, secret))
  copy.name = source.name
  copy.stack = `${copy.name}: ${copy.message}`
  if (APICallError.isInstance(source) && source.statusCode !== undefined) {
    Object.assign(copy, { statusCode: source.statusCode })
  }
  return copy
}

/** The message a model server put in its error body (`{"error":{"message":…}}`), if any. */
function serverMessage(error: APICallError): string | undefined {
  const body = error.responseBody
  if (body === undefined || body === '') return undefined
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown }
    const message =
      typeof parsed.error === 'string'
        ? parsed.error
        : typeof parsed.error?.message === 'string'
          ? parsed.error.message
          : typeof parsed.message === 'string'
            ? parsed.message
            : undefined
    return message
  } catch {
    return body
  }
}

/** What a failed model call becomes. */
interface ModelFailureContext {
  readonly baseUrl: string
  readonly apiKey: string | undefined
  readonly model: string
}

/**
 * Turns what the AI SDK threw for a model call into an {@link AgentError}: the code says what
 * happened (unreachable, refused credentials, rate limited, an error status, an invalid body), the
 * message names the model server's URL and never the API key, `data` has the status and attempts.
 */
export function modelFailure(error: unknown, context: ModelFailureContext): AgentError {
  if (AgentError.is(error)) return error
  const url = displayUrl(context.baseUrl)
  if (error instanceof RetryWaitTooLong) return waitTooLong(error, url, context)
  let last = error
  let attempts = 1
  if (RetryError.isInstance(error)) {
    attempts = error.errors.length
    last = error.lastError
  }
  const cause = redactedCause(last, context.apiKey)
  const make = (code: AgentErrorCode, message: string, data: Record<string, unknown> = {}) =>
    new AgentError(code, message, { cause, data: { url, model: context.model, attempts, ...data } })
  const tries = attempts > 1 ? ` (after ${attempts} attempts)` : ''

  if (APICallError.isInstance(last)) {
    const status = last.statusCode
    const said = serverMessage(last)
    const detail = said === undefined ? '' : `: ${shortLine(said, 300, context.apiKey)}`
    if (status === undefined) {
      const reason = last.cause instanceof Error ? last.cause.message : last.message
      return make(
        'AGENT_MODEL_UNREACHABLE',
        `cannot reach the model server ${url}${tries}: ${shortLine(reason, 200, context.apiKey)}`,
      )
    }
    if (status >= 200 && status < 300) {
      return make(
        'AGENT_INVALID_RESPONSE',
        `the model server ${url} sent a response that is not a chat completion: ${shortLine(last.message, 200, context.apiKey)}`,
        { status },
      )
    }
    if (status === 401 || status === 403) {
      return make(
        'AGENT_MODEL_UNAUTHORIZED',
        `the model server ${url} refused the credentials (HTTP ${status})${detail}`,
        { status },
      )
    }
    if (status === 429) {
      return make(
        'AGENT_MODEL_RATE_LIMITED',
        `the model server ${url} is rate limiting requests (HTTP 429)${tries}${detail}`,
        { status },
      )
    }
    return make('AGENT_MODEL_ERROR', `the model server ${url} answered HTTP ${status}${tries}${detail}`, {
      status,
    })
  }
  if (
    InvalidResponseDataError.isInstance(last) ||
    JSONParseError.isInstance(last) ||
    TypeValidationError.isInstance(last) ||
    EmptyResponseBodyError.isInstance(last) ||
    NoContentGeneratedError.isInstance(last)
  ) {
    return make(
      'AGENT_INVALID_RESPONSE',
      `the model server ${url} sent a response that is not a chat completion: ${shortLine((last as Error).message, 200, context.apiKey)}`,
    )
  }
  const message = last instanceof Error ? last.message : String(last)
  return make('AGENT_FAILED', `agent run against ${url} failed: ${shortLine(message, 300, context.apiKey)}`)
}

/**
 * A call not tried again because the wait before the next try is longer than the turn has left:
 * rate limited (429) or the server's error, with the wait said (`retryAfterMs`) so the caller
 * knows when to come back.
 */
function waitTooLong(error: RetryWaitTooLong, url: string, context: ModelFailureContext): AgentError {
  const status = error.last.statusCode
  const said = serverMessage(error.last)
  const detail = said === undefined ? '' : `: ${shortLine(said, 300, context.apiKey)}`
  const wait = `${error.asked ? 'the server asked to wait' : 'the next try would come after'} ${formatDuration(error.waitMs)}, longer than the turn has left (agent.timeout)`
  const what =
    status === 429
      ? `the model server ${url} is rate limiting requests (HTTP 429)`
      : status === undefined
        ? `cannot reach the model server ${url}`
        : `the model server ${url} answered HTTP ${status}`
  return new AgentError(
    status === 429
      ? 'AGENT_MODEL_RATE_LIMITED'
      : status === undefined
        ? 'AGENT_MODEL_UNREACHABLE'
        : 'AGENT_MODEL_ERROR',
    `${what}${detail}; not tried again: ${wait}`,
    {
      cause: redactedCause(error.last, context.apiKey),
      data: {
        url,
        model: context.model,
        attempts: error.attempts,
        ...(status === undefined ? {} : { status }),
        retryAfterMs: error.waitMs,
      },
    },
  )
}
