import type { BackgroundErrorCode } from '@lango/background'
import type { CronErrorCode } from '@lango/cron'
import type { ExecErrorCode } from '@lango/exec'
import type { ToolCallOutcome, ToolErrorCode } from '@lango/tools'
import type { WorkflowErrorCode } from '@lango/workflow'
import type { ContentfulStatusCode, UnofficialStatusCode } from 'hono/utils/http-status'
import { type AnyServerErrorCode, SERVER_ERROR_CODES } from '../errors.js'

/** Codes of the HTTP layer's own errors (tool and service codes pass through as they are). */
export type HttpErrorCode =
  /** `Authorization: Bearer <token>` is missing while `LANGO_API_TOKEN` is set. */
  | 'AUTH_REQUIRED'
  /** The bearer token is wrong, or the header is not `Bearer <token>`. */
  | 'AUTH_INVALID'
  /** A browser page from another origin called the API (not loopback, not in `server.allowed_origins`). */
  | 'ORIGIN_FORBIDDEN'
  /**
   * The `Host` header names no host this server answers to (DNS rebinding): not a loopback name on
   * its port, not the bound address, not listed in `server.allowed_hosts`.
   */
  | 'HOST_FORBIDDEN'
  /** The request body is larger than `server.body_limit` (`bodyLimitBytes`). */
  | 'BODY_TOO_LARGE'
  /** A request body came without `Content-Type: application/json`. */
  | 'UNSUPPORTED_MEDIA_TYPE'
  /** The request body is not JSON. */
  | 'INVALID_JSON'
  /** The request body nests arrays and objects deeper than `MAX_JSON_DEPTH` (src/http/responses.ts). */
  | 'BODY_TOO_DEEP'
  /** A body or query field has the wrong type or value; `issues` names each. */
  | 'INVALID_REQUEST'
  /** No such route. */
  | 'NOT_FOUND'
  /** The path has routes, none for this method; the `Allow` header lists the methods it takes. */
  | 'METHOD_NOT_ALLOWED'
  /** The server is starting or stopping. */
  | 'SERVER_NOT_READY'
  /** The client went away before the agent's turn ended (`POST /api/chat`, `/v1/chat/completions`). */
  | 'CANCELLED'
  /** Another HTTP-level refusal by the framework (rare; the message says which). */
  | 'HTTP_ERROR'
  /** An unexpected failure; the log has its code and message, the response only this. */
  | 'INTERNAL_ERROR'
  /** A hook call (`POST /hooks/<name>`) without a valid signature, timestamp or secret: nothing ran. */
  | 'WEBHOOK_UNAUTHORIZED'
  /** A hook call whose `webhook-id` was accepted before (a replay): nothing ran. */
  | 'WEBHOOK_REPLAYED'
  /** A hook took `cron.webhook_rate_limit` signed calls in the last minute; `Retry-After` says when to retry. */
  | 'WEBHOOK_RATE_LIMITED'
  /**
   * A verified hook call started no run (each job skipped it, e.g. by its overlap policy, or could not
   * start): nothing was recorded, so the sender may send it again after `Retry-After`.
   */
  | 'WEBHOOK_NOT_STARTED'

/**
 * The code of a service's error, which reaches the API as the `reason` of a tool's `TOOL_FAILED`
 * (the packages' codes and the server's own), or as the error's `code` (`ServerError`, `AgentError`).
 */
type ServiceErrorCode =
  | ExecErrorCode
  | CronErrorCode
  | WorkflowErrorCode
  | BackgroundErrorCode
  | AnyServerErrorCode

/** Every error code the API answers with, as an error's `code` or a `TOOL_FAILED`'s `reason`. */
export type ApiErrorCode = HttpErrorCode | ToolErrorCode | ServiceErrorCode

/**
 * The one table from an error code to the HTTP status the API answers it with. A service's code
 * (a `TOOL_FAILED`'s `reason`) is 404 when it says that what was named does not exist, else 422 (the
 * status of `TOOL_FAILED`): on a route naming a resource (the operator routes) a `reason` with
 * status 404 makes the failure 404 (see {@link failureStatus}). The server's own codes and statuses
 * are those of `SERVER_ERROR_CODES` (src/errors.ts). Every code has an entry: the compiler checks it.
 */
