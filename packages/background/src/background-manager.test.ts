import { describe, expect, expectTypeOf, it, vi } from 'vitest'
import { createHarness, flushPromises, REFERENCE_TIME, recordingLogger } from './__fixtures__/harness.js'
import { AUTOMATION_PREFIX } from './automation-prefix.js'
import { BackgroundManager } from './background-manager.js'
import { BackgroundError, PermanentError } from './errors.js'
import type { AgentRunRequest, AgentRunResult } from './ports.js'
import type { TaskSnapshot, TaskStatus } from './task.js'
import { FakeClock } from './testing/fake-clock.js'
import { nextEvent } from './testing/next-event.js'
import { RecordingAgentRunner } from './testing/recording-agent-runner.js'
import { RecordingChannelSender } from './testing/recording-channel-sender.js'

function codeOf(action: () => unknown): string | undefined {
  try {
    action()
  } catch (error) {
    return BackgroundError.is(error) ? error.code : `not a BackgroundError: ${String(error)}`
  }
  return undefined
}

function errorOf(action: () => unknown): BackgroundError {
  try {
    action()
  } catch (error) {
    if (BackgroundError.is(error)) return error
    throw error
  }
  throw new Error('expected a BackgroundError')
}

describe('BackgroundManager.submit', () => {
  it('returns an id at once; the task is pending until start() gives it a slot', async () => {
    const { manager, runner, clock } = createHarness()
    const id = manager.submit({ prompt: 'Summarise the logs' })

    expect(id).toBe('task-1')
    expect(manager.snapshot(id)).toMatchObject({ status: 'pending', createdAt: REFERENCE_TIME })
    expect(manager.snapshot(id).startedAt).toBeUndefined()
    expect(runner.calls).toHaveLength(0)

    clock.advance(5000)
    manager.start()
    expect(manager.snapshot(id)).toMatchObject({
      status: 'running',
      startedAt: REFERENCE_TIME + 5000,
    })
    expect(runner.calls).toHaveLength(1)
  })

  it('by default gives each task a random UUID, and finds each task by it', () => {
    const manager = new BackgroundManager({
      agentRunner: new RecordingAgentRunner(),
      channelSender: new RecordingChannelSender(),
    })
    const ids = Array.from({ length: 20 }, (_, index) => manager.submit({ prompt: `task ${index}` }))
    for (const [index, id] of ids.entries()) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      expect(manager.snapshot(id)).toMatchObject({ id, prompt: `task ${index}` })
    }
    expect(new Set(ids).size).toBe(20)
    expect(codeOf(() => manager.snapshot(ids[0]?.toUpperCase() as string))).toBe('BACKGROUND_TASK_NOT_FOUND')
  })

  it.each([
    ['an empty prompt', ''],
    ['a blank prompt', '   \n '],
    ['a missing prompt', undefined],
  ])('rejects %s with BACKGROUND_INVALID_INPUT', (_label, prompt) => {
    const { manager } = createHarness()
    expect(codeOf(() => manager.submit({ prompt: prompt as string }))).toBe('BACKGROUND_INVALID_INPUT')
    expect(manager.list()).toHaveLength(0)
  })

  it('rejects a prompt longer than maxPromptLength, an over-long channel and a bad timeout', () => {
    const { manager } = createHarness({ maxPromptLength: 10 })
    expect(errorOf(() => manager.submit({ prompt: 'x'.repeat(11) })).data).toMatchObject({ field: 'prompt' })
    expect(codeOf(() => manager.submit({ prompt: 'x'.repeat(10) }))).toBeUndefined()
    expect(codeOf(() => manager.submit({ prompt: 'x', originChannel: 'c'.repeat(300) }))).toBe(
      'BACKGROUND_INVALID_INPUT',
    )
    for (const timeoutMs of [0, -1, Number.NaN, 2 ** 31]) {
      expect(codeOf(() => manager.submit({ prompt: 'x', timeoutMs }))).toBe('BACKGROUND_INVALID_INPUT')
    }
  })

  it('rejects an empty or duplicate id from the id generator', () => {
    const ids = ['same', 'same', '']
    const { manager } = createHarness({ idGenerator: () => ids.shift() ?? 'x' })
    manager.submit({ prompt: 'first' })
    expect(codeOf(() => manager.submit({ prompt: 'second' }))).toBe('BACKGROUND_DUPLICATE_ID')
    expect(codeOf(() => manager.submit({ prompt: 'third' }))).toBe('BACKGROUND_DUPLICATE_ID')
    expect(manager.list()).toHaveLength(1)
  })

  it('rejects submissions beyond maxQueuedTasks with a clear BACKGROUND_QUEUE_FULL, and accepts again once there is room', async () => {
    const { manager, runner } = createHarness({ maxConcurrentTasks: 1, maxQueuedTasks: 2 })
    manager.start()
    manager.submit({ prompt: 'runs' })
    manager.submit({ prompt: 'waits 1' })
    manager.submit({ prompt: 'waits 2' })

    const error = errorOf(() => manager.submit({ prompt: 'one too many' }))
    expect(error.code).toBe('BACKGROUND_QUEUE_FULL')
    expect(error.message).toMatch(/queue is full \(2 tasks waiting\)/)
    expect(error.data).toMatchObject({ maxQueuedTasks: 2 })
    expect(manager.list()).toHaveLength(3)

    const ended = nextEvent(manager, 'task:end')
    ;(await runner.nextCall()).resolve('ok')
    await ended
    expect(codeOf(() => manager.submit({ prompt: 'fits now' }))).toBeUndefined()
    expect(manager.list({ status: 'pending' })).toHaveLength(2)
  })

  it('with maxQueuedTasks 0 accepts a task only when a slot is free', () => {
    const { manager } = createHarness({ maxConcurrentTasks: 1, maxQueuedTasks: 0 })
    expect(codeOf(() => manager.submit({ prompt: 'not started yet' }))).toBe('BACKGROUND_QUEUE_FULL')
    manager.start()
    expect(codeOf(() => manager.submit({ prompt: 'gets the slot' }))).toBeUndefined()
    expect(codeOf(() => manager.submit({ prompt: 'no slot' }))).toBe('BACKGROUND_QUEUE_FULL')
  })
})

describe('concurrency', () => {
  it('runs at most maxConcurrentTasks at once, first in first out', async () => {
    const { manager, runner } = createHarness({ maxConcurrentTasks: 2 })
    manager.start()
    const ids = ['a', 'b', 'c', 'd', 'e'].map((prompt) => manager.submit({ prompt }))

    expect(runner.calls).toHaveLength(2)
    expect(manager.list({ status: 'running' }).map((task) => task.id)).toEqual([ids[1], ids[0]])
    expect(manager.list({ status: 'pending' })).toHaveLength(3)

    const ended = nextEvent(manager, 'task:end')
    ;(await runner.nextCall()).resolve('a done')
    await ended
    expect(runner.calls).toHaveLength(3)
    expect(runner.calls[2]?.request.prompt.endsWith('\n\nc')).toBe(true)
    expect(manager.list({ status: 'running' })).toHaveLength(2)
  })
})

