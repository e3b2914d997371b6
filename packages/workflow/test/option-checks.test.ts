import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type Clock,
  parseWorkflow,
  type ShellRunner,
  WorkflowDirectory,
  WorkflowEngine,
  type WorkflowEngineOptions,
  WorkflowError,
} from '../src/index.js'
import { migrateWorkflow, SqliteWorkflowStore, type WorkflowDatabase } from '../src/sqlite/index.js'
import { MemoryWorkflowStore } from '../src/testing/index.js'
import { createTestDatabase, type TestDatabase } from './__fixtures__/database.js'
import { ManualClock } from './__fixtures__/manual-clock.js'

const MAX_TIMER_MS = 2_147_483_647
const THIRTY_DAYS_MS = 30 * 86_400_000

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function database(): Promise<TestDatabase> {
  const opened = await createTestDatabase()
  cleanups.push(() => opened.cleanup())
  return opened
}

/** The WorkflowError `action` throws (synchronously or by rejecting); fails the test for anything else. */
async function caught(action: () => unknown): Promise<WorkflowError> {
  let error: unknown
  try {
    await action()
  } catch (thrown) {
    error = thrown
  }
  expect(WorkflowError.is(error), `not a WorkflowError: ${String(error)}`).toBe(true)
  return error as WorkflowError
}

/** A ShellRunner whose commands run until aborted. */
const blockingShell: ShellRunner = {
  run: (_request, { signal }) =>
    new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
}

describe('engine options that feed timers', () => {
  const store = new MemoryWorkflowStore()

  it.each([
    'runTimeoutMs',
    'defaultStepTimeoutMs',
    'leaseMs',
    'ownerLeaseMs',
    'deliveryTimeoutMs',
    'pollIntervalMs',
  ] as const)(
    'refuses %s above 2^31-1 ms with WORKFLOW_INVALID_OPTION naming it and the limit',
    async (option) => {
      const error = await caught(() => new WorkflowEngine({ store, [option]: THIRTY_DAYS_MS }))
      expect(error.code).toBe('WORKFLOW_INVALID_OPTION')
      expect(error.message).toContain(option)
      expect(error.message).toContain(String(MAX_TIMER_MS))
      expect(error.data).toMatchObject({ option, max: MAX_TIMER_MS })
      expect(() => new WorkflowEngine({ store, [option]: MAX_TIMER_MS })).not.toThrow()
    },
  )

  it('refuses limits.maxTimeoutMs above 2^31-1 ms, so no step timeout from YAML can overflow a timer', async () => {
    const error = await caught(() => new WorkflowEngine({ store, limits: { maxTimeoutMs: THIRTY_DAYS_MS } }))
    expect(error.code).toBe('WORKFLOW_INVALID_OPTION')
    expect(error.data).toMatchObject({ option: 'limits.maxTimeoutMs', max: MAX_TIMER_MS })
    const parsed = parseWorkflow('name: a\nsteps:\n  - { id: x, run: "true", timeout: 30d }\n', {
      limits: { maxTimeoutMs: MAX_TIMER_MS },
    })
    expect(parsed.ok).toBe(false)
  })

  it('waitForRun with a timeout past 24.8 days waits in chunks no longer than a timer holds', async () => {
    const { db } = await database()
    const requested: number[] = []
    const manual = new ManualClock(Date.parse('2026-01-01T00:00:00Z'))
    const clock: Clock = {
      now: () => manual.now(),
      setTimeout: (callback, ms) => {
        requested.push(ms)
        return manual.setTimeout(callback, ms)
      },
      clearTimeout: (handle) => manual.clearTimeout(handle),
    }
    const engine = new WorkflowEngine({
      store: new SqliteWorkflowStore(db),
      shellRunner: blockingShell,
      clock,
    })
    cleanups.push(() => engine.stop())
    await engine.start()
    const { runId } = await engine.startRun('name: long\nsteps:\n  - { id: a, run: "wait" }\n')
    const waiting = engine.waitForRun(runId, { timeoutMs: THIRTY_DAYS_MS })
    await new Promise((resolve) => setImmediate(resolve))
    expect(requested.length).toBeGreaterThan(0)
    expect(Math.max(...requested)).toBeLessThanOrEqual(MAX_TIMER_MS)
    await engine.cancelRun(runId)
    expect((await waiting).status).toBe('cancelled')
  })
})

