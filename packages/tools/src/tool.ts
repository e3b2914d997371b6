import { toJsonSchema } from '@valibot/to-json-schema'
import type * as v from 'valibot'

/** How much harm a call can do; drives approval. */
export type ToolSafety = 'safe' | 'moderate' | 'dangerous'

/** Who is calling and how to cancel. Delivery targets are auto-detected from `sessionKey`. */
export interface ToolContext {
  /** The conversation the call comes from, e.g. `telegram:<chat>:<user>`; `cron:<job>` for automation. */
  readonly sessionKey?: string
  readonly signal?: AbortSignal
}

/** A JSON Schema object as published to models and MCP clients. */
export type JsonSchema = Record<string, unknown>

/** One agent tool. Handlers receive validated parameters. */
export interface Tool<TSchema extends v.GenericSchema = v.GenericSchema, TResult = unknown> {
  readonly name: string
  /** Written for a model: what the tool does, when to use it, what comes back. */
  readonly description: string
  /** The tool's published level (the contract's; what MCP annotations show). */
  readonly safety: ToolSafety
  /**
   * Per-call safety when it depends on the parameters: `manage_cron_jobs` actions, or a call that
   * persists a shell command or secret reference, which is raised to `dangerous`.
   */
  readonly safetyFor?: (params: v.InferOutput<TSchema>) => ToolSafety
  readonly parameters: TSchema
  /** `parameters` as JSON Schema (draft-07). */
  readonly jsonSchema: JsonSchema
  readonly handler: (params: v.InferOutput<TSchema>, context: ToolContext) => Promise<TResult>
}

/** Builds a {@link Tool}, deriving its JSON Schema from the valibot schema. */
export function defineTool<TSchema extends v.GenericSchema, TResult>(
  definition: Omit<Tool<TSchema, TResult>, 'jsonSchema'>,
): Tool<TSchema, TResult> {
  const jsonSchema = toJsonSchema(definition.parameters, { errorMode: 'ignore' }) as JsonSchema
  delete jsonSchema.$schema
  return Object.freeze({ ...definition, jsonSchema })
}

/** Any tool, whatever its parameter and result types. */
// biome-ignore lint/suspicious/noExplicitAny: a heterogeneous list of tools needs an open type
export type AnyTool = Tool<any, unknown>

/** The safety level of one concrete call. */
export function callSafety(tool: AnyTool, params: unknown): ToolSafety {
  return tool.safetyFor?.(params) ?? tool.safety
}
