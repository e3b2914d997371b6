import { invalidOptionError, MAX_TIMER_MS } from './errors.js'
import { refuseUnknownKeys } from './option-keys.js'

/**
 * Size and shape caps applied while loading a workflow. Agent-supplied YAML gets
 * {@link AGENT_WORKFLOW_LIMITS} (SECURITY.md WF-5); trusted callers (the server's own files, the
 * benchmark) may pass larger numbers.
 */
export interface WorkflowLimits {
  /** Largest source, in UTF-8 bytes. */
  readonly maxSourceBytes: number
  /** Most steps in one workflow. */
  readonly maxSteps: number
  /** Most entries in one step's `depends_on`. */
  readonly maxDependencies: number
  /** Longest `prompt` or `run` string, in characters. */
  readonly maxStringLength: number
  /** Deepest nesting of YAML collections, checked on the syntax tree before conversion. */
  readonly maxDepth: number
  /** Alias budget passed to `yaml` (`maxAliasCount`; 0 forbids aliases). Never -1. */
  readonly maxAliasCount: number
  /** Largest `max_parallel`. */
  readonly maxParallel: number
  /** Longest step `timeout`, in milliseconds. */
  readonly maxTimeoutMs: number
  /** Most attempts in `retry.attempts`. */
  readonly maxAttempts: number
}

/**
 * Safe defaults for YAML an agent supplies (`workflow_run` with `yaml_content` or `file_path`,
 * `workflow_save`): SECURITY.md WF-5 — 256 KiB, 100 steps, 32 dependencies per step, 16 KiB per
 * prompt or command, 64 nesting levels — and a small alias budget (WF-6).
 */
export const AGENT_WORKFLOW_LIMITS: WorkflowLimits = Object.freeze({
  maxSourceBytes: 256 * 1024,
  maxSteps: 100,
  maxDependencies: 32,
  maxStringLength: 16 * 1024,
  maxDepth: 64,
  maxAliasCount: 16,
  maxParallel: 16,
  maxTimeoutMs: 60 * 60 * 1000,
  maxAttempts: 10,
})

/**
 * Larger caps for files the operator controls (ARCHITECTURE.md §5: 1 MiB, 1000 steps). Resumed runs
 * re-read their stored definition with at least these caps.
 */
export const TRUSTED_WORKFLOW_LIMITS: WorkflowLimits = Object.freeze({
  maxSourceBytes: 1024 * 1024,
  maxSteps: 1000,
  maxDependencies: 256,
  maxStringLength: 64 * 1024,
  maxDepth: 64,
  maxAliasCount: 100,
  maxParallel: 64,
  maxTimeoutMs: 24 * 60 * 60 * 1000,
  maxAttempts: 10,
})

const LIMIT_KEYS = Object.keys(AGENT_WORKFLOW_LIMITS) as readonly (keyof WorkflowLimits)[]
const checkLimitKeys = refuseUnknownKeys('limits', LIMIT_KEYS, 'limits.')

/**
 * Fills a partial set of limits from `base` (default {@link AGENT_WORKFLOW_LIMITS}) and checks them:
 * a mapping of known caps, each a whole number from 0 (`maxTimeoutMs` at most {@link MAX_TIMER_MS},
 * the longest timer Node keeps); throws `WORKFLOW_INVALID_OPTION` otherwise. An `undefined` cap keeps `base`'s.
 */
export function resolveLimits(
  limits: Partial<WorkflowLimits> | undefined,
  base: WorkflowLimits = AGENT_WORKFLOW_LIMITS,
): WorkflowLimits {
  if (limits === undefined) return base
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits))
    throw invalidOptionError(
      'limits',
      `limits must be an object of caps (${LIMIT_KEYS.join(', ')}), such as AGENT_WORKFLOW_LIMITS`,
    )
  checkLimitKeys(limits)
  const merged: Record<string, number> = { ...base }
  for (const [key, value] of Object.entries(limits)) if (value !== undefined) merged[key] = value as number
  for (const key of LIMIT_KEYS) {
    const value = merged[key]
    const max = key === 'maxTimeoutMs' ? MAX_TIMER_MS : Number.MAX_SAFE_INTEGER
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > max)
      throw invalidOptionError(
        `limits.${key}`,
        key === 'maxTimeoutMs'
          ? `limits.maxTimeoutMs must be a whole number of milliseconds from 0 to ${MAX_TIMER_MS} (about 24.8 days, the longest timer Node keeps)`
          : `limits.${key} must be a whole number, 0 or more`,
        { min: 0, max },
      )
  }
  return Object.freeze(merged as unknown as WorkflowLimits)
}

/** The larger of two sets of limits, field by field (used when re-reading a stored definition). */
export function widestLimits(first: WorkflowLimits, second: WorkflowLimits): WorkflowLimits {
  const merged: Record<string, number> = {}
  for (const key of Object.keys(first) as (keyof WorkflowLimits)[])
    merged[key] = Math.max(first[key], second[key])
  return Object.freeze(merged as unknown as WorkflowLimits)
}
