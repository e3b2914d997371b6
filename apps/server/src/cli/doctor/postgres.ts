import { type CheckResult, safeMessage } from './check.js'

/** PostgreSQL answers a query at the configured URL (the server migrates it at start). */
export async function checkPostgres(url: string): Promise<CheckResult> {
  const parsed = URL.parse(url)
  const where =
    parsed === null ? 'postgres://(unparsable URL)' : `postgres://${parsed.host}${parsed.pathname}`
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 })
  try {
    await client.connect()
    const { rows } = await client.query<{ version: string }>('select version() as version')
    return {
      name: 'database',
      status: 'ok',
      message: `${where} answers (${(rows[0]?.version ?? 'PostgreSQL').split(' ').slice(0, 2).join(' ')}); \`lango serve\` applies migrations at start`,
      details: { database: where },
    }
  } catch (error) {
    const password = parsed?.password
    const message = safeMessage(error)
    return {
      name: 'database',
      status: 'fail',
      message: `cannot connect to ${where}: ${password ? message.replaceAll(decodeURIComponent(password), '[hidden]') : message}`,
      fix: 'check LANGO_DATABASE_URL (host, port, database, user, password) and that PostgreSQL accepts connections from this machine',
      details: { database: where },
    }
  } finally {
    await client.end().catch(() => {})
  }
}
