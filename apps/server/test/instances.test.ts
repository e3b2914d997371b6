import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { InstanceRegistry, type LostInstance } from '../src/cluster/instances.js'
import { migrateCluster } from '../src/cluster/schema.js'
import { type Logger, silentLogger } from '../src/logger.js'
import type { LogFields } from '../src/logger-port.js'
import { until } from './fixtures/http-server.js'

let dir: string | undefined
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
  dir = undefined
})

async function database() {
  dir = await mkdtemp(join(tmpdir(), 'lango-instances-'))
  // biome-ignore lint/suspicious/noExplicitAny: the server's shared handle
  const db = new Kysely<any>({
    dialect: new SqliteDialect({ database: new Database(join(dir, 'lango.db')) }),
  })
  await migrateCluster(db)
  return db
}

describe('InstanceRegistry', () => {
  it('lists the registered instances, self first; a silent one is not alive, and the next start removes it', async () => {
    const db = await database()
    let now = 1_000_000
    const make = (id: string) =>
      new InstanceRegistry(db, {
        id,
        host: 'h',
        pid: 1,
        version: '0.1.0',
        logger: silentLogger,
        heartbeatMs: 5_000,
        now: () => now,
      })
    const a = make('a')
    const b = make('b')
    await a.start()
    now += 1_000
    await b.start()
    expect((await b.list()).map((entry) => [entry.id, entry.self, entry.alive])).toEqual([
      ['b', true, true],
      ['a', false, true],
    ])
    // `a` stops beating (its process was killed): past three intervals it is reported dead…
    await a.stop().catch(() => {})
    await db
      .insertInto('instances')
      .values({
        id: 'a',
        host: 'h',
        pid: 1,
        version: '0.1.0',
        started_at: 1_000_000,
        heartbeat_at: 1_000_000,
      })
      .execute()
    now += 15_001
    expect((await b.list()).find((entry) => entry.id === 'a')?.alive).toBe(false)
    // …and a server that starts later clears it away (b, still beating, stays).
    await db.updateTable('instances').set({ heartbeat_at: now }).where('id', '=', 'b').execute()
    const c = make('c')
    await c.start()
    expect((await c.list()).map((entry) => entry.id)).toEqual(['c', 'b'])
    await Promise.all([b.stop(), c.stop()])
    expect(await db.selectFrom('instances').selectAll().execute()).toEqual([])
    await db.destroy()
  })

  it('judges each instance by its own lease, and warns once about an instance alive with another lease', async () => {
    const db = await database()
    let now = 2_000_000
    const warnings: Array<{ message: string; fields?: LogFields }> = []
    const logger: Logger = { ...silentLogger, warn: (message, fields) => warnings.push({ message, fields }) }
    const make = (id: string, heartbeatMs: number, log: Logger) =>
      new InstanceRegistry(db, {
        id,
        host: 'h',
        pid: 7,
        version: '0.1.0',
        logger: log,
        heartbeatMs,
        now: () => now,
      })
    // `long` beats every 20 s (a 60 s lease); `short` has a 15 s lease.
    const long = make('long', 20_000, silentLogger)
    const short = make('short', 5_000, logger)
    await long.start()
    now += 1_000
    await short.start()
    expect(warnings).toEqual([
      {
        message: 'servers on this database have different cluster.lease values',
        fields: expect.objectContaining({
          lease_ms: 15_000,
          other: { id: 'long', host: 'h', pid: 7, lease_ms: 60_000 },
        }),
      },
    ])
    // 19 s after its last beat `long` is past `short`'s lease but within its own: alive, and kept.
    now += 18_000
    await db.updateTable('instances').set({ heartbeat_at: now }).where('id', '=', 'short').execute()
    expect((await short.list()).map((entry) => [entry.id, entry.alive, entry.lease_ms])).toEqual([
      ['short', true, 15_000],
      ['long', true, 60_000],
    ])
    const later = make('later', 5_000, logger)
    await later.start()
    expect((await later.list()).map((entry) => entry.id)).toEqual(['later', 'long', 'short'])
    // Warned once per instance, not with every start or beat.
    expect(warnings.map((warning) => (warning.fields?.other as { id: string } | undefined)?.id)).toEqual([
      'long',
      'long',
    ])
    await Promise.all([long.stop(), short.stop(), later.stop()])
    await db.destroy()
  })

  it('tells one survivor of a server silent past its lease, removing its row; the silent one, beating again, registers again', async () => {
    const db = await database()
    // `stalled` writes heartbeats stamped at a time that no longer moves (a 60 ms lease); the
    // survivors beat on the real clock (a 600 ms lease).
    const frozen = Date.now()
    const warnings: string[] = []
    const make = (id: string, clock: () => number, heartbeatMs: number, log: Logger = silentLogger) =>
      new InstanceRegistry(db, {
        id,
        host: 'h',
        pid: 9,
        version: '0.1.0',
        logger: log,
        heartbeatMs,
        now: clock,
      })
    const stalled = make('stalled', () => frozen, 20, {
      ...silentLogger,
      warn: (message) => warnings.push(message),
    })
    const survivors = [make('s1', Date.now, 200), make('s2', Date.now, 200)]
    const lost: Array<{ by: string; lost: readonly LostInstance[] }> = []
    for (const survivor of survivors) survivor.onLost((found) => lost.push({ by: survivor.id, lost: found }))
    await stalled.start()
    await Promise.all(survivors.map((survivor) => survivor.start()))
    const first = await until(async () => lost[0])
    expect(first.lost).toEqual([
      {
        id: 'stalled',
        host: 'h',
        pid: 9,
        version: '0.1.0',
        startedAt: frozen,
        heartbeatAt: frozen,
        leaseMs: 60,
        foundAt: expect.any(Number),
      },
    ])
    // Its next heartbeat finds its row gone: it registers again (and is taken for dead again).
    await until(async () =>
      warnings.some((message) => message.includes('registered again')) ? true : undefined,
    )
    await until(async () => (lost.length >= 2 ? true : undefined))
    // Each removal is told once: never the same row to both survivors.
    for (const entry of lost) expect(entry.lost.map((instance) => instance.id)).toEqual(['stalled'])
    await Promise.all([stalled.stop(), ...survivors.map((survivor) => survivor.stop())])
    await db.destroy()
  })
  it('keeps the servers it took for dead for a day, the last 20, for /api/instances and lango doctor', async () => {
    const db = await database()
    let now = 1_000_000_000
    const registry = new InstanceRegistry(db, {
      id: 'self',
      host: 'h',
      pid: 1,
      version: '0.1.0',
      logger: silentLogger,
      heartbeatMs: 5_000,
      now: () => now,
    })
    // 25 servers dead long ago: the start removes them all, and the list keeps the newest 20.
    for (let index = 0; index < 25; index++)
      await db
        .insertInto('instances')
        .values({
          id: `dead-${index}`,
          host: 'old',
          pid: index,
          version: '0.1.0',
          started_at: 1,
          heartbeat_at: 1,
        })
        .execute()
    await registry.start()
    expect(registry.recentlyLost().map((instance) => instance.id)).toEqual(
      Array.from({ length: 20 }, (_, index) => `dead-${index + 5}`),
    )
    expect(registry.recentlyLost()[0]).toMatchObject({
      host: 'old',
      heartbeatAt: 1,
      leaseMs: 15_000,
      foundAt: now,
    })
    // A day later they are no longer recent.
    now += 24 * 60 * 60_000 + 1
    expect(registry.recentlyLost()).toEqual([])
    await registry.stop()
    await db.destroy()
  })
})