describe('invalid options are WorkflowErrors that name the option', () => {
  const store = new MemoryWorkflowStore()

  it.each<[string, Partial<WorkflowEngineOptions>, string]>([
    ['maxConcurrentRuns', { maxConcurrentRuns: 0 }, 'maxConcurrentRuns must be a whole number, 1 or more'],
    ['defaultMaxParallel', { defaultMaxParallel: Number.NaN }, 'defaultMaxParallel must be a whole number'],
    ['limits', { limits: 'x' as never }, 'limits must be an object of caps'],
    [
      'limits.maxStep',
      { limits: { maxStep: 5 } as never },
      'unknown option "maxStep" in limits (did you mean "maxSteps"?); accepted: maxSourceBytes, maxSteps',
    ],
    ['retention.maxRuns', { retention: { maxAgeMs: 1, maxRuns: -1 } }, 'retention.maxRuns must be'],
    [
      'retention.maxRuns',
      { retention: { maxAgeMs: 1, maxRuns: 0 } },
      'retention.maxRuns must be a whole number, 1 or more',
    ],
    [
      'retention.maxAgeMs',
      { retention: { maxAgeMs: 0, maxRuns: 5 } },
      'retention.maxAgeMs must be a whole number of milliseconds, 1 or more',
    ],
  ])('%s', async (option, options, message) => {
    const error = await caught(() => new WorkflowEngine({ store, ...options }))
    expect(error.code).toBe('WORKFLOW_INVALID_OPTION')
    expect(error.data?.option).toBe(option)
    expect(error.message).toContain(message)
  })

  it('startRun(null) is WORKFLOW_INVALID, a long creator and a NaN wait timeout WORKFLOW_INVALID_OPTION', async () => {
    const { db } = await database()
    const engine = new WorkflowEngine({ store: new SqliteWorkflowStore(db), shellRunner: blockingShell })
    cleanups.push(() => engine.stop())
    await engine.start()
    const invalid = await caught(() => engine.startRun(null as never))
    expect(invalid.code).toBe('WORKFLOW_INVALID')
    expect(invalid.issues?.[0]?.message).toContain('must be YAML text')
    const creator = await caught(() =>
      engine.startRun('name: a\nsteps:\n  - { id: x, run: "true" }\n', { creator: 'x'.repeat(300) }),
    )
    expect(creator).toMatchObject({ code: 'WORKFLOW_INVALID_OPTION', data: { option: 'creator' } })
    const wait = await caught(() => engine.waitForRun('no-such-run', { timeoutMs: Number.NaN }))
    expect(wait).toMatchObject({ code: 'WORKFLOW_INVALID_OPTION', data: { option: 'timeoutMs' } })
  })

  it('startRun refuses a deliverTo target that YAML deliver_to refuses, and stores nothing', async () => {
    const { db } = await database()
    const engine = new WorkflowEngine({ store: new SqliteWorkflowStore(db), shellRunner: blockingShell })
    cleanups.push(() => engine.stop())
    await engine.start()
    const yaml = 'name: a\nsteps:\n  - { id: x, run: "true" }\n'
    expect(parseWorkflow(`deliver_to: ["bad target!"]\n${yaml}`).ok).toBe(false)
    const error = await caught(() => engine.startRun(yaml, { deliverTo: ['telegram:1', 'bad target!'] }))
    expect(error.code).toBe('WORKFLOW_INVALID_OPTION')
    expect(error.data).toMatchObject({ option: 'deliverTo', index: 1 })
    expect(error.message).toContain('deliverTo[1] must be "channel" or "channel:id"')
    expect(await engine.listRuns()).toEqual([])
  })
})

