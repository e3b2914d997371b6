import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import { CronError } from './errors.js'
import { type CronJobInput, CronService } from './service.js'
import { MemoryCronStore } from './testing/memory-cron-store.js'

let harness: Harness
beforeEach(async () => {
  harness = await createHarness('2026-03-01T12:00:00Z')
  await harness.service.start()
})
afterEach(async () => {
  await harness.cleanup()
})

async function rejection(promise: Promise<unknown>): Promise<CronError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  if (!CronError.is(error)) throw new Error(`expected a CronError, got ${String(error)}`)
  return error
}

const base: CronJobInput = { name: 'job', scheduleType: 'cron', schedule: '0 9 * * *', prompt: 'x' }

describe('bad input: clear errors, nothing stored', () => {
  it.each<[string, Partial<CronJobInput>, string, RegExp]>([
    [
      'invalid expression',
      { schedule: '0 25 * * *' },
      'CRON_INVALID_SCHEDULE',
      /expected range 0-23\. Expected 5 fields/,
    ],
    [
      'wrong field count',
      { schedule: '0 9 * *' },
      'CRON_INVALID_SCHEDULE',
      /has 4 fields; expected 5 fields/,
    ],
    [
      'seconds wildcard',
      { schedule: '* * * * * *' },
      'CRON_INVALID_SCHEDULE',
      /seconds field is a single number/,
    ],
    [
      'every 10 seconds',
      { schedule: '*/10 * * * * *' },
      'CRON_INVALID_SCHEDULE',
      /seconds field is a single number/,
    ],
    [
      'a shell job given a prompt (it would be dropped)',
      { kind: 'shell', command: 'echo hi', prompt: 'summarise' },
      'CRON_INVALID_INPUT',
      /^prompt is for ai jobs: a shell job runs its command and no model/,
    ],
    [
      'an ai job given a command (it would be dropped)',
      { command: 'echo hi' },
      'CRON_INVALID_INPUT',
      /^command is for shell jobs: an ai job runs its prompt/,
    ],
    [
      'a relative working directory (refused at every run)',
      { kind: 'shell', command: './job.sh', prompt: undefined, cwd: 'scripts' },
      'CRON_INVALID_INPUT',
      /^cwd must be an absolute path such as \/srv\/app \(got a relative one, "scripts"\)/,
    ],
    ['never fires', { schedule: '0 0 31 2 *' }, 'CRON_NEVER_FIRES', /never fires/],
    ['never fires (Feb 31 23:59)', { schedule: '59 23 31 2 *' }, 'CRON_NEVER_FIRES', /never fires/],
    [
      'every 1s',
      { scheduleType: 'every', schedule: '1s' },
      'CRON_INTERVAL_TOO_SHORT',
      /below the minimum of 1m/,
    ],
    [
      'unknown zone',
      { timezone: 'Europe/Atlantis' },
      'CRON_INVALID_TIMEZONE',
      /Unknown time zone .* IANA name/,
    ],
    ['past at', { scheduleType: 'at', schedule: '2026-02-28T09:00' }, 'CRON_AT_IN_PAST', /in the past/],
    ['bad at', { scheduleType: 'at', schedule: 'next friday' }, 'CRON_INVALID_SCHEDULE', /ISO 8601/],
    ['unknown type', { scheduleType: 'hourly' }, 'CRON_INVALID_SCHEDULE', /Accepted: cron, every, at/],
    ['empty name', { name: '' }, 'CRON_INVALID_INPUT', /^name is required/],
    ['blank name', { name: '   ' }, 'CRON_INVALID_INPUT', /^name is required/],
    ['bad name', { name: '../etc' }, 'CRON_INVALID_INPUT', /names are 1-64 characters/],
    ['ai without prompt', { prompt: '' }, 'CRON_INVALID_INPUT', /prompt is required for an ai job/],
    [
      'shell without command',
      { kind: 'shell', prompt: undefined },
      'CRON_INVALID_INPUT',
      /command is required/,
    ],
    ['bad kind', { kind: 'python' as never }, 'CRON_INVALID_INPUT', /kind must be "ai" or "shell"/],
    ['bad target', { deliverTo: ['telegram chat'] }, 'CRON_INVALID_INPUT', /"channel" or "channel:id"/],
    ['bad timeout', { timeout: '0s' }, 'CRON_INVALID_INPUT', /timeout must be/],
    ['huge timeout', { timeout: '3d' }, 'CRON_INVALID_INPUT', /between 1s and 1d/],
    ['bad overlap', { overlap: 'never' as never }, 'CRON_INVALID_INPUT', /overlap must be "skip"/],
    ['bad session mode', { sessionMode: 'shared' as never }, 'CRON_INVALID_INPUT', /session_mode must be/],
    ['missing schedule type', { scheduleType: '' }, 'CRON_INVALID_INPUT', /scheduleType is required/],
  ])('%s', async (_label, change, code, message) => {
    const error = await rejection(harness.service.add({ ...base, ...change } as CronJobInput))
    expect(error.code).toBe(code)
    expect(error.message).toMatch(message)
    expect(await harness.service.list()).toEqual([])
    expect(harness.service.scheduler.armedCount).toBe(0)
  })

  it('duplicate names: create refuses, nothing changes', async () => {
    const { job } = await harness.service.create(base)
    const error = await rejection(harness.service.create({ ...base, prompt: 'other' }))
    expect(error.code).toBe('CRON_DUPLICATE_NAME')
    expect(error.message).toBe('A job named "job" already exists; choose another name or update that job.')
    expect(await harness.service.list()).toEqual([job])
  })

  it('renaming onto a taken name is refused', async () => {
    await harness.service.create(base)
    const { job } = await harness.service.create({ ...base, name: 'second' })
    const error = await rejection(harness.service.update(job.id, { name: 'job' }))
    expect(error.code).toBe('CRON_DUPLICATE_NAME')
    expect((await harness.service.get(job.id)).name).toBe('second')
  })

  it('unknown ids: get, update, pause, resume, remove, trigger, history say Job not found', async () => {
    for (const operation of [
      () => harness.service.get('nope'),
      () => harness.service.update('nope', { enabled: false }),
      () => harness.service.pause('nope'),
      () => harness.service.resume('nope'),
      () => harness.service.remove('nope'),
      () => harness.service.trigger('nope'),
      () => harness.service.history({ job: 'nope' }),
    ]) {
      const error = await rejection(operation())
      expect(error.code).toBe('CRON_JOB_NOT_FOUND')
      expect(error.message).toMatch(/^Job not found/)
    }
    expect((await rejection(harness.service.get(''))).message).toMatch(/^id is required/)
  })

  it('an invalid update leaves the stored job and its schedule untouched', async () => {
    const { job } = await harness.service.create(base)
    const error = await rejection(harness.service.update(job.id, { schedule: '*/1 * * * * *' }))
    expect(error.code).toBe('CRON_INVALID_SCHEDULE')
    expect(await harness.service.get(job.id)).toEqual(job)
  })

  it('caps the number of jobs', async () => {
    const small = harness.another({ maxJobs: 2 })
    await small.create({ ...base, name: 'a' })
    await small.create({ ...base, name: 'b' })
    const error = await rejection(small.create({ ...base, name: 'c' }))
    expect(error.code).toBe('CRON_TOO_MANY_JOBS')
    expect(await small.list()).toHaveLength(2)
  })

  it('caps the jobs of each session key (user and channel), and only theirs', async () => {
    const capped = harness.another({ maxJobsPerCreator: 2 })
    const alice = 'telegram:100:7'
    await capped.create({ ...base, name: 'a1', createdBy: alice })
    await capped.create({ ...base, name: 'a2', createdBy: alice })
    const error = await rejection(capped.create({ ...base, name: 'a3', createdBy: alice }))
    expect(error.code).toBe('CRON_TOO_MANY_JOBS')
    expect(error.message).toMatch(/already has 2 jobs in this channel/)
    expect(error.data).toEqual({ maxJobsPerCreator: 2 })
    // The same user in another channel, another user, and the host itself are not affected.
    await capped.create({ ...base, name: 'a-slack', createdBy: 'slack:C1:7' })
    await capped.create({ ...base, name: 'b1', createdBy: 'telegram:100:8' })
    await capped.create({ ...base, name: 'host1' })
    await capped.create({ ...base, name: 'host2' })
    await capped.create({ ...base, name: 'host3' })
    // Removing one of alice's jobs makes room again.
    const [first] = (await capped.list()).filter((job) => job.name === 'a1')
    await capped.remove(first?.id as string)
    await capped.create({ ...base, name: 'a3', createdBy: alice })
    expect((await capped.list()).filter((job) => job.createdBy === alice)).toHaveLength(2)
  })

  it('minInterval is configurable', async () => {
    const strict = harness.another({ minIntervalMs: 300_000 })
    const error = await rejection(strict.create({ ...base, name: 'fast', schedule: '*/2 * * * *' }))
    expect(error.code).toBe('CRON_INTERVAL_TOO_SHORT')
    expect((await strict.create({ ...base, name: 'ok', schedule: '*/5 * * * *' })).job.name).toBe('ok')
  })

  it('an ai job has a floor of its own (minAgentIntervalMs), a shell job keeps minIntervalMs', async () => {
    const cron = harness.another({ minIntervalMs: 60_000, minAgentIntervalMs: 300_000 })
    const shell = { scheduleType: 'cron', command: 'true' } as const
    expect((await cron.create({ ...shell, name: 'sh', schedule: '* * * * *' })).job.kind).toBe('shell')

    const fast = await rejection(cron.create({ ...base, name: 'ask', schedule: '*/2 * * * *' }))
    expect(fast.code).toBe('CRON_INTERVAL_TOO_SHORT')
    expect(fast.message).toBe(
      'The cron expression "*/2 * * * *" fires as often as every 2m; the minimum interval for an ai job is 5m. Use a coarser expression such as "*/5 * * * *" (every 5 minutes).',
    )
    const every = await rejection(
      cron.create({ ...base, name: 'ask', scheduleType: 'every', schedule: '90s' }),
    )
    expect(every.message).toMatch(/^An interval of 1m30s is below the minimum of 5m for an ai job\./)
    expect(
      (await cron.create({ ...base, name: 'ask', scheduleType: 'every', schedule: '5m' })).job.kind,
    ).toBe('ai')

    // The floor follows the kind a change makes: a shell job every minute cannot become an ai job.
    const turned = await rejection(cron.update('sh', { prompt: 'x', kind: 'ai' }))
    expect(turned.code).toBe('CRON_INTERVAL_TOO_SHORT')
    expect((await cron.get('sh')).kind).toBe('shell')
    // Nor can an ai job be moved under its floor, or resumed under a floor raised since.
    expect((await rejection(cron.update('ask', { schedule: '2m' }))).code).toBe('CRON_INTERVAL_TOO_SHORT')
    const looser = harness.another({ minIntervalMs: 60_000 })
    await looser.create({ ...base, name: 'often', schedule: '* * * * *' })
    await looser.pause('often')
    expect((await rejection(cron.resume('often'))).code).toBe('CRON_INTERVAL_TOO_SHORT')
    // A preview checks what a create would.
    expect((await rejection(cron.preview({ ...base, name: 'p', schedule: '*/3 * * * *' }))).code).toBe(
      'CRON_INTERVAL_TOO_SHORT',
    )
    expect(
      (await cron.preview({ scheduleType: 'cron', schedule: '*/3 * * * *' })).fires.length,
    ).toBeGreaterThan(0)
    // A floor below minIntervalMs is minIntervalMs.
    const lower = harness.another({ minIntervalMs: 120_000, minAgentIntervalMs: 0 })
    expect((await rejection(lower.create({ ...base, name: 'low', schedule: '* * * * *' }))).message).toMatch(
      /the minimum interval is 2m\./,
    )
    expect(() => harness.another({ minAgentIntervalMs: -1 })).toThrow(/minAgentIntervalMs/)
  })

  it('honours an aborted signal', async () => {
    const controller = new AbortController()
    const reason = new Error('stop')
    controller.abort(reason)
    await expect(harness.service.add(base, { signal: controller.signal })).rejects.toBe(reason)
    await expect(harness.service.list({ signal: controller.signal })).rejects.toBe(reason)
  })
})

