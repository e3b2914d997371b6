import { existsSync } from 'node:fs'
import { readdir, readFile, rm } from 'node:fs/promises'
import type { Server } from 'node:http'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { createAdaptorServer } from '@hono/node-server'
import { waitFor } from '@lango/vitest-config/wait-for'
import { EventSource } from 'eventsource'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createApp } from '../src/app/create-app.js'
import { ServerError } from '../src/errors.js'
import { createHttpApp, type HttpAppOptions } from '../src/http/app.js'
import { silentLogger } from '../src/logger.js'
import { installShutdown, serve } from '../src/serve.js'
import { closedPort } from './fixtures/closed-port.js'
import { recordingLogger } from './fixtures/fake-chat-apis.js'
import {
  openEvents,
  startTestServer,
  type TestServer,
  testConfig,
  until,
  within,
} from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

const TOKEN = 'test-token-0123456789abcdef'

describe('a server with an API token, a small body limit and short approvals', () => {
  let server: TestServer
  const auth = { authorization: `Bearer ${TOKEN}` }

  beforeAll(async () => {
    server = await startTestServer(
      (config) => ({
        ...config,
        server: { ...config.server, bodyLimitBytes: 2048 },
        approvals: { ...config.approvals, timeoutMs: 300 },
      }),
      { LANGO_API_TOKEN: TOKEN },
    )
  })
  afterAll(async () => {
    await server?.dispose()
  })

  it('requires the token everywhere but /healthz, and keeps serving after refusals', async () => {
    expect((await server.request('/healthz')).status).toBe(200)

    const missing = await server.request('/api/tools')
    expect(missing.status).toBe(401)
    expect(missing.headers.get('www-authenticate')).toContain('Bearer')
    expect(await missing.json()).toEqual({ error: { code: 'AUTH_REQUIRED', message: expect.any(String) } })

    for (const header of [`Bearer ${TOKEN}x`, 'Bearer wrong', `Basic ${TOKEN}`, TOKEN]) {
      const wrong = await server.request('/api/tools', { headers: { authorization: header } })
      expect(wrong.status).toBe(401)
      const body = (await wrong.json()) as Json
      expect(body.error.code).toBe('AUTH_INVALID')
      expect(JSON.stringify(body)).not.toContain(TOKEN)
    }
    const call = await server.request('/api/tools/cron_list', {
      method: 'POST',
      headers: { authorization: 'Bearer nope' },
    })
    expect(call.status).toBe(401)
    const events = await server.request('/api/events')
    expect(events.status).toBe(401)

    expect((await server.request('/api/tools', { headers: auth })).status).toBe(200)
  })

  it('answers 413 for bodies over the limit, with or without a length, and keeps serving', async () => {
    const big = JSON.stringify({ command: `echo ${'x'.repeat(4096)}` })
    const sized = await server.request('/api/tools/exec', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: big,
    })
    expect(sized.status).toBe(413)
    expect(((await sized.json()) as Json).error.code).toBe('BODY_TOO_LARGE')

    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let index = 0; index < 8; index += 1)
          controller.enqueue(new TextEncoder().encode('x'.repeat(512)))
        controller.close()
      },
    })
    const streamed = await server.request('/api/tools/exec', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: chunks,
      duplex: 'half',
    } as RequestInit)
    expect(streamed.status).toBe(413)
    expect(((await streamed.json()) as Json).error.code).toBe('BODY_TOO_LARGE')

    const small = await server.request('/api/tools/cron_list', { method: 'POST', headers: auth })
    expect(small.status).toBe(200)
  })

  it('/mcp answers a body over the limit 413 as JSON-RPC and keeps the connection usable; its refusals are JSON-RPC', async () => {
    const mcpHeaders = {
      ...auth,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    }
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'ping',
      params: { pad: 'x'.repeat(200_000) },
    })
    // An outside probe: 15 of 30 such calls failed with a closed socket instead of a 413.
    for (let round = 0; round < 20; round += 1) {
      const answer = await server.request('/mcp', { method: 'POST', headers: mcpHeaders, body: big })
      expect(answer.status, `round ${round}`).toBe(413)
      expect(await answer.json()).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, data: { code: 'BODY_TOO_LARGE' } },
      })
    }
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let index = 0; index < 8; index += 1)
          controller.enqueue(new TextEncoder().encode('x'.repeat(512)))
        controller.close()
      },
    })
    const streamed = await server.request('/mcp', {
      method: 'POST',
      headers: mcpHeaders,
      body: chunks,
      duplex: 'half',
    } as RequestInit)
    expect(streamed.status).toBe(413)
    const missing = await server.request('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    })
    expect(missing.status).toBe(401)
    expect(await missing.json()).toMatchObject({ jsonrpc: '2.0', error: { data: { code: 'AUTH_REQUIRED' } } })
    const ping = await server.request('/mcp', {
      method: 'POST',
      headers: mcpHeaders,
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' }),
    })
    expect(ping.status).toBe(200)
  })

  it('expires an unanswered approval: the call is denied', async () => {
    const response = await server.request('/api/tools/exec', {
      headers: auth,
      json: { command: 'echo never' },
    })
    expect(response.status).toBe(202)
    const { approval_id: id } = (await response.json()) as Json
    const view = await until(async () => {
      const current = (await (await server.request(`/api/approvals/${id}`, { headers: auth })).json()) as Json
      return current.outcome === null ? undefined : current
    })
    expect(view.status).toBe('expired')
    expect(view.outcome).toMatchObject({ ok: false, error: { code: 'TOOL_DENIED' } })
    // Answering after expiry changes nothing, and says so (409).
    const late = await server.request(`/api/approvals/${id}`, {
      headers: auth,
      json: { decision: 'approve' },
    })
    expect(late.status).toBe(409)
    expect(((await late.json()) as Json).error).toMatchObject({
      code: 'SERVER_APPROVAL_DECIDED',
      data: { status: 'expired' },
    })
  })
})

