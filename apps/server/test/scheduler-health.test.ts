import { rm } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { silentLogger } from '../src/logger.js'
import { type RunningServer, serve } from '../src/serve.js'
import { testConfig, until } from './fixtures/http-server.js'

// `GET /healthz` reports the scheduler's last tick and answers 503 while it is stale (issue 23).
// The server's clock is injected (`localNow`): moving it forward with no timer firing is what a
// frozen event loop or a stalled timer looks like to the scheduler.

const LEASE_MS = 3_000
let skewMs = 0
let server: RunningServer
let home: string

beforeAll(async () => {
  const made = await testConfig((loaded) => ({
    ...loaded,
    cluster: { ...loaded.cluster, leaseMs: LEASE_MS },
  }))
  home = made.home
  server = await serve({
    config: made.config,
    logger: silentLogger,
    passphrase: '',
    closeGraceMs: 200,
    localNow: () => Date.now() + skewMs,
  })
})
afterAll(async () => {
  await server?.close()
  if (home !== undefined) await rm(home, { recursive: true, force: true })
})

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

async function health(): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${server.url}/healthz`)
  return { status: response.status, body: (await response.json()) as Json }
}

describe('GET /healthz and the scheduler tick', () => {
  it('reports the last tick, goes 503 stalled while the scheduler does not tick, and 200 again once it does', async () => {
    const healthy = await until(async () => {
      const answer = await health()
      return answer.status === 200 && answer.body.scheduler_tick.last_tick_at !== null ? answer : undefined
    })
    expect(healthy.body).toMatchObject({
      status: 'ok',
      database: 'ok',
      scheduler: 'running',
      scheduler_tick: { last_tick_at: expect.any(String), stale: false, stale_after_ms: LEASE_MS },
    })

    // A minute passes on the clock while no timer of the scheduler fires. Its timers keep their
    // own pace, so a tick may land between the jump and the answer: jump again until one does not.
    const stalled = await until(async () => {
      skewMs += 60_000
      const answer = await health()
      return answer.status === 503 ? answer : undefined
    })
    expect(stalled.body).toMatchObject({
      status: 'stalled',
      database: 'ok',
      scheduler: 'running',
      scheduler_tick: { last_tick_at: expect.any(String), stale: true, stale_after_ms: LEASE_MS },
      version: expect.any(String),
      instance: server.app.instances.id,
    })
    const behind = Date.now() + skewMs - Date.parse(stalled.body.scheduler_tick.last_tick_at)
    expect(behind).toBeGreaterThan(LEASE_MS)

    // The scheduler's next tick reads the clock as it now is: healthy again.
    const recovered = await until(async () => {
      const answer = await health()
      return answer.status === 200 ? answer : undefined
    })
    expect(recovered.body).toMatchObject({ status: 'ok', scheduler_tick: { stale: false } })
    expect(Date.parse(recovered.body.scheduler_tick.last_tick_at)).toBeGreaterThan(
      Date.parse(stalled.body.scheduler_tick.last_tick_at),
    )
  })
})