describe('AgentRunner port', () => {
  it('calls the runner with session key bg:<id> and the prompt after the automation prefix', async () => {
    const { manager, runner } = createHarness()
    manager.start()
    const id = manager.submit({ prompt: 'Check the disk usage' })
    const call = await runner.nextCall()
    expect(call.request).toEqual({
      sessionKey: `bg:${id}`,
      prompt: `${AUTOMATION_PREFIX}\n\nCheck the disk usage`,
    })
    expect(call.request.prompt).toMatch(/unattended/)
    expect(manager.snapshot(id).prompt).toBe('Check the disk usage')
  })

  it("passes the task's creator to the runner (its spend counts against them), and checks it", async () => {
    const { manager, runner } = createHarness()
    manager.start()
    const id = manager.submit({
      prompt: 'Summarise',
      originSession: 'cron:watch:r1',
      creator: 'telegram:1:7',
    })
    expect((await runner.nextCall()).request).toEqual({
      sessionKey: `bg:${id}`,
      prompt: `${AUTOMATION_PREFIX}\n\nSummarise`,
      creator: 'telegram:1:7',
    })
    expect(codeOf(() => manager.submit({ prompt: 'p', creator: 'x'.repeat(257) }))).toBe(
      'BACKGROUND_INVALID_INPUT',
    )
  })

  it('uses a configured automation prefix, and sends the prompt unchanged when it is empty', async () => {
    const custom = createHarness({ automationPrefix: 'AUTOMATED.' })
    custom.manager.start()
    custom.manager.submit({ prompt: 'p' })
    expect((await custom.runner.nextCall()).request.prompt).toBe('AUTOMATED.\n\np')

    const none = createHarness({ automationPrefix: '' })
    none.manager.start()
    none.manager.submit({ prompt: 'p' })
    expect((await none.runner.nextCall()).request.prompt).toBe('p')
  })

  it('stores the result, capped at maxResultLength with a marker', async () => {
    const { manager, runner } = createHarness({ maxResultLength: 10 })
    manager.start()
    const short = manager.submit({ prompt: 'short' })
    const long = manager.submit({ prompt: 'long' })
    ;(await runner.nextCall()).resolve('0123456789')
    ;(await runner.nextCall()).resolve('0123456789abcdef')
    await Promise.all([manager.wait(short), manager.wait(long)])

    expect(manager.result(short)).toEqual({
      id: short,
      status: 'done',
      result: '0123456789',
      resultTruncated: false,
    })
    const capped = manager.result(long)
    expect(capped.resultTruncated).toBe(true)
    expect(capped.result).toBe('0123456789\n[… truncated 6 characters]')
  })

  it("keeps the runner's token usage on the done task; a runner that cannot count leaves it out", async () => {
    expectTypeOf<AgentRunResult['usage']>().toEqualTypeOf<
      { readonly inputTokens: number; readonly outputTokens: number } | undefined
    >()
    // The server's runner also says totalTokens; only the two counts are kept.
    const reported = { inputTokens: 10, outputTokens: 5, totalTokens: 15 }
    const answers: Record<string, AgentRunResult> = {
      counted: { text: 'a', usage: reported },
      plain: { text: 'b' },
      broken: { text: 'c', usage: { inputTokens: -1, outputTokens: 1.5 } },
    }
    const runner = new RecordingAgentRunner({
      handler: (request) => answers[request.prompt] ?? { text: '?' },
    })
    const { manager } = createHarness({ runner, automationPrefix: '' })
    manager.start()
    const ids = Object.keys(answers).map((prompt) => manager.submit({ prompt }))
    const done = await Promise.all(ids.map((id) => manager.wait(id)))
    expect(done.map((task) => [task.status, task.usage])).toEqual([
      ['done', { inputTokens: 10, outputTokens: 5 }],
      ['done', undefined],
      ['done', undefined],
    ])
    expect(JSON.parse(JSON.stringify(manager.snapshot(ids[0] as string))).usage).toEqual({
      inputTokens: 10,
      outputTokens: 5,
    })
  })

  it('ends the task failed with the runner error; a PermanentError is marked not retryable', async () => {
    const { manager, runner } = createHarness()
    manager.start()
    const plain = manager.submit({ prompt: 'flaky' })
    const permanent = manager.submit({ prompt: 'impossible' })
    ;(await runner.nextCall()).reject(new Error('upstream 503'))
    ;(await runner.nextCall()).reject(new PermanentError('repository is gone'))

    expect(await manager.wait(plain)).toMatchObject({
      status: 'failed',
      error: 'upstream 503',
      errorCode: 'BACKGROUND_TASK_FAILED',
      retryable: true,
      timedOut: false,
    })
    expect(await manager.wait(permanent)).toMatchObject({
      status: 'failed',
      error: 'repository is gone',
      retryable: false,
    })
  })

  it("keeps what a failed run spent and honours retryable: false (the rejection's AgentRunFailure)", async () => {
    const { manager, runner } = createHarness()
    manager.start()
    const stopped = manager.submit({ prompt: 'spend' })
    const flaky = manager.submit({ prompt: 'flaky' })
    ;(await runner.nextCall()).reject(
      Object.assign(new Error('budget_exhausted: the turn used 900 tokens'), {
        usage: { inputTokens: 800, outputTokens: 100 },
        retryable: false,
      }),
    )
    ;(await runner.nextCall()).reject(
      Object.assign(new Error('upstream 503'), { usage: { inputTokens: -3, outputTokens: 1 } }),
    )
    expect(await manager.wait(stopped)).toMatchObject({
      status: 'failed',
      usage: { inputTokens: 800, outputTokens: 100 },
      retryable: false,
    })
    // Counts that are not whole numbers of 0 or more are not kept.
    expect(await manager.wait(flaky)).toMatchObject({ status: 'failed', usage: undefined, retryable: true })
  })

  it('a task cancelled, timed out or stopped keeps the last total its runner told (AgentRunOptions.onUsage)', async () => {
    const { manager, runner, clock } = createHarness({ taskTimeoutMs: 60_000 })
    manager.start()
    const cancelled = manager.submit({ prompt: 'cancel me' })
    const timedOut = manager.submit({ prompt: 'too slow', timeoutMs: 1000 })
    const stopped = manager.submit({ prompt: 'stopped' })
    const told = { inputTokens: 100, outputTokens: 20 }
    const runs = [await runner.nextCall(), await runner.nextCall(), await runner.nextCall()]
    // Each has spent 100 + 20; the one cut by its timeout tells its model call's cost when it aborts.
    for (const run of runs) run.onUsage(told)
    runs[1]?.signal.addEventListener('abort', () => runs[1]?.onUsage({ inputTokens: 150, outputTokens: 30 }))
    manager.cancel(cancelled)
    clock.advance(1000)
    expect(manager.snapshot(cancelled)).toMatchObject({ status: 'cancelled', usage: told })
    expect(manager.snapshot(timedOut)).toMatchObject({
      status: 'failed',
      timedOut: true,
      usage: { inputTokens: 150, outputTokens: 30 },
    })
    await manager.stop()
    expect(manager.snapshot(stopped)).toMatchObject({ status: 'cancelled', usage: told })
  })

  it('refuses a task past maxNesting in a chain of tasks submitted from tasks (SECURITY.md WF-7)', async () => {
    const { manager } = createHarness({ maxNesting: 2 })
    manager.start()
    // A person's task, then one submitted from inside it (its session bg:<id>), and so on.
    const first = manager.submit({ prompt: 'look for work', originSession: 'telegram:1:2' })
    const second = manager.submit({ prompt: 'and more', originSession: `bg:${first}` })
    const third = manager.submit({ prompt: 'and more', originSession: `bg:${second}` })
    expect([first, second, third].map((id) => manager.snapshot(id).nesting)).toEqual([0, 1, 2])
    let refused: unknown
    try {
      manager.submit({ prompt: 'and more', originSession: `bg:${third}` })
    } catch (error) {
      refused = error
    }
    expect(BackgroundError.is(refused)).toBe(true)
    expect(refused).toMatchObject({
      code: 'BACKGROUND_NESTING_TOO_DEEP',
      data: { nesting: 3, maxNesting: 2 },
    })
    // The host's count (a workflow step started from a task) is taken when it is deeper.
    expect(manager.snapshot(manager.submit({ prompt: 'x', nesting: 2 })).nesting).toBe(2)
    expect(() => manager.submit({ prompt: 'x', nesting: 3 })).toThrow(/nest at most 2 deep/)
    expect(() => manager.submit({ prompt: 'x', nesting: -1 })).toThrow(/nesting must be a whole number/)
    expect(() => createHarness({ maxNesting: -1 })).toThrow(/maxNesting must be an integer/)
    // Nothing refused was queued.
    expect(manager.list()).toHaveLength(4)
  })

  it('fails the task when the runner throws synchronously or rejects with a non-Error', async () => {
    const throwing = createHarness({
      runner: {
        run: () => {
          throw new TypeError('bad adapter')
        },
      },
    })
    throwing.manager.start()
    const id = throwing.manager.submit({ prompt: 'x' })
    expect(await throwing.manager.wait(id)).toMatchObject({ status: 'failed', error: 'bad adapter' })

    const rejecting = createHarness({ runner: { run: () => Promise.reject('plain string') } })
    rejecting.manager.start()
    const other = rejecting.manager.submit({ prompt: 'y' })
    expect(await rejecting.manager.wait(other)).toMatchObject({ status: 'failed', error: 'plain string' })
  })

  it('fails the task, and frees its slot, when the result text cannot be read', async () => {
    const unreadable = [
      {
        text: {
          toString: () => {
            throw new Error('no text for you')
          },
        },
      },
      {
        get text(): string {
          throw new Error('getter broke')
        },
      },
    ]
    let call = 0
    const { manager } = createHarness({
      maxConcurrentTasks: 1,
      runner: { run: async () => (unreadable[call++] ?? { text: 'fine' }) as AgentRunResult },
    })
    manager.start()
    const ids = [
      manager.submit({ prompt: 'a' }),
      manager.submit({ prompt: 'b' }),
      manager.submit({ prompt: 'c' }),
    ]
    await manager.whenIdle()
    expect(ids.map((id) => manager.snapshot(id))).toMatchObject([
      { status: 'failed', errorCode: 'BACKGROUND_TASK_FAILED', error: 'no text for you' },
      { status: 'failed', errorCode: 'BACKGROUND_TASK_FAILED', error: 'getter broke' },
      { status: 'done', result: 'fine' },
    ])
  })
})