describe('a server without approvals', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer((config) => ({
      ...config,
      approvals: { ...config.approvals, policy: 'none' },
    }))
  })
  afterAll(async () => {
    await server?.dispose()
  })

  /** Pids of processes whose command line contains `marker`. */
  async function pidsRunning(marker: string): Promise<string[]> {
    const pids: string[] = []
    for (const entry of await readdir('/proc')) {
      if (!/^\d+$/.test(entry)) continue
      const cmdline = await readFile(join('/proc', entry, 'cmdline'), 'utf8').catch(() => '')
      if (cmdline.split('\0').join(' ').includes(marker)) pids.push(entry)
    }
    return pids
  }

  it('kills a running exec when its client goes away', async () => {
    const marker = `29.${process.pid}`
    const controller = new AbortController()
    const call = server
      .request('/api/tools/exec', {
        json: { command: `sleep ${marker}`, timeout: 60 },
        signal: controller.signal,
      })
      .catch((error: unknown) => error)
    await until(
      async () => ((await pidsRunning(`sleep ${marker}`)).length > 0 ? true : undefined),
      15_000,
      'sleep',
    )
    controller.abort()
    expect(await call).toBeInstanceOf(Error)
    await until(
      async () => ((await pidsRunning(`sleep ${marker}`)).length === 0 ? true : undefined),
      15_000,
      'kill',
    )
    expect((await server.request('/healthz')).status).toBe(200)
  })

  it('runs a dangerous call at once under policy none', async () => {
    const response = await server.request('/api/tools/exec', { json: { command: 'echo direct' } })
    expect(response.status).toBe(200)
    expect(((await response.json()) as Json).result).toMatchObject({ exit_code: 0, stdout: 'direct\n' })
  })
})

