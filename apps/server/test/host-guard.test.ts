import { request as httpRequest } from 'node:http'
import { networkInterfaces } from 'node:os'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './fixtures/http-server.js'

// Issue 21, item 11: one Host guard for every route (the API, /v1, /ui and /mcp), the same one
// /mcp always had: loopback names on the real port, the bound address, server.allowed_hosts.

const TOKEN = 'host-guard-token-5b1f'

/** One request sent to `address:port` with the `Host` header a browser under DNS rebinding would send. */
function send(
  address: string,
  port: number,
  request: { readonly method: string; readonly path: string; readonly host: string },
): Promise<{ status: number; body: string }> {
  const body = request.path === '/mcp' ? JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) : undefined
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: address,
        port,
        method: request.method,
        path: request.path,
        headers: {
          host: request.host,
          authorization: `Bearer ${TOKEN}`,
          ...(body === undefined
            ? {}
            : {
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                'content-length': Buffer.byteLength(body),
              }),
        },
      },
      (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => {
          text += chunk
        })
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }))
      },
    )
    outgoing.on('error', reject)
    outgoing.end(body)
  })
}

/** Every kind of route the guard covers, as a client would call it. */
const ROUTES = [
  { method: 'GET', path: '/api/tools' },
  { method: 'GET', path: '/v1/models' },
  { method: 'GET', path: '/ui' },
  { method: 'POST', path: '/mcp' },
] as const

/** The status each route gives for `host`, and that every refusal names HOST_FORBIDDEN. */
async function statuses(address: string, port: number, host: string): Promise<number[]> {
  const answers = await Promise.all(ROUTES.map((route) => send(address, port, { ...route, host })))
  for (const [index, answer] of answers.entries()) {
    if (answer.status !== 403) continue
    const body = JSON.parse(answer.body)
    // /mcp answers as JSON-RPC, with the API's code in data.code; /v1 as OpenAI does (lower case).
    const path = ROUTES[index]?.path
    const code = path === '/mcp' ? body.error.data.code : body.error.code
    expect(code, `${path} for ${host}`).toBe(path?.startsWith('/v1') ? 'host_forbidden' : 'HOST_FORBIDDEN')
  }
  return answers.map((answer) => answer.status)
}

const ANSWERED = ROUTES.map(() => 200)
const REFUSED = ROUTES.map(() => 403)

describe('a server bound to loopback', () => {
  let server: TestServer
  let port: number
  beforeAll(async () => {
    server = await startTestServer((config) => ({
      ...config,
      server: { ...config.server, apiToken: TOKEN, allowedHosts: ['lango.internal', 'proxy.example:8443'] },
    }))
    port = Number(new URL(server.url).port)
  })
  afterAll(async () => {
    await server?.dispose()
  })

  it('answers loopback names on its own port, on every route', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`]) {
      expect(await statuses('127.0.0.1', port, host), host).toEqual(ANSWERED)
    }
  })

  it('answers the names server.allowed_hosts lists: a bare name on any port, name:port on that one', async () => {
    for (const host of [`lango.internal:${port}`, 'lango.internal', 'proxy.example:8443']) {
      expect(await statuses('127.0.0.1', port, host), host).toEqual(ANSWERED)
    }
  })

  it('refuses a loopback name on another port, and names nobody listed', async () => {
    for (const host of [
      `localhost:${port + 1}`,
      `127.0.0.1:${port === 80 ? 81 : 80}`,
      `evil.example:${port}`,
      'proxy.example:8444',
      `lango.internal.evil.example:${port}`,
    ]) {
      expect(await statuses('127.0.0.1', port, host), host).toEqual(REFUSED)
    }
  })

  it('leaves GET /healthz to any Host (probes use whatever address they have)', async () => {
    const answer = await send('127.0.0.1', port, { method: 'GET', path: '/healthz', host: 'evil.example' })
    expect(answer.status).toBe(200)
  })

  it('answers a Host that is not a URL host with a JSON refusal, on every route, logged', async () => {
    // An outside probe got an empty, unlogged 400 (the HTTP adaptor's) for these.
    for (const host of [`user@127.0.0.1:${port}`, `[0:0:0:0:0:0:0:1]:${port}`, `localhost:${port}.`]) {
      for (const path of ['/api/tools', '/healthz', '/v1/models']) {
        const answer = await send('127.0.0.1', port, { method: 'GET', path, host })
        expect(answer.status, `${path} ${host}`).toBeGreaterThanOrEqual(400)
        expect(answer.status, `${path} ${host}`).toBeLessThan(500)
        const body = JSON.parse(answer.body)
        expect(body.error.code, `${path} ${host}`).toMatch(
          /^(INVALID_REQUEST|HOST_FORBIDDEN|invalid_request|host_forbidden)$/,
        )
        expect(body.error.message, `${path} ${host}`).toEqual(expect.any(String))
      }
    }
  })
})

describe('a server bound to a wildcard address (0.0.0.0)', () => {
  let server: TestServer
  let port: number
  beforeAll(async () => {
    server = await startTestServer((config) => ({
      ...config,
      server: { ...config.server, host: '0.0.0.0', apiToken: TOKEN, allowedHosts: ['lango-box.lan'] },
    }))
    port = Number(new URL(server.url).port)
  })
  afterAll(async () => {
    await server?.dispose()
  })

  it('gives the loopback URL, which the guard answers', async () => {
    expect(server.url).toBe(`http://127.0.0.1:${port}`)
    expect(
      (await server.request('/api/tools', { headers: { authorization: `Bearer ${TOKEN}` } })).status,
    ).toBe(200)
  })

  it('answers loopback names and the listed names only: a wildcard is not "any name"', async () => {
    expect(await statuses('127.0.0.1', port, `localhost:${port}`)).toEqual(ANSWERED)
    expect(await statuses('127.0.0.1', port, `lango-box.lan:${port}`)).toEqual(ANSWERED)
    for (const host of [`evil.example:${port}`, `192.0.2.7:${port}`, `0.0.0.0:${port}`]) {
      expect(await statuses('127.0.0.1', port, host), host).toEqual(REFUSED)
    }
  })
})

