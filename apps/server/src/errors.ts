import type { ContentfulStatusCode } from 'hono/utils/http-status'

/**
 * Every code of the server's own errors, with its meaning (the doc comment) and the HTTP status the
 * API answers it with (src/http/error-status.ts). `SERVER_*` and `AGENT_*` codes are answered as
 * the error's `code`. The others reach the API only as the `reason` of a tool's `TOOL_FAILED`, so
 * their status is that failure's on a route naming a resource: 404 for a name that names nothing,
 * else 422 (the CLI's and the configuration's never reach it at all). Callers branch on codes,
 * never on messages; no code here is ever renamed.
 */
export const SERVER_ERROR_CODES = {
  // ServerError (src/errors.ts)
  /** The database could not be opened (the SQLite file) or reached (PostgreSQL). */
  SERVER_DATABASE_UNAVAILABLE: 500,
  /** A package's migrations failed; nothing was started. */
  SERVER_MIGRATION_FAILED: 500,
  /**
   * The database was migrated by a newer Lango (a migration table lists a migration this server does
   * not know): refused before anything is written; upgrade the server or restore a backup.
   */
  SERVER_DATABASE_TOO_NEW: 500,
  /** The server refused to start (e.g. a non-loopback address without `LANGO_API_TOKEN`). */
  SERVER_UNSAFE_BIND: 500,
  /** The address is taken or cannot be bound. */
  SERVER_LISTEN_FAILED: 500,
  /**
   * A saved workflow's schedule (or a webhook trigger) could not be registered with cron: its job
   * name too long, taken by a job the server did not make, or refused by cron. `workflow_save`
   * refuses such a workflow before writing it (the `reason` of its `TOOL_FAILED`, 422).
   */
  SERVER_SCHEDULE_FAILED: 500,
  /**
   * The cron job of a saved workflow's schedule (or webhook trigger) was not removed: the workflow's
   * file still declares it and the server would make it again. Remove the schedule from the
   * workflow, or the workflow, instead (the `reason` of `cron_remove`'s `TOOL_FAILED`, 422).
   */
  SERVER_SCHEDULED_WORKFLOW_JOB: 500,
  /** No approval has that id (never existed, or pruned from the history). */
  SERVER_APPROVAL_NOT_FOUND: 404,
  /**
   * The approval was no longer pending when the answer came (answered, expired or cancelled): the
   * answer changed nothing. `data` holds the approval as it stands (`approval`), its `status` and
   * `decided_by`.
   */
  SERVER_APPROVAL_DECIDED: 409,

  // AgentError (src/agent/errors.ts): the model server's faults are 502, a timeout 504.
  /** No model is configured (no base URL or no model name): agent runs cannot start. */
  AGENT_NO_MODEL: 503,
  /** The runner's options are invalid (a base URL that is not http(s), a step limit out of range). */
  AGENT_INVALID_OPTIONS: 500,
  /** The model server could not be reached (connection refused, DNS, reset) after the retries. */
  AGENT_MODEL_UNREACHABLE: 502,
  /** The model server refused the credentials (401 or 403). */
  AGENT_MODEL_UNAUTHORIZED: 502,
  /** The model server kept answering 429 Too Many Requests after the retries. */
  AGENT_MODEL_RATE_LIMITED: 502,
  /** The model server answered another error status (404 unknown model, 500, 503, …). */
  AGENT_MODEL_ERROR: 502,
  /** The model server answered 2xx with a body that is not a chat completion (not JSON, no choices). */
  AGENT_INVALID_RESPONSE: 502,
  /** The run did not finish within the runner's `timeoutMs`. */
  AGENT_TIMEOUT: 504,
  /** The model still wanted to call tools when the step limit (`maxSteps`) was reached. */
  AGENT_STEP_LIMIT: 500,
  /**
   * The turn passed its budget (`agent.budget`: tokens or cost per turn) and the model still wanted
   * to call tools: it was stopped before the next model call (`budget_exhausted`).
   */
  AGENT_BUDGET_EXHAUSTED: 429,
  /** The conversation memory could not be loaded. */
  AGENT_MEMORY_FAILED: 500,
  /** Anything else that went wrong in a run. */
  AGENT_FAILED: 500,

  // ChannelError (src/channels/errors.ts)
  /** The target names no registered channel and is not a built-in one (`matrix:…` with no `matrix` adapter). */
  CHANNEL_UNKNOWN: 422,
  /** The target names a built-in channel (`telegram`, `slack`, `discord`, `webhook`) that is not configured. */
  CHANNEL_NOT_CONFIGURED: 422,
  /** The target or chat id is malformed (empty id, a Telegram chat id that is not a number …). */
  CHANNEL_INVALID_TARGET: 422,
  /** A bare target (`telegram`) but the channel has no default chat (no allowed chat, no default channel). */
  CHANNEL_NO_DEFAULT_CHAT: 422,
  /** The message text is empty or blank; nothing was sent. */
  CHANNEL_INVALID_MESSAGE: 422,
  /** The chat is not in the channel's allow list; nothing was sent. */
  CHANNEL_TARGET_NOT_ALLOWED: 422,
  /** The service refused the message, or it could not be reached after the bounded retries. */
  CHANNEL_SEND_FAILED: 422,
  /** The service rejected the credentials (HTTP 401, Slack `invalid_auth`). */
  CHANNEL_AUTH_FAILED: 422,
  /** Telegram answered 409 Conflict: another process long-polls this bot token (only one may). */
  CHANNEL_CONFLICT: 422,
  /** Receiving stopped for a reason other than 401/409 (the service kept failing). */
  CHANNEL_RECEIVE_FAILED: 422,
  /** Wrong lifecycle state: an approval before `start()` or after `stop()`, or a router started twice. */
  CHANNEL_NOT_STARTED: 422,
  /** Too many approvals are pending on this channel; the new request is refused (denied). */
  CHANNEL_APPROVALS_FULL: 422,
  /** An adapter's options are invalid (missing token, bad URL, bad name). */
  CHANNEL_INVALID_OPTIONS: 422,
  /** Two adapters were registered under one name. */
  CHANNEL_DUPLICATE: 422,
  /** The custom adapter module named in config does not exist. */
  CHANNEL_ADAPTER_NOT_FOUND: 404,
  /** The custom adapter module threw while loading, or its factory threw. */
  CHANNEL_ADAPTER_LOAD_FAILED: 422,
  /** The module has no default-exported factory, or the factory returned something that is not an adapter. */
  CHANNEL_ADAPTER_INVALID: 422,

  // ConfigError (src/config/errors.ts)
  /** `lango.yaml` or a `LANGO_*` variable is unreadable or invalid; `issues` lists every problem. */
  CONFIG_INVALID: 422,

  // SessionError (src/sessions/errors.ts)
  /** A session key is not `<kind>:<id>` (kind `[a-z][a-z0-9_-]{0,31}`, id 1–223 characters, no control characters). */
  SESSION_INVALID_KEY: 422,
  /** A message is not a model message (`role` system/user/assistant/tool with string or part-array `content`), or is not JSON-serialisable. */
  SESSION_INVALID_MESSAGE: 422,
  /** A message is larger than `maxMessageBytes` even after its binary parts were omitted and its long texts shortened. */
  SESSION_MESSAGE_TOO_LARGE: 422,
  /** One `append` carries more messages than `maxMessages` or more bytes than `maxSessionBytes`. */
  SESSION_TURN_TOO_LARGE: 422,
  /** A store option is out of range or inconsistent (e.g. `keepRecentMessages` ≥ `observeAfterMessages`). */
  SESSION_INVALID_OPTION: 422,
  /** A stored row failed validation (edited by hand or written by an incompatible version). */
  SESSION_STORE_CORRUPT: 422,
  /** The observer threw, was aborted, timed out, returned no text or an empty reflection; the session is unchanged. */
  SESSION_OBSERVER_FAILED: 422,

  // VaultError (src/vault/errors.ts)
  /** No passphrase was given: set `LANGO_PASSPHRASE`. */
  VAULT_NO_PASSPHRASE: 422,
  /** The passphrase does not open this vault (its key-check value does not decrypt). */
  VAULT_WRONG_PASSPHRASE: 422,
  /** A secret name is not 1–64 characters of `A-Z a-z 0-9 _ . -`. */
  VAULT_INVALID_NAME: 422,
  /** A value is not a string, holds a NUL character, or is not valid UTF-8 / UTF-16. */
  VAULT_INVALID_VALUE: 422,
  /** A value is shorter than `MIN_SECRET_LENGTH` (8) characters: masking it would reveal it. */
  VAULT_VALUE_TOO_SHORT: 422,
  /** A value is longer than 64 KiB (UTF-8 bytes). */
  VAULT_VALUE_TOO_LARGE: 422,
  /** Stored data does not decrypt or parse: a changed ciphertext, a row moved to another name. */
  VAULT_CORRUPT: 422,
  /** An option was out of range (scrypt cost parameters). */
  VAULT_INVALID_OPTION: 422,
  /** Reading a value from the terminal ended without one (Ctrl-C, end of input). */
  VAULT_INPUT_CANCELED: 422,

  // CliError (src/cli/errors.ts): the command line's own, never the server's answer.
  /** Nothing listens at the server's URL (ECONNREFUSED). Exit 3. */
  CLI_SERVER_NOT_RUNNING: 422,
  /** The server's URL did not answer for another reason (DNS, timeout, reset). */
  CLI_SERVER_UNREACHABLE: 422,
  /** The server answered something that is not the JSON API (another program on that port?). */
  CLI_BAD_RESPONSE: 422,
  /** An option's value is out of range or malformed (a duration, a limit). Exit 2. */
  CLI_INVALID_OPTION: 422,
  /** A file named on the command line cannot be read. */
  CLI_FILE_UNREADABLE: 422,
  /** A workflow file does not validate; `issues` lists every problem. */
  CLI_INVALID_WORKFLOW: 422,
  /** A run, task or job ended failed, cancelled, timed out or skipped (under `--wait`). */
  CLI_RUN_FAILED: 422,
  /** `--wait --timeout` passed before the run ended; the run goes on. */
  CLI_WAIT_TIMEOUT: 422,
  /** What was named (a secret) does not exist. */
  CLI_NOT_FOUND: 404,
  /** `lango backup` on PostgreSQL: the server's database is backed up with `pg_dump`, not by lango. */
  CLI_BACKUP_UNSUPPORTED: 422,
  /** `lango backup` could not copy the database, or the copy failed its integrity check (no file left). */
  CLI_BACKUP_FAILED: 422,
} as const satisfies Record<string, ContentfulStatusCode>

