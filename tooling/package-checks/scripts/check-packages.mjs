// Checks each published package (every workspace package that is not private: packages/*,
// apps/server, tooling/better-sqlite3) as npm would ship it: `pnpm pack`, then publint on the
// package and attw (`--profile esm-only`) on the tarball; then knip over the workspace (unused
// files, exports and dependencies). Needs a build first and `pnpm` on PATH. Exits non-zero on any
// finding. `pnpm release` runs it before the packed-install check (docs/releasing.md).
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const bin = (name) => join(root, 'node_modules/.bin', name)
const packs = mkdtempSync(join(tmpdir(), 'lango-packs-'))
const failures = []

/** Every workspace package that is published (not `private`), as `group/name`, in name order. */
function publishedDirectories() {
  return ['packages', 'apps', 'tooling'].flatMap((group) =>
    readdirSync(join(root, group))
      .sort()
      .map((name) => `${group}/${name}`)
      .filter((name) => {
        const manifest = join(root, name, 'package.json')
        return existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).private !== true
      }),
  )
}

function step(label, command, args, options = {}) {
  process.stdout.write(`\n▶ ${label}\n`)
  try {
    execFileSync(command, args, { stdio: 'inherit', cwd: root, ...options })
  } catch {
    failures.push(label)
  }
}

try {
  for (const name of publishedDirectories()) {
    const directory = join(root, name)
    step(`publint ${name}`, bin('publint'), ['--strict', directory])
    const destination = join(packs, name.replaceAll('/', '-'))
    execFileSync('pnpm', ['pack', '--pack-destination', destination], { cwd: directory, stdio: 'ignore' })
    const [tarball] = readdirSync(destination)
    // Plain-file exports (`./package.json`, `./TOOL_USAGE.md`) are not modules: attw would call
    // them unresolvable.
    const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8'))
    const files = Object.entries(manifest.exports ?? {})
      .filter(([, target]) => typeof target === 'string')
      .map(([key]) => key)
    const exclude = files.length > 0 ? ['--exclude-entrypoints', ...files] : []
    step(`attw ${name}`, bin('attw'), [join(destination, tarball), '--profile', 'esm-only', ...exclude])
  }
  step('knip', bin('knip'), [])
} finally {
  rmSync(packs, { recursive: true, force: true })
}

if (failures.length > 0) {
  console.error(`\n✗ package checks failed: ${failures.join(', ')}`)
  process.exit(1)
}
console.log('\n✓ package checks passed')
