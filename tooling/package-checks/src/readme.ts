import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository root. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')

/** A published package of the workspace: its directory, name and parsed package.json. */
export interface WorkspacePackage {
  readonly directory: string
  readonly name: string
  readonly manifest: {
    readonly name: string
    readonly exports?: Record<string, string | { readonly types?: string; readonly default?: string }>
  }
  readonly readme: string
}

/** Every package under `packages/`, in name order. */
export function publishedPackages(): WorkspacePackage[] {
  const base = join(ROOT, 'packages')
  return readdirSync(base)
    .sort()
    .map((entry) => {
      const directory = join(base, entry)
      const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8'))
      return {
        directory,
        name: manifest.name,
        manifest,
        readme: readFileSync(join(directory, 'README.md'), 'utf8'),
      }
    })
}

/** The JavaScript entry points of a package: `@lango/x` and `@lango/x/sub` → declaration file. */
export function entryPoints(pkg: WorkspacePackage): Map<string, string> {
  const entries = new Map<string, string>()
  for (const [key, target] of Object.entries(pkg.manifest.exports ?? {})) {
    if (typeof target === 'string' || target.types === undefined) continue
    const specifier = key === '.' ? pkg.name : `${pkg.name}/${key.replace(/^\.\//, '')}`
    entries.set(specifier, join(pkg.directory, target.types))
  }
  return entries
}

/** The body of a `## heading` section (up to the next `## `), or undefined. */
export function section(markdown: string, heading: string): string | undefined {
  const lines = markdown.split('\n')
  const start = lines.findIndex((line) => line.trim() === `## ${heading}`)
  if (start < 0) return undefined
  const end = lines.findIndex((line, index) => index > start && /^## /.test(line))
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n')
}

/**
 * The `### \`<entry>\`` subsections of an `## Exports` section, each with the names it documents:
 * the backticked names in the first cell of each table row, and the leading backticked names of
 * each list item (`- \`A\`, \`B\`: …`). A call form names its function (`\`run(command, options)\``
 * → `run`). Backticked words elsewhere (descriptions) are prose, not names.
 */
export function documentedExports(exportsSection: string): Map<string, Set<string>> {
  const documented = new Map<string, Set<string>>()
  let current: Set<string> | undefined
  const withoutCode = exportsSection.replace(/```[\s\S]*?```/g, '')
  for (const line of withoutCode.split('\n')) {
    const heading = /^###\s+`([^`]+)`/.exec(line)
    if (heading?.[1] !== undefined) {
      current = new Set()
      documented.set(heading[1], current)
      continue
    }
    if (current === undefined) continue
    const cell = /^\s*\|([^|]*)\|/.exec(line)?.[1]
    const item = /^\s*[-*]\s+((?:`[^`]+`[\s,]*)+)/.exec(line)?.[1]
    for (const match of (cell ?? item ?? '').matchAll(/`([^`\n]+)`/g)) {
      const name = /^([A-Za-z_$][\w$]*)(?:\(.*\)|<.*>)?$/.exec(match[1] ?? '')?.[1]
      if (name !== undefined) current.add(name)
    }
  }
  return documented
}

/** One fenced code block of a README. */
export interface CodeBlock {
  /** `ts`, `js` … as written after the fence. */
  readonly language: string
  readonly code: string
  /** 1-based line of the opening fence. */
  readonly line: number
}

/** Every fenced code block of a markdown text. */
export function codeBlocks(markdown: string): CodeBlock[] {
  const blocks: CodeBlock[] = []
  const lines = markdown.split('\n')
  for (let index = 0; index < lines.length; index++) {
    const open = /^(\s*)```(\w*)/.exec(lines[index] as string)
    if (open === null) continue
    const start = index
    const body: string[] = []
    for (index++; index < lines.length && !/^\s*```\s*$/.test(lines[index] as string); index++) {
      body.push(lines[index] as string)
    }
    blocks.push({ language: open[2] ?? '', code: `${body.join('\n')}\n`, line: start + 1 })
  }
  return blocks
}
