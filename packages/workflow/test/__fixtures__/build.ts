import { execFileSync } from 'node:child_process'
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..', '..')
const lock = join(root, 'node_modules', '.workflow-test-build.lock')

function newest(directory: string): number {
  let latest = 0
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name)
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs)
  }
  return latest
}

function fresh(): boolean {
  try {
    const built = Math.min(
      ...['index.js', 'sqlite.js', 'testing.js', 'testing-vitest.js'].map(
        (entry) => statSync(join(root, 'dist', entry)).mtimeMs,
      ),
    )
    return built >= newest(join(root, 'src'))
  } catch {
    return false
  }
}

/**
 * Tests that spawn plain Node processes or read dist/ use the built package. CI builds first
 * (`turbo run build`); run alone after editing src/, this rebuilds so they never test stale output.
 * A lock directory keeps test files in parallel workers from building at the same time.
 */
export function ensureBuilt(): void {
  const deadline = Date.now() + 120_000
  while (!fresh()) {
    try {
      mkdirSync(lock)
    } catch {
      if (Date.now() > deadline) throw new Error('timed out waiting for another worker to build dist/')
      execFileSync('sleep', ['0.2'])
      continue
    }
    try {
      if (!fresh()) {
        execFileSync(process.execPath, [join(root, 'node_modules', 'tsup', 'dist', 'cli-default.js')], {
          cwd: root,
          stdio: 'ignore',
        })
      }
    } finally {
      rmSync(lock, { recursive: true, force: true })
    }
  }
}
