/** Timeout logic on vitest's fake timers, through the default `systemClock`. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { REFERENCE_TIME } from './__fixtures__/harness.js'
import { BackgroundManager } from './background-manager.js'
import { RecordingAgentRunner } from './testing/recording-agent-runner.js'
import { RecordingChannelSender } from './testing/recording-channel-sender.js'

const MINUTE = 60_000

beforeEach(() => {
  vi.useFakeTimers({ now: REFERENCE_TIME })
})

afterEach(() => {
  vi.useRealTimers()
})

describe('per-task timeout on fake timers', () => {
  it('defaults to 30 minutes: still running 1 ms before, failed with a timeout error at the deadline', async () => {
    const runner = new RecordingAgentRunner()
    const manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
    })
    manager.start()
    const id = manager.submit({ prompt: 'slow' })

    await vi.advanceTimersByTimeAsync(30 * MINUTE - 1)
    expect(manager.snapshot(id).status).toBe('running')
    await vi.advanceTimersByTimeAsync(1)
    expect(manager.snapshot(id)).toMatchObject({
      status: 'failed',
      timedOut: true,
      errorCode: 'BACKGROUND_TASK_TIMEOUT',
      error: 'Task task-timeout timed out after 30m'.replace('task-timeout', id),
      completedAt: REFERENCE_TIME + 30 * MINUTE,
    })
    expect(runner.calls[0]?.settled).toBe(true)
    await manager.stop()
    expect(vi.getTimerCount()).toBe(0)
  })

  it('frees the slot of a runner that ignores its signal, and the next task runs to completion', async () => {
    let calls = 0
    const runner = new RecordingAgentRunner({
      ignoreSignal: true,
      handler: () => {
        calls += 1
        // The first call never settles; later calls answer after one second.
        if (calls === 1) return new Promise(() => {})
        return new Promise((resolve) => setTimeout(() => resolve({ text: 'second done' }), 1000))
      },
    })
    const manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
      maxConcurrentTasks: 1,
      taskTimeoutMs: 5000,
      stopGraceMs: 100,
    })
    manager.start()
    const stuck = manager.submit({ prompt: 'never returns' })
    const next = manager.submit({ prompt: 'waits for the slot' })

    await vi.advanceTimersByTimeAsync(4999)
    expect(manager.snapshot(next).status).toBe('pending')
    await vi.advanceTimersByTimeAsync(1)
    expect(manager.snapshot(stuck)).toMatchObject({ status: 'failed', timedOut: true })
    expect(manager.snapshot(next).status).toBe('running')

    await vi.advanceTimersByTimeAsync(1000)
    expect(manager.snapshot(next)).toMatchObject({ status: 'done', result: 'second done' })
    expect(runner.inFlight).toBe(1)

    const stopping = manager.stop()
    await vi.advanceTimersByTimeAsync(100)
    await stopping
    expect(vi.getTimerCount()).toBe(0)
  })

  it('counts the deadline from start, not from submit', async () => {
    const runner = new RecordingAgentRunner()
    const manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
      maxConcurrentTasks: 1,
      taskTimeoutMs: 15 * MINUTE,
    })
    manager.start()
    manager.submit({ prompt: 'first', timeoutMs: 10 * MINUTE })
    const queued = manager.submit({ prompt: 'queued' })

    await vi.advanceTimersByTimeAsync(10 * MINUTE)
    expect(manager.snapshot(queued)).toMatchObject({
      status: 'running',
      startedAt: REFERENCE_TIME + 10 * MINUTE,
    })
    await vi.advanceTimersByTimeAsync(15 * MINUTE - 1)
    expect(manager.snapshot(queued).status).toBe('running')
    await vi.advanceTimersByTimeAsync(1)
    expect(manager.snapshot(queued)).toMatchObject({
      status: 'failed',
      timedOut: true,
      completedAt: REFERENCE_TIME + 25 * MINUTE,
    })
    await manager.stop()
  })

  it('drains a queue of stuck runners in waves of maxConcurrentTasks, one timeout apart', async () => {
    const runner = new RecordingAgentRunner({ ignoreSignal: true })
    const manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
      maxConcurrentTasks: 2,
      taskTimeoutMs: 1000,
      stopGraceMs: 0,
    })
    manager.start()
    const ids = Array.from({ length: 5 }, (_, index) => manager.submit({ prompt: `stuck ${index}` }))

    await vi.advanceTimersByTimeAsync(3000)
    const ended = ids.map((id) => manager.snapshot(id))
    expect(ended.map((task) => task.status)).toEqual(['failed', 'failed', 'failed', 'failed', 'failed'])
    expect(ended.map((task) => (task.completedAt ?? 0) - REFERENCE_TIME)).toEqual([
      1000, 1000, 2000, 2000, 3000,
    ])
    expect(runner.inFlight).toBe(5)
    expect(runner.calls.every((call) => call.signal.aborted)).toBe(true)
    await manager.stop()
    expect(vi.getTimerCount()).toBe(0)
  })

  it('abandons a hanging notice after notifyTimeoutMs and still ends the task on time', async () => {
    const notifier = new RecordingChannelSender({ handler: () => new Promise(() => {}) })
    const runner = new RecordingAgentRunner()
    const manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: notifier,
      notifyTimeoutMs: 1000,
      taskTimeoutMs: 5000,
    })
    const failures: string[] = []
    manager.on('notify:error', ({ error }) => failures.push(error.code))
    manager.start()
    const id = manager.submit({ prompt: 'x', originChannel: 'c' })
    await vi.advanceTimersByTimeAsync(5000)
    expect(manager.snapshot(id)).toMatchObject({ status: 'failed', timedOut: true })
    await vi.advanceTimersByTimeAsync(1000)
    expect(failures).toEqual(['BACKGROUND_NOTIFY_FAILED', 'BACKGROUND_NOTIFY_FAILED'])
    await manager.stop()
    expect(vi.getTimerCount()).toBe(0)
  })

  it('keeps deadlines exact when fake timers are installed after the manager first read the clock', async () => {
    vi.useRealTimers()
    const manager = new BackgroundManager({
      agentRunner: new RecordingAgentRunner(),
      channelSender: new RecordingChannelSender(),
      taskTimeoutMs: 1000,
    })
    manager.start()
    manager.submit({ prompt: 'under real timers' })
    // Fake Date starts at the real time; fake performance.now() starts again near zero.
    vi.useFakeTimers()
    const id = manager.submit({ prompt: 'under fake timers', timeoutMs: 1000 })
    await vi.advanceTimersByTimeAsync(999)
    expect(manager.snapshot(id).status).toBe('running')
    await vi.advanceTimersByTimeAsync(1)
    expect(manager.snapshot(id)).toMatchObject({ status: 'failed', timedOut: true })
    vi.useRealTimers()
    await manager.stop()
  })

  it('never fires a deadline early or late when the wall clock steps back or forward', async () => {
    const manager = new BackgroundManager({
      agentRunner: new RecordingAgentRunner(),
      channelSender: new RecordingChannelSender(),
      taskTimeoutMs: 500,
    })
    manager.start()
    await vi.advanceTimersByTimeAsync(900)
    vi.setSystemTime(Date.now() - 800)
    const back = manager.submit({ prompt: 'after a step back' })
    vi.setSystemTime(Date.now() + 5000)
    const forward = manager.submit({ prompt: 'after a step forward' })
    await vi.advanceTimersByTimeAsync(499)
    expect([manager.snapshot(back).status, manager.snapshot(forward).status]).toEqual(['running', 'running'])
    await vi.advanceTimersByTimeAsync(1)
    expect([manager.snapshot(back).status, manager.snapshot(forward).status]).toEqual(['failed', 'failed'])
    await manager.stop()
  })
})
