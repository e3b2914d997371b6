import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const dist = fileURLToPath(new URL('../dist/', import.meta.url))

describe('root entry stays light', () => {
  it.runIf(existsSync(`${dist}index.js`))('never loads node-pty (only @lango/exec/pty does)', () => {
    const seen = new Set<string>()
    const visit = (file: string) => {
      if (seen.has(file)) return
      seen.add(file)
      const source = readFileSync(`${dist}${file}`, 'utf8')
      expect(source).not.toMatch(/node-pty/)
      for (const match of source.matchAll(/from\s*["']\.\/([^"']+)["']/g)) visit(match[1] as string)
    }
    visit('index.js')
    expect(seen.size).toBeGreaterThan(0)
  })
})
