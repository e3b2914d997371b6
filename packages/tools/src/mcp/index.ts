import type {
  CallToolResult,
  McpServer,
  RegisteredTool,
  ServerContext,
  StandardSchemaWithJSON,
  ToolAnnotations,
} from '@modelcontextprotocol/server'
import * as v from 'valibot'
import type { ApprovalPolicy, ApprovalRequest } from '../approval.js'
import { type InvokeOptions, invokeTool, toolErrorPayloadSchema } from '../invoke.js'
import { refuseUnknownKeys } from '../option-keys.js'
import {
  type AnyTool,
  type JsonSchema,
  jsonSchemaOf,
  publishedSafety,
  type ToolContext,
  type ToolProgress,
} from '../tool.js'

/**
 * A second approval for calls over MCP, on top of the host's own prompt: calls the `policy`
 * selects are put to `request`, which also gets the MCP request context (to ask through the
 * client, for example). No answer, `false` or an error deny.
 */
export interface McpApproval {
  /** Which calls need it: `all`, `moderate`, `dangerous` or `none`. */
  readonly policy: ApprovalPolicy
  request(
    request: ApprovalRequest,
    options: { readonly signal: AbortSignal; readonly context: ServerContext },
  ): Promise<boolean | undefined>
  /** No answer within this time denies (default 5 minutes). */
  readonly timeoutMs?: number
}

/** Options of {@link registerTools}. */
export interface RegisterToolsOptions {
  /**
   * A second approval step. Default none: over MCP the host (Claude Desktop, an IDE, another
   * agent) shows its own prompt before each call, guided by the annotations, and is the approver.
   */
  readonly approval?: McpApproval
  /**
   * The session key calls run under (cron jobs record it as their creator; delivery targets are
   * detected from it). Default `mcp`; a function can derive it per request.
   */
  readonly sessionKey?: string | ((context: ServerContext) => string | undefined)
  /**
   * Aborts every call besides its request's own signal: the host stopping. A call in flight is
   * then cancelled (an `exec` command killed; a call not started yet ends `TOOL_CANCELED`) and
   * answered before the host closes its transport, where the client would otherwise wait for an
   * answer that never comes.
   */
  readonly signal?: AbortSignal
}

const checkRegisterKeys = refuseUnknownKeys(
  'registerTools options',
  Object.keys({ approval: true, sessionKey: true, signal: true } satisfies Record<
    keyof RegisterToolsOptions,
    true
  >),
)

/**
 * MCP annotations from a tool's worst-case safety (`worstSafety`, else `safety`), so a host can
 * decide on its own approval prompt before it sees the call: `title`; safe → `readOnlyHint: true`;
 * moderate → `destructiveHint: false`; dangerous → `destructiveHint: true` (`manage_cron_jobs`,
 * and `cron_add`, `workflow_run` and `workflow_save`, which a call can raise to dangerous);
 * `idempotentHint` where true; `openWorldHint` only for tools that reach the shell or a model.
 */
export function toolAnnotations(tool: AnyTool): ToolAnnotations {
  const safety = publishedSafety(tool)
  return {
    title: tool.title,
    readOnlyHint: safety === 'safe',
    ...(safety === 'safe' ? {} : { destructiveHint: safety === 'dangerous' }),
    ...(tool.idempotent === true ? { idempotentHint: true } : {}),
    openWorldHint: tool.openWorld === true,
  }
}

/**
 * The tool's JSON Schema as the SDK publishes it in `tools/list`. Validation is left to
 * `invokeTool` (the tool's own valibot schema), so a bad call comes back as an `isError` result
 * naming each field, like every other failure.
 */
function publishedSchema(tool: AnyTool): StandardSchemaWithJSON {
  const json: JsonSchema = { type: 'object', ...tool.jsonSchema }
  return {
    '~standard': {
      version: 1,
      vendor: 'lango',
      validate: (value) => ({ value }),
      jsonSchema: { input: () => json, output: () => json },
    },
  }
}

/** A failed call's `{ error }` payload as JSON Schema: a branch of every published `outputSchema`. */
const ERROR_PAYLOAD_JSON = jsonSchemaOf(toolErrorPayloadSchema)

/** The branches of a JSON Schema that is a union (`anyOf` and nothing else), else the schema itself. */
function branchesOf(json: JsonSchema): JsonSchema[] {
  const { type: _object, ...rest } = json
  const keys = Object.keys(rest)
  return keys.length === 1 && keys[0] === 'anyOf' && Array.isArray(rest.anyOf)
    ? (rest.anyOf as JsonSchema[])
    : [json]
}

