import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './readme.js'

// Issue 22, item 6: docs/architecture.md walks a reader through the files; this keeps the walk
// true. The two forms it reads are documented at the top of that page:
//   `apps/server/src/serve.ts`            a path from the repository root (a directory ends in /)
//   `path/file.ts` (`name`, `Class.method`)  names that file declares

/** Backticked text that is a repository path: it starts with one of the repository's top folders. */
const REPOSITORY_PATH = /^(?:apps|packages|tooling|docs|examples)\//

/** A segment of a path pattern for a new file: `<page>.js`, `NNNN-title.md`, `…`, `*`. */
const PLACEHOLDER = /[<>*…]|NNNN/

/** A path in backticks, whitespace, then parentheses holding only backticked names. */
const SYMBOL_CLAIM = /`([^`\s]+)`\s+\(\s*((?:`[^`\n]+`\s*,\s*)*`[^`\n]+`)\s*\)/g

/** The page's prose: fenced blocks and ``double-backtick`` spans (which show the format) removed. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/``[\s\S]*?``/g, '')
}

/** Every repository path written in backticks, once each. */
function repositoryPaths(markdown: string): string[] {
  const spans = [...prose(markdown).matchAll(/`([^`\n]+)`/g)].map((match) => match[1] ?? '')
  return [...new Set(spans.filter((span) => REPOSITORY_PATH.test(span)))]
}

/** Every `path` (`name`, …) claim: the file and the names it should declare. */
function symbolClaims(markdown: string): { path: string; names: string[] }[] {
  return [...prose(markdown).matchAll(SYMBOL_CLAIM)]
    .filter((match) => REPOSITORY_PATH.test(match[1] ?? ''))
    .map((match) => ({
      path: match[1] ?? '',
      names: [...(match[2] ?? '').matchAll(/`([^`]+)`/g)].map((name) => name[1] ?? ''),
    }))
}

/** Why `path` does not exist as written, or undefined when it does. */
function missingPath(path: string, root: string): string | undefined {
  const segments = path.split('/')
  const placeholder = segments.findIndex((segment) => PLACEHOLDER.test(segment))
  // A pattern: the directory before its first placeholder must exist.
  if (placeholder !== -1) {
    const directory = segments.slice(0, placeholder).join('/')
    return existsSync(join(root, directory)) && statSync(join(root, directory)).isDirectory()
      ? undefined
      : `${path}: no directory ${directory}/`
  }
  const full = join(root, path.replace(/\/$/, ''))
  if (!existsSync(full)) return `${path}: no such file or directory`
  if (path.endsWith('/') && !statSync(full).isDirectory()) return `${path}: not a directory`
  return undefined
}

/** True when `source` declares `part`: a function, class, type, constant or variable, or a method. */
function declares(source: string, part: string): boolean {
  const name = part.replace(/[$.*+?^(){}[\]|\\]/g, '\\$&')
  const declaration = new RegExp(
    `\\b(?:function\\*?|class|interface|type|const|let|var|enum|namespace)\\s+${name}(?![\\w$])`,
  )
  const member = new RegExp(
    `^\\s*(?:(?:export|public|private|protected|static|async|readonly|override|abstract|get|set)\\s+)*${name}\\s*(?:<[^>\\n]*>)?\\s*\\(`,
    'm',
  )
  return declaration.test(source) || member.test(source)
}

/** Every problem with the page's paths and symbol claims, one line each. */
function problems(markdown: string, root: string): string[] {
  const found: string[] = []
  for (const path of repositoryPaths(markdown)) {
    const missing = missingPath(path, root)
    if (missing !== undefined) found.push(missing)
  }
  for (const { path, names } of symbolClaims(markdown)) {
    const full = join(root, path)
    if (!existsSync(full) || statSync(full).isDirectory()) continue // reported above
    const source = readFileSync(full, 'utf8')
    for (const name of names) {
      const absent = name.split('.').filter((part) => !declares(source, part))
      if (absent.length > 0) found.push(`${path}: declares no ${absent.join(', ')} (of \`${name}\`)`)
    }
  }
  return found
}

describe('docs/architecture.md', () => {
  const markdown = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8')

  it('names repository paths that exist', () => {
    const paths = repositoryPaths(markdown)
    expect(paths).toContain('apps/server/src/app/create-app.ts')
    expect(paths).toContain('packages/cron/src/service.ts')
    expect(paths.filter((path) => missingPath(path, ROOT) !== undefined)).toEqual([])
  })

  it('names functions, classes and methods that its files declare', () => {
    const claims = symbolClaims(markdown)
    expect(claims).toContainEqual({ path: 'packages/tools/src/invoke.ts', names: ['invokeTool', 'askGate'] })
    expect(claims.length).toBeGreaterThan(50)
    expect(problems(markdown, ROOT)).toEqual([])
  })

  it('reports a wrong path, a wrong directory and a symbol a file does not declare', () => {
    const wrong = [
      'See `apps/server/src/app/create-ap.ts` and `apps/server/src/serve.ts/`.',
      'A new page: `apps/server/src/uix/assets/<page>.js`.',
      '`packages/cron/src/service.ts` (`CronService.add`, `CronService.fire`, `noSuchFunction`)',
    ].join('\n')
    expect(problems(wrong, ROOT)).toEqual([
      'apps/server/src/app/create-ap.ts: no such file or directory',
      'apps/server/src/serve.ts/: not a directory',
      'apps/server/src/uix/assets/<page>.js: no directory apps/server/src/uix/assets/',
      'packages/cron/src/service.ts: declares no fire (of `CronService.fire`)',
      'packages/cron/src/service.ts: declares no noSuchFunction (of `noSuchFunction`)',
    ])
  })
})