describe('timeouts (fake clock)', () => {
  it('times each task from its own start when the runner or a listener takes time synchronously', async () => {
    const clock = new FakeClock(REFERENCE_TIME)
    let calls = 0
    const runner = {
      run: () => {
        calls += 1
        if (calls <= 2) clock.advance(300) // works 300 ms before it returns its promise
        return new Promise<AgentRunResult>(() => {})
      },
    }
    const { manager } = createHarness({
      runner,
      clock,
      maxConcurrentTasks: 3,
      taskTimeoutMs: 1000,
      stopGraceMs: 0,
    })
    const ids = [1, 2, 3].map((n) => manager.submit({ prompt: `task ${n}` }))
    manager.on('task:start', () => clock.advance(50)) // a slow listener
    manager.start()
    expect(ids.map((id) => (manager.snapshot(id).startedAt ?? Number.NaN) - REFERENCE_TIME)).toEqual([
      0, 350, 700,
    ])
    const statuses = () => ids.map((id) => manager.snapshot(id).status)
    clock.advance(249) // t = 999
    expect(statuses()).toEqual(['running', 'running', 'running'])
    clock.advance(1)
    expect(statuses()).toEqual(['failed', 'running', 'running'])
    clock.advance(349)
    expect(statuses()).toEqual(['failed', 'running', 'running'])
    clock.advance(1)
    expect(statuses()).toEqual(['failed', 'failed', 'running'])
    clock.advance(350)
    expect(statuses()).toEqual(['failed', 'failed', 'failed'])
    await manager.stop()
  })

  it('a timed-out task ends failed with a timeout error, aborts its runner and frees its slot', async () => {
    const { manager, runner, clock } = createHarness({ maxConcurrentTasks: 1, taskTimeoutMs: 1000 })
    manager.start()
    const first = manager.submit({ prompt: 'slow' })
    const second = manager.submit({ prompt: 'next' })
    const call = await runner.nextCall()

    clock.advance(999)
    expect(manager.snapshot(first).status).toBe('running')
    clock.advance(1)

    const task = manager.snapshot(first)
    expect(task).toMatchObject({
      status: 'failed',
      timedOut: true,
      errorCode: 'BACKGROUND_TASK_TIMEOUT',
      retryable: true,
      completedAt: REFERENCE_TIME + 1000,
    })
    expect(task.error).toMatch(/timed out after 1s/)
    expect(call.signal.aborted).toBe(true)
    expect(BackgroundError.is(call.signal.reason) && call.signal.reason.code).toBe('BACKGROUND_TASK_TIMEOUT')
    expect(manager.snapshot(second).status).toBe('running')
    expect(runner.calls).toHaveLength(2)
  })

  it('a runner that ignores its signal still cannot hold a slot past its timeout', async () => {
    const runner = new RecordingAgentRunner({ ignoreSignal: true })
    const { manager, clock } = createHarness({ runner, maxConcurrentTasks: 1, taskTimeoutMs: 500 })
    manager.start()
    const stuck = manager.submit({ prompt: 'ignores abort' })
    const next = manager.submit({ prompt: 'waiting' })
    const stuckCall = await runner.nextCall()

    clock.advance(500)
    expect(manager.snapshot(stuck)).toMatchObject({ status: 'failed', timedOut: true })
    expect(manager.snapshot(next).status).toBe('running')
    expect(runner.inFlight).toBe(2)
    expect(stuckCall.settled).toBe(false)

    // Whatever the stuck runner returns later is discarded.
    stuckCall.resolve('too late')
    await flushPromises()
    expect(manager.snapshot(stuck)).toMatchObject({ status: 'failed', result: undefined })
  })

  it('uses a per-task timeout over the default, and sets no timer for Infinity', async () => {
    const { manager, clock } = createHarness({ taskTimeoutMs: 10_000 })
    manager.start()
    const quick = manager.submit({ prompt: 'quick', timeoutMs: 100 })
    const endless = manager.submit({ prompt: 'endless', timeoutMs: Number.POSITIVE_INFINITY })
    expect(clock.pendingTimerCount).toBe(1)

    clock.advance(100)
    expect(manager.snapshot(quick).status).toBe('failed')
    clock.advance(24 * 60 * 60_000)
    expect(manager.snapshot(endless)).toMatchObject({
      status: 'running',
      timeoutMs: Number.POSITIVE_INFINITY,
    })
  })

  it('clears the deadline timer when a task ends before it', async () => {
    const { manager, runner, clock } = createHarness()
    manager.start()
    const id = manager.submit({ prompt: 'fast' })
    expect(clock.pendingTimerCount).toBe(1)
    ;(await runner.nextCall()).resolve('ok')
    await manager.wait(id)
    expect(clock.pendingTimerCount).toBe(0)
  })

  it('keeps deadlines on elapsed time when the wall clock jumps backwards or forwards', async () => {
    const { manager, runner, notifier, clock } = createHarness({ taskTimeoutMs: 60_000 })
    manager.start()
    const back = manager.submit({ prompt: 'clock goes back', originChannel: 'chat:1' })
    clock.setTime(REFERENCE_TIME - 3_600_000)
    clock.advance(59_999)
    expect(manager.snapshot(back).status).toBe('running')
    clock.advance(1)
    expect(manager.snapshot(back)).toMatchObject({ status: 'failed', timedOut: true })

    const forward = manager.submit({ prompt: 'clock goes forward', originChannel: 'chat:1' })
    clock.setTime(REFERENCE_TIME + 7 * 24 * 3_600_000)
    expect(manager.snapshot(forward).status).toBe('running')
    const call = runner.calls[1]
    clock.setTime(REFERENCE_TIME - 86_400_000)
    call?.resolve('fine')
    const task = await manager.wait(forward)
    expect(task.status).toBe('done')
    expect((task.completedAt ?? 0) < (task.startedAt ?? 0)).toBe(true)
    // A negative wall-clock duration is shown as 0, never as a negative number.
    await vi.waitFor(() => expect(notifier.notices).toHaveLength(4), { timeout: 15_000 })
    expect(notifier.notices[3]?.text).toMatch(/done in 0ms/)
  })
})

