import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import ts from 'typescript'
import { beforeAll, describe, expect, it } from 'vitest'
import { codeBlocks, publishedPackages, ROOT } from './readme.js'

// Blocks are written inside this package so that `@lango/*`, kysely and the rest resolve
// through its node_modules, exactly as in a host project that installed them.
const BLOCKS_DIRECTORY = join(ROOT, 'tooling/package-checks/.readme-blocks')
const TYPESCRIPT = new Set(['ts', 'typescript'])
const JAVASCRIPT = new Set(['js', 'javascript', 'mjs'])

interface Example {
  readonly id: string
  readonly source: string
  readonly file: string
  readonly typescript: boolean
}

const examples: Example[] = publishedPackages().flatMap((pkg) =>
  codeBlocks(pkg.readme)
    .filter((block) => TYPESCRIPT.has(block.language) || JAVASCRIPT.has(block.language))
    .map((block) => {
      const typescript = TYPESCRIPT.has(block.language)
      const base = `${pkg.name.replace('@lango/', '')}-line-${block.line}`
      return {
        id: `${relative(ROOT, pkg.directory)}/README.md:${block.line}`,
        source: block.code,
        file: join(BLOCKS_DIRECTORY, `${base}.${typescript ? 'mts' : 'mjs'}`),
        typescript,
      }
    }),
)

// The options a host on `module: nodenext` with every strict flag would use. Type erasure only
// (target ESNext): what Node's type stripping or a bundler does, so a block that needs syntax
// Node 20 lacks (`await using`) fails here as it would for the user.
const COMPILER_OPTIONS: ts.CompilerOptions = {
  strict: true,
  noUncheckedIndexedAccess: true,
  noImplicitOverride: true,
  exactOptionalPropertyTypes: false,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ESNext,
  types: ['node'],
  skipLibCheck: true,
  noEmit: true,
}

const diagnostics = new Map<string, string[]>()

beforeAll(() => {
  rmSync(BLOCKS_DIRECTORY, { recursive: true, force: true })
  mkdirSync(BLOCKS_DIRECTORY, { recursive: true })
  writeFileSync(join(BLOCKS_DIRECTORY, 'package.json'), '{ "type": "module", "private": true }\n')
  for (const example of examples) writeFileSync(example.file, example.source)
  const files = examples.filter((example) => example.typescript).map((example) => example.file)
  const program = ts.createProgram(files, COMPILER_OPTIONS)
  for (const file of files) {
    const source = program.getSourceFile(file)
    const found = source === undefined ? [] : ts.getPreEmitDiagnostics(program, source)
    diagnostics.set(
      file,
      found.map((diagnostic) => {
        const where =
          diagnostic.file !== undefined && diagnostic.start !== undefined
            ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start)
            : undefined
        const position = where === undefined ? '' : `block line ${where.line + 1}: `
        return `${position}${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`
      }),
    )
  }
})

describe('every README code block is a complete program', () => {
  it('finds the blocks', () => {
    expect(examples.length).toBeGreaterThan(0)
  })

  it.each(examples.map((example) => [example.id, example] as const))(
    '%s type-checks (strict, nodenext) and runs on this Node',
    (_id, example) => {
      if (example.typescript) expect(diagnostics.get(example.file)).toEqual([])
      const runnable = example.typescript
        ? example.file.replace(/\.mts$/, '.run.mjs')
        : example.file.replace(/\.mjs$/, '.run.mjs')
      const javascript = example.typescript
        ? ts.transpileModule(example.source, {
            compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ESNext },
          }).outputText
        : example.source
      writeFileSync(runnable, javascript)
      const cwd = mkdtempSync(join(tmpdir(), 'lango-readme-block-'))
      try {
        const child = spawnSync(process.execPath, [runnable], {
          cwd,
          encoding: 'utf8',
          timeout: 60_000,
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd, TMPDIR: tmpdir() },
        })
        expect(
          { status: child.status, signal: child.signal, stderr: child.stderr.slice(-4000) },
          `stdout:\n${child.stdout.slice(-2000)}`,
        ).toMatchObject({ status: 0, signal: null })
      } finally {
        rmSync(cwd, { recursive: true, force: true })
      }
    },
  )
})
