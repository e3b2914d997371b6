import * as v from 'valibot'
import { type Document, isCollection, isMap, isPair, isScalar, isSeq, parseDocument } from 'yaml'
import type { LoadedWorkflow, StepDefinition, StepKind, WorkflowDefinition } from './definition.js'
import { parseDuration } from './duration.js'
import type { WorkflowIssue, WorkflowIssueCode } from './errors.js'
import { buildGraph, isAncestor, layersOf, type StepGraph } from './graph.js'
import { resolveLimits, type WorkflowLimits } from './limits.js'
import { refuseUnknownKeys } from './option-keys.js'
import {
  findSkippedKeys,
  formatPath,
  IDENTIFIER,
  type PathSegment,
  toWorkflowIssues,
  workflowSchema,
} from './schema.js'
import { findUnsafeReferences } from './shell-context.js'
import { scanTemplates } from './template.js'

const checkParseKeys = refuseUnknownKeys('parseWorkflow options', ['limits'])

/** Options of {@link parseWorkflow}. */
export interface ParseWorkflowOptions {
  /** Caps; default {@link AGENT_WORKFLOW_LIMITS} (agent-supplied YAML). Trusted callers may raise them. */
  readonly limits?: Partial<WorkflowLimits>
}

/** The outcome of {@link parseWorkflow}: the workflow, or every problem found. */
export type WorkflowParseResult =
  | { readonly ok: true; readonly workflow: LoadedWorkflow }
  | { readonly ok: false; readonly issues: readonly WorkflowIssue[] }

/** `yaml` options fixed by SECURITY.md WF-6: no source excerpts in errors, no merge keys, duplicate keys rejected. */
const YAML_OPTIONS = Object.freeze({
  prettyErrors: false,
  uniqueKeys: true,
  merge: false,
  schema: 'core',
  strict: true,
  // 'silent' would also drop the MULTIPLE_DOCS error; 'error' keeps errors and silences warnings.
  logLevel: 'error',
  keepSourceTokens: false,
} as const)

/** Fixed messages per `yaml` error code; `yaml`'s own messages may quote the source. */
const YAML_MESSAGES: Readonly<Record<string, string>> = {
  ALIAS_PROPS: 'an alias cannot have an anchor or tag',
  BAD_ALIAS: 'invalid alias',
  BAD_DIRECTIVE: 'invalid directive',
  BAD_DQ_ESCAPE: 'invalid escape in a double-quoted string',
  BAD_INDENT: 'bad indentation',
  BAD_PROP_ORDER: 'anchors and tags must come before the value',
  BAD_SCALAR_START: 'a plain value cannot start here',
  BLOCK_AS_IMPLICIT_KEY: 'a block collection cannot be an implicit key',
  BLOCK_IN_FLOW: 'block collections are not allowed inside flow collections',
  DUPLICATE_KEY: 'duplicate key',
  IMPOSSIBLE: 'unparseable input',
  KEY_OVER_1024_CHARS: 'a key is longer than 1024 characters',
  MISSING_CHAR: 'a closing character is missing',
  MULTILINE_IMPLICIT_KEY: 'an implicit key cannot span lines',
  MULTIPLE_ANCHORS: 'a node has more than one anchor',
  MULTIPLE_DOCS: 'only one YAML document is allowed',
  MULTIPLE_TAGS: 'a node has more than one tag',
  NON_STRING_KEY: 'keys must be strings',
  TAB_AS_INDENT: 'tabs are not allowed as indentation',
  TAG_RESOLVE_FAILED: 'unknown tag',
  UNEXPECTED_TOKEN: 'unexpected token',
  BAD_COLLECTION_TYPE: 'unexpected collection type',
}

/**
 * Parses and fully validates a workflow: YAML (safe options, alias and depth caps), the schema
 * (unknown keys, types, ranges, durations), unique ids, known dependencies, no cycles (each cycle
 * reported), templates that reference ancestors only and, in `run` steps, only where quoting is safe.
 * Collects every problem before returning; never throws on bad input. Messages never include
 * source text or values (SECURITY.md WF-6).
 * @example
 * const parsed = parseWorkflow(yamlText)
 * if (!parsed.ok) for (const issue of parsed.issues) console.log(issue.path, issue.message)
 */