describe('create/update results', () => {
  it('returns the next 3 runs in the job zone and UTC, and stores the canonical schedule', async () => {
    const { job, nextRuns } = await harness.service.create({
      ...base,
      schedule: '0   9 * *   1-5',
      timezone: 'America/New_York',
      deliverTo: 'telegram:5',
      createdBy: 'telegram:5:9',
      timeout: '90s',
    })
    expect(job).toMatchObject({
      schedule: '0 9 * * 1-5',
      timezone: 'America/New_York',
      deliverTo: ['telegram:5'],
      createdBy: 'telegram:5:9',
      timeoutMs: 90_000,
      overlap: 'skip',
      catchup: 'latest',
      sessionMode: 'isolated',
    })
    expect(nextRuns).toEqual([
      {
        at: Date.parse('2026-03-02T14:00:00Z'),
        utc: '2026-03-02T14:00:00.000Z',
        local: '2026-03-02T09:00:00-05:00',
        timezone: 'America/New_York',
      },
      {
        at: Date.parse('2026-03-03T14:00:00Z'),
        utc: '2026-03-03T14:00:00.000Z',
        local: '2026-03-03T09:00:00-05:00',
        timezone: 'America/New_York',
      },
      {
        at: Date.parse('2026-03-04T14:00:00Z'),
        utc: '2026-03-04T14:00:00.000Z',
        local: '2026-03-04T09:00:00-05:00',
        timezone: 'America/New_York',
      },
    ])
    expect(await harness.service.nextRuns(job.id)).toEqual(nextRuns)
    // An outside probe: a count of 1e9 filled the heap and aborted Node; -1 and NaN read as 1.
    for (const count of [1e9, 51, 0, -1, Number.NaN, 2.5])
      await expect(harness.service.nextRuns(job.id, count), String(count)).rejects.toMatchObject({
        code: 'CRON_INVALID_INPUT',
        message: expect.stringContaining('count must be a whole number from 1 to 50'),
      })
    expect(await harness.service.nextRuns(job.id, 50)).toHaveLength(50)
  })

  it('update changes the schedule and re-arms at once', async () => {
    const { job } = await harness.service.create(base)
    const updated = await harness.service.update(job.id, { schedule: '*/15 * * * *' })
    expect(updated.nextRuns.map((run) => run.utc)).toEqual([
      '2026-03-01T12:15:00.000Z',
      '2026-03-01T12:30:00.000Z',
      '2026-03-01T12:45:00.000Z',
    ])
    await harness.clock.advance(15 * 60_000)
    await harness.service.scheduler.whenIdle()
    expect(harness.agent.calls).toHaveLength(1)
  })

  it('infers shell from a command and stores it unresolved', async () => {
    const { job } = await harness.service.create({
      name: 'backup',
      scheduleType: 'cron',
      schedule: '0 3 * * *',
      command: 'curl -H "Authorization: {{secret:api}}" https://example.com',
    })
    expect(job.kind).toBe('shell')
    expect(job.command).toBe('curl -H "Authorization: {{secret:api}}" https://example.com')
  })

  it('a manual run is the job’s last run (last_run_at), and leaves its next run where it was (outside probe)', async () => {
    await harness.service.start()
    const { job } = await harness.service.create(base)
    expect(job.lastRunAt).toBeNull()
    const triggered = await harness.service.trigger(job.id)
    expect(triggered.status).toBe('started')
    await harness.service.scheduler.whenIdle()
    await harness.service.scheduler.flushPendingWrites()
    const after = await harness.service.get(job.id)
    const [run] = await harness.runs()
    expect(after.lastRunAt).toBe(run?.startedAt)
    expect(after.nextRunAt).toBe(job.nextRunAt)
  })

  it('trigger needs a running scheduler', async () => {
    const { job } = await harness.service.create(base)
    const idle = harness.another()
    const error = await rejection(idle.trigger(job.id))
    expect(error.code).toBe('CRON_NOT_RUNNING')
  })
})

