/**
 * While `lango serve` is still starting (its database not open yet), every route is answered 503
 * `SERVER_NOT_READY` with `Retry-After`, in the shape that route's clients read: OpenAI's under
 * `/v1`, JSON-RPC's at `/mcp` (outside probe: both got the plain API shape), the API's elsewhere.
 * The database here is a loopback port that accepts connections and never answers.
 */

import { rm } from 'node:fs/promises'
import { createServer as createNetServer, type Server, type Socket } from 'node:net'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterEach, expect, it } from 'vitest'
import { silentLogger } from '../src/logger-port.js'
import { serve } from '../src/serve.js'
import { testConfig } from './fixtures/http-server.js'

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function listening(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as { port: number }).port
}

it('answers 503 SERVER_NOT_READY in each route’s own shape while the services start', async () => {
  const sockets: Socket[] = []
  const silent = createNetServer((socket) => sockets.push(socket))
  const databasePort = await listening(silent)
  const probe = createNetServer()
  const port = await listening(probe)
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  const { home, config } = await testConfig((config) => ({
    ...config,
    server: { ...config.server, port },
    database: {
      ...config.database,
      kind: 'postgres',
      url: `postgres://lango@127.0.0.1:${databasePort}/lango`,
    },
  }))
  const started = serve({ config, logger: silentLogger, passphrase: '', closeGraceMs: 0 }).then(
    async (running) => running.close(),
    () => undefined,
  )
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy()
    silent.close()
    await started
    await rm(home, { recursive: true, force: true })
  })
  const url = `http://127.0.0.1:${port}`
  await waitFor(async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 503, {
    timeoutMs: 30_000,
    what: 'the server to listen while starting',
  })
  const v1 = await fetch(`${url}/v1/models`)
  expect(v1.status).toBe(503)
  expect(v1.headers.get('retry-after')).toBe('1')
  expect(await v1.json()).toEqual({
    error: {
      message: 'the server is starting; try again shortly',
      type: 'server_error',
      param: null,
      code: 'server_not_ready',
    },
  })
  const mcp = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  })
  expect(mcp.status).toBe(503)
  expect(await mcp.json()).toMatchObject({
    jsonrpc: '2.0',
    error: { message: 'the server is starting; try again shortly', data: { code: 'SERVER_NOT_READY' } },
  })
  const api = await fetch(`${url}/api/tools`)
  expect(await api.json()).toEqual({
    error: { code: 'SERVER_NOT_READY', message: 'the server is starting; try again shortly' },
  })
})
