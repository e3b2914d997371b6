/**
 * Singleton duties on the `leases` table (issue 14), on a real SQLite file and a real PostgreSQL
 * (a fresh schema per test; skipped, saying why, when PostgreSQL is not reachable): one holder at a
 * time, takeover only after expiry with a higher version, a lost lease stops the duty, a graceful
 * stop hands the duty over at once. The multi-process kill -9 case is in cluster-processes.test.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { migrateCron } from '@lango/cron/sqlite'
import { waitFor } from '@lango/vitest-config/wait-for'
import { migrateWorkflow } from '@lango/workflow/sqlite'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect, sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { ClusterClock } from '../src/cluster/clock.js'
import { type Duty, LeaseTable, SingletonDuties } from '../src/cluster/leases.js'
import { migrateCluster } from '../src/cluster/schema.js'
import { silentLogger } from '../src/logger.js'
import { recordingLogger } from './fixtures/fake-chat-apis.js'
import { postgresSchemas } from './fixtures/postgres-schema.js'

// biome-ignore lint/suspicious/noExplicitAny: the server's shared handle
type HostDatabase = Kysely<any>

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function sqliteDatabase(): Promise<{ db: HostDatabase; another: () => HostDatabase }> {
  const dir = await mkdtemp(join(tmpdir(), 'lango-leases-'))
  const file = join(dir, 'lango.db')
  const handles: HostDatabase[] = []
  const another = () => {
    const handle = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(file) }) })
    handles.push(handle)
    return handle as HostDatabase
  }
  const db = another()
  await migrateCluster(db)
  cleanups.push(async () => {
    for (const handle of handles) await handle.destroy()
    await rm(dir, { recursive: true, force: true })
  })
  return { db, another }
}

const postgres = await postgresSchemas<unknown>('lease_test')
async function postgresDatabase(): Promise<{ db: HostDatabase; another: () => HostDatabase }> {
  const schema = await (postgres.open as NonNullable<typeof postgres.open>)()
  cleanups.push(() => schema.close())
  await migrateCluster(schema.db as HostDatabase)
  return { db: schema.db as HostDatabase, another: () => schema.another() as HostDatabase }
}

/** A duty that records when it starts and stops, and fails if it ever runs twice at once. */
class RecordingDuty implements Duty {
  readonly events: string[] = []
  constructor(
    readonly name: string,
    readonly instance: string,
    readonly running: Set<string>,
  ) {}
  async start(): Promise<void> {
    if (this.running.size > 0) throw new Error(`${this.instance} started while ${[...this.running]} runs`)
    this.running.add(this.instance)
    this.events.push('start')
  }
  async stop(): Promise<void> {
    this.running.delete(this.instance)
    this.events.push('stop')
    this.stoppedAt.push(Date.now())
  }
  readonly stoppedAt: number[] = []
}

