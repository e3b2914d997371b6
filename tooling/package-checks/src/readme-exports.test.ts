import { existsSync } from 'node:fs'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { documentedExports, entryPoints, publishedPackages, section } from './readme.js'

const packages = publishedPackages()
const declarationFiles = packages.flatMap((pkg) => [...entryPoints(pkg).values()]).filter(existsSync)
// One program over every entry's declarations: a program per entry would re-read the same libs.
const program = ts.createProgram(declarationFiles, {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  skipLibCheck: true,
  noEmit: true,
})
const checker = program.getTypeChecker()

/** Every name (value or type) a built declaration file exports. */
function declaredExports(declarationFile: string): Set<string> {
  const source = program.getSourceFile(declarationFile)
  if (source === undefined) throw new Error(`cannot read ${declarationFile}`)
  const moduleSymbol = checker.getSymbolAtLocation(source)
  if (moduleSymbol === undefined) return new Set()
  return new Set(checker.getExportsOfModule(moduleSymbol).map((symbol) => symbol.getName()))
}

describe.each(packages)('$name README names exactly what the built package exports', (pkg) => {
  const entries = entryPoints(pkg)
  const exportsSection = section(pkg.readme, 'Exports')

  it('has an "## Exports" section with one "### `<entry>`" subsection per entry point', () => {
    expect(exportsSection, `${pkg.name}/README.md has no "## Exports" section`).toBeDefined()
    const documented = documentedExports(exportsSection ?? '')
    expect([...documented.keys()].sort()).toEqual([...entries.keys()].sort())
  })

  it.each([...entries])('%s: documented names = exported names', (specifier, declarationFile) => {
    expect(existsSync(declarationFile), `${declarationFile} is missing: build first`).toBe(true)
    const exported = declaredExports(declarationFile)
    const documented = documentedExports(exportsSection ?? '').get(specifier) ?? new Set<string>()
    const undocumented = [...exported].filter((name) => !documented.has(name)).sort()
    const missing = [...documented].filter((name) => !exported.has(name)).sort()
    expect({ notExported: missing, notDocumented: undocumented }).toEqual({
      notExported: [],
      notDocumented: [],
    })
  })
})

/** The names a built declaration file exports as values (classes, functions, constants, enums). */
function declaredValues(declarationFile: string): string[] {
  const source = program.getSourceFile(declarationFile)
  if (source === undefined) throw new Error(`cannot read ${declarationFile}`)
  const moduleSymbol = checker.getSymbolAtLocation(source)
  if (moduleSymbol === undefined) return []
  return checker
    .getExportsOfModule(moduleSymbol)
    .filter((symbol) => {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
      return (target.flags & ts.SymbolFlags.Value) !== 0
    })
    .map((symbol) => symbol.getName())
    .sort()
}

// An outside probe imported `StreamRedactor` from @lango/exec: its types declared a class, so the
// import type-checked, and Node refused it (the bundled declarations had lost `export type`).
describe.each(packages)('$name: what its types export as values, its modules export', (pkg) => {
  it.each([...entryPoints(pkg)])('%s', async (specifier, declarationFile) => {
    expect(existsSync(declarationFile), `${declarationFile} is missing: build first`).toBe(true)
    const runtime = new Set(Object.keys(await import(declarationFile.replace(/\.d\.ts$/, '.js'))))
    const missing = declaredValues(declarationFile).filter((name) => !runtime.has(name))
    expect(missing, `${specifier} declares values its module does not export`).toEqual([])
  })
})
