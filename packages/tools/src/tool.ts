import { toJsonSchema } from '@valibot/to-json-schema'
import type * as v from 'valibot'

/** How much harm a call can do; drives approval. */
export type ToolSafety = 'safe' | 'moderate' | 'dangerous'

/** A progress report of a call that waits (`workflow_run`); hosts forward it (MCP `notifications/progress`). */
export interface ToolProgress {
  /** Grows with every report (seconds waited so far for `workflow_run`). */
  readonly progress: number
  /** The value `progress` would reach at the end, when known (the wait's limit in seconds). */
  readonly total?: number
  /** One human line, e.g. `2 of 5 steps done; running: fetch`. */
  readonly message?: string
}

/** Who is calling and how to cancel. Delivery targets are auto-detected from `sessionKey`. */
export interface ToolContext {
  /** The conversation the call comes from, e.g. `telegram:<chat>:<user>`; `cron:<job>` for automation. */
  readonly sessionKey?: string
  /**
   * Who the work the call starts counts against (the host's per-creator daily budget): the person
   * whose chat, cron job, background task or workflow run made the call. The background task,
   * workflow run or cron job a call starts or creates carries it on. Absent: `sessionKey` (a chat
   * is its own creator); an automated run sets it, since its session key names no person.
   */
  readonly creator?: string
  /**
   * How deep in a chain of automation runs the calling session is, as the host counts it across
   * kinds (SECURITY.md WF-7): 0 for a person's chat or a cron run, 1 inside a background task or
   * workflow step a person started, and so on. The background task or workflow run a call starts
   * is that deep, and is refused past its package's `maxNesting`. Absent: counted from the session
   * key alone (`bg:` and `workflow:` sessions count 1), which cannot see a chain.
   */
  readonly nesting?: number
  /** Aborts the call (the wait of `workflow_run`, a running `exec`). */
  readonly signal?: AbortSignal
  /** Receives progress while a call waits; tools that do not wait never call it. */
  readonly onProgress?: (progress: ToolProgress) => void
}

/**
 * `{ creator }` for the work a call starts or persists (a background task, a workflow run, a cron
 * job's `createdBy`): the context's creator, else its session key; `{}` when it has neither.
 */
export function creatorOf(context: ToolContext): { readonly creator?: string } {
  const creator = context.creator ?? context.sessionKey
  return creator === undefined ? {} : { creator }
}

/**
 * `context.nesting`, or, when the host gave none, the session key's own level: a call from inside
 * a background task (`bg:…`) or a workflow step (`workflow:…`) is one level down.
 */
export function nestingOf(context: ToolContext): number {
  if (context.nesting !== undefined) return context.nesting
  const session = context.sessionKey
  return session?.startsWith('workflow:') === true || session?.startsWith('bg:') === true ? 1 : 0
}

/** A JSON Schema object as published to models and MCP clients. */
export type JsonSchema = Record<string, unknown>

/**
 * A tool's result schema: an object, or a union of objects (`manage_cron_jobs`' actions), since
 * MCP `structuredContent` is a JSON object.
 */
export type ToolOutputSchema = v.GenericSchema<unknown, Record<string, unknown>>