const backends = [
  { name: 'SQLite', open: sqliteDatabase, skip: undefined },
  {
    name: 'PostgreSQL',
    open: postgresDatabase,
    skip: postgres.open === undefined ? (postgres.reason ?? 'not reachable') : undefined,
  },
] as const

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(
    `leases on ${backend.name}${backend.skip === undefined ? '' : ` — SKIPPED: ${backend.skip}`}`,
    () => {
      it('one holder at a time; an expired lease is taken over with a higher version and the old holder can no longer renew or release it', async () => {
        const { db } = await backend.open()
        let now = 1_000_000
        const table = new LeaseTable(db, () => now)
        expect(await table.acquire('retention', 'a', 1_000)).toBe(1)
        expect(await table.acquire('retention', 'b', 1_000)).toBeUndefined()
        expect(await table.renew('retention', 'a', 1, 1_000)).toBe(true)
        now += 999
        expect(await table.acquire('retention', 'b', 1_000)).toBeUndefined()
        now += 1_002
        expect(await table.acquire('retention', 'b', 1_000)).toBe(2)
        expect(await table.renew('retention', 'a', 1, 1_000)).toBe(false)
        await table.release('retention', 'a', 1)
        expect(await table.list()).toEqual([
          { name: 'retention', owner: 'b', version: 2, expires_at: new Date(now + 1_000).toISOString() },
        ])
        await table.release('retention', 'b', 2)
        expect(await table.list()).toEqual([])
        expect(await table.acquire('retention', 'c', 1_000)).toBe(1)
      })

      it('of many callers racing for one expired lease on separate connections, exactly one gets it', async () => {
        const { db, another } = await backend.open()
        const now = 5_000_000
        await new LeaseTable(db, () => now - 10_000).acquire('receive:x', 'old', 1_000)
        const tables = Array.from({ length: 8 }, () => new LeaseTable(another(), () => now))
        for (let round = 0; round < 5; round++) {
          const name = `race-${round}`
          const results = await Promise.all(tables.map((table, i) => table.acquire(name, `o${i}`, 1_000)))
          expect(results.filter((version) => version !== undefined)).toEqual([1])
        }
        const takeover = await Promise.all(
          tables.map((table, i) => table.acquire('receive:x', `o${i}`, 1_000)),
        )
        expect(takeover.filter((version) => version !== undefined)).toEqual([2])
      })

      it('SingletonDuties: one instance runs the duty; a graceful stop hands it to the other at once; a lost lease stops it', async () => {
        const { db, another } = await backend.open()
        const running = new Set<string>()
        // Rounds every half second; the fence a third of a lease before expiry leaves a round a
        // whole second of lateness on a busy machine.
        const ttlMs = 1_500
        // The cluster clock does not move in this test: a lease can only change hands because its
        // holder gave it up or lost its row, never because it ran out.
        const now = () => 1_000_000
        const make = (instance: string, handle: HostDatabase) => {
          const duty = new RecordingDuty('retention', instance, running)
          const table = new LeaseTable(handle, now)
          const attempts = { count: 0 }
          const acquire = table.acquire.bind(table)
          table.acquire = (...args) => {
            attempts.count++
            return acquire(...args)
          }
          const duties = new SingletonDuties({
            leases: table,
            owner: instance,
            ttlMs,
            now,
            logger: silentLogger,
          })
          duties.add(duty)
          return { duty, duties, attempts }
        }
        const a = make('a', db)
        const b = make('b', another())
        await a.duties.start()
        await b.duties.start()
        expect(a.duty.events).toEqual(['start'])
        expect(a.duties.held().map((lease) => lease.name)).toEqual(['retention'])
        expect(b.duties.held()).toEqual([])
        // Several rounds later b still waits: a renews every third of the lease.
        await waitFor(() => b.attempts.count >= 3)
        expect(b.duty.events).toEqual([])
        expect(a.duty.events).toEqual(['start'])
        await a.duties.stop()
        expect(a.duty.events).toEqual(['start', 'stop'])
        // a gave the lease back: b takes it at its next round, though the lease never ran out.
        await waitFor(() => b.duty.events.length === 1)
        expect(b.duties.held().map((lease) => lease.name)).toEqual(['retention'])
        // Someone else takes the row (an operator, or a holder after b's lease ran out): b stops.
        await db
          .updateTable('leases')
          .set({ owner: 'c', version: 99 })
          .where('name', '=', 'retention')
          .execute()
        await waitFor(() => b.duty.events.length === 2)
        expect(b.duty.events).toEqual(['start', 'stop'])
        expect(b.duties.held()).toEqual([])
        await b.duties.stop()
        expect(running.size).toBe(0)
      })

      it('a duty whose start fails gives its lease back, and is tried again later', async () => {
        const { db } = await backend.open()
        let attempts = 0
        // The back-off is judged on the cluster clock, which this test moves past it.
        let now = 1_000_000
        const duties = new SingletonDuties({
          leases: new LeaseTable(db, () => now),
          owner: 'a',
          ttlMs: 1_500,
          now: () => now,
          logger: silentLogger,
        })
        duties.add({
          name: 'receive:telegram-bot:x',
          start: async () => {
            attempts++
            if (attempts === 1) throw new Error('the Bot API answered 502')
          },
          stop: async () => {},
        })
        await duties.start()
        expect(duties.held()).toEqual([])
        // The lease is given back (start() can resolve before the release reaches the database).
        const leases = new LeaseTable(db, () => now)
        const deadline = Date.now() + 15_000
        while ((await leases.list()).length > 0 && Date.now() < deadline)
          await new Promise((resolve) => setTimeout(resolve, 10))
        expect(await leases.list()).toEqual([])
        expect(attempts).toBe(1)
        now += 1_500
        await waitFor(() => duties.held().length === 1)
        expect(attempts).toBe(2)
        await duties.stop()
      })
    },
  )
}

// An outside probe: during a database outage "lease could not be taken" was logged at every round.
describe('a lease that cannot be taken while the database refuses writes', () => {
  it('is said once, then once a minute with a count, and the end once', async () => {
    const { db } = await sqliteDatabase()
    let now = 1_000_000
    const table = new LeaseTable(db, () => now)
    let attempts = 0
    const acquire = table.acquire.bind(table)
    table.acquire = (...args) => {
      attempts++
      return acquire(...args)
    }
    const logger = recordingLogger()
    const duties = new SingletonDuties({ leases: table, owner: 'a', ttlMs: 1_500, now: () => now, logger })
    duties.add({ name: 'retention', start: async () => {}, stop: async () => {} })
    for (const event of ['insert', 'update'])
      await sql
        .raw(
          `create trigger refuse_${event} before ${event} on leases begin select raise(fail, 'database or disk is full'); end`,
        )
        .execute(db)
    const said = () => logger.entries.filter((entry) => entry.message.startsWith('lease'))
    await duties.start()
    await waitFor(() => attempts >= 3)
    expect(said().map((entry) => entry.message)).toEqual(['lease could not be taken'])
    now += 60_000
    const before = attempts
    await waitFor(() => attempts >= before + 2)
    expect(said().map((entry) => entry.message)).toEqual([
      'lease could not be taken',
      'lease still cannot be taken',
    ])
    expect(said()[1]?.fields).toMatchObject({ lease: 'retention', sinceMs: 60_000 })
    for (const event of ['insert', 'update']) await sql.raw(`drop trigger refuse_${event}`).execute(db)
    await waitFor(() => duties.held().length === 1)
    expect(said().map((entry) => entry.message)).toEqual([
      'lease could not be taken',
      'lease still cannot be taken',
      'lease can be taken again: the database answers',
      'lease taken: running its duty here',
    ])
    await duties.stop()
  })
})

