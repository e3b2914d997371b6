import type {
  CompiledQuery,
  DatabaseConnection,
  Dialect,
  Driver,
  QueryResult,
  TransactionSettings,
} from 'kysely'

/**
 * The one place where numbers become what the database stores: every number bound to a query on
 * the server's handle is a whole number (issue 21). Every number column is an integer (epoch
 * milliseconds, durations in milliseconds, counts, versions, pids; PostgreSQL's are BIGINT, which
 * refuses `1795734821400.5`), and a time computed from a corrected clock, a lease divided in
 * thirds or a configured `1.5s` may carry a fraction that SQLite would keep silently and
 * PostgreSQL would refuse. Fractions are rounded to the nearest millisecond here, for every store
 * of every package, instead of at each write. A future column that needs a fraction stores an
 * integer in a finer unit (micro-units), so this rule holds.
 */
export function wholeNumberParameters(dialect: Dialect): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createDriver: () => new WholeNumbersDriver(dialect.createDriver()),
  }
}

/** `query` with every fractional number parameter rounded; the same object when there is none. */
function withWholeNumbers(query: CompiledQuery): CompiledQuery {
  const { parameters } = query
  let fractional = false
  for (const parameter of parameters) {
    if (typeof parameter === 'number' && !Number.isInteger(parameter) && Number.isFinite(parameter)) {
      fractional = true
      break
    }
  }
  if (!fractional) return query
  return {
    ...query,
    parameters: parameters.map((parameter) =>
      typeof parameter === 'number' && Number.isFinite(parameter) ? Math.round(parameter) : parameter,
    ),
  }
}

/** The dialect's driver, handing out connections that round parameters before they run. */
class WholeNumbersDriver implements Driver {
  readonly #inner: Driver
  /** Our connection → the driver's own (its methods need the object they made). */
  readonly #unwrapped = new WeakMap<DatabaseConnection, DatabaseConnection>()
  /** The driver's connection → ours, so a pooled connection is wrapped once. */
  readonly #wrapped = new WeakMap<DatabaseConnection, DatabaseConnection>()

  constructor(inner: Driver) {
    this.#inner = inner
  }

  init(): Promise<void> {
    return this.#inner.init()
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.#inner.acquireConnection()
    let wrapped = this.#wrapped.get(connection)
    if (wrapped === undefined) {
      wrapped = {
        executeQuery: <R>(query: CompiledQuery): Promise<QueryResult<R>> =>
          connection.executeQuery<R>(withWholeNumbers(query)),
        streamQuery: <R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> =>
          connection.streamQuery<R>(withWholeNumbers(query), chunkSize),
      }
      this.#wrapped.set(connection, wrapped)
      this.#unwrapped.set(wrapped, connection)
    }
    return wrapped
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.#inner.beginTransaction(this.#own(connection), settings)
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#inner.commitTransaction(this.#own(connection))
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await this.#inner.rollbackTransaction(this.#own(connection))
    } catch (error) {
      // SQLite rolls a transaction back by itself on some errors (SQLITE_FULL, SQLITE_IOERR,
      // SQLITE_NOMEM, a trigger's RAISE(ROLLBACK)): nothing is left to roll back, and Kysely would
      // throw this ROLLBACK's error in place of the one that ended the transaction ("database or
      // disk is full" read as "cannot rollback - no transaction is active").
      if (error instanceof Error && /no transaction is active/.test(error.message)) return
      throw error
    }
  }

  savepoint(
    connection: DatabaseConnection,
    name: string,
    compileQuery: Parameters<NonNullable<Driver['savepoint']>>[2],
  ): Promise<void> {
    return this.#optional('savepoint')(this.#own(connection), name, compileQuery)
  }

  rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compileQuery: Parameters<NonNullable<Driver['rollbackToSavepoint']>>[2],
  ): Promise<void> {
    return this.#optional('rollbackToSavepoint')(this.#own(connection), name, compileQuery)
  }

  releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compileQuery: Parameters<NonNullable<Driver['releaseSavepoint']>>[2],
  ): Promise<void> {
    return this.#optional('releaseSavepoint')(this.#own(connection), name, compileQuery)
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.#inner.releaseConnection(this.#own(connection))
  }

  destroy(): Promise<void> {
    return this.#inner.destroy()
  }

  #own(connection: DatabaseConnection): DatabaseConnection {
    return this.#unwrapped.get(connection) ?? connection
  }

  #optional<K extends 'savepoint' | 'rollbackToSavepoint' | 'releaseSavepoint'>(
    name: K,
  ): NonNullable<Driver[K]> {
    const method = this.#inner[name]
    if (method === undefined) throw new Error(`this database driver does not support ${name}`)
    return method.bind(this.#inner) as NonNullable<Driver[K]>
  }
}
