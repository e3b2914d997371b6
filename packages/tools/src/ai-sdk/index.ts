import { dynamicTool, type JSONSchema7, jsonSchema, type Tool, type ToolExecutionOptions } from 'ai'
import * as v from 'valibot'
import { describeIssues, type InvokeOptions, invalidParametersMessage, invokeTool } from '../invoke.js'
import { refuseUnknownKeys } from '../option-keys.js'
import type { AnyTool } from '../tool.js'

/**
 * Options of {@link toAiSdkTools}: the approval `policy` (default `dangerous`), the `gate` that asks
 * a human inside `execute` (without one, calls the policy selects are denied) and
 * `approvalTimeoutMs`, as `invokeTool` takes them, and the session key.
 */
export interface AiSdkToolsOptions extends InvokeOptions {
  /**
   * The session key calls run under (delivery targets are detected from it; cron jobs record it as
   * their creator), or a function deriving it from the call (e.g. from `experimental_context`).
   */
  readonly sessionKey?: string | ((options: ToolExecutionOptions) => string | undefined)
  /** Who the calls' work counts against (`ToolContext.creator`); default the session key. */
  readonly creator?: string
  /** How deep in a chain of automation runs the session is (`ToolContext.nesting`). */
  readonly nesting?: number
}

const checkAiSdkKeys = refuseUnknownKeys(
  'toAiSdkTools options',
  Object.keys({
    policy: true,
    gate: true,
    approvalTimeoutMs: true,
    sessionKey: true,
    creator: true,
    nesting: true,
  } satisfies Record<keyof AiSdkToolsOptions, true>),
)

/**
 * Turns tools into AI SDK (v6) tools, keyed by name, for `generateText`/`streamText`'s `tools`.
 * The model sees each tool's JSON Schema; its input is validated with the tool's own valibot
 * schema (an invalid call goes back to the model naming the field). `execute` runs through
 * `invokeTool` with the approval policy and gate (the approval lives inside `execute`, so
 * unattended runs work without `needsApproval`), the call's `abortSignal`, and returns the result
 * or `{ error: { code, message, … } }` — failures are results the model reads, never throws.
 * @example
 * const { text } = await generateText({ model, tools: toAiSdkTools(tools, { gate }), stopWhen: stepCountIs(5), prompt })
 */
export function toAiSdkTools(
  tools: readonly AnyTool[],
  options: AiSdkToolsOptions = {},
): Record<string, Tool> {
  checkAiSdkKeys(options)
  const entries = tools.map((tool): [string, Tool] => [
    tool.name,
    dynamicTool({
      title: tool.title,
      description: tool.description,
      inputSchema: jsonSchema({ type: 'object', ...tool.jsonSchema } as JSONSchema7, {
        validate(value) {
          const parsed = v.safeParse(tool.parameters, value)
          if (parsed.success) return { success: true, value: parsed.output }
          const message = invalidParametersMessage(tool.name, describeIssues(parsed.issues))
          return { success: false, error: new TypeError(message) }
        },
      }),
      async execute(input, execution) {
        const sessionKey =
          typeof options.sessionKey === 'function' ? options.sessionKey(execution) : options.sessionKey
        const outcome = await invokeTool(
          tool,
          input,
          {
            ...(sessionKey === undefined ? {} : { sessionKey }),
            ...(options.creator === undefined ? {} : { creator: options.creator }),
            ...(options.nesting === undefined ? {} : { nesting: options.nesting }),
            ...(execution.abortSignal === undefined ? {} : { signal: execution.abortSignal }),
          },
          options,
        )
        return outcome.ok ? outcome.result : { error: outcome.error }
      },
    }),
  ])
  return Object.fromEntries(entries)
}