// Kysely's Migrator took a migration table of the same name in any schema for its own: a database
// holding another schema with lango's tables (another app's, another lango's, a concurrent test's)
// failed migrations with `relation "…_migration_lock" does not exist`.
describe.skipIf(postgres.open === undefined)(
  'migrations in one schema of a shared PostgreSQL database',
  () => {
    it("ignore another schema's migration tables", async () => {
      const first = await postgresDatabase()
      await migrateCron(first.db)
      await migrateWorkflow(first.db)
      const second = await postgresDatabase()
      await migrateCron(second.db)
      await migrateWorkflow(second.db)
      await expect(new LeaseTable(second.db, Date.now).acquire('retention', 'a', 1_000)).resolves.toBe(1)
      await expect(second.db.selectFrom('cron_jobs').selectAll().execute()).resolves.toEqual([])
    })
  },
)

// Issue 21 (9): a renewal that hung (no statement timeout) kept the duty running past its lease.
describe.skipIf(postgres.open === undefined)('a lease renewal held by a lock (PostgreSQL)', () => {
  it('the holder stops its duty before the lease could run out; once the lock goes, one server runs it again', async () => {
    const { db, another } = await postgresDatabase()
    const running = new Set<string>()
    // The fence stops the duty a third of the lease (a second) before the lease could run out.
    const ttlMs = 3_000
    const make = (instance: string, handle: HostDatabase) => {
      const duty = new RecordingDuty('retention', instance, running)
      const duties = new SingletonDuties({
        leases: new LeaseTable(handle, Date.now, { dialect: 'postgres', statementTimeoutMs: ttlMs / 3 }),
        owner: instance,
        ttlMs,
        now: Date.now,
        logger: silentLogger,
      })
      duties.add(duty)
      cleanups.push(() => duties.stop())
      return { duty, duties }
    }
    const a = make('a', db)
    await a.duties.start()
    expect(a.duty.events).toEqual(['start'])
    const b = make('b', another())
    await b.duties.start()

    // Another session locks the lease row: every renewal and takeover waits behind it.
    const locker = another()
    let unlock: () => void = () => {}
    const unlocked = new Promise<void>((resolve) => {
      unlock = resolve
    })
    let locked: () => void = () => {}
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve
    })
    const holding = locker.transaction().execute(async (trx) => {
      await trx.selectFrom('leases').selectAll().where('name', '=', 'retention').forUpdate().execute()
      locked()
      await unlocked
    })
    await isLocked
    // When the lease runs out, as the database holds it (a plain read does not wait for the lock):
    // the last renewal that went through set it, and no renewal moves it while the lock holds.
    const { expires_at: runsOut } = await another()
      .selectFrom('leases')
      .select('expires_at')
      .where('name', '=', 'retention')
      .executeTakeFirstOrThrow()
    await waitFor(() => a.duty.events.length === 2)
    expect(a.duty.stoppedAt[0]).toBeLessThan(Number(runsOut))
    expect(a.duties.held()).toEqual([])
    unlock()
    await holding
    // Once the lock is gone and the lease has run out, one of them runs the duty again (never both:
    // a RecordingDuty that starts while another runs fails its start).
    await waitFor(() => running.size === 1)
    expect(a.duty.events.length + b.duty.events.length).toBe(3)
  }, 60_000)
})

describe.skipIf(postgres.open === undefined)('ClusterClock on PostgreSQL', () => {
  it("measures the database's clock: on one machine the offset is within the round trip", async () => {
    const { db } = await postgresDatabase()
    const clock = new ClusterClock(db, silentLogger, 1_000)
    const reading = await clock.measure()
    expect(reading.source).toBe('database')
    expect(Math.abs(reading.offset_ms)).toBeLessThanOrEqual(reading.uncertainty_ms + 5)
    // nowMs() is this machine's time plus the measured offset.
    const before = Date.now()
    const read = clock.nowMs()
    const after = Date.now()
    expect(read - reading.offset_ms).toBeGreaterThanOrEqual(before)
    expect(read - reading.offset_ms).toBeLessThanOrEqual(after)
  })
})

describe('ClusterClock on SQLite', () => {
  it("is this machine's clock", async () => {
    const clock = new ClusterClock(undefined, silentLogger, 1_000)
    expect(await clock.measure()).toEqual({ source: 'local', offset_ms: 0, uncertainty_ms: 0 })
  })
})