export const ERROR_STATUS = {
  // The HTTP layer
  AUTH_REQUIRED: 401,
  AUTH_INVALID: 401,
  ORIGIN_FORBIDDEN: 403,
  HOST_FORBIDDEN: 403,
  BODY_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INVALID_JSON: 400,
  BODY_TOO_DEEP: 400,
  INVALID_REQUEST: 400,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  SERVER_NOT_READY: 503,
  // nginx's "client closed request": nobody reads it, the log and the tests do.
  CANCELLED: 499 as UnofficialStatusCode,
  // The framework's own status when it gives one (onError in src/http/app.ts); this when not.
  HTTP_ERROR: 500,
  INTERNAL_ERROR: 500,
  WEBHOOK_UNAUTHORIZED: 401,
  WEBHOOK_REPLAYED: 409,
  WEBHOOK_RATE_LIMITED: 429,
  WEBHOOK_NOT_STARTED: 503,

  // @lango/tools: a tool call's outcome
  TOOL_INVALID_PARAMETERS: 400,
  TOOL_NOT_FOUND: 404,
  TOOL_DENIED: 403,
  TOOL_FAILED: 422,
  TOOL_CANCELED: 409,

  // @lango/exec
  EXEC_INVALID_CWD: 422,
  EXEC_ENV_REJECTED: 422,
  EXEC_SECRET_IN_QUOTES: 422,
  EXEC_SECRET_REPARSED: 422,
  EXEC_SECRET_TOO_SHORT: 422,
  EXEC_SECRET_UNKNOWN: 422,
  EXEC_INVALID_OPTION: 422,
  EXEC_SPAWN_FAILED: 422,
  EXEC_TOO_MANY_PROCESSES: 422,
  EXEC_PROCESS_NOT_FOUND: 404,
  EXEC_NOT_WRITABLE: 422,
  EXEC_PTY_UNAVAILABLE: 422,

  // @lango/cron
  CRON_INVALID_INPUT: 422,
  CRON_INVALID_SCHEDULE: 422,
  CRON_INVALID_TIMEZONE: 422,
  CRON_INTERVAL_TOO_SHORT: 422,
  CRON_NEVER_FIRES: 422,
  CRON_AT_IN_PAST: 422,
  CRON_DUPLICATE_NAME: 422,
  CRON_JOB_NOT_FOUND: 404,
  CRON_RUN_NOT_FOUND: 404,
  CRON_TOO_MANY_JOBS: 422,
  CRON_NOT_RUNNING: 422,
  CRON_RUN_TIMEOUT: 422,
  CRON_RUN_CANCELLED: 422,
  CRON_RUN_FAILED: 422,
  CRON_DELIVERY_TIMEOUT: 422,
  CRON_PING_TIMEOUT: 422,
  CRON_STORE_CORRUPT: 422,
  CRON_STORE_NOT_MIGRATED: 422,

  // @lango/workflow
  WORKFLOW_INVALID: 422,
  WORKFLOW_INVALID_NAME: 422,
  WORKFLOW_PATH_NOT_ALLOWED: 422,
  WORKFLOW_FILE_EXISTS: 422,
  WORKFLOW_FILE_NOT_FOUND: 404,
  WORKFLOW_DIRECTORY_UNSAFE: 422,
  WORKFLOW_RUN_NOT_FOUND: 404,
  WORKFLOW_RUN_ENDED: 422,
  WORKFLOW_RUN_ACTIVE: 422,
  WORKFLOW_STEP_NOT_FOUND: 404,
  WORKFLOW_NOTHING_TO_RERUN: 422,
  WORKFLOW_TOO_MANY_RUNS: 422,
  WORKFLOW_NESTING_TOO_DEEP: 422,
  WORKFLOW_ENGINE_STOPPED: 422,
  WORKFLOW_RUNNER_MISSING: 422,
  WORKFLOW_STEP_FAILED: 422,
  WORKFLOW_COMMAND_BLOCKED: 422,
  WORKFLOW_STEP_TIMEOUT: 422,
  WORKFLOW_INPUT_TOO_LARGE: 422,
  WORKFLOW_RUN_CANCELLED: 422,
  WORKFLOW_RUN_TIMEOUT: 422,
  WORKFLOW_OWNERSHIP_LOST: 422,
  WORKFLOW_STORE_CORRUPT: 422,
  WORKFLOW_DELIVERY_FAILED: 422,
  WORKFLOW_INVALID_OPTION: 422,
  WORKFLOW_STORE_NOT_MIGRATED: 422,

  // @lango/background
  BACKGROUND_INVALID_INPUT: 422,
  BACKGROUND_QUEUE_FULL: 422,
  BACKGROUND_NESTING_TOO_DEEP: 422,
  BACKGROUND_STOPPED: 422,
  BACKGROUND_TASK_NOT_FOUND: 404,
  BACKGROUND_TASK_NOT_DONE: 422,
  BACKGROUND_TASK_ENDED: 422,
  BACKGROUND_TASK_CANCELLED: 422,
  BACKGROUND_TASK_TIMEOUT: 422,
  BACKGROUND_TASK_FAILED: 422,
  BACKGROUND_DUPLICATE_ID: 422,
  BACKGROUND_NOTIFY_FAILED: 422,

  // The server's own (src/errors.ts)
  ...SERVER_ERROR_CODES,
} as const satisfies Record<ApiErrorCode, ContentfulStatusCode>

/** The HTTP status the API answers an error `code` with ({@link ERROR_STATUS}). */
export function errorStatus(code: ApiErrorCode): ContentfulStatusCode {
  return ERROR_STATUS[code]
}

/**
 * The status of a `TOOL_FAILED`'s `reason`: its entry, or for a code from outside the table (a
 * Node error's, another library's) 404 when it says not found, else `TOOL_FAILED`'s.
 */
function reasonStatus(reason: string): ContentfulStatusCode {
  if (Object.hasOwn(ERROR_STATUS, reason)) return ERROR_STATUS[reason as ApiErrorCode]
  return reason.endsWith('_NOT_FOUND') ? 404 : ERROR_STATUS.TOOL_FAILED
}

type Failure = Extract<ToolCallOutcome, { ok: false }>['error']

/**
 * The HTTP status of a failed tool call: its code's (invalid parameters 400, unknown tool 404,
 * denied 403, canceled 409, any other failure 422). `resource` (the operator REST routes, which
 * name a resource in the path) answers 404 for a `TOOL_FAILED` whose `reason` says the id names
 * nothing.
 */
export function failureStatus(
  error: Pick<Failure, 'code' | 'reason'>,
  options: { readonly resource?: boolean } = {},
): ContentfulStatusCode {
  if (
    options.resource === true &&
    error.code === 'TOOL_FAILED' &&
    error.reason !== undefined &&
    reasonStatus(error.reason) === 404
  )
    return 404
  return errorStatus(error.code)
}
