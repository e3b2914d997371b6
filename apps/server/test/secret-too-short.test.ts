/**
 * A server secret shorter than exec's masking minimum (8 characters) cannot be masked without
 * revealing it, so commands that print it show it in clear: the server says so at start, by the
 * setting's name, never its value (issue 21; an outside probe found a 7-character API token and
 * database password unmasked, with nothing logged).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { createApp } from '../src/app/create-app.js'
import { loadConfig } from '../src/config/load.js'
import { createLogger } from '../src/logger.js'
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
  expect(warned.map((entry) => entry.fields.setting).sort()).toEqual([
    'channels.telegram.token',
    'server.api_token',
  ])
  expect(warned[0]?.fields).toMatchObject({ minLength: 8 })
  expect(logger.dump()).not.toContain('Xq7#Lm2')
  expect(logger.dump()).not.toContain('12:abc')
})

it('names the setting in the JSON log line (the logger redacts fields named like secrets), and a short webhook path is no warning', async () => {
  home = await mkdtemp(join(tmpdir(), 'lango-short-secret-'))
  const config = await loadConfig({
    env: {
      LANGO_HOME: join(home, '.lango'),
      LANGO_API_TOKEN: 'Xq7#Lm2',
      LANGO_WEBHOOK_URL: 'http://127.0.0.1:9/hook',
    },
    home,
    cwd: home,
  })
  const file = join(home, 'log.jsonl')
  const app = await createApp(config, createLogger({ level: 'warn', destination: file }))
  await app.stop()
  const lines = (await readFile(file, 'utf8'))
    .split('\n')
    .filter((line) => line.includes('secret too short to mask'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
  expect(lines.map((line) => line.setting)).toEqual(['server.api_token'])
})
