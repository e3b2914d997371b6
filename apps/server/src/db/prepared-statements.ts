import type pg from 'pg'

/** Statement texts given a name (prepared on each connection that runs them) at most. */
const DEFAULT_CAPACITY = 256
/** Texts whose sightings are counted at most; the oldest is forgotten first. */
const SIGHTINGS = 1024
/** What PostgreSQL prepares and plans: other statements (transaction control, DDL) run unnamed. */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i
/** The error of a prepared statement whose result columns changed under it (a migration added one). */
const CHANGED_RESULT = 'cached plan must not change result type'

/** The part of `pg.Pool` that Kysely's `PostgresDialect` uses. */
type Pool = Pick<pg.Pool, 'connect' | 'end'>

/** The part of `pg.PoolClient` that Kysely's `PostgresDialect` uses. */
interface Client {
  query(text: string, values?: readonly unknown[]): Promise<pg.QueryResult>
  query<T extends pg.Submittable>(cursor: T): T
  release(error?: Error | boolean): void
}

/**
 * The pool as Kysely's `PostgresDialect` sees it, with its statements prepared once per connection
 * instead of parsed and planned on every run: PostgreSQL parses and plans an unnamed statement each
 * time, which costs more than running the claim, completion and heartbeat statements the cron
 * scheduler and the workflow engine repeat for every run (issue 21). A text seen a second time is
 * given a name (so one-off texts, such as a variable `IN (…)` list, stay unnamed), at most
 * `capacity` of them; `pg` then prepares it on each connection the first time it runs there.
 * PostgreSQL re-plans a prepared statement itself when the schema changes, except when the columns
 * it returns change (a newer server's migration added one): that statement gets a new name and, outside
 * a transaction, runs again at once. The SQLite counterpart is ./statement-cache.ts.
 */
export function preparedStatements(
  pool: Pool,
  capacity = DEFAULT_CAPACITY,
): Pool & { readonly preparedCount: number } {
  const names = new Map<string, string>()
  const sightings = new Map<string, number>()
  let counter = 0
  const clients = new WeakMap<pg.PoolClient, Client>()

  /** The name `text` runs under, or undefined to run it unnamed. */
  const nameOf = (text: string): string | undefined => {
    const name = names.get(text)
    if (name !== undefined) return name
    if (names.size >= capacity || !PREPARABLE.test(text)) return undefined
    const seen = (sightings.get(text) ?? 0) + 1
    if (seen < 2) {
      sightings.set(text, seen)
      if (sightings.size > SIGHTINGS) sightings.delete(sightings.keys().next().value as string)
      return undefined
    }
    sightings.delete(text)
    return rename(text)
  }
  const rename = (text: string): string => {
    counter += 1
    const name = `lango_${counter.toString(36)}`
    names.set(text, name)
    return name
  }

  const wrap = (client: pg.PoolClient): Client => {
    let inTransaction = false
    const run = (text: string, values: readonly unknown[] | undefined): Promise<pg.QueryResult> => {
      const name = nameOf(text)
      return name === undefined
        ? client.query(text, values as unknown[])
        : client.query({ name, text, values: values as unknown[] })
    }
    return {
      query(textOrSubmittable: string | pg.Submittable, values?: readonly unknown[]) {
        if (typeof textOrSubmittable !== 'string') return client.query(textOrSubmittable)
        const text = textOrSubmittable
        if (/^\s*(begin|start\s+transaction)\b/i.test(text)) inTransaction = true
        else if (/^\s*(commit|end|abort)\b|^\s*rollback\s*$/i.test(text)) inTransaction = false
        return run(text, values).catch((error: unknown) => {
          if (!(error instanceof Error) || !error.message.includes(CHANGED_RESULT) || !names.has(text))
            throw error
          rename(text)
          // In a transaction the failure aborted it: the caller's next attempt gets the new name.
          if (inTransaction) throw error
          return run(text, values)
        })
      },
      release: (error?: Error | boolean) => client.release(error),
    } as Client
  }

  return {
    get preparedCount() {
      return names.size
    },
    async connect() {
      const client = await pool.connect()
      let wrapped = clients.get(client)
      if (wrapped === undefined) {
        wrapped = wrap(client)
        clients.set(client, wrapped)
      }
      return wrapped as unknown as pg.PoolClient
    },
    end: () => pool.end(),
  } as Pool & { readonly preparedCount: number }
}
