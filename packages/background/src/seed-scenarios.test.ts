/**
 * The background-task scenarios of seed 000 (agent tools bg_*) and seed 003 (design), through the
 * public entry points only, on real timers.
 */
import { setTimeout as delay } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { recordingLogger } from './__fixtures__/harness.js'
import { type AgentRunner, BackgroundError, BackgroundManager, type TaskSnapshot } from './index.js'
import { nextEvent, RecordingAgentRunner, RecordingChannelSender } from './testing/index.js'

/** A runner that answers after a few milliseconds of real time, or stops when aborted. */
function slowRunner(ms: number, answer = (prompt: string) => `answer to: ${prompt.split('\n\n').at(-1)}`) {
  return new RecordingAgentRunner({
    handler: async (request, { signal }) => {
      await delay(ms, undefined, { signal })
      return { text: answer(request.prompt) }
    },
  })
}

describe('seed 000 — what BackgroundManager gives the bg_* tools (the tools themselves are tested in @lango/tools)', () => {
  it('submit() with a prompt and optional origin channel returns the task id immediately', async () => {
    const runner = new RecordingAgentRunner()
    await using manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
    })
    manager.start()

    const withChannel = manager.submit({ prompt: 'Research flight prices', originChannel: 'telegram:7' })
    const withoutChannel = manager.submit({ prompt: 'Tidy the notes' })

    // The ids come back while the agent work is still in progress.
    expect(typeof withChannel).toBe('string')
    expect(withoutChannel).not.toBe(withChannel)
    expect(runner.calls.every((call) => !call.settled)).toBe(true)
    expect(manager.snapshot(withChannel)).toMatchObject({ status: 'running', originChannel: 'telegram:7' })
    expect(manager.snapshot(withoutChannel)).toMatchObject({ status: 'running', originChannel: undefined })
  })

  it('snapshot() returns status, prompt and timing', async () => {
    await using manager = new BackgroundManager({
      agentRunner: slowRunner(5),
      channelSender: new RecordingChannelSender(),
    })
    const before = Date.now()
    const id = manager.submit({ prompt: 'Check the build' })
    const pending = manager.snapshot(id)
    expect(pending).toMatchObject({ id, status: 'pending', prompt: 'Check the build', startedAt: undefined })

    manager.start()
    const running = manager.snapshot(id)
    expect(running.status).toBe('running')
    expect(running.startedAt).toBeGreaterThanOrEqual(before)

    const done = await manager.wait(id)
    expect(done.status).toBe('done')
    expect(done.createdAt).toBeLessThanOrEqual(done.startedAt ?? 0)
    expect(done.startedAt).toBeLessThanOrEqual(done.completedAt ?? 0)
  })

  it('result() returns the result text of a completed task', async () => {
    await using manager = new BackgroundManager({
      agentRunner: slowRunner(2),
      channelSender: new RecordingChannelSender(),
    })
    manager.start()
    const id = manager.submit({ prompt: 'Sum 2 and 2' })
    expect(() => manager.result(id)).toThrow(/still running/)
    await manager.wait(id)
    expect(manager.result(id)).toEqual({
      id,
      status: 'done',
      result: 'answer to: Sum 2 and 2',
      resultTruncated: false,
    })
  })

  it('cancel() cancels a running task and returns its cancelled snapshot', async () => {
    const runner = slowRunner(60_000)
    const notifier = new RecordingChannelSender()
    await using manager = new BackgroundManager({ agentRunner: runner, channelSender: notifier })
    manager.start()
    const id = manager.submit({ prompt: 'Long crawl', originChannel: 'slack:C9' })
    const call = await runner.nextCall()

    const confirmation = manager.cancel(id)
    expect(confirmation).toMatchObject({ id, status: 'cancelled' })
    expect(call.signal.aborted).toBe(true)
    expect(manager.snapshot(id).status).toBe('cancelled')
    await notifier.next()
    expect((await notifier.next()).text).toBe(`[Background] Task ${id} cancelled: Long crawl`)
  })

  it('list() lists tasks newest first, filtered by status', async () => {
    const runner = new RecordingAgentRunner()
    await using manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
      maxConcurrentTasks: 1,
    })
    manager.start()
    const first = manager.submit({ prompt: 'one' })
    const second = manager.submit({ prompt: 'two' })
    const third = manager.submit({ prompt: 'three' })
    ;(await runner.nextCall()).resolve('1')
    await manager.wait(first)

    expect(manager.list().map((task) => task.id)).toEqual([third, second, first])
    expect(manager.list({ status: 'pending' }).map((task) => task.id)).toEqual([third])
    expect(manager.list({ status: 'done' }).map((task) => task.id)).toEqual([first])
  })
})

