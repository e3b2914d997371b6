import type { AnyTool, JsonSchema } from './tool.js'

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
