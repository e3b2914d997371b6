import { describeIssues } from '@lango/tools'
import type { Context } from 'hono'
import type * as v from 'valibot'
import { AgentError } from '../agent/errors.js'
import { errorResponse } from './responses.js'

/** A chat message at most (characters); longer ones are refused, not cut. */
export const MAX_MESSAGE_CHARS = 100_000

/** The 400 `INVALID_REQUEST` for a body that does not match its schema, naming each field. */
export function invalidBody(c: Context, issues: readonly v.BaseIssue<unknown>[]): Response {
  // The tools' wording (`unknown field`, `is required`), with the body's root as an empty path.
  const list = describeIssues(issues).map((issue) => ({
    path: issue.path === '(parameters)' ? '' : issue.path,
    message: issue.message,
  }))
  return errorResponse(
    c,
    'INVALID_REQUEST',
    list.map((issue) => (issue.path === '' ? issue.message : `${issue.path}: ${issue.message}`)).join('; '),
    { issues: list },
  )
}

/**
 * The response for an agent turn that threw: an `AgentError` with its code's status (the model
 * server's faults 502, a timeout 504, no model 503), 499 `CANCELLED` when the client went away;
 * anything else is rethrown (the app's error handler answers it).
 */
export function agentFailure(c: Context, error: unknown): Response {
  if (AgentError.is(error)) return errorResponse(c, error.code, error.message)
  if (c.req.raw.signal.aborted) return errorResponse(c, 'CANCELLED', 'the client went away')
  throw error
}
