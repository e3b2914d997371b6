import type { ModelMessage, OutputInterface, StepResult, StreamTextResult, ToolSet } from 'ai'

/**
 * What a streaming turn reports while it runs (`chat(…, { onEvent })`): the model's text as it
 * comes, and its tool calls as they start and end. The text deltas of every step, joined, are the
 * whole of what the model wrote (the turn's `text` is the last step's).
 */
export type AgentTurnEvent =
  | { readonly type: 'text-delta'; readonly text: string }
  /** The model called a tool; its execution (an approval included) starts now. */
  | { readonly type: 'tool-call'; readonly toolCallId: string; readonly toolName: string }
  /** The call ended; `ok` is false when it threw, was refused or returned an `error`. */
  | {
      readonly type: 'tool-result'
      readonly toolCallId: string
      readonly toolName: string
      readonly ok: boolean
    }

/** What the runner needs from a finished streaming turn (the same fields `generateText` returns). */
interface StreamedTurn<TOOLS extends ToolSet> {
  readonly text: string
  readonly steps: readonly StepResult<TOOLS>[]
  readonly response: { readonly messages: readonly ModelMessage[] }
}

/** True for a tool output that reports a failure (`{ error: … }`, as `@lango/tools` returns them). */
function failed(output: unknown): boolean {
  return typeof output === 'object' && output !== null && 'error' in output
}

/**
 * Reads a `streamText` turn to its end, giving each text delta and tool call to `emit` as it
 * arrives, and resolves to what `generateText` would have returned. Rejects with the stream's first
 * error (a model call that failed after its retries, a broken stream), or with `signal.reason` when
 * the turn was aborted: a turn never ends with only part of its steps. `emit` must not throw.
 */
export async function drainTurnStream<TOOLS extends ToolSet, OUTPUT extends OutputInterface>(
  stream: StreamTextResult<TOOLS, OUTPUT>,
  emit: (event: AgentTurnEvent) => void,
  signal: AbortSignal,
): Promise<StreamedTurn<TOOLS>> {
  let failure: { readonly error: unknown } | undefined
  for await (const part of stream.fullStream) {
    switch (part.type) {
      case 'text-delta':
        if (part.text !== '') emit({ type: 'text-delta', text: part.text })
        break
      case 'tool-call':
        emit({ type: 'tool-call', toolCallId: part.toolCallId, toolName: part.toolName })
        break
      case 'tool-result':
        emit({
          type: 'tool-result',
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          ok: !failed(part.output),
        })
        break
      case 'tool-error':
        emit({ type: 'tool-result', toolCallId: part.toolCallId, toolName: part.toolName, ok: false })
        break
      case 'error':
        failure ??= { error: part.error }
        break
      default:
        break
    }
  }
  signal.throwIfAborted()
  if (failure !== undefined) throw failure.error
  const [text, steps, response] = await Promise.all([stream.text, stream.steps, stream.response])
  return { text, steps, response }
}
