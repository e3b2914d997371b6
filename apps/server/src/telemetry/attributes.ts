/**
 * What a span may say (issue 23): its name is one of {@link SpanName}, and its attributes are only
 * the keys of {@link ATTRIBUTES}, each of its one type. Ids, names, kinds, statuses, durations,
 * token counts, exit codes, tool and model names: never a prompt, a command, a result, an error
 * message or a secret. The types hold it at compile time; {@link allowedAttributes} holds it again
 * at run time (a key or a value of another kind is dropped, strings are cut to 256 characters).
 * This module loads no OpenTelemetry code.
 */

/** Every span the server makes. */
export type SpanName =
  | 'cron.run'
  | 'background.task'
  | 'workflow.run'
  | 'chat.turn'
  | 'agent.step'
  | 'tool.call'
  | 'shell.command'
  | 'delivery'

/** The allow-list: attribute key → the type of its value. */
const ATTRIBUTES = {
  /** What started the trace: `cron`, `background`, `workflow`, `chat`. */
  'lango.source': 'string',
  'lango.cron.job_id': 'string',
  'lango.cron.job_name': 'string',
  /** `ai` or `shell`. */
  'lango.cron.job_kind': 'string',
  'lango.cron.run_id': 'string',
  /** `schedule`, `manual` or `catchup`. */
  'lango.cron.trigger': 'string',
  /** The run's final status (`completed`, `failed`, `timed_out`, `cancelled`, `interrupted`). */
  'lango.run.status': 'string',
  /** `delivered`, `failed` or `none`. */
  'lango.delivery.status': 'string',
  'lango.background.task_id': 'string',
  'lango.workflow.name': 'string',
  'lango.workflow.run_id': 'string',
  'lango.workflow.step_id': 'string',
  /** The chat's session key (`telegram:<chat>:<user>`, `http:<id>`): ids only. */
  'lango.session.key': 'string',
  /** The channel of a delivery target (`telegram` of `telegram:42`). */
  'lango.delivery.channel': 'string',
  /** The 1-based number of a model call in its turn. */
  'lango.agent.step': 'int',
  'gen_ai.operation.name': 'string',
  'gen_ai.request.model': 'string',
  'gen_ai.response.model': 'string',
  'gen_ai.usage.input_tokens': 'int',
  'gen_ai.usage.output_tokens': 'int',
  /** Why the model stopped (`stop`, `tool-calls`, `length`). */
  'gen_ai.response.finish_reasons': 'string',
  'gen_ai.tool.name': 'string',
  /** A tool call's outcome: `ok`, `error` (a tool failure the model saw) or `denied`. */
  'lango.tool.outcome': 'string',
  'process.exit_code': 'int',
  'lango.shell.timed_out': 'boolean',
  'lango.shell.blocked': 'boolean',
  /** A coded error (`AGENT_TIMEOUT`, `CRON_RUN_TIMEOUT`, `AbortError`): a code, never a message. */
  'error.type': 'string',
} as const satisfies Readonly<Record<string, 'string' | 'int' | 'boolean'>>

type AttributeKind = { readonly string: string; readonly int: number; readonly boolean: boolean }

/** Attributes a span may carry: only allowed keys, each with a value of its type. */
export type SpanAttributes = {
  readonly [K in keyof typeof ATTRIBUTES]?: AttributeKind[(typeof ATTRIBUTES)[K]] | undefined
}

const MAX_STRING = 256

/**
 * The allowed part of `attributes`: unknown keys and values of the wrong type dropped, strings cut
 * to 256 characters, integers only. What reaches the exporter went through here.
 */
export function allowedAttributes(attributes: SpanAttributes): Record<string, string | number | boolean> {
  const allowed: Record<string, string | number | boolean> = {}
  for (const [key, value] of Object.entries(attributes)) {
    if (!Object.hasOwn(ATTRIBUTES, key) || value === undefined) continue
    const kind = ATTRIBUTES[key as keyof typeof ATTRIBUTES]
    if (kind === 'string' && typeof value === 'string') allowed[key] = value.slice(0, MAX_STRING)
    else if (kind === 'int' && typeof value === 'number' && Number.isSafeInteger(value)) allowed[key] = value
    else if (kind === 'boolean' && typeof value === 'boolean') allowed[key] = value
  }
  return allowed
}

/** The code of an error for `error.type`: a coded error's `code`, else its `name` (never its message). */
export function errorType(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const { code, name } = error as { code?: unknown; name?: unknown }
    if (typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code)) return code
    if (typeof name === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(name)) return name
  }
  return 'Error'
}