describe('deadline timer', () => {
  it('watches every deadline with one timer, re-arming when the task it was armed for ends early', async () => {
    const { manager, runner, clock } = createHarness({ maxConcurrentTasks: 3, taskTimeoutMs: 1000 })
    manager.start()
    const first = manager.submit({ prompt: 'ends early' })
    clock.advance(100)
    const second = manager.submit({ prompt: 'runs long' })
    const third = manager.submit({ prompt: 'short timeout', timeoutMs: 300 })
    expect(clock.pendingTimerCount).toBe(1)

    ;(await runner.nextCall()).resolve('done early')
    await manager.wait(first)
    clock.advance(299)
    expect(manager.snapshot(third).status).toBe('running')
    clock.advance(1)
    expect(manager.snapshot(third)).toMatchObject({ status: 'failed', completedAt: REFERENCE_TIME + 400 })
    clock.advance(699)
    expect(manager.snapshot(second).status).toBe('running')
    clock.advance(1)
    expect(manager.snapshot(second)).toMatchObject({ status: 'failed', completedAt: REFERENCE_TIME + 1100 })
    expect(clock.pendingTimerCount).toBe(0)
  })

  it('falls back to one timer per task for a clock without monotonicNow, with the same results', async () => {
    const fake = new FakeClock(REFERENCE_TIME)
    const clock = {
      now: () => fake.now(),
      setTimeout: (callback: () => void, ms: number) => fake.setTimeout(callback, ms),
      clearTimeout: (handle: unknown) => fake.clearTimeout(handle),
    }
    const runner = new RecordingAgentRunner()
    const manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
      clock,
      taskTimeoutMs: 1000,
      maxConcurrentTasks: 2,
    })
    manager.start()
    const slow = manager.submit({ prompt: 'slow' })
    const fast = manager.submit({ prompt: 'fast' })
    expect(fake.pendingTimerCount).toBe(2)
    runner.calls[1]?.resolve('quick')
    await manager.wait(fast)
    expect(fake.pendingTimerCount).toBe(1)
    fake.setTime(REFERENCE_TIME + 10 * 3_600_000)
    fake.advance(999)
    expect(manager.snapshot(slow).status).toBe('running')
    fake.advance(1)
    expect(manager.snapshot(slow)).toMatchObject({ status: 'failed', timedOut: true })
    expect(fake.pendingTimerCount).toBe(0)
  })
})

describe('runner signal', () => {
  it('comes back already aborted when the runner first reads it after the task ended', async () => {
    const seen: AbortSignal[] = []
    let options: { readonly signal: AbortSignal } | undefined
    const { manager, clock } = createHarness({
      taskTimeoutMs: 100,
      runner: {
        run: (_request: AgentRunRequest, runOptions: { readonly signal: AbortSignal }) => {
          options = runOptions
          return new Promise<AgentRunResult>(() => {})
        },
      },
    })
    manager.start()
    const id = manager.submit({ prompt: 'reads its signal late' })
    clock.advance(100)
    expect(manager.snapshot(id).status).toBe('failed')
    const signal = (options as { readonly signal: AbortSignal }).signal
    seen.push(signal, (options as { readonly signal: AbortSignal }).signal)
    expect(signal.aborted).toBe(true)
    expect(BackgroundError.is(signal.reason) && signal.reason.code).toBe('BACKGROUND_TASK_TIMEOUT')
    expect(seen[0]).toBe(seen[1])
  })
})

describe('runner options', () => {
  /** An adapter written the natural way: it spreads the options to add its own before calling on. */
  function spreadingRunner(inner: RecordingAgentRunner) {
    return {
      run: (request: AgentRunRequest, options: { readonly signal: AbortSignal }) =>
        inner.run(request, { ...options, model: 'small' } as { readonly signal: AbortSignal }),
    }
  }

  it('keeps the signal when an adapter spreads the options: cancel aborts the spread signal', async () => {
    const inner = new RecordingAgentRunner()
    const { manager } = createHarness({ runner: spreadingRunner(inner) })
    manager.start()
    const id = manager.submit({ prompt: 'spread me' })
    const call = await inner.nextCall()
    expect(manager.snapshot(id).status).toBe('running')
    expect(call.signal).toBeInstanceOf(AbortSignal)
    manager.cancel(id)
    expect(call.signal.aborted).toBe(true)
    expect(BackgroundError.is(call.signal.reason) && call.signal.reason.code).toBe(
      'BACKGROUND_TASK_CANCELLED',
    )
    expect(call.settled).toBe(true)
  })

  it('keeps the signal when an adapter spreads the options: the deadline aborts the spread signal', async () => {
    const inner = new RecordingAgentRunner()
    const { manager, clock } = createHarness({ runner: spreadingRunner(inner), taskTimeoutMs: 1000 })
    manager.start()
    const id = manager.submit({ prompt: 'spread me' })
    const call = await inner.nextCall()
    clock.advance(1000)
    expect(manager.snapshot(id)).toMatchObject({ status: 'failed', timedOut: true })
    expect(call.signal.aborted).toBe(true)
    expect(BackgroundError.is(call.signal.reason) && call.signal.reason.code).toBe('BACKGROUND_TASK_TIMEOUT')
    expect(call.settled).toBe(true)
  })

  it('passes a plain object whose signal and onUsage are own enumerable properties', async () => {
    let seen: { readonly signal: AbortSignal } | undefined
    const { manager } = createHarness({
      runner: {
        run: (_request: AgentRunRequest, options: { readonly signal: AbortSignal }) => {
          seen = options
          return new Promise<AgentRunResult>(() => {})
        },
      },
    })
    manager.start()
    manager.submit({ prompt: 'inspect my options' })
    expect(Object.getPrototypeOf(seen)).toBe(Object.prototype)
    expect(Object.keys(seen as object)).toEqual(['signal', 'onUsage'])
    expect(Object.assign({}, seen).signal).toBe(seen?.signal)
  })
})

