/**
 * The usage ledger (`agent_usage`) is bounded by time: rows older than `agent.usage_max_age` are
 * deleted by the retention duty, at start and hourly. Real SQLite in a temp dir.
 */
import { rm } from 'node:fs/promises'
import type { Kysely } from 'kysely'
import { describe, expect, it } from 'vitest'
import { createApp } from '../src/app/create-app.js'
import { silentLogger } from '../src/logger.js'
import { type UsageDatabase, UsageLedger } from '../src/usage/usage-ledger.js'
import { testConfig, until } from './fixtures/http-server.js'

const DAY = 86_400_000

function row(id: string, at: number) {
  return {
    id,
    at,
    day: new Date(at).toISOString().slice(0, 10),
    purpose: 'cron',
    source: 'cron:nightly',
    run_id: null,
    step_id: null,
    creator: null,
    session_key: null,
    model: 'test-model',
    input_tokens: 10,
    output_tokens: 5,
    cost_nano_usd: null,
    ok: 1,
    budget_exhausted: 0,
  }
}

describe('agent usage retention', () => {
  it('prune() deletes the turns older than the window and keeps the rest (injected clock)', async () => {
    const { home, config } = await testConfig()
    const app = await createApp(config, silentLogger, { passphrase: '' })
    try {
      const db = app.database.db as unknown as Kysely<UsageDatabase>
      let now = Date.UTC(2026, 10, 1)
      const ledger = new UsageLedger(db, { logger: silentLogger, now: () => new Date(now) })
      ledger.record({
        purpose: 'chat',
        sessionKey: 'http:ops',
        model: 'test-model',
        usage: { inputTokens: 3, outputTokens: 4 },
        ok: true,
      } as Parameters<UsageLedger['record']>[0])
      await ledger.flush()
      now += 3 * DAY
      await db
        .insertInto('agent_usage')
        .values(row('recent', now - DAY))
        .execute()
      expect(await ledger.prune(2 * DAY)).toBe(1)
      const left = await db.selectFrom('agent_usage').select('id').execute()
      expect(left.map((entry) => entry.id)).toEqual(['recent'])
    } finally {
      await app.stop()
      await rm(home, { recursive: true, force: true })
    }
  })

  it('the retention duty prunes with agent.usage_max_age when the server starts', async () => {
    const { home, config } = await testConfig((loaded) => ({
      ...loaded,
      agent: { ...loaded.agent, usageMaxAgeMs: 7 * DAY },
    }))
    const app = await createApp(config, silentLogger, { passphrase: '' })
    try {
      const db = app.database.db as unknown as Kysely<UsageDatabase>
      const now = Date.now()
      await db
        .insertInto('agent_usage')
        .values([row('old', now - 8 * DAY), row('kept', now - 6 * DAY)])
        .execute()
      await app.start()
      await until(async () => {
        const ids = (await db.selectFrom('agent_usage').select('id').execute()).map((entry) => entry.id)
        return ids.length === 1 && ids[0] === 'kept' ? true : undefined
      })
    } finally {
      await app.stop()
      await rm(home, { recursive: true, force: true })
    }
  })
})
