import { waitFor } from '@lango/vitest-config/wait-for'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { WorkflowError } from '../src/errors.js'
import type { LogFields, Logger, WorkflowStore } from '../src/ports.js'
import { SqliteWorkflowStore } from '../src/sqlite/index.js'
import { MemoryWorkflowStore } from '../src/testing/memory-workflow-store.js'
import type { AgentResponder } from '../src/testing/recording.js'
import { RecordingAgentRunner } from '../src/testing/recording.js'
import { WorkflowEngine } from '../src/workflow-engine.js'
import { ControlledStore } from './__fixtures__/controlled-store.js'
import { createTestDatabase, type TestDatabase } from './__fixtures__/database.js'
import { nextEvent } from './__fixtures__/harness.js'
import { ManualClock } from './__fixtures__/manual-clock.js'

const T0 = Date.UTC(2030, 0, 1)
const LEASE_MS = 3_000
const HEARTBEAT_MS = LEASE_MS / 3

const CHAIN = `name: chain
steps:
  - { id: a, prompt: "first" }
  - { id: b, prompt: "second", depends_on: [a] }
  - { id: c, prompt: "third", depends_on: [b] }
`

/** A logger that keeps every line, to check what an operator would read. */
class RecordingLogger implements Logger {
  readonly lines: { level: string; message: string; fields?: LogFields }[] = []
  debug(message: string, fields?: LogFields): void {
    this.lines.push({ level: 'debug', message, ...(fields === undefined ? {} : { fields }) })
  }
  info(message: string, fields?: LogFields): void {
    this.lines.push({ level: 'info', message, ...(fields === undefined ? {} : { fields }) })
  }
  warn(message: string, fields?: LogFields): void {
    this.lines.push({ level: 'warn', message, ...(fields === undefined ? {} : { fields }) })
  }
  error(message: string, fields?: LogFields): void {
    this.lines.push({ level: 'error', message, ...(fields === undefined ? {} : { fields }) })
  }
}

/** A promise settled from outside. */
function deferred<T>(): { promise: Promise<T>; resolve(value: T): void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((settle) => {
    resolve = settle
  })
  return { promise, resolve }
}

/** Never answers; the engine abandons it when the step's signal aborts. */
const hang: AgentResponder = () => new Promise<string>(() => {})

let database: TestDatabase | undefined
const engines: WorkflowEngine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop().catch(() => {})
  await database?.cleanup()
  database = undefined
})

/** A started engine on its own clock, with the lease timing of these tests. */
async function engineOn(
  store: WorkflowStore,
  ownerId: string,
  clock: ManualClock,
  agentRunner: RecordingAgentRunner,
  logger: Logger = new RecordingLogger(),
): Promise<WorkflowEngine> {
  const engine = new WorkflowEngine({ store, ownerId, clock, agentRunner, logger, leaseMs: LEASE_MS })
  engines.push(engine)
  await engine.start()
  return engine
}

describe('WorkflowEngine: a heartbeat that keeps failing', () => {
  it('is logged once, then once a minute with a count, and its end once (not every heartbeat)', async () => {
    database = await createTestDatabase()
    const clock = new ManualClock(T0)
    const logger = new RecordingLogger()
    const engine = await engineOn(
      new SqliteWorkflowStore(database.db),
      'engine-a',
      clock,
      new RecordingAgentRunner(),
      logger,
    )
    /** Heartbeats a second apart until `done` (the clock is told a second once the last settled). */
    const beatUntil = async (done: () => boolean) => {
      for (let beat = 0; beat < 2_000 && !done(); beat++) {
        clock.advance(HEARTBEAT_MS)
        await new Promise((resolve) => setImmediate(resolve))
      }
      expect(done()).toBe(true)
    }
    // The database refuses the owner's heartbeat row, as a full disk or a locked table would.
    await sql`create trigger refuse_heartbeat before update on workflow_owners begin select raise(fail, 'database or disk is full'); end`.execute(
      database.db,
    )
    const failing = () => logger.lines.filter((line) => line.message.startsWith('workflow heartbeat'))
    await beatUntil(() => failing().length === 1)
    const since = clock.now().getTime()
    // Minutes of heartbeats, one a second: a line a minute, not one a heartbeat.
    await beatUntil(() => failing().length === 3)
    expect(clock.now().getTime() - since).toBeGreaterThanOrEqual(120_000)
    expect(failing().map((line) => line.message)).toEqual([
      'workflow heartbeat failed',
      'workflow heartbeat still failing',
      'workflow heartbeat still failing',
    ])
    const again = failing()[1]?.fields as { failures: number; sinceMs: number }
    expect(again.sinceMs).toBeGreaterThanOrEqual(60_000)
    expect(again.failures).toBeGreaterThan(1)
    await sql`drop trigger refuse_heartbeat`.execute(database.db)
    await beatUntil(() => failing().length === 4)
    expect(failing()[3]).toMatchObject({ level: 'info', message: 'workflow heartbeat written again' })
    for (let beat = 0; beat < 5; beat++) {
      clock.advance(HEARTBEAT_MS)
      await new Promise((resolve) => setImmediate(resolve))
    }
    expect(failing()).toHaveLength(4)
    await engine.stop()
  })
})