/** One agent tool. Handlers receive validated parameters. */
export interface Tool<TSchema extends v.GenericSchema = v.GenericSchema, TResult = unknown> {
  /** The contract's name, e.g. `cron_add` (ARCHITECTURE.md §7). */
  readonly name: string
  /** A short human title (MCP `title`), e.g. `Run shell command`. */
  readonly title: string
  /** Written for a model: what the tool does, when to use it, what comes back. */
  readonly description: string
  /** The contract's level (ARCHITECTURE.md §7): a call's level when the tool has no `safetyFor`. */
  readonly safety: ToolSafety
  /**
   * Per-call safety when it depends on the parameters: `manage_cron_jobs` actions, or a call that
   * persists a shell command or secret reference, which is raised to `dangerous`.
   */
  readonly safetyFor?: (params: v.InferOutput<TSchema>) => ToolSafety
  /**
   * The highest level `safetyFor` can return, declared with it: what MCP annotations publish, since
   * a host decides on its own prompt before it sees the call (STACK.md: a tool whose safety depends
   * on the call is annotated with its worst case). Absent without `safetyFor`, where it is `safety`.
   */
  readonly worstSafety?: ToolSafety
  /** Calling it again with the same parameters changes nothing more (MCP `idempotentHint`). */
  readonly idempotent?: boolean
  /** It reaches beyond Lango's own state: the shell, the network, a model (MCP `openWorldHint`). */
  readonly openWorld?: boolean
  /** The parameters' valibot schema; `invokeTool` validates every call with it. */
  readonly parameters: TSchema
  /** `parameters` as JSON Schema (draft-07), every property with a description. */
  readonly jsonSchema: JsonSchema
  /**
   * The result's valibot schema: every result the handler or preflight returns is of this type
   * (`defineTool` types the handler by it), failures reported in the payload (`isFailure`)
   * included. MCP publishes it as the tool's `outputSchema`, and the SDK checks each
   * `structuredContent` against it on the server and on the client.
   */
  readonly output: v.GenericSchema<unknown, TResult>
  /** `output` as JSON Schema (draft-07) with an `object` root: the MCP `outputSchema`. */
  readonly outputJsonSchema: JsonSchema
  /**
   * Runs after validation and before safety is judged and approval asked (`invokeTool` awaits it):
   * returns a result that ends the call without running anything (the `lango` guard of
   * `exec`/`exec_bg`), throws to fail it (an invalid workflow, a file that cannot be read), or
   * returns `undefined` to go on. It may read what the call names (`workflow_run` reads its file),
   * so that `safetyFor`, the approval line and the handler all judge the same content. `context`
   * is the call's (who calls: `cron_add` judges updating another creator's job by it).
   */
  readonly preflight?: (
    params: v.InferOutput<TSchema>,
    context: ToolContext,
  ) => TResult | undefined | Promise<TResult | undefined>
  /**
   * The approval summary when it needs the service (`workflow_run` reads its file to show the
   * commands); {@link buildApprovalSummary} otherwise. It must show every command the call would
   * run, whole, never cut (SECURITY.md SEC-9).
   */
  readonly approvalSummary?: (params: v.InferOutput<TSchema>, context: ToolContext) => Promise<string>
  /**
   * True when a returned result reports a failure in its payload (`manage_cron_jobs`' `{ error }`,
   * exec's `{ blocked: true }`); hosts mark such results as errors (MCP `isError`).
   */
  isFailure?(result: TResult): boolean
  /** Does the work with validated parameters; call it through `invokeTool`, which adds validation and approval. */
  readonly handler: (params: v.InferOutput<TSchema>, context: ToolContext) => Promise<TResult>
}

const SAFETY_ORDER: readonly ToolSafety[] = ['safe', 'moderate', 'dangerous']

/** A valibot schema as JSON Schema (draft-07), without its `$schema` line. */
export function jsonSchemaOf(schema: v.GenericSchema): JsonSchema {
  const json = toJsonSchema(schema, { errorMode: 'ignore' }) as JsonSchema
  delete json.$schema
  return json
}

/**
 * Builds a {@link Tool}, deriving the JSON Schemas of its parameters and of its result (`output`,
 * whose type the handler must return) from the valibot schemas. A `safetyFor` comes with its
 * `worstSafety` (at least `safety`); a definition without one throws a `TypeError`.
 */
export function defineTool<TSchema extends v.GenericSchema, TOutput extends ToolOutputSchema>(
  definition: Omit<
    Tool<TSchema, NoInfer<v.InferOutput<TOutput>>>,
    'jsonSchema' | 'output' | 'outputJsonSchema' | 'safetyFor' | 'worstSafety'
  > & { readonly output: TOutput } & (
      | { readonly safetyFor?: undefined; readonly worstSafety?: undefined }
      | {
          readonly safetyFor: (params: v.InferOutput<TSchema>) => ToolSafety
          readonly worstSafety: ToolSafety
        }
    ),
): Tool<TSchema, v.InferOutput<TOutput>> {
  if ((definition.safetyFor === undefined) !== (definition.worstSafety === undefined)) {
    throw new TypeError(`${definition.name}: safetyFor and worstSafety are declared together`)
  }
  const worst = definition.worstSafety
  if (worst !== undefined && SAFETY_ORDER.indexOf(worst) < SAFETY_ORDER.indexOf(definition.safety)) {
    throw new TypeError(`${definition.name}: worstSafety (${worst}) is below safety (${definition.safety})`)
  }
  const jsonSchema = jsonSchemaOf(definition.parameters)
  // A union of objects converts to a bare `anyOf`; MCP wants an `object` root (each branch says it too).
  const outputJsonSchema = { type: 'object', ...jsonSchemaOf(definition.output) }
  return Object.freeze({ ...definition, jsonSchema, outputJsonSchema })
}

/** Any tool, whatever its parameter and result types. */
// biome-ignore lint/suspicious/noExplicitAny: a heterogeneous list of tools needs an open type
export type AnyTool = Tool<any, unknown>

/** The level MCP annotations publish: the worst a call can be (`worstSafety`), else `safety`. */
export function publishedSafety(tool: AnyTool): ToolSafety {
  return tool.worstSafety ?? tool.safety
}

/** The safety level of one concrete call. */
export function callSafety(tool: AnyTool, params: unknown): ToolSafety {
  return tool.safetyFor?.(params) ?? tool.safety
}