describe('serve()', () => {
  it('refuses a non-loopback address without a token before opening anything', async () => {
    const { home, config } = await testConfig((base) => ({
      ...base,
      server: { ...base.server, host: '0.0.0.0' },
    }))
    try {
      const error = await serve({ config, logger: silentLogger, passphrase: '' }).catch(
        (caught: unknown) => caught,
      )
      expect(error).toBeInstanceOf(ServerError)
      expect(error).toMatchObject({ code: 'SERVER_UNSAFE_BIND' })
      expect((error as Error).message).toContain('LANGO_API_TOKEN')
      expect(existsSync(config.database.url)).toBe(false)
    } finally {
      await rm(home, { recursive: true, force: true })
    }
  })

  it('names the address when it is taken, before opening the database', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as { port: number }).port
    const { home, config } = await testConfig((base) => ({ ...base, server: { ...base.server, port } }))
    try {
      const error = await serve({ config, logger: silentLogger, passphrase: '' }).catch(
        (caught: unknown) => caught,
      )
      expect(error).toMatchObject({ code: 'SERVER_LISTEN_FAILED' })
      expect((error as Error).message).toContain(`127.0.0.1:${port}`)
      expect((error as Error).message).toContain('already in use')
      // Both places a port comes from are named: the environment and the file.
      expect((error as Error).message).toContain('LANGO_PORT, or server.port in lango.yaml')
      expect(existsSync(config.database.url)).toBe(false)
    } finally {
      blocker.close()
      await rm(home, { recursive: true, force: true })
    }
  })

  it('closes the port again when the services fail to open', async () => {
    // A free port no parallel test's listen(0) can take meanwhile.
    const port = await closedPort()
    const { home, config } = await testConfig((base) => ({
      ...base,
      server: { ...base.server, port },
      database: { kind: 'postgres', url: 'postgres://127.0.0.1:1/none' },
    }))
    try {
      const error = await serve({ config, logger: silentLogger, passphrase: '' }).catch(
        (caught: unknown) => caught,
      )
      expect(error).toMatchObject({ code: 'SERVER_DATABASE_UNAVAILABLE' })
      expect((error as Error).message).toContain('postgres://127.0.0.1:1/none')
      const again = createServer()
      await new Promise<void>((resolve, reject) => {
        again.once('error', reject)
        again.listen(port, '127.0.0.1', resolve)
      })
      again.close()
    } finally {
      await rm(home, { recursive: true, force: true })
    }
  })

  it('reports the real port, ends event streams on close and stops accepting', async () => {
    const server = await startTestServer()
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      expect(server.url.endsWith(':0')).toBe(false)
      const events = await openEvents(server.url)
      expect(events.response.headers.get('content-type')).toContain('text/event-stream')
      await server.close()
      await within(events.ended, 15_000, 'the event stream to end')
      expect(server.app.ready).toBe(false)
      await expect(fetch(`${server.url}/healthz`)).rejects.toThrow()
    } finally {
      await server.dispose()
    }
  })

  it('exits 1 when closing does not end within its deadline (a database that does not answer)', async () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never)
    const before = new Set(process.listeners('SIGTERM'))
    const logger = recordingLogger()
    const uninstall = installShutdown({ close: () => new Promise<void>(() => {}) }, logger, {
      deadlineMs: 50,
    })
    try {
      const handler = process.listeners('SIGTERM').find((listener) => !before.has(listener))
      if (handler === undefined) throw new Error('no SIGTERM handler installed')
      ;(handler as (signal: NodeJS.Signals) => void)('SIGTERM')
      await until(async () => (exit.mock.calls.length > 0 ? true : undefined), 15_000, 'exit')
      expect(exit.mock.calls).toEqual([[1]])
      expect(logger.entries.map((entry) => entry.message)).toContain(
        'shutdown did not finish in time: exiting without it',
      )
    } finally {
      uninstall()
      exit.mockRestore()
    }
  })

  it('closes on SIGHUP as on SIGTERM (no reload: a log rotation or a closed terminal must not kill it mid-run)', async () => {
    const server = await startTestServer()
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never)
    const before = new Set(process.listeners('SIGHUP'))
    const logger = recordingLogger()
    const uninstall = installShutdown(server, logger)
    try {
      const handler = process.listeners('SIGHUP').find((listener) => !before.has(listener))
      if (handler === undefined) throw new Error('no SIGHUP handler installed')
      ;(handler as (signal: NodeJS.Signals) => void)('SIGHUP')
      await until(
        async () => (exit.mock.calls.some(([code]) => code === 0) ? true : undefined),
        15_000,
        'exit(0)',
      )
      expect(server.app.ready).toBe(false)
      expect(logger.entries).toContainEqual(
        expect.objectContaining({ message: 'shutting down', fields: { signal: 'SIGHUP' } }),
      )
    } finally {
      uninstall()
      exit.mockRestore()
      await server.dispose()
    }
  })

  it('closes on SIGTERM and exits at once on a second signal', async () => {
    const server = await startTestServer()
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never)
    const before = new Set(process.listeners('SIGTERM'))
    const uninstall = installShutdown(server, silentLogger)
    try {
      const handler = process.listeners('SIGTERM').find((listener) => !before.has(listener))
      if (handler === undefined) throw new Error('no SIGTERM handler installed')
      ;(handler as (signal: NodeJS.Signals) => void)('SIGTERM')
      ;(handler as (signal: NodeJS.Signals) => void)('SIGTERM')
      // 128 + 15, as a shell reports a process ended by SIGTERM (an outside probe saw 130).
      expect(exit).toHaveBeenCalledWith(143)
      await until(
        async () => (exit.mock.calls.some(([code]) => code === 0) ? true : undefined),
        15_000,
        'exit(0)',
      )
      expect(server.app.ready).toBe(false)
    } finally {
      uninstall()
      exit.mockRestore()
      await server.dispose()
    }
  })
})