describe('WorkflowEngine: leases on one database', () => {
  it('a stalled engine loses its run to another, which finishes it without re-running completed steps; the stalled engine’s late write is refused', async () => {
    database = await createTestDatabase()
    // Two engines on one SQLite file (sharing the Kysely, as in one host process), each with its own clock.
    const clockA = new ManualClock(T0)
    const clockB = new ManualClock(T0)
    const lateAnswer = deferred<string>()
    const runnerA = new RecordingAgentRunner((request) =>
      request.stepId === 'b' ? lateAnswer.promise : `${request.stepId} by A`,
    )
    const runnerB = new RecordingAgentRunner((request) => `${request.stepId} by B`)
    const engineA = await engineOn(new SqliteWorkflowStore(database.db), 'engine-a', clockA, runnerA)
    const engineB = await engineOn(new SqliteWorkflowStore(database.db), 'engine-b', clockB, runnerB)
    const store = new SqliteWorkflowStore(database.db)

    const bStarted = nextEvent(engineA, 'step:start', (event) => event.stepId === 'b')
    const { runId } = await engineA.startRun(CHAIN)
    await bStarted
    expect(await store.getRun(runId)).toMatchObject({
      owner: 'engine-a',
      leaseVersion: 1,
      leaseExpiresAt: T0 + LEASE_MS,
    })

    // A stalls in step b: its clock stands still, so its heartbeat never renews the lease. B's
    // clock moves past the lease; B's heartbeat takes the run over and finishes it.
    const resumedOnB = nextEvent(engineB, 'run:start', (event) => event.resumed)
    const endedOnB = nextEvent(engineB, 'run:end')
    clockB.advance(LEASE_MS + 1)
    expect(await resumedOnB).toEqual({ runId, workflowName: 'chain', resumed: true })
    expect(await endedOnB).toMatchObject({ runId, status: 'completed' })
    expect(runnerB.calls.map((call) => call.stepId)).toEqual(['b', 'c'])
    expect(await store.getRun(runId)).toMatchObject({
      status: 'completed',
      owner: 'engine-b',
      leaseVersion: 2,
      completedSteps: 3,
    })

    // A wakes up: its step's answer arrives and its write is refused (version 1 is stale, the run
    // ended). It stops there: c does not run a second time.
    const refused = nextEvent(engineA, 'run:error', (event) => event.runId === runId)
    lateAnswer.resolve('b by A, late')
    const { error } = await refused
    expect(WorkflowError.is(error) && error.code).toBe('WORKFLOW_OWNERSHIP_LOST')
    clockA.advance(LEASE_MS)
    await engineA.stop()

    const steps = await store.listSteps(runId)
    expect(steps.map((step) => [step.stepId, step.status, step.result])).toEqual([
      ['a', 'completed', 'a by A'],
      ['b', 'completed', 'b by B'],
      ['c', 'completed', 'c by B'],
    ])
    expect(runnerA.calls.map((call) => call.stepId)).toEqual(['a', 'b'])
    expect(await store.getRun(runId)).toMatchObject({
      status: 'completed',
      owner: 'engine-b',
      leaseVersion: 2,
    })
  })

  it('a renewal that finds the run lost aborts the local step at once and leaves the run to its new owner', async () => {
    database = await createTestDatabase()
    const clock = new ManualClock(T0)
    const signals: AbortSignal[] = []
    const runner = new RecordingAgentRunner((_request, { signal }) => {
      signals.push(signal)
      return hang(_request, { signal })
    })
    const logger = new RecordingLogger()
    const store = new SqliteWorkflowStore(database.db)
    const engine = await engineOn(store, 'engine-a', clock, runner, logger)
    const started = nextEvent(engine, 'step:start')
    const { runId } = await engine.startRun('name: slow\nsteps:\n  - { id: slow, prompt: "wait" }\n')
    await started

    // Another engine, whose clock says the lease is over, takes the run (version 2).
    expect(
      await store.claimRuns('thief', {
        now: T0 + LEASE_MS + 1,
        leaseExpiresAt: T0 + 10 * LEASE_MS,
        staleBefore: 0,
      }),
    ).toEqual([{ runId, version: 2 }])
    expect(signals[0]?.aborted).toBe(false)

    const lost = nextEvent(engine, 'run:error', (event) => event.runId === runId)
    clock.advance(HEARTBEAT_MS)
    const { error } = await lost
    expect(signals[0]?.aborted).toBe(true)
    const reason: unknown = signals[0]?.reason
    expect(WorkflowError.is(reason) && reason.code).toBe('WORKFLOW_OWNERSHIP_LOST')
    expect(WorkflowError.is(error) && error.data).toEqual({ runId, leaseVersion: 1 })
    expect(logger.lines).toContainEqual({
      level: 'warn',
      message: 'workflow lease lost',
      fields: { runId, leaseVersion: 1 },
    })
    await engine.stop()
    // The engine wrote nothing more: the run and its reset step are as the new owner took them.
    expect(await store.getRun(runId)).toMatchObject({ status: 'running', owner: 'thief', leaseVersion: 2 })
    expect((await store.listSteps(runId))[0]).toMatchObject({ status: 'pending', result: null })
  })

  it('A loses a run to B, B dies, A takes it back: A’s write still in flight from its first lease is refused', async () => {
    database = await createTestDatabase()
    const clockA = new ManualClock(T0)
    const clockB = new ManualClock(T0)
    let bAnswersOnA = 0
    const runnerA = new RecordingAgentRunner((request) => {
      if (request.stepId !== 'b') return `${request.stepId} by A`
      bAnswersOnA += 1
      return bAnswersOnA === 1 ? 'b by A, first lease' : 'b by A, third lease'
    })
    const runnerB = new RecordingAgentRunner(hang)
    const storeA = new ControlledStore(new SqliteWorkflowStore(database.db))
    const store = new SqliteWorkflowStore(database.db)
    const engineA = await engineOn(storeA, 'engine-a', clockA, runnerA)
    const engineB = await engineOn(new SqliteWorkflowStore(database.db), 'engine-b', clockB, runnerB)

    // A's write completing b leaves A, then hangs in the network.
    const staleWrite = storeA.hold(
      'updateStep',
      ([, stepId, patch]) => stepId === 'b' && patch.status === 'completed',
    )
    const { runId } = await engineA.startRun(CHAIN)
    await staleWrite.reached

    // A stalls; B takes the run over (version 2) and starts b, then dies (its clock stops).
    const bOnB = nextEvent(engineB, 'step:start', (event) => event.stepId === 'b')
    clockB.advance(LEASE_MS + 1)
    await bOnB

    // A wakes after B's lease ran out too: it stops its first execution and takes the run back.
    const endedOnA = nextEvent(engineA, 'run:end')
    clockA.advance(2 * LEASE_MS + 2)
    await waitFor(
      async () => {
        const run = await store.getRun(runId)
        return run?.leaseVersion === 3 && run.owner === 'engine-a' ? run : undefined
      },
      { timeoutMs: 10_000, intervalMs: 5 },
    )
    // Only now does the write from A's first lease reach the database: refused, though A owns the run.
    staleWrite.release()
    expect(await staleWrite.result).toBe(false)
    expect((await store.listSteps(runId))[1]).toMatchObject({ stepId: 'b', status: 'pending', result: null })

    expect(await endedOnA).toMatchObject({ runId, status: 'completed' })
    const steps = await store.listSteps(runId)
    expect(steps.map((step) => [step.stepId, step.status, step.result])).toEqual([
      ['a', 'completed', 'a by A'],
      ['b', 'completed', 'b by A, third lease'],
      ['c', 'completed', 'c by A'],
    ])
    expect(runnerA.calls.map((call) => call.stepId)).toEqual(['a', 'b', 'b', 'c'])
    expect(runnerB.calls.map((call) => call.stepId)).toEqual(['b'])
    expect(await store.getRun(runId)).toMatchObject({
      status: 'completed',
      owner: 'engine-a',
      leaseVersion: 3,
    })
  })

  it('self-fences when the database stops answering: the step is aborted when the lease runs out, and the run resumes once it answers again', async () => {
    database = await createTestDatabase()
    const clock = new ManualClock(T0)
    const signals: AbortSignal[] = []
    const runner = new RecordingAgentRunner((request, options) => {
      signals.push(options.signal)
      return signals.length === 1 ? hang(request, options) : 'done at last'
    })
    const logger = new RecordingLogger()
    const store = new ControlledStore(new SqliteWorkflowStore(database.db))
    const engine = await engineOn(store, 'engine-a', clock, runner, logger)
    const started = nextEvent(engine, 'step:start')
    const { runId } = await engine.startRun('name: slow\nsteps:\n  - { id: slow, prompt: "wait" }\n')
    await started

    store.unreachable = true
    const failed = nextEvent(engine, 'run:error', (event) => event.runId === undefined)
    clock.advance(HEARTBEAT_MS)
    expect((await failed).error.message).toBe('database unreachable')
    // The lease (until T0 + LEASE_MS) still holds: the step goes on.
    expect(signals[0]?.aborted).toBe(false)

    const fenced = nextEvent(engine, 'run:error', (event) => event.runId === runId)
    clock.advance(LEASE_MS - HEARTBEAT_MS)
    const { error } = await fenced
    expect(WorkflowError.is(error) && error.code).toBe('WORKFLOW_OWNERSHIP_LOST')
    expect(signals[0]?.aborted).toBe(true)
    expect(logger.lines.map((line) => line.message)).toContain('workflow lease expired unrenewed')

    // Back: the next heartbeat takes the run over again (its lease expired) and finishes it.
    store.unreachable = false
    const sqlite = new SqliteWorkflowStore(database.db)
    expect(await sqlite.getRun(runId)).toMatchObject({
      status: 'running',
      owner: 'engine-a',
      leaseVersion: 1,
    })
    const ended = nextEvent(engine, 'run:end')
    clock.advance(HEARTBEAT_MS)
    expect(await ended).toMatchObject({ runId, status: 'completed' })
    expect(await sqlite.getRun(runId)).toMatchObject({ owner: 'engine-a', leaseVersion: 2 })
    expect((await sqlite.listSteps(runId))[0]).toMatchObject({ result: 'done at last', attempt: 2 })
  })

  it('renews the leases it holds on every heartbeat, so a long step is never taken over', async () => {
    database = await createTestDatabase()
    const clockA = new ManualClock(T0)
    const clockB = new ManualClock(T0)
    const answer = deferred<string>()
    const runner = new RecordingAgentRunner(() => answer.promise)
    const store = new SqliteWorkflowStore(database.db)
    const engineA = await engineOn(store, 'engine-a', clockA, runner)
    const engineB = await engineOn(
      new SqliteWorkflowStore(database.db),
      'engine-b',
      clockB,
      new RecordingAgentRunner(),
    )
    const started = nextEvent(engineA, 'step:start')
    const { runId } = await engineA.startRun('name: long\nsteps:\n  - { id: long, prompt: "wait" }\n')
    await started
    // Both clocks move together through three lease periods, a little at a time, letting each
    // heartbeat's store calls finish in between: B heartbeats (and tries to claim) all along.
    while (clockA.now().getTime() < T0 + 3 * LEASE_MS) {
      clockA.advance(100)
      clockB.advance(100)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    const renewed = await store.getRun(runId)
    expect(renewed).toMatchObject({ status: 'running', owner: 'engine-a', leaseVersion: 1 })
    expect(renewed?.leaseExpiresAt).toBeGreaterThan(T0 + 3 * LEASE_MS)
    const ended = nextEvent(engineA, 'run:end')
    answer.resolve('finally')
    expect(await ended).toMatchObject({ runId, status: 'completed' })
    expect(await store.getRun(runId)).toMatchObject({ owner: 'engine-a', leaseVersion: 1 })
    expect(engineB.ownerId).toBe('engine-b')
  })
})

describe('WorkflowEngine: the deprecated ownerLeaseMs option', () => {
  async function leaseOfFirstRun(options: {
    leaseMs?: number
    ownerLeaseMs?: number
  }): Promise<number | null> {
    database = await createTestDatabase()
    const store = new SqliteWorkflowStore(database.db)
    const engine = new WorkflowEngine({
      store,
      ownerId: 'engine-a',
      clock: new ManualClock(T0),
      agentRunner: new RecordingAgentRunner(hang),
      ...options,
    })
    engines.push(engine)
    await engine.start()
    const started = nextEvent(engine, 'step:start')
    const { runId } = await engine.startRun('name: one\nsteps:\n  - { id: one, prompt: "wait" }\n')
    await started
    return (await store.getRun(runId))?.leaseExpiresAt ?? null
  }

  it('is still honoured as the lease (an alias of leaseMs)', async () => {
    expect(await leaseOfFirstRun({ ownerLeaseMs: LEASE_MS })).toBe(T0 + LEASE_MS)
  })

  it('gives way to leaseMs when both are set', async () => {
    expect(await leaseOfFirstRun({ leaseMs: LEASE_MS, ownerLeaseMs: 2 * LEASE_MS })).toBe(T0 + LEASE_MS)
  })

  it('is checked under its own name', () => {
    expect(() => new WorkflowEngine({ store: new MemoryWorkflowStore(), ownerLeaseMs: 0 })).toThrow(
      'ownerLeaseMs must be a positive number',
    )
  })
})