describe('queue housekeeping', () => {
  it('drops many cancelled pending tasks from the queue and keeps FIFO order for the rest', async () => {
    const { manager, runner } = createHarness({ maxConcurrentTasks: 1, maxQueuedTasks: 1000 })
    manager.start()
    manager.submit({ prompt: 'blocker' })
    const ids = Array.from({ length: 500 }, (_, index) => manager.submit({ prompt: `queued ${index}` }))
    const kept = ids.filter((_, index) => index % 50 === 7)
    for (const id of ids) if (!kept.includes(id)) manager.cancel(id)
    expect(manager.list({ status: 'pending' }).map((task) => task.id)).toEqual([...kept].reverse())

    const ended = Promise.all(kept.map((id) => manager.wait(id)))
    ;(await runner.nextCall()).resolve('blocker done')
    for (let index = 0; index < kept.length; index += 1) (await runner.nextCall()).resolve(`kept ${index}`)
    await ended
    expect(runner.calls.slice(1).map((call) => call.request.prompt.split('\n\n').at(-1))).toEqual(
      kept.map((id) => `queued ${ids.indexOf(id)}`),
    )
  })
})

describe('cancel', () => {
  it('cancels a pending task: it never runs, ends cancelled, and frees its queue place', async () => {
    const { manager, runner } = createHarness({ maxConcurrentTasks: 1, maxQueuedTasks: 1 })
    manager.start()
    manager.submit({ prompt: 'running' })
    const pending = manager.submit({ prompt: 'pending' })

    const snapshot = manager.cancel(pending)
    expect(snapshot).toMatchObject({ status: 'cancelled', errorCode: 'BACKGROUND_TASK_CANCELLED' })
    expect(snapshot.startedAt).toBeUndefined()
    expect(snapshot.completedAt).toBe(REFERENCE_TIME)
    expect(codeOf(() => manager.submit({ prompt: 'takes the freed place' }))).toBeUndefined()

    ;(await runner.nextCall()).resolve('ok')
    await nextEvent(manager, 'task:start')
    expect(runner.calls.map((call) => call.request.prompt.split('\n\n').at(-1))).toEqual([
      'running',
      'takes the freed place',
    ])
  })

  it('cancels a running task: its signal aborts with BACKGROUND_TASK_CANCELLED and the slot frees at once', async () => {
    const { manager, runner } = createHarness({ maxConcurrentTasks: 1 })
    manager.start()
    const running = manager.submit({ prompt: 'running' })
    const next = manager.submit({ prompt: 'next' })
    const call = await runner.nextCall()

    expect(manager.cancel(running).status).toBe('cancelled')
    expect(call.signal.aborted).toBe(true)
    expect(BackgroundError.is(call.signal.reason) && call.signal.reason.code).toBe(
      'BACKGROUND_TASK_CANCELLED',
    )
    expect(manager.snapshot(next).status).toBe('running')
    await flushPromises()
    expect(manager.snapshot(running).status).toBe('cancelled')
  })

  it('refuses to cancel an ended task, naming its status, and an unknown id', async () => {
    const { manager, runner } = createHarness()
    manager.start()
    const id = manager.submit({ prompt: 'x' })
    ;(await runner.nextCall()).resolve('ok')
    await manager.wait(id)
    const error = errorOf(() => manager.cancel(id))
    expect(error.code).toBe('BACKGROUND_TASK_ENDED')
    expect(error.message).toMatch(/already ended \(done\)/)
    expect(codeOf(() => manager.cancel('nope'))).toBe('BACKGROUND_TASK_NOT_FOUND')
  })
})

describe('snapshot, list and result', () => {
  it('records status and timestamps through pending → running → done', async () => {
    const { manager, runner, clock } = createHarness({ maxConcurrentTasks: 1 })
    manager.start()
    manager.submit({ prompt: 'first' })
    clock.advance(1000)
    const id = manager.submit({ prompt: 'second', originChannel: 'slack:C1', originSession: 'slack:C1:U1' })
    expect(manager.snapshot(id)).toMatchObject({
      status: 'pending',
      createdAt: REFERENCE_TIME + 1000,
      startedAt: undefined,
      completedAt: undefined,
      originChannel: 'slack:C1',
      originSession: 'slack:C1:U1',
    })
    clock.advance(1000)
    ;(await runner.nextCall()).resolve('one')
    await nextEvent(manager, 'task:start')
    expect(manager.snapshot(id)).toMatchObject({
      status: 'running',
      startedAt: REFERENCE_TIME + 2000,
    })
    clock.advance(500)
    ;(await runner.nextCall()).resolve('two')
    expect(await manager.wait(id)).toMatchObject({
      status: 'done',
      result: 'two',
      completedAt: REFERENCE_TIME + 2500,
    })
  })

  it('returns frozen copies that later changes do not touch', async () => {
    const { manager, runner } = createHarness()
    manager.start()
    const id = manager.submit({ prompt: 'x' })
    const before = manager.snapshot(id)
    expect(Object.isFrozen(before)).toBe(true)
    ;(await runner.nextCall()).resolve('ok')
    await manager.wait(id)
    expect(before.status).toBe('running')
    expect(JSON.parse(JSON.stringify(manager.snapshot(id)))).toMatchObject({
      id,
      status: 'done',
      result: 'ok',
    })
  })

  it('lists newest first and filters by status', async () => {
    const { manager, runner, clock } = createHarness({ maxConcurrentTasks: 2 })
    manager.start()
    const ids: string[] = []
    for (const prompt of ['a', 'b', 'c', 'd']) {
      ids.push(manager.submit({ prompt }))
      clock.advance(10)
    }
    ;(await runner.nextCall()).resolve('done a')
    await manager.wait(ids[0] as string)
    manager.cancel(ids[3] as string)

    expect(manager.list().map((task) => task.id)).toEqual([...ids].reverse())
    expect(manager.list({ status: 'running' }).map((task) => task.id)).toEqual([ids[2], ids[1]])
    expect(manager.list({ status: 'done' }).map((task) => task.id)).toEqual([ids[0]])
    expect(manager.list({ status: 'cancelled' }).map((task) => task.id)).toEqual([ids[3]])
    expect(manager.list({ status: 'pending' })).toEqual([])
    expect(codeOf(() => manager.list({ status: 'finished' as TaskStatus }))).toBe('BACKGROUND_INVALID_INPUT')
  })

  it.each([
    ['pending', /is pending/],
    ['running', /is still running/],
    ['failed', /failed; it has no result/],
    ['cancelled', /was cancelled/],
  ] as const)(
    'result() of a %s task throws BACKGROUND_TASK_NOT_DONE naming the status',
    async (status, message) => {
      const { manager, runner } = createHarness({ maxConcurrentTasks: 1 })
      manager.start()
      const blocker = manager.submit({ prompt: 'occupies the slot' })
      const id = status === 'running' ? blocker : manager.submit({ prompt: 'target' })
      if (status === 'failed') {
        manager.cancel(blocker)
        runner.calls[1]?.reject(new Error('boom'))
        await manager.wait(id)
      }
      if (status === 'cancelled') manager.cancel(id)
      expect(manager.snapshot(id).status).toBe(status)

      const error = errorOf(() => manager.result(id))
      expect(error.code).toBe('BACKGROUND_TASK_NOT_DONE')
      expect(error.message).toMatch(message)
      expect(error.data).toMatchObject({ taskId: id, status })
    },
  )

  it('snapshot(), result() and wait() of an unknown id fail with BACKGROUND_TASK_NOT_FOUND', async () => {
    const { manager } = createHarness()
    expect(codeOf(() => manager.snapshot('missing'))).toBe('BACKGROUND_TASK_NOT_FOUND')
    expect(codeOf(() => manager.result('missing'))).toBe('BACKGROUND_TASK_NOT_FOUND')
    await expect(manager.wait('missing')).rejects.toMatchObject({ code: 'BACKGROUND_TASK_NOT_FOUND' })
  })
})

