import type { LanguageModelMiddleware, LanguageModelUsage } from 'ai'

/** A step's token counts as {@link addUsage} reads them: the SDK's step usage, or a call's own. */
export type CallUsage = Pick<LanguageModelUsage, 'inputTokens' | 'outputTokens' | 'totalTokens' | 'raw'>

type WrapStream = NonNullable<LanguageModelMiddleware['wrapStream']>
type CallParams = Parameters<WrapStream>[0]['params']
type StreamPart = Awaited<ReturnType<WrapStream>>['stream'] extends ReadableStream<infer P> ? P : never

/** What a model call cut off before its step ended cost, and how that is known. */
export interface UnfinishedCall {
  readonly usage: CallUsage
  /** `reported`: the model server's own counts (it had answered); `estimated`: from the sizes sent and received. */
  readonly basis: 'reported' | 'estimated'
}

/**
 * Characters per token of the estimate of a cut-off call: about 4 for English and code, so the
 * estimate of a request (counted with its JSON structure) errs high, toward stopping a budget.
 */
const CHARS_PER_TOKEN = 4

/** The model call of the step under way: started, and what is known of it so far. */
interface OpenCall {
  readonly params: CallParams
  /** The server began to answer (a streamed part arrived, or the whole answer). */
  answered: boolean
  /** Characters of text, reasoning and tool input streamed so far. */
  outputChars: number
  /** The server's counts, once it sent them (before the step's tools ran). */
  reported: CallUsage | undefined
}

/**
 * Meters a turn's model calls so that a call cut off before its step ended still counts (a probe
 * found a turn stopped by its timeout, or a stream broken mid-way, counted 0 tokens, so no budget
 * held a model that never finished). The AI SDK counts a step's usage only when the step ends; a
 * step ends after its tool calls ran. This middleware sees each call as the model server answers:
 * a call aborted or broken after the server began to answer counts what the server reported, else
 * an estimate from the sizes sent and received ({@link CHARS_PER_TOKEN}); a call the server
 * refused (an HTTP error, nothing generated) counts nothing. One meter per turn.
 */
export class CallMeter {
  #open: OpenCall | undefined

  readonly middleware: LanguageModelMiddleware = {
    specificationVersion: 'v3',
    wrapGenerate: async ({ doGenerate, params }) => {
      const call = this.#start(params)
      try {
        const result = await doGenerate()
        call.answered = true
        call.reported = fromCallUsage(result.usage)
        return result
      } catch (error) {
        this.#failed(call)
        throw error
      }
    },
    wrapStream: async ({ doStream, params }) => {
      const call = this.#start(params)
      let result: Awaited<ReturnType<typeof doStream>>
      try {
        result = await doStream()
      } catch (error) {
        this.#failed(call)
        throw error
      }
      // Headers of a 200 came: the server is generating.
      call.answered = true
      const metered = new TransformStream<StreamPart, StreamPart>({
        transform(part, controller) {
          call.answered = true
          switch (part.type) {
            case 'text-delta':
            case 'reasoning-delta':
            case 'tool-input-delta':
              call.outputChars += part.delta.length
              break
            case 'finish':
              call.reported = fromCallUsage(part.usage)
              break
            default:
              break
          }
          controller.enqueue(part)
        },
      })
      return { ...result, stream: result.stream.pipeThrough(metered) }
    },
  }

  /** The step of the call under way ended: the SDK counted its usage. */
  stepEnded(): void {
    this.#open = undefined
  }

  /**
   * What the call under way cost, when the turn ends before its step did; undefined when no call
   * is under way or it counts nothing (refused, or not answered and not aborted). `aborted`: the
   * turn was cancelled or timed out (the request had been sent: the server may be generating).
   */
  unfinished(aborted: boolean): UnfinishedCall | undefined {
    const unfinished = this.peek(aborted)
    this.#open = undefined
    return unfinished
  }

  /** What {@link unfinished} would say now, leaving the call open (the caller's running total on abort). */
  peek(aborted: boolean): UnfinishedCall | undefined {
    const call = this.#open
    if (call === undefined) return undefined
    if (call.reported !== undefined) return { usage: call.reported, basis: 'reported' }
    if (!aborted && !call.answered) return undefined
    const output = Math.ceil(call.outputChars / CHARS_PER_TOKEN)
    return {
      usage: {
        inputTokens: estimateInput(call.params),
        outputTokens: output,
        totalTokens: undefined,
        raw: undefined,
      },
      basis: 'estimated',
    }
  }

  #start(params: CallParams): OpenCall {
    const call: OpenCall = { params, answered: false, outputChars: 0, reported: undefined }
    this.#open = call
    return call
  }

  /** A call that threw: refused by the server (counts nothing) unless aborted or already answering. */
  #failed(call: OpenCall): void {
    if (this.#open === call && call.params.abortSignal?.aborted !== true && !call.answered)
      this.#open = undefined
  }
}

/** The counts of one call as the model server reported them, in the step usage's shape. */
function fromCallUsage(usage: {
  readonly inputTokens: { readonly total: number | undefined }
  readonly outputTokens: { readonly total: number | undefined }
  readonly raw?: unknown
}): CallUsage {
  return {
    inputTokens: usage.inputTokens.total,
    outputTokens: usage.outputTokens.total,
    totalTokens: undefined,
    raw: usage.raw as CallUsage['raw'],
  }
}

/** The tokens of a request, estimated from the characters of its messages and tools (bytes of files not counted). */
function estimateInput(params: CallParams): number {
  const chars = (value: unknown): number =>
    JSON.stringify(value ?? null, (_key, part: unknown) => (part instanceof Uint8Array ? '' : part)).length
  return Math.ceil((chars(params.prompt) + chars(params.tools)) / CHARS_PER_TOKEN)
}
