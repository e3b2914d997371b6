/**
 * The one table from an error code to its HTTP status (src/http/error-status.ts, issue 22): every
 * code the tools, the packages' services and the server can answer with has its own entry, and
 * that entry is the status the API answered before the table existed, when statuses were decided
 * in several places (the app's error handler, the tool-call mapping, the chat routes, the guards).
 */
import type { BackgroundErrorCode } from '@lango/background'
import type { CronErrorCode } from '@lango/cron'
import type { ExecErrorCode } from '@lango/exec'
import type { ToolErrorCode } from '@lango/tools'
import type { WorkflowErrorCode } from '@lango/workflow'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { describe, expect, expectTypeOf, it } from 'vitest'
import type { AgentErrorCode } from '../src/agent/errors.js'
import type { ChannelErrorCode } from '../src/channels/errors.js'
import type { CliErrorCode } from '../src/cli/errors.js'
import type { ConfigErrorCode } from '../src/config/errors.js'
import { type AnyServerErrorCode, SERVER_ERROR_CODES, type ServerErrorCode } from '../src/errors.js'
import {
  type ApiErrorCode,
  ERROR_STATUS,
  errorStatus,
  failureStatus,
  type HttpErrorCode,
} from '../src/http/error-status.js'
import type { SessionErrorCode } from '../src/sessions/errors.js'
import type { VaultErrorCode } from '../src/vault/errors.js'

/** Every code, from the packages' own unions and the server's error classes (not from the table). */
type EveryCode =
  | HttpErrorCode
  | ToolErrorCode
  | ExecErrorCode
  | CronErrorCode
  | WorkflowErrorCode
  | BackgroundErrorCode
  | ServerErrorCode
  | AgentErrorCode
  | ChannelErrorCode
  | ConfigErrorCode
  | SessionErrorCode
  | VaultErrorCode
  | CliErrorCode

// Type level (tsc --noEmit): the table's keys are exactly every code, each with an HTTP status, and
// each server error class's codes are the table's under its prefix.
expectTypeOf<keyof typeof ERROR_STATUS>().toEqualTypeOf<EveryCode>()
expectTypeOf<ApiErrorCode>().toEqualTypeOf<EveryCode>()
expectTypeOf<(typeof ERROR_STATUS)[EveryCode]>().toExtend<ContentfulStatusCode>()
expectTypeOf<AnyServerErrorCode>().toEqualTypeOf<
  | ServerErrorCode
  | AgentErrorCode
  | ChannelErrorCode
  | ConfigErrorCode
  | SessionErrorCode
  | VaultErrorCode
  | CliErrorCode
>()

/** The HTTP layer's own codes, as the guards, body checks and error handler answered them. */
const HTTP_LAYER: Record<HttpErrorCode, number> = {
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
  CANCELLED: 499,
  HTTP_ERROR: 500,
  INTERNAL_ERROR: 500,
  WEBHOOK_UNAUTHORIZED: 401,
  WEBHOOK_REPLAYED: 409,
  WEBHOOK_RATE_LIMITED: 429,
  WEBHOOK_NOT_STARTED: 503,
}

/** A tool call's failure, as the tool-call mapping answered it. */
function toolStatus(code: ToolErrorCode): number {
  switch (code) {
    case 'TOOL_INVALID_PARAMETERS':
      return 400
    case 'TOOL_NOT_FOUND':
      return 404
    case 'TOOL_DENIED':
      return 403
    case 'TOOL_CANCELED':
      return 409
    case 'TOOL_FAILED':
      return 422
  }
}

/** The agent's failures, as the chat routes answered them: the model server's 502, a timeout 504, a spent budget 429. */
function agentStatus(code: string): number {
  if (code === 'AGENT_NO_MODEL') return 503
  if (code === 'AGENT_TIMEOUT') return 504
  // The turn's own budget (agent.budget) is spent: 429, as OpenAI answers an exhausted quota.
  if (code === 'AGENT_BUDGET_EXHAUSTED') return 429
  const modelServer = [
    'AGENT_MODEL_UNREACHABLE',
    'AGENT_MODEL_UNAUTHORIZED',
    'AGENT_MODEL_RATE_LIMITED',
    'AGENT_MODEL_ERROR',
    'AGENT_INVALID_RESPONSE',
  ]
  return modelServer.includes(code) ? 502 : 500
}

/**
 * The status the API answers `code` with: its own where it is answered as the error's `code`, and
 * for a service's code (a `TOOL_FAILED`'s `reason`) the status of that failure on a resource route.
 */
function answered(code: string): number {
  if (Object.hasOwn(HTTP_LAYER, code)) return HTTP_LAYER[code as HttpErrorCode]
  if (code.startsWith('TOOL_')) return toolStatus(code as ToolErrorCode)
  if (code.startsWith('SERVER_'))
    return code === 'SERVER_APPROVAL_NOT_FOUND' ? 404 : code === 'SERVER_APPROVAL_DECIDED' ? 409 : 500
  if (code.startsWith('AGENT_')) return agentStatus(code)
  return code.endsWith('_NOT_FOUND') ? 404 : 422
}

const codes = Object.keys(ERROR_STATUS) as EveryCode[]

describe('the error status table', () => {
  it('has an entry for every code of every package and of the server', () => {
    const prefixes = new Set(codes.map((code) => (code.startsWith('TOOL_') ? 'TOOL' : code.split('_')[0])))
    for (const prefix of ['TOOL', 'EXEC', 'CRON', 'WORKFLOW', 'BACKGROUND', 'SERVER', 'AGENT', 'CHANNEL']) {
      expect(prefixes, prefix).toContain(prefix)
    }
    for (const code of Object.keys(SERVER_ERROR_CODES)) expect(codes).toContain(code)
    for (const code of Object.keys(HTTP_LAYER)) expect(codes).toContain(code)
  })

  it.each(codes)('%s: the status the API answers it with', (code) => {
    expect(Object.hasOwn(ERROR_STATUS, code)).toBe(true)
    expect(errorStatus(code)).toBe(answered(code))
  })

  it.each(codes)('%s as the reason of a TOOL_FAILED: 404 on a resource route only for not found', (code) => {
    const failure = { code: 'TOOL_FAILED', reason: code } as const
    expect(failureStatus(failure)).toBe(422)
    expect(failureStatus(failure, { resource: true })).toBe(
      code.endsWith('_NOT_FOUND') || code === 'NOT_FOUND' ? 404 : 422,
    )
  })

  it('gives a reason from outside the table 404 on a resource route when it says not found', () => {
    const resource = { resource: true } as const
    expect(failureStatus({ code: 'TOOL_FAILED', reason: 'ERR_MODULE_NOT_FOUND' }, resource)).toBe(404)
    expect(failureStatus({ code: 'TOOL_FAILED', reason: 'ENOENT' }, resource)).toBe(422)
    expect(failureStatus({ code: 'TOOL_FAILED', reason: 'constructor' }, resource)).toBe(422)
    expect(failureStatus({ code: 'TOOL_FAILED' }, resource)).toBe(422)
  })

  it('keeps the status of a tool code whatever its reason', () => {
    for (const code of codes.filter((each) => each.startsWith('TOOL_') && each !== 'TOOL_FAILED')) {
      const failure = { code: code as ToolErrorCode, reason: 'CRON_JOB_NOT_FOUND' }
      expect(failureStatus(failure, { resource: true })).toBe(toolStatus(code as ToolErrorCode))
    }
  })
})