/** Any code of {@link SERVER_ERROR_CODES}: the code of one of the server's errors. */
export type AnyServerErrorCode = keyof typeof SERVER_ERROR_CODES

/** Codes of {@link ServerError} (`SERVER_*` in {@link SERVER_ERROR_CODES}); callers branch on these, never on messages. */
export type ServerErrorCode = Extract<AnyServerErrorCode, `SERVER_${string}`>

const brand = Symbol.for('lango.error')

/** What {@link LangoServerError.toJSON} gives a caller: never `cause` or `stack`. */
export interface ServerErrorJson<Code extends string = string> {
  readonly name?: string
  readonly code: Code
  readonly message: string
  readonly data?: Readonly<Record<string, unknown>>
}

/**
 * The base of every error of the server, in the one error shape of ADR 0006: a `code` (of
 * {@link SERVER_ERROR_CODES}, or the API's for the CLI's `ApiError`), a message for people,
 * `cause` kept, `data` frozen, `toJSON` without cause or stack, and the `Symbol.for('lango.error')`
 * brand its subclasses' `is()` check (with the name), not `instanceof`.
 */
export abstract class LangoServerError<Code extends string = AnyServerErrorCode> extends Error {
  abstract override readonly name: string
  readonly [brand] = true
  /** Ids, names, limits and statuses; never secrets or user text. */
  readonly data?: Readonly<Record<string, unknown>>

  constructor(
    readonly code: Code,
    message: string,
    options?: { readonly cause?: unknown; readonly data?: Record<string, unknown> },
  ) {
    super(message, { cause: options?.cause })
    if (options?.data !== undefined) this.data = Object.freeze({ ...options.data })
  }

  /** What may be returned to a caller: never `cause` or `stack`. */
  toJSON(): ServerErrorJson<Code> {
    return this.data === undefined
      ? { name: this.name, code: this.code, message: this.message }
      : { name: this.name, code: this.code, message: this.message, data: this.data }
  }
}

/**
 * True for an error of the server named `name` (`'AgentError'`), also one from another copy of
 * its module: the brand and the name, not `instanceof`.
 */
export function isServerErrorNamed(value: unknown, name: string): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    brand in value &&
    (value as { name?: unknown }).name === name
  )
}

/** The server's own error (start-up, database, approvals): the `SERVER_*` codes. */
export class ServerError extends LangoServerError<ServerErrorCode> {
  override readonly name = 'ServerError'
}
