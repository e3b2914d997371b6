/** Guards on the shipped source: the root entry stays free of test tooling and follows the house rules. */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const sourceDirectory = new URL('.', import.meta.url).pathname

function shippedFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) {
      return entry.name === 'testing' || entry.name === '__fixtures__'
        ? []
        : shippedFiles(join(directory, entry.name))
    }
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [join(directory, entry.name)] : []
  })
}

describe('root entry source', () => {
  const files = shippedFiles(sourceDirectory)

  it('covers the expected files', () => {
    expect(files.length).toBeGreaterThanOrEqual(10)
  })

  it.each(files.map((file) => [file.slice(sourceDirectory.length), file]))(
    '%s imports neither vitest nor the testing subpath nor another @lango package',
    (_name, file) => {
      const text = readFileSync(file, 'utf8')
      // `@lango/option-keys` is source that tsup bundles (a private devDependency, as
      // `@lango/duration` is for cron and workflow): no runtime edge to another package.
      expect(text).not.toMatch(/from '(vitest|@lango\/(?!option-keys')[^']+|\.\/testing[^']*)'/)
      expect(text).not.toMatch(/export \*|export default/)
    },
  )
})
