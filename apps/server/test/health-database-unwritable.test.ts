/**
 * `/healthz` while the database answers reads but refuses writes (an outside probe filled the disk:
 * every heartbeat, lease and run write failed with SQLITE_FULL, and `/healthz` still answered 200
 * `database: ok`, because its check only reads). Here PostgreSQL turns read-only under the server
 * (as a failed-over replica would): `/healthz` answers 503 `unwritable` with the reason, and 200
 * again once writes work.
 */

import { afterAll, beforeAll, expect, it } from 'vitest'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'
import { POSTGRES_ADMIN, postgresAdmin, postgresDatabase } from './fixtures/postgres-database.js'

const database = postgresDatabase('lango_health_unwritable')
let server: TestServer | undefined

/** Sets the database read-only or not, and ends its connections so that the server's new ones take it. */
async function readOnly(on: boolean): Promise<void> {
  await postgresAdmin(
    `alter database ${database.name} ${on ? 'set default_transaction_read_only = on' : 'reset default_transaction_read_only'}`,
  )
  await postgresAdmin(
    `select pg_terminate_backend(pid) from pg_stat_activity where datname = '${database.name}' and pid <> pg_backend_pid()`,
  )
}

beforeAll(async () => {
  await database.create()
  // Heartbeats every second (a third of the lease).
  server = await startTestServer(
    (config) => ({ ...config, cluster: { ...config.cluster, leaseMs: 3_000 } }),
    {
      LANGO_DATABASE_URL: `postgres://${POSTGRES_ADMIN.user}@127.0.0.1:${POSTGRES_ADMIN.port}/${database.name}`,
    },
  )
})
afterAll(async () => {
  await server?.dispose().catch(() => {})
  await database.drop()
})

it('answers 503 unwritable while its writes fail, with why, and ok again once they work', async () => {
  const live = server as TestServer
  await until(async () => ((await live.request('/healthz')).status === 200 ? true : undefined))
  await readOnly(true)
  const refused = await until(async () => {
    const answer = await live.request('/healthz')
    const body = (await answer.json()) as Record<string, unknown>
    return answer.status === 503 && body.database === 'unwritable' ? body : undefined
  }, 30_000)
  expect(refused).toMatchObject({
    status: 'unavailable',
    error: {
      code: 'SERVER_DATABASE_UNAVAILABLE',
      message: expect.stringMatching(/^the database refuses writes since .+: .*read-only transaction/),
    },
  })
  await readOnly(false)
  await until(async () => ((await live.request('/healthz')).status === 200 ? true : undefined), 30_000)
})