describe('eviction', () => {
  it('keeps at most maxFinishedTasks ended tasks, evicting the earliest ended first', async () => {
    const { manager, runner } = createHarness({ maxFinishedTasks: 2, maxConcurrentTasks: 4 })
    manager.start()
    const ids = ['a', 'b', 'c', 'd'].map((prompt) => manager.submit({ prompt }))
    // End them in the order c, a, d, b.
    for (const index of [2, 0, 3, 1]) {
      runner.calls[index]?.resolve(`result ${index}`)
      await manager.wait(ids[index] as string)
    }
    expect(manager.list().map((task) => task.id)).toEqual([ids[3], ids[1]])
    expect(codeOf(() => manager.result(ids[2] as string))).toBe('BACKGROUND_TASK_NOT_FOUND')
    expect(codeOf(() => manager.snapshot(ids[0] as string))).toBe('BACKGROUND_TASK_NOT_FOUND')
    expect(manager.result(ids[1] as string).result).toBe('result 1')
  })

  it('never evicts pending or running tasks', () => {
    const { manager } = createHarness({ maxFinishedTasks: 0, maxConcurrentTasks: 1 })
    manager.start()
    const running = manager.submit({ prompt: 'a' })
    const pending = manager.submit({ prompt: 'b' })
    const cancelled = manager.submit({ prompt: 'c' })
    expect(manager.cancel(cancelled).status).toBe('cancelled')
    expect(manager.list().map((task) => task.id)).toEqual([pending, running])
  })
})

describe('ChannelNotifier port', () => {
  it('tells the origin channel when a task starts and when it ends done, with id, status and a result excerpt', async () => {
    const { manager, runner, notifier } = createHarness()
    manager.start()
    const id = manager.submit({ prompt: 'Count the open issues', originChannel: 'telegram:42' })
    const started = await notifier.next()
    expect(started.target).toBe('telegram:42')
    expect(started.text).toBe(
      `[Background] Task ${id} started: Count the open issues\nI will post the result here when it ends.`,
    )
    ;(await runner.nextCall()).resolve('There are 7 open issues.')
    const ended = await notifier.next()
    expect(ended.target).toBe('telegram:42')
    expect(ended.text).toBe(
      `[Background] Task ${id} done in 0ms: Count the open issues\n\nThere are 7 open issues.`,
    )
  })

  it('tells the origin channel about every terminal state: failed, timed out, cancelled while running or pending', async () => {
    const { manager, runner, notifier, clock } = createHarness({ maxConcurrentTasks: 3, taskTimeoutMs: 1000 })
    manager.start()
    const failed = manager.submit({ prompt: 'will fail', originChannel: 'c:failed' })
    const timedOut = manager.submit({ prompt: 'will time out', originChannel: 'c:timeout' })
    const cancelledRunning = manager.submit({ prompt: 'cancel me running', originChannel: 'c:running' })
    const cancelledPending = manager.submit({ prompt: 'cancel me pending', originChannel: 'c:pending' })

    manager.cancel(cancelledPending)
    ;(await runner.nextCall()).reject(new Error('disk full'))
    await manager.wait(failed)
    manager.cancel(cancelledRunning)
    clock.advance(1000)
    await manager.wait(timedOut)
    await vi.waitFor(() => expect(notifier.notices).toHaveLength(7), { timeout: 15_000 })

    const byChannel = (channel: string) =>
      notifier.notices.filter((notice) => notice.target === channel).map((notice) => notice.text)
    expect(byChannel('c:failed')).toEqual([
      expect.stringContaining(`Task ${failed} started`),
      `[Background] Task ${failed} failed after 0ms: will fail\nError: disk full`,
    ])
    expect(byChannel('c:timeout')).toEqual([
      expect.stringContaining('started'),
      `[Background] Task ${timedOut} failed: it timed out after 1s and was stopped: will time out`,
    ])
    expect(byChannel('c:running')).toEqual([
      expect.stringContaining('started'),
      `[Background] Task ${cancelledRunning} cancelled: cancel me running`,
    ])
    expect(byChannel('c:pending')).toEqual([
      `[Background] Task ${cancelledPending} cancelled: cancel me pending`,
    ])
  })

  it('sends the end notice after the start notice even when the start notice is slow', async () => {
    let releaseStart!: () => void
    const notifier = new RecordingChannelSender({
      handler: (_target, text) =>
        text.includes('started') ? new Promise<void>((resolve) => (releaseStart = resolve)) : undefined,
    })
    const { manager, runner } = createHarness({ notifier })
    manager.start()
    const id = manager.submit({ prompt: 'quick', originChannel: 'c' })
    ;(await runner.nextCall()).resolve('ok')
    await manager.wait(id)
    await flushPromises()
    expect(notifier.notices).toHaveLength(1)
    releaseStart()
    await notifier.next()
    expect((await notifier.next()).text).toMatch(/done/)
  })

  it('sends nothing for a task without an origin channel', async () => {
    const { manager, runner, notifier } = createHarness()
    manager.start()
    const id = manager.submit({ prompt: 'quiet' })
    ;(await runner.nextCall()).resolve('ok')
    await manager.wait(id)
    await flushPromises()
    expect(notifier.notices).toEqual([])
  })

  it('a failing notifier never changes the task status; the failure is emitted as notify:error', async () => {
    const notifier = new RecordingChannelSender({
      handler: () => {
        throw new Error('telegram is down')
      },
    })
    const { manager, runner } = createHarness({ notifier })
    manager.start()
    const errors: string[] = []
    manager.on('notify:error', ({ taskId, channel, error }) =>
      errors.push(`${taskId} ${channel} ${error.code}`),
    )
    const id = manager.submit({ prompt: 'x', originChannel: 'telegram:1' })
    ;(await runner.nextCall()).resolve('fine')
    expect(await manager.wait(id)).toMatchObject({ status: 'done', result: 'fine' })
    await vi.waitFor(() => expect(errors).toHaveLength(2), { timeout: 15_000 })
    expect(errors).toEqual([
      `${id} telegram:1 BACKGROUND_NOTIFY_FAILED`,
      `${id} telegram:1 BACKGROUND_NOTIFY_FAILED`,
    ])
    expect(manager.snapshot(id).status).toBe('done')
  })

  it('gives up on a notice that does not settle within notifyTimeoutMs and aborts its signal', async () => {
    const notifier = new RecordingChannelSender({ handler: () => new Promise<void>(() => {}) })
    const { manager, clock } = createHarness({ notifier, notifyTimeoutMs: 2000, taskTimeoutMs: 60_000 })
    manager.start()
    const id = manager.submit({ prompt: 'x', originChannel: 'slow:1' })
    const notice = await notifier.next()
    const failure = nextEvent(manager, 'notify:error')
    clock.advance(2000)
    const { error } = await failure
    expect(error.code).toBe('BACKGROUND_NOTIFY_FAILED')
    expect(error.message).toMatch(/not delivered within 2000 ms/)
    expect(notice.signal.aborted).toBe(true)
    expect(manager.snapshot(id).status).toBe('running')
  })

  it('keeps notices short: a long result is cut to an excerpt that points at the full result', async () => {
    const { manager, runner, notifier } = createHarness()
    manager.start()
    const id = manager.submit({ prompt: 'p'.repeat(500), originChannel: 'c' })
    ;(await runner.nextCall()).resolve('word '.repeat(10_000))
    await notifier.next()
    const { text } = await notifier.next()
    expect(text.length).toBeLessThan(800)
    expect(text).toContain(`Shortened; ask for the result of task ${id}`)
    expect(text).toContain(`${'p'.repeat(80)}…`)
  })
})

