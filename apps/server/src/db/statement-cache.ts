import type Database from '@lango/better-sqlite3'
import type { SqliteDatabase, SqliteStatement } from 'kysely'

/** Prepared statements kept by {@link cachedStatements}. */
const DEFAULT_CAPACITY = 256

/**
 * The connection as Kysely's `SqliteDialect` sees it, with prepared statements reused: Kysely
 * prepares every query it runs, and SQLite's parse and plan of a 24-column select costs as much
 * as reading 20 of its rows. Keyed by SQL text, least recently used dropped past `capacity` (SQL
 * with a variable `IN (…)` list gets one entry per list length). A statement still being iterated
 * (`busy`) is never handed out twice: the query gets a fresh one. SQLite re-prepares a cached
 * statement itself when a migration changes the schema.
 */
export function cachedStatements(
  database: Database.Database,
  capacity = DEFAULT_CAPACITY,
): SqliteDatabase & { readonly cachedCount: number } {
  const cache = new Map<string, Database.Statement>()
  return {
    get cachedCount() {
      return cache.size
    },
    prepare(sql: string): SqliteStatement {
      const cached = cache.get(sql)
      if (cached !== undefined && !cached.busy) {
        // Most recently used last: Map keeps insertion order.
        cache.delete(sql)
        cache.set(sql, cached)
        return cached as unknown as SqliteStatement
      }
      const statement = database.prepare(sql)
      if (cached === undefined) {
        cache.set(sql, statement)
        if (cache.size > capacity) cache.delete(cache.keys().next().value as string)
      }
      return statement as unknown as SqliteStatement
    },
    close() {
      cache.clear()
      database.close()
    },
  }
}
