// PostgreSQL statements prepared once per connection (issue 21): a statement the server repeats is
// parsed and planned once on each connection, not on every run, and stays correct when a newer
// server's migration changes the columns it returns. PostgreSQL at 127.0.0.1:5432 (trust auth), as
// CI provides it; a fresh database for this file, dropped after it.
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { preparedStatements } from '../src/db/prepared-statements.js'
import { POSTGRES_ADMIN, postgresDatabase } from './fixtures/postgres-database.js'

const DATABASE = postgresDatabase('lango_prepared')

interface Tables {
  items: { id: number; name: string; note?: string | null }
}

let db: Kysely<Tables> | undefined
let prepared: ReturnType<typeof preparedStatements> | undefined

beforeAll(async () => {
  await DATABASE.create()
})
afterEach(async () => {
  await db?.destroy()
  db = undefined
})
afterAll(async () => {
  await DATABASE.drop()
})

/** A one-connection pool on the test's database; a client ended by the final drop is no failure. */
function quietPool(): pg.Pool {
  const pool = new pg.Pool({ ...POSTGRES_ADMIN, database: DATABASE.name, max: 1 })
  pool.on('error', () => {})
  return pool
}

/** A Kysely over a one-connection pool (so every query sees the same connection's statements). */
async function open(): Promise<Kysely<Tables>> {
  prepared = preparedStatements(quietPool())
  db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool: prepared }) })
  await sql`drop table if exists items`.execute(db)
  await sql`create table items (id bigint primary key, name text not null)`.execute(db)
  await db
    .insertInto('items')
    .values([
      { id: 1, name: 'a' },
      { id: 2, name: 'b' },
    ])
    .execute()
  return db
}

/** The statements prepared on the connection, by their text (this query's own left out). */
async function preparedTexts(database: Kysely<Tables>): Promise<string[]> {
  const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements
    where statement not like '%pg_prepared_statements%' order by statement`.execute(database)
  return rows.map((row) => row.statement)
}

describe('preparedStatements', () => {
  it('prepares a statement the second time it runs, once per connection, with the same answers', async () => {
    const database = await open()
    const byId = (id: number) => database.selectFrom('items').selectAll().where('id', '=', id).execute()
    expect(await byId(1)).toEqual([{ id: '1', name: 'a' }])
    expect(await preparedTexts(database)).toEqual([])
    expect(await byId(2)).toEqual([{ id: '2', name: 'b' }])
    expect(await byId(1)).toEqual([{ id: '1', name: 'a' }])
    const texts = await preparedTexts(database)
    expect(texts).toEqual(['select * from "items" where "id" = $1'])
    // Writes and transactions run as before.
    await database.transaction().execute(async (trx) => {
      await trx.updateTable('items').set({ name: 'c' }).where('id', '=', 2).execute()
      await trx.updateTable('items').set({ name: 'd' }).where('id', '=', 1).execute()
    })
    expect(await byId(2)).toEqual([{ id: '2', name: 'c' }])
    expect(await byId(1)).toEqual([{ id: '1', name: 'd' }])
  })

  it('runs a prepared statement again under a new name when a migration changed the columns it returns', async () => {
    const database = await open()
    const all = () => database.selectFrom('items').selectAll().orderBy('id').execute()
    await all()
    await all()
    // A newer server adds a column: the prepared `select *` now returns one more.
    await sql`alter table items add column note text`.execute(database)
    expect(await all()).toEqual([
      { id: '1', name: 'a', note: null },
      { id: '2', name: 'b', note: null },
    ])
    // Inside a transaction the first run fails (PostgreSQL aborts it) and the next one works.
    await sql`alter table items drop column note`.execute(database)
    await all()
    await all()
    await sql`alter table items add column note text`.execute(database)
    const inTransaction = () =>
      database.transaction().execute((trx) => trx.selectFrom('items').selectAll().orderBy('id').execute())
    await expect(inTransaction()).rejects.toThrow(/cached plan must not change result type/)
    expect(await inTransaction()).toHaveLength(2)
  })

  it('names at most `capacity` texts and never DDL or transaction control', async () => {
    prepared = preparedStatements(quietPool(), 2)
    db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool: prepared }) })
    const database = db
    for (let round = 0; round < 2; round++) {
      await sql`create table if not exists items (id bigint primary key, name text not null)`.execute(
        database,
      )
      await database.transaction().execute(async (trx) => {
        for (const id of [1, 2, 3]) await trx.selectFrom('items').select('id').where('id', '=', id).execute()
      })
      for (const limit of [1, 2, 3]) await sql`select ${sql.lit(limit)} as n`.execute(database)
    }
    expect(prepared.preparedCount).toBe(2)
    const texts = await preparedTexts(database)
    expect(texts).toHaveLength(2)
    expect(texts.some((text) => /create|begin|commit/i.test(text))).toBe(false)
  })
})
