import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { InstanceRegistry } from '../src/cluster/instances.js'
import { migrateCluster } from '../src/cluster/schema.js'
import { silentLogger } from '../src/logger.js'

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
})
