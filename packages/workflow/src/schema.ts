import { durationProblemMessage, formatDuration as formatExactDuration, readDuration } from '@lango/duration'
import * as v from 'valibot'
import { scheduleProblem } from './cron-schedule.js'
import { DURATION_UNIT_MISSING } from './duration.js'
import type { WorkflowIssue, WorkflowIssueCode } from './errors.js'
import type { WorkflowLimits } from './limits.js'

/** Workflow names and step ids: `[A-Za-z0-9_-]`, 1 to 64 characters. */
export const IDENTIFIER = /^[A-Za-z0-9_-]{1,64}$/
/** A delivery target: `channel` or `channel:id`. */
export const DELIVERY_TARGET = /^[A-Za-z0-9_-]{1,32}(?::[^\s:][^\s]{0,255})?$/

/** Most targets in one `deliver_to` (and `startRun`'s `deliverTo`). */
export const MAX_TARGETS = 16
/** A webhook trigger's hook name (the last segment of the host's `POST /hooks/<name>`). */
const HOOK_NAME = /^[A-Za-z0-9_-]{1,56}$/
const MAX_TRIGGERS = 8

function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value })
    return true
  } catch {
    return false
  }
}

/**
 * A duration in the one grammar (ADR 0013), more than zero unless `zero` allows it, of at most
 * `maxMs`. Messages are fixed (WF-6): they say what is wrong and what is accepted, quoting nothing;
 * a bare number gets its own, since it is the likeliest mistake.
 */
function duration(maxMs: number, options: { readonly zero?: boolean } = {}) {
  return v.pipe(
    v.string(),
    v.rawCheck<string>(({ dataset, addIssue }) => {
      if (!dataset.typed) return
      const reading = readDuration(dataset.value)
      if (!reading.ok)
        addIssue({
          message:
            reading.problem === 'unit-missing'
              ? DURATION_UNIT_MISSING
              : durationProblemMessage('', reading.problem),
        })
      else if (reading.milliseconds === 0 && options.zero !== true)
        addIssue({
          message: `must be more than zero, at most ${formatExactDuration(maxMs)} (such as 30s or 5m)`,
        })
      else if (reading.milliseconds > maxMs)
        addIssue({ message: `must be at most ${formatExactDuration(maxMs)} (such as 30s or 5m)` })
    }),
  )
}

/** Every key a workflow may have (unknown keys are errors). */
const WORKFLOW_KEYS = [
  'name',
  'description',
  'schedule',
  'triggers',
  'timezone',
  'deliver_to',
  'max_parallel',
  'steps',
] as const
/** Every key a step may have. */
const STEP_KEYS = [
  'id',
  'prompt',
  'run',
  'agent',
  'depends_on',
  'timeout',
  'retry',
  'continue_on_error',
  'deliver_to',
  'when',
  'continue_on_skip',
] as const

