import type { AnyTool, JsonSchema } from './tool.js'

/** A tool as listed by an MCP server (`tools/list`). */
export interface McpToolDefinition {
  readonly name: string
  readonly description: string
  readonly inputSchema: JsonSchema
  readonly annotations: {
    readonly title: string
    /** True for `safe` tools: they change nothing. */
    readonly readOnlyHint: boolean
    /** True for `dangerous` tools. */
    readonly destructiveHint: boolean
    readonly openWorldHint: boolean
  }
}

/** Publishes a tool to MCP clients, with its safety as MCP annotations so the host can decide on approval. */
export function toMcpTool(tool: AnyTool): McpToolDefinition {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: { type: 'object', ...tool.jsonSchema },
    annotations: {
      title: tool.name,
      readOnlyHint: tool.safety === 'safe',
      destructiveHint: tool.safety === 'dangerous',
      openWorldHint: tool.name.startsWith('exec'),
    },
  }
}

/** A tool in the JSON-Schema function-calling format of OpenAI-compatible chat APIs. */
export interface FunctionToolDefinition {
  readonly type: 'function'
  readonly function: { readonly name: string; readonly description: string; readonly parameters: JsonSchema }
}

/** Publishes a tool in the generic function-calling format (`tools: [...]` of a chat completion request). */
export function toFunctionTool(tool: AnyTool): FunctionToolDefinition {
  return {
    type: 'function',
    function: {
      name: tool.name,
      description: tool.description,
      parameters: { type: 'object', ...tool.jsonSchema },
    },
  }
}
