import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { blockLangoExec, ProcessRegistry, run } from '@lango/exec'
import { generateText, stepCountIs } from 'ai'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { abortProbe } from '../__fixtures__/abort-probe.js'
import type { ApprovalGate, ApprovalRequest } from '../approval.js'
import { createExecTools } from '../exec-tools.js'
import type { AnyTool } from '../tool.js'
import { toAiSdkTools } from './index.js'

/** One scripted model turn: call tools, or answer with text. */
type Turn = { readonly calls: ReadonlyArray<{ name: string; arguments: string }> } | { readonly text: string }

type ChatMessage = { role: string; content?: unknown; tool_call_id?: string }
type ChatRequest = {
  messages: ChatMessage[]
  tools?: Array<{ function: { name: string; parameters: Record<string, unknown> } }>
}

/** The outside world faked at the wire: an OpenAI-compatible chat-completions endpoint on 127.0.0.1. */
class RecordingModel {
  readonly requests: ChatRequest[] = []
  #turns: Turn[] = []
  #server: Server | undefined
  #onRequest: (() => void) | undefined

  script(...turns: Turn[]): void {
    this.#turns = turns
  }

  onRequest(callback: () => void): void {
    this.#onRequest = callback
  }

  async start(): Promise<string> {
    this.#server = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk) => (body += chunk))
      request.on('end', () => {
        this.requests.push(JSON.parse(body) as ChatRequest)
        this.#onRequest?.()
        const turn = this.#turns.shift() ?? { text: 'no more turns' }
        const message =
          'text' in turn
            ? { role: 'assistant', content: turn.text }
            : {
                role: 'assistant',
                content: null,
                tool_calls: turn.calls.map((call, index) => ({
                  id: `call_${this.requests.length}_${index}`,
                  type: 'function',
                  function: call,
                })),
              }
        response.setHeader('content-type', 'application/json')
        response.end(
          JSON.stringify({
            id: `chatcmpl-${this.requests.length}`,
            object: 'chat.completion',
            created: 0,
            model: 'fake-model',
            choices: [{ index: 0, message, finish_reason: 'text' in turn ? 'stop' : 'tool_calls' }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        )
      })
    })
    await new Promise<void>((resolve) => this.#server?.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/v1`
  }

  async stop(): Promise<void> {
    await new Promise((resolve) => this.#server?.close(resolve))
  }

  /** The tool results the host sent back to the model, in order (the last request holds the whole history). */
  toolMessages(): string[] {
    return (this.requests.at(-1)?.messages ?? [])
      .filter((message) => message.role === 'tool')
      .map((message) => String(message.content))
  }
}

let fake: RecordingModel
let baseURL: string
let registry: ProcessRegistry
let execTools: AnyTool[]

beforeEach(async () => {
  fake = new RecordingModel()
  baseURL = await fake.start()
  registry = new ProcessRegistry({ killGraceMs: 200 })
  execTools = createExecTools({ backend: { run, registry, blockLangoExec } })
})
afterEach(async () => {
  await registry.stop()
  await fake.stop()
})

const model = () =>
  createOpenAICompatible({ name: 'fake', baseURL, apiKey: 'test-key' }).chatModel('fake-model')

describe('toAiSdkTools with generateText (AI SDK v6)', () => {
  it('the model calls exec through the approval gate, reads the result, then answers', async () => {
    const asked: ApprovalRequest[] = []
    const gate: ApprovalGate = {
      async request(request) {
        asked.push(request)
        return true
      },
    }
    fake.script(
      { calls: [{ name: 'exec', arguments: '{"command":"echo from-tool"}' }] },
      { text: 'It printed from-tool.' },
    )
    const result = await generateText({
      model: model(),
      tools: toAiSdkTools(execTools, { gate, sessionKey: 'telegram:1:2' }),
      stopWhen: stepCountIs(3),
      prompt: 'Run echo from-tool',
    })
    expect(result.text).toBe('It printed from-tool.')
    expect(asked).toMatchObject([
      { summary: 'Execute: ⟦echo from-tool⟧', safety: 'dangerous', sessionKey: 'telegram:1:2' },
    ])
    expect(fake.toolMessages().map((text) => JSON.parse(text))).toEqual([
      {
        exit_code: 0,
        stdout: 'from-tool\n',
        stderr: '',
        timed_out: false,
        duration_ms: expect.any(Number),
        truncated: false,
      },
    ])
    const published = fake.requests[0]?.tools?.find((tool) => tool.function.name === 'exec')?.function
      .parameters
    expect(published).toMatchObject({
      type: 'object',
      required: ['command'],
      properties: { timeout: { description: expect.stringMatching(/seconds/i) } },
    })
  })

  it("validates input with the tool's own schema and hands failures back to the model as results", async () => {
    fake.script(
      { calls: [{ name: 'exec', arguments: '{"command":"","timeout":"soon"}' }] },
      { calls: [{ name: 'exec', arguments: '{"command":"lango cron list"}' }] },
      { calls: [{ name: 'exec', arguments: '{"command":"echo denied"}' }] },
      { text: 'gave up' },
    )
    const result = await generateText({
      model: model(),
      tools: toAiSdkTools(execTools, { gate: { request: async () => false } }),
      stopWhen: stepCountIs(5),
      prompt: 'try things',
    })
    expect(result.text).toBe('gave up')
    const toolMessages = fake.toolMessages()
    expect(toolMessages).toHaveLength(3)
    expect(toolMessages[0]).toMatch(/invalid parameters for exec: command: .*timeout:/)
    expect(JSON.parse(toolMessages[1] as string)).toEqual({
      blocked: true,
      message: expect.stringContaining('cron_add'),
    })
    expect(JSON.parse(toolMessages[2] as string)).toEqual({
      error: { code: 'TOOL_DENIED', message: 'not approved: Execute: ⟦echo denied⟧' },
    })
  })

  it("passes generateText's abortSignal to the tool", async () => {
    const { tool: probe, running, aborted: sawAbort } = abortProbe()
    fake.script({ calls: [{ name: 'probe', arguments: '{}' }] }, { text: 'never' })
    const controller = new AbortController()
    const generation = generateText({
      model: model(),
      tools: toAiSdkTools([probe]),
      stopWhen: stepCountIs(3),
      prompt: 'probe',
      abortSignal: controller.signal,
    })
    await running
    controller.abort()
    await expect(generation).rejects.toThrow()
    await sawAbort
    expect(fake.requests).toHaveLength(1)
  })
})
