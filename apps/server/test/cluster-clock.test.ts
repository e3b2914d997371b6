/**
 * Issue 21 (1): servers on PostgreSQL crashed at start, or after the once-a-minute resync logged
 * hundreds of failed heartbeats and lease renewals, because the cluster clock's offset carried half
 * a round trip's fraction and `1795734821400.5` is not a BIGINT. Two servers here run on a fresh
 * PostgreSQL database with local clocks that are off by odd, fractional amounts (and so measure odd
 * round trips): they start, resync, beat, hold leases, fire a cron job and run a workflow without
 * one failed write; and the server's one database handle stores whole numbers whatever it is given.
 */
import { rm } from 'node:fs/promises'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { createApp } from '../src/app/create-app.js'
import { serve } from '../src/serve.js'
import { recordingLogger } from './fixtures/fake-chat-apis.js'
import { testConfig, until } from './fixtures/http-server.js'

const ADMIN = { host: '127.0.0.1', port: 5432, database: 'test', user: process.env.PGUSER ?? 'postgres' }

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

const reachable = await (async () => {
  const client = new pg.Client({ ...ADMIN, connectionTimeoutMillis: 2_000 })
  try {
    await client.connect()
    await client.end()
    return true
  } catch {
    return false
  }
})()

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
})

async function admin(statement: string): Promise<void> {
  const client = new pg.Client(ADMIN)
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

async function freshDatabase(): Promise<string> {
  const name = `lango_clock_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  await admin(`create database ${name}`)
  cleanups.push(() => admin(`drop database if exists ${name} with (force)`))
  return `postgres://${ADMIN.user}@${ADMIN.host}:${ADMIN.port}/${name}`
}

/**
 * A local clock `skewMs` off the real time, with sub-millisecond resolution, that moves a further
 * odd fraction of a millisecond at every read: every round trip it measures is an odd number.
 */
function oddClock(skewMs: number): () => number {
  let reads = 0
  return () => performance.timeOrigin + performance.now() + skewMs + (reads++ % 2) * 0.37
}

describe.skipIf(!reachable)('the cluster clock with odd offsets and round trips (PostgreSQL)', () => {
  it('two servers start, resync, beat, hold leases, fire a cron job and run a workflow', async () => {
    const url = await freshDatabase()
    const servers = []
    for (const skew of [1_234.567, -987.321]) {
      const logger = recordingLogger()
      const { home, config } = await testConfig(
        (loaded) => ({
          ...loaded,
          cluster: { ...loaded.cluster, leaseMs: 3_000 },
          cron: { ...loaded.cron, minIntervalMs: 1_000 },
        }),
        { LANGO_DATABASE_URL: url },
      )
      const running = await serve({
        config,
        logger,
        passphrase: '',
        closeGraceMs: 200,
        localNow: oddClock(skew),
      })
      cleanups.push(async () => {
        await running.close()
        await rm(home, { recursive: true, force: true })
      })
      servers.push({ ...running, logger })
    }
    const [first, second] = servers as [(typeof servers)[0], (typeof servers)[0]]
    const api = async (path: string, body?: unknown): Promise<Json> => {
      const response = await fetch(`${first.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        ...(body === undefined
          ? {}
          : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      })
      return (await response.json()) as Json
    }

    // The once-a-minute resync, now, a few times on each: every time it gives is still whole.
    for (const server of servers)
      for (let round = 0; round < 3; round++) {
        const reading = await server.app.clock.measure()
        expect(Number.isInteger(reading.offset_ms)).toBe(true)
        expect(Number.isInteger(server.app.clock.nowMs())).toBe(true)
      }

    const created = await api('/api/cron/jobs', {
      kind: 'shell',
      name: 'odd-clock',
      schedule_type: 'every',
      schedule: '1s',
      command: 'echo tick',
    })
    expect(created).not.toHaveProperty('error')
    await until(
      async () => {
        const { entries } = await api('/api/cron/runs?job=odd-clock&limit=10')
        return entries.filter((entry: Json) => entry.status === 'completed').length >= 3 ? true : undefined
      },
      30_000,
      'three completed runs',
    )
    const started = await api('/api/workflows/runs', {
      yaml_content: ['name: odd', 'steps:', '  - id: a', '    run: "echo one"'].join('\n'),
    })
    await until(
      async () =>
        (await api(`/api/workflows/runs/${started.run_id}`)).status === 'completed' ? true : undefined,
      20_000,
      'the workflow run',
    )

    // Heartbeats and lease renewals go on: wait until each server has beaten twice more and the
    // retention lease was renewed twice more, then look.
    const beats = new Map<string, Set<string>>()
    const renewals = new Set<string>()
    await until(
      async () => {
        for (const instance of (await api('/api/instances')).instances as Json[]) {
          const seen = beats.get(instance.id) ?? new Set<string>()
          seen.add(String(instance.heartbeat_at))
          beats.set(instance.id, seen)
        }
        for (const lease of [...first.app.duties.held(), ...second.app.duties.held()])
          if (lease.name === 'retention') renewals.add(lease.expires_at)
        return beats.size === 2 && [...beats.values()].every((seen) => seen.size >= 3) && renewals.size >= 3
          ? true
          : undefined
      },
      30_000,
      'two more heartbeats on each server and two more renewals',
    )
    const { instances } = await api('/api/instances')
    expect(instances).toHaveLength(2)
    expect(instances.every((instance: Json) => instance.alive)).toBe(true)
    const held = [...first.app.duties.held(), ...second.app.duties.held()].map((lease) => lease.name)
    expect(held).toContain('retention')
    for (const server of servers) {
      // The skew itself is worth a warning (it is over a tenth of the lease); nothing else is.
      const failures = server.logger.entries.filter(
        (entry) =>
          (entry.level === 'warn' || entry.level === 'error') && !entry.message.includes('clock is off'),
      )
      expect(failures.map((entry) => entry.message)).toEqual([])
    }
  })

  it("the server's database handle stores whole numbers, whatever it is given", async () => {
    const url = await freshDatabase()
    const { home, config } = await testConfig((loaded) => loaded, { LANGO_DATABASE_URL: url })
    const app = await createApp(config, recordingLogger(), { passphrase: '' })
    cleanups.push(async () => {
      await app.stop()
      await rm(home, { recursive: true, force: true })
    })
    await app.database.db
      .insertInto('leases')
      .values({
        name: 'fraction',
        owner: 'test',
        version: 1,
        acquired_at: 1.4,
        expires_at: 1_795_734_821_400.5,
      })
      .execute()
    const row = await app.database.db
      .selectFrom('leases')
      .select(['acquired_at', 'expires_at'])
      .where('name', '=', 'fraction')
      .where('expires_at', '>', 1_795_734_821_399.6)
      .executeTakeFirstOrThrow()
    expect([Number(row.acquired_at), Number(row.expires_at)]).toEqual([1, 1_795_734_821_401])
  })
})
