import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config/load.js'
import { configurationReference, documentedKeys, schemaKeys } from '../src/config/reference.js'

// Issue 24, item 8: docs/configuration.md is generated from the schema; a key without a note, or a
// committed file that differs from what the generator writes now, fails here. `pnpm docs:config`
// (vitest -u on this file) writes it.

const DOC = fileURLToPath(new URL('../../../docs/configuration.md', import.meta.url))
const LOAD = fileURLToPath(new URL('../src/config/load.ts', import.meta.url))
const CONTEXT = fileURLToPath(new URL('../src/cli/context.ts', import.meta.url))

/** The reference as generated from the defaults (no file, no variables, in a temp home). */
async function generated(): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), 'lango-config-doc-'))
  try {
    return configurationReference(await loadConfig({ env: { LANGO_HOME: home }, cwd: home, home }))
  } finally {
    await rm(home, { recursive: true, force: true })
  }
}

describe('docs/configuration.md', () => {
  it('has a note for every key of the schema, and no note for a key it lacks', () => {
    const keys = schemaKeys().map((entry) => entry.key)
    expect(keys).toContain('channels.telegram.api_url')
    expect(keys.length).toBeGreaterThan(60)
    expect([...documentedKeys()].sort()).toEqual([...keys].sort())
  })

  it('is what the generator writes from the schema (run `pnpm docs:config` after changing it)', async () => {
    await expect(await generated()).toMatchFileSnapshot(DOC)
  })

  it('names every variable the configuration and the CLI read', async () => {
    const doc = await readFile(DOC, 'utf8')
    const source = `${await readFile(LOAD, 'utf8')}\n${await readFile(CONTEXT, 'utf8')}`
    const variables = new Set(source.match(/\b(?:LANGO|OTEL)_[A-Z_]+\b/g) ?? [])
    expect(variables).toContain('LANGO_URL')
    expect(variables).toContain('LANGO_TELEGRAM_API_URL')
    const missing = [...variables].filter((name) => !doc.includes(`\`${name}\``))
    expect(missing).toEqual([])
  })

  it('shows the defaults as the configuration loads them', async () => {
    const text = await generated()
    expect(text).toMatch(
      /### `server\.port`\n\n.*\n\n- accepted: an integer from 0 to 65535\n- default: `7878`/,
    )
    expect(text).toMatch(/### `server\.body_limit`[\s\S]*?- default: `1MiB`/)
    expect(text).toMatch(/### `approvals\.timeout`[\s\S]*?- default: `5m`/)
  })
})
