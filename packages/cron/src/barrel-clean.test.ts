import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

// The root entry must not reach native or heavy dependencies (STYLE.md §2.2).
describe('barrel clean', () => {
  it('src/index.ts and what it imports never import better-sqlite3, kysely or vitest', async () => {
    const seen = new Set<string>()
    const pending = ['index.ts']
    while (pending.length > 0) {
      const file = pending.pop() as string
      if (seen.has(file)) continue
      seen.add(file)
      const text = await readFile(join(import.meta.dirname, file), 'utf8')
      expect(text).not.toMatch(/from '(better-sqlite3|kysely|vitest)'/)
      for (const match of text.matchAll(/from '\.\/([^']+)\.js'/g)) pending.push(`${match[1]}.ts`)
    }
    expect(seen.size).toBeGreaterThan(5)
    expect([...seen].some((file) => file.startsWith('sqlite') || file.startsWith('testing'))).toBe(false)
  })
})