/** The HTTP app of an app that is not started yet, on a free loopback port. */
async function listenHttp(options: HttpAppOptions = {}) {
  const { home, config } = await testConfig()
  const app = await createApp(config, silentLogger, { passphrase: '' })
  const listener = createAdaptorServer({ fetch: createHttpApp(app, options).fetch }) as Server
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
  return {
    app,
    url: `http://127.0.0.1:${(listener.address() as { port: number }).port}`,
    /** Closes every open connection (an event stream's too); the server goes on listening. */
    dropConnections() {
      listener.closeAllConnections()
    },
    async dispose() {
      listener.closeAllConnections()
      await new Promise((resolve) => listener.close(resolve))
      await app.stop()
      await rm(home, { recursive: true, force: true })
    },
  }
}

describe('GET /healthz around start and stop', () => {
  it('is 503 starting before start, 200 once started, 503 stopping after stop', async () => {
    const { app, url, dispose } = await listenHttp()
    try {
      const before = await fetch(`${url}/healthz`)
      expect(before.status).toBe(503)
      expect(await before.json()).toMatchObject({ status: 'starting' })
      const api = await fetch(`${url}/api/tools`)
      expect(api.status).toBe(503)
      expect(((await api.json()) as Json).error.code).toBe('SERVER_NOT_READY')

      await app.start()
      expect((await fetch(`${url}/healthz`)).status).toBe(200)

      await app.stop()
      const after = await fetch(`${url}/healthz`)
      expect(after.status).toBe(503)
      expect(await after.json()).toMatchObject({ status: 'stopping' })
    } finally {
      await dispose()
    }
  })
})

