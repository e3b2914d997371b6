import { describe, expect, it } from 'vitest'
import { FakeClock } from './fake-clock.js'
import { nextEvent } from './next-event.js'
import { RecordingAgentRunner } from './recording-agent-runner.js'
import { RecordingChannelSender } from './recording-channel-sender.js'
import { agentRunnerContract, channelNotifierContract } from './vitest.js'

agentRunnerContract(
  'RecordingAgentRunner',
  () => new RecordingAgentRunner({ handler: () => ({ text: 'ok' }) }),
)
channelNotifierContract('RecordingChannelSender', () => new RecordingChannelSender())

describe('FakeClock', () => {
  it('fires due timers in order with now() at each due time, including timers they register', () => {
    const clock = new FakeClock(1000)
    const fired: string[] = []
    clock.setTimeout(() => fired.push(`b@${clock.now().getTime()}`), 20)
    clock.setTimeout(() => {
      fired.push(`a@${clock.now().getTime()}`)
      clock.setTimeout(() => fired.push(`c@${clock.now().getTime()}`), 5)
    }, 10)
    const cleared = clock.setTimeout(() => fired.push('never'), 15)
    clock.clearTimeout(cleared)
    clock.advance(14)
    expect(fired).toEqual(['a@1010'])
    clock.advance(100)
    expect(fired).toEqual(['a@1010', 'c@1015', 'b@1020'])
    expect(clock.now().getTime()).toBe(1114)
    expect(clock.pendingTimerCount).toBe(0)
  })

  it('setTime() skews the wall clock without firing or delaying timers', () => {
    const clock = new FakeClock(new Date('2025-03-30T00:00:00Z'))
    let fired = false
    clock.setTimeout(() => {
      fired = true
    }, 1000)
    clock.setTime(new Date('2025-03-29T00:00:00Z'))
    expect(fired).toBe(false)
    clock.advance(1000)
    expect(fired).toBe(true)
    expect(clock.now().toISOString()).toBe('2025-03-29T00:00:01.000Z')
    expect(() => clock.advance(-1)).toThrow(RangeError)
  })
})

describe('RecordingAgentRunner', () => {
  it('hands out calls in order and measures concurrency', async () => {
    const runner = new RecordingAgentRunner()
    const signal = new AbortController().signal
    const first = runner.run({ prompt: '1', sessionKey: 'bg:1' }, { signal })
    const second = runner.run({ prompt: '2', sessionKey: 'bg:2' }, { signal })
    expect(runner.inFlight).toBe(2)
    const call = await runner.nextCall()
    expect(call.request.prompt).toBe('1')
    call.resolve('one')
    await expect(first).resolves.toEqual({ text: 'one' })
    ;(await runner.nextCall()).reject(new Error('two'))
    await expect(second).rejects.toThrow('two')
    expect([runner.inFlight, runner.peakInFlight]).toEqual([0, 2])
  })

  it('ignores its signal when asked to', async () => {
    const runner = new RecordingAgentRunner({ ignoreSignal: true })
    const controller = new AbortController()
    const run = runner.run({ prompt: 'p', sessionKey: 'bg:x' }, { signal: controller.signal })
    controller.abort(new Error('stop'))
    const call = await runner.nextCall()
    expect(call.settled).toBe(false)
    call.resolve('late')
    await expect(run).resolves.toEqual({ text: 'late' })
  })

  it('nextCall() rejects with signal.reason when aborted while waiting', async () => {
    const runner = new RecordingAgentRunner()
    const controller = new AbortController()
    const waiting = runner.nextCall({ signal: controller.signal })
    const reason = new Error('gave up')
    controller.abort(reason)
    await expect(waiting).rejects.toBe(reason)
  })
})

describe('RecordingChannelSender', () => {
  it('records notices and hands them out in order', async () => {
    const notifier = new RecordingChannelSender()
    const next = notifier.next()
    await notifier.send('a', 'first', { signal: new AbortController().signal })
    await notifier.send('b', 'second', { signal: new AbortController().signal })
    expect((await next).text).toBe('first')
    expect((await notifier.next()).target).toBe('b')
    expect(notifier.texts).toEqual(['first', 'second'])
  })
})

describe('nextEvent', () => {
  it('resolves with the first matching payload and rejects with signal.reason when aborted', async () => {
    const listeners = new Set<(payload: unknown) => void>()
    const source = {
      on: (_event: string, listener: (payload: never) => void) => {
        listeners.add(listener as (payload: unknown) => void)
        return () => listeners.delete(listener as (payload: unknown) => void)
      },
    }
    const matching = nextEvent(source, 'task:end', { filter: (task) => task.id === 'b' })
    for (const listener of [...listeners]) listener({ id: 'a' })
    for (const listener of [...listeners]) listener({ id: 'b' })
    await expect(matching).resolves.toEqual({ id: 'b' })
    expect(listeners.size).toBe(0)

    const controller = new AbortController()
    const aborted = nextEvent(source, 'task:start', { signal: controller.signal })
    const reason = new Error('enough')
    controller.abort(reason)
    await expect(aborted).rejects.toBe(reason)
    expect(listeners.size).toBe(0)
  })
})

describe('deprecated names of the testing fakes', () => {
  it('FakeAgentRunner and RecordingNotifier still construct the renamed fakes, exported from /testing', async () => {
    const testing = await import('./index.js')
    const runner = new testing.FakeAgentRunner({ handler: () => ({ text: 'old name' }) })
    expect(runner).toBeInstanceOf(testing.RecordingAgentRunner)
    const answer = await runner.run(
      { prompt: 'p', sessionKey: 'bg:1' },
      { signal: new AbortController().signal },
    )
    expect(answer).toEqual({ text: 'old name' })
    const notifier = new testing.RecordingNotifier()
    expect(notifier).toBeInstanceOf(testing.RecordingChannelSender)
    await notifier.send('telegram:1', 'hello', { signal: new AbortController().signal })
    expect(notifier.texts).toEqual(['hello'])
  })
})
