/**
 * `@lango/cron/testing/vitest`: the {@link CronStore} contract suite, for vitest (an optional peer
 * dependency). The fakes in `@lango/cron/testing` need no test runner.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CronError } from '../errors.js'
import type { CronJob } from '../model.js'
import type { CronStore, JobScheduleUpdate, NewCronRun } from '../ports.js'
import { createTestJob } from './test-job.js'

let sequence = 0

function newRun(job: CronJob, scheduledFor: number, overrides: Partial<NewCronRun> = {}): NewCronRun {
  sequence++
  return {
    id: `run-${sequence}`,
    jobId: job.id,
    jobName: job.name,
    trigger: 'schedule',
    status: 'running',
    scheduledFor,
    startedAt: scheduledFor,
    completedAt: null,
    skipReason: null,
    owner: 'owner-a',
    ...overrides,
  }
}

/** What a contract run needs: a fresh, empty store and how to dispose of it. */
export interface StoreFixture {
  readonly store: CronStore
  cleanup?(): Promise<void>
}

/**
 * The behaviour every {@link CronStore} adapter must show. Call it from each adapter's test file:
 * @example cronStoreContract('SqliteCronStore', async () => ({ store: new SqliteCronStore(db), cleanup }))
 */
export function cronStoreContract(name: string, makeStore: () => Promise<StoreFixture>): void {
  describe(`CronStore contract: ${name}`, () => {
    let fixture: StoreFixture
    let store: CronStore
    beforeEach(async () => {
      fixture = await makeStore()
      store = fixture.store
    })
    afterEach(async () => {
      await fixture.cleanup?.()
    })

    it('inserts, reads by id and name, and lists jobs ordered by name', async () => {
      const beta = createTestJob({ name: 'beta', deliverTo: ['telegram:1', 'slack'] })
      const alpha = createTestJob({
        name: 'alpha',
        enabled: false,
        kind: 'shell',
        prompt: null,
        command: 'echo hi',
      })
      await store.insertJob(beta)
      await store.insertJob(alpha)
      expect(await store.getJob(beta.id)).toEqual(beta)
      expect(await store.getJobByName('alpha')).toEqual(alpha)
      expect(await store.getJob('missing')).toBeUndefined()
      expect((await store.listJobs()).map((job) => job.name)).toEqual(['alpha', 'beta'])
      expect((await store.listJobs({ enabled: true })).map((job) => job.name)).toEqual(['beta'])
      expect((await store.listJobs({ ids: [alpha.id] })).map((job) => job.name)).toEqual(['alpha'])
      expect(await store.countJobs()).toBe(2)
    })

    it('lists jobs page by page after a name, and by creator', async () => {
      for (const name of ['delta', 'alpha', 'echo', 'charlie', 'bravo']) {
        await store.insertJob(
          createTestJob({ name, createdBy: name < 'c' ? 'telegram:1:7' : null, enabled: name !== 'charlie' }),
        )
      }
      const names = async (filter: Parameters<CronStore['listJobs']>[0]) =>
        (await store.listJobs(filter)).map((job) => job.name)
      expect(await names({ limit: 2 })).toEqual(['alpha', 'bravo'])
      expect(await names({ after: 'bravo', limit: 2 })).toEqual(['charlie', 'delta'])
      expect(await names({ after: 'delta', limit: 2 })).toEqual(['echo'])
      expect(await names({ after: 'echo', limit: 2 })).toEqual([])
      expect(await names({ after: 'alpha', enabled: true, limit: 2 })).toEqual(['bravo', 'delta'])
      expect(await names({ createdBy: 'telegram:1:7' })).toEqual(['alpha', 'bravo'])
      expect(await names({ createdBy: 'telegram:1:7', after: 'alpha' })).toEqual(['bravo'])
      const ids = (await store.listJobs()).map((job) => job.id)
      expect(await names({ ids, after: 'bravo', limit: 1 })).toEqual(['charlie'])
    })

    it('filters jobs (name text, kind, zone, last status, failing, last delivery failed) and counts the same', async () => {
      const specs = [
        { name: 'backup-db', kind: 'shell', timezone: 'UTC', lastStatus: 'failed', consecutiveFailures: 2 },
        { name: 'Backup_Web', kind: 'ai', timezone: 'Europe/Berlin', lastStatus: 'completed' },
        { name: 'news', kind: 'ai', timezone: 'UTC', lastStatus: null, enabled: false },
        { name: 'report', kind: 'shell', timezone: 'Europe/Berlin', lastStatus: 'completed' },
      ] as const
      const jobs = new Map<string, CronJob>()
      for (const spec of specs) {
        const job = createTestJob(spec)
        jobs.set(spec.name, job)
        await store.insertJob(job)
      }
      // report: an older failed delivery, then a delivered one; Backup_Web: delivered, then failed.
      for (const [name, at, delivery] of [
        ['report', 100_000, 'failed'],
        ['report', 200_000, 'delivered'],
        ['report', 300_000, 'none'],
        ['Backup_Web', 100_000, 'delivered'],
        ['Backup_Web', 200_000, 'failed'],
      ] as const) {
        const run = newRun(jobs.get(name) as CronJob, at)
        await store.insertRuns([run])
        await store.setDelivery(run.id, delivery, null)
      }
      const names = async (filter: Parameters<CronStore['listJobs']>[0]) =>
        (await store.listJobs(filter)).map((job) => job.name)
      expect(await names({ nameContains: 'backup' })).toEqual(['Backup_Web', 'backup-db'])
      expect(await names({ nameContains: 'p_w' })).toEqual(['Backup_Web'])
      expect(await names({ nameContains: '%' })).toEqual([])
      expect(await names({ kind: 'shell' })).toEqual(['backup-db', 'report'])
      expect(await names({ timezone: 'Europe/Berlin', kind: 'ai' })).toEqual(['Backup_Web'])
      expect(await names({ lastStatus: 'completed' })).toEqual(['Backup_Web', 'report'])
      expect(await names({ lastStatus: null })).toEqual(['news'])
      expect(await names({ failing: true })).toEqual(['backup-db'])
      expect(await names({ failing: false, enabled: true })).toEqual(['Backup_Web', 'report'])
      expect(await names({ lastDeliveryFailed: true })).toEqual(['Backup_Web'])
      expect(await names({ lastDeliveryFailed: false })).toEqual(['backup-db', 'news', 'report'])
      expect(await store.countJobs({ nameContains: 'BACKUP', lastDeliveryFailed: false })).toBe(1)
      expect(await store.countJobs({ enabled: true })).toBe(3)
    })

    it('filters jobs by schedule type and exact schedule (the jobs of one webhook hook), and counts the same', async () => {
      for (const [name, scheduleType, schedule, enabled] of [
        ['on-push', 'webhook', 'push', true],
        ['on-push-too', 'webhook', 'push', true],
        ['on-push-paused', 'webhook', 'push', false],
        ['on-pushed', 'webhook', 'pushed', true],
        ['on-PUSH', 'webhook', 'PUSH', true],
        ['cron-push', 'cron', 'push', true],
        ['nightly', 'cron', '0 3 * * *', true],
      ] as const) {
        await store.insertJob(
          createTestJob({
            name,
            scheduleType,
            schedule,
            enabled,
            nextRunAt: scheduleType === 'webhook' ? null : 5000,
          }),
        )
      }
      const names = async (filter: Parameters<CronStore['listJobs']>[0]) =>
        (await store.listJobs(filter)).map((job) => job.name)
      expect(await names({ scheduleType: 'webhook', schedule: 'push', enabled: true })).toEqual([
        'on-push',
        'on-push-too',
      ])
      expect(await names({ scheduleType: 'webhook', schedule: 'push' })).toEqual([
        'on-push',
        'on-push-paused',
        'on-push-too',
      ])
      expect(await names({ scheduleType: 'webhook', schedule: 'nobody' })).toEqual([])
      expect(await names({ scheduleType: 'cron' })).toEqual(['cron-push', 'nightly'])
      expect(await names({ schedule: 'push' })).toEqual([
        'cron-push',
        'on-push',
        'on-push-paused',
        'on-push-too',
      ])
      expect(await store.countJobs({ scheduleType: 'webhook', schedule: 'push', enabled: true })).toBe(2)
      expect(await store.countJobs({ scheduleType: 'webhook' })).toBe(5)
    })

    it('sorts jobs by next run, last run or failures, paging by key and name', async () => {
      for (const [name, nextRunAt, lastRunAt, consecutiveFailures] of [
        ['alpha', 5000, null, 0],
        ['bravo', null, 3000, 4],
        ['charlie', 5000, 1000, 1],
        ['delta', 2000, 3000, 0],
        ['echo', null, null, 4],
      ] as const) {
        await store.insertJob(createTestJob({ name, nextRunAt, lastRunAt, consecutiveFailures }))
      }
      const names = async (filter: Parameters<CronStore['listJobs']>[0]) =>
        (await store.listJobs(filter)).map((job) => job.name)
      expect(await names({ sort: 'next_run' })).toEqual(['delta', 'alpha', 'charlie', 'bravo', 'echo'])
      expect(await names({ sort: 'last_run' })).toEqual(['bravo', 'delta', 'charlie', 'alpha', 'echo'])
      expect(await names({ sort: 'failures' })).toEqual(['bravo', 'echo', 'charlie', 'alpha', 'delta'])
      // Keyset paging: after (key of alpha, alpha) comes charlie (same key, later name), then bravo.
      expect(await names({ sort: 'next_run', after: 'alpha', afterKey: 5000, limit: 2 })).toEqual([
        'charlie',
        'bravo',
      ])
      expect(await names({ sort: 'failures', after: 'bravo', afterKey: -4, limit: 2 })).toEqual([
        'echo',
        'charlie',
      ])
      expect(await names({ sort: 'last_run', after: 'alpha', afterKey: 1 })).toEqual(['echo'])
    })

    it('lists the jobs changed at or after a time, page by page, for a scheduler to sync', async () => {
      for (const [name, updatedAt] of [
        ['alpha', 1000],
        ['bravo', 5000],
        ['charlie', 5001],
        ['delta', 4999],
        ['echo', 9000],
      ] as const) {
        await store.insertJob(createTestJob({ name, updatedAt, enabled: name !== 'echo' }))
      }
      const names = async (filter: Parameters<CronStore['listJobs']>[0]) =>
        (await store.listJobs(filter)).map((job) => job.name)
      expect(await names({ changedSince: 5000 })).toEqual(['bravo', 'charlie', 'echo'])
      expect(await names({ changedSince: 5000, limit: 2 })).toEqual(['bravo', 'charlie'])
      expect(await names({ changedSince: 5000, after: 'charlie', limit: 2 })).toEqual(['echo'])
      expect(await names({ changedSince: 5000, enabled: true })).toEqual(['bravo', 'charlie'])
      expect(await names({ changedSince: 9001 })).toEqual([])
      const job = (await store.getJobByName('alpha')) as CronJob
      await store.updateJob(job.id, { updatedAt: 9500, enabled: false })
      expect(await names({ changedSince: 9001 })).toEqual(['alpha'])
    })

    it('lists the versions of the jobs changed at or after a time, by name, page by page, without their definitions', async () => {
      for (const [name, updatedAt] of [
        ['alpha', 1000],
        ['bravo', 5000],
        ['charlie', 5001],
        ['delta', 4999],
        ['echo', 9000],
      ] as const) {
        await store.insertJob(createTestJob({ name, updatedAt, enabled: name !== 'echo' }))
      }
      const page = await store.changedJobVersions({ changedSince: 5000, limit: 2 })
      const bravo = (await store.getJobByName('bravo')) as CronJob
      expect(page).toEqual([
        { id: bravo.id, name: 'bravo', enabled: true, updatedAt: 5000 },
        { id: expect.any(String), name: 'charlie', enabled: true, updatedAt: 5001 },
      ])
      expect(await store.changedJobVersions({ changedSince: 5000, after: 'charlie', limit: 2 })).toEqual([
        { id: expect.any(String), name: 'echo', enabled: false, updatedAt: 9000 },
      ])
      expect(await store.changedJobVersions({ changedSince: 9001, limit: 10 })).toEqual([])
    })

    it('lists the schedule of every enabled job by name, without its definition (enabledSchedules, where the store has it)', async (context) => {
      if (store.enabledSchedules === undefined) {
        context.skip()
        return
      }
      await store.insertJob(
        createTestJob({
          name: 'daily',
          scheduleType: 'cron',
          schedule: '0 9 * * *',
          timezone: 'Europe/Berlin',
        }),
      )
      await store.insertJob(
        createTestJob({ name: 'hourly', scheduleType: 'every', schedule: '1h', nextRunAt: 7200 }),
      )
      await store.insertJob(createTestJob({ name: 'off', enabled: false, nextRunAt: null }))
      const daily = (await store.getJobByName('daily')) as CronJob
      const hourly = (await store.getJobByName('hourly')) as CronJob
      expect(await store.enabledSchedules()).toEqual([
        {
          id: daily.id,
          name: 'daily',
          scheduleType: 'cron',
          schedule: '0 9 * * *',
          timezone: 'Europe/Berlin',
          enabled: true,
          nextRunAt: daily.nextRunAt,
        },
        {
          id: hourly.id,
          name: 'hourly',
          scheduleType: 'every',
          schedule: '1h',
          timezone: hourly.timezone,
          enabled: true,
          nextRunAt: 7200,
        },
      ])
      await store.updateJob(daily.id, { enabled: false })
      expect((await store.enabledSchedules()).map((schedule) => schedule.name)).toEqual(['hourly'])
    })

    it('counts the jobs one session key created', async () => {
      await store.insertJob(createTestJob({ createdBy: 'telegram:1:7' }))
      await store.insertJob(createTestJob({ createdBy: 'telegram:1:7' }))
      await store.insertJob(createTestJob({ createdBy: 'telegram:1:8' }))
      await store.insertJob(createTestJob({ createdBy: null }))
      expect(await store.countJobs()).toBe(4)
      expect(await store.countJobs({ createdBy: 'telegram:1:7' })).toBe(2)
      expect(await store.countJobs({ createdBy: 'telegram:1:8' })).toBe(1)
      expect(await store.countJobs({ createdBy: 'slack:1:7' })).toBe(0)
    })

    it('reports enabled and updatedAt of existing jobs for the fire-time freshness check', async () => {
      const on = createTestJob({ updatedAt: 5 })
      const off = createTestJob({ enabled: false, updatedAt: 7 })
      await store.insertJob(on)
      await store.insertJob(off)
      const versions = await store.jobVersions([on.id, off.id, 'missing'])
      expect(versions.get(on.id)).toEqual({ enabled: true, updatedAt: 5 })
      expect(versions.get(off.id)).toEqual({ enabled: false, updatedAt: 7 })
      expect(versions.has('missing')).toBe(false)
    })

    it('rejects a duplicate name with CRON_DUPLICATE_NAME and stores nothing', async () => {
      await store.insertJob(createTestJob({ name: 'daily' }))
      const error = await store.insertJob(createTestJob({ name: 'daily' })).catch((caught: unknown) => caught)
      expect(CronError.is(error) && error.code).toBe('CRON_DUPLICATE_NAME')
      expect(await store.countJobs()).toBe(1)
      const other = createTestJob({ name: 'other' })
      await store.insertJob(other)
      const renamed = await store.updateJob(other.id, { name: 'daily' }).catch((caught: unknown) => caught)
      expect(CronError.is(renamed) && renamed.code).toBe('CRON_DUPLICATE_NAME')
      expect((await store.getJob(other.id))?.name).toBe('other')
    })

    it('updates a job with a patch and returns it; unknown ids give undefined', async () => {
      const job = createTestJob()
      await store.insertJob(job)
      const updated = await store.updateJob(job.id, {
        enabled: false,
        deliverTo: ['discord:9'],
        pauseReason: 'why',
      })
      expect(updated).toEqual({ ...job, enabled: false, deliverTo: ['discord:9'], pauseReason: 'why' })
      expect(await store.updateJob('missing', { enabled: false })).toBeUndefined()
    })

    it('keeps a job ping URL, and a patch changes or clears it', async () => {
      const job = createTestJob({ pingUrl: 'https://hc.example/ping/abc' })
      await store.insertJob(job)
      expect((await store.getJob(job.id))?.pingUrl).toBe('https://hc.example/ping/abc')
      expect((await store.updateJob(job.id, { pingUrl: 'http://127.0.0.1:8000/x' }))?.pingUrl).toBe(
        'http://127.0.0.1:8000/x',
      )
      expect((await store.updateJob(job.id, { pingUrl: null }))?.pingUrl).toBeNull()
      expect((await store.getJobByName(job.name))?.pingUrl).toBeNull()
    })

    it("keeps an ai job's when gate; a patch clears it; a gate-skipped completion stores its reason", async () => {
      const job = createTestJob({ kind: 'ai', prompt: 'p', command: null, when: 'test -s inbox.json' })
      await store.insertJob(job)
      expect((await store.getJob(job.id))?.when).toBe('test -s inbox.json')
      expect((await store.updateJob(job.id, { when: null }))?.when).toBeNull()
      const run = newRun(job, 900_000)
      await store.insertRuns([run])
      const skipped = {
        status: 'skipped',
        completedAt: 900_100,
        durationMs: 100,
        result: null,
        error: null,
        inputTokens: null,
        outputTokens: null,
        skipReason: 'when: no new mail',
      } as const
      expect(await store.completeRun(run.id, skipped)).toBe(true)
      expect(await store.getRun(run.id)).toMatchObject({ status: 'skipped', skipReason: 'when: no new mail' })
    })

    it('claims an occurrence once: a second insert of (job, scheduled_for) is ignored', async () => {
      const job = createTestJob()
      await store.insertJob(job)
      const first = newRun(job, 300_000)
      const second = newRun(job, 300_000, { owner: 'owner-b' })
      const third = newRun(job, 600_000)
      expect([...(await store.insertRuns([first])).inserted]).toEqual([first.id])
      expect([...(await store.insertRuns([second, third])).inserted]).toEqual([third.id])
      const runs = await store.listRuns({ jobId: job.id })
      expect(runs.map((run) => [run.scheduledFor, run.owner])).toEqual([
        [600_000, 'owner-a'],
        [300_000, 'owner-a'],
      ])
      expect(runs[1]).toMatchObject({
        status: 'running',
        deliveryStatus: 'none',
        result: null,
        trigger: 'schedule',
        inputTokens: null,
        outputTokens: null,
      })
    })

    it('claims an exclusive row running only while no other row of its job runs, else records it skipped', async () => {
      const job = createTestJob()
      const other = createTestJob()
      await store.insertJob(job)
      await store.insertJob(other)
      const exclusive = { skipReason: 'overlap: still running elsewhere' }
      const first = newRun(job, 60_000, { owner: 'owner-b', exclusive })
      const otherJob = newRun(other, 60_000, { exclusive })
      expect(await store.insertRuns([first, otherJob])).toEqual({
        inserted: new Set([first.id, otherJob.id]),
        overlapSkipped: new Set(),
      })
      // Job is running on owner-b: the next occurrence is claimed, but recorded skipped.
      const second = newRun(job, 120_000, { startedAt: 120_500, exclusive })
      const result = await store.insertRuns([second])
      expect(result).toEqual({ inserted: new Set([second.id]), overlapSkipped: new Set([second.id]) })
      expect(await store.getRun(second.id)).toMatchObject({
        status: 'skipped',
        startedAt: null,
        completedAt: 120_500,
        skipReason: 'overlap: still running elsewhere',
        owner: 'owner-a',
        trigger: 'schedule',
      })
      // The occurrence has its one row: a second claim of it, exclusive or not, is lost.
      const again = newRun(job, 120_000, { owner: 'owner-b', exclusive })
      expect(await store.insertRuns([again])).toEqual({ inserted: new Set(), overlapSkipped: new Set() })
      // Plain (overlap allow) rows and skipped rows are never checked.
      const allowed = newRun(job, 180_000)
      const skipped = newRun(job, 240_000, {
        status: 'skipped',
        startedAt: null,
        completedAt: 1,
        skipReason: 'missed',
        exclusive,
      })
      expect(await store.insertRuns([allowed, skipped])).toEqual({
        inserted: new Set([allowed.id, skipped.id]),
        overlapSkipped: new Set(),
      })
      expect((await store.getRun(skipped.id))?.skipReason).toBe('missed')
      // Once no run of the job is running, an exclusive claim runs again.
      const done = {
        status: 'completed',
        completedAt: 200_000,
        durationMs: 1,
        result: 'ok',
        error: null,
        inputTokens: null,
        outputTokens: null,
      } as const
      await store.completeRun(first.id, done)
      await store.completeRun(allowed.id, done)
      const third = newRun(job, 300_000, { exclusive })
      expect(await store.insertRuns([third])).toEqual({
        inserted: new Set([third.id]),
        overlapSkipped: new Set(),
      })
      expect(await store.getRun(third.id)).toMatchObject({ status: 'running', startedAt: 300_000 })
    })

    it('checks exclusive rows against the rows stored before the call, one per job and call', async () => {
      const job = createTestJob()
      await store.insertJob(job)
      const exclusive = { skipReason: 'busy' }
      const plain = newRun(job, 60_000)
      const claimed = newRun(job, 120_000, { exclusive })
      expect(await store.insertRuns([plain, claimed])).toEqual({
        inserted: new Set([plain.id, claimed.id]),
        overlapSkipped: new Set(),
      })
      const twice = [newRun(job, 180_000, { exclusive }), newRun(job, 240_000, { exclusive })]
      const error = await store.insertRuns(twice).catch((caught: unknown) => caught)
      expect(CronError.is(error) && error.code).toBe('CRON_INVALID_INPUT')
      expect(await store.listRuns({ jobId: job.id })).toHaveLength(2)
    })

    it('tells which occurrences have a ledger row, whoever wrote it (optional capability)', async (context) => {
      if (store.claimedOccurrences === undefined) return context.skip()
      const job = createTestJob()
      const other = createTestJob()
      await store.insertJob(job)
      await store.insertJob(other)
      expect(await store.claimedOccurrences([])).toEqual([])
      await store.insertRuns([
        newRun(job, 1_000),
        newRun(job, 2_000, { status: 'skipped', startedAt: null, completedAt: 2_000, owner: 'owner-b' }),
        newRun(other, 3_000),
      ])
      const asked = [
        { jobId: job.id, scheduledFor: 1_000 },
        { jobId: job.id, scheduledFor: 2_000 },
        { jobId: job.id, scheduledFor: 3_000 },
        { jobId: other.id, scheduledFor: 1_000 },
        { jobId: other.id, scheduledFor: 3_000 },
        { jobId: 'missing', scheduledFor: 1_000 },
      ]
      const byKey = (
        a: { jobId: string; scheduledFor: number },
        b: { jobId: string; scheduledFor: number },
      ) => a.jobId.localeCompare(b.jobId) || a.scheduledFor - b.scheduledFor
      expect((await store.claimedOccurrences(asked)).sort(byKey)).toEqual(
        [
          { jobId: job.id, scheduledFor: 1_000 },
          { jobId: job.id, scheduledFor: 2_000 },
          { jobId: other.id, scheduledFor: 3_000 },
        ].sort(byKey),
      )
      // More than one chunk of pairs.
      const many = Array.from({ length: 1_200 }, (_, index) => ({
        jobId: job.id,
        scheduledFor: 10_000 + index,
      }))
      expect(await store.claimedOccurrences([...many, { jobId: other.id, scheduledFor: 3_000 }])).toEqual([
        { jobId: other.id, scheduledFor: 3_000 },
      ])
    })

    it('inserts large batches (more than one chunk)', async () => {
      const job = createTestJob()
      await store.insertJob(job)
      const runs = Array.from({ length: 450 }, (_, index) =>
        newRun(job, index * 1000, {
          status: 'skipped',
          startedAt: null,
          completedAt: 5,
          skipReason: 'missed',
        }),
      )
      expect((await store.insertRuns(runs)).inserted.size).toBe(450)
      expect((await store.insertRuns(runs)).inserted.size).toBe(0)
    })

    it('keeps one delivery row per run and target, claimed and finished by compare-and-set', async () => {
      const job = createTestJob()
      await store.insertJob(job)
      const run = newRun(job, 300_000)
      await store.insertRuns([run])
      const delivery = (id: string, target: string, nextAttemptAt: number) => ({
        id,
        runId: run.id,
        jobId: job.id,
        target,
        text: '[Cron] x\nresult',
        createdAt: 1000,
        nextAttemptAt,
      })
      await store.insertDeliveries([delivery('d1', 'telegram:1', 2000), delivery('d2', 'slack:C1', 1500)])
      // A second row for a (run, target) pair that has one is ignored.
      await store.insertDeliveries([delivery('d3', 'telegram:1', 1000)])
      expect((await store.pendingDeliveries({ limit: 10 })).map((row) => row.id)).toEqual(['d2', 'd1'])
      const claimed = await store.claimDelivery('d1', { owner: 'owner-a', now: 2100 })
      expect(claimed).toMatchObject({ status: 'sending', owner: 'owner-a', attempts: 1, updatedAt: 2100 })
      expect(await store.claimDelivery('d1', { owner: 'owner-b', now: 2200 })).toBeUndefined()
      // Only its owner finishes it.
      const retry = { status: 'pending', nextAttemptAt: 9000, lastError: 'HTTP 429', now: 2300 } as const
      expect(await store.finishDelivery('d1', { ...retry, owner: 'owner-b' })).toBe(false)
      expect(await store.finishDelivery('d1', { ...retry, owner: 'owner-a' })).toBe(true)
      await store.claimDelivery('d1', { owner: 'owner-a', now: 9000 })
      expect(
        await store.finishDelivery('d1', {
          owner: 'owner-a',
          status: 'delivered',
          nextAttemptAt: null,
          lastError: null,
          now: 9100,
        }),
      ).toBe(true)
      // A send left mid-way by an owner that stopped heartbeating.
      await store.heartbeat('owner-b', 100)
      await store.claimDelivery('d2', { owner: 'owner-b', now: 2000 })
      expect(await store.orphanedDeliveries({ aliveSince: 50, limit: 10 })).toEqual([])
      expect((await store.orphanedDeliveries({ aliveSince: 500, limit: 10 })).map((row) => row.id)).toEqual([
        'd2',
      ])
      expect(await store.listDeliveries([run.id])).toEqual([
        {
          id: 'd2',
          runId: run.id,
          jobId: job.id,
          target: 'slack:C1',
          status: 'sending',
          attempts: 1,
          nextAttemptAt: 1500,
          lastError: null,
          text: '[Cron] x\nresult',
          owner: 'owner-b',
          createdAt: 1000,
          updatedAt: 2000,
          deliveredAt: null,
        },
        {
          id: 'd1',
          runId: run.id,
          jobId: job.id,
          target: 'telegram:1',
          status: 'delivered',
          attempts: 2,
          nextAttemptAt: null,
          lastError: null,
          text: '[Cron] x\nresult',
          owner: 'owner-a',
          createdAt: 1000,
          updatedAt: 9100,
          deliveredAt: 9100,
        },
      ])
      expect(await store.pendingDeliveries({ limit: 10 })).toEqual([])
      // Deleting the job deletes its deliveries.
      await store.deleteJob(job.id)
      expect(await store.listDeliveries([run.id])).toEqual([])
    })

    it('completes only running runs, records delivery separately, and reads recent results', async () => {
      const job = createTestJob()
      await store.insertJob(job)
      const run = newRun(job, 300_000)
      await store.insertRuns([run])
      const completion = {
        status: 'completed',
        completedAt: 301_000,
        durationMs: 1000,
        result: 'done',
        error: null,
        inputTokens: 5_000_000_000,
        outputTokens: 30,
      } as const
      expect(await store.completeRun(run.id, completion)).toBe(true)
      expect(
        await store.completeRun(run.id, { ...completion, status: 'failed', inputTokens: 1, outputTokens: 1 }),
      ).toBe(false)
      await store.setDelivery(run.id, 'failed', 'telegram down')
      expect(await store.getRun(run.id)).toMatchObject({
        status: 'completed',
        result: 'done',
        durationMs: 1000,
        deliveryStatus: 'failed',
        deliveryError: 'telegram down',
        inputTokens: 5_000_000_000,
        outputTokens: 30,
      })
      const later = newRun(job, 600_000)
      await store.insertRuns([later])
      await store.completeRun(later.id, { ...completion, result: 'second' })
      const failed = newRun(job, 900_000)
      await store.insertRuns([failed])
      await store.completeRun(failed.id, {
        ...completion,
        status: 'failed',
        result: null,
        error: 'x',
        inputTokens: null,
        outputTokens: null,
      })
      expect(await store.recentResults(job.id, 5)).toEqual(['second', 'done'])
      expect(await store.getRun(failed.id)).toMatchObject({ inputTokens: null, outputTokens: null })
    })

    it('sums the tokens of runs that ended since a time, per bucket, oldest first, for the daily AI token budget', async () => {
      const ai = createTestJob({ kind: 'ai', prompt: 'p', command: null })
      const shell = createTestJob({ kind: 'shell', prompt: null, command: 'echo hi' })
      await store.insertJob(ai)
      await store.insertJob(shell)
      const runs = [1000, 2000, 3000, 4000, 5000].map((at) => newRun(ai, at))
      const shellRun = newRun(shell, 6000)
      const stillRunning = newRun(ai, 7000)
      await store.insertRuns([...runs, shellRun, stillRunning])
      const end = (
        run: NewCronRun,
        completedAt: number,
        inputTokens: number | null,
        outputTokens: number | null,
      ) =>
        store.completeRun(run.id, {
          status: 'completed',
          completedAt,
          durationMs: 1,
          result: 'r',
          error: null,
          inputTokens,
          outputTokens,
        })
      const [first, second, third, fourth, fifth] = runs as [
        NewCronRun,
        NewCronRun,
        NewCronRun,
        NewCronRun,
        NewCronRun,
      ]
      await end(first, 60_000, 100, 20)
      await end(second, 119_999, 7, 3)
      await end(third, 120_000, 5_000_000_000, null)
      await end(fourth, 59_999, 1, 1)
      await end(fifth, 130_000, null, null)
      await end(shellRun, 130_000, null, null)
      const minute = 60_000
      expect(await store.aiTokenTotals({ since: 0, bucketMs: minute })).toEqual([
        { at: 0, tokens: 2 },
        { at: 60_000, tokens: 130 },
        { at: 120_000, tokens: 5_000_000_000 },
      ])
      // `since` applies to each run's end, so a bucket may be counted in part.
      expect(await store.aiTokenTotals({ since: 100_000, bucketMs: minute })).toEqual([
        { at: 60_000, tokens: 10 },
        { at: 120_000, tokens: 5_000_000_000 },
      ])
      expect(await store.aiTokenTotals({ since: 0, bucketMs: 1_000_000 })).toEqual([
        { at: 0, tokens: 5_000_000_132 },
      ])
      expect(await store.aiTokenTotals({ since: 120_001, bucketMs: minute })).toEqual([])
      for (const bucketMs of [0, -1, 1.5, Number.NaN]) {
        const error = await store.aiTokenTotals({ since: 0, bucketMs }).catch((caught: unknown) => caught)
        expect(CronError.is(error) && error.code).toBe('CRON_INVALID_INPUT')
      }
    })

    it('lists start times of ai runs since a time, newest first, for the daily AI run budget', async () => {
      const ai = createTestJob({ kind: 'ai', prompt: 'p', command: null })
      const shell = createTestJob({ kind: 'shell', prompt: null, command: 'echo hi' })
      await store.insertJob(ai)
      await store.insertJob(shell)
      await store.insertRuns([
        newRun(ai, 1000),
        newRun(ai, 2000),
        newRun(ai, 3000, { status: 'skipped', skipReason: 'overlap', completedAt: 3000 }),
        newRun(ai, 4000),
        newRun(shell, 5000),
      ])
      expect(await store.aiRunStartTimes({ since: 1500, limit: 10 })).toEqual([4000, 2000])
      expect(await store.aiRunStartTimes({ since: 0, limit: 2 })).toEqual([4000, 2000])
      expect(await store.aiRunStartTimes({ since: 0, limit: 0 })).toEqual([])
      expect(await store.aiRunStartTimes({ since: 10_000, limit: 10 })).toEqual([])
    })

    it('counts consecutive failures and resets them on success', async () => {
      const job = createTestJob()
      await store.insertJob(job)
      expect(await store.recordOutcome(job.id, 'failed', true)).toBe(1)
      expect(await store.recordOutcome(job.id, 'timed_out', true)).toBe(2)
      expect((await store.getJob(job.id))?.lastStatus).toBe('timed_out')
      expect(await store.recordOutcome(job.id, 'completed', false)).toBe(0)
      expect(await store.recordOutcome('missing', 'completed', false)).toBeUndefined()
    })

    it('completes a run and records its outcome on the job together, only when the run was finalised (completeRunWithOutcome, where the store has it)', async (context) => {
      if (store.completeRunWithOutcome === undefined) {
        context.skip()
        return
      }
      const job = createTestJob()
      await store.insertJob(job)
      const completion = (status: 'completed' | 'failed') =>
        ({
          status,
          completedAt: 2_000,
          durationMs: 1,
          result: status === 'completed' ? 'ok' : null,
          error: status === 'failed' ? 'boom' : null,
          inputTokens: null,
          outputTokens: null,
        }) as const
      const first = newRun(job, 1_000)
      const second = newRun(job, 1_500)
      const third = newRun(job, 1_700)
      await store.insertRuns([first, second, third])
      expect(
        await store.completeRunWithOutcome(first.id, completion('failed'), {
          jobId: job.id,
          status: 'failed',
          failed: true,
        }),
      ).toEqual({ updated: true, failures: 1 })
      expect(await store.getRun(first.id)).toMatchObject({
        status: 'failed',
        error: 'boom',
        completedAt: 2_000,
      })
      expect(
        await store.completeRunWithOutcome(second.id, completion('failed'), {
          jobId: job.id,
          status: 'failed',
          failed: true,
        }),
      ).toEqual({ updated: true, failures: 2 })
      // A row that is final already: neither row changes.
      expect(
        await store.completeRunWithOutcome(first.id, completion('completed'), {
          jobId: job.id,
          status: 'completed',
          failed: false,
        }),
      ).toEqual({ updated: false, failures: undefined })
      expect(await store.getRun(first.id)).toMatchObject({ status: 'failed' })
      expect(await store.getJob(job.id)).toMatchObject({ lastStatus: 'failed', consecutiveFailures: 2 })
      // Another scheduler's interrupted row is finalised by its owner only.
      await store.interruptOrphanedRuns({ now: 1_800, aliveSince: 1_800, reason: 'owner gone' })
      expect(
        await store.completeRunWithOutcome(
          third.id,
          { ...completion('completed'), owner: 'someone-else' },
          { jobId: job.id, status: 'completed', failed: false },
        ),
      ).toEqual({ updated: false, failures: undefined })
      expect(
        await store.completeRunWithOutcome(
          third.id,
          { ...completion('completed'), owner: 'owner-a' },
          { jobId: job.id, status: 'completed', failed: false },
        ),
      ).toEqual({ updated: true, failures: 0 })
      expect(await store.getJob(job.id)).toMatchObject({ lastStatus: 'completed', consecutiveFailures: 0 })
      // No such job: the run is still finalised, and no outcome is recorded.
      const orphan = newRun(job, 1_900)
      await store.insertRuns([orphan])
      expect(
        await store.completeRunWithOutcome(orphan.id, completion('completed'), {
          jobId: 'missing',
          status: 'completed',
          failed: false,
        }),
      ).toEqual({ updated: true, failures: undefined })
      expect(await store.getRun(orphan.id)).toMatchObject({ status: 'completed' })
    })

    it('updates next/last run times and disables jobs in bulk', async () => {
      const one = createTestJob()
      const two = createTestJob()
      await store.insertJob(one)
      await store.insertJob(two)
      await store.updateSchedules([
        { id: one.id, nextRunAt: 900_000, lastRunAt: 600_000 },
        { id: two.id, nextRunAt: null, disable: { reason: 'at job fired' } },
      ])
      expect(await store.getJob(one.id)).toMatchObject({
        nextRunAt: 900_000,
        lastRunAt: 600_000,
        enabled: true,
      })
      expect(await store.getJob(two.id)).toMatchObject({
        nextRunAt: null,
        enabled: false,
        pauseReason: 'at job fired',
      })
    })

    it('moves next_run_at only forward, by compare-and-set, and never revives a disabled job', async () => {
      const job = createTestJob({ nextRunAt: 600_000, lastRunAt: 300_000, updatedAt: 50 })
      const paused = createTestJob({ enabled: false, nextRunAt: null, pauseReason: 'paused by request' })
      await store.insertJob(job)
      await store.insertJob(paused)
      // A late write computed before another scheduler's newer one: next and last stay.
      await store.updateSchedules([{ id: job.id, nextRunAt: 300_000, lastRunAt: 240_000 }])
      expect(await store.getJob(job.id)).toMatchObject({ nextRunAt: 600_000, lastRunAt: 300_000 })
      await store.updateSchedules([{ id: job.id, nextRunAt: 600_000 }])
      expect((await store.getJob(job.id))?.nextRunAt).toBe(600_000)
      await store.updateSchedules([{ id: job.id, nextRunAt: 900_000, lastRunAt: 600_000, version: 50 }])
      expect(await store.getJob(job.id)).toMatchObject({ nextRunAt: 900_000, lastRunAt: 600_000 })
      // A null next run without a disable is no write.
      await store.updateSchedules([{ id: job.id, nextRunAt: null }])
      expect((await store.getJob(job.id))?.nextRunAt).toBe(900_000)
      // A write computed from an older definition (version) is dropped whole.
      await store.updateSchedules([{ id: job.id, nextRunAt: 1_200_000, lastRunAt: 900_000, version: 49 }])
      expect(await store.getJob(job.id)).toMatchObject({ nextRunAt: 900_000, lastRunAt: 600_000 })
      // A paused job gets no next run time back; its last run time may still move forward.
      await store.updateSchedules([{ id: paused.id, nextRunAt: 900_000, lastRunAt: 800_000 }])
      expect(await store.getJob(paused.id)).toMatchObject({
        enabled: false,
        nextRunAt: null,
        lastRunAt: 800_000,
        pauseReason: 'paused by request',
      })
      // A disable applies to an enabled job of the same version only, and keeps a disabled job's reason.
      await store.updateSchedules([
        { id: paused.id, nextRunAt: null, disable: { reason: 'done: the one-time (at) schedule has fired' } },
        { id: job.id, nextRunAt: null, disable: { reason: 'late' }, version: 1 },
      ])
      expect((await store.getJob(paused.id))?.pauseReason).toBe('paused by request')
      expect(await store.getJob(job.id)).toMatchObject({ enabled: true, nextRunAt: 900_000 })
      await store.updateSchedules([
        { id: job.id, nextRunAt: null, lastRunAt: 950_000, disable: { reason: 'fired' }, version: 50 },
      ])
      expect(await store.getJob(job.id)).toMatchObject({
        enabled: false,
        nextRunAt: null,
        lastRunAt: 950_000,
        pauseReason: 'fired',
      })
      // Many jobs in one call, each compared on its own.
      const more = [
        createTestJob({ name: 'more-a', nextRunAt: 100 }),
        createTestJob({ name: 'more-b', nextRunAt: 500 }),
      ]
      for (const each of more) await store.insertJob(each)
      await store.updateSchedules(more.map((each) => ({ id: each.id, nextRunAt: 300 })))
      expect(
        (await store.listJobs({ ids: more.map((each) => each.id) })).map((each) => each.nextRunAt),
      ).toEqual([300, 500])
    })

    it('disables many jobs in one call, each by its own compare-and-set, a job given twice in order', async () => {
      const fired = [0, 1, 2].map((index) =>
        createTestJob({ name: `fired-${index}`, nextRunAt: 1_000, lastRunAt: 100, updatedAt: 7 }),
      )
      const stale = createTestJob({ name: 'stale', nextRunAt: 1_000, updatedAt: 8 })
      const paused = createTestJob({
        name: 'paused',
        enabled: false,
        nextRunAt: null,
        pauseReason: 'by hand',
      })
      for (const job of [...fired, stale, paused]) await store.insertJob(job)
      const disable = (id: string, reason: string, extra: Partial<JobScheduleUpdate> = {}) => ({
        id,
        nextRunAt: null,
        disable: { reason },
        ...extra,
      })
      await store.updateSchedules([
        disable((fired[0] as CronJob).id, 'done 0', { version: 7, lastRunAt: 1_000 }),
        disable((fired[1] as CronJob).id, 'done 1', { lastRunAt: 50 }),
        // Written twice: the first write disables it, the second finds it disabled and changes nothing.
        disable((fired[2] as CronJob).id, 'done 2', { version: 7 }),
        disable((fired[2] as CronJob).id, 'again', { lastRunAt: 2_000 }),
        disable(stale.id, 'stale', { version: 7 }),
        disable(paused.id, 'done'),
      ])
      expect(await store.getJob((fired[0] as CronJob).id)).toMatchObject({
        enabled: false,
        nextRunAt: null,
        lastRunAt: 1_000,
        pauseReason: 'done 0',
      })
      // last_run_at moves only forward.
      expect(await store.getJob((fired[1] as CronJob).id)).toMatchObject({
        enabled: false,
        lastRunAt: 100,
        pauseReason: 'done 1',
      })
      expect(await store.getJob((fired[2] as CronJob).id)).toMatchObject({
        enabled: false,
        lastRunAt: 100,
        pauseReason: 'done 2',
      })
      expect(await store.getJob(stale.id)).toMatchObject({
        enabled: true,
        nextRunAt: 1_000,
        pauseReason: null,
      })
      expect((await store.getJob(paused.id))?.pauseReason).toBe('by hand')
    })

    it('lists the owners alive since a time', async () => {
      await store.heartbeat('b-owner', 10_000)
      await store.heartbeat('a-owner', 5_000)
      await store.heartbeat('c-owner', 4_999)
      expect(await store.liveOwners({ aliveSince: 5_000 })).toEqual(['a-owner', 'b-owner'])
      await store.heartbeat('c-owner', 12_000)
      await store.removeOwner('b-owner')
      expect(await store.liveOwners({ aliveSince: 5_000 })).toEqual(['a-owner', 'c-owner'])
      expect(await store.liveOwners({ aliveSince: 20_000 })).toEqual([])
    })

    it('interrupts running rows whose owner stopped heartbeating, and only those', async () => {
      const job = createTestJob()
      await store.insertJob(job)
      await store.heartbeat('alive', 10_000)
      await store.heartbeat('dead', 1_000)
      const alive = newRun(job, 100, { owner: 'alive' })
      const dead = newRun(job, 200, { owner: 'dead', startedAt: 250 })
      const orphan = newRun(job, 300, { owner: null })
      await store.insertRuns([alive, dead, orphan])
      const interrupted = await store.interruptOrphanedRuns({
        now: 12_000,
        aliveSince: 5_000,
        reason: 'owner died',
      })
      expect(interrupted.map((run) => run.id).sort()).toEqual([dead.id, orphan.id].sort())
      expect(interrupted.every((run) => run.status === 'interrupted' && run.error === 'owner died')).toBe(
        true,
      )
      expect((await store.getRun(alive.id))?.status).toBe('running')
      expect(await store.getRun(dead.id)).toMatchObject({
        status: 'interrupted',
        error: 'owner died',
        completedAt: 12_000,
        durationMs: 11_750,
      })
      expect((await store.getRun(orphan.id))?.status).toBe('interrupted')
    })

    it('lets the owner of an interrupted run finalise it with what it did; nobody else', async () => {
      const job = createTestJob()
      await store.insertJob(job)
      await store.heartbeat('late', 1_000)
      const run = newRun(job, 100, { owner: 'late' })
      await store.insertRuns([run])
      await store.interruptOrphanedRuns({ now: 12_000, aliveSince: 5_000, reason: 'owner died' })
      const completion = {
        status: 'completed',
        completedAt: 13_000,
        durationMs: 12_900,
        result: 'done after all',
        error: null,
        inputTokens: null,
        outputTokens: null,
      } as const
      expect(await store.completeRun(run.id, completion)).toBe(false)
      expect(await store.completeRun(run.id, { ...completion, owner: 'someone-else' })).toBe(false)
      expect((await store.getRun(run.id))?.status).toBe('interrupted')
      expect(await store.completeRun(run.id, { ...completion, owner: 'late' })).toBe(true)
      expect(await store.getRun(run.id)).toMatchObject({
        status: 'completed',
        result: 'done after all',
        error: null,
        owner: 'late',
      })
      // Once finalised, it stays so.
      expect(await store.completeRun(run.id, { ...completion, owner: 'late', result: 'again' })).toBe(false)
    })

    it('prunes by age and by count per job, never running rows', async () => {
      const job = createTestJob()
      const other = createTestJob()
      await store.insertJob(job)
      await store.insertJob(other)
      const old = Array.from({ length: 5 }, (_, index) =>
        newRun(job, 1_000 + index, { status: 'skipped', completedAt: 1, startedAt: null }),
      )
      const recent = Array.from({ length: 6 }, (_, index) =>
        newRun(job, 100_000 + index, { status: 'skipped', completedAt: 1, startedAt: null }),
      )
      const running = newRun(job, 500)
      const otherRuns = Array.from({ length: 2 }, (_, index) =>
        newRun(other, 100_000 + index, { status: 'skipped' }),
      )
      await store.insertRuns([...old, ...recent, running, ...otherRuns])
      expect(await store.pruneRuns({ olderThan: 50_000, keepPerJob: 4 })).toBe(5 + 2)
      const left = await store.listRuns({ jobId: job.id, limit: 100 })
      expect(left.map((run) => run.scheduledFor)).toEqual([100_005, 100_004, 100_003, 100_002, 500])
      expect(await store.listRuns({ jobId: other.id })).toHaveLength(2)
    })

    it('deletes a job with its runs and frees its occurrences', async () => {
      const job = createTestJob()
      await store.insertJob(job)
      await store.insertRuns([newRun(job, 300_000)])
      expect(await store.deleteJob(job.id)).toBe(true)
      expect(await store.deleteJob(job.id)).toBe(false)
      expect(await store.listRuns({ jobId: job.id })).toEqual([])
    })

    it('caps list limits at 500 and filters by status', async () => {
      const job = createTestJob()
      await store.insertJob(job)
      await store.insertRuns(
        Array.from({ length: 520 }, (_, index) => newRun(job, index, { status: 'skipped' })),
      )
      expect(await store.listRuns({ limit: 10_000 })).toHaveLength(500)
      expect(await store.listRuns({ status: 'running' })).toHaveLength(0)
      expect(await store.listRuns({ limit: 3 })).toHaveLength(3)
    })

    it('lists runs a page at a time after the run a page ended with (before), ties ordered by id', async () => {
      const job = createTestJob()
      const other = createTestJob({ id: 'other-job', name: 'other-job' })
      await store.insertJob(job)
      await store.insertJob(other)
      await store.insertRuns([
        newRun(job, 1000, { id: 'p-1' }),
        newRun(job, 2000, { id: 'p-2' }),
        newRun(other, 2000, { id: 'p-3' }),
        newRun(job, 3000, { id: 'p-4' }),
      ])
      const ids = async (before?: { scheduledFor: number; id: string }) =>
        (await store.listRuns({ limit: 2, ...(before === undefined ? {} : { before }) })).map((run) => run.id)
      expect(await ids()).toEqual(['p-4', 'p-3'])
      expect(await ids({ scheduledFor: 2000, id: 'p-3' })).toEqual(['p-2', 'p-1'])
      expect(await ids({ scheduledFor: 1000, id: 'p-1' })).toEqual([])
      expect(
        (await store.listRuns({ jobId: job.id, before: { scheduledFor: 3000, id: 'p-4' } })).map(
          (run) => run.id,
        ),
      ).toEqual(['p-2', 'p-1'])
    })

    it('honours an aborted signal before touching the store', async () => {
      const controller = new AbortController()
      const reason = new Error('stop')
      controller.abort(reason)
      await expect(store.listJobs({ signal: controller.signal })).rejects.toBe(reason)
    })
  })
}
