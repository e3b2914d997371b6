/**
 * A run that changes its job's outcome (its first, a failure, a recovery) is finalised with that
 * outcome in one store call where the store can (`completeRunWithOutcome`: one statement on
 * PostgreSQL); a success after a success writes the run row only. A store without the capability
 * gets the two calls, with the same result on the job.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './__fixtures__/database.js'
import type { CompletionWithOutcome, RunCompletion, RunOutcome, StoreCallOptions } from './ports.js'
import { CronService } from './service.js'
import { SqliteCronStore } from './sqlite/sqlite-cron-store.js'
import { FakeClock } from './testing/fake-clock.js'
import { RecordingAgentRunner } from './testing/recording-runners.js'

const HOUR = 3_600_000
const T0 = Date.parse('2026-01-01T00:00:00Z')

/** The real SQLite store, counting the calls that finalise runs. */
class CountingStore extends SqliteCronStore {
  readonly calls: string[] = []

  /** `capable: false`: without the optional capability, as a host's store that has only the required methods. */
  constructor(db: TestDatabase['db'], capable: boolean) {
    super(db)
    if (!capable) (this as { completeRunWithOutcome?: unknown }).completeRunWithOutcome = undefined
  }

  override async completeRun(id: string, completion: RunCompletion, options?: StoreCallOptions) {
    this.calls.push('completeRun')
    return super.completeRun(id, completion, options)
  }

  override async completeRunWithOutcome(
    id: string,
    completion: RunCompletion,
    outcome: RunOutcome,
    options?: StoreCallOptions,
  ): Promise<CompletionWithOutcome> {
    this.calls.push('completeRunWithOutcome')
    return super.completeRunWithOutcome(id, completion, outcome, options)
  }

  override async recordOutcome(jobId: string, status: RunOutcome['status'], failed: boolean) {
    this.calls.push('recordOutcome')
    return super.recordOutcome(jobId, status, failed)
  }
}

let database: TestDatabase | undefined
let service: CronService | undefined

afterEach(async () => {
  await service?.stop()
  await database?.cleanup()
  service = undefined
  database = undefined
})

/** Runs a job four times: ok, failed, ok (recovery), ok (steady); returns each run's store calls. */
async function fourRuns(store: CountingStore, clock: FakeClock) {
  const answers = ['ok', new Error('model down'), 'ok', 'ok']
  const agent = new RecordingAgentRunner((_request, index) => {
    const answer = answers[index]
    if (answer instanceof Error) throw answer
    return answer ?? 'ok'
  })
  service = new CronService({ store, clock, agentRunner: agent, defaultTimezone: 'UTC' })
  await service.start()
  const { job } = await service.add({
    name: 'outcomes',
    scheduleType: 'cron',
    schedule: '0 * * * *',
    prompt: 'x',
  })
  const perRun: string[][] = []
  const failures: number[] = []
  for (let run = 1; run <= 4; run++) {
    store.calls.length = 0
    await clock.advance(HOUR)
    await expect
      .poll(async () => (await store.listRuns({ limit: 10 })).filter((r) => r.status !== 'running').length)
      .toBe(run)
    perRun.push([...store.calls])
    failures.push((await store.getJob(job.id))?.consecutiveFailures ?? -1)
  }
  return { perRun, failures, job: await store.getJob(job.id) }
}

describe('recording a run and its outcome', () => {
  it('makes one call for a run that changes the outcome and writes no outcome for a steady success', async () => {
    database = await createTestDatabase()
    const { perRun, failures, job } = await fourRuns(new CountingStore(database.db, true), new FakeClock(T0))
    expect(perRun).toEqual([
      ['completeRunWithOutcome'],
      ['completeRunWithOutcome'],
      ['completeRunWithOutcome'],
      ['completeRun'],
    ])
    expect(failures).toEqual([0, 1, 0, 0])
    expect(job).toMatchObject({ lastStatus: 'completed', consecutiveFailures: 0 })
  })

  it('gives a store without the capability the two calls, with the same outcome on the job', async () => {
    database = await createTestDatabase()
    const { perRun, failures, job } = await fourRuns(new CountingStore(database.db, false), new FakeClock(T0))
    expect(perRun).toEqual([
      ['completeRun', 'recordOutcome'],
      ['completeRun', 'recordOutcome'],
      ['completeRun', 'recordOutcome'],
      ['completeRun'],
    ])
    expect(failures).toEqual([0, 1, 0, 0])
    expect(job).toMatchObject({ lastStatus: 'completed', consecutiveFailures: 0 })
  })
})