describe('lifecycle and stop()', () => {
  it('start() is idempotent; start() after stop() throws BACKGROUND_STOPPED, and so does submit()', async () => {
    const { manager } = createHarness()
    expect(manager.state).toBe('idle')
    manager.start()
    manager.start()
    expect(manager.state).toBe('running')
    await manager.stop()
    expect(manager.state).toBe('stopped')
    expect(codeOf(() => manager.start())).toBe('BACKGROUND_STOPPED')
    expect(codeOf(() => manager.submit({ prompt: 'late' }))).toBe('BACKGROUND_STOPPED')
  })

  it('cancels pending and running tasks, tells their channels, and waits for runners to return', async () => {
    const runner = new RecordingAgentRunner({ ignoreSignal: true })
    const { manager, notifier, clock } = createHarness({ runner, maxConcurrentTasks: 1 })
    manager.start()
    const running = manager.submit({ prompt: 'running', originChannel: 'c:1' })
    const pending = manager.submit({ prompt: 'pending', originChannel: 'c:2' })
    const call = await runner.nextCall()
    // A runner that takes a moment to wind down after its abort.
    call.signal.addEventListener('abort', () => queueMicrotask(() => call.reject(call.signal.reason)))

    let stopped = false
    const stopping = manager.stop().then(() => {
      stopped = true
    })
    expect(manager.state).toBe('stopping')
    expect(manager.snapshot(running)).toMatchObject({ status: 'cancelled', errorCode: 'BACKGROUND_STOPPED' })
    expect(manager.snapshot(pending)).toMatchObject({ status: 'cancelled', errorCode: 'BACKGROUND_STOPPED' })
    expect(runner.calls).toHaveLength(1)
    await stopping
    expect(stopped).toBe(true)
    expect(call.settled).toBe(true)
    // Notices of one task keep their order; notices of different tasks may interleave.
    expect(notifier.texts).toHaveLength(3)
    expect(notifier.texts).toEqual(
      expect.arrayContaining([
        `[Background] Task ${running} started: running\nI will post the result here when it ends.`,
        `[Background] Task ${running} cancelled because the background service stopped: running`,
        `[Background] Task ${pending} cancelled because the background service stopped: pending`,
      ]),
    )
    expect(notifier.texts.findIndex((text) => text.includes('started'))).toBeLessThan(
      notifier.texts.findIndex((text) => text.includes(`${running} cancelled`)),
    )
    expect(clock.pendingTimerCount).toBe(0)
  })

  it('waits at most stopGraceMs for a runner that ignores its signal, then abandons it and logs a warning', async () => {
    const logger = recordingLogger()
    const runner = new RecordingAgentRunner({ ignoreSignal: true })
    const { manager, clock } = createHarness({ runner, stopGraceMs: 5000, logger })
    manager.start()
    manager.submit({ prompt: 'stubborn' })
    await runner.nextCall()
    let stopped = false
    const stopping = manager.stop().then(() => {
      stopped = true
    })
    await flushPromises()
    expect(stopped).toBe(false)
    clock.advance(5000)
    await stopping
    expect(manager.state).toBe('stopped')
    expect(logger.entries).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        fields: { count: 1 },
        message: expect.stringMatching(/abandon/),
      }),
    )
    expect(clock.pendingTimerCount).toBe(0)
  })

  it('stop() rejects with signal.reason when the signal aborted before the call, and still works afterwards', async () => {
    const { manager } = createHarness()
    manager.start()
    const reason = new Error('no time')
    await expect(manager.stop({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
    expect(manager.state).toBe('running')
    await manager.stop()
    expect(manager.state).toBe('stopped')
  })

  it('stop() gives up waiting and rejects with signal.reason when the signal aborts during the wait', async () => {
    const runner = new RecordingAgentRunner({ ignoreSignal: true })
    const { manager, clock } = createHarness({ runner, stopGraceMs: 60_000 })
    manager.start()
    const id = manager.submit({ prompt: 'stubborn' })
    await runner.nextCall()
    const controller = new AbortController()
    const stopping = manager.stop({ signal: controller.signal })
    const reason = new Error('shutdown deadline')
    controller.abort(reason)
    await expect(stopping).rejects.toBe(reason)
    expect(manager.snapshot(id).status).toBe('cancelled')
    await manager.stop()
    expect(manager.state).toBe('stopped')
    expect(clock.pendingTimerCount).toBe(0)
  })

  it('stop() is idempotent: a second call waits for the same stop', async () => {
    const { manager, runner } = createHarness()
    manager.start()
    manager.submit({ prompt: 'x' })
    await runner.nextCall()
    const first = manager.stop()
    const second = manager.stop()
    await Promise.all([first, second])
    expect(manager.state).toBe('stopped')
  })

  it('stops through await using', async () => {
    const runner = new RecordingAgentRunner()
    let id = ''
    let probe: BackgroundManager | undefined
    {
      await using manager = new BackgroundManager({
        agentRunner: runner,
        channelSender: new RecordingChannelSender(),
      })
      probe = manager
      manager.start()
      id = manager.submit({ prompt: 'scoped' })
    }
    expect(probe?.state).toBe('stopped')
    expect(probe?.snapshot(id).status).toBe('cancelled')
    expect(runner.calls[0]?.signal.aborted).toBe(true)
  })
})

describe('wait()', () => {
  it('resolves at once for an ended task', async () => {
    const { manager } = createHarness()
    const id = manager.submit({ prompt: 'x' })
    manager.cancel(id)
    expect((await manager.wait(id)).status).toBe('cancelled')
  })

  it('rejects with signal.reason when aborted before the call', async () => {
    const { manager } = createHarness()
    const id = manager.submit({ prompt: 'x' })
    const reason = new Error('before')
    await expect(manager.wait(id, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
  })

  it('rejects with signal.reason when aborted during the wait, without affecting the task', async () => {
    const { manager, runner } = createHarness()
    manager.start()
    const id = manager.submit({ prompt: 'x' })
    const controller = new AbortController()
    const waiting = manager.wait(id, { signal: controller.signal })
    const reason = new Error('during')
    controller.abort(reason)
    await expect(waiting).rejects.toBe(reason)
    ;(await runner.nextCall()).resolve('ok')
    expect((await manager.wait(id)).status).toBe('done')
  })
})

describe('events, listeners and logs', () => {
  it('emits task:submit, task:start and task:end in order with snapshots', async () => {
    const { manager, runner } = createHarness()
    const seen: string[] = []
    for (const event of ['task:submit', 'task:start', 'task:end'] as const) {
      manager.on(event, (task: TaskSnapshot) => seen.push(`${event} ${task.id} ${task.status}`))
    }
    manager.start()
    const id = manager.submit({ prompt: 'x' })
    ;(await runner.nextCall()).resolve('ok')
    await manager.wait(id)
    expect(seen).toEqual([`task:submit ${id} pending`, `task:start ${id} running`, `task:end ${id} done`])
  })

  it('lets a listener unsubscribe itself while an event is being emitted, and rejects unknown events', async () => {
    const { manager, runner } = createHarness()
    const seen: string[] = []
    const unsubscribe = manager.on('task:end', (task) => {
      seen.push(`first ${task.id}`)
      unsubscribe()
    })
    manager.on('task:end', (task) => seen.push(`second ${task.id}`))
    manager.start()
    const one = manager.submit({ prompt: 'one' })
    const two = manager.submit({ prompt: 'two' })
    ;(await runner.nextCall()).resolve('1')
    ;(await runner.nextCall()).resolve('2')
    await Promise.all([manager.wait(one), manager.wait(two)])
    expect(seen).toEqual([`first ${one}`, `second ${one}`, `second ${two}`])
    expect(codeOf(() => manager.on('task:finish' as 'task:end', () => {}))).toBe('BACKGROUND_INVALID_INPUT')
  })

  it('a throwing listener or logger does not break the manager', async () => {
    const logger = {
      debug: () => {
        throw new Error('logger broke')
      },
      info: () => {
        throw new Error('logger broke')
      },
      warn: () => {
        throw new Error('logger broke')
      },
      error: () => {
        throw new Error('logger broke')
      },
    }
    const { manager, runner } = createHarness({ logger })
    const unsubscribe = manager.on('task:end', () => {
      throw new Error('listener broke')
    })
    manager.start()
    const id = manager.submit({ prompt: 'x' })
    ;(await runner.nextCall()).resolve('ok')
    expect((await manager.wait(id)).status).toBe('done')
    unsubscribe()
  })

  it('never writes prompts, results or error texts to the logs', async () => {
    const canary = 'sk-canary-4f9e2b'
    const logger = recordingLogger()
    const { manager, runner, clock } = createHarness({ logger, taskTimeoutMs: 1000 })
    manager.start()
    const ok = manager.submit({ prompt: `use key ${canary}`, originChannel: 'c' })
    const bad = manager.submit({ prompt: `also ${canary}` })
    manager.submit({ prompt: `slow ${canary}` })
    ;(await runner.nextCall()).resolve(`result with ${canary}`)
    ;(await runner.nextCall()).reject(new Error(`failed with ${canary}`))
    await Promise.all([manager.wait(ok), manager.wait(bad)])
    clock.advance(1000)
    await manager.stop()
    expect(logger.entries.length).toBeGreaterThan(5)
    expect(JSON.stringify(logger.entries)).not.toContain(canary)
  })
})

describe('options', () => {
  it.each([
    ['maxConcurrentTasks', 0],
    ['maxConcurrentTasks', 1.5],
    ['maxQueuedTasks', -1],
    ['maxFinishedTasks', Number.NaN],
    ['taskTimeoutMs', 0],
    ['maxResultLength', 0],
    ['notifyTimeoutMs', 0],
  ])('rejects %s = %s with BACKGROUND_INVALID_INPUT', (field, value) => {
    const error = errorOf(() => createHarness({ [field]: value }))
    expect(error.code).toBe('BACKGROUND_INVALID_INPUT')
    expect(error.data).toMatchObject({ field })
  })

  it('requires a runner and a notifier', () => {
    const notifier = new RecordingChannelSender()
    const runner = new RecordingAgentRunner()
    expect(
      codeOf(
        () =>
          new BackgroundManager({ notifier } as unknown as ConstructorParameters<
            typeof BackgroundManager
          >[0]),
      ),
    ).toBe('BACKGROUND_INVALID_INPUT')
    expect(
      codeOf(
        () =>
          new BackgroundManager({ runner } as unknown as ConstructorParameters<typeof BackgroundManager>[0]),
      ),
    ).toBe('BACKGROUND_INVALID_INPUT')
  })
})

describe('deprecated option names', () => {
  it('still honours runner and notifier (aliases of agentRunner and channelSender)', async () => {
    const runner = new RecordingAgentRunner({ handler: () => ({ text: 'answered' }) })
    const notifier = new RecordingChannelSender()
    await using manager = new BackgroundManager({ runner, notifier })
    manager.start()
    const id = manager.submit({ prompt: 'through the old names', originChannel: 'telegram:1' })
    expect((await manager.wait(id)).status).toBe('done')
    await manager.whenIdle()
    expect(runner.calls.map((run) => run.request.sessionKey)).toEqual([`bg:${id}`])
    expect(notifier.notices.map((notice) => notice.target)).toEqual(['telegram:1', 'telegram:1'])
  })

  it('prefers agentRunner and channelSender when both names are given', async () => {
    const runner = new RecordingAgentRunner({ handler: () => ({ text: 'answered' }) })
    const unused = new RecordingAgentRunner()
    const notifier = new RecordingChannelSender()
    const unusedNotifier = new RecordingChannelSender()
    await using manager = new BackgroundManager({
      agentRunner: runner,
      runner: unused,
      channelSender: notifier,
      notifier: unusedNotifier,
    })
    manager.start()
    const id = manager.submit({ prompt: 'both names', originChannel: 'telegram:1' })
    await manager.wait(id)
    await manager.whenIdle()
    expect(unused.calls).toEqual([])
    expect(unusedNotifier.notices).toEqual([])
    expect(notifier.notices).toHaveLength(2)
  })
})

describe('whenIdle()', () => {
  it('resolves once every submitted task has ended, including tasks cancelled while pending', async () => {
    const runner = new RecordingAgentRunner({ handler: async () => ({ text: 'ok' }) })
    const manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
      maxConcurrentTasks: 2,
    })
    manager.start()
    const ids = Array.from({ length: 10 }, (_, index) => manager.submit({ prompt: `task ${index}` }))
    manager.cancel(ids[9] as string)
    await manager.whenIdle()
    expect(manager.list({ status: 'done' })).toHaveLength(9)
    expect(manager.list({ status: 'cancelled' })).toHaveLength(1)
    expect(manager.list({ status: 'pending' })).toHaveLength(0)
    await manager.whenIdle() // already idle: resolves at once
    await manager.stop()
  })

  it('waits for running tasks and rethrows the abort reason', async () => {
    const runner = new RecordingAgentRunner()
    const manager = new BackgroundManager({
      agentRunner: runner,
      channelSender: new RecordingChannelSender(),
    })
    manager.start()
    manager.submit({ prompt: 'slow' })
    const controller = new AbortController()
    const reason = new Error('enough')
    const waiting = manager.whenIdle({ signal: controller.signal })
    controller.abort(reason)
    await expect(waiting).rejects.toBe(reason)
    let idle = false
    const later = manager.whenIdle().then(() => {
      idle = true
    })
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(idle).toBe(false)
    runner.calls[0]?.resolve('done')
    await later
    expect(idle).toBe(true)
    await manager.stop()
  })
})
