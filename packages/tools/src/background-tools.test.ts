import { BackgroundManager } from '@lango/background'
import { RecordingAgentRunner, RecordingChannelSender } from '@lango/background/testing'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createBackgroundTools } from './background-tools.js'
import { invokeTool } from './invoke.js'
import type { AnyTool, ToolContext } from './tool.js'

let runner: RecordingAgentRunner
let notifier: RecordingChannelSender
let manager: BackgroundManager
let tools: Map<string, AnyTool>

beforeEach(() => {
  runner = new RecordingAgentRunner()
  notifier = new RecordingChannelSender()
  manager = new BackgroundManager({ agentRunner: runner, channelSender: notifier, maxConcurrentTasks: 1 })
  manager.start()
  tools = new Map(
    createBackgroundTools({ service: manager, defaultChannel: 'webhook' }).map((tool) => [tool.name, tool]),
  )
})
afterEach(async () => {
  await manager.stop()
})

const session = { sessionKey: 'telegram:4242:7' }
const call = (name: string, params: unknown, context: ToolContext = session) =>
  invokeTool(tools.get(name) as AnyTool, params, context, { policy: 'none' })
describe('background tools (seed 000)', () => {
  it('bg_submit returns the task id immediately and auto-detects the channel from the session', async () => {
    const outcome = await call('bg_submit', { prompt: 'Summarise the open issues' })
    expect(outcome).toMatchObject({ ok: true, result: { status: 'submitted', task_id: expect.any(String) } })
    const id = (outcome as { result: { task_id: string } }).result.task_id
    expect(manager.snapshot(id).originChannel).toBe('telegram:4242')
    await waitFor(() => runner.calls.length === 1)
    expect(runner.calls[0]?.request.sessionKey).toBe(`bg:${id}`)
  })

  it("bg_submit's task counts against the call's creator: a chat's own key, an automated run's creator", async () => {
    await call('bg_submit', { prompt: 'from a chat' })
    await waitFor(() => runner.calls.length === 1)
    expect(runner.calls[0]?.request.creator).toBe('telegram:4242:7')
    // Inside a cron run the session key names the run; the creator is the job's.
    const outcome = await call(
      'bg_submit',
      { prompt: 'from a cron run' },
      { sessionKey: 'cron:nightly:r1', creator: 'telegram:4242:7' },
    )
    const id = (outcome as { result: { task_id: string } }).result.task_id
    expect(manager.snapshot(id).originSession).toBe('cron:nightly:r1')
    runner.calls[0]?.resolve('done')
    await waitFor(() => runner.calls.length === 2)
    expect(runner.calls[1]?.request.creator).toBe('telegram:4242:7')
  })

  it("bg_submit starts its task as deep as the calling session (the host's nesting), refused past maxNesting (WF-7)", async () => {
    const from = async (context: ToolContext) => {
      const outcome = await call('bg_submit', { prompt: 'go on' }, context)
      if (!outcome.ok) return (outcome.error as { reason?: string }).reason
      return manager.snapshot((outcome as { result: { task_id: string } }).result.task_id).nesting
    }
    // A person's chat: 0. A session the host counted 2 deep (a workflow step started by a task).
    expect(await from(session)).toBe(0)
    expect(await from({ sessionKey: 'workflow:w:r1:s', nesting: 2 })).toBe(2)
    expect(await from({ sessionKey: 'workflow:w:r1:s', nesting: 3 })).toBe('BACKGROUND_NESTING_TOO_DEEP')
    // Without the host's count, a task's own session counts one level.
    expect(await from({ sessionKey: 'bg:someone-else' })).toBe(1)
  })

  it('bg_submit from a chat announcing to another chat needs approval, showing where; its own chat and the default do not', async () => {
    const asked: string[] = []
    const asking = (params: unknown, context: ToolContext = session) =>
      invokeTool(tools.get('bg_submit') as AnyTool, params, context, {
        policy: 'dangerous',
        gate: {
          async request(request) {
            asked.push(request.summary)
            return false
          },
        },
      })
    expect(await asking({ prompt: 'mine', channel: 'telegram:4242' })).toMatchObject({ ok: true })
    expect(await asking({ prompt: 'ops', channel: 'webhook' })).toMatchObject({ ok: true })
    expect(asked).toEqual([])
    const elsewhere = await asking({ prompt: 'Summarise my notes', channel: 'telegram:99' })
    expect(elsewhere).toMatchObject({ ok: false, error: { code: 'TOOL_DENIED' } })
    expect(asked).toEqual(['Submit background task: ⟦Summarise my notes⟧ — result goes to: ⟦telegram:99⟧'])
    // From outside a chat (the operator's MCP client) the caller names the channel.
    expect(
      await asking({ prompt: 'x', channel: 'telegram:99' }, { sessionKey: 'mcp:desktop' }),
    ).toMatchObject({
      ok: true,
    })
  })

  it('bg_submit refuses a channel the host cannot reach (checkTarget), before any task starts', async () => {
    const checked = createBackgroundTools({
      service: manager,
      checkTarget: (target) => (target === 'webhook' ? 'the webhook channel is not configured' : undefined),
    }).find((tool) => tool.name === 'bg_submit') as AnyTool
    const outcome = await invokeTool(checked, { prompt: 'x', channel: 'webhook' }, session, {
      policy: 'none',
    })
    expect(outcome).toMatchObject({
      ok: false,
      error: {
        code: 'TOOL_INVALID_PARAMETERS',
        message:
          'invalid parameters: channel: "webhook" cannot be delivered to: the webhook channel is not configured',
      },
    })
    expect(manager.list()).toEqual([])
  })

  it('bg_submit uses an explicit channel, then the configured default', async () => {
    const explicit = await call('bg_submit', { prompt: 'a', channel: 'slack:C1' })
    const fallback = await call('bg_submit', { prompt: 'b' }, { sessionKey: 'cron:nightly' })
    const id = (outcome: unknown) => (outcome as { result: { task_id: string } }).result.task_id
    expect(manager.snapshot(id(explicit)).originChannel).toBe('slack:C1')
    expect(manager.snapshot(id(fallback)).originChannel).toBe('webhook')
  })

  it('bg_status returns the snapshot with status, prompt and timing; bg_result the text once done', async () => {
    const submitted = await call('bg_submit', { prompt: 'Count to three' })
    const id = (submitted as { result: { task_id: string } }).result.task_id
    await waitFor(() => runner.calls.length === 1)
    expect(await call('bg_status', { task_id: id })).toMatchObject({
      ok: true,
      result: {
        task_id: id,
        status: 'running',
        prompt: 'Count to three',
        input_tokens: null,
        output_tokens: null,
        created_at: expect.any(String),
        started_at: expect.any(String),
      },
    })
    const early = await call('bg_result', { task_id: id })
    expect(early).toMatchObject({
      ok: false,
      error: { code: 'TOOL_FAILED', message: expect.stringMatching(/running/) },
    })
    runner.calls[0]?.resolve('one, two, three')
    await manager.wait(id)
    expect(await call('bg_result', { task_id: id })).toEqual({
      ok: true,
      // The runner reported no usage: no token counts (and, without a spend lookup, no model or cost).
      result: {
        task_id: id,
        status: 'done',
        result: 'one, two, three',
        input_tokens: null,
        output_tokens: null,
      },
    })
    await waitFor(() => notifier.notices.length >= 2)
    expect(notifier.notices.map((notice) => notice.target)).toEqual(['telegram:4242', 'telegram:4242'])
  })

  it('bg_status shows the tokens a done task used, null when the runner reported none', async () => {
    const counting = new BackgroundManager({
      agentRunner: new RecordingAgentRunner({
        handler: (request) =>
          request.prompt.endsWith('counted')
            ? { text: 'ok', usage: { inputTokens: 10, outputTokens: 5 } }
            : { text: 'ok' },
      }),
      channelSender: notifier,
    })
    counting.start()
    try {
      const [status] = createBackgroundTools({ service: counting }).filter(
        (tool) => tool.name === 'bg_status',
      )
      const tokens = async (prompt: string) => {
        const id = counting.submit({ prompt })
        await counting.wait(id)
        const outcome = await invokeTool(status as AnyTool, { task_id: id }, session, { policy: 'none' })
        const { result } = outcome as { result: { input_tokens: unknown; output_tokens: unknown } }
        return [result.input_tokens, result.output_tokens]
      }
      expect(await tokens('counted')).toEqual([10, 5])
      expect(await tokens('plain')).toEqual([null, null])
    } finally {
      await counting.stop()
    }
  })

  it('bg_list lists tasks newest first and filters by status', async () => {
    const first = await call('bg_submit', { prompt: 'first' })
    await call('bg_submit', { prompt: 'second' })
    await waitFor(() => runner.calls.length === 1)
    const all = (await call('bg_list', {})) as { result: { tasks: Array<{ prompt: string }>; count: number } }
    expect(all.result.count).toBe(2)
    expect(all.result.tasks.map((task) => task.prompt)).toEqual(['second', 'first'])
    const pending = (await call('bg_list', { status: 'pending' })) as {
      result: { tasks: Array<{ prompt: string }> }
    }
    expect(pending.result.tasks.map((task) => task.prompt)).toEqual(['second'])
    expect(first).toMatchObject({ ok: true })
  })

  it('bg_cancel cancels a running task and confirms', async () => {
    const submitted = await call('bg_submit', { prompt: 'long job' })
    const id = (submitted as { result: { task_id: string } }).result.task_id
    await waitFor(() => runner.calls.length === 1)
    expect(await call('bg_cancel', { task_id: id })).toEqual({
      ok: true,
      result: { status: 'cancelled', task_id: id },
    })
    expect(runner.calls[0]?.signal.aborted).toBe(true)
  })

  it('unknown task ids are clear errors', async () => {
    expect(await call('bg_status', { task_id: 'nope' })).toMatchObject({
      ok: false,
      error: { code: 'TOOL_FAILED' },
    })
  })
})
