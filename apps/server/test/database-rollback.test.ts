/**
 * A transaction SQLite ended by itself (a full disk, an I/O error) rejects with the error that ended
 * it, not with the failure of the ROLLBACK that followed. Real SQLite in a temp home; the full disk is
 * a trigger that fails the way SQLite does when it rolls back on its own.
 */
import { rm } from 'node:fs/promises'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { openDatabase } from '../src/db/database.js'
import { silentLogger } from '../src/logger.js'
import { testConfig } from './fixtures/http-server.js'

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

describe('a transaction SQLite rolled back by itself', () => {
  it('rejects with the error that ended it, and the connection goes on working', async () => {
    const made = await testConfig()
    cleanups.push(() => rm(made.home, { recursive: true, force: true }))
    const database = await openDatabase<{ notes: { id: number } }>(made.config, silentLogger, [])
    cleanups.push(() => database.close())
    const { db } = database
    await sql`create table notes (id integer primary key)`.execute(db)
    await sql`create trigger full before insert on notes when new.id > 1 begin select raise(rollback, 'database or disk is full'); end`.execute(
      db,
    )
    const failed = db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('notes').values({ id: 1 }).execute()
        await trx.insertInto('notes').values({ id: 2 }).execute()
      })
      .then(
        () => 'committed',
        (error: Error) => error.message,
      )
    expect(await failed).toBe('database or disk is full')
    // Rolled back whole, and the one connection is not left inside a transaction.
    expect(await db.selectFrom('notes').selectAll().execute()).toEqual([])
    await db.transaction().execute((trx) => trx.insertInto('notes').values({ id: 1 }).execute())
    expect(await db.selectFrom('notes').selectAll().execute()).toEqual([{ id: 1 }])
  })
})