describe('GET /api/events', () => {
  it('sends heartbeats while idle', async () => {
    const { app, url, dispose } = await listenHttp({ heartbeatMs: 50 })
    const controller = new AbortController()
    try {
      await app.start()
      const response = await fetch(`${url}/api/events`, { signal: controller.signal })
      const reader = (response.body as ReadableStream<Uint8Array>)
        .pipeThrough(new TextDecoderStream())
        .getReader()
      let text = ''
      while (!text.includes(': heartbeat')) text += (await reader.read()).value ?? ''
      expect(text).toContain(': heartbeat\n\n')
    } finally {
      controller.abort()
      await dispose()
    }
  })

  it('drops a client whose queue overflows, and serves the others', async () => {
    const { app, url, dispose } = await listenHttp({ maxQueuedEvents: 5 })
    try {
      await app.start()
      const flooded = await openEvents(url)
      expect(app.events.subscriberCount).toBe(1)
      for (let index = 0; index < 50; index += 1) app.events.publish('test.flood', { index })
      await within(flooded.ended, 15_000, 'the flooded stream to end')
      expect(flooded.seen.filter((event) => event.event === 'test.flood').length).toBeLessThanOrEqual(5)
      await until(async () => (app.events.subscriberCount === 0 ? true : undefined), 15_000, 'unsubscribe')

      const next = await openEvents(url)
      app.events.publish('test.after', { ok: true })
      expect((await next.next('test.after')).data).toEqual({ ok: true })
      next.close()
      await until(
        async () => (app.events.subscriberCount === 0 ? true : undefined),
        15_000,
        'unsubscribe on disconnect',
      )
    } finally {
      await dispose()
    }
  })
})