function buildSchema(limits: WorkflowLimits) {
  const identifier = v.pipe(v.string(), v.regex(IDENTIFIER, 'must match [A-Za-z0-9_-]{1,64}'))
  const targets = v.pipe(
    v.array(v.pipe(v.string(), v.regex(DELIVERY_TARGET, 'must be "channel" or "channel:id"'))),
    v.maxLength(MAX_TARGETS, `must list at most ${MAX_TARGETS} targets`),
  )
  const text = v.pipe(
    v.string(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(limits.maxStringLength, `must be at most ${limits.maxStringLength} characters`),
  )
  // A shell command cannot carry NUL (the spawner refuses it at run time): refused here instead.
  const command = v.pipe(
    text,
    v.check((value) => !value.includes('\u0000'), 'must not contain a NUL character'),
  )
  const step = v.objectWithRest(
    {
      id: identifier,
      prompt: v.optional(text),
      run: v.optional(command),
      agent: v.optional(identifier),
      depends_on: v.optional(
        v.pipe(
          v.array(identifier),
          v.maxLength(limits.maxDependencies, `must list at most ${limits.maxDependencies} steps`),
        ),
      ),
      timeout: v.optional(duration(limits.maxTimeoutMs)),
      retry: v.optional(
        v.objectWithRest(
          {
            attempts: v.pipe(
              v.number(),
              v.integer('must be a whole number'),
              v.minValue(1, `must be from 1 to ${limits.maxAttempts}`),
              v.maxValue(limits.maxAttempts, `must be from 1 to ${limits.maxAttempts}`),
            ),
            backoff: v.optional(duration(3_600_000, { zero: true })),
          },
          v.never(),
        ),
      ),
      continue_on_error: v.optional(v.boolean()),
      deliver_to: v.optional(targets),
      when: v.optional(command),
      continue_on_skip: v.optional(v.boolean()),
    },
    v.never(),
  )
  return v.objectWithRest(
    {
      name: identifier,
      description: v.optional(v.pipe(v.string(), v.maxLength(1024, 'must be at most 1024 characters'))),
      schedule: v.optional(
        v.pipe(
          v.string(),
          v.minLength(1, 'must not be empty'),
          v.maxLength(128, 'is too long'),
          v.rawCheck<string>(({ dataset, addIssue }) => {
            if (!dataset.typed) return
            const problem = scheduleProblem(dataset.value)
            if (problem !== undefined) addIssue({ message: problem })
          }),
        ),
      ),
      triggers: v.optional(
        v.pipe(
          v.array(
            v.strictObject({
              webhook: v.pipe(v.string(), v.regex(HOOK_NAME, 'must be a hook name: [A-Za-z0-9_-]{1,56}')),
            }),
          ),
          v.minLength(1, 'must list at least one trigger'),
          v.maxLength(MAX_TRIGGERS, `must list at most ${MAX_TRIGGERS} triggers`),
        ),
      ),
      timezone: v.optional(
        v.pipe(v.string(), v.maxLength(64, 'is too long'), v.check(isTimeZone, 'must be an IANA time zone')),
      ),
      deliver_to: v.optional(targets),
      max_parallel: v.optional(
        v.pipe(
          v.number(),
          v.integer('must be a whole number'),
          v.minValue(1, `must be from 1 to ${limits.maxParallel}`),
          v.maxValue(limits.maxParallel, `must be from 1 to ${limits.maxParallel}`),
        ),
      ),
      steps: v.pipe(v.array(step), v.minLength(1, 'must list at least one step')),
    },
    v.never(),
  )
}

const schemas = new WeakMap<WorkflowLimits, ReturnType<typeof buildSchema>>()

/** The valibot schema for these limits (built once per limits object). */
export function workflowSchema(limits: WorkflowLimits): ReturnType<typeof buildSchema> {
  let schema = schemas.get(limits)
  if (schema === undefined) {
    schema = buildSchema(limits)
    schemas.set(limits, schema)
  }
  return schema
}

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  boolean: 'true or false',
  Array: 'a list',
  Object: 'a mapping',
}

/** A path segment: a mapping key or a list index. */
export type PathSegment = string | number

/** Formats `['steps', 2, 'id']` as `steps[2].id`. */
export function formatPath(segments: readonly PathSegment[]): string {
  let text = ''
  for (const segment of segments) {
    if (typeof segment === 'number') text += `[${segment}]`
    else text += text === '' ? segment : `.${segment}`
  }
  return text
}

const KNOWN_KEYS = new Set<string>([
  ...WORKFLOW_KEYS,
  ...STEP_KEYS,
  'attempts',
  'backoff',
  '__proto__',
  'constructor',
  'prototype',
])

/** Levenshtein distance, stopping early above `limit`. Keys are short. */
function editDistance(left: string, right: string, limit: number): number {
  if (Math.abs(left.length - right.length) > limit) return limit + 1
  let previous = Array.from({ length: right.length + 1 }, (_, index) => index)
  for (let row = 1; row <= left.length; row += 1) {
    const current = [row]
    let best = row
    for (let column = 1; column <= right.length; column += 1) {
      const cost = left[row - 1] === right[column - 1] ? 0 : 1
      const value = Math.min(
        (previous[column] as number) + 1,
        (current[column - 1] as number) + 1,
        (previous[column - 1] as number) + cost,
      )
      current.push(value)
      if (value < best) best = value
    }
    if (best > limit) return limit + 1
    previous = current
  }
  return previous[right.length] as number
}

