/**
 * SQLite takes a missing or empty file for a new database, so a `lango.db` that went missing or was
 * truncated (a failed copy, a full disk) would start an empty server without a word: the server says
 * which it is at start. Real servers on real files in a temp home.
 */

import { existsSync } from 'node:fs'
import { chmod, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { type RunningServer, serve } from '../src/serve.js'
import { recordingLogger } from './fixtures/fake-chat-apis.js'
import { testConfig } from './fixtures/http-server.js'

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function start(prepare?: (path: string) => Promise<void>) {
  const made = await testConfig()
  cleanups.push(() => rm(made.home, { recursive: true, force: true }))
  const path = made.config.database.url
  await prepare?.(path)
  const run = async () => {
    const logger = recordingLogger()
    const server: RunningServer = await serve({
      config: made.config,
      logger,
      passphrase: '',
      closeGraceMs: 200,
    })
    await server.close()
    return logger.entries.filter((entry) => /database file/.test(entry.message))
  }
  return { path, run }
}

describe('the database file at start', () => {
  it('a missing file: says a new one is created (info); an existing one: says nothing', async () => {
    const { path, run } = await start()
    expect(await run()).toEqual([
      { level: 'info', message: 'no database file yet: a new one is created', fields: { database: path } },
    ])
    expect(await run()).toEqual([])
  })

  it('an empty file (0 bytes): warns that a new database is started there, and how to put a backup back', async () => {
    const { path, run } = await start((file) => writeFile(file, '', { mode: 0o600 }))
    const said = await run()
    expect(said).toMatchObject([{ level: 'warn', fields: { database: path } }])
    expect(said[0]?.message).toBe(
      'the database file is empty (0 bytes): starting with a new database. If it held your jobs, stop the server and put a backup back in its place (see lango backup)',
    )
    expect(await run()).toEqual([])
  })

  it('a new file is readable by the server’s user only, whatever the home’s mode; one others may read is warned about', async () => {
    const { path, run } = await start(async (file) => chmod(join(file, '..'), 0o755))
    await run()
    for (const file of [path, `${path}-wal`, `${path}-shm`].filter((each) => existsSync(each)))
      expect((await stat(file)).mode & 0o777, file).toBe(0o600)
    expect(await run()).toEqual([])
    await chmod(path, 0o644)
    expect(await run()).toEqual([
      {
        level: 'warn',
        message: 'the database file is readable by other users: make it readable by the server’s user only',
        fields: { database: path, hint: `chmod 600 ${path}` },
      },
    ])
  })
})
