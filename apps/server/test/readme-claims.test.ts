import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runCli } from '../src/cli/program.js'
import { loadConfig } from '../src/config/load.js'
import { schemaKeys } from '../src/config/reference.js'
import { SECTIONS } from '../src/config/schema.js'
import { SERVER_EVENTS } from '../src/events.js'

// Issue 24, item 8: what the root README and this package's README claim about the server is
// checked the way tooling/package-checks checks the packages' READMEs: every `lango` command they
// show exists, every HTTP route they name is one docs/server-api.md documents (which is checked
// against the router), every configuration key exists, and the lango.yaml and MCP client snippets
// load as they are.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const READMES = ['README.md', 'apps/server/README.md'] as const

/** Dotted names in the READMEs that look like keys and are not: `/healthz`'s `alerts.failing`. */
const NOT_KEYS = new Set(['alerts.failing'])

/** Inline code spans and fenced blocks: where a README names commands, routes and keys. */
function codeOf(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((match) => match[1] as string)
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '')
  const spans = [...prose.matchAll(/`([^`\n]+)`/g)].map((match) => match[1] as string)
  return [...blocks, ...spans]
}

/** Fenced blocks of one language. */
function blocksOf(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\``, 'gm'))].map(
    (match) => match[1] as string,
  )
}

/** What `lango … --help` lists under `Commands:`, `help` aside. */
async function commandsOf(argv: readonly string[]): Promise<string[]> {
  let text = ''
  const sink = {
    write: (chunk: string): boolean => {
      text += chunk
      return true
    },
  }
  await runCli([...argv, '--help'], {
    stdout: sink,
    stderr: sink,
    stdin: process.stdin,
    env: {},
  })
  const listed = text.split(/^Commands:$/m)[1] ?? ''
  return [...listed.matchAll(/^ {2}([a-z][a-z-]*)/gm)]
    .map((match) => match[1] as string)
    .filter((name) => name !== 'help')
}

async function readmes(): Promise<Array<{ name: string; text: string }>> {
  return Promise.all(READMES.map(async (name) => ({ name, text: await readFile(join(ROOT, name), 'utf8') })))
}