describe('pause and resume', () => {
  it('work out no preview: only create and update return one (its clash search reads every other job)', async () => {
    const { job, preview } = await harness.service.create(base)
    expect(preview).toBeDefined()
    expect((await harness.service.update(job.id, { schedule: '0 10 * * *' })).preview).toBeDefined()
    expect((await harness.service.pause(job.id)).enabled).toBe(false)
    const resumed = await harness.service.resume(job.id)
    expect(resumed.job.enabled).toBe(true)
    expect(resumed).not.toHaveProperty('preview')
  })
})

describe('job:change events', () => {
  it('reports each create, change, pause, resume and remove made through the service, with the job as stored', async () => {
    const seen: string[] = []
    harness.service.on('job:change', ({ job, change }) => seen.push(`${change}:${job.name}:${job.enabled}`))
    const { job } = await harness.service.create(base)
    await harness.service.update(job.id, { schedule: '0 10 * * *' })
    await harness.service.pause(job.id)
    await harness.service.pause(job.id)
    await harness.service.resume(job.id)
    await harness.service.add({ ...base, prompt: 'y' })
    await harness.service.remove(job.id)
    // A second pause of a paused job changes nothing, and says nothing.
    expect(seen).toEqual([
      'created:job:true',
      'updated:job:true',
      'paused:job:false',
      'resumed:job:true',
      'updated:job:true',
      'removed:job:true',
    ])
  })
})