export function parseWorkflow(source: string, options?: ParseWorkflowOptions): WorkflowParseResult {
  checkParseKeys(options)
  const limits = resolveLimits(options?.limits)
  if (typeof source !== 'string') return fail('', 'the workflow must be YAML text', 'invalid_type')
  if (
    source.length > limits.maxSourceBytes ||
    (source.length * 3 > limits.maxSourceBytes && Buffer.byteLength(source) > limits.maxSourceBytes)
  ) {
    return fail('', `the workflow is larger than ${limits.maxSourceBytes} bytes`, 'source_too_large')
  }

  let document: Document.Parsed | undefined
  try {
    document = parseDocument(source, YAML_OPTIONS)
  } catch (error) {
    // The parser's own recursion can overflow on pathological nesting; report it, never crash.
    return fail(
      '',
      error instanceof RangeError ? 'the YAML nests too deeply' : 'the YAML could not be parsed',
      error instanceof RangeError ? 'too_deep' : 'yaml_syntax',
    )
  }
  if (document.errors.length > 0) {
    const lines = lineStarts(source)
    return {
      ok: false,
      issues: document.errors.map((error) => ({
        path: '',
        code: 'yaml_syntax' as const,
        message: `YAML syntax error: ${YAML_MESSAGES[error.code] ?? 'invalid YAML'} (${error.code})`,
        ...position(lines, error.pos[0]),
      })),
    }
  }
  if (exceedsDepth(document.contents, limits.maxDepth)) {
    return fail('', `the YAML nests deeper than ${limits.maxDepth} levels`, 'too_deep')
  }

  let value: unknown
  try {
    value = document.toJS({ maxAliasCount: limits.maxAliasCount })
  } catch (error) {
    if (error instanceof ReferenceError) {
      return fail(
        '',
        limits.maxAliasCount === 0
          ? 'YAML aliases are not allowed'
          : `the YAML uses more aliases than allowed (${limits.maxAliasCount})`,
        'yaml_alias_limit',
      )
    }
    return fail(
      '',
      error instanceof RangeError ? 'the YAML nests too deeply' : 'the YAML could not be converted',
      error instanceof RangeError ? 'too_deep' : 'yaml_syntax',
    )
  }
  // Failures re-parse the source to locate issues; the syntax tree is not needed past this point.
  document = undefined
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail('', 'the workflow must be a YAML mapping with name and steps', 'invalid_type')
  }
  const root = value as Record<string, unknown>
  const rawSteps = root.steps
  if (Array.isArray(rawSteps) && rawSteps.length > limits.maxSteps) {
    return withPositions(source, [
      {
        path: 'steps',
        segments: ['steps'],
        message: `must list at most ${limits.maxSteps} steps`,
        code: 'too_many_steps',
      },
    ])
  }

  const checked = v.safeParse(workflowSchema(limits), root, { abortEarly: false })
  const issues = checked.success ? [] : toWorkflowIssues(checked.issues)
  issues.push(...findSkippedKeys(root))

  const steps = Array.isArray(rawSteps) ? rawSteps : []
  const { graph, definitions } = checkSteps(steps, issues)
  if (issues.length > 0) return withPositions(source, issues)

  const definition: WorkflowDefinition = {
    name: root.name as string,
    ...(root.description === undefined ? {} : { description: root.description as string }),
    ...(root.schedule === undefined ? {} : { schedule: root.schedule as string }),
    ...(root.triggers === undefined
      ? {}
      : {
          triggers: Object.freeze(
            (root.triggers as { webhook: string }[]).map((trigger) =>
              Object.freeze({ webhook: trigger.webhook }),
            ),
          ),
        }),
    ...(root.timezone === undefined ? {} : { timezone: root.timezone as string }),
    ...(root.deliver_to === undefined
      ? {}
      : { deliverTo: Object.freeze([...(root.deliver_to as string[])]) }),
    ...(root.max_parallel === undefined ? {} : { maxParallel: root.max_parallel as number }),
    steps: definitions,
  }
  const workflow: LoadedWorkflow = Object.freeze({
    source,
    definition,
    plan: { order: graph.order.map((index) => graph.ids[index] as string), layers: layersOf(graph) },
  })
  validated.set(workflow, graph)
  return { ok: true, workflow }
}