/** The known key an unknown key is a likely typo of, if any. */
function suggestionFor(key: string): string | undefined {
  if (key.length > 24) return undefined
  const limit = key.length <= 5 ? 1 : 2
  for (const known of KNOWN_KEYS) if (editDistance(key.toLowerCase(), known, limit) <= limit) return known
  return undefined
}

/**
 * A key is echoed in a path only when it is a schema key or a near-typo of one; any other key could
 * be source text (a secret used as a key), so it shows as `<unknown>` and line/column locate it.
 */
function safeKey(key: unknown): PathSegment {
  if (typeof key === 'number') return key
  if (typeof key !== 'string') return '<unknown>'
  if (KNOWN_KEYS.has(key) || key === '<<' || suggestionFor(key) !== undefined) return key
  return '<unknown>'
}

/**
 * Turns valibot issues into workflow issues with fixed messages. valibot's own messages quote the
 * received value, so they are never used (SECURITY.md WF-6).
 */
export function toWorkflowIssues(
  issues: readonly v.BaseIssue<unknown>[],
): Array<WorkflowIssue & { segments: PathSegment[] }> {
  const result: Array<WorkflowIssue & { segments: PathSegment[] }> = []
  for (const issue of issues) {
    // Raw keys locate the node (line/column); only safe keys are shown in the path.
    const segments = (issue.path ?? []).map((item) => item.key as PathSegment)
    const shown = segments.map(safeKey)
    const last = shown[shown.length - 1]
    let code: WorkflowIssueCode
    let message: string
    if (issue.kind === 'schema') {
      if (issue.type === 'never') {
        code = 'unknown_key'
        const suggestion = typeof last === 'string' && last !== '<unknown>' ? suggestionFor(last) : undefined
        message =
          last === '<<'
            ? 'merge keys (<<) are not supported'
            : suggestion === undefined
              ? 'unknown key'
              : `unknown key (did you mean ${suggestion}?)`
      } else if (
        issue.input === undefined &&
        (issue.type === 'object_with_rest' || issue.type === 'object')
      ) {
        code = 'missing_key'
        message = 'is required'
      } else if ((last === 'timeout' || last === 'backoff') && typeof issue.input === 'number') {
        // `timeout: 30` in YAML is a number: seconds or milliseconds? (ADR 0013)
        code = 'invalid_duration'
        message = DURATION_UNIT_MISSING
      } else {
        code = 'invalid_type'
        message = `must be ${TYPE_NAMES[issue.expected ?? ''] ?? 'of another type'}`
      }
    } else {
      code = last === 'timeout' || last === 'backoff' ? 'invalid_duration' : 'invalid_value'
      if (last === 'depends_on' && issue.type === 'max_length') code = 'too_many_dependencies'
      message = issue.message
    }
    result.push({ path: formatPath(shown), message, code, segments })
  }
  return result
}

/** Keys valibot's object schemas skip silently; we report them as unknown keys instead. */
const SKIPPED_BY_VALIBOT = ['__proto__', 'constructor', 'prototype'] as const

/**
 * Own keys valibot does not look at (`__proto__`, `constructor`, `prototype`; yaml makes
 * `__proto__:` an own property). Reported as unknown keys so the schema stays strict.
 */
export function findSkippedKeys(
  root: Record<string, unknown>,
): Array<WorkflowIssue & { segments: PathSegment[] }> {
  const found: Array<WorkflowIssue & { segments: PathSegment[] }> = []
  const check = (record: unknown, at: PathSegment[]) => {
    if (typeof record !== 'object' || record === null || Array.isArray(record)) return
    for (const key of SKIPPED_BY_VALIBOT) {
      if (Object.hasOwn(record, key)) {
        const segments = [...at, key]
        found.push({ path: formatPath(segments), segments, message: 'unknown key', code: 'unknown_key' })
      }
    }
  }
  check(root, [])
  if (Array.isArray(root.steps)) {
    root.steps.forEach((step: unknown, index) => {
      check(step, ['steps', index])
      if (typeof step === 'object' && step !== null)
        check((step as Record<string, unknown>).retry, ['steps', index, 'retry'])
    })
  }
  return found
}
