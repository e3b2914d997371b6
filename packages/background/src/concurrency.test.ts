/** Load behaviour: many tasks through a small limit (deadlines on a clock the test moves). */
import { setImmediate as nextTurn } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { BackgroundManager } from './background-manager.js'
import type { TaskSnapshot } from './task.js'
import { FakeClock } from './testing/fake-clock.js'
import { RecordingAgentRunner } from './testing/recording-agent-runner.js'
import { RecordingChannelSender } from './testing/recording-channel-sender.js'

/** Resolves once `count` tasks have ended. */
function endOf(manager: BackgroundManager, count: number): Promise<TaskSnapshot[]> {
  const ended: TaskSnapshot[] = []
  return new Promise((resolve) => {
    manager.on('task:end', (task) => {
      ended.push(task)
      if (ended.length === count) resolve(ended)
    })
  })
}

describe('concurrency under load', () => {
  it('1,000 submissions with a limit of 3 never run more than 3 at once and all finish', async () => {
    const runner = new RecordingAgentRunner({
      handler: async (request) => {
        const turns = Number(request.prompt) % 5
        for (let turn = 0; turn < turns; turn += 1) await nextTurn()
        return { text: `result ${request.prompt}` }
      },
    })
    await using manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
      maxConcurrentTasks: 3,
      maxQueuedTasks: 1000,
      maxFinishedTasks: 1000,
      automationPrefix: '',
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
    const allEnded = endOf(manager, 1000)
    manager.start()
    const ids = Array.from({ length: 1000 }, (_, index) => manager.submit({ prompt: String(index) }))

    const ended = await allEnded
    expect(peak).toBe(3)
    expect(runner.peakInFlight).toBe(3)
    expect(runner.calls).toHaveLength(1000)
    expect(ended.every((task) => task.status === 'done')).toBe(true)
    expect(ids.map((id, index) => manager.result(id).result === `result ${index}`).every(Boolean)).toBe(true)
    expect(runner.calls.map((call) => call.request.prompt)).toEqual(ids.map((_, index) => String(index)))
  })

  it('keeps the limit while tasks fail, time out, ignore their signal and get cancelled', async () => {
    const runner = new RecordingAgentRunner({
      ignoreSignal: true,
      handler: async (request, { signal }) => {
        const index = Number(request.prompt)
        if (index % 10 === 0) return new Promise(() => {}) // stuck: only the deadline ends it
        for (let turn = 0; turn < index % 4; turn += 1) await nextTurn()
        if (index % 7 === 0) throw new Error(`failure ${index}`)
        signal.throwIfAborted()
        return { text: `ok ${index}` }
      },
    })
    // Deadlines run on a clock the test moves only while every running task is a stuck one: a task
    // that answers in a few turns never times out, however slow the machine.
    const clock = new FakeClock()
    await using manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
      clock,
      maxConcurrentTasks: 3,
      maxQueuedTasks: 300,
      maxFinishedTasks: 300,
      taskTimeoutMs: 100,
      stopGraceMs: 0,
      automationPrefix: '',
    })
    let running = 0
    let peak = 0
    manager.on('task:start', (task) => {
      running += 1
      peak = Math.max(peak, running)
      // Cancel every ninth task just as it starts.
      if (Number(task.prompt) % 9 === 4) queueMicrotask(() => manager.cancel(task.id))
    })
    manager.on('task:end', () => {
      running -= 1
    })
    let finished = false
    const allEnded = endOf(manager, 300).then((tasks) => {
      finished = true
      return tasks
    })
    manager.start()
    const ids = Array.from({ length: 300 }, (_, index) => manager.submit({ prompt: String(index) }))
    while (!finished) {
      await nextTurn()
      const busy = manager.list({ status: 'running' })
      if (busy.length > 0 && busy.every((task) => Number(task.prompt) % 10 === 0)) clock.advance(10)
    }
    const ended = await allEnded

    expect(peak).toBe(3)
    const statuses = new Map(ended.map((task) => [task.id, task]))
    expect(statuses.size).toBe(300)
    ids.forEach((id, index) => {
      const task = statuses.get(id)
      if (index % 9 === 4) expect(task?.status, `task ${index}`).toBe('cancelled')
      else if (index % 10 === 0)
        expect(task, `task ${index}`).toMatchObject({ status: 'failed', timedOut: true })
      else if (index % 7 === 0)
        expect(task, `task ${index}`).toMatchObject({ status: 'failed', error: `failure ${index}` })
      else expect(task, `task ${index}`).toMatchObject({ status: 'done', result: `ok ${index}` })
    })
    expect(manager.list({ status: 'running' })).toEqual([])
  })
})