const validated = new WeakMap<LoadedWorkflow, StepGraph>()

/** The graph of a workflow `parseWorkflow` produced; `undefined` for any other object (not trusted as validated). */
export function validatedGraph(workflow: LoadedWorkflow): StepGraph | undefined {
  return validated.get(workflow)
}

/**
 * The checks the schema cannot express: one step kind, unique ids, known and non-self
 * dependencies, cycles and templates. Works on whatever parts of each step are well-typed, so these
 * problems are reported alongside schema problems.
 */
function checkSteps(
  steps: readonly unknown[],
  issues: Array<WorkflowIssue & { segments: PathSegment[] }>,
): { graph: StepGraph; definitions: StepDefinition[] } {
  const add = (segments: PathSegment[], message: string, code: WorkflowIssueCode) =>
    issues.push({ path: formatPath(segments), segments, message, code })
  const count = steps.length
  const ids: string[] = []
  const dependsOn: (readonly string[])[] = []
  const kinds: StepKind[] = []
  const texts: (string | undefined)[] = []
  const indexOf = new Map<string, number>()
  for (let index = 0; index < count; index += 1) {
    const step = steps[index]
    const record =
      typeof step === 'object' && step !== null && !Array.isArray(step)
        ? (step as Record<string, unknown>)
        : {}
    const rawId = record.id
    // An id that is not one cannot be depended on or named in a message.
    const id = typeof rawId === 'string' && IDENTIFIER.test(rawId) ? rawId : `\u0000${index}`
    ids.push(id)
    const first = indexOf.get(id)
    if (first === undefined) indexOf.set(id, index)
    else
      add(['steps', index, 'id'], `duplicate step id "${id}" (first used by steps[${first}])`, 'duplicate_id')
    const prompt = record.prompt
    const run = record.run
    if (prompt === undefined ? run === undefined : run !== undefined) {
      if (step === record)
        add(
          ['steps', index],
          prompt === undefined ? 'a step needs prompt or run' : 'a step has either prompt or run, not both',
          'step_kind',
        )
    }
    const kind: StepKind = run !== undefined && prompt === undefined ? 'run' : 'prompt'
    const text = kind === 'run' ? run : prompt
    kinds.push(kind)
    texts.push(typeof text === 'string' ? text : undefined)
    const names = record.depends_on
    dependsOn.push(
      Array.isArray(names)
        ? names.filter((name): name is string => typeof name === 'string' && IDENTIFIER.test(name))
        : NO_DEPENDENCIES,
    )
  }

  const graph = buildGraph(ids, dependsOn)
  // The graph skipped unknown and self dependencies; look for them only when it skipped any.
  if (graph.unresolved > 0) {
    for (let index = 0; index < count; index += 1) {
      const names = dependsOn[index] as readonly string[]
      for (let at = 0; at < names.length; at += 1) {
        const name = names[at] as string
        if (name === ids[index])
          add(['steps', index, 'depends_on', at], 'a step cannot depend on itself', 'self_dependency')
        else if (!indexOf.has(name))
          add(['steps', index, 'depends_on', at], `depends on unknown step "${name}"`, 'unknown_dependency')
      }
    }
  }
  for (const cycle of graph.cycles) {
    const at = graph.indexOf.get(cycle[0] as string) as number
    add(['steps', at, 'depends_on'], `dependency cycle: ${cycle.join(' → ')}`, 'cycle')
  }

  const definitions: StepDefinition[] = []
  for (let index = 0; index < count; index += 1) {
    const text = texts[index]
    if (text === undefined) continue
    const field = kinds[index] as StepKind
    const record = steps[index] as Record<string, unknown>
    const referenced: string[] = []
    let usesTrigger = checkTemplates(graph, index, field, text, referenced, add)
    // A `when` gate is a command like `run`: the same templates, quoted the same way.
    if (typeof record.when === 'string')
      usesTrigger = checkTemplates(graph, index, 'when', record.when, referenced, add) || usesTrigger
    else if (record.continue_on_skip === true)
      add(['steps', index, 'continue_on_skip'], 'only applies to a step with when', 'invalid_value')
    if (issues.length === 0) {
      definitions.push(
        toStepDefinition(
          record,
          field,
          text,
          dependsOn[index] as readonly string[],
          referenced.length === 0 ? NO_REFERENCES : referenced,
          usesTrigger,
        ),
      )
    }
  }
  return { graph, definitions }
}

