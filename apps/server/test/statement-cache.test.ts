import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect, sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { cachedStatements } from '../src/db/statement-cache.js'

let dir: string | undefined

afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
  dir = undefined
})

async function open(capacity?: number) {
  dir = await mkdtemp(join(tmpdir(), 'lango-statements-'))
  const raw = new Database(join(dir, 'test.db'))
  const cache = cachedStatements(raw, capacity)
  const db = new Kysely<{ items: { id: number; name: string } }>({
    dialect: new SqliteDialect({ database: cache }),
  })
  await db.schema
    .createTable('items')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('name', 'text')
    .execute()
  return { raw, cache, db }
}

describe('cachedStatements', () => {
  it('reuses one prepared statement for the same SQL and returns the same rows', async () => {
    const { cache, db } = await open()
    await db
      .insertInto('items')
      .values([
        { id: 1, name: 'a' },
        { id: 2, name: 'b' },
      ])
      .execute()
    const before = cache.cachedCount
    const read = () => db.selectFrom('items').selectAll().orderBy('id').execute()
    expect(await read()).toEqual([
      { id: 1, name: 'a' },
      { id: 2, name: 'b' },
    ])
    expect(cache.cachedCount).toBe(before + 1)
    await db.insertInto('items').values({ id: 3, name: 'c' }).execute()
    expect((await read()).map((row) => row.name)).toEqual(['a', 'b', 'c'])
    expect(cache.prepare('select 1 as one')).toBe(cache.prepare('select 1 as one'))
    await db.destroy()
  })

  it('hands a busy statement to no second query: a query inside an iteration gets its own', async () => {
    const { cache, db } = await open()
    await db
      .insertInto('items')
      .values([
        { id: 1, name: 'a' },
        { id: 2, name: 'b' },
      ])
      .execute()
    const query = 'select name from items order by id'
    const outer = cache.prepare(query)
    const seen: unknown[] = []
    for (const row of outer.iterate([])) {
      const inner = cache.prepare(query)
      expect(inner).not.toBe(outer)
      seen.push(row, inner.all([]))
    }
    expect(seen).toEqual([
      { name: 'a' },
      [{ name: 'a' }, { name: 'b' }],
      { name: 'b' },
      [{ name: 'a' }, { name: 'b' }],
    ])
    await db.destroy()
  })

  it('keeps at most `capacity` statements, dropping the least recently used', async () => {
    const { cache, db } = await open(3)
    const first = cache.prepare('select 1')
    cache.prepare('select 2')
    cache.prepare('select 3')
    expect(cache.prepare('select 1')).toBe(first) // used again: now the most recent
    cache.prepare('select 4') // drops `select 2`
    expect(cache.cachedCount).toBe(3)
    expect(cache.prepare('select 1')).toBe(first)
    await db.destroy()
  })

  it('sees a schema changed after a statement was cached', async () => {
    const { db } = await open()
    await db.insertInto('items').values({ id: 1, name: 'a' }).execute()
    const read = () => sql<Record<string, unknown>>`select * from items`.execute(db)
    expect((await read()).rows).toEqual([{ id: 1, name: 'a' }])
    await sql`alter table items add column extra text default 'x'`.execute(db)
    expect((await read()).rows).toEqual([{ id: 1, name: 'a', extra: 'x' }])
    await db.destroy()
  })

  it('closes the connection when Kysely is destroyed', async () => {
    const { raw, db } = await open()
    await db.destroy()
    expect(raw.open).toBe(false)
  })
})
