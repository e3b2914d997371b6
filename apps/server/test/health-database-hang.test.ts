/**
 * `/healthz` while PostgreSQL hangs (connections accepted, nothing answered: a network partition, a
 * frozen host): it answers 503 `unavailable` at its own deadline, as a probe with a short timeout
 * needs, instead of after the driver's own timeouts (an outside probe waited 10 s). Cutting the
 * connections at the end also checks that a connection lost while in use is no uncaught exception
 * (vitest fails the file on one; `pg` emitted `error` on a checked-out client nobody listened to).
 */

import type { AddressInfo } from 'node:net'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'
import { POSTGRES_ADMIN, postgresDatabase } from './fixtures/postgres-database.js'

const database = postgresDatabase('lango_health_hang')

/** A TCP proxy to PostgreSQL that can stop answering: new connections and bytes go nowhere while `hung`. */
async function hangingProxy() {
  const state = { hung: false }
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    sockets.add(client)
    client.on('close', () => sockets.delete(client))
    if (state.hung) return // accepted, never answered
    const upstream = connect(POSTGRES_ADMIN.port, POSTGRES_ADMIN.host)
    sockets.add(upstream)
    upstream.on('close', () => sockets.delete(upstream))
    client.on('data', (chunk) => {
      if (!state.hung) upstream.write(chunk)
    })
    upstream.on('data', (chunk) => {
      if (!state.hung) client.write(chunk)
    })
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    state,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}

let proxy: Awaited<ReturnType<typeof hangingProxy>>
let server: TestServer | undefined

beforeAll(async () => {
  await database.create()
  proxy = await hangingProxy()
  server = await startTestServer(undefined, {
    LANGO_DATABASE_URL: `postgres://${POSTGRES_ADMIN.user}@127.0.0.1:${proxy.port}/${database.name}`,
  })
})
afterAll(async () => {
  // Cut every connection first (a stuck query would hold the server's stop), then stop.
  await proxy?.close()
  await server?.dispose().catch(() => {})
  await database.drop()
})

it('answers 503 unavailable at its deadline while the database hangs (and /metrics still scrapes), and ok again once it answers', async () => {
  const live = server as TestServer
  await until(async () => ((await live.request('/healthz')).status === 200 ? true : undefined))
  proxy.state.hung = true
  // Well under the driver's 10 s connection timeout: the deadline answers, not the driver.
  const answer = await live.request('/healthz', { signal: AbortSignal.timeout(8000) })
  expect(answer.status).toBe(503)
  expect(await answer.json()).toMatchObject({ status: 'unavailable', database: 'unavailable' })
  // A scrape still answers (an outside probe got 500 after 10 s): the pending-approvals gauge keeps
  // its last value, and the alert counters, the operator's last resort, are there.
  const scraped = await live.request('/metrics', { signal: AbortSignal.timeout(8000) })
  expect(scraped.status).toBe(200)
  const text = await scraped.text()
  expect(text).toContain('lango_approvals_pending')
  expect(text).toContain('lango_alerts_total')
  // The database answers again: so does the health check (a ping lost in the hang is not waited on).
  proxy.state.hung = false
  await until(async () => ((await live.request('/healthz')).status === 200 ? true : undefined), 30_000)
})
