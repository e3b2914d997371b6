// Issue 25 (4) on PostgreSQL: the replay ledger of `POST /hooks/<name>` is the database's, so a call
// one server accepted is refused by another on the same database. PostgreSQL at 127.0.0.1:5432
// (trust auth), as CI provides it; a database created for this file and dropped after it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signWebhook } from '../src/webhooks/signature.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'
import { postgresDatabase } from './fixtures/postgres-database.js'

const DATABASE = postgresDatabase('lango_hooks')
const SECRET = 'a shared webhook secret'

const servers: TestServer[] = []

beforeAll(async () => {
  await DATABASE.create()
})
afterAll(async () => {
  for (const server of servers.splice(0)) await server.dispose()
  await DATABASE.drop()
})

function start(): Promise<TestServer> {
  return startTestServer(undefined, {
    LANGO_DATABASE_URL: DATABASE.url,
    LANGO_PASSPHRASE: 'pg passphrase',
  })
}

describe('webhooks on PostgreSQL', () => {
  it('a call one server accepted is a replay (409) on another server of the database, and starts nothing there', async () => {
    const first = await start()
    servers.push(first)
    await (await first.app.vault()).set('webhook.deploy', SECRET)
    await first.app.cron.create({
      name: 'on-deploy',
      kind: 'shell',
      scheduleType: 'webhook',
      schedule: 'deploy',
      command: 'echo deployed',
    })
    const second = await start()
    servers.push(second)

    const body = Buffer.from('{"ref":"main"}')
    const id = 'msg_pg_1'
    const timestamp = String(Math.floor(Date.now() / 1000))
    const send = (server: TestServer) =>
      server.request('/hooks/deploy', {
        method: 'POST',
        body,
        headers: {
          'webhook-id': id,
          'webhook-timestamp': timestamp,
          'webhook-signature': signWebhook(SECRET, id, timestamp, body),
        },
      })
    expect((await send(first)).status).toBe(202)
    const run = await until(async () =>
      (await first.app.cron.history({ job: 'on-deploy' })).find((found) => found.status === 'completed'),
    )
    expect(run).toMatchObject({ trigger: 'webhook', result: 'deployed\n' })
    const replayed = await send(second)
    expect(replayed.status).toBe(409)
    expect(await second.app.cron.history({ job: 'on-deploy' })).toHaveLength(1)
  })
})