describe('seed 003 — background task design', () => {
  it('executes tasks with a concurrency limit', async () => {
    const runner = slowRunner(3)
    await using manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
      maxConcurrentTasks: 2,
    })
    let running = 0
    let peak = 0
    manager.on('task:start', () => {
      running += 1
      peak = Math.max(peak, running)
    })
    manager.on('task:end', () => {
      running -= 1
    })
    manager.start()
    const ids = Array.from({ length: 8 }, (_, index) => manager.submit({ prompt: `job ${index}` }))
    const ended = await Promise.all(ids.map((id) => manager.wait(id)))
    expect(ended.every((task) => task.status === 'done')).toBe(true)
    expect(peak).toBe(2)
    expect(runner.peakInFlight).toBe(2)
  })

  it('sends completion notifications to the channel the task came from', async () => {
    const notifier = new RecordingChannelSender()
    await using manager = new BackgroundManager({ agentRunner: slowRunner(2), channelSender: notifier })
    manager.start()
    const id = manager.submit({ prompt: 'Weekly report', originChannel: 'discord:general' })
    const started = await notifier.next()
    const ended = await notifier.next()
    expect([started.target, ended.target]).toEqual(['discord:general', 'discord:general'])
    expect(ended.text).toMatch(
      new RegExp(`^\\[Background\\] Task ${id} done in \\S+: Weekly report\\n\\nanswer to: Weekly report$`),
    )
  })

  it('keeps tasks in memory only: a restarted manager knows none of the earlier tasks', async () => {
    const first = new BackgroundManager({
      agentRunner: slowRunner(1),
      channelSender: new RecordingChannelSender(),
    })
    first.start()
    const id = first.submit({ prompt: 'ephemeral' })
    await first.wait(id)
    await first.stop()

    await using restarted = new BackgroundManager({
      agentRunner: slowRunner(1),
      channelSender: new RecordingChannelSender(),
    })
    restarted.start()
    expect(restarted.list()).toEqual([])
    expect(() => restarted.snapshot(id)).toThrow(
      expect.objectContaining({ code: 'BACKGROUND_TASK_NOT_FOUND' }),
    )
  })

  it('reports status by polling: snapshots show progress with no subscription', async () => {
    const runner = new RecordingAgentRunner()
    await using manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
    })
    manager.start()
    const id = manager.submit({ prompt: 'poll me' })
    const seen: TaskSnapshot['status'][] = [manager.snapshot(id).status]
    ;(await runner.nextCall()).resolve('polled')
    while (manager.snapshot(id).status === 'running') await delay(1)
    seen.push(manager.snapshot(id).status)
    expect(seen).toEqual(['running', 'done'])
  })

  it('a channel delivery failure is logged and the task keeps its status and result', async () => {
    const logger = recordingLogger()
    const notifier = new RecordingChannelSender({
      handler: async () => {
        throw new Error('channel unavailable')
      },
    })
    await using manager = new BackgroundManager({
      agentRunner: slowRunner(1),
      channelSender: notifier,
      logger,
    })
    manager.start()
    const failure = nextEvent(manager, 'notify:error', { filter: ({ error }) => BackgroundError.is(error) })
    const id = manager.submit({ prompt: 'deliver me', originChannel: 'telegram:404' })
    await failure
    await manager.wait(id)
    expect(manager.result(id).result).toBe('answer to: deliver me')
    expect(logger.entries).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        fields: expect.objectContaining({ taskId: id, channel: 'telegram:404' }),
      }),
    )
  })

  it('decouples the agent through a narrow AgentRunner port: any object with run() fits', async () => {
    const seen: string[] = []
    const runner: AgentRunner = {
      run: async (request) => {
        seen.push(request.sessionKey)
        return { text: 'ok' }
      },
    }
    await using manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
    })
    manager.start()
    const id = manager.submit({ prompt: 'x' })
    await manager.wait(id)
    expect(seen).toEqual([`bg:${id}`])
  })
})

describe('regressions of the reference Go implementation', () => {
  it('a task that timed out does not stay running forever and gives its slot back', async () => {
    const stuck = new RecordingAgentRunner({ ignoreSignal: true })
    await using manager = new BackgroundManager({
      agentRunner: stuck,
      channelSender: new RecordingChannelSender(),
      maxConcurrentTasks: 1,
      taskTimeoutMs: 30,
      stopGraceMs: 0,
    })
    manager.start()
    const timedOut = manager.submit({ prompt: 'hangs forever' })
    const next = manager.submit({ prompt: 'must still run' })
    const nextStarted = nextEvent(manager, 'task:start', { filter: (task) => task.id === next })
    expect(await manager.wait(timedOut)).toMatchObject({ status: 'failed', timedOut: true })
    await nextStarted
    expect(manager.snapshot(next).status).toBe('running')
    expect(stuck.inFlight).toBe(2)
  })

  it('cancelled and timed-out tasks tell their origin channel', async () => {
    const notifier = new RecordingChannelSender()
    await using manager = new BackgroundManager({
      agentRunner: new RecordingAgentRunner(),
      channelSender: notifier,
      taskTimeoutMs: 20,
    })
    manager.start()
    const cancelled = manager.submit({ prompt: 'cancel me', originChannel: 'telegram:1' })
    const timedOut = manager.submit({ prompt: 'time me out', originChannel: 'telegram:2' })
    manager.cancel(cancelled)
    await manager.wait(timedOut)
    const texts: string[] = []
    while (texts.length < 4) texts.push((await notifier.next()).text)
    expect(texts).toEqual(
      expect.arrayContaining([
        `[Background] Task ${cancelled} cancelled: cancel me`,
        `[Background] Task ${timedOut} failed: it timed out after 20ms and was stopped: time me out`,
      ]),
    )
  })
})
