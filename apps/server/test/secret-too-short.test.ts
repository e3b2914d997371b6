/**
 * A server secret shorter than exec's masking minimum (8 characters) cannot be masked without
 * revealing it, so commands that print it show it in clear: the server says so at start, by the
 * setting's name, never its value (issue 21; an outside probe found a 7-character API token and
 * database password unmasked, with nothing logged).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { createApp } from '../src/app/create-app.js'
import { loadConfig } from '../src/config/load.js'
import { recordingLogger } from './fixtures/fake-chat-apis.js'

let home: string | undefined
afterEach(async () => {
  if (home !== undefined) await rm(home, { recursive: true, force: true })
})

it('warns at start for each secret too short to mask, naming the setting, never the value', async () => {
  home = await mkdtemp(join(tmpdir(), 'lango-short-secret-'))
  const config = await loadConfig({
    env: {
      LANGO_HOME: join(home, '.lango'),
      LANGO_API_TOKEN: 'Xq7#Lm2',
      LANGO_MODEL_API_KEY: 'a-model-key-long-enough',
      LANGO_TELEGRAM_TOKEN: '12:abc',
    },
    home,
    cwd: home,
  })
  const logger = recordingLogger()
  const app = await createApp(config, logger)
  await app.stop()
  const warned = logger.entries.filter((entry) => entry.message === 'secret too short to mask')
  expect(warned.map((entry) => entry.fields.secret).sort()).toEqual([
    'channels.telegram.token',
    'server.api_token',
  ])
  expect(warned[0]?.fields).toMatchObject({ minLength: 8 })
  expect(logger.dump()).not.toContain('Xq7#Lm2')
  expect(logger.dump()).not.toContain('12:abc')
})
