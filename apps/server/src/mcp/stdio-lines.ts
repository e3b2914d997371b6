import { Transform, type TransformCallback } from 'node:stream'
import { jsonNestingExceeds, MAX_JSON_DEPTH } from '../http/responses.js'

/** The longest line read from stdin, as the MCP SDK's stdio transport bounds its own buffer. */
export const MAX_STDIO_LINE_BYTES = 10 * 1024 * 1024

/** A JSON-RPC 2.0 error response, as written to the protocol stream. */
export interface JsonRpcErrorReply {
  readonly jsonrpc: '2.0'
  readonly id: string | number | null
  readonly error: { readonly code: number; readonly message: string }
}

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Sits between stdin and the MCP SDK's stdio transport, which drops a line that is not JSON
 * without a word and gives a client nothing back for a line that is JSON but not a message. Each
 * complete line is checked once: one that is not UTF-8 JSON gets a `-32700` Parse error, one that is
 * JSON but no JSON-RPC 2.0 message object (an array, a number, `"jsonrpc": "1.0"`) or longer than
 * {@link MAX_STDIO_LINE_BYTES} gets a `-32600` Invalid Request (with the message's `id` when it has
 * one), as JSON-RPC 2.0 asks; one nested deeper than {@link MAX_JSON_DEPTH} gets `-32700` before
 * it is parsed (as `/mcp` does). Such a line is answered through `reply` and not passed on; the
 * session goes on. Blank lines are skipped; every other line passes unchanged, whole.
 */
export class StdioLineFilter extends Transform {
  readonly #reply: (reply: JsonRpcErrorReply) => void
  #pending: Buffer[] = []
  #pendingBytes = 0
  /** Dropping the rest of a line that went past the bound, up to its newline. */
  #discarding = false

  constructor(reply: (reply: JsonRpcErrorReply) => void) {
    super()
    this.#reply = reply
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let start = 0
    for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
      if (this.#discarding) this.#discarding = false
      else this.#line(this.#take(chunk.subarray(start, end)))
      start = end + 1
    }
    if (start < chunk.length && !this.#discarding) {
      this.#pending.push(chunk.subarray(start))
      this.#pendingBytes += chunk.length - start
      if (this.#pendingBytes > MAX_STDIO_LINE_BYTES) {
        this.#take(Buffer.alloc(0))
        this.#discarding = true
        this.#reply(invalidRequest(null, `a message is one line of at most ${MAX_STDIO_LINE_BYTES} bytes`))
      }
    }
    callback()
  }

  /** The line so far (what is pending, then `tail`), the pending part cleared. */
  #take(tail: Buffer): Buffer {
    if (this.#pending.length === 0) return tail
    const line = Buffer.concat([...this.#pending, tail])
    this.#pending = []
    this.#pendingBytes = 0
    return line
  }

  #line(line: Buffer): void {
    const problem = lineProblem(line)
    if (problem === undefined) this.push(Buffer.concat([line, NEWLINE]))
    else if (problem !== 'blank') this.#reply(problem)
  }
}

const NEWLINE = Buffer.from('\n')

/** Why a line is not passed on: `blank`, or the error to answer it with; undefined passes it. */
function lineProblem(line: Buffer): JsonRpcErrorReply | 'blank' | undefined {
  let text: string
  try {
    text = fatalUtf8.decode(line)
  } catch {
    return parseError('the line is not UTF-8')
  }
  if (text.trim() === '') return 'blank'
  if (jsonNestingExceeds(line, MAX_JSON_DEPTH))
    return parseError(`the message nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`)
  let message: unknown
  try {
    message = JSON.parse(text)
  } catch {
    return parseError('the line is not JSON; each line is one JSON-RPC 2.0 message')
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message))
    return invalidRequest(null, 'a message is one JSON object (batches are not supported)')
  const { jsonrpc, id } = message as { jsonrpc?: unknown; id?: unknown }
  if (jsonrpc !== '2.0')
    return invalidRequest(
      typeof id === 'string' || typeof id === 'number' ? id : null,
      'a message has "jsonrpc": "2.0"',
    )
  return undefined
}

function parseError(why: string): JsonRpcErrorReply {
  return { jsonrpc: '2.0', id: null, error: { code: -32700, message: `Parse error: ${why}` } }
}

function invalidRequest(id: string | number | null, why: string): JsonRpcErrorReply {
  return { jsonrpc: '2.0', id, error: { code: -32600, message: `Invalid Request: ${why}` } }
}
