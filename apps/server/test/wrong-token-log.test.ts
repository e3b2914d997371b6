import { rm } from 'node:fs/promises'
import { Hono } from 'hono'
import { afterEach, describe, expect, it } from 'vitest'
import { bearerGuard } from '../src/http/guards.js'
import { type RunningServer, serve } from '../src/serve.js'
import { recordingLogger } from './fixtures/fake-chat-apis.js'
import { testConfig } from './fixtures/http-server.js'

// An outside probe sent 2,400 wrong tokens and the server's log said nothing (only /metrics counted
// them). A wrong token is logged now: the first at once, then a line a minute with a count.

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const MESSAGE = 'request refused: wrong API token'

describe('a wrong API token', () => {
  it('is logged once for a flood of guesses, with where it came from, never the tokens', async () => {
    const token = 'right-token-1f2e3d4c5b6a'
    const made = await testConfig((config) => ({ ...config, server: { ...config.server, apiToken: token } }))
    const logger = recordingLogger()
    const server: RunningServer = await serve({
      config: made.config,
      logger,
      passphrase: '',
      closeGraceMs: 200,
    })
    cleanups.push(
      () => rm(made.home, { recursive: true, force: true }),
      () => server.close(),
    )
    const call = (authorization?: string) =>
      fetch(`${server.url}/api/cron/jobs`, authorization === undefined ? {} : { headers: { authorization } })
    for (let guess = 0; guess < 20; guess++)
      expect((await call(`Bearer guess-${guess}-abcdef`)).status).toBe(401)
    expect((await call(`Bearer ${token}`)).status).toBe(200)
    expect((await call()).status).toBe(401)
    const said = logger.entries.filter((entry) => entry.message === MESSAGE)
    expect(said).toEqual([
      {
        level: 'warn',
        message: MESSAGE,
        fields: {
          code: 'AUTH_INVALID',
          method: 'GET',
          path: '/api/cron/jobs',
          from: expect.stringMatching(/127\.0\.0\.1$/),
          refused: 1,
        },
      },
    ])
    const all = JSON.stringify(logger.entries)
    expect(all).not.toContain(token)
    expect(all).not.toContain('guess-')
  })

  it('after the quiet minute, says how many were refused since the last line', async () => {
    let now = 0
    const logger = recordingLogger()
    const app = new Hono()
    app.use('*', bearerGuard('right-token-1f2e3d4c5b6a', { logger, logEveryMs: 60_000, now: () => now }))
    app.get('/x', (c) => c.text('ok'))
    const wrong = () => app.request('/x', { headers: { authorization: 'Bearer nope-123456' } })
    await wrong()
    now = 30_000
    await wrong()
    await wrong()
    now = 61_000
    await wrong()
    now = 62_000
    await wrong()
    expect(
      logger.entries.filter((entry) => entry.message === MESSAGE).map((entry) => entry.fields?.refused),
    ).toEqual([1, 3])
  })
})