/**
 * What the tool's calls can put in `structuredContent`, as the SDK publishes it (`outputSchema`)
 * and checks a successful call's content with on the server: the tool's `output` (the valibot
 * schema its results are typed by, so the declaration and the results cannot drift apart), or a
 * failed call's `{ error }` payload. The error branch is there because MCP says a result conforms
 * to its tool's outputSchema, and SDK 1.x clients check `isError` results against it too.
 */
function publishedOutputSchema(tool: AnyTool): StandardSchemaWithJSON {
  const json: JsonSchema = {
    type: 'object',
    anyOf: [...branchesOf(tool.outputJsonSchema), ERROR_PAYLOAD_JSON],
  }
  const schema = v.union([tool.output, toolErrorPayloadSchema])
  return {
    '~standard': {
      version: 1,
      vendor: 'lango',
      validate: (value) => schema['~standard'].validate(value),
      jsonSchema: { input: () => json, output: () => json },
    },
  }
}

/** A call's JSON payload as MCP content: the same JSON as text and as `structuredContent`. */
function toResult(payload: unknown, isError: boolean): CallToolResult {
  const text = JSON.stringify(payload) ?? 'null'
  return {
    content: [{ type: 'text', text }],
    structuredContent: JSON.parse(text) as Record<string, unknown>,
    ...(isError ? { isError: true } : {}),
  }
}

function progressSender(context: ServerContext): ((progress: ToolProgress) => void) | undefined {
  const token = context.mcpReq._meta?.progressToken
  if (token === undefined) return undefined
  return (progress) => {
    context.mcpReq
      .notify({ method: 'notifications/progress', params: { progressToken: token, ...progress } })
      // A client that went away cannot be told; the call itself goes on.
      .catch(() => {})
  }
}

/**
 * Registers tools on an MCP SDK v2 `McpServer`, in the order given (so `tools/list` is
 * deterministic): each with its title, description, JSON Schema, output schema (`outputSchema`,
 * from the tool's `output`) and annotations. A call runs
 * through `invokeTool` with the request's abort signal; a success returns the result as JSON text
 * and the same `structuredContent`; every failure (invalid parameters, denied, a service error, a
 * blocked `lango` command, `manage_cron_jobs`' `{ error }`) returns `isError: true` with its JSON
 * payload. While `workflow_run` waits it sends `notifications/progress` when the client asked for
 * them (`_meta.progressToken`). Nothing is written to stdout.
 * @example
 * const instructions = buildAutomationPromptSection({ cron: true, background: true, workflow: true }) // @lango/prompts
 * const server = new McpServer({ name: 'lango', version: '1.0.0' }, { instructions })
 * registerTools(server, tools)
 */
export function registerTools(
  server: McpServer,
  tools: readonly AnyTool[],
  options: RegisterToolsOptions = {},
): RegisteredTool[] {
  checkRegisterKeys(options)
  const names = new Set<string>()
  for (const tool of tools) {
    if (names.has(tool.name)) throw new TypeError(`two tools are named ${tool.name}`)
    names.add(tool.name)
  }
  const { approval } = options
  return tools.map((tool) =>
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: publishedSchema(tool),
        outputSchema: publishedOutputSchema(tool),
        annotations: toolAnnotations(tool),
      },
      async (args, context) => {
        const sessionKey =
          typeof options.sessionKey === 'function'
            ? options.sessionKey(context)
            : (options.sessionKey ?? 'mcp')
        const onProgress = progressSender(context)
        const toolContext: ToolContext = {
          signal:
            options.signal === undefined
              ? context.mcpReq.signal
              : AbortSignal.any([context.mcpReq.signal, options.signal]),
          ...(sessionKey === undefined ? {} : { sessionKey }),
          ...(onProgress === undefined ? {} : { onProgress }),
        }
        const invokeOptions: InvokeOptions =
          approval === undefined
            ? { policy: 'none' }
            : {
                policy: approval.policy,
                gate: { request: (request, { signal }) => approval.request(request, { signal, context }) },
                ...(approval.timeoutMs === undefined ? {} : { approvalTimeoutMs: approval.timeoutMs }),
              }
        const outcome = await invokeTool(tool, args, toolContext, invokeOptions)
        if (!outcome.ok) return toResult({ error: outcome.error }, true)
        return toResult(outcome.result, tool.isFailure?.(outcome.result) === true)
      },
    ),
  )
}
