import { existsSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { ATTACHMENT_NAME } from '../src/channels/attachment.js'

// Issue 21, item 15: 404 bodies and the CLI sent readers to notes/server-api.md, which does not
// exist. Every document the server, the dashboard or the CLI names must be in the repository.

const DIST = fileURLToPath(new URL('../dist/', import.meta.url))
const REPOSITORY = fileURLToPath(new URL('../../../', import.meta.url))
const SERVER = fileURLToPath(new URL('../', import.meta.url))

/** `something.md` paths, and paths under `docs/` or `notes/`, as the text spells them. */
const DOC_PATH = /(?<![\w./-])(?:[\w.-]+\/)*[\w.-]+\.md\b|(?<![\w./-])(?:docs|notes)\/[\w./-]*[\w-]/g

describe('documents the server and the CLI name', () => {
  it('all exist in the repository', async () => {
    // The bundles are what the server and the CLI can say: their strings, not the comments tsup keeps.
    if (!existsSync(join(DIST, 'cli.js'))) throw new Error('build @lango/server before running this test')
    const bundles = (await readdir(DIST)).filter((name) => name.endsWith('.js'))
    const named = new Map<string, string>()
    for (const bundle of bundles) {
      const lines = (await readFile(join(DIST, bundle), 'utf8')).split('\n')
      const code = lines.filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line)).join('\n')
      for (const match of code.matchAll(DOC_PATH)) named.set(match[0], bundle)
    }
    expect(named.size).toBeGreaterThan(0)
    // The name a long result is attached under (Telegram, Slack, Discord) is a file name, not a document.
    named.delete(ATTACHMENT_NAME)
    const missing = [...named]
      .filter(([path]) => !existsSync(join(REPOSITORY, path)) && !existsSync(join(SERVER, path)))
      .map(([path, bundle]) => `${path} (in dist/${bundle})`)
    expect(missing).toEqual([])
  })

  it('a 404 names the HTTP API section of the server README, which has it', async () => {
    const readme = await readFile(join(SERVER, 'README.md'), 'utf8')
    expect(readme).toMatch(/^## HTTP API$/m)
    const bundles = await Promise.all(
      (await readdir(DIST))
        .filter((name) => name.endsWith('.js'))
        .map((name) => readFile(join(DIST, name), 'utf8')),
    )
    expect(bundles.some((text) => text.includes('see the HTTP API section of apps/server/README.md'))).toBe(
      true,
    )
  })
})