describe('the root and server READMEs', () => {
  it('show only lango commands and subcommands the CLI has', async () => {
    const top = await commandsOf([])
    expect(top).toContain('serve')
    expect(top).toContain('mcp')
    const subcommands = new Map<string, string[]>()
    for (const command of top) subcommands.set(command, await commandsOf([command]))
    const wrong: string[] = []
    let checked = 0
    for (const { name, text } of await readmes()) {
      for (const code of codeOf(text)) {
        for (const match of code.matchAll(/(?:^|[\s(;&|])lango ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?/g)) {
          const [command, sub] = [match[1] as string, match[2]]
          checked++
          const subs = subcommands.get(command)
          if (subs === undefined) wrong.push(`${name}: lango ${command}`)
          else if (subs.length > 0 && sub !== undefined && !subs.includes(sub))
            wrong.push(`${name}: lango ${command} ${sub}`)
        }
      }
    }
    expect(checked).toBeGreaterThan(10)
    expect(wrong).toEqual([])
  })

  it('name only HTTP routes that docs/server-api.md documents', async () => {
    const doc = await readFile(join(ROOT, 'docs/server-api.md'), 'utf8')
    const documented = [...doc.matchAll(/^### `([A-Z]+) (\/[^`]*)`$/gm)].map(
      (match) =>
        [
          match[1] as string,
          new RegExp(`^${(match[2] as string).replace(/:[a-z]+|<[a-z-]+>/g, '[^/]+')}$`),
        ] as const,
    )
    const exists = (method: string | undefined, path: string): boolean =>
      documented.some(
        ([verb, pattern]) =>
          (method === undefined || verb === method || verb === 'ALL') && pattern.test(path),
      )
    const wrong: string[] = []
    let checked = 0
    for (const { name, text } of await readmes()) {
      for (const code of codeOf(text)) {
        // `GET /api/cron/runs/<id>`, `GET/POST /api/approvals[/<id>]`: each method, with and without the optional part.
        for (const match of code.matchAll(
          /\b((?:GET|POST|PUT|DELETE)(?:\/(?:GET|POST|PUT|DELETE))*) (\/[^\s`,]*)/g,
        )) {
          const path = (match[2] as string).replace(/[.)]+$/, '')
          const paths = [path.replace(/\[[^\]]*\]/g, ''), path.replace(/[[\]]/g, '')]
          for (const method of (match[1] as string).split('/'))
            for (const variant of paths) {
              checked++
              if (!exists(method, variant.replace(/<[^>]+>|\{[^}]+\}/g, 'x')))
                wrong.push(`${name}: ${method} ${variant}`)
            }
        }
        // `curl http://127.0.0.1:7878/path`: some route has the path.
        for (const match of code.matchAll(/https?:\/\/127\.0\.0\.1:7878(\/[^\s'"?`]*)/g)) {
          const path = match[1] as string
          if (path === '/' || path === '') continue
          checked++
          if (!exists(undefined, path)) wrong.push(`${name}: ${path}`)
        }
      }
    }
    expect(checked).toBeGreaterThan(10)
    expect(wrong).toEqual([])
  })

  it('name only configuration keys the schema has', async () => {
    const keys = schemaKeys().map((entry) => entry.key)
    const known = (key: string): boolean =>
      keys.some((candidate) => candidate === key || candidate.startsWith(`${key}.`))
    const section = new RegExp(`^(?:${SECTIONS.join('|')})(?:\\.[a-z_]+)+$`)
    const wrong: string[] = []
    let checked = 0
    for (const { name, text } of await readmes()) {
      // Dotted names that are no keys: the event names, the trace spans, and a `/healthz` field.
      const withoutNames = text.replace(/^### (?:Events|Traces)$[\s\S]*?(?=^##)/gm, '')
      for (const code of codeOf(withoutNames)) {
        for (const word of code.split(/[\s,()/]+/)) {
          const key = word.replace(/[:;.]+$/, '')
          if (!section.test(key) || /\.(?:m?js|ts|md|ya?ml|json)$/.test(key)) continue
          if (Object.hasOwn(SERVER_EVENTS, key) || NOT_KEYS.has(key)) continue
          checked++
          if (!known(key)) wrong.push(`${name}: ${key}`)
        }
      }
    }
    expect(checked).toBeGreaterThan(10)
    expect(wrong).toEqual([])
  })

  it('load their lango.yaml snippets as they are', async () => {
    const server = await readFile(join(ROOT, 'apps/server/README.md'), 'utf8')
    const snippets = blocksOf(server, 'yaml').filter((block) => {
      const tops = [...block.matchAll(/^([a-z_]+):/gm)].map((match) => match[1] as string)
      return tops.length > 0 && tops.every((top) => SECTIONS.includes(top))
    })
    expect(snippets.length).toBeGreaterThan(1)
    for (const snippet of snippets) {
      const home = await mkdtemp(join(tmpdir(), 'lango-readme-yaml-'))
      try {
        await writeFile(join(home, 'lango.yaml'), snippet)
        await expect(
          loadConfig({ env: { LANGO_HOME: home }, cwd: home, home }),
          snippet,
        ).resolves.toBeDefined()
      } finally {
        await rm(home, { recursive: true, force: true })
      }
    }
  })

  it('give an MCP client snippet that runs `lango mcp` with the model variables, all of them real', async () => {
    const server = await readFile(join(ROOT, 'apps/server/README.md'), 'utf8')
    const configuration = await readFile(join(ROOT, 'docs/configuration.md'), 'utf8')
    const snippet = blocksOf(server, 'json').find((block) => block.includes('mcpServers'))
    expect(snippet).toBeDefined()
    const parsed = JSON.parse(snippet as string) as {
      mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>
    }
    const lango = parsed.mcpServers.lango
    expect(lango?.args.at(-1)).toBe('mcp')
    const env = lango?.env ?? {}
    expect(Object.keys(env)).toEqual(expect.arrayContaining(['LANGO_MODEL_BASE_URL', 'LANGO_MODEL']))
    for (const variable of Object.keys(env)) expect(configuration).toContain(`\`${variable}\``)
    // As a `lango mcp` process would read them.
    const home = await mkdtemp(join(tmpdir(), 'lango-readme-mcp-'))
    try {
      const config = await loadConfig({ env: { ...env, LANGO_HOME: home }, cwd: home, home })
      expect(config.model.baseUrl).toBe(env.LANGO_MODEL_BASE_URL)
      expect(config.model.name).toBe(env.LANGO_MODEL)
    } finally {
      await rm(home, { recursive: true, force: true })
    }
  })
})