const NO_DEPENDENCIES: readonly string[] = Object.freeze([])
const NO_REFERENCES: readonly string[] = Object.freeze([])

/**
 * Checks the templates of one step field (`prompt`, `run` or `when`): only `{{id.result}}` of known
 * ancestors and `{{trigger.payload}}`, and in commands (`run`, `when`) only where quoting is safe.
 * Adds each referenced id to `referenced` once; true when the field uses the trigger's payload.
 */
function checkTemplates(
  graph: StepGraph,
  index: number,
  field: StepKind | 'when',
  text: string,
  referenced: string[],
  add: (segments: PathSegment[], message: string, code: WorkflowIssueCode) => void,
): boolean {
  const scan = scanTemplates(text)
  if (scan.invalid > 0)
    add(
      ['steps', index, field],
      'unsupported template: only {{step-id.result}} and {{trigger.payload}} are allowed',
      'template_invalid',
    )
  const seen = new Set<string>()
  for (const reference of scan.references) {
    const target = graph.indexOf.get(reference.stepId)
    if (target === undefined) {
      add(
        ['steps', index, field],
        `template refers to unknown step "${reference.stepId}"`,
        'template_unknown_step',
      )
    } else if (!seen.has(reference.stepId)) {
      seen.add(reference.stepId)
      if (!referenced.includes(reference.stepId)) referenced.push(reference.stepId)
      if (target === index || !isAncestor(graph, target, index)) {
        add(
          ['steps', index, field],
          `template refers to "${reference.stepId}", which is not an ancestor through depends_on`,
          'template_not_ancestor',
        )
      }
    }
  }
  const usesTrigger = scan.triggers.length > 0
  if (field === 'prompt' || scan.references.length + scan.triggers.length === 0) return usesTrigger
  const spans = [...scan.references, ...scan.triggers].sort((left, right) => left.start - right.start)
  for (const unsafe of findUnsafeReferences(text, spans)) {
    const placeholder = scan.triggers.some((trigger) => trigger.start === unsafe.start)
      ? '{{trigger.payload}}'
      : `{{${unsafe.stepId}.result}}`
    add(
      ['steps', index, field],
      `${placeholder} must stand unquoted in the command (it is quoted for you); not inside quotes, \${…}, backticks, comments or after a heredoc, ` +
        'not as the command name, and not in a command bash would evaluate it in as a name or arithmetic (a value like a[$(…)] runs): ' +
        'no [[ ]], (( )), $(( )), $[ ], let, ${!x}, ${a[i]}, ${s:n}, arrays, RANDOM=/PS4=-style special variables or declare -i/-n in the same command, ' +
        'and not as an argument of eval, trap, unset, read, mapfile, readarray, getopts, printf -v, test -v, wait -p, ' +
        'or of declare/typeset/local/export/readonly other than as the value of a plain name=. ' +
        "Pass it to a command that treats it as data (echo, printf '%s', grep, [ … = … ], expr) instead",
      'template_unsafe_context',
    )
  }
  return usesTrigger
}

