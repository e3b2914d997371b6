import { describe, expect, it } from 'vitest'
import { type JsonRpcErrorReply, MAX_STDIO_LINE_BYTES, StdioLineFilter } from '../src/mcp/stdio-lines.js'

/** Writes `chunks` through a filter; resolves with what it passed on and what it answered. */
async function filter(
  chunks: readonly (string | Buffer)[],
): Promise<{ passed: string; replies: JsonRpcErrorReply[] }> {
  const replies: JsonRpcErrorReply[] = []
  const lines = new StdioLineFilter((reply) => replies.push(reply))
  const passed: Buffer[] = []
  lines.on('data', (chunk: Buffer) => passed.push(chunk))
  const ended = new Promise((resolve) => lines.once('end', resolve))
  for (const chunk of chunks) lines.write(chunk)
  lines.end()
  await ended
  return { passed: Buffer.concat(passed).toString(), replies }
}

describe('StdioLineFilter (lango mcp over stdio)', () => {
  it('passes JSON-RPC lines on whole, however stdin splits them, CRLF included', async () => {
    const ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
    const { passed, replies } = await filter([
      ping.slice(0, 10),
      ping.slice(10, 20),
      `${ping.slice(20)}\r\n${ping}`,
      '\n\n',
    ])
    expect(passed).toBe(`${ping}\r\n${ping}\n`)
    expect(replies).toEqual([])
  })

  it('answers a line longer than the bound once, drops it to its newline, and reads the next line', async () => {
    const ping = '{"jsonrpc":"2.0","id":2,"method":"ping"}'
    const piece = Buffer.alloc(1024 * 1024, 0x61)
    const long = Array.from({ length: Math.ceil(MAX_STDIO_LINE_BYTES / piece.length) + 2 }, () => piece)
    const { passed, replies } = await filter([...long, `tail\n${ping}\n`])
    expect(replies).toEqual([
      {
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: expect.stringContaining(`${MAX_STDIO_LINE_BYTES} bytes`) },
      },
    ])
    expect(passed).toBe(`${ping}\n`)
  })

  it('drops a last line that never got its newline, as the transport would', async () => {
    const { passed, replies } = await filter(['{"jsonrpc":"2.0","id":3,"method":"ping"}'])
    expect(passed).toBe('')
    expect(replies).toEqual([])
  })
})