describe('GET /api/events with many clients', () => {
  it('serves 50 streams at once without a listener-leak warning, and ends them all on shutdown', async () => {
    const shutdown = new AbortController()
    const { app, url, dispose } = await listenHttp({ signal: shutdown.signal })
    const warnings: Error[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    try {
      await app.start()
      const clients = await Promise.all(Array.from({ length: 50 }, () => openEvents(url)))
      await until(
        async () => (app.events.subscriberCount === 50 ? true : undefined),
        15_000,
        '50 subscribers',
      )
      app.events.publish('test.fanout', { n: 1 })
      for (const client of clients) expect((await client.next('test.fanout')).data).toEqual({ n: 1 })
      shutdown.abort()
      for (const client of clients) await within(client.ended, 15_000, 'every stream to end on shutdown')
      await until(
        async () => (app.events.subscriberCount === 0 ? true : undefined),
        15_000,
        'unsubscribe all',
      )
      // A warning is emitted on a later tick: let one pass before looking.
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([])
    } finally {
      process.off('warning', onWarning)
      await dispose()
    }
  })
})

// Issue 24, item 5: every event has an id; a client reconnecting with Last-Event-ID gets exactly
// what it missed while the ring still holds it, or a `reset` event saying events were lost.
describe('GET /api/events with Last-Event-ID', () => {
  /** An EventSource (the `eventsource` package: the WHATWG client) recording the events it gets. */
  function eventSource(url: string, types: readonly string[]) {
    const source = new EventSource(`${url}/api/events`)
    const received: Array<{ type: string; id: string; data: Json }> = []
    for (const type of ['ready', 'reset', ...types]) {
      source.addEventListener(type, (event) => {
        received.push({ type, id: event.lastEventId, data: JSON.parse(event.data) as Json })
      })
    }
    let errors = 0
    source.addEventListener('error', () => {
      errors += 1
    })
    return {
      source,
      received,
      errors: () => errors,
      /** Resolves with the `count`th event of `type` (1-based) once it has arrived. */
      nth(type: string, count: number) {
        return waitFor(() => received.filter((event) => event.type === type)[count - 1], {
          what: `${type} #${count}`,
        })
      },
    }
  }

  it('reconnects where it left off: exactly the missed events, in order, then live ones', async () => {
    const { app, url, dispose, dropConnections } = await listenHttp()
    let close = (): void => undefined
    try {
      await app.start()
      const client = eventSource(url, ['test.tick'])
      close = () => client.source.close()
      await client.nth('ready', 1)
      for (let index = 1; index <= 3; index += 1) app.events.publish('test.tick', { index })
      await client.nth('test.tick', 3)
      // The server drops the connection; what is published meanwhile must come on the reconnect.
      dropConnections()
      await waitFor(() => client.errors() > 0, { what: 'the client to notice the drop' })
      for (let index = 4; index <= 6; index += 1) app.events.publish('test.tick', { index })
      const ready = await client.nth('ready', 2)
      expect(ready.data).toEqual({ replayed: 3 })
      app.events.publish('test.tick', { index: 7 })
      await client.nth('test.tick', 7)

      const ticks = client.received.filter((event) => event.type === 'test.tick')
      expect(ticks.map((event) => event.data.index)).toEqual([1, 2, 3, 4, 5, 6, 7])
      // Ids: one epoch, a sequence that goes up by one; `ready` stands at the newest.
      const [epoch] = ticks[0]?.id.split('-') ?? []
      expect(ticks.map((event) => event.id)).toEqual([1, 2, 3, 4, 5, 6, 7].map((n) => `${epoch}-${n}`))
      expect(client.received.filter((event) => event.type === 'ready').map((event) => event.id)).toEqual([
        `${epoch}-0`,
        `${epoch}-6`,
      ])
      expect(client.received.some((event) => event.type === 'reset')).toBe(false)
    } finally {
      close()
      await dispose()
    }
  })

  it('sends `reset` when the missed events are older than the replay window (1000), then goes on live', async () => {
    const { app, url, dispose, dropConnections } = await listenHttp()
    let close = (): void => undefined
    try {
      await app.start()
      const client = eventSource(url, ['test.tick'])
      close = () => client.source.close()
      await client.nth('ready', 1)
      app.events.publish('test.tick', { index: 1 })
      await client.nth('test.tick', 1)
      dropConnections()
      await waitFor(() => client.errors() > 0, { what: 'the client to notice the drop' })
      for (let index = 2; index <= 1002; index += 1) app.events.publish('test.tick', { index })
      const reset = await client.nth('reset', 1)
      const [epoch] = reset.id.split('-')
      expect(reset).toEqual({
        type: 'reset',
        id: `${epoch}-1002`,
        data: { reason: 'expired', last_event_id: `${epoch}-1` },
      })
      expect((await client.nth('ready', 2)).data).toEqual({ replayed: 0 })
      app.events.publish('test.tick', { index: 1003 })
      await client.nth('test.tick', 2)
      expect(
        client.received.filter((event) => event.type === 'test.tick').map((event) => event.data.index),
      ).toEqual([1, 1003])
    } finally {
      close()
      await dispose()
    }
  })

  it('answers an id of another epoch (a restart, another instance) or none of ours with `reset`; takes ?last_event_id=', async () => {
    const { app, url, dispose } = await listenHttp()
    try {
      await app.start()
      app.events.publish('test.tick', { index: 1 })
      app.events.publish('test.tick', { index: 2 })
      const head = app.events.lastEventId
      const epoch = head.split('-')[0]
      const cases: Array<[Record<string, string>, Json]> = [
        [{ 'last-event-id': 'zzzzzzzz-1' }, { reason: 'restarted', last_event_id: 'zzzzzzzz-1' }],
        [{ 'last-event-id': `${epoch}-99` }, { reason: 'unknown', last_event_id: `${epoch}-99` }],
        [{ 'last-event-id': 'garbage' }, { reason: 'unknown', last_event_id: 'garbage' }],
      ]
      for (const [headers, data] of cases) {
        const stream = await openEvents(url, headers)
        const reset = await stream.next('reset')
        expect(reset).toEqual({ event: 'reset', id: head, data })
        await stream.next('ready')
        expect(stream.seen.map((event) => event.event)).toEqual(['reset', 'ready'])
        stream.close()
      }
      // The query parameter, for a page's first connection (EventSource cannot set the header).
      const response = await fetch(`${url}/api/events?last_event_id=${epoch}-1`)
      const reader = (response.body as ReadableStream<Uint8Array>)
        .pipeThrough(new TextDecoderStream())
        .getReader()
      let text = ''
      while (!text.includes('event: ready')) text += (await reader.read()).value ?? ''
      await reader.cancel()
      expect(text).toContain(`event: test.tick\ndata: {"index":2}\nid: ${epoch}-2\n\n`)
      expect(text).not.toContain('"index":1')
    } finally {
      await dispose()
    }
  })
})