function toStepDefinition(
  record: Record<string, unknown>,
  kind: StepKind,
  text: string,
  dependsOn: readonly string[],
  references: readonly string[],
  usesTrigger: boolean,
): StepDefinition {
  const retry = record.retry as { attempts: number; backoff?: string } | undefined
  return {
    id: record.id as string,
    kind,
    text,
    agent: record.agent as string | undefined,
    dependsOn,
    timeoutMs: record.timeout === undefined ? undefined : (parseDuration(record.timeout as string) as number),
    retry:
      retry === undefined
        ? undefined
        : {
            attempts: retry.attempts,
            backoffMs: retry.backoff === undefined ? 1000 : (parseDuration(retry.backoff) as number),
          },
    continueOnError: record.continue_on_error === true,
    deliverTo: record.deliver_to as string[] | undefined,
    ...(record.when === undefined ? {} : { when: record.when as string }),
    continueOnSkip: record.continue_on_skip === true,
    references,
    ...(usesTrigger ? { usesTrigger } : {}),
  }
}

/** Iterative walk of the syntax tree (no recursion-depth DoS). Aliases are leaves here. */
function exceedsDepth(root: unknown, maxDepth: number): boolean {
  if (!isCollection(root)) return false
  const nodes: unknown[] = [root]
  const depths: number[] = [1]
  while (nodes.length > 0) {
    const node = nodes.pop()
    const depth = depths.pop() as number
    if (depth > maxDepth) return true
    if (!isCollection(node)) continue
    for (const item of node.items as unknown[]) {
      if (isPair(item)) {
        if (isCollection(item.key)) {
          nodes.push(item.key)
          depths.push(depth + 1)
        }
        if (isCollection(item.value)) {
          nodes.push(item.value)
          depths.push(depth + 1)
        }
      } else if (isCollection(item)) {
        nodes.push(item)
        depths.push(depth + 1)
      }
    }
  }
  return false
}

function fail(path: string, message: string, code: WorkflowIssueCode): WorkflowParseResult {
  return { ok: false, issues: [{ path, message, code }] }
}

function lineStarts(source: string): number[] {
  const starts = [0]
  for (let index = source.indexOf('\n'); index !== -1; index = source.indexOf('\n', index + 1))
    starts.push(index + 1)
  return starts
}

function position(starts: readonly number[], offset: number | undefined): { line?: number; column?: number } {
  if (offset === undefined || offset < 0) return {}
  let low = 0
  let high = starts.length - 1
  while (low < high) {
    const middle = (low + high + 1) >> 1
    if ((starts[middle] as number) <= offset) low = middle
    else high = middle - 1
  }
  return { line: low + 1, column: offset - (starts[low] as number) + 1 }
}

/** Adds line and column to each issue by following its path through the syntax tree (only on failure). */
function withPositions(
  source: string,
  issues: ReadonlyArray<WorkflowIssue & { segments: PathSegment[] }>,
): WorkflowParseResult {
  const document = parseDocument(source, YAML_OPTIONS)
  const starts = lineStarts(source)
  return {
    ok: false,
    issues: issues
      .map(({ segments, ...issue }) => ({
        ...issue,
        ...position(starts, locate(document, segments, issue.code === 'unknown_key')),
      }))
      .sort(
        (left, right) => (left.line ?? 0) - (right.line ?? 0) || (left.column ?? 0) - (right.column ?? 0),
      ),
  }
}

function locate(
  document: Document.Parsed,
  segments: readonly PathSegment[],
  wantKey: boolean,
): number | undefined {
  let node: unknown = document.contents
  for (let at = 0; at < segments.length; at += 1) {
    const segment = segments[at]
    if (isMap(node)) {
      const pair = node.items.find((item) => isScalar(item.key) && item.key.value === segment)
      if (pair === undefined) break
      node = wantKey && at === segments.length - 1 ? pair.key : pair.value
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment]
      if (item === undefined) break
      node = item
    } else break
  }
  const range = (node as { range?: readonly number[] } | null)?.range
  return range?.[0]
}