/** An address of this machine beyond loopback, when it has one. */
const lanAddress = Object.values(networkInterfaces())
  .flat()
  .find((entry) => entry !== undefined && entry.family === 'IPv4' && !entry.internal)?.address

describe.skipIf(lanAddress === undefined)(`a server bound to a LAN address (${lanAddress})`, () => {
  let server: TestServer
  let port: number
  beforeAll(async () => {
    server = await startTestServer((config) => ({
      ...config,
      server: { ...config.server, host: lanAddress as string, apiToken: TOKEN, allowedHosts: ['lango.lan'] },
    }))
    port = Number(new URL(server.url).port)
  })
  afterAll(async () => {
    await server?.dispose()
  })

  it('answers its own address on its port, and the listed names', async () => {
    const address = lanAddress as string
    expect(await statuses(address, port, `${address}:${port}`)).toEqual(ANSWERED)
    expect(await statuses(address, port, `lango.lan:${port}`)).toEqual(ANSWERED)
    for (const host of [`${address}:${port + 1}`, `evil.example:${port}`]) {
      expect(await statuses(address, port, host), host).toEqual(REFUSED)
    }
  })
})

describe('/v1 refusals with a model configured', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(
      (config) => ({ ...config, server: { ...config.server, apiToken: TOKEN } }),
      {
        LANGO_MODEL_BASE_URL: 'http://127.0.0.1:9/v1',
        LANGO_MODEL: 'test-model',
      },
    )
  })
  afterAll(async () => {
    await server?.dispose()
  })

  it('say what the API says, addresses and all (only a turn’s failure hides the model server’s), as a permission_error', async () => {
    // An outside probe: the model server's hider ran over every /v1 error and turned this server's
    // own accepted names into `[address]`.
    const port = Number(new URL(server.url).port)
    const host = `evil.example:${port}`
    const api = JSON.parse((await send('127.0.0.1', port, { method: 'GET', path: '/api/tools', host })).body)
    const v1 = await send('127.0.0.1', port, { method: 'GET', path: '/v1/models', host })
    expect(v1.status).toBe(403)
    const body = JSON.parse(v1.body)
    expect(body.error.message).toBe(api.error.message)
    expect(body.error.message).toContain('127.0.0.1')
    expect(body.error).toMatchObject({ type: 'permission_error', code: 'host_forbidden' })
  })
})