describe('on(): events through the service', () => {
  it('subscribes like engine.on and background.on, and the returned function unsubscribes', async () => {
    const seen: string[] = []
    const unsubscribe = harness.service.on('job:change', ({ job, change }) =>
      seen.push(`${change}:${job.name}`),
    )
    const { job } = await harness.service.create(base)
    unsubscribe()
    await harness.service.pause(job.id)
    expect(seen).toEqual(['created:job'])
  })

  it('still delivers through the deprecated scheduler.events.on', async () => {
    const seen: string[] = []
    const unsubscribe = harness.service.scheduler.events.on('job:change', ({ change }) => seen.push(change))
    await harness.service.create(base)
    unsubscribe()
    expect(seen).toEqual(['created'])
  })
})

describe("checkCommand: the host's check of commands when they are written", () => {
  const seen: [string, string][] = []
  const checkCommand = (command: string, field: 'command' | 'when') => {
    seen.push([field, command])
    if (/'[^']*\{\{secret:/.test(command))
      throw new Error('a secret reference in single quotes cannot be expanded')
  }
  let checked: Harness
  beforeEach(async () => {
    seen.length = 0
    checked = await createHarness('2026-03-01T12:00:00Z', { checkCommand })
  })
  afterEach(async () => {
    await checked.cleanup()
  })

  it('refuses a command or a gate it throws for, naming the field, and stores nothing', async () => {
    const shell = { name: 'curl', scheduleType: 'cron', schedule: '0 9 * * *', kind: 'shell' } as const
    const refused = await rejection(
      checked.service.add({ ...shell, command: "curl -H 'Authorization: {{secret:token}}' x" }),
    )
    expect(refused).toMatchObject({ code: 'CRON_INVALID_INPUT', data: { field: 'command' } })
    expect(refused.message).toBe('command: a secret reference in single quotes cannot be expanded')
    const gate = await rejection(checked.service.add({ ...base, when: "test '{{secret:token}}' = x" }))
    expect(gate).toMatchObject({ code: 'CRON_INVALID_INPUT', data: { field: 'when' } })
    expect(await checked.service.list()).toEqual([])

    const { job } = await checked.service.add({
      ...shell,
      command: 'curl -H "Authorization: {{secret:token}}" x',
    })
    expect(seen).toContainEqual(['command', 'curl -H "Authorization: {{secret:token}}" x'])
    // A change of the command is checked; other edits do not check the command again.
    const update = await rejection(checked.service.update(job.id, { command: "echo '{{secret:token}}'" }))
    expect(update.data).toEqual({ field: 'command' })
    seen.length = 0
    await checked.service.update(job.id, { timeout: '5m' })
    expect(seen).toEqual([])
  })

  it('must be a function', () => {
    expect(
      () => new CronService({ store: new MemoryCronStore(), checkCommand: 'yes' as unknown as () => void }),
    ).toThrow(/checkCommand must be a function/)
  })
})

describe('a job stored with a relative cwd before it was refused', () => {
  it('can still be paused, resumed and edited; a new relative cwd is refused', async () => {
    const { job } = await harness.service.add({ ...base, name: 'old-cwd' })
    // As a job written by an earlier version is stored.
    await harness.store.updateJob(job.id, { cwd: 'scripts' })
    expect((await harness.service.pause(job.id)).enabled).toBe(false)
    expect((await harness.service.resume(job.id)).job.enabled).toBe(true)
    const renamed = await harness.service.update(job.id, { name: 'old-cwd-2' })
    expect(renamed.job).toMatchObject({ name: 'old-cwd-2', cwd: 'scripts' })
    const moved = await rejection(harness.service.update(job.id, { cwd: 'elsewhere' }))
    expect(moved.data).toEqual({ field: 'cwd' })
  })
})

describe('a change of kind keeps working', () => {
  it('an ai job made a shell job (and back) drops the text of the old kind, refusing nothing', async () => {
    const { job } = await harness.service.add({ ...base, name: 'switch' })
    const shell = await harness.service.update(job.id, { kind: 'shell', command: 'echo switched' })
    expect(shell.job).toMatchObject({ kind: 'shell', command: 'echo switched', prompt: null })
    const ai = await harness.service.update(job.id, { kind: 'ai', prompt: 'summarise again' })
    expect(ai.job).toMatchObject({ kind: 'ai', prompt: 'summarise again', command: null })
  })
})

describe('history a page at a time', () => {
  it('before: the page after the last run a call returned, in the same order, none repeated or left out', async () => {
    const { job: first } = await harness.service.add({ ...base, name: 'paged' })
    const { job: second } = await harness.service.add({ ...base, name: 'paged-2' })
    const at = Date.parse('2026-03-01T00:00:00Z')
    // Runs of two jobs share a time: the id orders them.
    const runs: [string, typeof first, number][] = [
      ['run-0', first, at],
      ['run-1', first, at + 60_000],
      ['run-2', second, at + 60_000],
      ['run-3', second, at + 120_000],
      ['run-4', first, at + 180_000],
    ]
    await harness.store.insertRuns(
      runs.map(([id, job, scheduledFor]) => ({
        id,
        jobId: job.id,
        jobName: job.name,
        trigger: 'schedule',
        status: 'running',
        scheduledFor,
        startedAt: scheduledFor,
        completedAt: null,
        skipReason: null,
        owner: 'o',
      })),
    )
    const all = (await harness.service.history({ limit: 200 })).map((run) => run.id)
    expect(all).toEqual(['run-4', 'run-3', 'run-2', 'run-1', 'run-0'])
    const pages = async (job?: string) => {
      const seen: string[] = []
      let before: { scheduledFor: number; id: string } | undefined
      for (let page = 0; page < 5; page++) {
        const found = await harness.service.history({
          limit: 2,
          ...(job === undefined ? {} : { job }),
          ...(before === undefined ? {} : { before }),
        })
        seen.push(...found.map((run) => run.id))
        const last = found.at(-1)
        if (found.length < 2 || last === undefined) break
        before = { scheduledFor: last.scheduledFor, id: last.id }
      }
      return seen
    }
    expect(await pages()).toEqual(all)
    expect(await pages('paged')).toEqual(['run-4', 'run-1', 'run-0'])
    const bad = await rejection(
      harness.service.history({
        before: { scheduledFor: Number.NaN, id: 'x' },
      }),
    )
    expect(bad).toMatchObject({ code: 'CRON_INVALID_INPUT', data: { field: 'before' } })
  })
})