describe('validation gaps in the YAML', () => {
  const withSchedule = (schedule: string) =>
    `name: a\nschedule: ${JSON.stringify(schedule)}\nsteps:\n  - { id: x, run: "true" }\n`

  it('schedule must be a cron schedule @lango/cron takes', async () => {
    for (const schedule of ['61 * * * *', 'whenever', '0 24 * * *', '* * * *', '@sometimes', '@every soon']) {
      const parsed = parseWorkflow(withSchedule(schedule))
      expect(parsed.ok, schedule).toBe(false)
      if (!parsed.ok) expect(parsed.issues[0]).toMatchObject({ path: 'schedule', code: 'invalid_value' })
    }
    for (const schedule of [
      '0 9 * * 1-5',
      '*/5 * * * *',
      '@daily',
      '@every 1h',
      '30 */5 * * * *',
      '0 0 L * *',
      '0 0 * * MON-FRI',
      '0 0 1 jan,jul *',
      '0 0 ? * 5#2',
    ])
      expect(parseWorkflow(withSchedule(schedule)).ok, schedule).toBe(true)
    const base = await mkdtemp(join(tmpdir(), 'lango-workflow-options-'))
    cleanups.push(() => rm(base, { recursive: true, force: true }))
    const directory = await WorkflowDirectory.open(join(base, 'workflows'))
    const error = await caught(() => directory.save('bad-schedule', withSchedule('61 * * * *')))
    expect(error.code).toBe('WORKFLOW_INVALID')
  })

  it('a schedule cron-parser refuses says which field and why, without quoting the schedule', () => {
    const message = (schedule: string): string => {
      const parsed = parseWorkflow(withSchedule(schedule))
      if (parsed.ok) throw new Error(`${schedule} was taken`)
      return parsed.issues[0]?.message ?? ''
    }
    expect(message('0 9 1,1 * *')).toContain('names the same value twice in its day-of-month field')
    expect(message('0 9 * * 0,7')).toContain('names the same value twice in its day-of-week field')
    expect(message('0 9 * * 1#2,1#4')).toContain('uses # in a day-of-week field with other items')
    expect(message('0 9 * apr-3 *')).toContain('has an invalid month field')
    expect(message('H * * * *')).toContain('uses H (hashed values)')
    for (const schedule of ['0 9 1,1 * *', '0 9 * * 1#2,1#4', 'H * * * *'])
      expect(message(schedule)).not.toContain(schedule)
  })

  it('near-miss templates {{a .result}} and an unclosed {{a.result are errors', () => {
    for (const template of [
      '{{a .result}}',
      '{{ a . result }}',
      '{{a.result',
      '{{a.result}',
      '{{a.result and {{a.result}}',
    ]) {
      const parsed = parseWorkflow(
        `name: t\nsteps:\n  - { id: a, run: "true" }\n  - { id: b, depends_on: [a], prompt: ${JSON.stringify(`x ${template} y`)} }\n`,
      )
      expect(parsed.ok, template).toBe(false)
      if (!parsed.ok)
        expect(
          parsed.issues.map((issue) => issue.code),
          template,
        ).toEqual(['template_invalid'])
    }
    for (const template of ['{{a.result}}', '{{ .State }}', '{{secret:key}}', '{{ a.result }}', '{{'])
      expect(
        parseWorkflow(
          `name: t\nsteps:\n  - { id: a, run: "true" }\n  - { id: b, depends_on: [a], prompt: ${JSON.stringify(`x ${template} y`)} }\n`,
        ).ok,
        template,
      ).toBe(true)
  })
})

describe('a store on a database whose migrations were not run', () => {
  it('rejects with WORKFLOW_STORE_NOT_MIGRATED naming migrateWorkflow, and works once migrated', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'lango-workflow-unmigrated-'))
    const db = new Kysely<WorkflowDatabase>({
      dialect: new SqliteDialect({ database: new Database(join(directory, 'test.db')) }),
    })
    cleanups.push(async () => {
      await db.destroy()
      await rm(directory, { recursive: true, force: true })
    })
    const store = new SqliteWorkflowStore(db)
    const engine = new WorkflowEngine({ store, shellRunner: blockingShell })
    cleanups.push(() => engine.stop())
    const error = await caught(() => engine.start())
    expect(error.code).toBe('WORKFLOW_STORE_NOT_MIGRATED')
    expect(error.message).toContain('migrateWorkflow(db)')
    expect(await caught(() => store.getRun('x'))).toMatchObject({ code: 'WORKFLOW_STORE_NOT_MIGRATED' })
    await migrateWorkflow(db)
    await engine.start()
    const { runId } = await engine.startRun('name: a\nsteps:\n  - { id: x, run: "true" }\n')
    expect((await store.getRun(runId))?.status).toBe('running')
  })
})
