import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../test/__fixtures__/build.js'

const dist = join(import.meta.dirname, '..', 'dist')

beforeAll(() => ensureBuilt(), 120_000)

describe('entry points', () => {
  it('the root entry imports neither the native driver, kysely, nor vitest', async () => {
    const code = await readFile(join(dist, 'index.js'), 'utf8')
    for (const forbidden of ['better-sqlite3', 'kysely', 'vitest'])
      expect(code).not.toMatch(new RegExp(`from ['"]${forbidden}['"]`))
  })

  it('the sqlite entry takes a Kysely handle and never loads better-sqlite3 itself', async () => {
    const code = await readFile(join(dist, 'sqlite.js'), 'utf8')
    expect(code).not.toMatch(/from ['"]better-sqlite3['"]/)
  })

  it('has named exports only', async () => {
    for (const entry of ['index.js', 'sqlite.js', 'testing.js']) {
      expect(await readFile(join(dist, entry), 'utf8')).not.toMatch(/export default/)
    }
  })
})
